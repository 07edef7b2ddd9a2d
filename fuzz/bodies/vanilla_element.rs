// Arbitrary bytes as the one bincode element of API field 11 (`vanilla_proofs`) of every 2 KiB
// WinningPoSt, WindowPoSt and SnapDeals registered proof, through the decoding `prepare` does
// before verifying: errors, never panics. A second element, a copy of the first, exercises the
// count and duplicate-sector checks.
//
// Included by `fuzz_targets/vanilla_element.rs` (libFuzzer) and by a test of the workspace that runs it
// on seed inputs, so the body compiles with the crates it checks.

use cuzk_circuits_filecoin::{decode_request_parts, FilKind, FilRequest};

const PROOFS: [(FilKind, u64); 4] = [(FilKind::WinningPoSt, 0), (FilKind::WindowPoSt, 5), (FilKind::WindowPoSt, 10), (FilKind::SnapDeals, 0)];

fn request(kind: FilKind, registered_proof: u64, elements: Vec<Vec<u8>>) -> FilRequest {
    FilRequest {
        kind,
        registered_proof,
        vanilla_proof: Vec::new(),
        vanilla_proofs: elements,
        sector_number: 42,
        miner_id: 1000,
        randomness: vec![7; 32],
        partition_index: 0,
        comm_r_old: vec![1; 32],
        comm_r_new: vec![2; 32],
        comm_d_new: vec![3; 32],
    }
}

/// One input through the checks: panics on a finding.
pub fn check(data: &[u8]) {
    for (kind, proof) in PROOFS {
        let one = decode_request_parts(&request(kind, proof, vec![data.to_vec()]));
        let two = decode_request_parts(&request(kind, proof, vec![data.to_vec(); 2]));
        // Two copies of an element are never accepted: one partition for SnapDeals at 2 KiB, and
        // the same sector twice for PoSt.
        assert!(two.is_err(), "{kind:?} {proof}: two copies accepted");
        if let Err(e) = one {
            assert!(!e.to_string().is_empty());
        }
    }
}
