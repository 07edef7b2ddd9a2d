//! The gRPC codec: prost encoding, but a request that does not decode is answered with
//! `INVALID_ARGUMENT` (tonic's own codec says `INTERNAL`, which blames the server).

use std::marker::PhantomData;

use prost::Message;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::Status;

/// A prost codec that reports undecodable messages as `INVALID_ARGUMENT`.
#[derive(Debug, Clone, Copy)]
pub struct StrictCodec<T, U>(PhantomData<(T, U)>);

impl<T, U> Default for StrictCodec<T, U> {
    fn default() -> Self {
        StrictCodec(PhantomData)
    }
}

impl<T, U> Codec for StrictCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = StrictEncoder<T>;
    type Decoder = StrictDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        StrictEncoder(PhantomData)
    }

    fn decoder(&mut self) -> Self::Decoder {
        StrictDecoder(PhantomData)
    }
}

/// Encoder half of [`StrictCodec`].
#[derive(Debug)]
pub struct StrictEncoder<T>(PhantomData<T>);

impl<T: Message> Encoder for StrictEncoder<T> {
    type Item = T;
    type Error = Status;

    fn encode(&mut self, item: T, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        item.encode(dst).map_err(|e| Status::internal(format!("encoding the response: {e}")))
    }
}

/// Decoder half of [`StrictCodec`].
#[derive(Debug)]
pub struct StrictDecoder<U>(PhantomData<U>);

impl<U: Message + Default> Decoder for StrictDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        U::decode(src).map(Some).map_err(decode_error)
    }
}

/// The status for a message that does not decode.
pub fn decode_error(e: prost::DecodeError) -> Status {
    Status::invalid_argument(format!("malformed request: {e}"))
}
