//! Whole proofs on the GPU equal the CPU backend's byte for byte (same parameters, same
//! `r, s`) and verify. Skips (visibly) without a CUDA device. Built as `proof` for
//! `scripts/h200/proofs.sh`.

use blstrs::Scalar;
use cuzk_backend_cpu::CpuBackend;
use cuzk_backend_cuda::need_gpu;
use cuzk_circuits::CircuitKind;
use cuzk_core::alloc::heap;
use cuzk_core::backend::Backend;
use cuzk_core::proof::verify;
use cuzk_core::prover::{prove, ProvingKey};
use cuzk_core::synth::{synthesize, SizeHint};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

#[test]
fn gpu_proofs_equal_cpu_proofs() {
    let gpu = need_gpu!();
    let cpu = CpuBackend::new();
    let max_log: u32 = std::env::var("CUZK_GPU_TEST_MAX_LOG_PROOF").ok().and_then(|v| v.parse().ok()).unwrap_or(10);
    let mut cases = vec![(CircuitKind::SquaringChain, 2), (CircuitKind::SquaringChain, 5), (CircuitKind::SquaringChain, max_log)];
    if max_log >= 15 {
        cases.push((CircuitKind::Sha256Chain, 15));
    }
    for (kind, log) in cases {
        let circuit = kind.instance(log, 11).unwrap();
        let inputs = circuit.public_inputs();
        let mut rng = ChaCha8Rng::seed_from_u64(u64::from(log));
        let params = cuzk_setup::generate_parameters(circuit.clone(), &mut rng).unwrap();
        let vk = params.vk.clone();
        let key_cpu = ProvingKey::load(&cpu, params.clone()).unwrap();
        let key_gpu = ProvingKey::load(gpu, params).unwrap();
        let (r, s) = (Scalar::from(12345u64), Scalar::from(67890u64));
        let synth_cpu = synthesize(circuit.clone(), heap(), SizeHint::default()).unwrap();
        let synth_gpu = synthesize(circuit.clone(), gpu.host_allocator(), SizeHint::default()).unwrap();
        let p_cpu = prove(&cpu, &key_cpu, synth_cpu, r, s, &mut |_| {}).unwrap();
        let p_gpu = prove(gpu, &key_gpu, synth_gpu, r, s, &mut |_| {}).unwrap();
        assert_eq!(p_gpu.to_bytes(), p_cpu.to_bytes(), "{} 2^{log}: GPU proof differs from the CPU proof", kind.name());
        assert!(verify(&vk, &p_gpu, &inputs).unwrap(), "{} 2^{log}: GPU proof does not verify", kind.name());
        eprintln!("{} 2^{log}: GPU proof == CPU proof, verifies", kind.name());
    }
}
