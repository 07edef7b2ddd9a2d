//! The `cuzk.v1.ProvingEngine` gRPC service.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tonic::{Request, Response, Status};

use crate::circuits::{shape_params_path, CircuitShape};
use crate::driver::{BadJobRef, DriverError, DriverHandle, FinalStatus, JobRef, JobRequest, JobResult};
use crate::proto::{self, await_proof_response::Status as AwaitStatus, proving_engine_server::ProvingEngine};
use crate::request::{prepare_filecoin, validate};
use crate::setup::ensure_params;
use crate::status::Snapshot;
use cuzk_circuits_filecoin::Prepared;
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
    /// Bench mode: Filecoin requests are prepared unchecked, and this records the circuit's
    /// matrices and gives the query lengths of its timing-only parameters.
    pub timing: Option<TimingQueries>,
}

/// Bench mode's sizing of a Filecoin circuit's timing-only parameters from a prepared job.
pub type SizeTimingParams = dyn Fn(CircuitShape, &Prepared) -> Result<QueryLengths, String> + Send + Sync;

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

impl From<BadJobRef> for Status {
    fn from(e: BadJobRef) -> Status {
        Status::invalid_argument(e.0)
    }
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

    async fn accept(&self, req: &proto::SubmitProofRequest) -> Result<crate::driver::Submitted, Status> {
        let mut job: JobRequest = validate(req)?;
        if job.filecoin.is_some() {
            // Parse and check the vanilla proofs before accepting: a bad request never becomes
            // a job, let alone an invalid proof.
            let timing = self.cfg.timing.clone();
            job = tokio::task::spawn_blocking(move || -> Result<JobRequest, Status> {
                prepare_filecoin(&mut job, timing.is_some())?;
                if let (Some(timing), Some(f)) = (timing, job.filecoin.as_mut()) {
                    // Bench mode: the first request of a circuit records its matrices here.
                    let prepared = f.prepared.clone().ok_or_else(|| Status::internal("request not prepared"))?;
                    f.timing =
                        Some((timing.0)(job.circuit, &prepared).map_err(|e| Status::internal(format!("bench mode: sizing timing-only parameters: {e}")))?);
                }
                Ok(job)
            })
            .await
            .map_err(|e| Status::internal(format!("checking the request: {e}")))??;
        }
        let key = job.circuit;
        let timing_only = self.cfg.timing.is_some() && matches!(key, CircuitShape::Filecoin(_));
        let missing = !timing_only && shape_params_path(&self.cfg.data_dir, &self.cfg.fil_dir, key).is_some_and(|p| !p.exists());
        if missing && self.cfg.generate_missing {
            let (dir, fil_dir) = (self.cfg.data_dir.clone(), self.cfg.fil_dir.clone());
            tokio::task::spawn_blocking(move || match key {
                CircuitShape::Builtin(spec) => ensure_params(&dir, spec.kind, spec.log_size, false).map(|_| ()).map_err(|e| e.to_string()),
                CircuitShape::Filecoin(f) => {
                    cuzk_circuits_filecoin::params::generate(&fil_dir, f, false, &mut rand::rngs::OsRng).map(|_| ()).map_err(|e| e.to_string())
                }
            })
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(|e| Status::failed_precondition(format!("generating parameters: {e}")))?;
        }
        Ok(self.handle.submit(job).await?)
    }

    async fn await_job(&self, job: JobRef, watch: Option<crate::driver::ResultWatch>, timeout_ms: u64) -> Result<proto::AwaitProofResponse, Status> {
        let watch = match watch {
            Some(w) => w,
            None => {
                self.handle.watch(job.clone()).await?.ok_or_else(|| Status::not_found(format!("no job {job} (never submitted, or its result was dropped)")))?
            }
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
        .filter(|p| p.tier != "cold")
        .map(|p| proto::SrsStatus {
            circuit_id: p.circuit.clone(),
            tier: if p.tier == "hot" { proto::srs_status::Tier::Hot } else { proto::srs_status::Tier::Warm } as i32,
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
        let s = self.accept(req.get_ref()).await?;
        Ok(Response::new(proto::SubmitProofResponse { job_id: s.job_id, queue_position: s.queue_position, assigned_gpu: self.assigned_gpu.clone() }))
    }

    async fn await_proof(&self, req: Request<proto::AwaitProofRequest>) -> Result<Response<proto::AwaitProofResponse>, Status> {
        let r = req.into_inner();
        let job = JobRef::parse(&r.job_id)?;
        Ok(Response::new(self.await_job(job, None, r.timeout_ms).await?))
    }

    async fn prove(&self, req: Request<proto::ProveRequest>) -> Result<Response<proto::ProveResponse>, Status> {
        let r = req.into_inner();
        let submit = r.submit.ok_or_else(|| Status::invalid_argument("ProveRequest.submit is required"))?;
        let s = self.accept(&submit).await?;
        let result = self.await_job(JobRef::Request(s.job_id), Some(s.watch), r.timeout_ms).await?;
        Ok(Response::new(proto::ProveResponse { result: Some(result) }))
    }

    async fn cancel_proof(&self, req: Request<proto::CancelProofRequest>) -> Result<Response<proto::CancelProofResponse>, Status> {
        let job = JobRef::parse(&req.get_ref().job_id)?;
        let was_running = self.handle.cancel(job).await?;
        Ok(Response::new(proto::CancelProofResponse { was_running }))
    }

    async fn get_status(&self, _req: Request<proto::GetStatusRequest>) -> Result<Response<proto::GetStatusResponse>, Status> {
        Ok(Response::new(status_proto(&self.handle.snapshot().await?)))
    }

    async fn get_metrics(&self, _req: Request<proto::GetMetricsRequest>) -> Result<Response<proto::GetMetricsResponse>, Status> {
        let s = self.handle.snapshot().await?;
        Ok(Response::new(proto::GetMetricsResponse { prometheus_text: crate::metrics::render(&s) }))
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
