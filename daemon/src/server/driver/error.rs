//! Why the driver refused a request. The gRPC service maps each to a status code at its edge
//! (`service::status_of`); nothing inside the driver knows about gRPC.

use std::path::PathBuf;

use cuzk_core::engine::EngineError;

/// A request the driver could not carry out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DriverError {
    /// The daemon is shutting down (or has stopped) and accepts no new work.
    #[error("the daemon is shutting down and accepts no new jobs")]
    ShuttingDown,
    /// The circuit's parameter file is not where it should be.
    #[error("{0}")]
    MissingParams(String),
    /// The circuit's parameter file is not a parameter file.
    #[error("{}: not a valid parameter file", .0.display())]
    BadParams(PathBuf),
    /// The job needs more memory than the machine has.
    #[error("{0}")]
    TooLarge(EngineError),
    /// No such job.
    #[error("no job {0}")]
    NotFound(String),
    /// The job has already ended.
    #[error("job {0} has already ended")]
    AlreadyEnded(u64),
    /// The engine refused the request in its current state.
    #[error("{0}")]
    Refused(EngineError),
    /// Loading parameters failed.
    #[error("loading parameters failed: {0}")]
    LoadFailed(String),
    /// The queue of the job's priority is full.
    #[error("the {priority} queue is full: {waiting} jobs waiting (engine.queue_limit = {limit}); retry later")]
    QueueFull {
        /// The priority.
        priority: &'static str,
        /// Jobs of that priority accepted and not started.
        waiting: u32,
        /// The bound.
        limit: u32,
    },
    /// Every device has been taken out of service.
    #[error("{0}")]
    NoDevice(String),
    /// The engine rejected a request it should have accepted (a bug: report it).
    #[error("internal: {0}")]
    Internal(EngineError),
}
