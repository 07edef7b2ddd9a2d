//! Errors returned by engine inputs. An input that returns an error changed nothing.

use crate::prover::Stage;

use super::types::{CircuitId, DeviceId, JobId, Location, PartitionId};

/// Why the engine refused an input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// The configuration is unusable.
    #[error("invalid engine configuration: {0}")]
    InvalidConfig(&'static str),
    /// No circuit with this id was registered.
    #[error("unknown circuit {0:?}")]
    UnknownCircuit(CircuitId),
    /// A circuit with this id is already registered.
    #[error("circuit {0:?} is already registered")]
    CircuitExists(CircuitId),
    /// A job must have at least one partition.
    #[error("a job needs at least one partition")]
    NoPartitions,
    /// One partition of this circuit can never fit the memory budget.
    #[error("a partition of {circuit:?} needs {need} bytes at {location:?}, but at most {capacity} are usable")]
    TooLarge {
        /// The circuit.
        circuit: CircuitId,
        /// Which budget.
        location: Location,
        /// Bytes one partition (plus parameters, on a device) needs.
        need: u64,
        /// Bytes that budget can ever give it.
        capacity: u64,
    },
    /// A device load of this circuit holds more host memory in flight (one decoded query,
    /// [`crate::engine::CircuitProfile::load_host_bytes`]) than can be set aside for loads.
    #[error("a device load of {circuit:?} holds {need} host bytes in flight, but at most {capacity} can be set aside for loads (the host budget less what accepted jobs' partitions need)")]
    LoadTooLarge {
        /// The circuit.
        circuit: CircuitId,
        /// Bytes one of its device loads holds.
        need: u64,
        /// Bytes that can be set aside.
        capacity: u64,
    },
    /// No job with this id is known (never submitted, or ended and forgotten).
    #[error("unknown job {0:?}")]
    UnknownJob(JobId),
    /// The job has already ended (completed, failed or cancelled).
    #[error("job {0:?} has already ended")]
    JobEnded(JobId),
    /// No such partition is running.
    #[error("unknown partition {0:?}")]
    UnknownPartition(PartitionId),
    /// The partition is not running this stage.
    #[error("partition {partition:?} is not running {stage:?}")]
    NotRunning {
        /// The partition.
        partition: PartitionId,
        /// The stage the caller reported.
        stage: Stage,
    },
    /// No device with this id.
    #[error("unknown device {0:?}")]
    UnknownDevice(DeviceId),
    /// The device was retired ([`crate::engine::Engine::retire_device`]): nothing is loaded
    /// or run there any more.
    #[error("device {0:?} is out of service")]
    DeviceRetired(DeviceId),
    /// The parameters are in use (or being loaded) there and cannot be evicted now.
    #[error("parameters of {circuit:?} are in use at {location:?}")]
    ParamsInUse {
        /// The circuit.
        circuit: CircuitId,
        /// Where.
        location: Location,
    },
    /// The engine did not ask for these parameters to be loaded there.
    #[error("parameters of {circuit:?} are not being loaded at {location:?}")]
    NotLoading {
        /// The circuit.
        circuit: CircuitId,
        /// Where.
        location: Location,
    },
    /// Not enough memory can be freed there now.
    #[error("not enough memory at {location:?}: need {need} bytes")]
    InsufficientMemory {
        /// Where.
        location: Location,
        /// Bytes needed.
        need: u64,
    },
}
