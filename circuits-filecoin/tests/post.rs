//! WindowPoSt and WinningPoSt at 2 KiB: cuzk's proofs pass Filecoin's verifiers; tampered
//! vanilla proofs and wrong randomness are refused before proving.

mod common;

use common::{cache, cuzk_prove, fixture};
use cuzk_circuits_filecoin::{prepare, verify::verify, FilError, FilKind};

#[test]
fn post_proofs_pass_filecoins_verifiers_and_bad_inputs_are_refused() {
    cache();
    for kind in [FilKind::WindowPoSt, FilKind::WinningPoSt] {
        let req = fixture(kind);
        let proof = cuzk_prove(&req);
        assert_eq!(proof.len(), 192);
        assert!(verify(&req, &proof).expect("verifier runs"), "{kind:?}: Filecoin's verifier rejects cuzk's proof");

        // A flipped proof byte does not verify.
        let mut bad = proof.clone();
        bad[100] ^= 1;
        assert!(!verify(&req, &bad).unwrap_or(false), "{kind:?}: a corrupted proof verified");

        // Wrong randomness: the vanilla proofs answer other challenges.
        let mut r = req.clone();
        r.randomness[0] ^= 1;
        let e = prepare(&r).expect_err("wrong randomness accepted");
        assert!(matches!(e, FilError::VanillaInvalid(_)), "{kind:?}: {e}");

        // Tampered vanilla proof: change one digit of a leaf inside the JSON.
        let mut r = req.clone();
        let text = String::from_utf8(r.vanilla_proof.clone()).unwrap();
        let at = text.find("\"leaf\":").or_else(|| text.find("leaf")).expect("a leaf");
        let mut bytes = text.into_bytes();
        let digit = bytes[at..].iter().position(|b| b.is_ascii_digit()).expect("digit") + at;
        bytes[digit] = if bytes[digit] == b'1' { b'2' } else { b'1' };
        r.vanilla_proof = bytes;
        let e = prepare(&r).expect_err("tampered vanilla proof accepted");
        assert!(matches!(e, FilError::VanillaInvalid(_) | FilError::Decode(_)), "{kind:?}: {e}");

        // Garbage.
        let mut r = req.clone();
        r.vanilla_proof = b"[1,2,3]".to_vec();
        assert!(prepare(&r).is_err());
    }
}
