//! The generated `cuzk.v1` messages, client and server (see `proto/cuzk/v1/proving.proto`).
#![allow(missing_docs, clippy::all)]

tonic::include_proto!("cuzk.v1");

/// The compiled `cuzk.v1` proto as a serialized `google.protobuf.FileDescriptorSet`.
pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/cuzk_v1_descriptor.bin"));
