// Arbitrary bytes as API field 10 (`vanilla_proof`) of a 2 KiB PoRep: Curio's wrapper, the three
// C1 output layouts, their checks against the request; errors, never panics. The first byte
// picks the registered proof (V1, V1_1, synthetic, NI). A C1 output that decodes still decodes
// after re-emission in filecoin-ffi's and supraseal's layouts, bare and in Curio's wrapper.
//
// Included by `fuzz_targets/c1_wrapper.rs` (libFuzzer) and by a test of the workspace that runs it
// on seed inputs, so the body compiles with the crates it checks.

use cuzk_circuits_filecoin::{decode_request_parts, ffi_layout, supraseal_layout, wrap_c1_like_curio, FilKind, FilRequest};

fn request(registered_proof: u64, vanilla_proof: Vec<u8>) -> FilRequest {
    FilRequest {
        kind: FilKind::PoRep,
        registered_proof,
        vanilla_proof,
        vanilla_proofs: Vec::new(),
        sector_number: 42,
        miner_id: 1000,
        randomness: Vec::new(),
        partition_index: 0,
        comm_r_old: Vec::new(),
        comm_r_new: Vec::new(),
        comm_d_new: Vec::new(),
    }
}

/// One input through the checks: panics on a finding.
pub fn check(data: &[u8]) {
    let Some((&sel, body)) = data.split_first() else { return };
    let proof = [0, 5, 10, 15][usize::from(sel % 4)];
    let decoded = decode_request_parts(&request(proof, body.to_vec()));
    let ffi = ffi_layout(body, proof);
    let _ = supraseal_layout(body);
    if decoded.is_ok() {
        let ffi = ffi.expect("a decoded C1 output re-emits in filecoin-ffi's layout");
        // From filecoin-ffi's layout, which names the registered proof (supraseal's keeps it).
        let supra = supraseal_layout(&ffi).expect("a decoded C1 output re-emits in supraseal's layout");
        for v in [wrap_c1_like_curio(&ffi, 42, 2048), supra] {
            decode_request_parts(&request(proof, v)).expect("re-emitted C1 output decodes");
        }
    }
}
