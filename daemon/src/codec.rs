//! The gRPC codec: prost encoding, but a request that does not decode is answered with
//! `INVALID_ARGUMENT` (tonic's own codec says `INTERNAL`, which blames the server), a message
//! of more than [`MAX_ENTRIES`] fields is refused before it is decoded (133 M empty
//! `vanilla_proofs` in a 255 MiB message decoded into 6.3 GB), and a large message is decoded
//! off the runtime's worker threads.

use crate::limits::MAX_ENTRIES;
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
    U: Message + Default + Bounded + Send + 'static,
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

impl<U: Message + Default + Bounded> Decoder for StrictDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        use bytes::Buf;
        let len = src.remaining();
        // tonic hands the whole message in one contiguous chunk.
        if src.chunk().len() == len {
            count_entries(src.chunk(), U::NESTED)?;
        }
        if len >= OFF_THREAD_BYTES && tokio::runtime::Handle::try_current().is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread) {
            // The worker thread leaves the runtime while it decodes: GetStatus and
            // AwaitProof go on on the others.
            return tokio::task::block_in_place(|| U::decode(src)).map(Some).map_err(decode_error);
        }
        U::decode(src).map(Some).map_err(decode_error)
    }
}

/// Decodes a whole message as the server does: its fields counted first, then decoded.
pub fn decode<U: Message + Default + Bounded>(body: &[u8]) -> Result<U, Status> {
    count_entries(body, U::NESTED)?;
    U::decode(body).map_err(decode_error)
}

/// Messages at least this large are decoded off the runtime's worker threads, bytes.
pub const OFF_THREAD_BYTES: usize = 1 << 20;

/// A message type whose fields [`StrictDecoder`] counts before decoding it.
pub trait Bounded {
    /// Field numbers holding a nested message whose fields count too.
    const NESTED: &'static [u32] = &[];
}

macro_rules! bounded {
    ($($t:ident),* $(,)?) => { $(impl Bounded for crate::proto::$t {})* };
}
bounded!(
    SubmitProofRequest,
    SubmitProofResponse,
    AwaitProofRequest,
    AwaitProofResponse,
    ProveResponse,
    CancelProofRequest,
    CancelProofResponse,
    GetStatusRequest,
    GetStatusResponse,
    GetMetricsRequest,
    GetMetricsResponse,
    PreloadSrsRequest,
    PreloadSrsResponse,
    EvictSrsRequest,
    EvictSrsResponse,
);

/// `ProveRequest.submit` (field 1) is a whole submission.
impl Bounded for crate::proto::ProveRequest {
    const NESTED: &'static [u32] = &[1];
}

/// Counts the fields of an encoded message (and of the fields `nested` names, one level down)
/// without allocating; refuses more than [`MAX_ENTRIES`]. A message that does not parse is
/// left for prost to describe.
pub fn count_entries(mut buf: &[u8], nested: &[u32]) -> Result<usize, Status> {
    let mut n = 0usize;
    while !buf.is_empty() {
        let Some(key) = varint(&mut buf) else { return Ok(n) };
        n += 1;
        let skip = match key & 7 {
            0 => {
                if varint(&mut buf).is_none() {
                    return Ok(n);
                }
                0
            }
            1 => 8,
            5 => 4,
            2 => {
                let Some(len) = varint(&mut buf).and_then(|l| usize::try_from(l).ok()).filter(|&l| l <= buf.len()) else { return Ok(n) };
                if nested.contains(&((key >> 3) as u32)) {
                    n += count_entries(&buf[..len], &[])?;
                }
                len
            }
            _ => return Ok(n),
        };
        if n > MAX_ENTRIES {
            return Err(Status::invalid_argument(format!("malformed request: more than {MAX_ENTRIES} fields in one message")));
        }
        if skip > buf.len() {
            return Ok(n);
        }
        buf = &buf[skip..];
    }
    Ok(n)
}

/// Reads a protobuf varint; `None` when it is cut short or longer than 10 bytes.
fn varint(buf: &mut &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for i in 0..10 {
        let (&b, rest) = buf.split_first()?;
        *buf = rest;
        v |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

/// The status for a message that does not decode.
pub fn decode_error(e: prost::DecodeError) -> Status {
    Status::invalid_argument(format!("malformed request: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto;

    #[test]
    fn fields_are_counted_as_prost_sees_them() {
        let req = proto::SubmitProofRequest {
            request_id: "r".into(),
            proof_kind: 3,
            vanilla_proofs: vec![vec![1; 3]; 10],
            generic: Some(proto::GenericJob { circuit: "c".into(), log_size: 4, seed: 1, partitions: 2 }),
            ..Default::default()
        };
        let bytes = req.encode_to_vec();
        // request_id, proof_kind, 10 vanilla proofs, generic.
        assert_eq!(count_entries(&bytes, &[]).unwrap(), 13);
        let prove = proto::ProveRequest { submit: Some(req.clone()), timeout_ms: 5 };
        assert_eq!(count_entries(&prove.encode_to_vec(), proto::ProveRequest::NESTED).unwrap(), 2 + 13);
        assert_eq!(decode::<proto::ProveRequest>(&prove.encode_to_vec()).unwrap(), prove);
    }

    #[test]
    fn a_message_of_too_many_fields_is_refused_before_decoding() {
        let req = proto::SubmitProofRequest { proof_kind: 1, vanilla_proofs: vec![Vec::new(); MAX_ENTRIES], ..Default::default() };
        let e = decode::<proto::SubmitProofRequest>(&req.encode_to_vec()).unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument);
        assert!(e.message().contains("more than 65536 fields"), "{}", e.message());
        // Inside a Prove call too.
        let prove = proto::ProveRequest { submit: Some(req), timeout_ms: 0 };
        assert_eq!(decode::<proto::ProveRequest>(&prove.encode_to_vec()).unwrap_err().code(), tonic::Code::InvalidArgument);
        // One fewer passes.
        let ok = proto::SubmitProofRequest { vanilla_proofs: vec![Vec::new(); MAX_ENTRIES - 1], ..Default::default() };
        assert!(decode::<proto::SubmitProofRequest>(&ok.encode_to_vec()).is_ok());
    }

    #[test]
    fn truncated_messages_are_left_to_prost() {
        let req = proto::SubmitProofRequest { request_id: "abc".into(), vanilla_proof: vec![9; 100], ..Default::default() };
        let bytes = req.encode_to_vec();
        for cut in 0..bytes.len() {
            assert!(count_entries(&bytes[..cut], &[]).is_ok());
        }
        assert_eq!(decode::<proto::SubmitProofRequest>(&bytes[..bytes.len() - 1]).unwrap_err().code(), tonic::Code::InvalidArgument);
    }
}
