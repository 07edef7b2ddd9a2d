//! Multi-threaded MSM for G1 and G2 with density support.
//!
//! Scalars equal to zero are skipped and scalars equal to one are summed directly (common in
//! boolean-heavy circuits). The remaining terms are split into one chunk per task and each
//! chunk runs blst's Pippenger (XYZZ buckets, signed windows) on its own thread; the chunk
//! sums are added. blst is the well-kept, audited implementation made for the job, and being
//! independent of our GPU kernels it makes the CPU backend a genuine oracle for them.

use std::ops::AddAssign;

use blst::{blst_p1, blst_p1_affine, blst_p2, blst_p2_affine};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::PrimeField;
use group::Curve;
use rayon::prelude::*;

use cuzk_core::density::DensityBitmap;

/// A curve group whose MSM can run on blst's Pippenger.
pub trait BlstMsm: Curve + Send + Sync + for<'a> AddAssign<&'a Self::AffineRepr>
where
    Self::AffineRepr: Send + Sync,
{
    /// `Σ sᵢ·Pᵢ` over `points[i]` and little-endian 32-byte scalars `scalars[i]`.
    fn pippenger(points: &[&Self::AffineRepr], scalars: &[[u8; 32]]) -> Self;
}

macro_rules! impl_blst_msm {
    ($proj:ty, $aff:ty, $raw_proj:ty, $raw_aff:ty, $run:ident, $scratch:ident) => {
        impl BlstMsm for $proj {
            fn pippenger(points: &[&$aff], scalars: &[[u8; 32]]) -> Self {
                debug_assert_eq!(points.len(), scalars.len());
                let n = points.len();
                if n == 0 {
                    return <$proj as group::Group>::identity();
                }
                // The blstrs types are `repr(transparent)` over blst's.
                let pts: Vec<*const $raw_aff> = points.iter().map(|p| (*p as *const $aff).cast()).collect();
                let scs: Vec<*const u8> = scalars.iter().map(|s| s.as_ptr()).collect();
                // SAFETY: blst reports the scratch size in bytes; u64 keeps it aligned.
                let words = unsafe { blst::$scratch(n) }.div_ceil(8);
                let mut scratch = vec![0u64; words];
                let mut out = <$raw_proj>::default();
                // SAFETY: n valid point and scalar pointers; scratch sized as blst asks.
                unsafe { blst::$run(&mut out, pts.as_ptr(), n, scs.as_ptr(), 255, scratch.as_mut_ptr()) };
                // SAFETY: same layout (repr(transparent)).
                unsafe { std::mem::transmute::<$raw_proj, $proj>(out) }
            }
        }
    };
}

impl_blst_msm!(G1Projective, G1Affine, blst_p1, blst_p1_affine, blst_p1s_mult_pippenger, blst_p1s_mult_pippenger_scratch_sizeof);
impl_blst_msm!(G2Projective, G2Affine, blst_p2, blst_p2_affine, blst_p2s_mult_pippenger, blst_p2s_mult_pippenger_scratch_sizeof);

/// Multi-scalar multiplication `Σ sᵢ·Pᵢ`.
///
/// With `density`, scalar `i` takes part only if bit `i` is set, and the `k`-th present
/// scalar pairs with `bases[k]`; `scalars.len()` must equal `density.len()`. Without it,
/// `scalars[i]` pairs with `bases[i]`. Callers check that enough bases exist.
pub fn msm<G>(bases: &[G::AffineRepr], scalars: &[Scalar], density: Option<&DensityBitmap>) -> G
where
    G: BlstMsm,
    G::AffineRepr: Send + Sync,
{
    // 1. Gather the non-trivial terms (base index, canonical bytes) and the sum of 1-terms.
    const CHUNK: usize = 1 << 14; // a multiple of 64, so density words align with chunks
    let chunk_bases: Vec<usize> = match density {
        None => (0..scalars.len().div_ceil(CHUNK)).map(|c| c * CHUNK).collect(),
        Some(d) => {
            let mut acc = 0usize;
            d.words()
                .chunks(CHUNK / 64)
                .map(|ws| {
                    let start = acc;
                    acc += ws.iter().map(|w| w.count_ones() as usize).sum::<usize>();
                    start
                })
                .collect()
        }
    };
    let one = Scalar::from(1u64);
    let parts: Vec<(G, Vec<u32>, Vec<[u8; 32]>)> = scalars
        .par_chunks(CHUNK)
        .zip(chunk_bases.par_iter())
        .enumerate()
        .map(|(ci, (chunk, &first_base))| {
            let mut ones = G::identity();
            let mut idx = Vec::new();
            let mut sc = Vec::new();
            let mut b = first_base;
            for (k, s) in chunk.iter().enumerate() {
                if let Some(d) = density {
                    if !d.get(ci * CHUNK + k) {
                        continue;
                    }
                }
                let this = b;
                b += 1;
                if bool::from(ff::Field::is_zero(s)) {
                    continue;
                }
                if *s == one {
                    ones += &bases[this];
                    continue;
                }
                idx.push(this as u32);
                sc.push(s.to_repr());
            }
            (ones, idx, sc)
        })
        .collect();
    let ones: G = parts.iter().fold(G::identity(), |acc, p| acc + p.0);
    let idx: Vec<u32> = parts.iter().flat_map(|p| p.1.iter().copied()).collect();
    let sc: Vec<[u8; 32]> = parts.into_iter().flat_map(|p| p.2).collect();
    let n = idx.len();
    if n == 0 {
        return ones;
    }

    // 2. One Pippenger per task (a few per thread for balance, but not tiny ones).
    let tasks = (rayon::current_num_threads() * 2).min(n.div_ceil(1 << 12)).max(1);
    let per = n.div_ceil(tasks);
    let sums: Vec<G> = (0..tasks)
        .into_par_iter()
        .map(|t| {
            let (lo, hi) = (t * per, ((t + 1) * per).min(n));
            if lo >= hi {
                return G::identity();
            }
            let pts: Vec<&G::AffineRepr> = idx[lo..hi].iter().map(|&i| &bases[i as usize]).collect();
            G::pippenger(&pts, &sc[lo..hi])
        })
        .collect();
    sums.into_iter().fold(ones, |acc, s| acc + s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::{G1Projective, G2Projective};
    use ff::Field;
    use group::Group;
    use rand::SeedableRng;

    #[test]
    fn matches_naive_with_density_and_trivial_scalars() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
        for n in [0usize, 1, 2, 7, 100, 3000] {
            let bits: Vec<bool> = (0..n).map(|i| i % 3 != 1).collect();
            let d = DensityBitmap::from_bools(&bits, cuzk_core::alloc::heap()).unwrap();
            let scalars: Vec<Scalar> = (0..n)
                .map(|i| match i % 5 {
                    0 => Scalar::ZERO,
                    1 => Scalar::ONE,
                    _ => Scalar::random(&mut rng),
                })
                .collect();
            let g1: Vec<_> = (0..d.count()).map(|_| G1Projective::random(&mut rng).to_affine()).collect();
            let g2: Vec<_> = (0..d.count()).map(|_| G2Projective::random(&mut rng).to_affine()).collect();
            let mut e1 = G1Projective::identity();
            let mut e2 = G2Projective::identity();
            let mut k = 0;
            for i in 0..n {
                if bits[i] {
                    e1 += g1[k] * scalars[i];
                    e2 += g2[k] * scalars[i];
                    k += 1;
                }
            }
            assert_eq!(msm::<G1Projective>(&g1, &scalars, Some(&d)), e1, "g1 n={n}");
            assert_eq!(msm::<G2Projective>(&g2, &scalars, Some(&d)), e2, "g2 n={n}");
            let full: Vec<_> = (0..n).map(|_| G1Projective::random(&mut rng).to_affine()).collect();
            let expect: G1Projective = full.iter().zip(&scalars).map(|(p, s)| *p * s).sum();
            assert_eq!(msm::<G1Projective>(&full, &scalars, None), expect);
        }
    }
}
