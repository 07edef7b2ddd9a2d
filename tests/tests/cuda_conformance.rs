//! The shared conformance suite on the CUDA backend (skips visibly without a GPU).
//!
//! Sizes: `CUZK_CONFORMANCE_MAX_LOG_NTT` (default 16), `CUZK_CONFORMANCE_MAX_LOG_MSM` (default 14),
//! `CUZK_CONFORMANCE_MAX_LOG_MSM_G2` (default: the G1 limit; G2 runs up to the smaller of the two).

use cuzk_backend_cuda::CudaBackend;
use cuzk_core::backend::Backend;
use cuzk_tests::*;

fn backend() -> Option<CudaBackend> {
    match CudaBackend::first() {
        Ok(b) => Some(b),
        Err(e) => {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "SKIPPED: CUDA conformance needs a CUDA device ({e})");
            None
        }
    }
}

fn max_log(var: &str, default: u32) -> u32 {
    std::env::var(var).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[test]
fn cuda_matches_the_oracle() {
    let Some(gpu) = backend() else { return };
    let ntt = max_log("CUZK_CONFORMANCE_MAX_LOG_NTT", 16);
    let msm = max_log("CUZK_CONFORMANCE_MAX_LOG_MSM", 14);
    check_ntt(&gpu, 0..=ntt, 11);
    check_compute_h(&gpu, 0..=ntt.min(20), 12);
    let msm_g2 = max_log("CUZK_CONFORMANCE_MAX_LOG_MSM_G2", msm).min(msm);
    check_msm(&gpu, (0..=msm_g2).map(|k| 1usize << k).chain([3, 100, 1000]), true, 13);
    check_msm(&gpu, (msm_g2 + 1..=msm).map(|k| 1usize << k), false, 14);
    check_msm_bit_lengths(&gpu, true, 15);
    check_msm_mostly_bits(&gpu, 1 << 16, true, 16);
    let n = check_eip2537(&gpu, true);
    eprintln!("{n} EIP-2537 MSM cases passed on {}", gpu.name());
}

#[test]
fn cuda_constraint_evaluation_matches_naive_products() {
    let Some(gpu) = backend() else { return };
    check_constraint_evaluation(&gpu, [1, 2, 3, 7, 100, 1000, 20_000, 1 << 18], 15);
}

#[test]
fn cuda_constraint_evaluation_of_builtin_circuits_matches_full_synthesis() {
    let Some(gpu) = backend() else { return };
    check_builtin_matrices(&gpu, [10, 12, 16], 16);
}

#[test]
fn cuda_constraint_evaluation_of_filecoin_circuits_matches_full_synthesis() {
    let Some(gpu) = backend() else { return };
    assert_eq!(check_filecoin_matrices(&gpu), 4, "the four Filecoin kinds");
}

#[test]
fn cuda_satisfaction_check_matches_the_host_oracle() {
    let Some(gpu) = backend() else { return };
    check_satisfaction(&gpu, [0, 1, 2, 255, 256, 257, 100_000, 1 << 20], 17);
}

/// Every lane count per row (a thread up to a warp, mixed across `A, B, C`) gives the CPU
/// oracle's `a, b, c`, with u32 and u64 row offsets, the witness uploaded through the copy
/// stream or synchronously.
#[test]
fn cuda_constraint_evaluation_on_any_lanes_matches_the_oracle() {
    use rand::SeedableRng;
    let Some(gpu) = backend() else { return };
    let cpu = cuzk_backend_cpu::CpuBackend::new();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(17);
    let m = std::sync::Arc::new(random_matrices(3000, 4, 2000, &mut rng));
    let (input, aux) = (random_scalars(m.num_inputs, &mut rng), random_scalars(m.num_aux, &mut rng));
    let domain = cuzk_core::domain::Domain::for_len(m.num_constraints()).unwrap();
    let host = |v: &[blstrs::Scalar]| cuzk_core::alloc::PinnedVec::from_slice_in(v, cpu.host_allocator()).unwrap();
    let want = cpu.evaluate_constraints(&cpu.load_matrices(&m).unwrap(), &host(&input), &host(&aux), &domain).unwrap();
    let resident = gpu.load_matrices(&m).unwrap();
    assert!(gpu.evaluates_constraints_on_device() && !resident.wide_offsets());
    assert!(gpu.matrices_bytes(&resident) >= 8 * m.num_entries() as u64 + 3 * 4 * m.num_constraints() as u64);
    let wide = gpu.load_matrices_with(&m, Some(true)).unwrap();
    assert!(wide.wide_offsets() && gpu.matrices_bytes(&wide) == gpu.matrices_bytes(&resident) + 3 * 4 * (m.num_constraints() as u64 + 1));
    let pooled = |v: &[blstrs::Scalar]| gpu.upload_scalars(cuzk_core::alloc::PinnedVec::from_slice_in(v, gpu.host_allocator()).unwrap()).unwrap();
    let witnesses = [(pooled(&input), pooled(&aux)), (gpu.upload_slice(&input).unwrap(), gpu.upload_slice(&aux).unwrap())];
    for (w, (input, aux)) in witnesses.iter().enumerate() {
        for (resident, offsets) in [(&resident, "u32"), (&wide, "u64")] {
            for lanes in [[0, 0, 0], [1, 1, 1], [2, 2, 2], [3, 3, 3], [4, 4, 4], [5, 5, 5], [0, 3, 5], resident.default_log_lanes()] {
                let got = gpu.evaluate_constraints_with(resident, input, aux, &domain, lanes).unwrap();
                for (which, (got, want)) in ["a", "b", "c"].iter().zip(got.iter().zip(&want)) {
                    assert!(
                        gpu.download_scalars(got).unwrap() == want[..],
                        "{which} with 2^{lanes:?} lanes per row, {offsets} offsets (witness {w}) differs from the oracle"
                    );
                }
            }
        }
    }
    assert!(gpu.evaluate_constraints_with(&resident, &witnesses[0].0, &witnesses[0].1, &domain, [0, 6, 0]).is_err(), "2^6 lanes per row");
}

/// Witnesses and domains that do not fit the matrices are refused, not evaluated.
#[test]
fn cuda_constraint_evaluation_refuses_mismatched_shapes() {
    use cuzk_core::backend::BackendError;
    use rand::SeedableRng;
    let Some(gpu) = backend() else { return };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(18);
    let m = std::sync::Arc::new(random_matrices(100, 3, 50, &mut rng));
    let resident = gpu.load_matrices(&m).unwrap();
    let domain = cuzk_core::domain::Domain::for_len(100).unwrap();
    let up = |n: usize, rng: &mut rand_chacha::ChaCha8Rng| gpu.upload_slice(&random_scalars(n, rng)).unwrap();
    let (input, aux, short_input, short_aux) = (up(3, &mut rng), up(50, &mut rng), up(2, &mut rng), up(49, &mut rng));
    let small = cuzk_core::domain::Domain::new(6).unwrap();
    for (i, a, d, what) in [(&short_input, &aux, &domain, "short input"), (&input, &short_aux, &domain, "short aux"), (&input, &aux, &small, "small domain")] {
        match gpu.evaluate_constraints(&resident, i, a, d) {
            Err(BackendError::InvalidInput(_)) => {}
            other => panic!("{what}: {:?}", other.map(|_| ())),
        }
    }
    // A longer witness than the matrices use is fine.
    let (long_input, long_aux) = (up(10, &mut rng), up(60, &mut rng));
    assert!(gpu.evaluate_constraints(&resident, &long_input, &long_aux, &domain).is_ok());
}

/// Kernel time of constraint evaluation on random matrices (random columns, coefficients 1, -1
/// and 62 other constants), checked against the CPU oracle. `CUZK_EVAL_TIMING` lists the cases
/// as `k:lo-hi` (2^k rows of lo..=hi entries per matrix); default `20:1-7,24:1-7,18:16-48`
/// (about 4 entries a row at 2^20 and 2^24 rows, and long rows).
#[test]
#[ignore = "timing; run with --ignored"]
fn cuda_constraint_evaluation_timing() {
    use cuzk_core::matrices::{Column, ConstraintMatrices};
    use ff::Field;
    use rand::{Rng, SeedableRng};
    use rayon::prelude::*;
    let Some(gpu) = backend() else { return };
    let cpu = cuzk_backend_cpu::CpuBackend::new();
    let spec = std::env::var("CUZK_EVAL_TIMING").unwrap_or_else(|_| "20:1-7,24:1-7,18:16-48".into());
    let cases: Vec<(u32, usize, usize)> = spec
        .split(',')
        .map(|c| {
            let (k, range) = c.trim().split_once(':').expect("k:lo-hi");
            let (lo, hi) = range.split_once('-').expect("k:lo-hi");
            (k.parse().expect("k"), lo.parse().expect("lo"), hi.parse().expect("hi"))
        })
        .collect();
    let constants: Vec<blstrs::Scalar> = random_scalars(62, &mut rand_chacha::ChaCha8Rng::seed_from_u64(19));
    for (k, lo, hi) in cases {
        let t = std::time::Instant::now();
        let (rows, inputs, aux) = (1usize << k, 8, 1usize << (k - 1));
        let matrix = |seed: u64| -> Vec<Vec<(Column, blstrs::Scalar)>> {
            (0..rows)
                .into_par_iter()
                .map(|r| {
                    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed << 40 | r as u64);
                    (0..rng.gen_range(lo..=hi))
                        .map(|_| {
                            let col = if rng.gen_range(0..16) == 0 { Column::Input(rng.gen_range(0..inputs)) } else { Column::Aux(rng.gen_range(0..aux)) };
                            let k = match rng.gen_range(0..10) {
                                0..=3 => blstrs::Scalar::ONE,
                                4 | 5 => -blstrs::Scalar::ONE,
                                _ => constants[rng.gen_range(0..constants.len())],
                            };
                            (col, k)
                        })
                        .collect()
                })
                .collect()
        };
        let (a, b, c) = (matrix(1), matrix(2), matrix(3));
        let m = std::sync::Arc::new(ConstraintMatrices::from_rows(inputs, aux, &a, &b, &c).unwrap());
        drop((a, b, c));
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(20);
        let (input, aux) = (random_scalars(inputs, &mut rng), random_scalars(aux, &mut rng));
        let domain = cuzk_core::domain::Domain::for_len(rows).unwrap();
        let host = |v: &[blstrs::Scalar]| cuzk_core::alloc::PinnedVec::from_slice_in(v, cpu.host_allocator()).unwrap();
        let setup = t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        let want = cpu.evaluate_constraints(&m, &host(&input), &host(&aux), &domain).unwrap();
        let cpu_s = t.elapsed().as_secs_f64();
        let resident = gpu.load_matrices(&m).unwrap();
        let (input, aux) = (gpu.upload_slice(&input).unwrap(), gpu.upload_slice(&aux).unwrap());
        let got = gpu.evaluate_constraints(&resident, &input, &aux, &domain).unwrap();
        for (which, (got, want)) in ["a", "b", "c"].iter().zip(got.iter().zip(&want)) {
            assert!(gpu.download_scalars(got).unwrap() == want[..], "{which} differs from the oracle at 2^{k}");
        }
        drop(got);
        let case = format!("2^{k} rows of {lo}-{hi} entries");
        eprintln!(
            "eval timing {case}: {} entries, {:.1} MiB on the device, setup {setup:.1} s, CPU oracle {:.1} ms; default lanes 2^{:?}",
            m.num_entries(),
            gpu.matrices_bytes(&resident) as f64 / (1 << 20) as f64,
            cpu_s * 1e3,
            resident.default_log_lanes()
        );
        for lanes in [[0, 0, 0], [1, 1, 1], [2, 2, 2], [3, 3, 3], [5, 5, 5]] {
            let best = (0..4).map(|_| gpu.time_evaluate_constraints_with(&resident, &input, &aux, &domain, lanes).unwrap()).fold(f64::MAX, f64::min);
            eprintln!("eval timing {case}: 2^{lanes:?} lanes per row: {:.3} ms on {}", best * 1e3, gpu.name());
        }
        let best = (0..4).map(|_| gpu.time_evaluate_constraints(&resident, &input, &aux, &domain).unwrap()).fold(f64::MAX, f64::min);
        eprintln!("eval timing {case}: default: {:.3} ms on {}", best * 1e3, gpu.name());
    }
}
