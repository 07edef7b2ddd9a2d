//! The `cuzk.v1.ProvingEngine` gRPC service.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use prost::Message;
use tonic::{Request, Response, Status};

use crate::circuits::{shape_params_path, CircuitShape, ParamChoice};
use crate::proto::{self, await_proof_response::Status as AwaitStatus, proving_engine_server::ProvingEngine};
use crate::server::driver::{BadJobRef, DriverError, DriverHandle, FinalStatus, JobRef, JobRequest, JobResult};
use crate::server::journal::{Journal, OpenJob};
use crate::server::request::{payload_digest, prepare_filecoin, validate};
use crate::server::status::{Outside, ParamsTier, Snapshot};
use crate::setup::ensure_params;
use cuzk_core::circuit::{Partition, PartitionCircuit, WitnessCheck};
use cuzk_setup::timing::QueryLengths;

/// Service settings.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// Directory holding `params/`.
    pub data_dir: PathBuf,
    /// Filecoin parameter cache directory.
    pub fil_dir: PathBuf,
    /// Generate missing parameter files.
    pub generate_missing: bool,
    /// The ordinal of each device the engine schedules on.
    pub ordinals: Vec<u32>,
    /// Bench mode (`[bench]`): the witness checks of Filecoin requests are ignored (and so
    /// their proofs withheld).
    pub unchecked_witness: bool,
    /// Set when bench mode's Filecoin circuits take timing-only parameters made in memory
    /// (`bench.parameters = "memory"`): their query lengths from a partition (recording its
    /// matrices).
    pub timing_only: Option<TimingQueries>,
    /// The journal of accepted jobs, when it is on.
    pub journal: Option<Arc<Journal>>,
    /// What the listeners, the request budget and the journal add to GetMetrics.
    pub outside: Outside,
}

/// The query lengths of a circuit's timing-only parameters, from one of its partitions.
pub type SizeTimingParams = dyn Fn(&dyn PartitionCircuit) -> Result<QueryLengths, String> + Send + Sync;

/// [`SizeTimingParams`], shared.
#[derive(Clone)]
pub struct TimingQueries(pub Arc<SizeTimingParams>);

impl std::fmt::Debug for TimingQueries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TimingQueries")
    }
}

/// The gRPC service.
#[derive(Debug, Clone)]
pub struct Service {
    handle: DriverHandle,
    cfg: Arc<ServiceConfig>,
    /// `SubmitProofResponse.assigned_gpu`: the ordinal when the daemon has one device (every
    /// job runs there), else empty (the engine picks per partition, later).
    assigned_gpu: String,
}

/// The gRPC status of a driver refusal: the one place driver errors meet gRPC codes.
pub fn status_of(e: &DriverError) -> Status {
    let msg = e.to_string();
    match e {
        DriverError::ShuttingDown | DriverError::NoDevice(_) => Status::unavailable(msg),
        DriverError::MissingParams(_) | DriverError::BadParams(_) | DriverError::AlreadyEnded(_) | DriverError::Refused(_) | DriverError::LoadFailed(_) => {
            Status::failed_precondition(msg)
        }
        DriverError::TooLarge(_) | DriverError::QueueFull { .. } => Status::resource_exhausted(msg),
        DriverError::NotFound(_) => Status::not_found(msg),
        DriverError::Internal(_) => Status::internal(msg),
    }
}

impl From<DriverError> for Status {
    fn from(e: DriverError) -> Status {
        status_of(&e)
    }
}

/// An API job id that names no job, as a status.
fn bad_ref(e: BadJobRef) -> Status {
    Status::invalid_argument(e.0)
}

fn ms(d: Duration) -> u64 {
    d.as_millis().min(u128::from(u64::MAX)) as u64
}

fn to_proto(r: &JobResult) -> proto::AwaitProofResponse {
    let status = match r.status {
        FinalStatus::Completed => AwaitStatus::Completed,
        FinalStatus::Failed => AwaitStatus::Failed,
        FinalStatus::Cancelled => AwaitStatus::Cancelled,
    };
    proto::AwaitProofResponse {
        job_id: r.job_id.clone(),
        status: status as i32,
        proof: r.proof.clone(),
        error_message: r.error.clone(),
        queue_wait_ms: ms(r.queue_wait),
        srs_load_ms: ms(r.srs_load),
        synthesis_ms: ms(r.synthesis),
        gpu_compute_ms: ms(r.gpu),
        total_ms: ms(r.total),
        public_inputs: r.public_inputs.clone(),
    }
}

impl Service {
    /// A service over a running driver.
    pub fn new(handle: DriverHandle, cfg: ServiceConfig) -> Service {
        let assigned_gpu = match cfg.ordinals.as_slice() {
            [only] => only.to_string(),
            _ => String::new(),
        };
        Service { handle, cfg: Arc::new(cfg), assigned_gpu }
    }

    /// Accepts a submission: validated, its vanilla proofs checked, its parameters made when
    /// missing, submitted to the driver and journaled before the caller hears of it. A retry
    /// of a request id whose job completed before a restart answers from the journal.
    async fn accept(&self, req: proto::SubmitProofRequest) -> Result<Accepted, Status> {
        let digest = payload_digest(&req);
        let journaled = match &self.cfg.journal {
            Some(j) => {
                if !req.request_id.is_empty() && self.handle.watch(JobRef::Request(req.request_id.clone())).await?.is_none() {
                    let (j2, id) = (j.clone(), req.request_id.clone());
                    let done = tokio::task::spawn_blocking(move || j2.completed(&id, digest)).await.map_err(|e| Status::internal(e.to_string()))?;
                    if let Some(r) = done {
                        tracing::info!(job_id = %req.request_id.escape_debug(), "a request id retried after a restart: its completed result, from the journal");
                        return Ok(from_journal(r));
                    }
                }
                Some((j.clone(), req.encode_to_vec()))
            }
            None => None,
        };
        let job = validate(req)?;
        let s = Accepted::from(self.admit(job).await?);
        if let Some((j, encoded)) = journaled {
            if !j.is_open(&s.job_id) {
                let (j2, id) = (j.clone(), s.job_id.clone());
                let written = tokio::task::spawn_blocking(move || j2.accepted(&id, digest, &encoded)).await.map_err(|e| Status::internal(e.to_string()))?;
                if let Err(e) = written {
                    // Never acknowledge what a restart would lose.
                    tracing::error!(job_id = %s.job_id.escape_debug(), error = %e, "journal write failed: the job is cancelled and refused");
                    if let Ok(r) = JobRef::parse(&s.job_id) {
                        let _ = self.handle.cancel(r).await;
                    }
                    return Err(Status::unavailable(format!("{e}: the job was not accepted")));
                }
                tokio::spawn(record_end(j, s.job_id.clone(), digest, s.watch.clone()));
            }
        }
        Ok(s)
    }

    /// Prepares a validated job (its vanilla proofs checked off the runtime, its parameters
    /// made when missing and allowed) and submits it to the driver.
    async fn admit(&self, mut job: JobRequest) -> Result<crate::server::driver::Submitted, Status> {
        if job.filecoin.is_some() {
            // Parse and check the vanilla proofs before accepting: a bad request never becomes
            // a job, let alone an invalid proof.
            let (timing_only, unchecked) = (self.cfg.timing_only.clone(), self.cfg.unchecked_witness);
            job = tokio::task::spawn_blocking(move || -> Result<JobRequest, Status> {
                if unchecked {
                    job.witness = WitnessCheck::Ignore;
                }
                prepare_filecoin(&mut job)?;
                if let (Some(size), Some(f)) = (timing_only, job.filecoin.as_ref()) {
                    // The first request of a circuit records its matrices here.
                    let prepared = f.prepared.clone().ok_or_else(|| Status::internal("request not prepared"))?;
                    let first = Partition { shape: job.circuit.key(), check: job.witness, circuit: prepared.partition(0) };
                    let lengths = (size.0)(&first).map_err(|e| Status::internal(format!("sizing timing-only parameters: {e}")))?;
                    job.params = ParamChoice::TimingOnly(lengths);
                }
                Ok(job)
            })
            .await
            .map_err(|e| Status::internal(format!("checking the request: {e}")))??;
        }
        let key = job.circuit;
        let timing_only = matches!(job.params, ParamChoice::TimingOnly(_));
        let missing = !timing_only && shape_params_path(&self.cfg.data_dir, &self.cfg.fil_dir, key).is_some_and(|p| !p.exists());
        // Only built-in circuits' parameters are made here: random Filecoin parameters would
        // give proofs that pass the self-check and that no chain accepts. A missing Filecoin
        // file is refused (FAILED_PRECONDITION, naming `cuzk setup --filecoin` for tests).
        if let (true, CircuitShape::Generic(spec)) = (missing && self.cfg.generate_missing, key) {
            let dir = self.cfg.data_dir.clone();
            tokio::task::spawn_blocking(move || ensure_params(&dir, spec, false).map(|_| ()).map_err(|e| e.to_string()))
                .await
                .map_err(|e| Status::internal(e.to_string()))?
                .map_err(|e| Status::failed_precondition(format!("generating parameters: {e}")))?;
        }
        Ok(self.handle.submit(job).await?)
    }

    /// Takes up the jobs an earlier run journaled and did not end, oldest first, under the
    /// job ids they were given. One that is refused now (its circuit's parameters gone, the
    /// queue full) ends FAILED with the reason, so AwaitProof still answers for it.
    pub async fn take_up(self, open: Vec<OpenJob>) {
        let Some(journal) = self.cfg.journal.clone() else { return };
        for o in open {
            let digest = payload_digest(&o.request);
            let refused = match validate(o.request) {
                Ok(mut job) => {
                    job.request_id = o.job_id.clone();
                    job.restored = true;
                    match self.admit(job).await {
                        Ok(s) => {
                            tracing::info!(job_id = %o.job_id.escape_debug(), "journal: job taken up again");
                            tokio::spawn(record_end(journal.clone(), s.job_id, digest, s.watch));
                            continue;
                        }
                        Err(e) => e.message().to_string(),
                    }
                }
                Err(e) => e.to_string(),
            };
            tracing::error!(job_id = %o.job_id.escape_debug(), why = %refused, "journal: a job accepted before the restart is refused now");
            let r = proto::AwaitProofResponse {
                job_id: o.job_id.clone(),
                status: AwaitStatus::Failed as i32,
                error_message: format!("accepted before the daemon restarted, refused when taken up again: {refused}"),
                ..Default::default()
            };
            let (j, id) = (journal.clone(), o.job_id.clone());
            if let Ok(Err(e)) = tokio::task::spawn_blocking(move || j.ended(&id, digest, &r)).await {
                tracing::error!(error = %e, "journal: the refusal could not be recorded");
            }
        }
    }

    /// The result watch of `job`: the driver's, else one holding the journal's record of it
    /// (waiting while the job is being taken up again after a restart).
    async fn find(&self, job: &JobRef) -> Result<Option<crate::server::driver::ResultWatch>, Status> {
        loop {
            if let Some(w) = self.handle.watch(job.clone()).await? {
                return Ok(Some(w));
            }
            let Some(j) = &self.cfg.journal else { return Ok(None) };
            let (j, id) = (j.clone(), job.to_string());
            // Open before the result is read: a job that ends in between has its result found
            // (the journal closes a record and keeps its result in one step).
            let (open, found) = tokio::task::spawn_blocking(move || (j.is_open(&id), j.result(&id))).await.map_err(|e| Status::internal(e.to_string()))?;
            if let Some(r) = found {
                return Ok(Some(from_journal(r).watch));
            }
            if !open {
                return Ok(None);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn await_job(&self, job: JobRef, watch: Option<crate::server::driver::ResultWatch>, timeout_ms: u64) -> Result<proto::AwaitProofResponse, Status> {
        let watch = match watch {
            Some(w) => w,
            None => self.find(&job).await?.ok_or_else(|| Status::not_found(format!("no job {job} (never submitted, or its result was dropped)")))?,
        };
        let mut w = watch;
        let wait = async move {
            loop {
                if let Some(r) = w.borrow_and_update().clone() {
                    return Some(r);
                }
                if w.changed().await.is_err() {
                    return w.borrow().clone();
                }
            }
        };
        let r = if timeout_ms == 0 {
            wait.await
        } else {
            match tokio::time::timeout(Duration::from_millis(timeout_ms), wait).await {
                Ok(r) => r,
                Err(_) => {
                    return Ok(proto::AwaitProofResponse {
                        job_id: job.to_string(),
                        status: AwaitStatus::Timeout as i32,
                        error_message: format!("not finished after {timeout_ms} ms"),
                        ..Default::default()
                    })
                }
            }
        };
        r.map(|r| to_proto(&r)).ok_or_else(|| Status::unavailable("the daemon stopped before the job ended"))
    }
}

/// Records a job's end in the journal once it ends (a job a shutdown cancelled stays open, to
/// be taken up by the next start).
async fn record_end(journal: Arc<Journal>, job_id: String, digest: [u8; 32], mut watch: crate::server::driver::ResultWatch) {
    let Ok(r) = watch.wait_for(Option::is_some).await.map(|r| r.clone()) else { return };
    let Some(r) = r.filter(|r| !r.interrupted) else { return };
    let result = to_proto(&r);
    match tokio::task::spawn_blocking(move || journal.ended(&job_id, digest, &result)).await {
        Ok(Err(e)) => tracing::error!(error = %e, "journal: a job's end could not be recorded (a restart would prove it again)"),
        Err(e) => tracing::error!(error = %e, "journal: recording a job's end failed"),
        Ok(Ok(())) => {}
    }
}

/// A submission's answer: from the driver, or from the journal for a job that ended before a
/// restart.
struct Accepted {
    job_id: String,
    queue_position: u32,
    watch: crate::server::driver::ResultWatch,
}

impl From<crate::server::driver::Submitted> for Accepted {
    fn from(s: crate::server::driver::Submitted) -> Accepted {
        Accepted { job_id: s.job_id, queue_position: s.queue_position, watch: s.watch }
    }
}

/// A journaled result as the answer to a submission: its watch holds the result.
fn from_journal(r: proto::AwaitProofResponse) -> Accepted {
    let status = match AwaitStatus::try_from(r.status) {
        Ok(AwaitStatus::Completed) => FinalStatus::Completed,
        Ok(AwaitStatus::Cancelled) => FinalStatus::Cancelled,
        _ => FinalStatus::Failed,
    };
    let d = Duration::from_millis;
    let result = JobResult {
        job_id: r.job_id.clone(),
        status,
        proof: r.proof,
        public_inputs: r.public_inputs,
        error: r.error_message,
        queue_wait: d(r.queue_wait_ms),
        srs_load: d(r.srs_load_ms),
        synthesis: d(r.synthesis_ms),
        gpu: d(r.gpu_compute_ms),
        total: d(r.total_ms),
        interrupted: false,
    };
    let (_, watch) = tokio::sync::watch::channel(Some(Arc::new(result)));
    Accepted { job_id: r.job_id, queue_position: 0, watch }
}

/// `GetStatus` from a snapshot.
pub fn status_proto(s: &Snapshot) -> proto::GetStatusResponse {
    let gpus = s
        .devices
        .iter()
        .map(|d| proto::GpuStatus {
            ordinal: d.ordinal,
            name: d.name.clone(),
            vram_total_bytes: d.memory.capacity,
            vram_free_bytes: d.memory.capacity.saturating_sub(d.memory.used),
            current_job_id: d.current_job.clone(),
            current_proof_kind: d.current_kind.clone(),
        })
        .collect();
    let loaded_srs = s
        .params
        .iter()
        .filter(|p| p.tier != ParamsTier::Cold)
        .map(|p| proto::SrsStatus {
            circuit_id: p.circuit.clone(),
            tier: if p.tier == ParamsTier::Hot { proto::srs_status::Tier::Hot } else { proto::srs_status::Tier::Warm } as i32,
            size_bytes: p.bytes,
            ref_count: p.ref_count,
        })
        .collect();
    // One row per kind: Curio sums `pending + in_progress` over all rows for its backpressure.
    let queues = s.kinds.iter().map(|k| proto::QueueStatus { proof_kind: k.kind.clone(), pending: k.pending, in_progress: k.running }).collect();
    let priority_queues = s.queues.iter().map(|q| proto::QueueStatus { proof_kind: q.priority.clone(), pending: q.pending, in_progress: q.running }).collect();
    proto::GetStatusResponse {
        gpus,
        loaded_srs,
        queues,
        total_proofs_completed: s.jobs.completed,
        total_proofs_failed: s.jobs.failed,
        uptime_seconds: s.uptime_s as u64,
        pinned_memory_bytes: s.memory.host.used,
        pinned_memory_limit_bytes: s.memory.host.capacity,
        total_proofs_cancelled: s.jobs.cancelled,
        priority_queues,
    }
}

#[tonic::async_trait]
impl ProvingEngine for Service {
    async fn submit_proof(&self, req: Request<proto::SubmitProofRequest>) -> Result<Response<proto::SubmitProofResponse>, Status> {
        let held = req.extensions().get::<crate::server::intake::Held>().cloned();
        let s = self.accept(req.into_inner()).await;
        // The job holds its payload now, counted by the queue's limits.
        if let Some(h) = &held {
            h.release();
        }
        let s = s?;
        Ok(Response::new(proto::SubmitProofResponse { job_id: s.job_id, queue_position: s.queue_position, assigned_gpu: self.assigned_gpu.clone() }))
    }

    async fn await_proof(&self, req: Request<proto::AwaitProofRequest>) -> Result<Response<proto::AwaitProofResponse>, Status> {
        let r = req.into_inner();
        let job = JobRef::parse(&r.job_id).map_err(bad_ref)?;
        Ok(Response::new(self.await_job(job, None, r.timeout_ms).await?))
    }

    async fn prove(&self, req: Request<proto::ProveRequest>) -> Result<Response<proto::ProveResponse>, Status> {
        let held = req.extensions().get::<crate::server::intake::Held>().cloned();
        let r = req.into_inner();
        let submit = r.submit.ok_or_else(|| Status::invalid_argument("ProveRequest.submit is required"))?;
        let s = self.accept(submit).await;
        if let Some(h) = &held {
            h.release();
        }
        let s = s?;
        let result = self.await_job(JobRef::Request(s.job_id), Some(s.watch), r.timeout_ms).await?;
        Ok(Response::new(proto::ProveResponse { result: Some(result) }))
    }

    async fn cancel_proof(&self, req: Request<proto::CancelProofRequest>) -> Result<Response<proto::CancelProofResponse>, Status> {
        let job = JobRef::parse(&req.get_ref().job_id).map_err(bad_ref)?;
        let was_running = self.handle.cancel(job).await?;
        Ok(Response::new(proto::CancelProofResponse { was_running }))
    }

    async fn get_status(&self, _req: Request<proto::GetStatusRequest>) -> Result<Response<proto::GetStatusResponse>, Status> {
        Ok(Response::new(status_proto(&self.handle.snapshot().await?)))
    }

    async fn get_metrics(&self, _req: Request<proto::GetMetricsRequest>) -> Result<Response<proto::GetMetricsResponse>, Status> {
        let mut s = self.handle.snapshot().await?;
        self.cfg.outside.fill(&mut s);
        Ok(Response::new(proto::GetMetricsResponse { prometheus_text: crate::server::metrics::render(&s) }))
    }

    async fn preload_srs(&self, req: Request<proto::PreloadSrsRequest>) -> Result<Response<proto::PreloadSrsResponse>, Status> {
        let spec = CircuitShape::parse(&req.get_ref().circuit_id).map_err(|e| Status::invalid_argument(e.to_string()))?;
        let p = self.handle.preload(spec).await?;
        Ok(Response::new(proto::PreloadSrsResponse { already_loaded: p.already_loaded, load_time_ms: ms(p.load_time) }))
    }

    async fn evict_srs(&self, req: Request<proto::EvictSrsRequest>) -> Result<Response<proto::EvictSrsResponse>, Status> {
        let spec = CircuitShape::parse(&req.get_ref().circuit_id).map_err(|e| Status::invalid_argument(e.to_string()))?;
        let e = self.handle.evict(spec).await?;
        Ok(Response::new(proto::EvictSrsResponse { was_loaded: e.was_loaded, freed_bytes: e.freed_bytes }))
    }
}
