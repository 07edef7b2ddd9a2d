//! libFuzzer target over `bodies/commitment.rs`, which says what it checks.
#![no_main]

include!("../bodies/commitment.rs");

libfuzzer_sys::fuzz_target!(|data: &[u8]| check(data));
