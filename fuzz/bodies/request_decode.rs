// Arbitrary bytes through the daemon's request decoding and validation: the first byte picks
// the `cuzk.v1.ProvingEngine` method, the rest is the message body. Must never panic; a
// message that decodes must survive an encode/decode round trip unchanged.
//
// Included by `fuzz_targets/request_decode.rs` (libFuzzer) and by a test of the workspace that runs it
// on seed inputs, so the body compiles with the crates it checks.

use cuzk_daemon::proto::{ProveRequest, SubmitProofRequest};
use cuzk_daemon::server::request::decode_request;
use prost::Message;

const METHODS: [&str; 8] = ["SubmitProof", "Prove", "AwaitProof", "CancelProof", "PreloadSRS", "EvictSRS", "GetStatus", "GetMetrics"];

/// One input through the checks: panics on a finding.
pub fn check(data: &[u8]) {
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
}
