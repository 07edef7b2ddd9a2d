//! The CPU backend (the oracle) against naive references and external vectors.

use cuzk_backend_cpu::CpuBackend;
use cuzk_tests::*;

#[test]
fn ntt_matches_naive_dft_and_round_trips() {
    check_ntt(&CpuBackend::new(), 0..=12, 1);
    check_ntt(&CpuBackend::new(), [16, 18], 2);
}

#[test]
fn h_pipeline_is_consistent() {
    check_compute_h(&CpuBackend::new(), [1, 5, 10], 3);
}

#[test]
fn msm_matches_naive() {
    check_msm(&CpuBackend::new(), [0, 1, 2, 3, 17, 100, 1024, 5000], true, 4);
    check_msm_bit_lengths(&CpuBackend::new(), false, 5);
    check_msm_mostly_bits(&CpuBackend::new(), 1 << 12, false, 6);
}

#[test]
fn eip2537_msm_vectors() {
    let n = check_msm_cases(&CpuBackend::new(), &eip2537_cases(), true);
    assert_eq!(n, 163 + 11 + 11, "EIP-2537: G1 MSMs, G1 and G2 multiplications");
    eprintln!("{n} EIP-2537 MSM cases passed");
}

#[test]
fn geth_msm_vectors_when_present() {
    match geth_cases() {
        Ok(cases) => {
            let n = check_msm_cases(&CpuBackend::new(), &cases, true);
            assert_eq!(n, 154 + 153, "go-ethereum: G1 and G2 MSMs");
            eprintln!("{n} go-ethereum MSM cases passed");
        }
        Err(why) => skipped(&format!("go-ethereum's MSM vectors: {why}")),
    }
}

#[test]
fn constraint_evaluation_matches_naive_products() {
    check_constraint_evaluation(&CpuBackend::new(), [1, 2, 3, 7, 100, 1000, 20_000], 5);
}

#[test]
fn constraint_evaluation_of_builtin_circuits_matches_full_synthesis() {
    check_builtin_matrices(&CpuBackend::new(), [10, 12], 6);
}

#[test]
fn constraint_evaluation_of_filecoin_circuits_matches_full_synthesis() {
    assert_eq!(check_filecoin_matrices(&CpuBackend::new()), 4, "the four Filecoin kinds");
}

#[test]
fn satisfaction_check_matches_the_host_oracle() {
    check_satisfaction(&CpuBackend::new(), [0, 1, 2, 100, 8191, 8192, 8193, 50_000], 7);
}

/// The trait's default (download, check on the host) on the CPU backend's buffers.
#[test]
fn default_satisfaction_check_matches_the_host_oracle() {
    check_satisfaction(&DefaultCheck(CpuBackend::new()), [0, 1, 100, 20_000], 8);
}
