//! Quick checks of the wgpu kernels against the CPU oracle at tiny sizes (the full suite is
//! `wgpu_conformance.rs` beside this file). Skips visibly without an adapter.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_backend_cpu::CpuBackend;
use cuzk_backend_wgpu::WgpuBackend;
use cuzk_core::backend::{Backend, MsmScalars, NttDirection};
use cuzk_core::domain::Domain;
use ff::Field;
use group::{Curve, Group};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// One backend shared by the tests (kernels compile once: minutes on lavapipe otherwise).
fn backend() -> Option<&'static WgpuBackend> {
    static B: std::sync::OnceLock<Option<WgpuBackend>> = std::sync::OnceLock::new();
    B.get_or_init(|| match WgpuBackend::from_env() {
        Ok(b) => Some(b),
        Err(e) => {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "SKIPPED: no wgpu adapter ({e})");
            None
        }
    })
    .as_ref()
}

#[test]
fn ntt_small_sizes_equal_the_oracle() {
    let Some(gpu) = backend() else { return };
    let cpu = CpuBackend::new();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for log_n in [0u32, 1, 2, 3, 7, 8, 9] {
        let domain = Domain::new(log_n).unwrap();
        let input: Vec<Scalar> = (0..domain.size()).map(|_| Scalar::random(&mut rng)).collect();
        for (dir, coset) in [(NttDirection::Forward, false), (NttDirection::Forward, true), (NttDirection::Inverse, false), (NttDirection::Inverse, true)] {
            let mut expect = input.clone();
            cpu.ntt_slice(&mut expect, &domain, dir, coset).unwrap();
            let mut buf = gpu.upload_slice(&input).unwrap();
            gpu.ntt(&mut buf, &domain, dir, coset).unwrap();
            assert!(gpu.download_scalars(&buf).unwrap() == expect, "2^{log_n} {dir:?} coset={coset}");
        }
    }
}

#[test]
fn msm_small_sizes_equal_naive_sums() {
    let Some(gpu) = backend() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    for n in [1usize, 2, 5, 64, 300] {
        let scalars: Vec<Scalar> = (0..n).map(|i| if i % 5 == 0 { Scalar::ONE } else { Scalar::random(&mut rng) }).collect();
        let g1: Vec<G1Affine> = (0..n).map(|_| G1Projective::random(&mut rng).to_affine()).collect();
        let want: G1Projective = g1.iter().zip(&scalars).map(|(p, s)| *p * s).sum();
        let buf = gpu.upload_slice(&scalars).unwrap();
        let bases = gpu.load_g1(g1).unwrap();
        let got = gpu.msm_g1(&bases, 0, MsmScalars { buf: &buf, len: n, density: None }).unwrap();
        assert_eq!(got, want, "G1 MSM of {n}");
        if n <= 64 {
            let g2: Vec<G2Affine> = (0..n).map(|_| G2Projective::random(&mut rng).to_affine()).collect();
            let want: G2Projective = g2.iter().zip(&scalars).map(|(p, s)| *p * s).sum();
            let bases = gpu.load_g2(g2).unwrap();
            let got = gpu.msm_g2(&bases, 0, MsmScalars { buf: &buf, len: n, density: None }).unwrap();
            assert_eq!(got, want, "G2 MSM of {n}");
        }
    }
}

/// Small and random scalars on G1 and G2.
#[test]
fn msm_scalar_patterns() {
    let Some(gpu) = backend() else { return };
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let g2: Vec<G2Affine> = (0..2).map(|_| G2Projective::random(&mut rng).to_affine()).collect();
    let g1: Vec<G1Affine> = (0..2).map(|_| G1Projective::random(&mut rng).to_affine()).collect();
    let (b1, b2) = (gpu.load_g1(g1.clone()).unwrap(), gpu.load_g2(g2.clone()).unwrap());
    let r = Scalar::random(&mut rng);
    for (a, b) in [(Scalar::from(5u64), Scalar::from(7u64)), (Scalar::from(8u64), Scalar::ZERO), (r, Scalar::ZERO), (r, r), (-Scalar::ONE, Scalar::ONE)] {
        let scalars = vec![a, b];
        let buf = gpu.upload_slice(&scalars).unwrap();
        let want1: G1Projective = g1.iter().zip(&scalars).map(|(p, s)| *p * s).sum();
        let got1 = gpu.msm_g1(&b1, 0, MsmScalars { buf: &buf, len: 2, density: None }).unwrap();
        assert_eq!(got1, want1, "G1 ({a:?}, {b:?})");
        let want2: G2Projective = g2.iter().zip(&scalars).map(|(p, s)| *p * s).sum();
        let got2 = gpu.msm_g2(&b2, 0, MsmScalars { buf: &buf, len: 2, density: None }).unwrap();
        assert_eq!(got2, want2, "G2 ({a:?}, {b:?})");
    }
}

/// Equal and opposite points (doubling and cancellation inside buckets).
#[test]
fn msm_equal_and_opposite_points() {
    let Some(gpu) = backend() else { return };
    let g = G1Projective::generator();
    for (pts, sc) in [
        (vec![g, g], vec![1u64, 1]),
        (vec![g, -g], vec![1u64, 1]),
        (vec![g, g, g], vec![1u64, 1, 1]),
        (vec![g, g * Scalar::from(2u64)], vec![2u64, 1]),
        (vec![g; 8], vec![3u64; 8]),
    ] {
        let aff: Vec<G1Affine> = pts.iter().map(|p| p.to_affine()).collect();
        let scalars: Vec<Scalar> = sc.iter().map(|&x| Scalar::from(x)).collect();
        let want: G1Projective = aff.iter().zip(&scalars).map(|(p, s)| *p * s).sum();
        let buf = gpu.upload_slice(&scalars).unwrap();
        let b = gpu.load_g1(aff).unwrap();
        let got = gpu.msm_g1(&b, 0, MsmScalars { buf: &buf, len: scalars.len(), density: None }).unwrap();
        assert_eq!(got, want, "equal/opposite points, scalars {sc:?}");
    }
}

/// The on-disk pipeline cache: written once the kernels are built, read by the next device
/// (results unchanged), and a corrupt file falls back to an empty cache and is rewritten.
#[test]
fn pipeline_cache_is_written_reused_and_survives_corruption() {
    use cuzk_backend_wgpu::AdapterSelector;
    let Ok(mut sel) = AdapterSelector::from_env() else { return };
    let dir = std::env::temp_dir().join(format!("cuzk-wgpu-cache-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    sel.pipeline_cache_dir = Some(dir.clone());
    let domain = Domain::new(6).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let input: Vec<Scalar> = (0..domain.size()).map(|_| Scalar::random(&mut rng)).collect();
    let mut expect = input.clone();
    CpuBackend::new().ntt_slice(&mut expect, &domain, NttDirection::Forward, false).unwrap();
    let run = |b: &WgpuBackend| {
        let mut buf = b.upload_slice(&input).unwrap();
        b.ntt(&mut buf, &domain, NttDirection::Forward, false).unwrap();
        b.download_scalars(&buf).unwrap()
    };
    let first = match WgpuBackend::new(&sel) {
        Ok(b) => b,
        Err(e) => return eprintln!("SKIPPED: no wgpu adapter ({e})"),
    };
    let Some(file) = first.gpu().pipeline_cache_file().map(std::path::Path::to_path_buf) else {
        return eprintln!("SKIPPED: {} offers no pipeline cache", first.gpu().describe());
    };
    assert!(run(&first) == expect, "first device");
    let written = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    assert!(written > 0, "no cache written to {}", file.display());
    drop(first);

    let second = WgpuBackend::new(&sel).unwrap();
    assert!(run(&second) == expect, "device started from the cache");
    drop(second);

    std::fs::write(&file, b"not a pipeline cache").unwrap();
    let third = WgpuBackend::new(&sel).unwrap();
    assert!(run(&third) == expect, "device started from a corrupt cache");
    let rewritten = std::fs::metadata(&file).unwrap().len();
    assert!(rewritten > 20, "the corrupt file was not replaced ({rewritten} bytes)");
    drop(third);
    let _ = std::fs::remove_dir_all(&dir);
}
