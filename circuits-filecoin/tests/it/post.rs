//! WindowPoSt and WinningPoSt at 2 KiB: cuzk's proofs pass Filecoin's verifiers; tampered
//! vanilla proofs and wrong randomness are refused before proving.

use crate::common::{cache, cuzk_prove, fixture};
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

        // Tampered vanilla proof: flip a bit of the first leaf of the bincode element (sector id
        // 8 bytes, comm_r 32, two vector lengths 16, the Merkle proof's tag 4 and root 32).
        let mut r = req.clone();
        r.vanilla_proofs[0][92] ^= 1;
        let e = prepare(&r).expect_err("tampered vanilla proof accepted");
        assert!(matches!(e, FilError::VanillaInvalid(_)), "{kind:?}: {e}");

        // Garbage.
        let mut r = req.clone();
        r.vanilla_proofs = vec![vec![1, 2, 3]];
        let e = prepare(&r).expect_err("garbage accepted");
        assert!(e.to_string().starts_with("vanilla_proofs[0]: truncated bincode"), "{kind:?}: {e}");
    }
}
