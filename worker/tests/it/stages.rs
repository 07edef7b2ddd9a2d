//! The worker's stages against full synthesis: with recorded matrices and a backend that
//! evaluates them on the device, proofs move only the witness, and every proof is
//! byte-identical to the one full synthesis (or the host products) gives with the same `r, s`,
//! and verifies; a Filecoin witness that violates a constraint fails its upload with the
//! constraint the host check names. The 2 KiB PoRep and SnapDeals partitions run with
//! `CUZK_SLOW_TESTS=1` (WindowPoSt and WinningPoSt always).

use std::sync::Arc;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_backend_cpu::CpuBackend;
use cuzk_circuits::CircuitKind;
use cuzk_core::alloc::{PinnedVec, SharedAllocator};
use cuzk_core::backend::{Backend, BackendError, MsmScalars, NttDirection};
use cuzk_core::domain::Domain;
use cuzk_core::engine::{CircuitId, DeviceId, JobId, Location, PartitionId, Stage};
use cuzk_core::matrices::ConstraintMatrices;
use cuzk_core::params::Validation;
use cuzk_worker::{prove_one, BackendWorker, BuiltinShape, CircuitShape, LoadTask, PartData, StageInput, StageOutput, StageTask, Work, WorkError, Worker};
use ff::Field;
use rand::SeedableRng;

/// The CPU oracle, claiming to evaluate constraints on its "device", so the worker takes the
/// witness-only path with it.
struct DeviceEvaluatingCpu(CpuBackend);

impl Backend for DeviceEvaluatingCpu {
    type Scalars = <CpuBackend as Backend>::Scalars;
    type G1Bases = <CpuBackend as Backend>::G1Bases;
    type G2Bases = <CpuBackend as Backend>::G2Bases;
    type Matrices = <CpuBackend as Backend>::Matrices;
    fn name(&self) -> String {
        "cpu evaluating on the device".into()
    }
    fn host_allocator(&self) -> SharedAllocator {
        self.0.host_allocator()
    }
    fn upload_scalars(&self, host: PinnedVec<Scalar>) -> Result<Self::Scalars, BackendError> {
        self.0.upload_scalars(host)
    }
    fn download_scalars(&self, buf: &Self::Scalars) -> Result<Vec<Scalar>, BackendError> {
        self.0.download_scalars(buf)
    }
    fn ntt(&self, buf: &mut Self::Scalars, domain: &Domain, direction: NttDirection, coset: bool) -> Result<(), BackendError> {
        self.0.ntt(buf, domain, direction, coset)
    }
    fn quotient_on_coset(&self, a: &mut Self::Scalars, b: &Self::Scalars, c: &Self::Scalars, domain: &Domain) -> Result<(), BackendError> {
        self.0.quotient_on_coset(a, b, c, domain)
    }
    fn load_matrices(&self, m: &Arc<ConstraintMatrices>) -> Result<Self::Matrices, BackendError> {
        self.0.load_matrices(m)
    }
    fn matrices_bytes(&self, m: &Self::Matrices) -> u64 {
        self.0.matrices_bytes(m)
    }
    fn evaluate_constraints(
        &self,
        m: &Self::Matrices,
        input: &Self::Scalars,
        aux: &Self::Scalars,
        domain: &Domain,
    ) -> Result<[Self::Scalars; 3], BackendError> {
        self.0.evaluate_constraints(m, input, aux, domain)
    }
    fn first_unsatisfied(&self, a: &Self::Scalars, b: &Self::Scalars, c: &Self::Scalars, rows: usize) -> Result<Option<usize>, BackendError> {
        self.0.first_unsatisfied(a, b, c, rows)
    }
    fn evaluates_constraints_on_device(&self) -> bool {
        true
    }
    fn load_g1(&self, points: Vec<G1Affine>) -> Result<Self::G1Bases, BackendError> {
        self.0.load_g1(points)
    }
    fn load_g2(&self, points: Vec<G2Affine>) -> Result<Self::G2Bases, BackendError> {
        self.0.load_g2(points)
    }
    fn g1_len(&self, bases: &Self::G1Bases) -> usize {
        self.0.g1_len(bases)
    }
    fn g2_len(&self, bases: &Self::G2Bases) -> usize {
        self.0.g2_len(bases)
    }
    fn msm_g1(&self, bases: &Self::G1Bases, offset: usize, scalars: MsmScalars<'_, Self::Scalars>) -> Result<G1Projective, BackendError> {
        self.0.msm_g1(bases, offset, scalars)
    }
    fn msm_g2(&self, bases: &Self::G2Bases, offset: usize, scalars: MsmScalars<'_, Self::Scalars>) -> Result<G2Projective, BackendError> {
        self.0.msm_g2(bases, offset, scalars)
    }
}

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
            w(LoadTask { circuit: CircuitId(0), at: Location::Device(DeviceId(0)), path: path.clone(), validation, from_host: false, streamed: false }).unwrap()
        };
        let full = BackendWorker::new(vec![Arc::new(CpuBackend::new())]).without_matrix_cache();
        load(&|t| full.load_params(t), Validation::Full);
        let on_device = BackendWorker::new(vec![Arc::new(DeviceEvaluatingCpu(CpuBackend::new()))]);
        load(&|t| on_device.load_params(t), Validation::Trusted);
        let host_products = BackendWorker::new(vec![Arc::new(DeviceEvaluatingCpu(CpuBackend::new()))]).with_device_evaluation(false);
        load(&|t| host_products.load_params(t), Validation::Trusted);
        assert!(on_device.witness_only(shape.into()) && !host_products.witness_only(shape.into()) && !full.witness_only(shape.into()));

        let wants: Vec<_> = [1u64, 2]
            .into_iter()
            .map(|seed| {
                let rs = (Scalar::random(&mut rng), Scalar::random(&mut rng));
                let (proof, public) =
                    prove_one(&full, CircuitId(0), 0, Work::Builtin(shape, seed), Some(rs), true, |_, _, _| {}).expect("full synthesis proof");
                (seed, rs, proof, public)
            })
            .collect();
        for (worker, want_handed) in [(&on_device, Handed::Witness), (&host_products, Handed::Record)] {
            let mut handed = Vec::new();
            for (seed, rs, want, public) in &wants {
                let (seed, rs) = (*seed, *rs);
                let (got, got_public) = prove_one(worker, CircuitId(0), 0, Work::Builtin(shape, seed), Some(rs), true, |stage, _, out| {
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

fn slow() -> bool {
    std::env::var_os("CUZK_SLOW_TESTS").is_some_and(|v| v != "0")
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

/// A 2 KiB Filecoin partition through the witness path (the device evaluates `a, b, c` and
/// checks them) is byte for byte the host path's proof (host products, host check) with the
/// same `r, s`, and verifies; a corrupted witness fails the upload with
/// `WorkError::Unsatisfied` at the constraint the host check names.
#[test]
fn filecoin_partitions_through_the_witness_path_equal_the_host_path() {
    use cuzk_circuits_filecoin::{fixtures, params, prepare, verify, FilKind, FilShape};
    let cache = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fil-params");
    std::fs::create_dir_all(&cache).unwrap();
    verify::use_cache_dir(&cache);
    let requests = fixtures::generate(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")), 2048, 7).expect("sealing a 2 KiB sector");
    let mut kinds = vec![FilKind::WindowPoSt, FilKind::WinningPoSt];
    if slow() {
        kinds.extend([FilKind::PoRep, FilKind::SnapDeals]);
    } else {
        println!("PoRep and SnapDeals (2 KiB) run with CUZK_SLOW_TESTS=1");
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(21);
    for kind in kinds {
        let fil = FilShape::new(kind, 2048).unwrap();
        let files = params::generate(&cache, fil, false, &mut rand::rngs::OsRng).expect("parameters");
        let load = LoadTask {
            circuit: CircuitId(0),
            at: Location::Device(DeviceId(0)),
            path: files.params.clone(),
            validation: Validation::Trusted,
            from_host: false,
            streamed: false,
        };
        let host = BackendWorker::new(vec![Arc::new(CpuBackend::new())]);
        host.load_params(load.clone()).unwrap();
        let device = BackendWorker::new(vec![Arc::new(DeviceEvaluatingCpu(CpuBackend::new()))]);
        device.load_params(load).unwrap();
        let shape = CircuitShape::Filecoin(fil);
        assert!(device.witness_only(shape) && !host.witness_only(shape), "{kind:?}");

        let req = requests.iter().find(|r| r.kind == kind).expect("fixture");
        let prepared = prepare(req).expect("prepare");
        let part = prepared.partition(0);
        let rs = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let (want, want_public) = prove_one(&host, CircuitId(0), 0, Work::Filecoin(fil, part.clone()), Some(rs), true, |_, _, _| {}).expect("host path proof");
        let mut handed = None;
        let (got, got_public) = prove_one(&device, CircuitId(0), 0, Work::Filecoin(fil, part.clone()), Some(rs), true, |stage, _, out| {
            if stage == Stage::Synthesize {
                handed = Some(matches!(out, StageOutput::Synthesized { data: PartData::Witness { .. }, .. }));
            }
        })
        .expect("witness path proof");
        assert_eq!(handed, Some(true), "{kind:?}: synthesis did not hand on the witness alone");
        assert_eq!(got.to_bytes(), want.to_bytes(), "{kind:?}: the witness path's proof differs from the host path's");
        assert_eq!(got_public, want_public);
        if prepared.partitions() == 1 {
            assert!(verify::verify(req, &got.to_bytes()).expect("Filecoin's verifier"), "{kind:?}: Filecoin's verifier rejects the proof");
        }

        // A corrupted witness: the device check fails the upload at the host check's constraint.
        let StageOutput::Synthesized { data: PartData::Witness { mut witness, matrices, shape }, .. } =
            stage(&device, Stage::Synthesize, StageInput::Circuit(Work::Filecoin(fil, part))).expect("synthesis")
        else {
            panic!("{kind:?}: synthesis did not hand on the witness alone");
        };
        let k = witness.aux.len() / 2;
        witness.aux[k] += Scalar::ONE;
        let want = host_first_unsatisfied(&matrices, &witness.input, &witness.aux).expect("the corrupted witness violates a constraint");
        match stage(&device, Stage::Upload, StageInput::Data(PartData::Witness { witness, matrices, shape })) {
            Err(WorkError::Unsatisfied { constraint }) => assert_eq!(constraint, want, "{kind:?}"),
            Err(e) => panic!("{kind:?}: {e}"),
            Ok(_) => panic!("{kind:?}: a corrupted witness was uploaded"),
        }
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
    let w = BackendWorker::new(vec![Arc::new(DeviceEvaluatingCpu(CpuBackend::new()))]).with_budgeted_matrices();
    let (c, d) = (CircuitId(0), DeviceId(0));
    w.load_params(LoadTask { circuit: c, at: Location::Device(d), path, validation: Validation::Full, from_host: false, streamed: false }).unwrap();
    assert_eq!(w.matrices_device_bytes(shape.into()), None, "nothing recorded yet");
    let rs = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let prove = |w: &BackendWorker<DeviceEvaluatingCpu>| {
        let mut handed = None;
        let (proof, _) = prove_one(w, c, 0, Work::Builtin(shape, 3), Some(rs), true, |stage, _, out| {
            if stage == Stage::Synthesize {
                handed = Some(matches!(out, StageOutput::Synthesized { data: PartData::Witness { .. }, .. }));
            }
        })
        .expect("a verified proof");
        assert_eq!(handed, Some(true), "synthesis hands on the witness alone");
        proof
    };
    let host = prove(&w);
    assert!(!w.has_device_matrices(shape.into(), 0), "not reserved: the host path");
    let bytes = w.matrices_device_bytes(shape.into()).expect("recorded");
    let m = w.matrices().and_then(|m| m.get(shape.into())).unwrap();
    assert!(bytes >= m.heap_bytes() as u64, "{bytes}");
    w.matrices_reserved(c, d);
    let device = prove(&w);
    assert!(w.has_device_matrices(shape.into(), 0), "reserved: the device path");
    assert_eq!(device.to_bytes(), host.to_bytes());
    w.evict_params(c, Location::Device(d));
    assert!(!w.has_device_matrices(shape.into(), 0), "evicted with the parameters");
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
    let w = BackendWorker::new(vec![Arc::new(DeviceEvaluatingCpu(CpuBackend::new()))]).with_budgeted_matrices();
    let mut files = Vec::new();
    let mut sizes = Vec::new();
    for (i, s) in shapes.iter().enumerate() {
        let path = dir.path().join(format!("params{i}"));
        let params = cuzk_setup::generate_parameters(s.kind.instance(s.log_size, 0).unwrap(), &mut rng).unwrap();
        std::fs::write(&path, params.to_bytes()).unwrap();
        // Record the matrices up front (as a persistent store would have them).
        stage(&w, Stage::Synthesize, StageInput::Circuit(Work::Builtin(*s, 0))).expect("synthesis");
        let m = w.matrices_device_bytes((*s).into()).expect("recorded");
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
        let mut data: HashMap<_, PartData<DeviceEvaluatingCpu>> = HashMap::new();
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
                    w.load_params(LoadTask { circuit, at: to, path, validation: Validation::Full, from_host, streamed: false }).unwrap();
                    e.params_loaded(circuit, to, Nanos(clock)).unwrap();
                }
                Action::Start(d) => {
                    let input = match d.stage {
                        Stage::Synthesize => StageInput::Circuit(Work::Builtin(shapes[c], u64::from(d.partition.index) + 1)),
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
    assert!(w.has_device_matrices(shapes[0].into(), 0));
    assert_eq!(e.usage(dev).unwrap().used, p0 + m0);
    let mut second = Vec::new();
    run_job(&mut e, 1, &mut second);
    assert!(second.contains(&Action::EvictParams { circuit: CircuitId(0), from: dev, bytes: p0 + m0 }), "{second:?}");
    assert!(second.contains(&Action::MatricesReserved { circuit: CircuitId(1), device: DeviceId(0), bytes: m1 }), "{second:?}");
    assert!(!w.has_device_matrices(shapes[0].into(), 0), "evicted with circuit 0's parameters");
    assert!(w.has_device_matrices(shapes[1].into(), 0));
    assert_eq!(e.usage(dev).unwrap().used, p1 + m1);
}
