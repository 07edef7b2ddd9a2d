// Arbitrary bytes through the proof and verifying-key decoders.
//
// Included by `fuzz_targets/proof_decode.rs` (libFuzzer) and by a test of the workspace that runs it
// on seed inputs, so the body compiles with the crates it checks.

use cuzk_core::params::VerifyingKey;
use cuzk_core::proof::Proof;

/// One input through the checks: panics on a finding.
pub fn check(data: &[u8]) {
    if let Ok(p) = Proof::from_bytes(data) {
        // Decoding is canonical: re-encoding gives the input back.
        assert_eq!(&p.to_bytes()[..], data);
    }
    if let Ok(ps) = Proof::many_from_bytes(data) {
        assert_eq!(ps.len() * 192, data.len());
    }
    if let Ok((vk, used)) = VerifyingKey::from_bytes(data) {
        assert_eq!(vk.to_bytes(), &data[..used]);
    }
}
