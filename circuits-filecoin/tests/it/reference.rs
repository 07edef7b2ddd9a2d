//! filecoin-proofs' own prover and verifiers read requests in Curio's encodings (the C1 output in
//! filecoin-ffi's and supraseal's layouts inside Curio's wrapper, bincode elements, raw
//! commitments) as cuzk does. PoRep C2 and SnapDeals (their parameters take minutes to generate
//! on the CPU) run in the slow tier: `CUZK_SLOW_TESTS=1 cargo test --release -p
//! cuzk-circuits-filecoin --test reference`.

use crate::common::{cache, ensure_params, fixtures};
use cuzk_circuits_filecoin::{ffi_layout, reference, supraseal_layout, verify::verify, wrap_c1_like_curio, FilKind};

#[test]
fn reference_prover_and_verifiers_read_curios_encodings() {
    cache();
    let slow = std::env::var_os("CUZK_SLOW_TESTS").is_some_and(|v| v != "0");
    for mut req in fixtures() {
        if !slow && matches!(req.kind, FilKind::PoRep | FilKind::SnapDeals) {
            println!("SKIPPED: {:?} (2 KiB) runs with CUZK_SLOW_TESTS=1", req.kind);
            continue;
        }
        ensure_params(req.kind);
        if req.kind == FilKind::PoRep {
            let ffi = ffi_layout(&req.vanilla_proof, req.registered_proof).unwrap();
            let layout = if req.registered_proof % 2 == 0 { supraseal_layout(&ffi).unwrap() } else { ffi };
            req.vanilla_proof = wrap_c1_like_curio(&layout, req.sector_number, 2048);
        }
        let proof = reference::prove(&req).unwrap_or_else(|e| panic!("{:?}: {e}", req.kind));
        assert!(verify(&req, &proof).unwrap(), "{:?}", req.kind);
        let mut bad = proof.clone();
        bad[7] ^= 1;
        assert!(!verify(&req, &bad).unwrap_or(false), "{:?}", req.kind);
    }
}
