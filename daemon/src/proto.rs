//! The generated `cuzk.v1` messages, client and server (see `proto/cuzk/v1/proving.proto`).
#![allow(missing_docs, clippy::all)]

tonic::include_proto!("cuzk.v1");
