//! libFuzzer target over `bodies/c1_wrapper.rs`, which says what it checks.
#![no_main]

include!("../bodies/c1_wrapper.rs");

libfuzzer_sys::fuzz_target!(|data: &[u8]| check(data));
