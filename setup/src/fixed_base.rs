//! Fixed-base scalar multiplication from window tables: no doublings, one mixed addition per
//! window.

use blstrs::Scalar;
use ff::PrimeField;
use group::{prime::PrimeCurveAffine, Curve};
use rayon::prelude::*;
use std::ops::AddAssign;

/// Window width in bits.
const WINDOW: usize = 12;
/// Windows covering 255-bit scalars.
const WINDOWS: usize = 256usize.div_ceil(WINDOW);

/// Precomputed multiples `d · 2^(WINDOW·w) · G` of one base point.
pub struct FixedBase<G: Curve> {
    /// `table[w][d-1] = d · 2^(WINDOW·w) · G`.
    table: Vec<Vec<G::AffineRepr>>,
}

impl<G> FixedBase<G>
where
    G: Curve + Send + Sync + for<'a> AddAssign<&'a G::AffineRepr>,
    G::AffineRepr: Send + Sync + PrimeCurveAffine,
{
    /// Builds the tables for `base`.
    pub fn new(base: G) -> Self {
        let mut starts = Vec::with_capacity(WINDOWS);
        let mut b = base;
        for _ in 0..WINDOWS {
            starts.push(b);
            for _ in 0..WINDOW {
                b = b.double();
            }
        }
        let table = starts
            .into_par_iter()
            .map(|s| {
                let mut proj = Vec::with_capacity((1 << WINDOW) - 1);
                let mut acc = s;
                for _ in 0..(1 << WINDOW) - 1 {
                    proj.push(acc);
                    acc += s;
                }
                let mut aff = vec![G::AffineRepr::identity(); proj.len()];
                G::batch_normalize(&proj, &mut aff);
                aff
            })
            .collect();
        FixedBase { table }
    }

    /// `s · G`.
    pub fn mul(&self, s: &Scalar) -> G {
        let repr = s.to_repr();
        let bytes = repr.as_ref();
        let mut acc = G::identity();
        for (w, row) in self.table.iter().enumerate() {
            let bit = w * WINDOW;
            let mut d = 0usize;
            for k in 0..WINDOW {
                let b = bit + k;
                if b < 256 && (bytes[b / 8] >> (b % 8)) & 1 == 1 {
                    d |= 1 << k;
                }
            }
            if d != 0 {
                acc += &row[d - 1];
            }
        }
        acc
    }

    /// `sᵢ · G` for every scalar, in parallel, normalized to affine chunk by chunk (so no
    /// projective copy of the whole output is ever held).
    pub fn mul_many(&self, scalars: &[Scalar]) -> Vec<G::AffineRepr> {
        const CHUNK: usize = 1 << 12;
        let mut out = vec![G::AffineRepr::identity(); scalars.len()];
        out.par_chunks_mut(CHUNK).zip(scalars.par_chunks(CHUNK)).for_each(|(o, s)| {
            let proj: Vec<G> = s.iter().map(|x| self.mul(x)).collect();
            G::batch_normalize(&proj, o);
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::{G1Projective, G2Projective};
    use ff::Field;
    use group::Group;
    use rand::SeedableRng;

    #[test]
    fn equals_plain_multiplication() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let g1 = FixedBase::new(G1Projective::generator());
        let g2 = FixedBase::new(G2Projective::generator());
        let mut scalars: Vec<Scalar> = (0..20).map(|_| Scalar::random(&mut rng)).collect();
        scalars.extend([Scalar::ZERO, Scalar::ONE, -Scalar::ONE]);
        for s in &scalars {
            assert_eq!(g1.mul(s), G1Projective::generator() * s);
            assert_eq!(g2.mul(s), G2Projective::generator() * s);
        }
    }
}
