//! libFuzzer target over `bodies/params_parse.rs`, which says what it checks.
#![no_main]

include!("../bodies/params_parse.rs");

libfuzzer_sys::fuzz_target!(|data: &[u8]| check(data));
