//! The curve and subgroup checks of decoded points (`kernels/cuda/curve/points.cu`,
//! `Backend::first_invalid_g1/g2`) against blst's (`cuzk_core::params::g1_point_error`, what the
//! CPU backend runs on every thread):
//!
//! - `host_*`: the kernel's per-point check compiled as host C++ (`field/host_emulation.h`, as
//!   `host_field.rs` does), on valid points, points on the curve outside the subgroup (random
//!   `x`; pure cofactor torsion; `(0, ±2)` of order 3), points off the curve and the identity.
//!   Needs a C++ compiler (`CXX`, else `c++`); prints `SKIPPED` without one.
//! - `gpu_*`: the CUDA backend's answer (the first failing index and why) on batches of
//!   several sizes, multiples of the block (128) and not, with bad points placed at block and
//!   chunk edges, against the CPU oracle. Each prints `SKIPPED` and passes without a CUDA
//!   device. `CUZK_GPU_TEST_POINTS_LOG` (default 16) sets the largest batch.

mod common;

use std::path::PathBuf;
use std::sync::OnceLock;

use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective};
use cuzk_backend_cuda::need_gpu;
use cuzk_core::backend::Backend;
use cuzk_core::params::{first_invalid_g1, first_invalid_g2, g1_point_error, g2_point_error, PointError, PointFailure};
use cuzk_core::test_points::{mul_plain, off_subgroup_g1, off_subgroup_g2, valid, GROUP_ORDER as R};
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve, Group};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

/// Every kind of bad G1 point, `k` of each random kind.
fn bad_g1(k: usize, r: &mut ChaCha20Rng) -> Vec<G1Affine> {
    let mut v = vec![
        G1Affine::identity(),
        G1Affine::from_raw_unchecked(Fp::ZERO, Fp::from(2u64), false),
        G1Affine::from_raw_unchecked(Fp::ZERO, -Fp::from(2u64), false),
        G1Affine::from_raw_unchecked(Fp::ZERO, Fp::ONE, false),
        G1Affine::from_raw_unchecked(Fp::ONE, Fp::ZERO, false),
    ];
    for p in valid::<G1Projective>(k, r) {
        v.push(G1Affine::from_raw_unchecked(p.x(), p.y() + Fp::ONE, false));
        v.push(G1Affine::from_raw_unchecked(p.x() + Fp::ONE, p.y(), false));
    }
    for _ in 0..k {
        let p = off_subgroup_g1(r);
        v.push(p);
        v.push(mul_plain(G1Projective::from(p), R).to_affine());
        // A subgroup point plus a torsion point: both parts at once.
        v.push((G1Projective::random(&mut *r) + mul_plain(G1Projective::from(p), R)).to_affine());
    }
    v
}

fn bad_g2(k: usize, r: &mut ChaCha20Rng) -> Vec<G2Affine> {
    let mut v = vec![G2Affine::identity(), G2Affine::from_raw_unchecked(Fp2::ZERO, Fp2::ONE, false)];
    for p in valid::<G2Projective>(k, r) {
        v.push(G2Affine::from_raw_unchecked(p.x(), p.y() + Fp2::ONE, false));
    }
    for _ in 0..k {
        let p = off_subgroup_g2(r);
        v.push(p);
        v.push(mul_plain(G2Projective::from(p), R).to_affine());
        v.push((G2Projective::random(&mut *r) + mul_plain(G2Projective::from(p), R)).to_affine());
    }
    v
}

// ---- The kernel's check on the host.

/// Reads `<group> <n> <in> <out>`: n affine points (G1 for group 1, G2 for 2) in blstrs'
/// layout, writes one u32 status per point (0 valid, 1 identity, 2 invalid).
const HARNESS: &str = r#"
#include "field/host_emulation.h"
#include "field/mont.cuh"
#include "field/fp2.cuh"
#include "curve/xyzz.cuh"
#include "curve/points.cu"
#include <cstdio>
#include <cstdlib>
#include <vector>

template <class F>
static int run(FILE* in, FILE* out, long n) {
    std::vector<Affine<F>> p(n);
    if (n && fread(p.data(), sizeof(Affine<F>), n, in) != (size_t)n) return 3;
    for (long i = 0; i < n; i++) {
        u32 s = point_status(p[i]);
        if (fwrite(&s, 4, 1, out) != 1) return 4;
    }
    return 0;
}

int main(int argc, char** argv) {
    if (argc != 5) return 2;
    FILE* in = fopen(argv[3], "rb");
    FILE* out = fopen(argv[4], "wb");
    if (!in || !out) return 2;
    long n = atol(argv[2]);
    int rc = atoi(argv[1]) == 1 ? run<Fp>(in, out, n) : run<Fp2>(in, out, n);
    fclose(out);
    return rc;
}
"#;

/// Builds the harness once per test binary; `None` (and a SKIPPED line) without a compiler.
fn harness() -> Option<PathBuf> {
    static BIN: OnceLock<Option<PathBuf>> = OnceLock::new();
    BIN.get_or_init(|| common::build_harness("cuzk-host-points", HARNESS, &[], "host point checks")).clone()
}

fn bytes<T>(v: &[T]) -> &[u8] {
    // SAFETY: plain-old-data blstrs points.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// The harness's status of each point.
fn host_status<T>(group: u32, name: &str, points: &[T]) -> Option<Vec<u32>> {
    let bin = harness()?;
    let out = common::run_harness(&bin, name, group, points.len(), bytes(points));
    Some(out.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect())
}

fn status_of(e: Option<PointError>) -> u32 {
    match e {
        None => 0,
        Some(PointError::Identity) => 1,
        Some(PointError::NotOnCurveOrSubgroup) => 2,
    }
}

fn compare<T: std::fmt::Debug>(what: &str, points: &[T], got: &[u32], want: impl Fn(&T) -> Option<PointError>) {
    assert_eq!(got.len(), points.len());
    let wrong: Vec<String> =
        points.iter().zip(got).filter(|(p, g)| status_of(want(p)) != **g).map(|(p, g)| format!("{p:?}: status {g}, blst {:?}", want(p))).collect();
    assert!(wrong.is_empty(), "{what}: {} of {} wrong, e.g. {}", wrong.len(), points.len(), wrong[0]);
}

#[test]
fn host_g1_checks_match_blst() {
    let mut r = rng(1);
    let mut points = valid::<G1Projective>(64, &mut r);
    points.extend(bad_g1(24, &mut r));
    let Some(got) = host_status(1, "g1", &points) else { return };
    assert!(got.iter().filter(|s| **s == 0).count() >= 64 && got.iter().filter(|s| **s == 2).count() >= 100);
    compare("G1", &points, &got, g1_point_error);
}

#[test]
fn host_g2_checks_match_blst() {
    let mut r = rng(2);
    let mut points = valid::<G2Projective>(32, &mut r);
    points.extend(bad_g2(12, &mut r));
    let Some(got) = host_status(2, "g2", &points) else { return };
    assert!(got.iter().filter(|s| **s == 0).count() >= 32 && got.iter().filter(|s| **s == 2).count() >= 40);
    compare("G2", &points, &got, g2_point_error);
}

// ---- The CUDA backend against the CPU oracle.

fn max_log() -> u32 {
    std::env::var("CUZK_GPU_TEST_POINTS_LOG").ok().and_then(|v| v.parse().ok()).unwrap_or(16)
}

/// Batch sizes: around the block (128) and well past it, up to 2^`max_log()`.
fn sizes() -> Vec<usize> {
    let mut v = vec![1, 2, 127, 128, 129, 255, 1000, 4097];
    v.extend((13..=max_log()).step_by(3).map(|k| (1usize << k) + 3));
    v
}

/// Where a bad point goes in a batch of `n` (chunk `chunk`): the ends, block edges, chunk edges.
fn places(n: usize, chunk: usize) -> Vec<usize> {
    let mut v = vec![0, 1, 127, 128, 129, n / 2, chunk - 1, chunk, chunk + 1, 2 * chunk + 77, n - 2, n - 1];
    v.retain(|&i| i < n);
    v.sort_unstable();
    v.dedup();
    v
}

/// Runs `check(points, chunk)` on every size with every bad point at every place (one bad
/// point, then two where the later one must not hide the earlier). The valid points are valid
/// by construction (sums of subgroup points; the oracle confirms the smaller batches), so the
/// expected answer is the first substituted point that `point_error`, the CPU oracle, refuses.
fn gpu_cases<T: Copy + std::fmt::Debug>(
    valid: &[T],
    bad: &[T],
    point_error: impl Fn(&T) -> Option<PointError>,
    check: impl Fn(&[T], usize) -> Option<PointFailure>,
) -> usize {
    let first = |subs: &[(usize, T)]| subs.iter().find_map(|(i, p)| point_error(p).map(|reason| PointFailure { index: *i, reason }));
    assert!(valid.iter().take(4097).all(|p| point_error(p).is_none()));
    let mut runs = 0;
    for n in sizes().into_iter().filter(|&n| n <= valid.len()) {
        let batch = &valid[..n];
        for chunk in [usize::MAX, 1000] {
            assert_eq!(check(batch, chunk), None, "{n} valid points (chunk {chunk}) reported");
            runs += 1;
        }
        for (k, b) in bad.iter().enumerate() {
            let chunk = if k % 2 == 0 { usize::MAX } else { 1000 };
            for at in places(n, chunk.min(1000)) {
                let mut v = batch.to_vec();
                v[at] = *b;
                let want = first(&[(at, *b)]);
                assert_eq!(want.map(|f| f.index), Some(at), "the oracle passes {b:?}");
                assert_eq!(check(&v, chunk), want, "{n} points, {b:?} at {at}, chunk {chunk}");
                if at + 1 < n {
                    let later = bad[(k + 1) % bad.len()];
                    v[n - 1] = later;
                    assert_eq!(check(&v, chunk), first(&[(at, *b), (n - 1, later)]), "{n} points, two bad ones, chunk {chunk}");
                }
                runs += 2;
            }
        }
    }
    runs
}

#[test]
fn gpu_g1_checks_match_the_cpu_oracle() {
    let b = need_gpu!();
    let mut r = rng(3);
    let valid = valid::<G1Projective>(*sizes().last().unwrap(), &mut r);
    assert_eq!(b.first_invalid_g1(&valid).unwrap(), None);
    let bad = bad_g1(2, &mut r);
    let runs = gpu_cases(&valid, &bad, g1_point_error, |v, chunk| b.first_invalid_g1_with(v, chunk).unwrap());
    eprintln!("{runs} G1 batches agree with the oracle");
}

#[test]
fn gpu_g2_checks_match_the_cpu_oracle() {
    let b = need_gpu!();
    let mut r = rng(4);
    let valid = valid::<G2Projective>(*sizes().last().unwrap(), &mut r);
    assert_eq!(b.first_invalid_g2(&valid).unwrap(), None);
    let bad = bad_g2(2, &mut r);
    let runs = gpu_cases(&valid, &bad, g2_point_error, |v, chunk| b.first_invalid_g2_with(v, chunk).unwrap());
    eprintln!("{runs} G2 batches agree with the oracle");
}

/// Every point of a mixed batch on its own (a batch of one), so each kind's answer is checked,
/// not only the first failure of a batch.
#[test]
fn gpu_each_point_matches_the_cpu_oracle() {
    let b = need_gpu!();
    let mut r = rng(5);
    let mut g1 = valid::<G1Projective>(8, &mut r);
    g1.extend(bad_g1(4, &mut r));
    for p in &g1 {
        assert_eq!(b.first_invalid_g1(std::slice::from_ref(p)).unwrap(), first_invalid_g1(std::slice::from_ref(p)), "{p:?}");
    }
    let mut g2 = valid::<G2Projective>(8, &mut r);
    g2.extend(bad_g2(4, &mut r));
    for p in &g2 {
        assert_eq!(b.first_invalid_g2(std::slice::from_ref(p)).unwrap(), first_invalid_g2(std::slice::from_ref(p)), "{p:?}");
    }
}
