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

use blstrs::{G1Projective, G2Projective};
use cuzk_core::params::{Parameters, VerifyingKey};
use cuzk_core::proof::Proof;
use group::{Curve, Group};
use rand::SeedableRng;

fn parameters() -> Parameters {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(21);
    let mut g1 = |n: usize| (0..n).map(|_| G1Projective::random(&mut rng).to_affine()).collect::<Vec<_>>();
    let (h, l, a, b_g1, ic, v1) = (g1(3), g1(2), g1(4), g1(3), g1(2), g1(3));
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(22);
    let mut g2 = |n: usize| (0..n).map(|_| G2Projective::random(&mut rng).to_affine()).collect::<Vec<_>>();
    let (b_g2, v2) = (g2(3), g2(3));
    let vk = VerifyingKey { alpha_g1: v1[0], beta_g1: v1[1], beta_g2: v2[0], gamma_g2: v2[1], delta_g1: v1[2], delta_g2: v2[2], ic };
    Parameters { vk, h, l, a, b_g1, b_g2 }
}

#[test]
fn params_parse_body_holds_on_seeds() {
    let p = parameters();
    let inputs = seeds::variations(&[p.to_bytes(), p.vk.to_bytes()]);
    inputs.iter().for_each(|d| params_parse::check(d));
}

#[test]
fn proof_decode_body_holds_on_seeds() {
    let p = parameters();
    let proof = Proof { a: p.h[0], b: p.b_g2[0], c: p.l[0] };
    let two = [proof.to_bytes(), Proof { a: p.a[1], b: p.b_g2[1], c: p.a[2] }.to_bytes()].concat();
    let inputs = seeds::variations(&[proof.to_bytes().to_vec(), two, p.vk.to_bytes()]);
    inputs.iter().for_each(|d| proof_decode::check(d));
}
