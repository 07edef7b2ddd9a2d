//! The worker's stages against full synthesis: with recorded matrices and a backend that
//! evaluates them on the device, proofs move only the witness, and every proof is
//! byte-identical to the one full synthesis (or the host products) gives with the same `r, s`,
//! and verifies; a Filecoin witness that violates a constraint fails its upload with the
//! constraint the host check names. The 2 KiB PoRep and SnapDeals partitions run with
//! `CUZK_SLOW_TESTS=1` (WindowPoSt and WinningPoSt always).

use std::sync::Arc;

use crate::work;
use blstrs::Scalar;
use cuzk_backend_cpu::CpuBackend;
use cuzk_circuits::{BuiltinShape, CircuitKind};
use cuzk_core::alloc::SharedAllocator;
use cuzk_core::circuit::{CircuitError, Partition, PartitionCircuit, ShapeKey, WitnessCheck};
use cuzk_core::engine::{CircuitId, DeviceId, JobId, Location, PartitionId, Stage};
use cuzk_core::matrices::{ConstraintMatrices, RecordedShare, RepeatedShare, Repeats};
use cuzk_core::params::Validation;
use cuzk_core::synth::{SizeHint, SynthesizeError, Synthesized};
use cuzk_core::witness::WitnessError;
use cuzk_worker::{prove_one, BackendWorker, LoadTask, ParamSource, PartData, StageInput, StageOutput, StageTask, Work, WorkError, Worker};
use ff::Field;
use rand::SeedableRng;

/// What synthesis handed to the upload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handed {
    Record,
    Witness,
}

/// Proofs through recorded matrices (a parallel witness, `a, b, c` evaluated by the backend,
/// or by the host's sparse products) are byte-identical to full synthesis's and verify.
#[test]
fn witness_only_proofs_equal_full_synthesis_proofs_and_verify() {
    for (kind, log_size) in [(CircuitKind::SquaringChain, 10), (CircuitKind::Sha256Chain, 16)] {
        let shape = BuiltinShape::new(kind, log_size).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("params");
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        let params = cuzk_setup::generate_parameters(shape.kind.instance(shape.log_size, 0).unwrap(), &mut rng).unwrap();
        std::fs::write(&path, params.to_bytes()).unwrap();
        // The file is checked in full once; the other two workers take the same bytes as trusted.
        let load = |w: &dyn Fn(LoadTask) -> Result<(), cuzk_worker::WorkError>, validation| {
            w(LoadTask {
                circuit: CircuitId(0),
                at: Location::Device(DeviceId(0)),
                source: ParamSource::File(path.clone()),
                validation,
                from_host: false,
                streamed: false,
            })
            .unwrap()
        };
        let full = BackendWorker::new(vec![Arc::new(CpuBackend::new())]).without_matrix_cache();
        load(&|t| full.load_params(t), Validation::Full);
        let on_device = BackendWorker::new(vec![Arc::new(CpuBackend::on_witness_path())]);
        load(&|t| on_device.load_params(t), Validation::Trusted);
        let host_products = BackendWorker::new(vec![Arc::new(CpuBackend::on_witness_path())]).with_device_evaluation(false);
        load(&|t| host_products.load_params(t), Validation::Trusted);
        assert!(on_device.witness_only() && !host_products.witness_only() && !full.witness_only());

        let wants: Vec<_> = [1u64, 2]
            .into_iter()
            .map(|seed| {
                let rs = (Scalar::random(&mut rng), Scalar::random(&mut rng));
                let (proof, public) = prove_one(&full, CircuitId(0), 0, work(shape, seed), Some(rs), true, |_, _, _| {}).expect("full synthesis proof");
                (seed, rs, proof, public)
            })
            .collect();
        for (worker, want_handed) in [(&on_device, Handed::Witness), (&host_products, Handed::Record)] {
            let mut handed = Vec::new();
            for (seed, rs, want, public) in &wants {
                let (seed, rs) = (*seed, *rs);
                let (got, got_public) = prove_one(worker, CircuitId(0), 0, work(shape, seed), Some(rs), true, |stage, _, out| {
                    if stage == Stage::Synthesize {
                        handed.push(match out {
                            StageOutput::Synthesized { data: PartData::Witness { .. }, .. } => Handed::Witness,
                            _ => Handed::Record,
                        });
                    }
                })
                .expect("proof through the worker's matrices");
                assert_eq!(got.to_bytes(), want.to_bytes(), "{kind:?} seed {seed}: proofs differ");
                assert_eq!(&got_public, public);
            }
            // The first synthesis records the matrices; every synthesis then writes the
            // witness through them.
            assert_eq!(handed, [want_handed, want_handed], "{kind:?}");
            assert_eq!(worker.matrices().map(|m| m.len()), Some(1));
        }
    }
}

/// One stage of partition 0 of job 0 on device 0 (synthesis on the host).
fn stage<W: Worker>(w: &W, stage: Stage, input: StageInput<W::Data>) -> Result<StageOutput<W::Data>, WorkError> {
    let location = if stage == Stage::Synthesize { Location::Host } else { Location::Device(DeviceId(0)) };
    w.run_stage(StageTask {
        partition: PartitionId { job: JobId(0), index: 0 },
        stage,
        location,
        circuit: CircuitId(0),
        input,
        verify_with: None,
        randomness: None,
    })
}

/// The first row of `m` that `(input, aux)` violates, from the host's sparse products: what
/// the host path's check reports for that witness.
fn host_first_unsatisfied(m: &ConstraintMatrices, input: &[Scalar], aux: &[Scalar]) -> Option<usize> {
    let rows = m.num_constraints();
    let (mut a, mut b, mut c) = (vec![Scalar::ZERO; rows], vec![Scalar::ZERO; rows], vec![Scalar::ZERO; rows]);
    m.evaluate_rows(0..rows, input, aux, &mut a, &mut b, &mut c);
    (0..rows).find(|&r| a[r] * b[r] != c[r])
}

/// A witness from a request ([`WitnessCheck::Enforce`]) is checked on the witness path (the
/// device evaluates `a, b, c` and checks them) exactly as on the host path: a corrupted one
/// fails the upload with `WorkError::Unsatisfied` at the constraint the host check names, and
/// one whose public inputs are not the circuit's fails synthesis; with
/// [`WitnessCheck::Ignore`] both checks run and the partition goes on. (The Filecoin kinds
/// through this path: `cuzk-tests`' `filecoin_witness_path`.)
#[test]
fn request_witnesses_are_checked_on_the_witness_path() {
    let shape = BuiltinShape::new(CircuitKind::SquaringChain, 10).unwrap();
    let device = BackendWorker::new(vec![Arc::new(CpuBackend::on_witness_path())]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("params");
    let params = cuzk_setup::generate_parameters(shape.kind.instance(shape.log_size, 0).unwrap(), &mut rand_chacha::ChaCha8Rng::seed_from_u64(11)).unwrap();
    std::fs::write(&path, params.to_bytes()).unwrap();
    device
        .load_params(LoadTask {
            circuit: CircuitId(0),
            at: Location::Device(DeviceId(0)),
            source: ParamSource::File(path),
            validation: Validation::Full,
            from_host: false,
            streamed: false,
        })
        .unwrap();
    let request = |check| -> Work { Arc::new(Partition { check, ..shape.partition(3).unwrap() }) };
    for check in [WitnessCheck::Enforce, WitnessCheck::Ignore] {
        let StageOutput::Synthesized { data: PartData::Witness { mut witness, matrices, shape: key, check: handed }, .. } =
            stage(&device, Stage::Synthesize, StageInput::Circuit(request(check))).expect("synthesis")
        else {
            panic!("synthesis did not hand on the witness alone");
        };
        assert_eq!((key, handed), (shape.key(), check));
        let k = witness.aux.len() / 2;
        witness.aux[k] += Scalar::ONE;
        let want = host_first_unsatisfied(&matrices, &witness.input, &witness.aux).expect("the corrupted witness violates a constraint");
        let upload = stage(&device, Stage::Upload, StageInput::Data(PartData::Witness { witness, matrices, shape: shape.key(), check }));
        match (check, upload) {
            (WitnessCheck::Enforce, Err(WorkError::Unsatisfied { constraint })) => assert_eq!(constraint, want),
            (WitnessCheck::Ignore, Ok(_)) => {}
            (c, Err(e)) => panic!("{c:?}: {e}"),
            (c, Ok(_)) => panic!("{c:?}: a corrupted witness was uploaded"),
        }
    }
    // Public inputs other than the witness's: refused when enforced.
    let enforced: Work = Arc::new(WrongPublic(request(WitnessCheck::Enforce)));
    assert!(matches!(stage(&device, Stage::Synthesize, StageInput::Circuit(enforced)), Err(WorkError::PublicInputsDiffer)));
    let ignored: Work = Arc::new(WrongPublic(request(WitnessCheck::Ignore)));
    assert!(stage(&device, Stage::Synthesize, StageInput::Circuit(ignored)).is_ok());
}

/// A circuit whose public inputs are not the ones its witness produces (a request whose data
/// does not match its vanilla proofs).
struct WrongPublic(Work);

impl PartitionCircuit for WrongPublic {
    fn shape(&self) -> &ShapeKey {
        self.0.shape()
    }
    fn public_inputs(&self) -> Result<Vec<Scalar>, CircuitError> {
        let mut p = self.0.public_inputs()?;
        p[0] += Scalar::ONE;
        Ok(p)
    }
    fn witness_check(&self) -> WitnessCheck {
        self.0.witness_check()
    }
    fn witness_into(&self, input: &mut [Scalar], aux: &mut [Scalar]) -> Result<(), WitnessError> {
        self.0.witness_into(input, aux)
    }
    fn repeats(&self) -> Option<Repeats> {
        self.0.repeats()
    }
    fn synthesize_in_full(&self, alloc: SharedAllocator, hint: SizeHint) -> Result<Synthesized, SynthesizeError> {
        self.0.synthesize_in_full(alloc, hint)
    }
    fn record(&self) -> Result<ConstraintMatrices, SynthesizeError> {
        self.0.record()
    }
    fn record_share(&self, part: usize, parts: usize, chunk_rows: usize) -> Result<RecordedShare, SynthesizeError> {
        self.0.record_share(part, parts, chunk_rows)
    }
    fn record_repeated_share(&self, repeats: &Repeats, part: usize, parts: usize, chunk_rows: usize) -> Result<RepeatedShare, SynthesizeError> {
        self.0.record_repeated_share(repeats, part, parts, chunk_rows)
    }
}

/// With budgeted matrices, a device holds a circuit's matrices only once the engine reserved
/// them: before that, uploads of witness-only partitions take the host path; after, the device
/// path; evicting the parameters drops them. Both paths give the same verified proof.
#[test]
fn budgeted_matrices_follow_the_reservation() {
    let shape = BuiltinShape::new(CircuitKind::SquaringChain, 10).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("params");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let params = cuzk_setup::generate_parameters(shape.kind.instance(shape.log_size, 0).unwrap(), &mut rng).unwrap();
    std::fs::write(&path, params.to_bytes()).unwrap();
    let w = BackendWorker::new(vec![Arc::new(CpuBackend::on_witness_path())]).with_budgeted_matrices();
    let (c, d) = (CircuitId(0), DeviceId(0));
    w.load_params(LoadTask {
        circuit: c,
        at: Location::Device(d),
        source: ParamSource::File(path),
        validation: Validation::Full,
        from_host: false,
        streamed: false,
    })
    .unwrap();
    assert_eq!(w.matrices_device_bytes(&shape.key()), None, "nothing recorded yet");
    let rs = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let prove = |w: &BackendWorker<CpuBackend>| {
        let mut handed = None;
        let (proof, _) = prove_one(w, c, 0, work(shape, 3), Some(rs), true, |stage, _, out| {
            if stage == Stage::Synthesize {
                handed = Some(matches!(out, StageOutput::Synthesized { data: PartData::Witness { .. }, .. }));
            }
        })
        .expect("a verified proof");
        assert_eq!(handed, Some(true), "synthesis hands on the witness alone");
        proof
    };
    let host = prove(&w);
    assert!(!w.has_device_matrices(&shape.key(), 0), "not reserved: the host path");
    let bytes = w.matrices_device_bytes(&shape.key()).expect("recorded");
    let m = w.matrices().and_then(|m| m.get(&shape.key())).unwrap();
    assert!(bytes >= m.heap_bytes() as u64, "{bytes}");
    w.matrices_reserved(c, d);
    let device = prove(&w);
    assert!(w.has_device_matrices(&shape.key(), 0), "reserved: the device path");
    assert_eq!(device.to_bytes(), host.to_bytes());
    w.evict_params(c, Location::Device(d));
    assert!(!w.has_device_matrices(&shape.key(), 0), "evicted with the parameters");
}

/// An engine driving a budgeted worker (what the daemon's driver does, synchronously): the
/// matrices are counted with the parameters of the circuit whose copy includes them, evicted
/// with them when another circuit needs the room, and every proof verifies.
#[test]
fn engine_counts_and_evicts_the_matrices_of_a_budgeted_worker() {
    use cuzk_core::engine::{Action, CircuitProfile, DeviceConfig, Engine, EngineConfig, Footprint, JobKind, JobSpec, Nanos, Outcome};
    use std::collections::{HashMap, VecDeque};

    let shapes = [BuiltinShape::new(CircuitKind::SquaringChain, 10).unwrap(), BuiltinShape::new(CircuitKind::SquaringChain, 11).unwrap()];
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(6);
    let w = BackendWorker::new(vec![Arc::new(CpuBackend::on_witness_path())]).with_budgeted_matrices();
    let mut files = Vec::new();
    let mut sizes = Vec::new();
    for (i, s) in shapes.iter().enumerate() {
        let path = dir.path().join(format!("params{i}"));
        let params = cuzk_setup::generate_parameters(s.kind.instance(s.log_size, 0).unwrap(), &mut rng).unwrap();
        std::fs::write(&path, params.to_bytes()).unwrap();
        // Record the matrices up front (as a persistent store would have them).
        stage(&w, Stage::Synthesize, StageInput::Circuit(work(*s, 0))).expect("synthesis");
        let m = w.matrices_device_bytes(&s.key()).expect("recorded");
        let fp = Footprint::for_domain(s.log_size, 64u64 << s.log_size);
        sizes.push((std::fs::metadata(&path).unwrap().len(), m, fp));
        files.push(path);
    }
    let ((p0, m0, f0), (p1, m1, f1)) = (sizes[0], sizes[1]);
    // Room for circuit 0's copy with matrices, then circuit 1's parameters and a partition,
    // but not for circuit 1's matrices too.
    let budget = (p0 + m0 + p1 + f1.device()).max(p0 + m0 + f0.device()).max(p1 + m1 + f1.device()) + 1;
    assert!(p0 + m0 + p1 + m1 + f1.device() > budget);
    let mut cfg = EngineConfig::new(1, 1 << 40, vec![DeviceConfig { memory_bytes: budget, gpu_workers: 1, kernel_lanes: 1, fallback: false }]);
    cfg.finalize_workers = 1;
    let mut e = Engine::new(cfg, Nanos::ZERO).unwrap();
    for (i, (p, m, fp)) in sizes.iter().enumerate() {
        let c = CircuitId(i as u32);
        e.register_circuit(
            c,
            CircuitProfile {
                params_host_bytes: *p,
                params_device_bytes: *p,
                params_device_host_bytes: 0,
                footprint: *fp,
                witness_footprint: None,
                load_host_bytes: 0,
            },
        )
        .unwrap();
        e.matrices_recorded(c, *m, Nanos::ZERO).unwrap();
        assert!(e.poll_action().is_none());
    }
    let dev = Location::Device(DeviceId(0));
    let mut clock = 0u64;
    let mut run_job = |e: &mut Engine, c: usize, actions: &mut Vec<Action>| {
        let job = e.submit(JobSpec::new(JobKind::Generic, CircuitId(c as u32), 2), Nanos(clock)).unwrap();
        let mut pending = VecDeque::new();
        let mut data: HashMap<_, PartData<CpuBackend>> = HashMap::new();
        let mut publics: HashMap<_, Vec<Scalar>> = HashMap::new();
        let mut ended = None;
        loop {
            while let Some(a) = e.poll_action() {
                e.check_consistency().unwrap();
                assert!(e.usage(dev).unwrap().used <= budget);
                match &a {
                    Action::MatricesReserved { circuit, device, .. } => w.matrices_reserved(*circuit, *device),
                    Action::EvictParams { circuit, from, .. } => w.evict_params(*circuit, *from),
                    Action::LoadParams { .. } | Action::Start(_) => pending.push_back(a.clone()),
                    Action::JobEnded { outcome, .. } => ended = Some(outcome.clone()),
                    Action::Release { .. } => {}
                }
                actions.push(a);
            }
            let Some(next) = pending.pop_front() else { break };
            clock += 1;
            match next {
                Action::LoadParams { circuit, to, from_host, .. } => {
                    let path = files[circuit.0 as usize].clone();
                    w.load_params(LoadTask { circuit, at: to, source: ParamSource::File(path), validation: Validation::Full, from_host, streamed: false })
                        .unwrap();
                    e.params_loaded(circuit, to, Nanos(clock)).unwrap();
                }
                Action::Start(d) => {
                    let input = match d.stage {
                        Stage::Synthesize => StageInput::Circuit(work(shapes[c], u64::from(d.partition.index) + 1)),
                        _ => StageInput::Data(data.remove(&d.partition).unwrap()),
                    };
                    let verify_with = (d.stage == Stage::Finalize).then(|| publics[&d.partition].clone());
                    let task =
                        StageTask { partition: d.partition, stage: d.stage, location: d.location, circuit: d.circuit, input, verify_with, randomness: None };
                    match w.run_stage(task).expect("stage (finalize verifies the proof)") {
                        StageOutput::Synthesized { data: x, public } => {
                            publics.insert(d.partition, public);
                            data.insert(d.partition, x);
                        }
                        StageOutput::Data(x) => {
                            data.insert(d.partition, x);
                        }
                        StageOutput::Proof(_) => {}
                    }
                    e.stage_finished(d.partition, d.stage, Nanos(clock)).unwrap();
                }
                _ => unreachable!(),
            }
        }
        assert_eq!(ended, Some(Outcome::Completed), "job {job:?}");
    };
    let mut first = Vec::new();
    run_job(&mut e, 0, &mut first);
    assert!(first.contains(&Action::MatricesReserved { circuit: CircuitId(0), device: DeviceId(0), bytes: m0 }), "{first:?}");
    assert!(w.has_device_matrices(&shapes[0].key(), 0));
    assert_eq!(e.usage(dev).unwrap().used, p0 + m0);
    let mut second = Vec::new();
    run_job(&mut e, 1, &mut second);
    assert!(second.contains(&Action::EvictParams { circuit: CircuitId(0), from: dev, bytes: p0 + m0 }), "{second:?}");
    assert!(second.contains(&Action::MatricesReserved { circuit: CircuitId(1), device: DeviceId(0), bytes: m1 }), "{second:?}");
    assert!(!w.has_device_matrices(&shapes[0].key(), 0), "evicted with circuit 0's parameters");
    assert!(w.has_device_matrices(&shapes[1].key(), 0));
    assert_eq!(e.usage(dev).unwrap().used, p1 + m1);
}

/// Partitions of one shape that reach the device together upload its matrices once: the
/// others wait for that upload and share it (each copy of a 32 GiB PoRep's is 7.3 GB, and the
/// engine's device budget counts one).
#[test]
fn concurrent_first_uses_upload_the_matrices_once() {
    let shape = BuiltinShape::new(CircuitKind::SquaringChain, 8).unwrap();
    let m = Arc::new(ConstraintMatrices::record(shape.kind.instance(shape.log_size, 0).unwrap()).unwrap());
    // Each upload takes 200 ms, so the four first uses overlap it.
    let plan = cuzk_faults::FaultPlan::parse(&["load:delay=200:always"], 0).unwrap();
    let backend = cuzk_faults::FaultyBackend::new(CpuBackend::on_witness_path(), plan);
    let uploads = backend.probe();
    let worker = BackendWorker::new(vec![Arc::new(backend)]);
    let key = shape.key();
    let resident: Vec<_> = std::thread::scope(|s| {
        let calls: Vec<_> = (0..4).map(|_| s.spawn(|| worker.resident_matrices(&key, &m, 0).unwrap())).collect();
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    });
    assert_eq!(uploads.injected().delayed, 1, "the matrices were uploaded more than once");
    assert!(resident.iter().all(|r| Arc::ptr_eq(r, &resident[0])), "callers got different copies");
    // A later use finds them resident and uploads nothing.
    worker.resident_matrices(&key, &m, 0).unwrap();
    assert_eq!(uploads.injected().delayed, 1);
}
