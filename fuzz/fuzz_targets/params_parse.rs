//! Arbitrary bytes through the parameter-file parser: errors, never panics, and never
//! allocates more than the input can hold.
#![no_main]

use cuzk_core::params::{Parameters, ParamsLayout, Validation};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(layout) = ParamsLayout::parse(data) {
        // A parsed layout never points outside the input.
        for r in [&layout.h, &layout.l, &layout.a, &layout.b_g1, &layout.b_g2] {
            assert!(r.start <= r.end && r.end <= data.len());
        }
    }
    let trusted = Parameters::from_bytes(data, Validation::Trusted);
    let full = Parameters::from_bytes(data, Validation::Full);
    // Full validation accepts a subset of what trusted parsing accepts, with the same result.
    if let Ok(p) = &full {
        assert_eq!(trusted.as_ref().ok(), Some(p));
        assert_eq!(p.to_bytes(), data);
    }
});
