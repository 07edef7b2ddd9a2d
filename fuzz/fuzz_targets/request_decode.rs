//! libFuzzer target over `bodies/request_decode.rs`, which says what it checks.
#![no_main]

include!("../bodies/request_decode.rs");

libfuzzer_sys::fuzz_target!(|data: &[u8]| check(data));
