//! The CUDA backend's results against blstrs and the CPU oracle (here, above both backends: a
//! backend crate depends on no other). Every test skips (with a visible message) when there is
//! no CUDA device. Built as `gpu` for `scripts/h200/kernels.sh`.
//!
//! Sizes: `CUZK_GPU_TEST_MAX_LOG_NTT` / `CUZK_GPU_TEST_MAX_LOG_MSM` raise the largest sizes
//! (defaults 16 and 14 keep the suite quick); the H200 run sets them to 26 and 24.
//!
//! The `*_batch_affine_*` tests run the MSM tests with the batch-affine rounds forced on every
//! MSM (`AffineRule::Always`: to one point per bucket where the fullest bucket allows it, also in
//! groups of 2^20 entries, and `AffineRule::AlwaysPartial`: never, so the XYZZ rounds finish), so
//! that small sizes, the EIP
//! vectors (P = Q, P = -Q pairs) and streamed bases go through them too; their G1 sizes go up
//! to `CUZK_GPU_TEST_MAX_LOG_MSM_AFFINE` (default 12; 2^19 always).

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_backend_cpu::CpuBackend;
use cuzk_backend_cuda::msm::{AffineRule, MsmConfig, ScatterRule};
use cuzk_backend_cuda::{need_gpu, CudaBackend, CudaBases, CudaScalars};
use cuzk_core::alloc::{heap, PinnedVec};
use cuzk_core::backend::{Backend, MsmScalars, NttDirection};
use cuzk_core::density::DensityBitmap;
use cuzk_core::domain::Domain;
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve, Group};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

fn env_log(name: &str, default: u32) -> u32 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// `n` bases from a pool of `pool` random points, repeated in a shifted order (random points
/// are expensive on the host).
fn tiled_bases<P: Group + Curve>(n: usize, pool: usize, r: &mut ChaCha20Rng) -> Vec<P::AffineRepr>
where
    P::AffineRepr: Copy,
{
    let pool: Vec<P::AffineRepr> = (0..pool).map(|_| P::random(&mut *r).to_affine()).collect();
    (0..n).map(|i| pool[(i * 7 + i / pool.len()) % pool.len()]).collect()
}

fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

fn bytes<T>(v: &[T]) -> Vec<u8> {
    // SAFETY: plain-old-data blstrs values.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }.to_vec()
}

fn from_bytes<T: Copy>(b: &[u8]) -> Vec<T> {
    let n = b.len() / std::mem::size_of::<T>();
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        // SAFETY: the kernel wrote valid Montgomery limbs of T.
        out.push(unsafe { std::ptr::read_unaligned(b.as_ptr().add(i * std::mem::size_of::<T>()).cast::<T>()) });
    }
    out
}

/// Entries of `out` (five per pair: product, sum, difference, negation of `x`, square of `x`)
/// that differ from the field's own operations on `x[i], y[i]`; the first few are printed.
fn op_mismatches<F: ff::Field>(field: &str, x: &[F], y: &[F], out: &[F]) -> usize {
    let mut bad = 0;
    for (i, (x, y)) in x.iter().zip(y).enumerate() {
        let want = [*x * y, *x + y, *x - y, -*x, x.square()];
        for k in 0..5 {
            if out[5 * i + k] != want[k] {
                bad += 1;
                if bad < 5 {
                    eprintln!("{field} op {k} mismatch at {i}");
                }
            }
        }
    }
    bad
}

#[test]
fn field_ops_match_blstrs() {
    let b = need_gpu!();
    let mut r = rng(1);
    let n = 1000;
    // Fr
    let x: Vec<Scalar> = (0..n).map(|i| if i == 0 { Scalar::ZERO } else { Scalar::random(&mut r) }).collect();
    let y: Vec<Scalar> = (0..n).map(|i| if i == 1 { -Scalar::ONE } else { Scalar::random(&mut r) }).collect();
    let out: Vec<Scalar> = from_bytes(&b.selftest("selftest_fr_ops", &bytes(&x), &bytes(&y), n, 5 * 32 * n).unwrap());
    assert_eq!(op_mismatches("Fr", &x, &y, &out), 0, "Fr ops");
    // Fp via G1 coordinates of random points.
    let pts: Vec<G1Affine> = (0..2 * n).map(|_| G1Projective::random(&mut r).to_affine()).collect();
    let xs: Vec<blstrs::Fp> = pts[..n].iter().map(|p| p.x()).collect();
    let ys: Vec<blstrs::Fp> = pts[n..].iter().map(|p| p.y()).collect();
    let out: Vec<blstrs::Fp> = from_bytes(&b.selftest("selftest_fp_ops", &bytes(&xs), &bytes(&ys), n, 5 * 48 * n).unwrap());
    assert_eq!(op_mismatches("Fp", &xs, &ys, &out), 0, "Fp ops");
    let p2: Vec<G2Affine> = (0..2 * n).map(|_| G2Projective::random(&mut r).to_affine()).collect();
    let xs: Vec<blstrs::Fp2> = p2[..n].iter().map(|p| p.x()).collect();
    let ys: Vec<blstrs::Fp2> = p2[n..].iter().map(|p| p.y()).collect();
    let out: Vec<blstrs::Fp2> = from_bytes(&b.selftest("selftest_fp2_ops", &bytes(&xs), &bytes(&ys), n, 5 * 96 * n).unwrap());
    assert_eq!(op_mismatches("Fp2", &xs, &ys, &out), 0, "Fp2 ops");
}

/// The experimental FP64-unit product (`field/fp64_mont.cuh`) on the device: a·b·2^(-52L),
/// i.e. blstrs' a·b times 2^(256 - 260) for Fr and 2^(384 - 416) for Fp. This also checks that
/// the device's round-toward-zero FMA splits the limb products as the host emulation does.
#[test]
fn fp64_products_match_blstrs() {
    let b = need_gpu!();
    let mut r = rng(11);
    let n = 4096;
    let x: Vec<Scalar> = (0..n).map(|i| if i == 0 { -Scalar::ONE } else { Scalar::random(&mut r) }).collect();
    let y: Vec<Scalar> = (0..n).map(|i| if i == 1 { Scalar::ZERO } else { Scalar::random(&mut r) }).collect();
    let out: Vec<Scalar> = from_bytes(&b.selftest("selftest_fr_mul_fp64", &bytes(&x), &bytes(&y), n, 32 * n).unwrap());
    let c = Scalar::from(16u64).invert().unwrap();
    let bad = (0..n).filter(|&i| out[i] != x[i] * y[i] * c).count();
    assert_eq!(bad, 0, "Fr FP64 products");
    let xs: Vec<blstrs::Fp> = (0..n).map(|_| blstrs::Fp::random(&mut r)).collect();
    let ys: Vec<blstrs::Fp> = (0..n).map(|i| if i == 2 { -blstrs::Fp::ONE } else { blstrs::Fp::random(&mut r) }).collect();
    let out: Vec<blstrs::Fp> = from_bytes(&b.selftest("selftest_fp_mul_fp64", &bytes(&xs), &bytes(&ys), n, 48 * n).unwrap());
    let c = blstrs::Fp::from(1u64 << 32).invert().unwrap();
    let bad = (0..n).filter(|&i| out[i] != xs[i] * ys[i] * c).count();
    assert_eq!(bad, 0, "Fp FP64 products");
}

fn check_curve<A, P>(b: &CudaBackend, kernel: &str, p: &[A], q: &[A], proj: fn(&[u8]) -> Vec<P>, to_proj: fn(&A) -> P) -> usize
where
    P: Group + std::fmt::Debug,
{
    let n = p.len();
    let psz = std::mem::size_of::<P>();
    let out = proj(&b.selftest(kernel, &bytes(p), &bytes(q), n, 6 * psz * n).unwrap());
    let mut bad = 0;
    for i in 0..n {
        let (pp, qq) = (to_proj(&p[i]), to_proj(&q[i]));
        let want = [pp + qq, pp.double(), pp + qq, (pp + qq).double(), pp * P::Scalar::from(5u64), pp.double()];
        for k in 0..6 {
            if out[6 * i + k] != want[k] {
                bad += 1;
                if bad < 8 {
                    eprintln!("{kernel}: op {k} mismatch at {i}");
                }
            }
        }
    }
    bad
}

#[test]
fn curve_ops_match_blstrs() {
    let b = need_gpu!();
    let mut r = rng(2);
    let n = 256;
    let mut p: Vec<G1Affine> = (0..n).map(|_| G1Projective::random(&mut r).to_affine()).collect();
    let mut q: Vec<G1Affine> = (0..n).map(|_| G1Projective::random(&mut r).to_affine()).collect();
    // edge cases: P = Q, P = -Q, identity operands
    q[0] = p[0];
    q[1] = -p[1];
    p[2] = G1Affine::identity();
    q[3] = G1Affine::identity();
    let bad1 = check_curve(b, "selftest_g1_ops", &p, &q, from_bytes::<G1Projective>, |a| G1Projective::from(a));
    let mut p2: Vec<G2Affine> = (0..n).map(|_| G2Projective::random(&mut r).to_affine()).collect();
    let mut q2: Vec<G2Affine> = (0..n).map(|_| G2Projective::random(&mut r).to_affine()).collect();
    q2[0] = p2[0];
    q2[1] = -p2[1];
    p2[2] = G2Affine::identity();
    q2[3] = G2Affine::identity();
    let bad2 = check_curve(b, "selftest_g2_ops", &p2, &q2, from_bytes::<G2Projective>, |a| G2Projective::from(a));
    assert_eq!((bad1, bad2), (0, 0));
}

/// Uniform-enough random scalars, fast: random Montgomery limbs below 2^254 (< r, so valid).
fn random_scalars(n: usize, r: &mut ChaCha20Rng) -> Vec<Scalar> {
    let mut limbs = vec![[0u64; 4]; n];
    for l in limbs.iter_mut() {
        r.fill(&mut l[..]);
        l[3] &= (1 << 62) - 1;
    }
    // SAFETY: [u64; 4] below r is a valid Scalar representation.
    limbs.into_iter().map(|l| unsafe { std::mem::transmute::<[u64; 4], Scalar>(l) }).collect()
}

fn pinned(v: &[Scalar], b: &CudaBackend) -> PinnedVec<Scalar> {
    PinnedVec::from_slice_in(v, b.host_allocator()).unwrap()
}

#[test]
fn ntt_matches_cpu_oracle() {
    let b = need_gpu!();
    let cpu = CpuBackend::new();
    let max = env_log("CUZK_GPU_TEST_MAX_LOG_NTT", 16);
    let mut r = rng(3);
    let mut failures = Vec::new();
    for log_n in 0..=max {
        let d = Domain::new(log_n).unwrap();
        let v = random_scalars(d.size(), &mut r);
        for (dir, coset) in [(NttDirection::Forward, false), (NttDirection::Inverse, false), (NttDirection::Forward, true), (NttDirection::Inverse, true)] {
            let mut g = b.upload_scalars(pinned(&v, b)).unwrap();
            b.ntt(&mut g, &d, dir, coset).unwrap();
            let got = b.download_scalars(&g).unwrap();
            let mut c = cpu.upload_scalars(PinnedVec::from_slice_in(&v, heap()).unwrap()).unwrap();
            cpu.ntt(&mut c, &d, dir, coset).unwrap();
            let want = cpu.download_scalars(&c).unwrap();
            if got != want {
                let first = got.iter().zip(&want).position(|(a, b)| a != b).unwrap();
                failures.push(format!("2^{log_n} {dir:?} coset={coset}: first mismatch at {first}"));
            }
        }
        // compute_h
        if log_n <= max.min(24) {
            let (a, bb, c) = (random_scalars(d.size(), &mut r), random_scalars(d.size(), &mut r), random_scalars(d.size(), &mut r));
            let up = |x: &Vec<Scalar>| b.upload_scalars(pinned(x, b)).unwrap();
            let h = b.compute_h(up(&a), up(&bb), up(&c), &d).unwrap();
            let got = b.download_scalars(&h).unwrap();
            let upc = |x: &Vec<Scalar>| cpu.upload_scalars(PinnedVec::from_slice_in(x, heap()).unwrap()).unwrap();
            let hc = cpu.compute_h(upc(&a), upc(&bb), upc(&c), &d).unwrap();
            if got != cpu.download_scalars(&hc).unwrap() {
                failures.push(format!("2^{log_n} compute_h"));
            }
        }
        eprintln!("ntt 2^{log_n}: {}", if failures.is_empty() { "ok" } else { "FAIL so far" });
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn ntt_small_against_naive_dft() {
    let b = need_gpu!();
    let mut r = rng(4);
    for log_n in 1..=6u32 {
        let d = Domain::new(log_n).unwrap();
        let n = d.size();
        let v = random_scalars(n, &mut r);
        let want: Vec<Scalar> = (0..n)
            .map(|k| {
                let wk = d.omega.pow_vartime([k as u64]);
                let mut acc = Scalar::ZERO;
                let mut x = Scalar::ONE;
                for c in &v {
                    acc += *c * x;
                    x *= wk;
                }
                acc
            })
            .collect();
        let mut g = b.upload_slice(&v).unwrap();
        b.ntt(&mut g, &d, NttDirection::Forward, false).unwrap();
        assert_eq!(b.download_scalars(&g).unwrap(), want, "naive DFT 2^{log_n}");
    }
}

fn naive_g1(bases: &[G1Affine], s: &[Scalar]) -> G1Projective {
    bases.iter().zip(s).map(|(p, k)| G1Projective::from(p) * k).sum()
}

/// The configurations the batch-affine tests run every MSM under: to one point per bucket, never
/// so, in groups of 2^20 entries (the smallest the memory sizing takes: many groups from 2^19
/// G1 scalars on), and with each round's batch inversion taken down to 32 elements (levels of
/// prefix products, which the default's 2^16 leaves these sizes' rounds none of).
const FORCED: [MsmConfig; 4] = [
    MsmConfig { affine: AffineRule::Always, ..MsmConfig::DEFAULT },
    MsmConfig { affine: AffineRule::AlwaysPartial, ..MsmConfig::DEFAULT },
    MsmConfig { affine: AffineRule::Always, affine_group_log: Some(20), ..MsmConfig::DEFAULT },
    MsmConfig { affine: AffineRule::Always, inversion_log: Some(5), ..MsmConfig::DEFAULT },
];

fn forced_max_log() -> u32 {
    env_log("CUZK_GPU_TEST_MAX_LOG_MSM_AFFINE", 12)
}

/// A G1 MSM: through the `Backend` trait with the default configuration, else with `cfg`.
fn msm_g1(b: &CudaBackend, bases: &CudaBases, offset: usize, sc: MsmScalars<'_, CudaScalars>, cfg: MsmConfig) -> Result<G1Projective, String> {
    if cfg == MsmConfig::default() {
        b.msm_g1(bases, offset, sc).map_err(|e| e.to_string())
    } else {
        b.msm_g1_with(bases, offset, sc, cfg).map_err(|e| e.to_string())
    }
}

/// G2 counterpart of [`msm_g1`].
fn msm_g2(b: &CudaBackend, bases: &CudaBases, offset: usize, sc: MsmScalars<'_, CudaScalars>, cfg: MsmConfig) -> Result<G2Projective, String> {
    if cfg == MsmConfig::default() {
        b.msm_g2(bases, offset, sc).map_err(|e| e.to_string())
    } else {
        b.msm_g2_with(bases, offset, sc, cfg).map_err(|e| e.to_string())
    }
}

#[test]
fn msm_g1_matches_oracle() {
    let b = need_gpu!();
    let failures = msm_g1_cases(b, &[MsmConfig::default()], env_log("CUZK_GPU_TEST_MAX_LOG_MSM", 14));
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn msm_g1_batch_affine_matches_oracle() {
    let b = need_gpu!();
    let failures = msm_g1_cases(b, &FORCED, forced_max_log());
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Every windowed scatter (2^19 scalars on) binned by range, in at least 64 bins, and by
/// ranges without bins, against the oracle; and 2^19 equal dense scalars, whose one bucket per
/// window takes the warp-aggregated atomics of either.
#[test]
fn msm_g1_binned_and_ranged_scatters_match_oracle() {
    let b = need_gpu!();
    let cfgs = [ScatterRule::Binned, ScatterRule::Ranges].map(|scatter| MsmConfig { scatter, ..MsmConfig::DEFAULT });
    let mut failures = msm_g1_cases(b, &cfgs, env_log("CUZK_GPU_TEST_MAX_LOG_MSM", 14));
    let n = 1 << 19;
    let mut r = rng(9);
    let bases = tiled_bases::<G1Projective>(n, 1 << 12, &mut r);
    let gb = b.load_g1(bases.clone()).unwrap();
    let k = random_scalars(1, &mut r)[0];
    let gs = b.upload_slice(&vec![k; n]).unwrap();
    let want = bases.iter().map(G1Projective::from).sum::<G1Projective>() * k;
    for cfg in cfgs {
        let got = msm_g1(b, &gb, 0, MsmScalars { buf: &gs, len: n, density: None }, cfg).unwrap();
        if got != want {
            failures.push(format!("G1 2^19 equal dense scalars {:?}", cfg.scatter));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// A sparse MSM whose density bitmap spans many scan blocks (the ranks of its set bits are
/// computed on the device: popcounts, then a multi-level scan), with set bits scattered, in runs,
/// at the first and the last position, against the oracle. 2^22 scalars by default (64 scan
/// blocks, two levels); `CUZK_GPU_TEST_DENSITY_LOG=27` takes a 32 GiB PoRep's three levels.
#[test]
fn sparse_msm_over_a_long_density_matches_oracle() {
    let b = need_gpu!();
    let cpu = CpuBackend::new();
    let n = 1usize << env_log("CUZK_GPU_TEST_DENSITY_LOG", 22);
    let mut r = rng(17);
    let mut words = vec![0u64; n.div_ceil(64)];
    let mut set = |i: usize| words[i / 64] |= 1 << (i % 64);
    set(0);
    set(n - 1);
    for i in (0..n).step_by(1009) {
        set(i + r.gen_range(0..1009).min(n - 1 - i));
    }
    for i in (n / 2..n / 2 + 300).chain(n - 200..n) {
        set(i);
    }
    let density = DensityBitmap::from_words(&words, n, heap()).unwrap().expect("words match the length");
    let mut s = vec![Scalar::from(5u64); n];
    for (i, x) in s.iter_mut().enumerate() {
        if density.get(i) {
            *x = Scalar::random(&mut r);
        }
    }
    let m = density.count();
    let bases = tiled_bases::<G1Projective>(m, 1024, &mut r);
    let (gb, cb) = (b.load_g1(bases.clone()).unwrap(), cpu.load_g1(bases).unwrap());
    let gs = b.upload_slice(&s).unwrap();
    let cs = cpu.upload_scalars(PinnedVec::from_slice_in(&s, heap()).unwrap()).unwrap();
    let want = cpu.msm_g1(&cb, 0, MsmScalars { buf: &cs, len: n, density: Some(&density) }).unwrap();
    let got = b.msm_g1(&gb, 0, MsmScalars { buf: &gs, len: n, density: Some(&density) }).unwrap();
    assert_eq!(got, want, "sparse G1 MSM of {n} scalars, {m} selected");
    eprintln!("sparse msm 2^{} scalars, {m} selected: ok", n.trailing_zeros());
}

/// The digit passes visit, per warp, only the windows that some lane's scalar needs
/// (`windows_needed` in `msm/msm.cu`): warps of one bit length each
/// (`cuzk_tests::scalars_by_bit_length`), so every window count and the carry into the last
/// needed window are taken, at the default window size and at 13 and 20 bits (the large MSMs'),
/// against the oracle.
#[test]
fn msm_g1_visits_the_windows_each_warp_needs() {
    let b = need_gpu!();
    let cpu = CpuBackend::new();
    let mut r = rng(9);
    let s = cuzk_tests::scalars_by_bit_length(&mut r);
    let n = s.len();
    let bases = tiled_bases::<G1Projective>(n, 1024, &mut r);
    let (gb, cb) = (b.load_g1(bases.clone()).unwrap(), cpu.load_g1(bases).unwrap());
    let gs = b.upload_slice(&s).unwrap();
    let cs = cpu.upload_scalars(PinnedVec::from_slice_in(&s, heap()).unwrap()).unwrap();
    let want = cpu.msm_g1(&cb, 0, MsmScalars { buf: &cs, len: n, density: None }).unwrap();
    let mut failures = Vec::new();
    for window_bits in [None, Some(13), Some(20)] {
        let cfg = MsmConfig { window_bits, ..MsmConfig::default() };
        let got = msm_g1(b, &gb, 0, MsmScalars { buf: &gs, len: n, density: None }, cfg).unwrap();
        if got != want {
            failures.push(format!("window bits {window_bits:?}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// G1 MSMs of 2^0 … 2^max and 2^19 random scalars, 0/1/-1 scalars with density and an offset,
/// and all-equal scalars, each under every configuration of `cfgs`, against the oracle.
fn msm_g1_cases(b: &CudaBackend, cfgs: &[MsmConfig], max: u32) -> Vec<String> {
    let cpu = CpuBackend::new();
    // 2^19 scalars always: the first size whose entries outgrow one scatter launch's span, so
    // the windowed scatter (msm_window_keys + msm_scatter_range) runs too.
    let logs: Vec<u32> = (0..=max).chain((max < 19).then_some(19)).collect();
    let mut r = rng(5);
    let n_max = 1usize << max.max(19);
    let bases = tiled_bases::<G1Projective>(n_max, (1 << 12).min(n_max), &mut r);
    let gb = b.load_g1(bases.clone()).unwrap();
    let cb = cpu.load_g1(bases.clone()).unwrap();
    let mut failures = Vec::new();
    for &log_n in &logs {
        let n = 1usize << log_n;
        let s = random_scalars(n, &mut r);
        let gs = b.upload_slice(&s).unwrap();
        let cs = cpu.upload_scalars(PinnedVec::from_slice_in(&s, heap()).unwrap()).unwrap();
        let want = if log_n <= 6 { naive_g1(&bases[..n], &s) } else { cpu.msm_g1(&cb, 0, MsmScalars { buf: &cs, len: n, density: None }).unwrap() };
        for &cfg in cfgs {
            let got = msm_g1(b, &gb, 0, MsmScalars { buf: &gs, len: n, density: None }, cfg).unwrap();
            if got != want {
                failures.push(format!("G1 2^{log_n} {cfg:?}"));
            }
            eprintln!("msm g1 2^{log_n} {cfg:?}: {}", if got == want { "ok" } else { "MISMATCH" });
        }
    }
    // 0/1 scalars, repeated scalars (heavy buckets), density and offset.
    let n = 1usize << max.min(16);
    let s: Vec<Scalar> = (0..n)
        .map(|i| match i % 5 {
            0 => Scalar::ZERO,
            1 | 2 => Scalar::ONE,
            3 => -Scalar::ONE,
            _ => Scalar::from(r.gen::<u64>()),
        })
        .collect();
    let bits: Vec<bool> = (0..n).map(|i| i % 3 != 1).collect();
    let dens = DensityBitmap::from_bools(&bits, heap()).unwrap();
    let offset = 3;
    let gs = b.upload_slice(&s).unwrap();
    let sel: Vec<Scalar> = s.iter().zip(&bits).filter(|(_, &b)| b).map(|(x, _)| *x).collect();
    let want = cpu
        .msm_g1(&cb, offset, MsmScalars { buf: &cpu.upload_scalars(PinnedVec::from_slice_in(&s, heap()).unwrap()).unwrap(), len: n, density: Some(&dens) })
        .unwrap();
    assert_eq!(want, naive_g1(&bases[offset..offset + sel.len()], &sel), "oracle self-check");
    for &cfg in cfgs {
        let got = msm_g1(b, &gb, offset, MsmScalars { buf: &gs, len: n, density: Some(&dens) }, cfg).unwrap();
        if got != want {
            failures.push(format!("G1 0/1/-1 scalars with density {cfg:?}"));
        }
    }
    // All scalars equal (one very heavy bucket per window).
    let s = vec![Scalar::from(3u64); n];
    let gs = b.upload_slice(&s).unwrap();
    let want: G1Projective = bases[..n].iter().map(G1Projective::from).sum::<G1Projective>() * Scalar::from(3u64);
    for &cfg in cfgs {
        let got = msm_g1(b, &gb, 0, MsmScalars { buf: &gs, len: n, density: None }, cfg).unwrap();
        if got != want {
            failures.push(format!("G1 all-equal scalars {cfg:?}"));
        }
        // Bad input is an error, not a panic.
        assert!(msm_g1(b, &gb, n_max, MsmScalars { buf: &gs, len: n, density: None }, cfg).is_err());
    }
    failures
}

#[test]
fn msm_g2_matches_oracle() {
    let b = need_gpu!();
    let max = env_log("CUZK_GPU_TEST_MAX_LOG_MSM", 14).min(env_log("CUZK_GPU_TEST_MAX_LOG_MSM_G2", 12));
    let failures = msm_g2_cases(b, &[MsmConfig::default()], max);
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn msm_g2_batch_affine_matches_oracle() {
    let b = need_gpu!();
    let failures = msm_g2_cases(b, &FORCED, forced_max_log().min(env_log("CUZK_GPU_TEST_MAX_LOG_MSM_G2", 12)));
    assert!(failures.is_empty(), "{failures:#?}");
}

/// G2 MSMs of 2^0 … 2^max random scalars and half-ones with density and an offset, each under
/// every configuration of `cfgs`, against the oracle.
fn msm_g2_cases(b: &CudaBackend, cfgs: &[MsmConfig], max: u32) -> Vec<String> {
    let cpu = CpuBackend::new();
    let mut r = rng(6);
    let n_max = 1usize << max;
    let bases = tiled_bases::<G2Projective>(n_max, (1 << 10).min(n_max), &mut r);
    let gb = b.load_g2(bases.clone()).unwrap();
    let cb = cpu.load_g2(bases.clone()).unwrap();
    let mut failures = Vec::new();
    for log_n in 0..=max {
        let n = 1usize << log_n;
        let s = random_scalars(n, &mut r);
        let gs = b.upload_slice(&s).unwrap();
        let cs = cpu.upload_scalars(PinnedVec::from_slice_in(&s, heap()).unwrap()).unwrap();
        let want = cpu.msm_g2(&cb, 0, MsmScalars { buf: &cs, len: n, density: None }).unwrap();
        for &cfg in cfgs {
            let got = msm_g2(b, &gb, 0, MsmScalars { buf: &gs, len: n, density: None }, cfg).unwrap();
            if got != want {
                failures.push(format!("G2 2^{log_n} {cfg:?}"));
            }
            eprintln!("msm g2 2^{log_n} {cfg:?}: {}", if got == want { "ok" } else { "MISMATCH" });
        }
    }
    let n = n_max;
    let s: Vec<Scalar> = (0..n).map(|i| if i % 2 == 0 { Scalar::ONE } else { Scalar::from(r.gen::<u64>()) }).collect();
    let bits: Vec<bool> = (0..n).map(|i| i % 4 != 3).collect();
    let dens = DensityBitmap::from_bools(&bits, heap()).unwrap();
    let gs = b.upload_slice(&s).unwrap();
    let cs = cpu.upload_scalars(PinnedVec::from_slice_in(&s, heap()).unwrap()).unwrap();
    let want = cpu.msm_g2(&cb, 1, MsmScalars { buf: &cs, len: n, density: Some(&dens) }).unwrap();
    for &cfg in cfgs {
        let got = msm_g2(b, &gb, 1, MsmScalars { buf: &gs, len: n, density: Some(&dens) }, cfg).unwrap();
        if got != want {
            failures.push(format!("G2 density {cfg:?}"));
        }
    }
    failures
}

#[test]
fn pinned_pool_reuses_buffers() {
    let b = need_gpu!();
    let alloc = b.host_allocator();
    assert!(alloc.is_page_locked());
    let n = 3 * (1 << 20) + 12_345;
    let v = PinnedVec::<Scalar>::from_elem_in(Scalar::ONE, n, alloc.clone()).unwrap();
    let up = b.upload_scalars(v).unwrap();
    // The buffer is parked until the copy completes, then reused: a same-size request must
    // not grow the pool.
    b.synchronize().unwrap();
    let before = b.pool().total_bytes();
    let w = PinnedVec::<Scalar>::from_elem_in(Scalar::ZERO, n, alloc.clone()).unwrap();
    assert_eq!(b.pool().total_bytes(), before, "pool allocated instead of reusing a buffer");
    drop(w);
    assert!(b.download_scalars(&up).unwrap().iter().all(|x| *x == Scalar::ONE));
}

// ---- EIP-2537 MSM vectors (and go-ethereum's MSMs when present), parsed by `cuzk_tests`.

#[test]
fn eip2537_msm_vectors() {
    let b = need_gpu!();
    eip2537_cases(b, &[MsmConfig::default()]);
}

#[test]
fn eip2537_msm_vectors_batch_affine() {
    let b = need_gpu!();
    eip2537_cases(b, &FORCED);
}

/// Every EIP-2537 vector, and go-ethereum's when present, under every configuration of `cfgs`.
fn eip2537_cases(b: &CudaBackend, cfgs: &[MsmConfig]) {
    let mut sets = vec![cuzk_tests::eip2537_cases()];
    match cuzk_tests::geth_cases() {
        Ok(geth) => sets.push(geth),
        Err(why) => cuzk_tests::skipped(&format!("go-ethereum's MSM vectors: {why}; G2 runs EIP-2537's multiplications only")),
    }
    let mut cases = 0;
    for set in &sets {
        for case in &set.g1 {
            let gb = b.load_g1(case.points.clone()).unwrap();
            let gs = b.upload_slice(&case.scalars).unwrap();
            for &cfg in cfgs {
                let got = msm_g1(b, &gb, 0, MsmScalars { buf: &gs, len: case.scalars.len(), density: None }, cfg).unwrap().to_affine();
                assert_eq!(got, case.expected, "{} {cfg:?}", case.name);
            }
            cases += 1;
        }
        for case in &set.g2 {
            let gb = b.load_g2(case.points.clone()).unwrap();
            let gs = b.upload_slice(&case.scalars).unwrap();
            for &cfg in cfgs {
                let got = msm_g2(b, &gb, 0, MsmScalars { buf: &gs, len: case.scalars.len(), density: None }, cfg).unwrap().to_affine();
                assert_eq!(got, case.expected, "{} {cfg:?}", case.name);
            }
            cases += 1;
        }
    }
    let rules: Vec<AffineRule> = cfgs.iter().map(|c| c.affine).collect();
    eprintln!("EIP-2537 / geth MSM vectors: {cases} cases pass ({rules:?})");
}

/// Prints past libtest's output capture, so skips are visible in a plain `cargo test`.
/// Bases kept in host memory and streamed in chunks give the oracle's MSM (several chunks,
/// an offset, density, and a last chunk shorter than the others), for G1 and G2.
#[test]
fn streamed_bases_match_oracle() {
    let b = need_gpu!();
    streamed_cases(b, &[MsmConfig::default()]);
}

#[test]
fn streamed_bases_batch_affine_match_oracle() {
    let b = need_gpu!();
    streamed_cases(b, &FORCED);
}

fn streamed_cases(b: &CudaBackend, cfgs: &[MsmConfig]) {
    let oracle = CpuBackend::new();
    let mut r = rng(41);
    let n = 5000;
    let offset = 7;
    let s = random_scalars(n, &mut r);
    let bits: Vec<bool> = (0..n).map(|_| r.gen_bool(0.6)).collect();
    let density = DensityBitmap::from_bools(&bits, heap()).unwrap();
    let g1: Vec<G1Affine> = (0..n + offset).map(|_| G1Projective::random(&mut r).to_affine()).collect();
    let g2: Vec<G2Affine> = (0..n).map(|_| G2Projective::random(&mut r).to_affine()).collect();
    let buf = b.upload_scalars(pinned(&s, b)).unwrap();
    let obuf = oracle.upload_scalars(PinnedVec::from_slice_in(&s, heap()).unwrap()).unwrap();
    let o1 = oracle.load_g1(g1.clone()).unwrap();
    let o2 = oracle.load_g2(g2.clone()).unwrap();
    for chunk in [1000, 1 << 20] {
        let b1 = b.load_g1_streamed(&g1, chunk).unwrap();
        assert!(b1.is_streamed());
        for (off, d) in [(offset, None), (0, Some(&density))] {
            let want = oracle.msm_g1(&o1, off, MsmScalars { buf: &obuf, len: n, density: d }).unwrap();
            for &cfg in cfgs {
                let got = msm_g1(b, &b1, off, MsmScalars { buf: &buf, len: n, density: d }, cfg).unwrap();
                assert_eq!(got, want, "streamed G1 MSM (chunk {chunk}, offset {off}, density {}, {cfg:?})", d.is_some());
            }
        }
        let b2 = b.load_g2_streamed(&g2, chunk / 2).unwrap();
        let want = oracle.msm_g2(&o2, 0, MsmScalars { buf: &obuf, len: n, density: Some(&density) }).unwrap();
        for &cfg in cfgs {
            let got = msm_g2(b, &b2, 0, MsmScalars { buf: &buf, len: n, density: Some(&density) }, cfg).unwrap();
            assert_eq!(got, want, "streamed G2 MSM (chunk {}, {cfg:?})", chunk / 2);
        }
    }
    // Out-of-range requests are errors, not panics.
    let b1 = b.load_g1_streamed(&g1[..10], 4).unwrap();
    for &cfg in cfgs {
        assert!(msm_g1(b, &b1, 0, MsmScalars { buf: &buf, len: n, density: None }, cfg).is_err());
    }
}

/// Scalars uploaded on the copy stream from other threads while kernels run on the compute
/// stream arrive intact (each NTT round trip must return the uploaded values).
#[test]
fn concurrent_uploads_and_kernels() {
    let b = need_gpu!();
    let k = 14;
    let d = Domain::new(k).unwrap();
    let inputs: Vec<Vec<Scalar>> = (0..8).map(|i| random_scalars(d.size(), &mut rng(100 + i))).collect();
    std::thread::scope(|sc| {
        let (tx, rx) = std::sync::mpsc::sync_channel(2);
        let inputs = &inputs;
        sc.spawn(move || {
            for (i, v) in inputs.iter().enumerate() {
                tx.send((i, b.upload_scalars(pinned(v, b)).unwrap())).unwrap();
            }
        });
        for (i, mut buf) in rx {
            b.ntt(&mut buf, &d, NttDirection::Forward, false).unwrap();
            b.ntt(&mut buf, &d, NttDirection::Inverse, false).unwrap();
            assert_eq!(b.download_scalars(&buf).unwrap(), inputs[i], "round trip {i}");
        }
    });
}

/// Bases loaded on one thread (on the copy stream, in pieces of 64 MiB: these take two, the
/// second partial) while another thread's MSMs run on the compute stream arrive intact: each
/// loaded set's MSM equals the CPU oracle's, and so does every MSM that ran meanwhile.
#[test]
fn bases_loaded_while_msms_run_match_oracle() {
    let b = need_gpu!();
    let cpu = CpuBackend::new();
    let mut r = rng(61);
    let oracle_msm_g1 = |bases: &[G1Affine], s: &[Scalar]| {
        let cs = cpu.upload_scalars(PinnedVec::from_slice_in(s, heap()).unwrap()).unwrap();
        cpu.msm_g1(&cpu.load_g1(bases.to_vec()).unwrap(), 0, MsmScalars { buf: &cs, len: s.len(), density: None }).unwrap()
    };
    // The MSMs that run during the loads.
    let n = 1 << 14;
    let running = tiled_bases::<G1Projective>(n, 1 << 10, &mut r);
    let running_s = random_scalars(n, &mut r);
    let running_want = oracle_msm_g1(&running, &running_s);
    let running_gpu = b.load_g1(running.clone()).unwrap();
    let running_buf = b.upload_slice(&running_s).unwrap();
    // The loads: 2^20 + 5 G1 bases and 2^19 + 3 G2 bases, about 100 MB each.
    let g1 = tiled_bases::<G1Projective>((1 << 20) + 5, 1 << 12, &mut r);
    let g2 = tiled_bases::<G2Projective>((1 << 19) + 3, 1 << 10, &mut r);
    let done = std::sync::atomic::AtomicBool::new(false);
    let (loaded, runs) = std::thread::scope(|sc| {
        let loader = sc.spawn(|| {
            let loaded = (b.load_g1(g1.clone()).unwrap(), b.load_g2(g2.clone()).unwrap());
            done.store(true, std::sync::atomic::Ordering::Release);
            loaded
        });
        let mut runs = 0;
        while runs == 0 || !done.load(std::sync::atomic::Ordering::Acquire) {
            let got = b.msm_g1(&running_gpu, 0, MsmScalars { buf: &running_buf, len: n, density: None }).unwrap();
            assert_eq!(got, running_want, "MSM {runs} during the loads");
            runs += 1;
        }
        (loader.join().unwrap(), runs)
    });
    eprintln!("{runs} MSMs ran during the loads");
    let (g1_gpu, g2_gpu) = loaded;
    assert!(!g1_gpu.is_streamed() && !g2_gpu.is_streamed(), "the loaded bases went to host memory");
    let s1 = random_scalars(g1.len(), &mut r);
    let got = b.msm_g1(&g1_gpu, 0, MsmScalars { buf: &b.upload_slice(&s1).unwrap(), len: s1.len(), density: None }).unwrap();
    assert_eq!(got, oracle_msm_g1(&g1, &s1), "G1 MSM over the bases loaded during the MSMs");
    let s2 = random_scalars(g2.len(), &mut r);
    let cs2 = cpu.upload_scalars(PinnedVec::from_slice_in(&s2, heap()).unwrap()).unwrap();
    let want = cpu.msm_g2(&cpu.load_g2(g2.clone()).unwrap(), 0, MsmScalars { buf: &cs2, len: s2.len(), density: None }).unwrap();
    let got = b.msm_g2(&g2_gpu, 0, MsmScalars { buf: &b.upload_slice(&s2).unwrap(), len: s2.len(), density: None }).unwrap();
    assert_eq!(got, want, "G2 MSM over the bases loaded during the MSMs");
}

/// A proving key loaded streamed (`ProvingKey::load_placed(.., true)`: every query set in
/// page-locked host memory, streamed during the MSMs; and one built with small chunks, so that
/// each MSM runs over several) proves the same bytes as a resident one, and verifies.
#[test]
fn streamed_proving_key_proves_like_a_resident_one() {
    use cuzk_core::prover::{prove, ProvingKey};
    use cuzk_core::synth::{synthesize, SizeHint};
    let b = need_gpu!();
    let circuit = cuzk_circuits::CircuitKind::SquaringChain.instance(10, 3).unwrap();
    let inputs = circuit.public_inputs();
    let params = cuzk_setup::generate_parameters(circuit.clone(), &mut rng(21)).unwrap();
    let vk = params.vk.clone();
    let resident = ProvingKey::load_placed(b, params.clone(), false).unwrap();
    let streamed = ProvingKey::load_placed(b, params.clone(), true).unwrap();
    assert!(streamed.h.is_streamed() && streamed.l.is_streamed() && streamed.a.is_streamed() && streamed.b_g1.is_streamed() && streamed.b_g2.is_streamed());
    let chunked = ProvingKey {
        vk: params.vk.clone(),
        h: b.load_g1_streamed(&params.h, 100).unwrap(),
        l: b.load_g1_streamed(&params.l, 100).unwrap(),
        a: b.load_g1_streamed(&params.a, 100).unwrap(),
        b_g1: b.load_g1_streamed(&params.b_g1, 100).unwrap(),
        b_g2: b.load_g2_streamed(&params.b_g2, 50).unwrap(),
    };
    let (r, s) = (Scalar::from(4242u64), Scalar::from(2424u64));
    let proof = |key: &ProvingKey<CudaBackend>| {
        let synth = synthesize(circuit.clone(), b.host_allocator(), SizeHint::default()).unwrap();
        prove(b, key, synth, r, s, &mut |_| {}).unwrap()
    };
    let want = proof(&resident);
    for (name, key) in [("streamed", &streamed), ("streamed in small chunks", &chunked)] {
        let got = proof(key);
        assert_eq!(got.to_bytes(), want.to_bytes(), "{name} key: proof differs from the resident key's");
        assert!(cuzk_core::proof::verify(&vk, &got, &inputs).unwrap(), "{name} key: proof does not verify");
    }
}
