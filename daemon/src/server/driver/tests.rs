//! The driver against a fake worker: no backend, no gRPC server. The fake checks that every
//! stage gets the previous stage's output, records what it was asked, and fails or panics
//! where a test tells it to.

use std::sync::Mutex;
use std::time::Duration;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cuzk_circuits::CircuitKind;
use cuzk_core::circuit::WitnessCheck;
use cuzk_core::engine::{DeviceConfig, EngineConfig, Priority};
use cuzk_worker::{LoadTask, StageInput, StageOutput, StageTask, WorkError, Worker};
use group::Group;
use rand_chacha::rand_core::SeedableRng;

use super::*;
use crate::families::GenericShape;
use crate::setup::params_path;

/// What a partition carries between fake stages: the stages it went through.
type Trail = Vec<Stage>;

#[derive(Default)]
struct FakeWorker {
    /// `(partition index, stage)` that fails; a panic instead when the flag is set.
    fail: Option<(u32, Stage, bool)>,
    fail_loads: bool,
    loads: Mutex<Vec<Location>>,
    finished: Mutex<Vec<(u32, Trail)>>,
}

/// The proof the fake makes for partition `i`: distinct per partition and a valid encoding.
fn fake_proof(i: u32) -> Proof {
    let k = Scalar::from(u64::from(i) + 2);
    Proof {
        a: G1Affine::from(G1Projective::generator() * k),
        b: G2Affine::from(G2Projective::generator() * k),
        c: G1Affine::from(G1Projective::generator() * (k + k)),
    }
}

impl Worker for FakeWorker {
    type Data = Trail;

    fn devices(&self) -> usize {
        1
    }

    fn device_name(&self, _: usize) -> String {
        "fake".into()
    }

    fn run_stage(&self, task: StageTask<Trail>) -> Result<StageOutput<Trail>, WorkError> {
        let i = task.partition.index;
        if let Some((fi, fs, panic)) = self.fail {
            if fi == i && fs == task.stage {
                if panic {
                    panic!("boom");
                }
                return Err(WorkError::Internal("injected".into()));
            }
        }
        let want_location = match task.stage {
            Stage::Synthesize | Stage::Finalize => Location::Host,
            _ => Location::Device(cuzk_core::engine::DeviceId(0)),
        };
        assert_eq!(task.location, want_location, "{} ran at the wrong place", task.stage.name());
        let mut trail = match task.input {
            StageInput::Circuit(work) => {
                assert_eq!(task.stage, Stage::Synthesize);
                assert_eq!(work.shape().as_str(), "squaring-chain-2^10");
                let trail = vec![Stage::Synthesize];
                return Ok(StageOutput::Synthesized { data: trail, public: work.public_inputs().map_err(WorkError::Circuit)? });
            }
            StageInput::Data(t) => t,
        };
        let i_prev = Stage::ALL.iter().position(|s| *s == task.stage).unwrap() - 1;
        assert_eq!(trail.last(), Some(&Stage::ALL[i_prev]), "{} got the data of another stage", task.stage.name());
        trail.push(task.stage);
        if task.stage == Stage::Finalize {
            assert_eq!(task.verify_with, None, "verification is off in these tests");
            self.finished.lock().unwrap().push((i, trail));
            return Ok(StageOutput::Proof(fake_proof(i)));
        }
        Ok(StageOutput::Data(trail))
    }

    fn load_params(&self, task: LoadTask) -> Result<(), WorkError> {
        self.loads.lock().unwrap().push(task.at);
        if self.fail_loads {
            return Err(WorkError::Internal("no such device memory".into()));
        }
        Ok(())
    }

    fn evict_params(&self, _: CircuitId, _: Location) {}
}

fn shape() -> GenericShape {
    GenericShape::new("squaring-chain", 10).unwrap()
}

/// A driver over `worker` with a parameter file for [`shape`] in a fresh data dir (the
/// driver reads its layout; the fake worker never loads it).
fn start(worker: FakeWorker) -> (DriverHandle, Arc<FakeWorker>, tempfile::TempDir) {
    static PARAMS: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    let bytes = PARAMS.get_or_init(|| {
        let params = shape().parameters(&mut rand_chacha::ChaCha8Rng::seed_from_u64(7)).unwrap();
        params.to_bytes()
    });
    let dir = tempfile::tempdir().unwrap();
    let p = params_path(dir.path(), shape());
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, bytes).unwrap();
    let engine = EngineConfig::new(2, 1 << 30, vec![DeviceConfig { memory_bytes: 1 << 30, gpu_workers: 1, kernel_lanes: 1, fallback: false }]);
    let cfg = DriverConfig {
        data_dir: dir.path().into(),
        fil_dir: dir.path().join("fil"),
        validation: Validation::Trusted,
        self_check: crate::config::SelfCheck::Off,
        jobs: JobsConfig { recovery: Recovery::default(), queue_limit: 64, memory_margin: 0, keep_results: 16 },
        meminfo: "/proc/meminfo".into(),
        engine,
        preload: Vec::new(),
        linger: Duration::ZERO,
        ordinals: Vec::new(),
        first_job_id: 0,
        remembered: Vec::new(),
    };
    let worker = Arc::new(worker);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let (handle, _task) = spawn(cfg, worker.clone(), pool).unwrap();
    (handle, worker, dir)
}

fn job(partitions: u32, seed: u64) -> JobRequest {
    JobRequest {
        request_id: String::new(),
        kind: "generic",
        priority: Priority::Normal,
        circuit: CircuitShape::Generic(shape()),
        filecoin: None,
        witness: WitnessCheck::Trusted,
        params: crate::circuits::ParamChoice::File,
        seed,
        partitions,
        deadline: None,
        payload: [0; 32],
        restored: false,
    }
}

async fn result(handle: &DriverHandle, s: &Submitted) -> Arc<JobResult> {
    let mut w = s.watch.clone();
    let r = tokio::time::timeout(Duration::from_secs(30), w.wait_for(|r| r.is_some())).await.expect("the job ends").expect("the driver runs");
    let r = r.clone().unwrap();
    assert!(handle.watch(JobRef::Id(s.job)).await.unwrap().is_some());
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_runs_every_stage_of_every_partition_in_order() {
    let (handle, worker, _dir) = start(FakeWorker::default());
    let s = handle.submit(job(3, 40)).await.unwrap();
    let r = result(&handle, &s).await;
    assert_eq!(r.status, FinalStatus::Completed, "{}", r.error);
    let want: Vec<u8> = (0..3).flat_map(|i| fake_proof(i).to_bytes()).collect();
    assert_eq!(r.proof, want, "proofs in partition order");
    let publics: Vec<Vec<u8>> = (0..3u64).map(|i| scalar_bytes(&CircuitKind::SquaringChain.instance(10, 40 + i).unwrap().public_inputs())).collect();
    assert_eq!(r.public_inputs, publics, "each partition's public inputs, seeded per partition");
    let mut finished = worker.finished.lock().unwrap().clone();
    finished.sort();
    assert_eq!(finished, (0..3).map(|i| (i, Stage::ALL.to_vec())).collect::<Vec<_>>());
    assert_eq!(*worker.loads.lock().unwrap(), vec![Location::Device(cuzk_core::engine::DeviceId(0))], "parameters loaded once");

    // A second job of the same circuit finds them resident.
    let s2 = handle.submit(job(1, 7)).await.unwrap();
    assert_eq!(result(&handle, &s2).await.status, FinalStatus::Completed);
    assert_eq!(worker.loads.lock().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_or_panicking_stage_fails_its_job_with_the_reason() {
    for (panic, reason) in [(false, "partition 1 failed in msm: internal: injected"), (true, "partition 1 failed in msm: panicked: boom")] {
        let (handle, _worker, _dir) = start(FakeWorker { fail: Some((1, Stage::Msm, panic)), ..Default::default() });
        let s = handle.submit(job(2, 1)).await.unwrap();
        let r = result(&handle, &s).await;
        assert_eq!(r.status, FinalStatus::Failed);
        assert_eq!(r.error, reason);
        assert!(r.proof.is_empty());
        // The driver keeps serving after the failure.
        let snap = handle.snapshot().await.unwrap();
        assert_eq!(snap.jobs.failed, 1);
        assert_eq!(snap.backend, "fake");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_parameter_load_fails_the_job_and_the_preload() {
    let (handle, _worker, _dir) = start(FakeWorker { fail_loads: true, ..Default::default() });
    let e = handle.preload(CircuitShape::Generic(shape())).await.unwrap_err();
    assert_eq!(e, DriverError::LoadFailed("internal: no such device memory".into()));
    let s = handle.submit(job(1, 1)).await.unwrap();
    let r = result(&handle, &s).await;
    assert_eq!(r.status, FinalStatus::Failed);
    assert!(r.error.starts_with("loading parameters failed"), "{}", r.error);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_are_driver_errors() {
    let (handle, _worker, dir) = start(FakeWorker::default());
    assert_eq!(handle.cancel(JobRef::Id(JobId(99))).await.unwrap_err(), DriverError::NotFound("99".into()));
    let mut missing = job(1, 1);
    missing.circuit = CircuitShape::Generic(GenericShape::new("squaring-chain", 11).unwrap());
    match handle.submit(missing).await.unwrap_err() {
        DriverError::MissingParams(m) => assert!(m.contains(&dir.path().display().to_string()) && m.contains("cuzk setup"), "{m}"),
        e => panic!("wrong error {e:?}"),
    }
    let s = handle.submit(job(1, 1)).await.unwrap();
    assert_eq!(result(&handle, &s).await.status, FinalStatus::Completed);
    assert_eq!(handle.cancel(JobRef::Id(s.job)).await.unwrap_err(), DriverError::AlreadyEnded(s.job.0));
    handle.shutdown(ShutdownMode::Drain, Duration::from_secs(5));
    assert_eq!(handle.submit(job(1, 1)).await.unwrap_err(), DriverError::ShuttingDown);
}
