//! libFuzzer target over `bodies/proof_decode.rs`, which says what it checks.
#![no_main]

include!("../bodies/proof_decode.rs");

libfuzzer_sys::fuzz_target!(|data: &[u8]| check(data));
