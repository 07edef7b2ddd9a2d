//! Arbitrary bytes through the proof and verifying-key decoders.
#![no_main]

use cuzk_core::params::VerifyingKey;
use cuzk_core::proof::Proof;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
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
});
