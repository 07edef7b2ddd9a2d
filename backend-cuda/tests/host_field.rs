//! The CUDA field arithmetic (`kernels/cuda/field/mont.cuh`, `fp2.cuh`) compiled as host C++
//! with the PTX carry primitives emulated (`field/host_emulation.h`), checked against blstrs on
//! random and edge-case operands. Runs without a GPU or NVRTC; needs a C++ compiler (`CXX`,
//! else `c++`) and prints `SKIPPED` without one. The GPU tests (`gpu.rs`) check the same
//! operations on the device.

mod common;

use std::path::PathBuf;

use blstrs::{Fp, Fp2, Scalar};
use ff::Field;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// Reads `<mode> <n>` from argv, n pairs (a, b) of raw limbs from `in`, and writes five
/// results per pair to `out` (see `run` and `run_inv`).
const HARNESS: &str = r#"
#include "field/host_emulation.h"
#include "field/mont.cuh"
#include "field/fp2.cuh"
#include "field/fp64_mont.cuh"
#include <cstdio>
#include <cstdlib>
#include <vector>

// With FP64 false: a·b, a², a + b, a − b, −a. With FP64 true, the FP64-unit product
// (each result times 2^(-52L), its Montgomery radix): a·b, a·a, b·b, b·a and (−a)·b.
template <class F, bool FP64 = false>
static int run(FILE* in, FILE* out, long n) {
    std::vector<F> a(n), b(n);
    for (long i = 0; i < n; i++) {
        if (fread(&a[i], sizeof(F), 1, in) != 1 || fread(&b[i], sizeof(F), 1, in) != 1) return 3;
    }
    for (long i = 0; i < n; i++) {
        F x = a[i], y = b[i], r[5];
        if constexpr (FP64) {
            r[0] = mont_mul_fp64(x, y), r[1] = mont_mul_fp64(x, x), r[2] = mont_mul_fp64(y, y);
            r[3] = mont_mul_fp64(y, x), r[4] = mont_mul_fp64(-x, y);
        } else {
            r[0] = x * y, r[1] = sqr(x), r[2] = x + y, r[3] = x - y, r[4] = -x;
        }
        if (fwrite(r, sizeof(F), 5, out) != 5) return 4;
    }
    return 0;
}

// Inverses (field_inv): a^(-1), b^(-1), (−a)^(-1), (a·b)^(-1), (a²)^(-1).
template <class F>
static int run_inv(FILE* in, FILE* out, long n) {
    std::vector<F> a(n), b(n);
    for (long i = 0; i < n; i++) {
        if (fread(&a[i], sizeof(F), 1, in) != 1 || fread(&b[i], sizeof(F), 1, in) != 1) return 3;
    }
    for (long i = 0; i < n; i++) {
        F x = a[i], y = b[i];
        F r[5] = {field_inv(x), field_inv(y), field_inv(-x), field_inv(x * y), field_inv(sqr(x))};
        if (fwrite(r, sizeof(F), 5, out) != 5) return 4;
    }
    return 0;
}

int main(int argc, char** argv) {
    if (argc != 5) return 2;
    FILE* in = fopen(argv[3], "rb");
    FILE* out = fopen(argv[4], "wb");
    if (!in || !out) return 2;
    long n = atol(argv[2]);
    int f = atoi(argv[1]);
    int rc = f == 0   ? run<Fr>(in, out, n)
             : f == 1 ? run<Fp>(in, out, n)
             : f == 2 ? run<Fp2>(in, out, n)
             : f == 3 ? run<Fr, true>(in, out, n)
             : f == 4 ? run<Fp, true>(in, out, n)
             : f == 5 ? run_inv<Fr>(in, out, n)
             : f == 6 ? run_inv<Fp>(in, out, n)
                      : run_inv<Fp2>(in, out, n);
    fclose(out);
    return rc;
}
"#;

/// Builds the harness once per test binary; `None` (and a SKIPPED line) without a compiler.
fn harness() -> Option<PathBuf> {
    static BIN: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    BIN.get_or_init(|| common::build_harness("cuzk-host-field", HARNESS, &["-frounding-math"], "host field checks")).clone()
}

/// Raw bytes of a slice of field elements (blstrs keeps Montgomery limbs, as the kernels do).
fn bytes<T>(v: &[T]) -> Vec<u8> {
    // SAFETY: plain-old-data field elements; reading their bytes is sound.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }.to_vec()
}

fn from_bytes<T: Copy>(b: &[u8]) -> Vec<T> {
    let n = b.len() / std::mem::size_of::<T>();
    // SAFETY: the harness wrote n elements of this layout, each a valid reduced element (checked by comparison).
    (0..n).map(|i| unsafe { std::ptr::read_unaligned(b.as_ptr().cast::<T>().add(i)) }).collect()
}

/// Runs the harness on pairs of `T` and compares the five results with `want`.
fn check<T: Copy + PartialEq + std::fmt::Debug>(field: u32, name: &str, a: &[T], b: &[T], want: impl Fn(T, T) -> [T; 5]) {
    let Some(bin) = harness() else { return };
    let mut pairs = Vec::with_capacity(2 * a.len() * std::mem::size_of::<T>());
    for (x, y) in a.iter().zip(b) {
        pairs.extend(bytes(std::slice::from_ref(x)));
        pairs.extend(bytes(std::slice::from_ref(y)));
    }
    let got: Vec<T> = from_bytes(&common::run_harness(&bin, name, field, a.len(), &pairs));
    assert_eq!(got.len(), 5 * a.len());
    let ops = ["result 0", "result 1", "result 2", "result 3", "result 4"];
    let mut bad = 0;
    for i in 0..a.len() {
        let w = want(a[i], b[i]);
        for k in 0..5 {
            if got[5 * i + k] != w[k] {
                bad += 1;
                if bad <= 5 {
                    eprintln!("{name} {} wrong for pair {i}: {:?} {:?}", ops[k], a[i], b[i]);
                }
            }
        }
    }
    assert_eq!(bad, 0, "{name}: {bad} wrong results");
}

/// Random elements with edge cases first: 0, 1, −1, −2, and 2^k − 1 style values.
fn operands<T: Field>(n: usize, seed: u64, extra: &[T]) -> Vec<T> {
    let mut r = ChaCha20Rng::seed_from_u64(seed);
    let mut v = vec![T::ZERO, T::ONE, -T::ONE, -T::ONE.double()];
    v.extend_from_slice(extra);
    while v.len() < n {
        v.push(T::random(&mut r));
    }
    v
}

const N: usize = 200_000;

#[test]
fn fr_arithmetic_matches_blstrs() {
    let a: Vec<Scalar> = operands(N, 1, &[Scalar::from(u64::MAX), Scalar::from(1u64 << 32).invert().unwrap()]);
    let mut b: Vec<Scalar> = operands(N, 2, &[]);
    b.rotate_left(3); // pair edge cases with other edge cases and with random values
    check(0, "fr", &a, &b, |x, y| [x * y, x.square(), x + y, x - y, -x]);
}

#[test]
fn fp_arithmetic_matches_blstrs() {
    let a: Vec<Fp> = operands(N, 3, &[Fp::from(u64::MAX)]);
    let mut b: Vec<Fp> = operands(N, 4, &[]);
    b.rotate_left(3);
    check(1, "fp", &a, &b, |x, y| [x * y, x.square(), x + y, x - y, -x]);
}

/// The FP64-unit product (`field/fp64_mont.cuh`) with its own Montgomery radix 2^(52L):
/// a·b·2^(-52L) in raw limbs is blstrs' a·b times 2^(32N - 52L).
#[test]
fn fp64_products_match_blstrs() {
    let c = Scalar::from(16u64).invert().unwrap(); // 2^(256 - 260)
    let a: Vec<Scalar> = operands(N, 7, &[Scalar::from(u64::MAX)]);
    let mut b: Vec<Scalar> = operands(N, 8, &[]);
    b.rotate_left(3);
    check(3, "fr-fp64", &a, &b, |x, y| [x * y * c, x.square() * c, y.square() * c, y * x * c, -x * y * c]);
    let c = Fp::from(1u64 << 32).invert().unwrap(); // 2^(384 - 416)
    let a: Vec<Fp> = operands(N, 9, &[Fp::from(u64::MAX)]);
    let mut b: Vec<Fp> = operands(N, 10, &[]);
    b.rotate_left(3);
    check(4, "fp-fp64", &a, &b, |x, y| [x * y * c, x.square() * c, y.square() * c, y * x * c, -x * y * c]);
}

#[test]
fn fp2_arithmetic_matches_blstrs() {
    let a: Vec<Fp2> = operands(N / 4, 5, &[]);
    let mut b: Vec<Fp2> = operands(N / 4, 6, &[]);
    b.rotate_left(3);
    check(2, "fp2", &a, &b, |x, y| [x * y, x.square(), x + y, x - y, -x]);
}

/// Elements whose Montgomery limbs (the integers `field_inv` works on) are 1, 2, 3, −1 and
/// 2^k for k across every limb: t·R^(-1) for those integers t.
fn limb_edge_cases<T: Field>(limb_bits: u64) -> Vec<T> {
    let r_inv = T::ONE.double().invert().unwrap().pow_vartime([limb_bits]);
    let mut v: Vec<T> = vec![r_inv, r_inv.double(), r_inv.double() + r_inv];
    v.push(-r_inv);
    let mut p = r_inv;
    for k in 0..limb_bits {
        if k % 13 == 0 || k % 32 == 31 || k + 1 == limb_bits {
            v.push(p);
        }
        p = p.double();
    }
    v
}

/// `field_inv` (the binary GCD on approximations, then back to Montgomery form), used by the
/// MSM's batch-affine rounds: inverses of random and edge-case operands, 0 mapping to 0.
#[test]
fn inverses_match_blstrs() {
    fn inv<T: Field>(x: T) -> T {
        x.invert().unwrap_or(T::ZERO)
    }
    fn want<T: Field>(x: T, y: T) -> [T; 5] {
        [inv(x), inv(y), inv(-x), inv(x * y), inv(x.square())]
    }
    let mut extra = vec![Scalar::from(2u64), Scalar::from(u64::MAX)];
    extra.extend(limb_edge_cases::<Scalar>(256));
    let a: Vec<Scalar> = operands(N / 10, 11, &extra);
    let mut b: Vec<Scalar> = operands(N / 10, 12, &[]);
    b.rotate_left(3);
    check(5, "fr-inv", &a, &b, want);
    let mut extra = vec![Fp::from(2u64), Fp::from(u64::MAX)];
    extra.extend(limb_edge_cases::<Fp>(384));
    let a: Vec<Fp> = operands(N / 10, 13, &extra);
    let mut b: Vec<Fp> = operands(N / 10, 14, &[]);
    b.rotate_left(3);
    check(6, "fp-inv", &a, &b, want);
    let a: Vec<Fp2> = operands(N / 40, 15, &[]);
    let mut b: Vec<Fp2> = operands(N / 40, 16, &[]);
    b.rotate_left(3);
    check(7, "fp2-inv", &a, &b, want);
}
