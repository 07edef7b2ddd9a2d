//! Drives the sans-io job layer ([`cuzk_core::jobs::Jobs`], over the engine) from tokio: one
//! task owns it; API calls arrive as [`Command`]s, finished work as completions; after every
//! input the layer's events are executed by the [`Worker`] (synthesis and finalize on a
//! bounded CPU pool, GPU stages and parameter loads on blocking threads), and each completion
//! is fed back with its end time. Policy (retries, device health, request-id joins, the
//! low-memory hold, the watchdog) is the job layer's; the driver keeps channels, timers, the
//! stage data, proofs and results. It knows nothing of gRPC: it answers in [`DriverError`].

mod error;
mod handle;
mod job;
#[cfg(test)]
mod tests;
mod view;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use blstrs::Scalar;
use cuzk_core::circuit::{Partition, WitnessCheck};
use cuzk_core::engine::{CircuitId, EngineConfig, EngineError, JobId, Location, Nanos, PartitionId, Presence, Stage};
use cuzk_core::jobs::{Admission, EndStatus, Event, JobEnd, Jobs, JobsConfig, JobsError, Shutdown, Submission, Work as JobWork};
use cuzk_core::params::Validation;
use cuzk_core::proof::Proof;
use cuzk_worker::{catch_panics, LoadTask, ParamSource, StageInput, StageOutput, StageTask, WorkError, Worker};
use ff::PrimeField;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

pub use cuzk_core::jobs::{BadJobRef, JobRef, Recovery, MAX_REQUEST_ID};
pub use error::DriverError;
pub use handle::{Command, DriverHandle, Evicted, FinalStatus, JobResult, Preloaded, ResultWatch, Submitted};
pub use job::{FilecoinJob, JobRequest};
pub use view::DriverView;

use crate::circuits::{CircuitShape, ParamChoice, RegisterError, Registry};
use crate::config::{SelfCheck, ShutdownMode};
use crate::meminfo;
use crate::names::priority_name;
use crate::server::status::Histogram;

/// The `error_message` of a completed job whose witness checks were ignored
/// (`WitnessCheck::Ignore`), whose proof is withheld; clients (`cuzk load`) recognize it by
/// this prefix.
pub const WITHHELD_NOTE: &str = "unchecked witness and timing-only parameters: the proof is withheld (not valid)";

/// What the driver needs besides the engine configuration.
#[derive(Debug, Clone)]
pub struct DriverConfig {
    /// Directory holding `params/`.
    pub data_dir: PathBuf,
    /// Filecoin parameter cache directory.
    pub fil_dir: PathBuf,
    /// How carefully parameter files are checked.
    pub validation: Validation,
    /// Which proofs are checked with the verifying key before they are returned.
    pub self_check: SelfCheck,
    /// Retries, queues, the memory margin, results kept.
    pub jobs: JobsConfig,
    /// Where the available memory is read.
    pub meminfo: PathBuf,
    /// The engine's configuration.
    pub engine: EngineConfig,
    /// Circuits to make resident at start.
    pub preload: Vec<CircuitShape>,
    /// After a shutdown has ended every job, how long results are still served.
    pub linger: Duration,
    /// The ordinal each engine device drives, for the status (empty: 0, 1, ...).
    pub ordinals: Vec<u32>,
    /// Job numbers start here (past those an earlier run gave out, from the journal).
    pub first_job_id: u64,
    /// Job ids an earlier run ended, with their payload digests (from the journal).
    pub remembered: Vec<(String, [u8; 32])>,
}

/// What the driver keeps of a live job: its request, its proofs and its times.
struct LiveJob {
    req: JobRequest,
    circuit: CircuitId,
    submitted: Instant,
    proofs: Vec<Option<Proof>>,
    publics: Vec<Vec<Scalar>>,
    srs_wait_since: Option<Instant>,
    srs_load: Duration,
}

type PreloadWaiter = (Instant, oneshot::Sender<Result<Preloaded, DriverError>>);

/// A finished worker task (sent once through a channel, so the variants' sizes do not matter).
#[allow(clippy::large_enum_variant)]
enum Completion<D> {
    /// A stage ended.
    Stage { partition: PartitionId, stage: Stage, ended: Instant, result: Result<StageOutput<D>, WorkError> },
    /// A parameter load ended.
    Params { circuit: CircuitId, at: Location, ended: Instant, result: Result<(), WorkError> },
}

/// The job layer's owner. Generic over the worker that runs its stages.
pub struct Driver<W: Worker> {
    cfg: DriverConfig,
    jobs: Jobs,
    epoch: Instant,
    worker: Arc<W>,
    pool: Arc<rayon::ThreadPool>,
    done_tx: mpsc::UnboundedSender<Completion<W::Data>>,
    registry: Registry,
    live: HashMap<JobId, LiveJob>,
    results: HashMap<JobId, watch::Sender<Option<Arc<JobResult>>>>,
    parts: HashMap<PartitionId, W::Data>,
    loading: HashMap<(CircuitId, Location), Instant>,
    preload_waiters: HashMap<CircuitId, Vec<PreloadWaiter>>,
    latency: HashMap<CircuitId, Histogram>,
    /// A draining shutdown cancels what is left at this time.
    drain_by: Option<Instant>,
    /// When `/proc/meminfo` was last read for the job layer.
    memory_read: Option<Instant>,
}

/// The job layer's reading of the available memory is at most this old.
const MEMORY_READ_EVERY: Duration = Duration::from_millis(10);

fn scalar_bytes(s: &[Scalar]) -> Vec<u8> {
    s.iter().flat_map(|x| x.to_repr().as_ref().to_vec()).collect()
}

fn duration(n: Nanos) -> Duration {
    Duration::from_nanos(n.0)
}

fn refused(e: JobsError) -> DriverError {
    match e {
        JobsError::ShuttingDown => DriverError::ShuttingDown,
        JobsError::NoDevice(why) => DriverError::NoDevice(why),
        JobsError::QueueFull { priority, waiting, limit } => DriverError::QueueFull { priority: priority_name(priority), waiting, limit },
        JobsError::TooLarge(e) => DriverError::TooLarge(e),
        JobsError::NotFound(id) => DriverError::NotFound(id),
        JobsError::AlreadyEnded(n) => DriverError::AlreadyEnded(n),
        JobsError::Engine(e) => DriverError::Refused(e),
    }
}

/// Starts the driver task; returns its handle and the task (which ends after a shutdown once
/// every accepted job has ended).
pub fn spawn<W: Worker>(cfg: DriverConfig, worker: Arc<W>, pool: rayon::ThreadPool) -> Result<(DriverHandle, JoinHandle<()>), EngineError> {
    if worker.devices() != cfg.engine.devices.len() {
        return Err(EngineError::InvalidConfig("the worker must drive one device per configured device"));
    }
    let mut engine = cuzk_core::engine::Engine::new(cfg.engine.clone(), Nanos::ZERO)?;
    engine.number_jobs_from(cfg.first_job_id);
    let mut jobs = Jobs::new(cfg.jobs.clone(), engine);
    for (id, digest) in &cfg.remembered {
        jobs.remember(id, *digest);
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let (done_tx, done_rx) = mpsc::unbounded_channel();
    let mut d = Driver {
        cfg,
        jobs,
        epoch: Instant::now(),
        worker,
        pool: Arc::new(pool),
        done_tx,
        registry: Registry::default(),
        live: HashMap::new(),
        results: HashMap::new(),
        parts: HashMap::new(),
        loading: HashMap::new(),
        preload_waiters: HashMap::new(),
        latency: HashMap::new(),
        drain_by: None,
        memory_read: None,
    };
    for spec in d.cfg.preload.clone() {
        let (t, _rx) = oneshot::channel();
        d.preload(spec, t);
    }
    let task = tokio::spawn(d.run(rx, done_rx));
    Ok((DriverHandle { tx }, task))
}

impl<W: Worker> Driver<W> {
    fn now(&self) -> Nanos {
        self.at(Instant::now())
    }

    fn at(&self, t: Instant) -> Nanos {
        Nanos(t.saturating_duration_since(self.epoch).as_nanos().min(u64::MAX as u128) as u64)
    }

    fn instant(&self, t: Nanos) -> Instant {
        self.epoch + duration(t)
    }

    async fn run(mut self, mut cmds: mpsc::UnboundedReceiver<Command>, mut done: mpsc::UnboundedReceiver<Completion<W::Data>>) {
        loop {
            if self.jobs.shutting_down().is_some() && self.jobs.live_count() == 0 {
                break;
            }
            let timeout = self.jobs.next_timeout().map(|t| self.instant(t));
            tokio::select! {
                c = cmds.recv() => match c {
                    Some(c) => self.command(c),
                    // Every handle is gone: nobody can await results any more.
                    None => self.shutdown(ShutdownMode::Cancel, Duration::ZERO),
                },
                Some(c) = done.recv() => self.completion(c),
                _ = sleep_until(timeout), if timeout.is_some() => {
                    self.observe_memory();
                    self.jobs.tick(self.now());
                }
                _ = sleep_until(self.drain_by), if self.drain_by.is_some() => {
                    tracing::warn!("shutdown timeout: cancelling the jobs still running");
                    self.drain_by = None;
                    self.jobs.cancel_all(self.now());
                }
            }
            self.events();
        }
        let s = self.jobs.stats();
        tracing::info!(completed = s.completed, failed = s.failed, cancelled = s.cancelled, "engine stopped; every accepted job has a final status");
        // Keep answering for a moment, so a client that submitted just before the shutdown
        // can still collect its job's final status.
        let until = tokio::time::Instant::now() + self.cfg.linger;
        loop {
            tokio::select! {
                c = cmds.recv() => match c {
                    Some(c) => self.command(c),
                    None => break,
                },
                _ = tokio::time::sleep_until(until) => break,
            }
        }
    }

    fn view(&self) -> DriverView<'_> {
        DriverView {
            cfg: &self.cfg,
            jobs: &self.jobs,
            registry: &self.registry,
            device_names: (0..self.worker.devices()).map(|d| self.worker.device_name(d)).collect(),
            matrices: self.worker.matrices_info(),
            loading: self.loading.iter().map(|(k, t)| (*k, self.at(*t))).collect(),
            latency: &self.latency,
            uptime: self.epoch.elapsed(),
            now: self.now(),
        }
    }

    /// Tells the job layer the host's available memory, when it holds synthesis back on it.
    fn observe_memory(&mut self) {
        let fresh = self.memory_read.is_some_and(|t| t.elapsed() < MEMORY_READ_EVERY);
        if self.jobs.watches_memory() && !fresh {
            self.memory_read = Some(Instant::now());
            self.jobs.observe_memory(meminfo::mem_available(&self.cfg.meminfo));
        }
    }

    fn command(&mut self, c: Command) {
        self.observe_memory();
        match c {
            Command::Submit(req, reply) => {
                let r = self.submit(req);
                let _ = reply.send(r);
            }
            Command::Watch(job, reply) => {
                let w = self.jobs.resolve(&job).and_then(|j| self.results.get(&j)).map(|t| t.subscribe());
                let _ = reply.send(w);
            }
            Command::Cancel(job, reply) => {
                let r = match self.jobs.resolve(&job) {
                    Some(j) => self.jobs.cancel(j, self.now()).map_err(refused),
                    None => Err(DriverError::NotFound(job.to_string())),
                };
                let _ = reply.send(r);
            }
            Command::Preload(spec, reply) => self.preload(spec, reply),
            Command::Evict(spec, reply) => {
                let r = self.evict(spec);
                let _ = reply.send(r);
            }
            Command::Inspect(f) => f(&self.view()),
            Command::Trace(reply) => {
                let _ = reply.send(self.jobs.engine().timeline().chrome_trace());
            }
            Command::Shutdown(mode, timeout) => self.shutdown(mode, timeout),
        }
        self.events();
    }

    fn shutdown(&mut self, mode: ShutdownMode, timeout: Duration) {
        if self.jobs.shutting_down() == Some(Shutdown::Cancel) || (self.jobs.shutting_down().is_some() && mode == ShutdownMode::Drain) {
            return;
        }
        tracing::info!(?mode, live = self.jobs.live_count(), "shutting down: no new jobs accepted");
        let m = match mode {
            ShutdownMode::Drain => Shutdown::Drain,
            ShutdownMode::Cancel => Shutdown::Cancel,
        };
        self.drain_by = (mode == ShutdownMode::Drain).then(|| Instant::now() + timeout);
        self.jobs.shutdown(m, self.now());
    }

    /// Executes every pending event.
    fn events(&mut self) {
        while let Some(e) = self.jobs.poll_event() {
            match e {
                Event::Start { dispatch, job, index, check } => self.start(dispatch, job, index as usize, check),
                Event::Load { circuit, to, from_host } => self.load(circuit, to, from_host),
                Event::MatricesReserved { circuit, device, bytes } => {
                    tracing::info!(circuit = circuit.0, device = device.0, bytes, "device memory reserved for the constraint matrices");
                    self.worker.matrices_reserved(circuit, device);
                }
                Event::Evict { circuit, from } => {
                    tracing::info!(circuit = circuit.0, at = ?from, "parameters evicted");
                    self.worker.evict_params(circuit, from);
                }
                Event::AttemptEnded(attempt) => self.parts.retain(|p, _| p.job != attempt),
                Event::Retrying { job, attempt, fault, device, partitions } => {
                    tracing::warn!(job = job.0, attempt = attempt.0, cause = fault.name(), device = ?device, partitions = ?partitions, "proving the unproven partitions again")
                }
                Event::Watchdog { partition: p, stage, device } => {
                    tracing::error!(job = p.job.0, partition = p.index, stage = stage.name(), device, "stage past the watchdog: treated as a device fault")
                }
                Event::Fault { fault, device } => tracing::warn!(cause = fault.name(), device = ?device, "stage fault"),
                Event::DeviceRetired { device, why } => {
                    tracing::error!(device, name = %self.worker.device_name(device as usize), why = %why, "device taken out of service until the daemon restarts");
                    if let Some(why) = self.jobs.no_device_reason() {
                        tracing::error!("{why}: every live job fails");
                    }
                }
                Event::Held => {
                    tracing::warn!(available = ?self.jobs.mem_available(), margin = self.cfg.jobs.memory_margin, "host memory is low: synthesis of new partitions waits")
                }
                Event::Released => tracing::info!(available = ?self.jobs.mem_available(), "synthesis held back by low memory starts"),
                Event::Ended { job, end } => self.publish(job, end),
                Event::Forgotten(job) => {
                    self.results.remove(&job);
                }
            }
        }
    }

    fn fail_now(&self, partition: PartitionId, stage: Stage, reason: &str) {
        let now = Instant::now();
        let _ = self.done_tx.send(Completion::Stage { partition, stage, ended: now, result: Err(WorkError::Internal(reason.into())) });
    }

    fn start(&mut self, d: cuzk_core::engine::Dispatch, job: JobId, i: usize, check: bool) {
        let p = d.partition;
        let Some(live) = self.live.get(&job) else {
            return self.fail_now(p, d.stage, "job unknown");
        };
        let verify_with = check.then(|| live.publics.get(i).cloned().unwrap_or_default());
        let input = if d.stage == Stage::Synthesize {
            let seed = live.req.seed.wrapping_add(i as u64);
            let prepared = live.req.filecoin.as_ref().and_then(|f| f.prepared.clone());
            match (self.registry.entry(d.circuit).map(|r| r.spec), prepared) {
                (Some(CircuitShape::Generic(s)), _) => match s.partition(seed) {
                    Ok(work) => StageInput::Circuit(work),
                    Err(e) => return self.fail_now(p, d.stage, &e.to_string()),
                },
                (Some(spec @ CircuitShape::Filecoin(_)), Some(prep)) => {
                    StageInput::Circuit(Arc::new(Partition { shape: spec.key(), check: live.req.witness, circuit: prep.partition(i) }))
                }
                (Some(CircuitShape::Filecoin(_)), None) => return self.fail_now(p, d.stage, "Filecoin job not prepared"),
                (None, _) => return self.fail_now(p, d.stage, "circuit unknown"),
            }
        } else {
            match self.parts.remove(&p) {
                Some(data) => StageInput::Data(data),
                None => return self.fail_now(p, d.stage, "no data from the previous stage"),
            }
        };
        let task = StageTask { partition: p, stage: d.stage, location: d.location, circuit: d.circuit, input, verify_with, randomness: None };
        tracing::debug!(job = p.job.0, partition = p.index, stage = d.stage.name(), at = ?d.location, slot = d.slot, "stage start");
        let (tx, worker) = (self.done_tx.clone(), self.worker.clone());
        let run = move || {
            let (partition, stage) = (task.partition, task.stage);
            let started = Instant::now();
            let result = catch_panics(|| worker.run_stage(task));
            let ended = Instant::now();
            match &result {
                Ok(_) => tracing::debug!(
                    job = partition.job.0,
                    partition = partition.index,
                    stage = stage.name(),
                    ms = (ended - started).as_secs_f64() * 1e3,
                    "stage done"
                ),
                Err(e) => tracing::warn!(job = partition.job.0, partition = partition.index, stage = stage.name(), error = %e, "stage failed"),
            }
            let _ = tx.send(Completion::Stage { partition, stage, ended, result });
        };
        match d.stage {
            Stage::Synthesize | Stage::Finalize => self.pool.spawn(run),
            Stage::Upload | Stage::Ntt | Stage::Msm => {
                tokio::task::spawn_blocking(run);
            }
        }
    }

    fn load(&mut self, circuit: CircuitId, at: Location, from_host: bool) {
        let Some(reg) = self.registry.entry(circuit) else { return };
        // Parameters over the device budget are streamed (`circuits::profile`).
        let streamed = matches!(at, Location::Device(_)) && self.jobs.engine().circuit_profile(circuit).is_some_and(|p| p.params_device_host_bytes > 0);
        let task = LoadTask { circuit, at, source: reg.source.clone(), validation: self.cfg.validation, from_host, streamed };
        self.loading.insert((circuit, at), Instant::now());
        let (tx, worker) = (self.done_tx.clone(), self.worker.clone());
        tokio::task::spawn_blocking(move || {
            let t = Instant::now();
            let source = task.source.clone();
            let result = catch_panics(|| worker.load_params(task));
            match &result {
                Ok(()) => tracing::info!(circuit = circuit.0, at = ?at, params = %source, ms = t.elapsed().as_secs_f64() * 1e3, "parameters loaded"),
                Err(e) => tracing::warn!(circuit = circuit.0, at = ?at, params = %source, error = %e, "parameter load failed"),
            }
            let _ = tx.send(Completion::Params { circuit, at, ended: Instant::now(), result });
        });
    }

    fn completion(&mut self, c: Completion<W::Data>) {
        self.observe_memory();
        match c {
            Completion::Stage { partition, stage, ended, result } => {
                let t = self.at(ended);
                let r = match result {
                    Ok(out) => {
                        let mut circuit = None;
                        if let Some((job, i)) = self.jobs.partition(partition) {
                            if let Some(j) = self.live.get_mut(&job) {
                                let i = i as usize;
                                circuit = Some(j.circuit);
                                match out {
                                    StageOutput::Synthesized { data, public } => {
                                        if let Some(slot) = j.publics.get_mut(i) {
                                            *slot = public;
                                        }
                                        self.parts.insert(partition, data);
                                    }
                                    StageOutput::Proof(p) => {
                                        if let Some(slot) = j.proofs.get_mut(i) {
                                            *slot = Some(p);
                                        }
                                    }
                                    StageOutput::Data(data) => {
                                        self.parts.insert(partition, data);
                                    }
                                }
                            }
                        }
                        if let (Stage::Synthesize, Some(c)) = (stage, circuit) {
                            self.report_matrices(c, t);
                        }
                        self.jobs.stage_finished(partition, stage, t)
                    }
                    Err(e) => self.jobs.stage_failed(partition, stage, t, e.fault(), e.to_string()),
                };
                if let Err(e) = r {
                    tracing::warn!(error = %e, "engine refused a stage report");
                }
            }
            Completion::Params { circuit, at, ended, result } => {
                let since = self.loading.remove(&(circuit, at)).unwrap_or(ended);
                let t = self.at(ended);
                let r = match result {
                    Ok(()) => {
                        if at != Location::Host {
                            for j in self.live.values_mut().filter(|j| j.circuit == circuit) {
                                if let Some(s) = j.srs_wait_since.take() {
                                    j.srs_load = ended.saturating_duration_since(s);
                                }
                            }
                            for (t0, w) in self.preload_waiters.remove(&circuit).unwrap_or_default() {
                                let _ = w.send(Ok(Preloaded { already_loaded: false, load_time: ended.saturating_duration_since(t0.max(since)) }));
                            }
                        }
                        self.jobs.with_engine(t, |e, t| e.params_loaded(circuit, at, t))
                    }
                    Err(reason) => {
                        let reason = reason.to_string();
                        if matches!(at, Location::Device(_)) {
                            for (_, w) in self.preload_waiters.remove(&circuit).unwrap_or_default() {
                                let _ = w.send(Err(DriverError::LoadFailed(reason.clone())));
                            }
                        }
                        self.jobs.with_engine(t, |e, t| e.params_load_failed(circuit, at, t, reason))
                    }
                };
                if let Err(e) = r {
                    tracing::warn!(error = %e, "engine refused a load report");
                }
            }
        }
        self.events();
    }

    /// The engine's id of `spec`, registered on first use with its parameters from `params`.
    fn circuit_id(&mut self, spec: CircuitShape, params: ParamChoice) -> Result<CircuitId, DriverError> {
        if let Some(id) = self.registry.get(&spec) {
            return Ok(id);
        }
        let budget = crate::circuits::stream_budget(&self.cfg.engine);
        let (reg, profile) =
            crate::circuits::registration(&self.cfg.data_dir, &self.cfg.fil_dir, spec, params, self.worker.witness_only(), budget).map_err(|e| match e {
                RegisterError::MissingParams(m) => DriverError::MissingParams(m),
                RegisterError::BadParams(p) => DriverError::BadParams(p),
            })?;
        if let ParamSource::TimingOnly(_) = reg.source {
            tracing::warn!(circuit = %spec.id(), bytes = reg.file_bytes, "registered with timing-only parameters: no proof made with them is valid");
        }
        // Registered with the engine first: a circuit it refuses is not kept.
        let id = self.registry.next_id();
        self.jobs.with_engine(self.now(), |e, _| e.register_circuit(id, profile)).map_err(|e| match e {
            EngineError::LoadTooLarge { .. } => DriverError::TooLarge(e),
            e => DriverError::Internal(e),
        })?;
        self.registry.add(reg);
        self.report_matrices(id, self.now());
        Ok(id)
    }

    /// Tells the engine the device size of `circuit`'s matrices once the worker has recorded
    /// (or loaded) them, so that device copies include them.
    fn report_matrices(&mut self, circuit: CircuitId, t: Nanos) {
        if self.jobs.engine().matrices_bytes(circuit) != Some(0) {
            return;
        }
        let Some(bytes) = self.registry.entry(circuit).and_then(|r| self.worker.matrices_device_bytes(&r.spec.key())) else { return };
        match self.jobs.with_engine(t, |e, t| e.matrices_recorded(circuit, bytes, t)) {
            Ok(()) => tracing::info!(circuit = circuit.0, bytes, "constraint matrices counted with the parameters"),
            Err(e) => tracing::warn!(error = %e, "engine refused the matrices"),
        }
        if let Some(s) = self.jobs.engine().matrices_shortfall(circuit) {
            let name = self.registry.entry(circuit).map(|r| r.spec.id()).unwrap_or_default();
            tracing::warn!(
                circuit = %name,
                device = s.device.0,
                needed = s.needed,
                usable = s.usable,
                "constraint matrices ({bytes} bytes) fit no device beside the parameters and one partition: every partition evaluates a, b, c on the host and copies them \
                 (several times slower: docs/operating.md, GPU memory); engine.device_memory_bytes = {} would keep them on device {} where the card has that much for cuzk alone",
                s.budget_needed(),
                s.device.0
            );
        }
    }

    fn submit(&mut self, req: JobRequest) -> Result<Submitted, DriverError> {
        let sub = Submission { request_id: req.request_id.clone(), payload: req.payload, restored: req.restored, priority: req.priority };
        let ticket = match self.jobs.admit(sub).map_err(refused)? {
            Admission::Joined { job, job_id } => {
                let watch = self.results.get(&job).ok_or_else(|| DriverError::NotFound(job_id.clone()))?.subscribe();
                tracing::info!(job = job.0, job_id = %job_id.escape_debug(), "joined the job of the same request id and payload");
                return Ok(Submitted { job, job_id, queue_position: 0, watch });
            }
            Admission::New(t) => t,
        };
        let circuit = self.circuit_id(req.circuit, req.params)?;
        let work = JobWork {
            circuit,
            partitions: req.partitions,
            deadline: req.deadline.map(|d| Nanos(d.as_nanos().min(u64::MAX as u128) as u64)),
            check: self.cfg.self_check.applies(req.filecoin.is_some(), req.witness),
            kind: req.kind,
        };
        let hot = self.jobs.engine().tier(circuit) == Some(cuzk_core::engine::Tier::Hot);
        let a = self.jobs.submit(ticket, work, self.now()).map_err(refused)?;
        tracing::info!(job = a.job.0, job_id = %a.job_id.escape_debug(), circuit = %req.circuit.id(), priority = priority_name(req.priority), partitions = req.partitions, "job accepted");
        let (tx, rx) = watch::channel(None);
        self.results.insert(a.job, tx);
        let n = req.partitions as usize;
        let live = LiveJob {
            req,
            circuit,
            submitted: Instant::now(),
            proofs: vec![None; n],
            publics: vec![Vec::new(); n],
            srs_wait_since: (!hot).then(Instant::now),
            srs_load: Duration::ZERO,
        };
        self.live.insert(a.job, live);
        Ok(Submitted { job: a.job, job_id: a.job_id, queue_position: a.queue_position, watch: rx })
    }

    /// Publishes the job's one final result.
    fn publish(&mut self, job: JobId, end: JobEnd) {
        let Some(j) = self.live.remove(&job) else { return };
        let total = j.submitted.elapsed();
        let status = match end.status {
            EndStatus::Completed => FinalStatus::Completed,
            EndStatus::Failed => FinalStatus::Failed,
            EndStatus::Cancelled => FinalStatus::Cancelled,
        };
        let mut res = JobResult {
            job_id: end.job_id,
            status,
            proof: Vec::new(),
            public_inputs: j.publics.iter().map(|p| scalar_bytes(p)).collect(),
            error: end.error,
            queue_wait: duration(end.queue_wait),
            srs_load: j.srs_load,
            synthesis: duration(end.synthesis),
            gpu: duration(end.gpu),
            total,
            interrupted: end.interrupted,
        };
        if status == FinalStatus::Completed {
            if j.req.witness == WitnessCheck::Ignore {
                // Never hand these proofs out as if valid.
                res.error = format!("{WITHHELD_NOTE} ({} partitions proved)", j.proofs.len());
            } else {
                res.proof = j.proofs.iter().flatten().flat_map(|p| p.to_bytes()).collect();
            }
            let name = self.registry.entry(j.circuit).map(|r| r.spec.id()).unwrap_or_default();
            self.latency.entry(j.circuit).or_insert_with(|| Histogram::new(name)).observe(total.as_secs_f64());
        }
        tracing::info!(job = job.0, job_id = %res.job_id.escape_debug(), status = ?res.status, total_ms = total.as_millis() as u64, error = %res.error, "job ended");
        if let Some(tx) = self.results.get(&job) {
            tx.send_replace(Some(Arc::new(res)));
        }
    }

    fn preload(&mut self, spec: CircuitShape, reply: oneshot::Sender<Result<Preloaded, DriverError>>) {
        if self.jobs.shutting_down().is_some() {
            let _ = reply.send(Err(DriverError::ShuttingDown));
            return;
        }
        let id = match self.circuit_id(spec, ParamChoice::File) {
            Ok(id) => id,
            Err(e) => {
                tracing::warn!(circuit = %spec.id(), error = %e, "preload refused");
                let _ = reply.send(Err(e));
                return;
            }
        };
        match self.jobs.with_engine(self.now(), |e, t| e.preload_anywhere(id, t)) {
            Ok(Presence::Resident) => drop(reply.send(Ok(Preloaded { already_loaded: true, load_time: Duration::ZERO }))),
            Ok(_) => self.preload_waiters.entry(id).or_default().push((Instant::now(), reply)),
            Err(e) => drop(reply.send(Err(DriverError::TooLarge(e)))),
        }
    }

    fn evict(&mut self, spec: CircuitShape) -> Result<Evicted, DriverError> {
        let Some(id) = self.registry.get(&spec) else { return Ok(Evicted { was_loaded: false, freed_bytes: 0 }) };
        let bytes = self.registry.entry(id).map_or(0, |r| r.file_bytes);
        let gone = self.jobs.with_engine(self.now(), |e, t| e.evict_everywhere(id, t)).map_err(DriverError::Refused)?;
        Ok(Evicted { was_loaded: gone > 0, freed_bytes: bytes * u64::from(gone) })
    }
}

async fn sleep_until(t: Option<Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t.into()).await,
        None => std::future::pending().await,
    }
}
