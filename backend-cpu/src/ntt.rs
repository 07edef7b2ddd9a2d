//! Multi-threaded radix-4 NTT over the BLS12-381 scalar field.
//!
//! Decimation in time after a bit-reversal permutation; two radix-2 stages are fused into one
//! radix-4 pass (one sweep over memory instead of two), with a precomputed twiddle table, so
//! each butterfly costs one multiplication.

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use cuzk_core::domain::{fill_powers, Domain};

/// Butterflies below this count run on one thread.
const PAR_MIN: usize = 1 << 10;

/// A raw pointer that may cross threads; each task touches disjoint indices.
#[derive(Clone, Copy)]
struct SharedMut(*mut Scalar);
// SAFETY: used only for disjoint element access inside a single parallel pass.
unsafe impl Send for SharedMut {}
unsafe impl Sync for SharedMut {}

impl SharedMut {
    /// # Safety
    /// `i` in bounds and not accessed concurrently by another task.
    #[inline(always)]
    unsafe fn at(self, i: usize) -> &'static mut Scalar {
        unsafe { &mut *self.0.add(i) }
    }
}

/// Powers `root^0 .. root^(len-1)`, in parallel chunks ([`fill_powers`] each).
pub fn powers(root: Scalar, len: usize) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; len];
    out.par_chunks_mut(4096).enumerate().for_each(|(ci, chunk)| fill_powers(root, (ci * 4096) as u64, chunk));
    out
}

/// Multiplies `data[i]` by `scale · g^i` in place.
pub fn distribute_powers(data: &mut [Scalar], g: Scalar, scale: Scalar) {
    data.par_chunks_mut(4096).enumerate().for_each(|(ci, chunk)| {
        let mut w = g.pow_vartime([(ci * 4096) as u64]) * scale;
        for x in chunk {
            *x *= w;
            w *= g;
        }
    });
}

/// Multiplies every element by `s`.
pub fn scale(data: &mut [Scalar], s: Scalar) {
    data.par_iter_mut().with_min_len(PAR_MIN).for_each(|x| *x *= s);
}

fn bit_reverse(data: &mut [Scalar], log_n: u32) {
    if log_n == 0 {
        return;
    }
    let p = SharedMut(data.as_mut_ptr());
    let shift = usize::BITS - log_n;
    (0..data.len()).into_par_iter().with_min_len(PAR_MIN).for_each(|i| {
        let j = i.reverse_bits() >> shift;
        if i < j {
            // SAFETY: the pair (i, j) is visited only by index min(i, j).
            unsafe { std::mem::swap(p.at(i), p.at(j)) };
        }
    });
}

/// In-place NTT with `tw[k] = root^k` for `k < n/2`, where `root` has order `n`.
/// Output is in natural order.
pub fn ntt_with_twiddles(data: &mut [Scalar], log_n: u32, tw: &[Scalar]) {
    let n = data.len();
    debug_assert_eq!(n, 1 << log_n);
    debug_assert!(tw.len() >= n / 2);
    bit_reverse(data, log_n);
    let p = SharedMut(data.as_mut_ptr());
    let mut m = 1usize; // half-size of the current radix-2 stage
    if log_n % 2 == 1 {
        // One radix-2 stage (m = 1): twiddle is 1.
        data.par_chunks_mut(2).with_min_len(PAR_MIN).for_each(|c| {
            let (u, v) = (c[0], c[1]);
            c[0] = u + v;
            c[1] = u - v;
        });
        m = 2;
    }
    while m < n {
        // Fuse stages with half-sizes m and 2m over blocks of 4m.
        let s1 = n / (2 * m);
        let s2 = n / (4 * m);
        let log_m = m.trailing_zeros();
        (0..n / 4).into_par_iter().with_min_len(PAR_MIN).for_each(|t| {
            let b = t >> log_m;
            let j = t & (m - 1);
            let base = b * 4 * m + j;
            // SAFETY: each t owns the four indices base + {0, m, 2m, 3m}.
            unsafe {
                let (x0, x1, x2, x3) = (p.at(base), p.at(base + m), p.at(base + 2 * m), p.at(base + 3 * m));
                let w = tw[j * s1];
                let t1 = *x1 * w;
                let t3 = *x3 * w;
                let a0 = *x0 + t1;
                let a1 = *x0 - t1;
                let a2 = *x2 + t3;
                let a3 = *x2 - t3;
                let u2 = a2 * tw[j * s2];
                let u3 = a3 * tw[(j + m) * s2];
                *x0 = a0 + u2;
                *x2 = a0 - u2;
                *x1 = a1 + u3;
                *x3 = a1 - u3;
            }
        });
        m *= 4;
    }
}

/// Twiddle tables of one domain, forward and inverse.
#[derive(Debug)]
pub struct Twiddles {
    /// Domain they belong to.
    pub log_n: u32,
    /// `omega^k`, `k < n/2`.
    pub forward: Vec<Scalar>,
    /// `omega^-k`, `k < n/2`.
    pub inverse: Vec<Scalar>,
}

impl Twiddles {
    /// Computes the tables of `domain`.
    pub fn new(domain: &Domain) -> Self {
        let half = (domain.size() / 2).max(1);
        Twiddles { log_n: domain.log_n, forward: powers(domain.omega, half), inverse: powers(domain.omega_inv, half) }
    }
}

/// Naive O(n²) DFT `out[i] = Σ data[j]·root^(ij)`: the reference for tests.
pub fn naive_dft(data: &[Scalar], root: Scalar) -> Vec<Scalar> {
    let n = data.len();
    (0..n)
        .map(|i| {
            let wi = root.pow_vartime([i as u64]);
            let mut acc = Scalar::ZERO;
            let mut w = Scalar::ONE;
            for x in data {
                acc += *x * w;
                w *= wi;
            }
            acc
        })
        .collect()
}
