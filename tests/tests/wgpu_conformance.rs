//! The shared conformance suite on the wgpu backend: NTT, `h`, G1/G2 MSMs against the CPU
//! oracle (random scalars and scalars of every bit length), the EIP-2537 MSM vectors, MSMs
//! split into chunks under a lowered binding limit, and whole proofs byte-identical to the
//! oracle's. Skips visibly without a wgpu adapter.
//!
//! Sizes (small by default, for lavapipe in CI): `CUZK_WGPU_TEST_MAX_LOG_NTT` (default 10),
//! `CUZK_WGPU_TEST_MAX_LOG_H` (default 8), `CUZK_WGPU_TEST_MAX_LOG_MSM` (default 8),
//! `CUZK_WGPU_TEST_MAX_LOG_MSM_G2` (default 6), `CUZK_WGPU_TEST_PROOF_LOG` (default 6).
//! The adapter: `CUZK_WGPU_ADAPTER` (name substring), `CUZK_WGPU_DEVICE_TYPE`.

use std::sync::OnceLock;

use blstrs::Scalar;
use cuzk_backend_cpu::CpuBackend;
use cuzk_backend_wgpu::{AdapterSelector, WgpuBackend};
use cuzk_circuits::CircuitKind;
use cuzk_core::alloc::heap;
use cuzk_core::backend::Backend;
use cuzk_core::proof::verify;
use cuzk_core::prover::{prove, ProvingKey};
use cuzk_core::synth::{synthesize, SizeHint};
use cuzk_tests::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn say(msg: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{msg}");
}

/// One backend shared by the tests (kernels compile once).
fn backend() -> Option<&'static WgpuBackend> {
    static B: OnceLock<Option<WgpuBackend>> = OnceLock::new();
    B.get_or_init(|| match WgpuBackend::from_env() {
        Ok(b) => {
            say(&format!("wgpu conformance on {}", b.name()));
            Some(b)
        }
        Err(e) => {
            say(&format!("SKIPPED: no wgpu adapter ({e})"));
            None
        }
    })
    .as_ref()
}

fn env(var: &str, default: u32) -> u32 {
    std::env::var(var).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[test]
fn wgpu_ntt_and_h_match_the_oracle() {
    let Some(gpu) = backend() else { return };
    let ntt = env("CUZK_WGPU_TEST_MAX_LOG_NTT", 10);
    let h = env("CUZK_WGPU_TEST_MAX_LOG_H", 8);
    let t = std::time::Instant::now();
    check_ntt(gpu, 0..=ntt, 31);
    say(&format!("wgpu NTT 2^0..2^{ntt}: equal to the oracle ({:.1} s)", t.elapsed().as_secs_f64()));
    let t = std::time::Instant::now();
    check_compute_h(gpu, 0..=h, 32);
    say(&format!("wgpu h 2^0..2^{h}: equal to the oracle ({:.1} s)", t.elapsed().as_secs_f64()));
}

#[test]
fn wgpu_g1_msm_matches_the_oracle() {
    let Some(gpu) = backend() else { return };
    let msm = env("CUZK_WGPU_TEST_MAX_LOG_MSM", 8);
    let t = std::time::Instant::now();
    check_msm(gpu, (0..=msm).map(|k| 1usize << k).chain([3, 100]), false, 33);
    say(&format!("wgpu G1 MSM 2^0..2^{msm}: equal to the oracle ({:.1} s)", t.elapsed().as_secs_f64()));
}

#[test]
fn wgpu_g2_msm_matches_the_oracle() {
    let Some(gpu) = backend() else { return };
    let msm = env("CUZK_WGPU_TEST_MAX_LOG_MSM_G2", 6);
    let t = std::time::Instant::now();
    check_msm(gpu, (0..=msm).step_by(3).map(|k| 1usize << k).chain([100]), true, 34);
    say(&format!("wgpu G1+G2 MSM up to 2^{msm}: equal to the oracle ({:.1} s)", t.elapsed().as_secs_f64()));
}

#[test]
fn wgpu_msm_over_every_scalar_bit_length() {
    let Some(gpu) = backend() else { return };
    let t = std::time::Instant::now();
    check_msm_bit_lengths(gpu, true, 36);
    say(&format!("wgpu G1 and G2 MSMs over scalars of every bit length: equal to the oracle ({:.1} s)", t.elapsed().as_secs_f64()));
}

#[test]
fn wgpu_msm_of_mostly_bits() {
    let Some(gpu) = backend() else { return };
    let t = std::time::Instant::now();
    check_msm_mostly_bits(gpu, 1 << 16, true, 37);
    say(&format!("wgpu G1 and G2 MSMs of 2^16 scalars, 98% and all bits: equal to the oracle ({:.1} s)", t.elapsed().as_secs_f64()));
}

#[test]
fn wgpu_eip2537_vectors() {
    let Some(gpu) = backend() else { return };
    let n = check_eip2537(gpu, true);
    say(&format!("{n} EIP-2537 G1/G2 MSM cases passed on {}", gpu.name()));
}

#[test]
fn wgpu_msm_split_under_a_small_binding_limit() {
    if backend().is_none() {
        return;
    }
    let mut sel = AdapterSelector::from_env().expect("selector");
    sel.max_binding = Some(1 << 20);
    let gpu = WgpuBackend::new(&sel).expect("adapter");
    // Under 1 MiB bindings a chunk holds at most 1024 scalars: these MSMs run in 1 and 3 chunks.
    check_msm(&gpu, [700usize, 3000], false, 35);
    say("wgpu G1 MSMs split into chunks under a 1 MiB binding limit: equal to the oracle");
}

#[test]
fn wgpu_whole_proofs_equal_the_oracle() {
    let Some(gpu) = backend() else { return };
    let cpu = CpuBackend::new();
    let log = env("CUZK_WGPU_TEST_PROOF_LOG", 6);
    for log in [2, log] {
        let t = std::time::Instant::now();
        let kind = CircuitKind::SquaringChain;
        let circuit = kind.instance(log, 7).unwrap();
        let inputs = circuit.public_inputs();
        let mut rng = ChaCha8Rng::seed_from_u64(u64::from(log));
        let params = cuzk_setup::generate_parameters(circuit.clone(), &mut rng).unwrap();
        let vk = params.vk.clone();
        let key_cpu = ProvingKey::load(&cpu, params.clone()).unwrap();
        let key_gpu = ProvingKey::load(gpu, params).unwrap();
        let (r, s) = (Scalar::from(1234567u64), Scalar::from(7654321u64));
        let p_cpu = prove(&cpu, &key_cpu, synthesize(circuit.clone(), heap(), SizeHint::default()).unwrap(), r, s, &mut |_| {}).unwrap();
        let p_gpu = prove(gpu, &key_gpu, synthesize(circuit, gpu.host_allocator(), SizeHint::default()).unwrap(), r, s, &mut |_| {}).unwrap();
        assert_eq!(p_gpu.to_bytes(), p_cpu.to_bytes(), "{} 2^{log}: wgpu proof differs from the CPU proof", kind.name());
        assert!(verify(&vk, &p_gpu, &inputs).unwrap(), "{} 2^{log}: wgpu proof does not verify", kind.name());
        say(&format!("{} 2^{log}: wgpu proof == CPU proof, verifies ({:.1} s)", kind.name(), t.elapsed().as_secs_f64()));
    }
}
