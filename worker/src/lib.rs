//! `cuzk-worker`: the blocking layer between the sans-io engine (`cuzk-core`) and the daemon.
//!
//! The engine decides *what* runs; a [`Worker`] runs one of its actions on the calling thread:
//! a stage of one partition ([`Worker::run_stage`]) or a parameter load
//! ([`Worker::load_params`]). [`BackendWorker`] is the worker over real backends: it owns the
//! parameters resident on the host and on each device and the recorded constraint matrices
//! ([`matrices::MatrixCache`]) as values, so two workers in one process share nothing.
//! Nothing here spawns a thread of its own beyond rayon's pool, waits on a runtime or speaks a
//! wire protocol; `cuzk prove`, the timing programs of `cuzk-tests` and the daemon all run their stages through it.

#![warn(missing_docs)]

/// Logs a step of a long piece of work at `info` when it took a second or more (progress an
/// operator sees), at `debug` otherwise: `progress!(took, fields…, message)`.
macro_rules! progress {
    ($took:expr, $($event:tt)+) => {
        if $took >= std::time::Duration::from_secs(1) {
            tracing::info!($($event)+)
        } else {
            tracing::debug!($($event)+)
        }
    };
}

mod backend_worker;
mod error;
pub mod matrices;
pub mod params;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use blstrs::Scalar;
use cuzk_core::circuit::{PartitionCircuit, ShapeKey};
use cuzk_core::engine::{CircuitId, DeviceId, JobId, Location, PartitionId, Stage};
use cuzk_core::params::Validation;
use cuzk_core::proof::Proof;

pub use backend_worker::{BackendWorker, PartData};
pub use error::WorkError;
pub use params::{read_params, read_params_checked, read_params_trusting, read_params_with_records, Checked, PublishedDigest};

/// A partition's circuit, of any family: what synthesis runs.
pub type Work = Arc<dyn PartitionCircuit>;

/// Where a circuit's parameters come from (chosen when the circuit is registered).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamSource {
    /// A parameter file.
    File(PathBuf),
    /// Timing-only points generated from the shape's recorded constraint matrices
    /// ([`cuzk_setup::timing`]): parameters of the real sizes for timing circuits whose real
    /// parameters are not at hand. Not a real SRS: no proof made with them is valid.
    TimingOnly(ShapeKey),
}

impl std::fmt::Display for ParamSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParamSource::File(p) => write!(f, "{}", p.display()),
            ParamSource::TimingOnly(s) => write!(f, "<timing-only parameters of {s}>"),
        }
    }
}

/// What a stage consumes: the circuit (synthesis) or the previous stage's data.
pub enum StageInput<D> {
    /// The circuit to synthesize.
    Circuit(Work),
    /// The output of the previous stage.
    Data(D),
}

/// One stage of one partition, as the engine dispatched it.
pub struct StageTask<D> {
    /// The partition.
    pub partition: PartitionId,
    /// The stage.
    pub stage: Stage,
    /// Where it runs: a device for the GPU stages, the host for synthesis and finalize.
    pub location: Location,
    /// The circuit's engine id (whose parameters the stage uses).
    pub circuit: CircuitId,
    /// What it consumes.
    pub input: StageInput<D>,
    /// Finalize checks the proof against these public inputs (without `ONE`) when set.
    pub verify_with: Option<Vec<Scalar>>,
    /// Finalize's `r, s`; fresh randomness when `None` (fixed values make proofs reproducible).
    pub randomness: Option<(Scalar, Scalar)>,
}

/// What a stage produced (moved once, so the variants' sizes do not matter).
#[allow(clippy::large_enum_variant)]
pub enum StageOutput<D> {
    /// Data for the next stage.
    Data(D),
    /// Synthesis: data for the upload and the partition's public inputs (without `ONE`).
    Synthesized {
        /// Data for the upload.
        data: D,
        /// The public inputs.
        public: Vec<Scalar>,
    },
    /// Finalize: the partition's proof.
    Proof(Proof),
}

/// A parameter load the engine asked for.
#[derive(Debug, Clone)]
pub struct LoadTask {
    /// The circuit.
    pub circuit: CircuitId,
    /// Where to: the host (a warm copy) or a device.
    pub at: Location,
    /// Where the parameters come from.
    pub source: ParamSource,
    /// How carefully to check it.
    pub validation: Validation,
    /// Build the device copy from the warm host copy instead of reading the file.
    pub from_host: bool,
    /// For a device load: keep the bases in page-locked host memory and stream them through
    /// the device during MSMs (parameters larger than the device's budget;
    /// `CircuitProfile::params_device_host_bytes`). The CPU and wgpu backends load them
    /// resident; CUDA streams anyway bases that would not leave it enough free memory.
    pub streamed: bool,
}

/// One circuit's recorded constraint matrices, as the status reports them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatricesInfo {
    /// The circuit's shape id (`sha256-chain-2^20`, `porep-2k`).
    pub circuit: String,
    /// Non-zero entries of `A, B, C`.
    pub entries: u64,
    /// Host bytes of the recorded matrices.
    pub host_bytes: u64,
    /// Device bytes of the resident copy on each device (0: not resident there).
    pub device_bytes: Vec<u64>,
}

/// Runs engine actions on the calling thread. Implementations must be callable from many
/// threads at once (stages of different partitions run in parallel).
pub trait Worker: Send + Sync + 'static {
    /// A partition's data between two stages.
    type Data: Send + 'static;

    /// Number of devices this worker drives (engine device ids `0..devices()`).
    fn devices(&self) -> usize;

    /// A short name of device `d` for logs and the status page (`"cuda:0 NVIDIA H200"`).
    fn device_name(&self, d: usize) -> String;

    /// Runs one stage.
    fn run_stage(&self, task: StageTask<Self::Data>) -> Result<StageOutput<Self::Data>, WorkError>;

    /// Makes a circuit's parameters resident where `task.at` says.
    fn load_params(&self, task: LoadTask) -> Result<(), WorkError>;

    /// Drops a circuit's parameters from `from` (stages still running keep their reference),
    /// and from a device the matrices reserved with them.
    fn evict_params(&self, circuit: CircuitId, from: Location);

    /// The recorded constraint matrices this worker holds, for the status.
    fn matrices_info(&self) -> Vec<MatricesInfo> {
        Vec::new()
    }

    /// Whether synthesis hands on only the witness (`a, b, c` are evaluated on the device, or
    /// on the host at the upload where the device holds no copy of the matrices).
    fn witness_only(&self) -> bool {
        false
    }

    /// Device bytes a copy of `shape`'s recorded matrices takes (an upper bound), once they
    /// are recorded and when this worker evaluates `a, b, c` on the device: what the engine
    /// counts with the parameters (`Engine::matrices_recorded`). `None` otherwise.
    fn matrices_device_bytes(&self, shape: &ShapeKey) -> Option<u64> {
        let _ = shape;
        None
    }

    /// The engine reserved device memory for `circuit`'s matrices on `device`
    /// ([`cuzk_core::engine::Action::MatricesReserved`]): the worker may make them resident
    /// there; they go with the parameters ([`Worker::evict_params`]).
    fn matrices_reserved(&self, circuit: CircuitId, device: DeviceId) {
        let _ = (circuit, device);
    }
}

/// Proves one partition on the calling thread, stage after stage (what `cuzk prove` and the
/// timing programs of `cuzk-tests` run; the daemon dispatches the same stages one by one). The parameters of `circuit`
/// must be resident on `device`. With `verify`, finalize checks the proof against the
/// synthesized public inputs. `on_stage` sees each stage, its wall time and its output.
/// Returns the proof and the public inputs (without `ONE`).
pub fn prove_one<W: Worker>(
    worker: &W,
    circuit: CircuitId,
    device: u32,
    work: Work,
    randomness: Option<(Scalar, Scalar)>,
    verify: bool,
    mut on_stage: impl FnMut(Stage, Duration, &StageOutput<W::Data>),
) -> Result<(Proof, Vec<Scalar>), WorkError> {
    let partition = PartitionId { job: JobId(0), index: 0 };
    let mut input = StageInput::Circuit(work);
    let mut public = Vec::new();
    for stage in Stage::ALL {
        let location = match stage {
            Stage::Synthesize | Stage::Finalize => Location::Host,
            Stage::Upload | Stage::Ntt | Stage::Msm => Location::Device(DeviceId(device)),
        };
        let verify_with = (verify && stage == Stage::Finalize).then(|| public.clone());
        let t = Instant::now();
        let out = worker.run_stage(StageTask { partition, stage, location, circuit, input, verify_with, randomness })?;
        on_stage(stage, t.elapsed(), &out);
        input = match out {
            StageOutput::Synthesized { data, public: p } => {
                public = p;
                StageInput::Data(data)
            }
            StageOutput::Data(data) => StageInput::Data(data),
            StageOutput::Proof(proof) => return Ok((proof, public)),
        };
    }
    Err(WorkError::Internal("finalize produced no proof".into()))
}

/// Runs `f`, turning a panic into [`WorkError::Panicked`] so a task always reports back.
pub fn catch_panics<T>(f: impl FnOnce() -> Result<T, WorkError>) -> Result<T, WorkError> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let msg = if let Some(s) = p.downcast_ref::<&str>() {
            (*s).to_string()
        } else if let Some(s) = p.downcast_ref::<String>() {
            s.clone()
        } else {
            String::new()
        };
        Err(WorkError::Panicked(msg))
    })
}
