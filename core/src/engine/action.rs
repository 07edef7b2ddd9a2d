//! What the engine asks its caller to do.

use crate::prover::Stage;

use super::types::{Buffers, CircuitId, DeviceId, JobId, Location, PartitionId};

/// Start one stage of one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dispatch {
    /// The partition.
    pub partition: PartitionId,
    /// Its circuit.
    pub circuit: CircuitId,
    /// The stage to run.
    pub stage: Stage,
    /// Where: [`Location::Host`] for synthesis and finalize, the device for the GPU stages.
    pub location: Location,
    /// Worker slot at `location` (synthesis/finalize worker, or GPU worker i.e. stream);
    /// a partition keeps the same GPU slot from upload through MSM.
    pub slot: u32,
    /// Bytes reserved at `location` for this partition by this start (host buffers at
    /// synthesis, device buffers at upload, otherwise 0).
    pub reserved: u64,
}

/// Why a job failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobFailure {
    /// A stage of a partition failed.
    Stage {
        /// The partition.
        partition: PartitionId,
        /// The stage.
        stage: Stage,
        /// The caller's explanation.
        reason: String,
    },
    /// The job's parameters could not be loaded anywhere.
    Params {
        /// The circuit.
        circuit: CircuitId,
        /// The caller's explanation.
        reason: String,
    },
    /// The job's deadline passed.
    DeadlineExceeded,
    /// No device in service can ever run the job's partitions: every device that could was
    /// retired ([`crate::engine::Engine::retire_device`]).
    NoDevice,
    /// A partition was between two of its device stages on a device when that device was
    /// retired; its data there cannot move to another device, so no further stage starts.
    DeviceRetired {
        /// The partition.
        partition: PartitionId,
        /// The retired device.
        device: DeviceId,
    },
}

/// How a job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every partition was finalized.
    Completed,
    /// It failed; its other partitions stop at their next stage boundary.
    Failed(JobFailure),
    /// The caller cancelled it; its partitions stop at their next stage boundary.
    Cancelled,
}

/// One thing for the caller to do; see the drain contract in [`crate::engine`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Run a stage; report it back with `stage_finished` or `stage_failed`.
    Start(Dispatch),
    /// Free (return to the pool) buffers of a partition. Execute before later actions.
    Release {
        /// The partition.
        partition: PartitionId,
        /// Where the buffers are.
        location: Location,
        /// Which buffers.
        buffers: Buffers,
        /// Bytes the engine no longer counts as used.
        bytes: u64,
    },
    /// Load a circuit's parameters; report back with `params_loaded` or `params_load_failed`.
    LoadParams {
        /// The circuit.
        circuit: CircuitId,
        /// Host (warm copy) or a device (hot copy).
        to: Location,
        /// Bytes reserved at `to`.
        bytes: u64,
        /// For a device load: a warm host copy exists (and stays until the load is reported).
        from_host: bool,
    },
    /// The device copy of a circuit now includes its constraint matrices: `bytes` more are
    /// reserved there (with a load, or as the copy grows once the matrices are known). The
    /// worker may make them resident there (on first use) and evaluates `a, b, c` on the
    /// device; without this, it evaluates them on the host for that device. They leave with
    /// the copy ([`Action::EvictParams`]). Execute before later actions.
    MatricesReserved {
        /// The circuit.
        circuit: CircuitId,
        /// The device.
        device: DeviceId,
        /// Bytes of the matrices, now counted as used there.
        bytes: u64,
    },
    /// Drop a circuit's parameters from a location, and a device copy's matrices with them
    /// (`bytes` covers both). Execute before later actions.
    EvictParams {
        /// The circuit.
        circuit: CircuitId,
        /// Where.
        from: Location,
        /// Bytes the engine no longer counts as used.
        bytes: u64,
    },
    /// The job ended; emitted exactly once per accepted job.
    JobEnded {
        /// The job.
        job: JobId,
        /// How.
        outcome: Outcome,
    },
}
