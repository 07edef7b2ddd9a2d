//! libFuzzer target over `bodies/vanilla_element.rs`, which says what it checks.
#![no_main]

include!("../bodies/vanilla_element.rs");

libfuzzer_sys::fuzz_target!(|data: &[u8]| check(data));
