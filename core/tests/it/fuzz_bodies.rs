//! The bodies of the core's fuzz targets (`fuzz/bodies/`, built by cargo-fuzz in a workspace of
//! its own) compile against the core as it is, and their checks hold on a valid parameter file,
//! a proof and a verifying key, their truncations, changed bytes and random bytes.

mod params_parse {
    include!("../../../fuzz/bodies/params_parse.rs");
}
mod proof_decode {
    include!("../../../fuzz/bodies/proof_decode.rs");
}
mod seeds {
    include!("../../../fuzz/bodies/variations.rs");
}

use crate::params_errors::sample;
use cuzk_core::proof::Proof;

#[test]
fn params_parse_body_holds_on_seeds() {
    let p = sample();
    let inputs = seeds::variations(&[p.to_bytes(), p.vk.to_bytes()]);
    inputs.iter().for_each(|d| params_parse::check(d));
}

#[test]
fn proof_decode_body_holds_on_seeds() {
    let p = sample();
    let proof = Proof { a: p.h[0], b: p.b_g2[0], c: p.l[0] };
    let two = [proof.to_bytes(), Proof { a: p.a[1], b: p.b_g2[1], c: p.a[2] }.to_bytes()].concat();
    let inputs = seeds::variations(&[proof.to_bytes().to_vec(), two, p.vk.to_bytes()]);
    inputs.iter().for_each(|d| proof_decode::check(d));
}
