//! The bodies of the Filecoin fuzz targets (`fuzz/bodies/`, built by cargo-fuzz in a workspace
//! of its own) compile against the crate as it is, and their checks hold on the 2 KiB fixtures'
//! fields (a C1 output, PoSt and SnapDeals vanilla proofs, commitments), their truncations,
//! changed bytes and random bytes.

mod c1_wrapper {
    include!("../../../fuzz/bodies/c1_wrapper.rs");
}
mod vanilla_element {
    include!("../../../fuzz/bodies/vanilla_element.rs");
}
mod commitment {
    include!("../../../fuzz/bodies/commitment.rs");
}
mod seeds {
    include!("../../../fuzz/bodies/variations.rs");
}

use crate::common::fixture;
use cuzk_circuits_filecoin::{commitment_cid, decode_request_parts, CommitmentKind, FilKind, FilRequest};

/// The selector byte the C1 body reads (`[0, 5, 10, 15][sel % 4]`) for `registered_proof`.
fn c1_selector(registered_proof: u64) -> u8 {
    [0, 5, 10, 15].iter().position(|&p| p == registered_proof).expect("a registered proof the body covers") as u8
}

#[test]
fn c1_wrapper_body_holds_on_the_porep_fixture() {
    let req = fixture(FilKind::PoRep);
    let seed = [vec![c1_selector(req.registered_proof)], req.vanilla_proof.clone()].concat();
    // The seed decodes in the body's request (sector 42 of miner 1000), so its re-emission
    // checks run.
    let as_body_asks = FilRequest { sector_number: 42, miner_id: 1000, randomness: Vec::new(), ..req.clone() };
    decode_request_parts(&as_body_asks).expect("the fixture's C1 output decodes in the body's request");
    seeds::variations(&[seed]).iter().for_each(|d| c1_wrapper::check(d));
}

#[test]
fn vanilla_element_body_holds_on_the_fixtures() {
    let elements: Vec<Vec<u8>> =
        [FilKind::WinningPoSt, FilKind::WindowPoSt, FilKind::SnapDeals].into_iter().map(|k| fixture(k).vanilla_proofs[0].clone()).collect();
    seeds::variations(&elements).iter().for_each(|d| vanilla_element::check(d));
}

#[test]
fn commitment_body_holds_on_raw_commitments_and_cids() {
    let req = fixture(FilKind::SnapDeals);
    let comm: [u8; 32] = req.comm_r_new[..32].try_into().expect("32 bytes");
    let inputs = [
        [vec![0], comm.to_vec()].concat(),
        [vec![0], commitment_cid(&comm, CommitmentKind::Sealed)].concat(),
        [vec![1], commitment_cid(&comm, CommitmentKind::Unsealed)].concat(),
    ];
    seeds::variations(&inputs).iter().for_each(|d| commitment::check(d));
}
