//! What the GPU backends' Pippenger MSMs share: the groups' sizes, the window and bucket
//! arithmetic of signed-digit windows, the first bucket round's segment length, the input
//! checks, and reading field elements back from a device.

use blstrs::{Fp, Fp2, Scalar};
use ff::PrimeField;

use crate::density::DensityBitmap;

use crate::backend::MsmScalars;

/// Which group an MSM runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Group {
    /// G1 over Fp.
    G1,
    /// G2 over Fp2.
    G2,
}

impl Group {
    /// Bytes of one base-field element (Fp: 48, Fp2: 96).
    pub fn field_bytes(self) -> usize {
        match self {
            Group::G1 => 48,
            Group::G2 => 96,
        }
    }
    /// Bytes of an affine point (x, y): a base as blstrs lays it out.
    pub fn affine_bytes(self) -> usize {
        2 * self.field_bytes()
    }
    /// Bytes of an XYZZ point (X, Y, ZZ, ZZZ): a bucket's partial sum.
    pub fn xyzz_bytes(self) -> usize {
        4 * self.field_bytes()
    }
}

/// MSMs of at least this many scalars size their windows from the scalars above 1, counted on
/// the device (a 0 costs nothing and every 1 lands in window 0's first bucket whatever the
/// window size); smaller ones from the scalar count, uncounted.
pub const COUNT_DENSE_MIN: usize = 1 << 16;

/// Window bits for `m` scalars: the bit length of `m` minus 7 (about log2(m) - 6), from 4 up
/// to 16. A backend may tune its own rule on top (the CUDA backend's larger windows from 2^24).
pub fn window_bits(m: usize) -> u32 {
    let lg = usize::BITS - m.max(1).leading_zeros(); // ~log2(m) + 1
    (lg as i64 - 7).clamp(4, 16) as u32
}

/// Windows of `c` bits (`c` ≥ 1) over a scalar in signed digits: ceil(256 / c), the 255 bits
/// and the top digit's carry.
pub fn windows(c: u32) -> u32 {
    256u32.div_ceil(c)
}

/// Buckets of `c`-bit windows: [`windows`]`(c)` · 2^(c-1), one per window and nonzero digit
/// magnitude (key w·2^(c-1) + |d| - 1).
pub fn buckets(c: u32) -> u32 {
    windows(c) << (c - 1)
}

/// The most entries a segment of the first bucket round holds (see [`segment_len`]).
pub const MAX_SEGMENT: u32 = 256;

/// Entries per segment of the first bucket round over `entries` sorted bucket entries, and the
/// most partial sums one task of the later rounds adds: entries / 2^19, from 16 up to
/// [`MAX_SEGMENT`].
pub fn segment_len(entries: usize) -> u32 {
    (entries >> 19).clamp(16, MAX_SEGMENT as usize) as u32
}

/// Checks an MSM's inputs against the buffers: its scalars within a buffer of `buf_len`, the
/// density bitmap (if any) as long as the scalars, and the bases it consumes from `offset`
/// within `bases_len`. The error says which does not fit.
pub fn check_inputs<S>(scalars: &MsmScalars<'_, S>, buf_len: usize, bases_len: usize, offset: usize) -> Result<(), String> {
    if scalars.len > buf_len {
        return Err(format!("MSM over {} scalars of a buffer of {buf_len}", scalars.len));
    }
    if let Some(d) = scalars.density {
        if d.len() != scalars.len {
            return Err(format!("density of {} bits for {} scalars", d.len(), scalars.len));
        }
    }
    let need = scalars.bases_needed();
    if offset.checked_add(need).is_none_or(|end| end > bases_len) {
        return Err(format!("MSM needs {need} bases from offset {offset}, only {bases_len} exist"));
    }
    Ok(())
}

/// An Fp from the first 48 bytes of `b`, as blst stores it and the kernels write it: six
/// little-endian 64-bit Montgomery limbs, least significant first.
///
/// # Panics
/// If `b` is shorter than 48 bytes.
pub fn fp_from_bytes(b: &[u8]) -> Fp {
    Fp::from_raw_unchecked(std::array::from_fn(|i| u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().expect("8 bytes"))))
}

/// An Fp2 from the first 96 bytes of `b`: c0 then c1, each as [`fp_from_bytes`] reads it.
///
/// # Panics
/// If `b` is shorter than 96 bytes.
pub fn fp2_from_bytes(b: &[u8]) -> Fp2 {
    Fp2::new(fp_from_bytes(&b[..48]), fp_from_bytes(&b[48..96]))
}

/// How an MSM's scalars split by size, which decides what bucket sums cost: a 0 adds nothing, a
/// 1 is one addition of its base, a small scalar (2 up to 2^64 − 1) fills at most a quarter of
/// the windows, a dense one all of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScalarShares {
    /// Scalars equal to 0.
    pub zero: u64,
    /// Scalars equal to 1.
    pub one: u64,
    /// Scalars from 2 to 2^64 − 1.
    pub small: u64,
    /// Every other scalar.
    pub dense: u64,
}

impl ScalarShares {
    /// The shares of `scalars`.
    pub fn of<'a>(scalars: impl IntoIterator<Item = &'a Scalar>) -> Self {
        let mut shares = ScalarShares::default();
        scalars.into_iter().for_each(|s| shares.count(s));
        shares
    }

    /// Counts one scalar.
    pub fn count(&mut self, s: &Scalar) {
        let repr = s.to_repr();
        let (low, high) = repr.as_ref().split_at(8);
        let slot = match (u64::from_le_bytes(low.try_into().expect("8 bytes")), high.iter().all(|&b| b == 0)) {
            (0, true) => &mut self.zero,
            (1, true) => &mut self.one,
            (_, true) => &mut self.small,
            _ => &mut self.dense,
        };
        *slot += 1;
    }

    /// Scalars counted.
    pub fn total(&self) -> u64 {
        self.zero + self.one + self.small + self.dense
    }

    /// The four shares as fractions of the total (0, 1, small, dense); zeros when empty.
    pub fn fractions(&self) -> [f64; 4] {
        let n = self.total().max(1) as f64;
        [self.zero, self.one, self.small, self.dense].map(|c| c as f64 / n)
    }
}

impl std::fmt::Display for ScalarShares {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [zero, one, small, dense] = self.fractions().map(|x| 100.0 * x);
        write!(f, "{} scalars: 0 {zero:.1}%, 1 {one:.1}%, small {small:.1}%, dense {dense:.1}%", self.total())
    }
}

/// The scalar shares of a proof's witness MSMs: A (every input, the aux variables in A's
/// density), B (the inputs and aux variables in B's densities; B_G1 and B_G2 share them) and L
/// (every aux variable). H's scalars are the quotient's coefficients, dense by construction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WitnessShares {
    /// The A query's scalars.
    pub a: ScalarShares,
    /// The B queries' scalars.
    pub b: ScalarShares,
    /// The L query's scalars.
    pub l: ScalarShares,
}

impl WitnessShares {
    /// The shares of a witness (`input` with `ONE` first, `aux`) under the densities of its
    /// circuit's A query (aux), B query (inputs) and B query (aux), as
    /// `ConstraintMatrices::densities` gives them.
    pub fn of(input: &[Scalar], aux: &[Scalar], [a_aux, b_input, b_aux]: [&DensityBitmap; 3]) -> Self {
        // `shares` and the scalars whose bit is set in `d`.
        let and_dense = |mut shares: ScalarShares, d: &DensityBitmap, scalars: &[Scalar]| {
            scalars.iter().enumerate().filter(|&(i, _)| i < d.len() && d.get(i)).for_each(|(_, s)| shares.count(s));
            shares
        };
        WitnessShares {
            a: and_dense(ScalarShares::of(input), a_aux, aux),
            b: and_dense(and_dense(ScalarShares::default(), b_input, input), b_aux, aux),
            l: ScalarShares::of(aux),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::heap;
    use crate::density::DensityBitmap;
    use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
    use ff::Field;
    use group::prime::PrimeCurveAffine;
    use rand::SeedableRng;

    #[test]
    fn sizes_match_blstrs() {
        assert_eq!(Group::G1.affine_bytes(), G1Affine::identity().to_uncompressed().len());
        assert_eq!(Group::G2.affine_bytes(), G2Affine::identity().to_uncompressed().len());
        assert_eq!(Group::G1.field_bytes(), Fp::ZERO.to_bytes_le().len());
        // The in-memory layouts the backends upload and read back.
        assert_eq!(Group::G1.field_bytes(), std::mem::size_of::<Fp>());
        assert_eq!(Group::G2.field_bytes(), std::mem::size_of::<Fp2>());
        assert_eq!(Group::G1.affine_bytes(), std::mem::size_of::<G1Affine>());
        assert_eq!(Group::G2.affine_bytes(), std::mem::size_of::<G2Affine>());
        assert_eq!(3 * Group::G1.field_bytes(), std::mem::size_of::<G1Projective>());
        assert_eq!(3 * Group::G2.field_bytes(), std::mem::size_of::<G2Projective>());
        assert_eq!((Group::G1.xyzz_bytes(), Group::G2.xyzz_bytes()), (192, 384));
    }

    /// log2 by repeated halving, the rule spelled out.
    fn naive_window_bits(m: usize) -> u32 {
        let (mut bits, mut x) = (0i64, m.max(1));
        while x > 0 {
            bits += 1;
            x /= 2;
        }
        (bits - 7).clamp(4, 16) as u32
    }

    #[test]
    fn window_bits_follow_the_bit_length() {
        for m in 0..=1usize << 17 {
            assert_eq!(window_bits(m), naive_window_bits(m), "m = {m}");
        }
        for k in 17..usize::BITS {
            for m in [(1usize << k) - 1, 1 << k, (1 << k) + 1] {
                assert_eq!(window_bits(m), naive_window_bits(m), "m = {m}");
            }
        }
        assert_eq!(window_bits(usize::MAX), 16);
        let got: Vec<u32> = (0..=24).map(|k| window_bits(1 << k)).collect();
        assert_eq!(got, [4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 16, 16]);
    }

    #[test]
    fn windows_cover_256_bits_and_buckets_every_magnitude() {
        for c in 1..=24 {
            let w = windows(c);
            assert!(w * c >= 256 && (w - 1) * c < 256, "c = {c}");
            assert_eq!(buckets(c), w * (1 << (c - 1)));
        }
        assert_eq!((windows(16), windows(20), buckets(20)), (16, 13, 13 << 19));
    }

    #[test]
    fn segments_grow_with_the_entries_between_16_and_256() {
        assert_eq!(segment_len(0), 16);
        assert_eq!(segment_len((17 << 19) - 1), 16);
        assert_eq!(segment_len(17 << 19), 17);
        assert_eq!(segment_len(13 << 23), 208);
        assert_eq!(segment_len(256 << 19), 256);
        assert_eq!(segment_len(usize::MAX), MAX_SEGMENT);
    }

    #[test]
    fn inputs_are_checked_against_the_buffers() {
        let d = DensityBitmap::from_bools(&[true, false, true], heap()).unwrap();
        let sc = |len, density| MsmScalars { buf: &(), len, density };
        assert_eq!(check_inputs(&sc(3, None), 3, 3, 0), Ok(()));
        assert_eq!(check_inputs(&sc(3, Some(&d)), 4, 5, 3), Ok(()));
        assert_eq!(check_inputs(&sc(4, None), 3, 9, 0), Err("MSM over 4 scalars of a buffer of 3".into()));
        assert_eq!(check_inputs(&sc(2, Some(&d)), 3, 9, 0), Err("density of 3 bits for 2 scalars".into()));
        assert_eq!(check_inputs(&sc(3, Some(&d)), 3, 5, 4), Err("MSM needs 2 bases from offset 4, only 5 exist".into()));
        assert!(check_inputs(&sc(3, None), 3, 5, usize::MAX).is_err());
    }

    #[test]
    fn field_elements_read_back_from_their_bytes() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for _ in 0..8 {
            let (x, y) = (Fp::random(&mut rng), Fp2::random(&mut rng));
            // SAFETY: Fp and Fp2 are plain arrays of u64 limbs (repr(transparent) over blst's).
            let (bx, by) = unsafe { (std::mem::transmute::<Fp, [u8; 48]>(x), std::mem::transmute::<Fp2, [u8; 96]>(y)) };
            assert_eq!(fp_from_bytes(&bx), x);
            assert_eq!(fp2_from_bytes(&by), y);
            let mut longer = by.to_vec();
            longer.extend([0xff; 8]);
            assert_eq!(fp2_from_bytes(&longer), y);
        }
        assert_eq!(fp_from_bytes(&[0; 48]), Fp::ZERO);
    }

    /// The classes by construction: 0, 1, small up to 2^64 − 1, dense from 2^64 and for −1.
    #[test]
    fn scalar_shares_classify_by_value() {
        let values = [Scalar::ZERO, Scalar::ONE, Scalar::from(2u64), Scalar::from(u64::MAX), Scalar::from(u64::MAX) + Scalar::ONE, -Scalar::ONE];
        let s = ScalarShares::of(&values);
        assert_eq!((s.zero, s.one, s.small, s.dense), (1, 1, 2, 2));
        assert_eq!(s.total(), 6);
        assert_eq!(s.to_string(), "6 scalars: 0 16.7%, 1 16.7%, small 33.3%, dense 33.3%");
    }

    /// A counts every input and the aux variables in its density, B the inputs and aux in its
    /// two, L every aux variable.
    #[test]
    fn witness_shares_follow_the_densities() {
        let bits = |b: &[bool]| DensityBitmap::from_bools(b, heap()).expect("bitmap");
        let input = [Scalar::ONE, Scalar::from(5u64)];
        let aux = [Scalar::ZERO, Scalar::ONE, -Scalar::ONE];
        let (a_aux, b_in, b_aux) = (bits(&[false, true, true]), bits(&[true, false]), bits(&[true, false, false]));
        let w = WitnessShares::of(&input, &aux, [&a_aux, &b_in, &b_aux]);
        assert_eq!(w.a, ScalarShares { zero: 0, one: 2, small: 1, dense: 1 });
        assert_eq!(w.b, ScalarShares { zero: 1, one: 1, small: 0, dense: 0 });
        assert_eq!(w.l, ScalarShares { zero: 1, one: 1, small: 0, dense: 1 });
    }
}
