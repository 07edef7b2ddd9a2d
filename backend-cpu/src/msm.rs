//! Multi-threaded Pippenger MSM with signed windows, for G1 and G2.
//!
//! Scalars equal to zero are skipped and scalars equal to one are summed directly (common in
//! boolean-heavy circuits); the rest are split into signed `c`-bit digits
//! (`-2^(c-1) ≤ d < 2^(c-1)`), which halves the buckets. Work is split over (window, chunk of
//! points) tasks; each task accumulates its buckets with mixed additions and reduces them with
//! a running sum.

use std::ops::{AddAssign, SubAssign};

use blstrs::Scalar;
use ff::PrimeField;
use group::Curve;
use rayon::prelude::*;

use cuzk_core::density::DensityBitmap;

/// Canonical little-endian limbs of a scalar.
#[inline]
fn limbs(s: &Scalar) -> [u64; 4] {
    let b = s.to_repr();
    let mut l = [0u64; 4];
    for (i, w) in l.iter_mut().enumerate() {
        *w = u64::from_le_bytes(b.as_ref()[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    }
    l
}

/// Window size minimizing `windows · (points + buckets)`.
pub fn window_bits(points: usize) -> u32 {
    if points < 4 {
        return 2;
    }
    (2..=20u32)
        .min_by_key(|&c| {
            let windows = (255 / c + 1) as u64;
            windows * (points as u64 + (1u64 << (c - 1)) * 2)
        })
        .unwrap_or(8)
}

/// Signed `c`-bit digits of a canonical scalar (at most 255 bits), least significant first.
fn signed_digits(l: &[u64; 4], c: u32, windows: usize, out: &mut [i32]) {
    let half = 1i64 << (c - 1);
    let mut carry = 0i64;
    for (w, d) in out.iter_mut().enumerate().take(windows) {
        let bit = w * c as usize;
        let mut v = 0u64;
        if bit < 256 {
            let (word, off) = (bit / 64, bit % 64);
            v = l[word] >> off;
            if off + c as usize > 64 && word + 1 < 4 {
                v |= l[word + 1] << (64 - off);
            }
            v &= (1u64 << c) - 1;
        }
        let mut digit = v as i64 + carry;
        carry = 0;
        if digit >= half {
            digit -= 1i64 << c;
            carry = 1;
        }
        *d = digit as i32;
    }
}

/// Multi-scalar multiplication `Σ sᵢ·Pᵢ`.
///
/// With `density`, scalar `i` takes part only if bit `i` is set, and the `k`-th present
/// scalar pairs with `bases[k]`; `scalars.len()` must equal `density.len()`. Without it,
/// `scalars[i]` pairs with `bases[i]`. Callers check that enough bases exist.
pub fn msm<G>(bases: &[G::AffineRepr], scalars: &[Scalar], density: Option<&DensityBitmap>) -> G
where
    G: Curve + Send + Sync + for<'a> AddAssign<&'a G::AffineRepr> + for<'a> SubAssign<&'a G::AffineRepr>,
    G::AffineRepr: Send + Sync,
{
    // 1. Gather the non-trivial terms (base index, canonical limbs) and the sum of 1-terms.
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
    let parts: Vec<(G, Vec<u32>, Vec<[u64; 4]>)> = scalars
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
                sc.push(limbs(s));
            }
            (ones, idx, sc)
        })
        .collect();
    let ones: G = parts.iter().fold(G::identity(), |acc, p| acc + p.0);
    let idx: Vec<u32> = parts.iter().flat_map(|p| p.1.iter().copied()).collect();
    let sc: Vec<[u64; 4]> = parts.into_iter().flat_map(|p| p.2).collect();
    let n = idx.len();
    if n == 0 {
        return ones;
    }

    // 2. Signed digits, window-major.
    let c = window_bits(n);
    let windows = (256 / c as usize) + 1;
    let mut digits = vec![0i32; n * windows];
    {
        let per: Vec<Vec<i32>> = sc
            .par_chunks(4096)
            .map(|chunk| {
                let mut out = vec![0i32; chunk.len() * windows];
                for (i, l) in chunk.iter().enumerate() {
                    signed_digits(l, c, windows, &mut out[i * windows..(i + 1) * windows]);
                }
                out
            })
            .collect();
        // Transpose into window-major order.
        let mut row = 0usize;
        for block in per {
            let rows = block.len() / windows;
            for i in 0..rows {
                for w in 0..windows {
                    digits[w * n + row + i] = block[i * windows + w];
                }
            }
            row += rows;
        }
    }

    // 3. Bucket accumulation per (window, chunk).
    let threads = rayon::current_num_threads().max(1);
    let chunks = (threads * 2).div_ceil(windows).max(1).min(n.div_ceil(1024).max(1));
    let per_chunk = n.div_ceil(chunks);
    let buckets_len = 1usize << (c - 1);
    let sums: Vec<(usize, G)> = (0..windows * chunks)
        .into_par_iter()
        .map(|task| {
            let (w, ch) = (task / chunks, task % chunks);
            let lo = ch * per_chunk;
            let hi = (lo + per_chunk).min(n);
            let row = &digits[w * n..(w + 1) * n];
            let mut buckets = vec![G::identity(); buckets_len];
            for i in lo..hi {
                let d = row[i];
                if d > 0 {
                    buckets[(d - 1) as usize] += &bases[idx[i] as usize];
                } else if d < 0 {
                    buckets[(-d - 1) as usize] -= &bases[idx[i] as usize];
                }
            }
            let mut running = G::identity();
            let mut sum = G::identity();
            for b in buckets.iter().rev() {
                running += b;
                sum += running;
            }
            (w, sum)
        })
        .collect();

    // 4. Combine windows, most significant first.
    let mut per_window = vec![G::identity(); windows];
    for (w, s) in sums {
        per_window[w] += s;
    }
    let mut acc = G::identity();
    for s in per_window.iter().rev() {
        for _ in 0..c {
            acc = acc.double();
        }
        acc += s;
    }
    acc + ones
}

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::{G1Projective, G2Projective};
    use group::Group;
    use ff::Field;
    use rand::SeedableRng;

    #[test]
    fn digits_recompose() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        for c in [2u32, 5, 8, 13, 16] {
            let windows = 256 / c as usize + 1;
            for _ in 0..50 {
                let s = Scalar::random(&mut rng);
                let mut d = vec![0; windows];
                signed_digits(&limbs(&s), c, windows, &mut d);
                let mut acc = Scalar::ZERO;
                let base = Scalar::from(1u64 << c);
                for &x in d.iter().rev() {
                    acc = acc * base + if x >= 0 { Scalar::from(x as u64) } else { -Scalar::from((-x) as u64) };
                }
                assert_eq!(acc, s);
            }
        }
    }

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
