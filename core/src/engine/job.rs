//! Internal per-job and per-partition state.

use std::cmp::Reverse;

use crate::prover::Stage;

use super::types::{DeviceId, JobId, JobSpec, Nanos, Priority};

/// Scheduling order of a job: higher priority first, then older first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct JobKey {
    pub prio: Reverse<Priority>,
    pub id: JobId,
}

impl JobKey {
    pub fn new(prio: Priority, id: JobId) -> JobKey {
        JobKey { prio: Reverse(prio), id }
    }

    pub fn critical(&self) -> bool {
        self.prio.0 == Priority::Critical
    }
}

/// Scheduling order of a partition: its job's order, then its index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct PartKey {
    pub job: JobKey,
    pub index: u32,
}

/// Where a partition is in its pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Not started.
    Pending,
    /// Running a stage.
    Running(Stage),
    /// Waiting to start the given stage.
    Ready(Stage),
    /// Finalized.
    Done,
    /// Stopped because its job ended early; holds nothing.
    Dropped,
}

/// Bytes a partition currently holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Held {
    pub host_abc: u64,
    pub host_rest: u64,
    pub dev_abc: u64,
    pub dev_rest: u64,
}

/// One partition.
#[derive(Debug, Clone)]
pub(crate) struct Part {
    pub phase: Phase,
    /// Device from upload until the MSM ends.
    pub device: Option<DeviceId>,
    /// Worker slot of the running stage (GPU slot from upload through MSM).
    pub slot: u32,
    /// Start of the running stage.
    pub since: Nanos,
    /// Holds a kernel lane (NTT through MSM).
    pub lane: bool,
    pub held: Held,
    /// Synthesized with the witness footprint: goes only to a device whose copy of the
    /// circuit includes the matrices while one that may take it holds such a copy.
    pub witness: bool,
}

impl Part {
    fn new() -> Part {
        Part { phase: Phase::Pending, device: None, slot: 0, since: Nanos::ZERO, lane: false, held: Held::default(), witness: false }
    }

    /// Still needs device parameters (has not left the GPU).
    pub fn needs_params(&self) -> bool {
        match self.phase {
            Phase::Pending => true,
            Phase::Running(s) | Phase::Ready(s) => s <= Stage::Msm,
            Phase::Done | Phase::Dropped => false,
        }
    }
}

/// One job.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub key: JobKey,
    pub spec: JobSpec,
    /// Next partition to start synthesis.
    pub next_synth: u32,
    /// Next partition to go to a GPU (partitions of a job are dispatched in order).
    pub next_upload: u32,
    pub finalized: u32,
    /// Partitions running a stage right now.
    pub running: u32,
    pub ended: bool,
    pub parts: Vec<Part>,
}

impl Job {
    pub fn new(key: JobKey, spec: JobSpec) -> Job {
        let parts = (0..spec.partitions).map(|_| Part::new()).collect();
        Job { key, spec, next_synth: 0, next_upload: 0, finalized: 0, running: 0, ended: false, parts }
    }
}
