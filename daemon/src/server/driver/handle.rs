//! The driver's mailbox: what the API and HTTP handlers may ask, and the answers.

use std::sync::Arc;
use std::time::Duration;

use cuzk_core::engine::JobId;
use tokio::sync::{mpsc, oneshot, watch};

use super::job::JobRequest;
use super::DriverError;
use super::DriverView;
use super::JobRef;
use crate::circuits::CircuitShape;
use crate::config::ShutdownMode;

/// How a job ended, as the API reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinalStatus {
    /// Proofs are ready.
    Completed,
    /// It failed.
    Failed,
    /// It was cancelled.
    Cancelled,
}

/// The final result of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobResult {
    /// The job's API id (its request id, or its number).
    pub job_id: String,
    /// How it ended.
    pub status: FinalStatus,
    /// 192-byte proofs, concatenated in partition order (empty unless completed).
    pub proof: Vec<u8>,
    /// Per partition, its public inputs as 32-byte little-endian scalars.
    pub public_inputs: Vec<Vec<u8>>,
    /// Why it failed or was cancelled.
    pub error: String,
    /// Submission to first synthesis start.
    pub queue_wait: Duration,
    /// Time spent waiting for its parameters to be loaded.
    pub srs_load: Duration,
    /// Summed synthesis time of its partitions.
    pub synthesis: Duration,
    /// Summed GPU stage time (upload, NTT, MSM) of its partitions.
    pub gpu: Duration,
    /// Submission to end.
    pub total: Duration,
    /// Cancelled by a shutdown, not by its caller: a restarted daemon takes it up again.
    pub interrupted: bool,
}

/// A receiver that yields `Some` once the job has ended.
pub type ResultWatch = watch::Receiver<Option<Arc<JobResult>>>;

/// The answer to a submission.
#[derive(Debug, Clone)]
pub struct Submitted {
    /// The job.
    pub job: JobId,
    /// Its API id: the request id when one was given, else the number.
    pub job_id: String,
    /// Live jobs ahead of it at submission.
    pub queue_position: u32,
    /// Its result.
    pub watch: ResultWatch,
}

/// The answer to a preload.
#[derive(Debug, Clone, Copy)]
pub struct Preloaded {
    /// The parameters were already on a device.
    pub already_loaded: bool,
    /// How long the load took.
    pub load_time: Duration,
}

/// The answer to an eviction.
#[derive(Debug, Clone, Copy)]
pub struct Evicted {
    /// The parameters were on some device or the host.
    pub was_loaded: bool,
    /// Bytes freed.
    pub freed_bytes: u64,
}

/// A request to the driver.
pub enum Command {
    /// Accept a job.
    Submit(JobRequest, oneshot::Sender<Result<Submitted, DriverError>>),
    /// Subscribe to a job's result.
    Watch(JobRef, oneshot::Sender<Option<ResultWatch>>),
    /// Cancel a job; answers whether a stage had started.
    Cancel(JobRef, oneshot::Sender<Result<bool, DriverError>>),
    /// Load parameters onto a device.
    Preload(CircuitShape, oneshot::Sender<Result<Preloaded, DriverError>>),
    /// Drop parameters.
    Evict(CircuitShape, oneshot::Sender<Result<Evicted, DriverError>>),
    /// Run a function over what the driver shows (the status is built this way).
    Inspect(Box<dyn FnOnce(&DriverView<'_>) + Send>),
    /// The Chrome trace of the timeline.
    Trace(oneshot::Sender<String>),
    /// Stop accepting jobs and end every accepted one.
    Shutdown(ShutdownMode, Duration),
}

/// A cloneable handle to the driver.
#[derive(Clone, Debug)]
pub struct DriverHandle {
    pub(crate) tx: mpsc::UnboundedSender<Command>,
}

impl DriverHandle {
    async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Command) -> Result<T, DriverError> {
        let (tx, rx) = oneshot::channel();
        self.tx.send(make(tx)).map_err(|_| DriverError::ShuttingDown)?;
        rx.await.map_err(|_| DriverError::ShuttingDown)
    }

    /// Submits a job.
    pub async fn submit(&self, req: JobRequest) -> Result<Submitted, DriverError> {
        self.ask(|t| Command::Submit(req, t)).await?
    }

    /// The result watch of a job, if it is known.
    pub async fn watch(&self, job: JobRef) -> Result<Option<ResultWatch>, DriverError> {
        self.ask(|t| Command::Watch(job, t)).await
    }

    /// Cancels a job.
    pub async fn cancel(&self, job: JobRef) -> Result<bool, DriverError> {
        self.ask(|t| Command::Cancel(job, t)).await?
    }

    /// Preloads parameters.
    pub async fn preload(&self, spec: CircuitShape) -> Result<Preloaded, DriverError> {
        self.ask(|t| Command::Preload(spec, t)).await?
    }

    /// Evicts parameters.
    pub async fn evict(&self, spec: CircuitShape) -> Result<Evicted, DriverError> {
        self.ask(|t| Command::Evict(spec, t)).await?
    }

    /// `f` of what the driver shows ([`DriverView`]), run on the driver's task: keep it short.
    pub async fn inspect<T: Send + 'static>(&self, f: impl FnOnce(&DriverView<'_>) -> T + Send + 'static) -> Result<T, DriverError> {
        self.ask(|t| Command::Inspect(Box::new(move |v| drop(t.send(f(v)))))).await
    }

    /// The Chrome trace.
    pub async fn trace(&self) -> Result<String, DriverError> {
        self.ask(Command::Trace).await
    }

    /// Starts the shutdown.
    pub fn shutdown(&self, mode: ShutdownMode, timeout: Duration) {
        let _ = self.tx.send(Command::Shutdown(mode, timeout));
    }
}
