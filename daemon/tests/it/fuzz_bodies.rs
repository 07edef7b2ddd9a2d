//! The body of the request fuzz target (`fuzz/bodies/request_decode.rs`, built by cargo-fuzz in
//! a workspace of its own) compiles against the daemon as it is, and its checks hold on encoded
//! requests of each method, their truncations, changed bytes and random bytes.

mod request_decode {
    include!("../../../fuzz/bodies/request_decode.rs");
}
mod seeds {
    include!("../../../fuzz/bodies/variations.rs");
}

use crate::common::job;
use cuzk_daemon::proto;
use prost::Message;

#[test]
fn request_decode_body_holds_on_encoded_requests() {
    let submit = job(5, 1, 2, proto::Priority::High);
    let prove = proto::ProveRequest { submit: Some(submit.clone()), timeout_ms: 1000 };
    // The body's first byte picks the method: 0 SubmitProof, 1 Prove.
    let inputs = [[vec![0], submit.encode_to_vec()].concat(), [vec![1], prove.encode_to_vec()].concat()];
    seeds::variations(&inputs).iter().for_each(|d| request_decode::check(d));
}
