// Arbitrary bytes through the parameter-file parser: errors, never panics, and never
// allocates more than the input can hold.
//
// Included by `fuzz_targets/params_parse.rs` (libFuzzer) and by a test of the workspace that runs it
// on seed inputs, so the body compiles with the crates it checks.

use cuzk_core::params::{Parameters, ParamsLayout, Validation};

/// One input through the checks: panics on a finding.
pub fn check(data: &[u8]) {
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
}
