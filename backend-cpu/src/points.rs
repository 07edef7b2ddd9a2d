//! The curve and subgroup checks of decoded points ([`Backend::first_invalid_g1`]) on every
//! thread: blst's checks (`cuzk_core::params::g1_point_error`) in chunks, the first failing
//! chunk in order holding the first failing point. The oracle of every backend's point checks.
//!
//! [`Backend::first_invalid_g1`]: cuzk_core::backend::Backend::first_invalid_g1

use blstrs::{G1Affine, G2Affine};
use cuzk_core::params::{first_invalid_g1, first_invalid_g2, PointFailure};
use rayon::prelude::*;

/// Points per task (a subgroup check is tens of microseconds: a chunk is well over the cost of
/// a task).
const POINTS_PER_TASK: usize = 1 << 10;

fn first_invalid<T: Sync>(points: &[T], chunk: impl Fn(&[T]) -> Option<PointFailure> + Sync) -> Option<PointFailure> {
    points.par_chunks(POINTS_PER_TASK).enumerate().find_map_first(|(t, c)| chunk(c).map(|f| PointFailure { index: t * POINTS_PER_TASK + f.index, ..f }))
}

/// The first G1 point of `points` that is the identity, off the curve or outside the subgroup.
pub fn first_invalid_g1_par(points: &[G1Affine]) -> Option<PointFailure> {
    first_invalid(points, first_invalid_g1)
}

/// G2 counterpart of [`first_invalid_g1_par`].
pub fn first_invalid_g2_par(points: &[G2Affine]) -> Option<PointFailure> {
    first_invalid(points, first_invalid_g2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CpuBackend;
    use blstrs::{Fp, Fp2, G1Projective, G2Projective};
    use cuzk_core::backend::Backend;
    use cuzk_core::params::PointError;
    use cuzk_core::test_points::{mul_plain, off_subgroup_g1, off_subgroup_g2, valid, GROUP_ORDER as R};
    use ff::Field;
    use group::{prime::PrimeCurveAffine, Curve};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    const NOT: Option<PointError> = Some(PointError::NotOnCurveOrSubgroup);

    #[test]
    fn valid_points_pass_and_each_bad_point_is_reported_at_its_index() {
        let b = CpuBackend::new();
        assert!(b.checks_points());
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let n = 3 * POINTS_PER_TASK + 17;
        let g1 = valid::<G1Projective>(n, &mut rng);
        assert_eq!(b.first_invalid_g1(&g1).unwrap(), None);
        assert_eq!(b.first_invalid_g1(&[]).unwrap(), None);
        let off_curve = G1Affine::from_raw_unchecked(g1[0].x(), g1[0].y() + Fp::ONE, false);
        assert!(!bool::from(off_curve.is_on_curve()));
        // (0, 2): on the curve, of order 3.
        let order3 = G1Affine::from_raw_unchecked(Fp::ZERO, Fp::from(2u64), false);
        let cases = [(off_subgroup_g1(&mut rng), NOT), (off_curve, NOT), (order3, NOT), (G1Affine::identity(), Some(PointError::Identity))];
        for (bad, why) in cases {
            for at in [0, 1, POINTS_PER_TASK - 1, POINTS_PER_TASK, 2 * POINTS_PER_TASK + 5, n - 1] {
                let mut v = g1.clone();
                v[at] = bad;
                let got = b.first_invalid_g1(&v).unwrap();
                assert_eq!(got, Some(PointFailure { index: at, reason: why.unwrap() }), "G1 point {bad:?} at {at}");
                // A second bad point later does not hide the first.
                if at + 1 < n {
                    v[n - 1] = G1Affine::identity();
                    assert_eq!(b.first_invalid_g1(&v).unwrap().map(|f| f.index), Some(at));
                }
                assert_eq!(cuzk_core::params::g1_point_error(&bad), why);
            }
        }

        let n = POINTS_PER_TASK + 3;
        let g2 = valid::<G2Projective>(n, &mut rng);
        assert_eq!(b.first_invalid_g2(&g2).unwrap(), None);
        let off_curve = G2Affine::from_raw_unchecked(g2[0].x(), g2[0].y() + Fp2::ONE, false);
        assert!(!bool::from(off_curve.is_on_curve()));
        let cases = [(off_subgroup_g2(&mut rng), NOT), (off_curve, NOT), (G2Affine::identity(), Some(PointError::Identity))];
        for (bad, why) in cases {
            for at in [0, POINTS_PER_TASK - 1, POINTS_PER_TASK, n - 1] {
                let mut v = g2.clone();
                v[at] = bad;
                assert_eq!(b.first_invalid_g2(&v).unwrap(), Some(PointFailure { index: at, reason: why.unwrap() }), "G2 point {bad:?} at {at}");
                assert_eq!(cuzk_core::params::g2_point_error(&bad), why);
            }
        }
    }

    /// A curve point times the group order: a non-identity point of the cofactor's torsion
    /// (every point of E(Fp) outside the subgroup has such a part).
    #[test]
    fn torsion_points_of_the_cofactor_fail() {
        let mut rng = ChaCha8Rng::seed_from_u64(10);
        for _ in 0..4 {
            let t = mul_plain(G1Projective::from(off_subgroup_g1(&mut rng)), R).to_affine();
            assert!(!bool::from(t.is_identity()) && bool::from(t.is_on_curve()));
            assert_eq!(first_invalid_g1_par(&[t]), Some(PointFailure { index: 0, reason: PointError::NotOnCurveOrSubgroup }));
            let t = mul_plain(G2Projective::from(off_subgroup_g2(&mut rng)), R).to_affine();
            assert!(!bool::from(t.is_identity()) && bool::from(t.is_on_curve()));
            assert_eq!(first_invalid_g2_par(&[t]), Some(PointFailure { index: 0, reason: PointError::NotOnCurveOrSubgroup }));
        }
    }
}
