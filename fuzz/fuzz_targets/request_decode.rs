//! Arbitrary bytes through the daemon's request decoding and validation: the first byte picks
//! the `cuzk.v1.ProvingEngine` method, the rest is the message body. Must never panic; a
//! message that decodes must survive an encode/decode round trip unchanged.
#![no_main]

use cuzk_daemon::proto::{ProveRequest, SubmitProofRequest};
use cuzk_daemon::request::decode_request;
use libfuzzer_sys::fuzz_target;
use prost::Message;

const METHODS: [&str; 8] = ["SubmitProof", "Prove", "AwaitProof", "CancelProof", "PreloadSRS", "EvictSRS", "GetStatus", "GetMetrics"];

fuzz_target!(|data: &[u8]| {
    let Some((&sel, body)) = data.split_first() else { return };
    let method = METHODS[sel as usize % METHODS.len()];
    let _ = decode_request(method, body);
    if let Ok(r) = SubmitProofRequest::decode(body) {
        let again = SubmitProofRequest::decode(&r.encode_to_vec()[..]).expect("re-encoded message decodes");
        assert_eq!(again, r);
    }
    if let Ok(r) = ProveRequest::decode(body) {
        let again = ProveRequest::decode(&r.encode_to_vec()[..]).expect("re-encoded message decodes");
        assert_eq!(again, r);
    }
});
