//! Points for testing the curve and subgroup checks (`Backend::first_invalid_g1/g2`): valid
//! points, points on the curve outside the subgroup, and the plain multiplication that reaches
//! their cofactor torsion, for the backends' tests. Always built (generic code costs nothing until
//! used): a feature here would give `cargo test --workspace` a second build of this crate and of
//! every crate above it.

use blstrs::{Fp, Fp2, G1Affine, G2Affine};
use ff::Field;
use group::prime::{PrimeCurve, PrimeCurveAffine};
use group::Group;
use rand_core::RngCore;

/// The group order r, little-endian words.
pub const GROUP_ORDER: [u64; 4] = [0xffff_ffff_0000_0001, 0x53bd_a402_fffe_5bfe, 0x3339_d808_09a1_d805, 0x73ed_a753_299d_7d48];

/// `n` valid points `p + i·q` for random `p`, `q` of the subgroup.
pub fn valid<G: PrimeCurve>(n: usize, rng: &mut impl RngCore) -> Vec<G::Affine> {
    let (mut p, q) = (G::random(&mut *rng), G::random(&mut *rng));
    let proj: Vec<G> = (0..n)
        .map(|_| {
            p += q;
            p
        })
        .collect();
    let mut out = vec![G::Affine::identity(); n];
    G::batch_normalize(&proj, &mut out);
    out
}

/// `[k]p` by plain double-and-add over the bits of `k` (little-endian words): blst's
/// multiplication assumes a point of the subgroup (GLV), points outside it need this.
pub fn mul_plain<G: Group>(p: G, k: [u64; 4]) -> G {
    let mut acc = G::identity();
    for i in (0..256).rev() {
        acc = acc.double();
        if (k[i / 64] >> (i % 64)) & 1 == 1 {
            acc += p;
        }
    }
    acc
}

/// A point on `y² = x³ + 4` from a random `x` and a random sign of `y`: on the curve, outside
/// the subgroup (but with probability about 2^-126).
pub fn off_subgroup_g1(rng: &mut impl RngCore) -> G1Affine {
    loop {
        let x = Fp::random(&mut *rng);
        if let Some(y) = Option::<Fp>::from((x.square() * x + Fp::from(4u64)).sqrt()) {
            let y = if rng.next_u32() & 1 == 1 { y } else { -y };
            let p = G1Affine::from_raw_unchecked(x, y, false);
            assert!(bool::from(p.is_on_curve()));
            return p;
        }
    }
}

/// A point on `y² = x³ + 4(1 + u)` from a random `x` and a random sign of `y`, outside the
/// subgroup.
pub fn off_subgroup_g2(rng: &mut impl RngCore) -> G2Affine {
    let b = Fp2::new(Fp::from(4u64), Fp::from(4u64));
    loop {
        let x = Fp2::random(&mut *rng);
        if let Some(y) = Option::<Fp2>::from((x.square() * x + b).sqrt()) {
            let y = if rng.next_u32() & 1 == 1 { y } else { -y };
            let p = G2Affine::from_raw_unchecked(x, y, false);
            assert!(bool::from(p.is_on_curve()));
            return p;
        }
    }
}
