//! Parameter files that are truncated, corrupt or lying give clear errors, never a panic or an
//! unbounded allocation.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
use cuzk_core::params::{Parameters, ParamsError, ParamsLayout, PointError, Section, Validation, VerifyingKey};
use group::{Curve, Group};
use rand::SeedableRng;

fn g1(rng: &mut rand_chacha::ChaCha8Rng) -> G1Affine {
    G1Projective::random(rng).to_affine()
}
fn g2(rng: &mut rand_chacha::ChaCha8Rng) -> G2Affine {
    G2Projective::random(rng).to_affine()
}

/// A small valid parameter set of random points (also the fuzz bodies' seed, `fuzz_bodies`).
pub fn sample() -> Parameters {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let vk = VerifyingKey {
        alpha_g1: g1(&mut rng),
        beta_g1: g1(&mut rng),
        beta_g2: g2(&mut rng),
        gamma_g2: g2(&mut rng),
        delta_g1: g1(&mut rng),
        delta_g2: g2(&mut rng),
        ic: (0..2).map(|_| g1(&mut rng)).collect(),
    };
    Parameters {
        vk,
        h: (0..3).map(|_| g1(&mut rng)).collect(),
        l: (0..2).map(|_| g1(&mut rng)).collect(),
        a: (0..4).map(|_| g1(&mut rng)).collect(),
        b_g1: (0..3).map(|_| g1(&mut rng)).collect(),
        b_g2: (0..3).map(|_| g2(&mut rng)).collect(),
    }
}

#[test]
fn round_trips() {
    let p = sample();
    let bytes = p.to_bytes();
    assert_eq!(Parameters::from_bytes(&bytes, Validation::Full).unwrap(), p);
    assert_eq!(Parameters::from_bytes(&bytes, Validation::Trusted).unwrap(), p);
    let (vk, used) = VerifyingKey::from_bytes(&bytes).unwrap();
    assert_eq!(vk, p.vk);
    assert_eq!(used, p.vk.to_bytes().len());
}

#[test]
fn every_truncation_is_a_clear_error() {
    let bytes = sample().to_bytes();
    for len in 0..bytes.len() {
        let err = Parameters::from_bytes(&bytes[..len], Validation::Full).unwrap_err();
        assert!(matches!(err, ParamsError::Truncated { .. } | ParamsError::LengthTooLarge { .. }), "truncated to {len}: unexpected {err:?}");
        assert!(!err.to_string().is_empty());
    }
}

#[test]
fn trailing_bytes_are_refused() {
    let mut bytes = sample().to_bytes();
    bytes.push(0);
    assert_eq!(Parameters::from_bytes(&bytes, Validation::Full).unwrap_err(), ParamsError::TrailingBytes(1));
}

#[test]
fn lying_lengths_fail_before_allocating() {
    let p = sample();
    let bytes = p.to_bytes();
    let layout = ParamsLayout::parse(&bytes).unwrap();
    let h_len_at = layout.h.start - 4;
    assert_eq!(h_len_at, 4 * 96 + 3 * 192 + 4 + p.vk.ic.len() * 96 - 96);
    for claimed in [4u32, 1000, u32::MAX] {
        let mut b = bytes.clone();
        b[h_len_at..h_len_at + 4].copy_from_slice(&claimed.to_be_bytes());
        let err = Parameters::from_bytes(&b, Validation::Full).unwrap_err();
        assert!(matches!(err, ParamsError::LengthTooLarge { .. } | ParamsError::InvalidPoint { .. } | ParamsError::Truncated { .. }), "{claimed}: {err:?}");
    }
    // A claimed u32::MAX points must be refused by the length check itself, before any
    // allocation.
    let mut b = bytes.clone();
    b[h_len_at..h_len_at + 4].copy_from_slice(&u32::MAX.to_be_bytes());
    assert!(matches!(Parameters::from_bytes(&b, Validation::Full).unwrap_err(), ParamsError::LengthTooLarge { section: Section::H, .. }));
    // Too small a length shifts the rest: the file no longer parses.
    let mut b = bytes.clone();
    b[h_len_at..h_len_at + 4].copy_from_slice(&2u32.to_be_bytes());
    assert!(Parameters::from_bytes(&b, Validation::Full).is_err());
    // The ic length of the verifying key is checked too.
    // vk: alpha_g1 beta_g1 beta_g2 gamma_g2 delta_g1 delta_g2, then the ic length.
    let ic_len_at = 3 * 96 + 3 * 192;
    let mut b = bytes.clone();
    b[ic_len_at..ic_len_at + 4].copy_from_slice(&u32::MAX.to_be_bytes());
    assert!(matches!(Parameters::from_bytes(&b, Validation::Full).unwrap_err(), ParamsError::LengthTooLarge { section: Section::Ic, .. }));
}

/// A point on the curve `y² = x³ + 4` that is not in the prime-order subgroup.
fn off_subgroup_g1() -> [u8; 96] {
    use blstrs::Fp;
    use ff::Field;
    let four = Fp::from(4u64);
    let mut x = Fp::ONE;
    loop {
        let rhs = x.square() * x + four;
        if let Some(y) = Option::<Fp>::from(rhs.sqrt()) {
            let p = G1Affine::from_raw_unchecked(x, y, false);
            if bool::from(p.is_on_curve()) && !bool::from(p.is_torsion_free()) {
                return p.to_uncompressed();
            }
        }
        x += Fp::ONE;
    }
}

#[test]
fn bad_points_are_refused_with_their_position() {
    let p = sample();
    let bytes = p.to_bytes();
    let layout = ParamsLayout::parse(&bytes).unwrap();
    // Off the curve: flip a bit of the second `a` point's y coordinate.
    let mut b = bytes.clone();
    b[layout.a.start + 96 + 95] ^= 1;
    assert_eq!(
        Parameters::from_bytes(&b, Validation::Full).unwrap_err(),
        ParamsError::InvalidPoint { section: Section::A, index: 1, reason: PointError::NotOnCurveOrSubgroup }
    );
    // On the curve but outside the subgroup: refused by full validation only.
    let mut b = bytes.clone();
    b[layout.l.start..layout.l.start + 96].copy_from_slice(&off_subgroup_g1());
    assert_eq!(
        Parameters::from_bytes(&b, Validation::Full).unwrap_err(),
        ParamsError::InvalidPoint { section: Section::L, index: 0, reason: PointError::NotOnCurveOrSubgroup }
    );
    assert!(Parameters::from_bytes(&b, Validation::Trusted).is_ok());
    // The point at infinity in a query.
    let mut b = bytes.clone();
    b[layout.h.start + 96..layout.h.start + 192].copy_from_slice(&G1Affine::from(G1Projective::identity()).to_uncompressed());
    assert_eq!(
        Parameters::from_bytes(&b, Validation::Trusted).unwrap_err(),
        ParamsError::InvalidPoint { section: Section::H, index: 1, reason: PointError::Identity }
    );
    // A corrupt verifying key point is always refused.
    let mut b = bytes.clone();
    b[95] ^= 1;
    assert!(matches!(Parameters::from_bytes(&b, Validation::Trusted).unwrap_err(), ParamsError::InvalidVkPoint { field: "alpha_g1", .. }));
}
