//! CPU backend kernels: NTT (plain and coset) and G1/G2 MSM with random scalars.
//!
//! `cargo bench -p cuzk-backend-cpu --bench cpu_kernels`

use blstrs::{G1Projective, G2Projective, Scalar};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use cuzk_backend_cpu::{msm::msm, CpuBackend};
use cuzk_core::backend::NttDirection;
use cuzk_core::domain::Domain;
use ff::Field;
use group::{Curve, Group};
use rand::SeedableRng;

fn ntt(c: &mut Criterion) {
    let backend = CpuBackend::new();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let mut g = c.benchmark_group("ntt");
    g.sample_size(10);
    for log_n in [14u32, 16, 18] {
        let domain = Domain::new(log_n).unwrap();
        let mut v: Vec<Scalar> = (0..domain.size()).map(|_| Scalar::random(&mut rng)).collect();
        g.bench_with_input(BenchmarkId::new("forward", log_n), &log_n, |b, _| {
            b.iter(|| backend.ntt_slice(&mut v, &domain, NttDirection::Forward, false).unwrap())
        });
        g.bench_with_input(BenchmarkId::new("coset_inverse", log_n), &log_n, |b, _| {
            b.iter(|| backend.ntt_slice(&mut v, &domain, NttDirection::Inverse, true).unwrap())
        });
    }
}

fn msms(c: &mut Criterion) {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
    let mut g = c.benchmark_group("msm");
    g.sample_size(10);
    for log_n in [12u32, 14, 16] {
        let n = 1usize << log_n;
        let s: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        let p1: Vec<_> = (0..n).map(|_| G1Projective::random(&mut rng).to_affine()).collect();
        let p2: Vec<_> = (0..n).map(|_| G2Projective::random(&mut rng).to_affine()).collect();
        g.bench_with_input(BenchmarkId::new("g1", log_n), &log_n, |b, _| b.iter(|| msm::<G1Projective>(&p1, &s, None)));
        g.bench_with_input(BenchmarkId::new("g2", log_n), &log_n, |b, _| b.iter(|| msm::<G2Projective>(&p2, &s, None)));
    }
}

criterion_group!(benches, ntt, msms);
criterion_main!(benches);
