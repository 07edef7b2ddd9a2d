//! A device load asked to stream its parameters (`LoadTask::streamed`, the daemon's choice
//! for parameters larger than the device budget) proves exactly what a resident load proves:
//! on the CPU backend streamed bases are the resident ones, so this runs the streamed path of
//! the worker (task → `ProvingKey::load_placed` → `Backend::load_g1_placed`) without a GPU.

use std::sync::Arc;

use blstrs::Scalar;
use cuzk_backend_cpu::CpuBackend;
use cuzk_circuits::{BuiltinShape, CircuitKind};
use cuzk_core::engine::{CircuitId, DeviceId, Location};
use cuzk_core::params::Validation;
use cuzk_worker::{prove_one, BackendWorker, LoadTask, ParamSource, Worker};

use crate::work;
use ff::Field;
use rand::SeedableRng;

#[test]
fn a_streamed_load_proves_the_same_bytes_as_a_resident_load() {
    let shape = BuiltinShape::new(CircuitKind::SquaringChain, 10).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("params");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let params = cuzk_setup::generate_parameters(shape.kind.instance(shape.log_size, 0).unwrap(), &mut rng).unwrap();
    std::fs::write(&path, params.to_bytes()).unwrap();
    let worker = |streamed: bool| {
        let w = BackendWorker::new(vec![Arc::new(CpuBackend::new())]);
        let at = Location::Device(DeviceId(0));
        w.load_params(LoadTask {
            circuit: CircuitId(0),
            at,
            source: ParamSource::File(path.clone()),
            validation: Validation::Full,
            from_host: false,
            streamed,
        })
        .unwrap();
        w
    };
    let (resident, streamed) = (worker(false), worker(true));
    for seed in [1u64, 2] {
        let rs = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let prove = |w: &BackendWorker<CpuBackend>| prove_one(w, CircuitId(0), 0, work(shape, seed), Some(rs), true, |_, _, _| {}).expect("proof");
        let (want, want_public) = prove(&resident);
        let (got, got_public) = prove(&streamed);
        assert_eq!(got.to_bytes(), want.to_bytes(), "seed {seed}: proofs differ");
        assert_eq!(got_public, want_public);
    }
}
