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
    check_compute_h(&gpu, 1..=ntt.min(20), 12);
    let msm_g2 = max_log("CUZK_CONFORMANCE_MAX_LOG_MSM_G2", msm).min(msm);
    check_msm(&gpu, (0..=msm_g2).map(|k| 1usize << k).chain([3, 100, 1000]), true, 13);
    check_msm(&gpu, (msm_g2 + 1..=msm).map(|k| 1usize << k), false, 14);
    let n = check_eip2537(&gpu, true);
    eprintln!("{n} EIP-2537 MSM cases passed on {}", gpu.name());
}
