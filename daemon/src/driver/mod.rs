//! Drives the sans-io engine from tokio: one task owns the [`Engine`]; API calls arrive as
//! [`Command`]s, finished work as completions; after every input the engine's actions are
//! drained and handed to the [`Worker`] (synthesis and finalize on a bounded CPU pool, GPU
//! stages and parameter loads on blocking threads), and each completion is fed back with its
//! end time. The driver knows nothing of gRPC: it answers in [`DriverError`].

pub(crate) mod admission;
mod ending;
mod error;
mod handle;
mod job;
mod recovery;
mod snapshot;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use blstrs::Scalar;
use cuzk_core::engine::{
    Action, CircuitId, Dispatch, Engine, EngineConfig, EngineError, JobId, JobKind, JobSpec, Location, Nanos, PartitionId, Presence, Stage, Tier,
};
use cuzk_core::params::Validation;
use cuzk_core::proof::Proof;
use cuzk_worker::{catch_panics, LoadTask, StageInput, StageOutput, StageTask, Work, WorkError, Worker};
use ff::PrimeField;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

pub use ending::BENCH_MODE_NOTE;
pub use error::DriverError;
pub use handle::{Command, DriverHandle, Evicted, FinalStatus, JobResult, Preloaded, ResultWatch, Submitted};
pub use job::{BadJobRef, FilecoinJob, JobRef, JobRequest, MAX_REQUEST_ID};
pub use recovery::{DeviceHealth, Fault, Recovery};

use crate::circuits::{params_layout, params_log_size, CircuitShape, Registry};
use crate::config::{SelfCheck, ShutdownMode};
use crate::names::priority_name;
use crate::setup::params_path;
use crate::status::{Histogram, JobCounts};
use cuzk_setup::timing::QueryLengths;

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
    /// Retries, watchdog and device retirement.
    pub recovery: Recovery,
    /// Jobs accepted and not started, per priority.
    pub queue_limit: u32,
    /// Non-CRITICAL synthesis waits while the host's available memory is below this (0: never).
    pub memory_margin: u64,
    /// Where the available memory is read.
    pub meminfo: PathBuf,
    /// Finished job results kept for AwaitProof.
    pub keep_results: usize,
    /// The engine's configuration.
    pub engine: EngineConfig,
    /// Circuits to make resident at start.
    pub preload: Vec<CircuitShape>,
    /// After a shutdown has ended every job, how long results are still served.
    pub linger: Duration,
    /// The ordinal each engine device drives, for the status (empty: 0, 1, ...).
    pub ordinals: Vec<u32>,
    /// Bench mode (`[bench]`): Filecoin circuits have timing-only parameters, their proofs
    /// are not self-checked and are withheld.
    pub bench: bool,
    /// Job numbers start here (past those an earlier run gave out, from the journal).
    pub first_job_id: u64,
}

struct LiveJob {
    req: JobRequest,
    circuit: CircuitId,
    submitted: Instant,
    started: bool,
    proofs: Vec<Option<Proof>>,
    publics: Vec<Vec<Scalar>>,
    synth: Duration,
    gpu: Duration,
    srs_wait_since: Option<Instant>,
    srs_load: Duration,
    /// The engine job proving its unproven partitions now (its first one is the API's job).
    attempt: JobId,
    /// The job's partition index of each of the attempt's partitions.
    index_map: Vec<u32>,
    /// Attempts started after device faults, and after failed self-checks.
    retries: u32,
    rechecks: u32,
    /// Why the current attempt is failing, and on which device.
    fault: Option<(Fault, Option<u32>)>,
    /// The device each partition's GPU stages last ran on.
    devices: Vec<Option<u32>>,
    /// The deadline on the engine clock.
    deadline_at: Option<Nanos>,
    /// The caller cancelled it.
    cancelled: bool,
}

struct Running {
    stage: Stage,
    location: Location,
    slot: u32,
    start: Instant,
    circuit: CircuitId,
    /// The watchdog has given up on it (it still reports when it ends).
    timed_out: bool,
}

type PreloadWaiter = (Instant, oneshot::Sender<Result<Preloaded, DriverError>>);

/// A finished worker task (sent once through a channel, so the variants' sizes do not matter).
#[allow(clippy::large_enum_variant)]
enum Completion<D> {
    /// A stage ended.
    Stage { partition: PartitionId, stage: Stage, started: Instant, ended: Instant, result: Result<StageOutput<D>, WorkError> },
    /// A parameter load ended.
    Params { circuit: CircuitId, at: Location, ended: Instant, result: Result<(), WorkError> },
}

/// The engine's owner. Generic over the worker that runs the engine's actions.
pub struct Driver<W: Worker> {
    cfg: DriverConfig,
    engine: Engine,
    epoch: Instant,
    worker: Arc<W>,
    pool: Arc<rayon::ThreadPool>,
    done_tx: mpsc::UnboundedSender<Completion<W::Data>>,
    registry: Registry,
    jobs: HashMap<JobId, LiveJob>,
    results: HashMap<JobId, watch::Sender<Option<Arc<JobResult>>>>,
    ended: VecDeque<(JobId, String)>,
    /// Per job id of a request (the request id for its first payload, `<id>#n` for its n-th),
    /// the newest job of that payload and the payload's digest.
    request_ids: HashMap<String, (JobId, [u8; 32])>,
    /// Per request id, how many payloads it has named.
    payloads: HashMap<String, u32>,
    /// Per API proof kind: completed, failed, and the summed seconds of the completed.
    kind_totals: HashMap<&'static str, KindTotals>,
    parts: HashMap<PartitionId, W::Data>,
    running: HashMap<PartitionId, Running>,
    loading: HashMap<(CircuitId, Location), Instant>,
    preload_waiters: HashMap<CircuitId, Vec<PreloadWaiter>>,
    counts: JobCounts,
    stage_totals: [(u64, f64); 5],
    latency: HashMap<CircuitId, Histogram>,
    draining: Option<(ShutdownMode, Instant)>,
    /// Per engine job (attempt), the API job it proves for.
    attempts: HashMap<JobId, JobId>,
    /// One per device.
    health: Vec<DeviceHealth>,
    /// Further attempts started, per cause.
    retried: BTreeMap<&'static str, u64>,
    /// Proofs that failed their self-check.
    self_check_failures: u64,
    /// Submissions refused by a full queue.
    queue_refusals: u64,
    /// Synthesis dispatched while the host's available memory was low, not started yet.
    deferred: VecDeque<Dispatch>,
    /// The last available memory read, bytes.
    mem_available: Option<u64>,
}

/// Completed and failed jobs of one proof kind.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct KindTotals {
    pub(crate) completed: u64,
    pub(crate) failed: u64,
    /// Summed submission-to-end seconds of the completed jobs.
    pub(crate) seconds: f64,
}

/// The job id of a request id's `n`-th payload (from 1): the request id itself, then `<id>#n`.
fn payload_job_id(request_id: &str, n: u32) -> String {
    if n <= 1 {
        request_id.to_string()
    } else {
        format!("{request_id}#{n}")
    }
}

/// A job's API id: its request id (`<id>#n` for a later payload), or its number when it has
/// none.
fn api_id(job: JobId, req: &JobRequest) -> String {
    if req.request_id.is_empty() {
        job.0.to_string()
    } else {
        req.request_id.clone()
    }
}

fn stage_index(s: Stage) -> usize {
    Stage::ALL.iter().position(|x| *x == s).unwrap_or(0)
}

fn scalar_bytes(s: &[Scalar]) -> Vec<u8> {
    s.iter().flat_map(|x| x.to_repr().as_ref().to_vec()).collect()
}

/// Starts the driver task; returns its handle and the task (which ends after a shutdown once
/// every accepted job has ended).
pub fn spawn<W: Worker>(cfg: DriverConfig, worker: Arc<W>, pool: rayon::ThreadPool) -> Result<(DriverHandle, JoinHandle<()>), EngineError> {
    let epoch = Instant::now();
    let mut engine = Engine::new(cfg.engine.clone(), Nanos::ZERO)?;
    engine.number_jobs_from(cfg.first_job_id);
    if worker.devices() != cfg.engine.devices.len() {
        return Err(EngineError::InvalidConfig("the worker must drive one device per configured device"));
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let (done_tx, done_rx) = mpsc::unbounded_channel();
    let cfg_devices = worker.devices();
    let mut d = Driver {
        cfg,
        engine,
        epoch,
        worker,
        pool: Arc::new(pool),
        done_tx,
        registry: Registry::default(),
        jobs: HashMap::new(),
        results: HashMap::new(),
        ended: VecDeque::new(),
        request_ids: HashMap::new(),
        payloads: HashMap::new(),
        kind_totals: HashMap::new(),
        parts: HashMap::new(),
        running: HashMap::new(),
        loading: HashMap::new(),
        preload_waiters: HashMap::new(),
        counts: JobCounts::default(),
        stage_totals: [(0, 0.0); 5],
        latency: HashMap::new(),
        draining: None,
        attempts: HashMap::new(),
        health: vec![DeviceHealth::default(); cfg_devices],
        retried: BTreeMap::new(),
        self_check_failures: 0,
        queue_refusals: 0,
        deferred: VecDeque::new(),
        mem_available: None,
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
        self.epoch + Duration::from_nanos(t.0)
    }

    async fn run(mut self, mut cmds: mpsc::UnboundedReceiver<Command>, mut done: mpsc::UnboundedReceiver<Completion<W::Data>>) {
        loop {
            if self.draining.is_some() && self.engine.live_jobs() == 0 {
                break;
            }
            let deadline = self.engine.next_deadline().map(|t| self.instant(t));
            let drain_by = match self.draining {
                Some((ShutdownMode::Drain, by)) => Some(by),
                _ => None,
            };
            let watchdog = self.watchdog_deadline();
            let recheck = (!self.deferred.is_empty()).then(|| Instant::now() + admission::MEMORY_RECHECK);
            tokio::select! {
                c = cmds.recv() => match c {
                    Some(c) => self.command(c),
                    // Every handle is gone: nobody can await results any more.
                    None => self.start_shutdown(ShutdownMode::Cancel, Duration::ZERO),
                },
                Some(c) = done.recv() => self.completion(c),
                _ = sleep_until(deadline), if deadline.is_some() => {
                    let now = self.now();
                    self.engine.tick(now);
                    self.drain();
                }
                _ = sleep_until(drain_by), if drain_by.is_some() => {
                    tracing::warn!("shutdown timeout: cancelling the jobs still running");
                    self.cancel_all();
                }
                _ = sleep_until(watchdog), if watchdog.is_some() => self.watchdog(),
                _ = sleep_until(recheck), if recheck.is_some() => self.start_deferred(),
            }
        }
        tracing::info!(
            completed = self.counts.completed,
            failed = self.counts.failed,
            cancelled = self.counts.cancelled,
            "engine stopped; every accepted job has a final status"
        );
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

    fn command(&mut self, c: Command) {
        match c {
            Command::Submit(req, reply) => {
                let r = self.submit(req);
                let _ = reply.send(r);
            }
            Command::Watch(job, reply) => {
                let w = self.resolve(&job).and_then(|j| self.results.get(&j)).map(|t| t.subscribe());
                let _ = reply.send(w);
            }
            Command::Cancel(job, reply) => {
                let r = match self.resolve(&job) {
                    Some(j) => self.cancel(j),
                    None => Err(DriverError::NotFound(job.to_string())),
                };
                let _ = reply.send(r);
            }
            Command::Preload(spec, reply) => self.preload(spec, reply),
            Command::Evict(spec, reply) => {
                let r = self.evict(spec);
                let _ = reply.send(r);
            }
            Command::Snapshot(reply) => {
                let _ = reply.send(self.snapshot());
            }
            Command::Trace(reply) => {
                let _ = reply.send(self.engine.timeline().chrome_trace());
            }
            Command::Shutdown(mode, timeout) => self.start_shutdown(mode, timeout),
        }
    }

    fn start_shutdown(&mut self, mode: ShutdownMode, timeout: Duration) {
        let upgrade = matches!(self.draining, Some((ShutdownMode::Drain, _))) && mode == ShutdownMode::Cancel;
        if self.draining.is_some() && !upgrade {
            return;
        }
        tracing::info!(?mode, live = self.engine.live_jobs(), "shutting down: no new jobs accepted");
        self.draining = Some((mode, Instant::now() + timeout));
        if mode == ShutdownMode::Cancel {
            self.cancel_all();
        }
    }

    fn cancel_all(&mut self) {
        let mut ids: Vec<(JobId, JobId)> = self.jobs.iter().map(|(id, j)| (*id, j.attempt)).collect();
        ids.sort();
        for (id, attempt) in ids {
            if let Some(j) = self.jobs.get_mut(&id) {
                j.cancelled = true;
            }
            let now = self.now();
            let _ = self.engine.cancel(attempt, now);
            self.drain();
        }
    }

    /// Executes every pending action (the drain rule).
    fn drain(&mut self) {
        while let Some(a) = self.engine.poll_action() {
            self.execute(a);
        }
    }

    fn execute(&mut self, a: Action) {
        match a {
            Action::Start(d) => self.start(d),
            // Buffers move with the partition's data from stage to stage and are dropped
            // when the stage that consumes them ends, so there is nothing to free here.
            Action::Release { .. } => {}
            Action::LoadParams { circuit, to, from_host, .. } => self.load(circuit, to, from_host),
            Action::MatricesReserved { circuit, device, bytes } => {
                tracing::info!(circuit = circuit.0, device = device.0, bytes, "device memory reserved for the constraint matrices");
                self.worker.matrices_reserved(circuit, device);
            }
            Action::EvictParams { circuit, from, .. } => {
                tracing::info!(circuit = circuit.0, at = ?from, "parameters evicted");
                self.worker.evict_params(circuit, from);
            }
            Action::JobEnded { job, outcome } => self.job_ended(job, outcome),
        }
    }

    fn fail_now(&self, partition: PartitionId, stage: Stage, reason: &str) {
        self.fail_with(partition, stage, WorkError::Internal(reason.into()));
    }

    fn fail_with(&self, partition: PartitionId, stage: Stage, e: WorkError) {
        let now = Instant::now();
        let _ = self.done_tx.send(Completion::Stage { partition, stage, started: now, ended: now, result: Err(e) });
    }

    /// The API job and partition index of an attempt's partition, while that attempt is the
    /// job's current one.
    fn api_part(&self, p: PartitionId) -> Option<(JobId, usize)> {
        let api = *self.attempts.get(&p.job)?;
        let j = self.jobs.get(&api).filter(|j| j.attempt == p.job)?;
        Some((api, *j.index_map.get(p.index as usize)? as usize))
    }

    fn checks(&self, req: &JobRequest) -> bool {
        if self.cfg.bench && req.filecoin.is_some() {
            // Timing-only parameters: no proof could pass.
            return false;
        }
        match self.cfg.self_check {
            SelfCheck::All => true,
            SelfCheck::Filecoin => req.filecoin.is_some(),
            SelfCheck::Off => false,
        }
    }

    /// The host's available memory is below the margin (read now).
    fn memory_low(&mut self) -> bool {
        if self.cfg.memory_margin == 0 {
            return false;
        }
        self.mem_available = admission::mem_available(&self.cfg.meminfo);
        self.mem_available.is_some_and(|a| a < self.cfg.memory_margin)
    }

    /// Starts the synthesis held back by low memory once memory is back (or its job ended).
    fn start_deferred(&mut self) {
        // A CRITICAL job waiting for a synthesis worker would wait behind the held ones.
        let critical_waiting = self.jobs.values().any(|j| j.req.priority == cuzk_core::engine::Priority::Critical && !j.started);
        let low = self.memory_low() && !critical_waiting;
        let mut keep = VecDeque::new();
        while let Some(d) = self.deferred.pop_front() {
            let live = self.api_part(d.partition).is_some();
            if low && live {
                keep.push_back(d);
            } else {
                if live {
                    tracing::info!(job = d.partition.job.0, partition = d.partition.index, available = ?self.mem_available, "host memory available again: synthesis starts");
                }
                self.run_start(d);
            }
        }
        self.deferred = keep;
    }

    fn start(&mut self, d: Dispatch) {
        if d.stage == Stage::Synthesize && self.api_part(d.partition).is_some() {
            let critical =
                self.api_part(d.partition).and_then(|(api, _)| self.jobs.get(&api)).is_some_and(|j| j.req.priority == cuzk_core::engine::Priority::Critical);
            if !critical && (!self.deferred.is_empty() || self.memory_low()) {
                if self.deferred.is_empty() {
                    tracing::warn!(available = ?self.mem_available, margin = self.cfg.memory_margin, "host memory is low: synthesis of new partitions waits");
                }
                self.deferred.push_back(d);
                return;
            }
        }
        self.run_start(d);
    }

    fn run_start(&mut self, d: Dispatch) {
        let p = d.partition;
        let Some((api, i)) = self.api_part(p) else {
            // A stage of an attempt that has ended (its job was cancelled or is retried).
            return self.fail_now(p, d.stage, "job ended");
        };
        let checks = d.stage == Stage::Finalize && self.jobs.get(&api).is_some_and(|j| self.checks(&j.req));
        let Some(job) = self.jobs.get_mut(&api) else {
            return self.fail_now(p, d.stage, "job unknown");
        };
        job.started = true;
        let verify_with = checks.then(|| job.publics.get(i).cloned().unwrap_or_default());
        let input = if d.stage == Stage::Synthesize {
            let seed = job.req.seed.wrapping_add(i as u64);
            let prepared = job.req.filecoin.as_ref().and_then(|f| f.prepared.clone());
            match (self.registry.entry(d.circuit).map(|r| r.spec), prepared) {
                (Some(CircuitShape::Builtin(s)), _) => StageInput::Circuit(Work::Builtin(s, seed)),
                (Some(CircuitShape::Filecoin(f)), Some(prep)) => StageInput::Circuit(Work::Filecoin(f, prep.partition(i))),
                (Some(CircuitShape::Filecoin(_)), None) => return self.fail_now(p, d.stage, "Filecoin job not prepared"),
                (None, _) => return self.fail_now(p, d.stage, "circuit unknown"),
            }
        } else {
            match self.parts.remove(&p) {
                Some(data) => StageInput::Data(data),
                None => return self.fail_now(p, d.stage, "no data from the previous stage"),
            }
        };
        self.running.insert(p, Running { stage: d.stage, location: d.location, slot: d.slot, start: Instant::now(), circuit: d.circuit, timed_out: false });
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
            let _ = tx.send(Completion::Stage { partition, stage, started, ended, result });
        };
        match d.stage {
            Stage::Synthesize | Stage::Finalize => self.pool.spawn(run),
            Stage::Upload | Stage::Ntt | Stage::Msm => {
                tokio::task::spawn_blocking(run);
            }
        }
    }

    fn load(&mut self, circuit: CircuitId, at: Location, from_host: bool) {
        let Some(reg) = self.registry.entry(circuit) else {
            return;
        };
        // Parameters over the device budget are streamed (`circuits::profile`).
        let streamed = matches!(at, Location::Device(_)) && self.engine.circuit_profile(circuit).is_some_and(|p| p.params_device_host_bytes > 0);
        let task = LoadTask { circuit, at, path: reg.path.clone(), validation: self.cfg.validation, from_host, streamed };
        self.loading.insert((circuit, at), Instant::now());
        let (tx, worker) = (self.done_tx.clone(), self.worker.clone());
        tokio::task::spawn_blocking(move || {
            let t = Instant::now();
            let path = task.path.clone();
            let result = catch_panics(|| worker.load_params(task));
            match &result {
                Ok(()) => tracing::info!(circuit = circuit.0, at = ?at, path = %path.display(), ms = t.elapsed().as_secs_f64() * 1e3, "parameters loaded"),
                Err(e) => tracing::warn!(circuit = circuit.0, at = ?at, path = %path.display(), error = %e, "parameter load failed"),
            }
            let _ = tx.send(Completion::Params { circuit, at, ended: Instant::now(), result });
        });
    }

    fn completion(&mut self, c: Completion<W::Data>) {
        match c {
            Completion::Stage { partition, stage, started, ended, result } => {
                let run = self.running.remove(&partition);
                let timed_out = run.as_ref().is_some_and(|r| r.timed_out);
                let circuit = run.as_ref().map(|r| r.circuit);
                let device = match run.map(|r| r.location) {
                    Some(Location::Device(d)) => Some(d.0),
                    _ => None,
                };
                let took = ended.saturating_duration_since(started);
                let t = self.at(ended);
                let api = self.api_part(partition);
                let i = api.map_or(0, |(_, i)| i);
                let r = match result {
                    Ok(data) => {
                        let tot = &mut self.stage_totals[stage_index(stage)];
                        tot.0 += 1;
                        tot.1 += took.as_secs_f64();
                        // A device's record is clean again once a partition's MSM succeeds there.
                        if let Some(h) = device.and_then(|d| self.health.get_mut(d as usize)).filter(|_| !timed_out && stage == Stage::Msm) {
                            h.success();
                        }
                        if let Some(j) = api.and_then(|(api, _)| self.jobs.get_mut(&api)) {
                            if let (Some(d), Some(slot)) = (device, j.devices.get_mut(i)) {
                                *slot = Some(d);
                            }
                            match stage {
                                Stage::Synthesize => j.synth += took,
                                Stage::Upload | Stage::Ntt | Stage::Msm => j.gpu += took,
                                Stage::Finalize => {}
                            }
                            match data {
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
                        if let (Stage::Synthesize, Some(c)) = (stage, circuit) {
                            self.report_matrices(c, t);
                        }
                        self.engine.stage_finished(partition, stage, t)
                    }
                    Err(reason) => {
                        if !timed_out {
                            self.stage_fault(api, device, &reason);
                        }
                        self.engine.stage_failed(partition, stage, t, reason.to_string())
                    }
                };
                if let Err(e) = r {
                    tracing::warn!(error = %e, "engine refused a stage report");
                }
            }
            Completion::Params { circuit, at, ended, result } => {
                let since = self.loading.remove(&(circuit, at)).unwrap_or(ended);
                let t = self.at(ended);
                let r = match result {
                    Ok(()) if at == Location::Host => self.engine.params_loaded(circuit, at, t),
                    Ok(()) => {
                        for j in self.jobs.values_mut().filter(|j| j.circuit == circuit) {
                            if let Some(s) = j.srs_wait_since.take() {
                                j.srs_load = ended.saturating_duration_since(s);
                            }
                        }
                        for (t0, w) in self.preload_waiters.remove(&circuit).unwrap_or_default() {
                            let load_time = ended.saturating_duration_since(t0.max(since));
                            let _ = w.send(Ok(Preloaded { already_loaded: false, load_time }));
                        }
                        self.engine.params_loaded(circuit, at, t)
                    }
                    Err(reason) => {
                        let reason = reason.to_string();
                        if matches!(at, Location::Device(_)) {
                            for (_, w) in self.preload_waiters.remove(&circuit).unwrap_or_default() {
                                let _ = w.send(Err(DriverError::LoadFailed(reason.clone())));
                            }
                        }
                        self.engine.params_load_failed(circuit, at, t, reason)
                    }
                };
                if let Err(e) = r {
                    tracing::warn!(error = %e, "engine refused a load report");
                }
            }
        }
        self.drain();
    }

    /// The engine's id of `spec`, registered on first use. `timing`: in bench mode, the query
    /// lengths of a Filecoin circuit's timing-only parameters (from its request's preparation).
    fn circuit_id(&mut self, spec: CircuitShape, timing: Option<QueryLengths>) -> Result<CircuitId, DriverError> {
        if let Some(id) = self.registry.get(&spec) {
            return Ok(id);
        }
        let budget = crate::circuits::stream_budget(&self.cfg.engine);
        let witness_only = self.worker.witness_only(spec);
        let (reg, profile) = if let (true, CircuitShape::Filecoin(f)) = (self.cfg.bench, spec) {
            // Bench mode: timing-only parameters, generated by the worker when loaded.
            let q = timing.ok_or_else(|| {
                DriverError::MissingParams(format!(
                    "bench mode: {} has timing-only parameters, sized by its first request (preloading is not possible)",
                    f.id()
                ))
            })?;
            tracing::warn!(circuit = %spec.id(), bytes = q.file_bytes(), log_domain = q.log_domain, "bench mode: registered with timing-only parameters");
            let profile = crate::circuits::profile(q.log_domain, q.file_bytes(), q.largest_query_bytes(), witness_only, budget);
            (crate::circuits::timing_only(spec, q.file_bytes()), profile)
        } else {
            let Some(reg) = crate::circuits::locate(&self.cfg.data_dir, &self.cfg.fil_dir, spec) else {
                return Err(DriverError::MissingParams(match spec {
                    CircuitShape::Builtin(spec) => format!(
                        "no parameter file for {} at {}; run `cuzk setup --circuit {} --log-size {}` or set params.generate_missing",
                        spec.id(),
                        params_path(&self.cfg.data_dir, spec.kind, spec.log_size).display(),
                        spec.kind.name(),
                        spec.log_size
                    ),
                    CircuitShape::Filecoin(f) => format!(
                        "no parameter file for {} in the Filecoin parameter cache {}; run `cuzk setup --filecoin {}` or set params.generate_missing",
                        f.id(),
                        self.cfg.fil_dir.display(),
                        f.id()
                    ),
                }));
            };
            let layout = params_layout(&reg.path).ok_or_else(|| DriverError::BadParams(reg.path.clone()))?;
            let log_size = match spec {
                CircuitShape::Builtin(s) => s.log_size,
                CircuitShape::Filecoin(_) => params_log_size(&layout).ok_or_else(|| DriverError::BadParams(reg.path.clone()))?,
            };
            let profile = crate::circuits::profile(log_size, reg.file_bytes, layout.largest_query_bytes(), witness_only, budget);
            (reg, profile)
        };
        // Registered with the engine first: a circuit it refuses is not kept.
        let id = self.registry.next_id();
        self.engine.register_circuit(id, profile).map_err(|e| match e {
            EngineError::LoadTooLarge { .. } => DriverError::TooLarge(e),
            e => DriverError::Internal(e),
        })?;
        self.registry.add(reg);
        self.worker.circuit_registered(id, spec);
        self.report_matrices(id, self.now());
        Ok(id)
    }

    /// Tells the engine the device size of `circuit`'s matrices once the worker has recorded
    /// (or loaded) them, so that device copies include them (an input of its own, drained).
    fn report_matrices(&mut self, circuit: CircuitId, t: Nanos) {
        if self.engine.matrices_bytes(circuit) != Some(0) {
            return;
        }
        let Some(bytes) = self.registry.entry(circuit).and_then(|r| self.worker.matrices_device_bytes(r.spec)) else { return };
        match self.engine.matrices_recorded(circuit, bytes, t) {
            Ok(()) => tracing::info!(circuit = circuit.0, bytes, "constraint matrices counted with the parameters"),
            Err(e) => tracing::warn!(error = %e, "engine refused the matrices"),
        }
        self.drain();
    }

    fn submit(&mut self, mut req: JobRequest) -> Result<Submitted, DriverError> {
        if self.draining.is_some() {
            return Err(DriverError::ShuttingDown);
        }
        // Curio reuses a request id on every retry: the same payload joins a live or completed
        // job; after a failed or cancelled one it is proved again under the same job id. Another
        // payload is proved as a job of its own, `<id>#n`, so no caller awaiting the first
        // payload's job id is ever handed the proof of another statement.
        let mut new_payload = None;
        if req.restored {
            // The id an earlier run gave it; a later payload of its request id numbers on.
            if let Some((base, n)) = req.request_id.rsplit_once('#').and_then(|(b, n)| Some((b.to_string(), n.parse::<u32>().ok()?))) {
                new_payload = Some((base, n));
            } else if !req.request_id.bytes().all(|b| b.is_ascii_digit()) {
                new_payload = Some((req.request_id.clone(), 1));
            }
        } else if !req.request_id.is_empty() {
            let seen = self.payloads.get(&req.request_id).copied().unwrap_or(0);
            let same = (1..=seen).map(|n| payload_job_id(&req.request_id, n)).find(|id| self.request_ids.get(id).is_some_and(|e| e.1 == req.payload));
            match same {
                Some(id) => {
                    let job = self.request_ids[&id].0;
                    if let Some(tx) = self.results.get(&job) {
                        match tx.borrow().as_ref().map(|r| r.status) {
                            None | Some(FinalStatus::Completed) => {
                                tracing::info!(job = job.0, job_id = %id, "joined the job of the same request id and payload");
                                return Ok(Submitted { job, job_id: id, queue_position: 0, watch: tx.subscribe() });
                            }
                            Some(status) => {
                                tracing::info!(job = job.0, job_id = %id, previous = ?status, "request id retried after its job ended {status:?}: proving again")
                            }
                        }
                    }
                    req.request_id = id;
                }
                None if seen > 0 => {
                    let id = payload_job_id(&req.request_id, seen + 1);
                    tracing::warn!(request_id = %req.request_id, job_id = %id, "another payload under a used request id: proved as a job of its own");
                    new_payload = Some((req.request_id.clone(), seen + 1));
                    req.request_id = id;
                }
                None => new_payload = Some((req.request_id.clone(), 1)),
            }
        }
        if let Some(why) = self.no_device_reason() {
            return Err(DriverError::NoDevice(why));
        }
        let waiting = self.jobs.values().filter(|j| !j.started && j.req.priority == req.priority).count() as u32;
        if waiting >= self.cfg.queue_limit {
            self.queue_refusals += 1;
            return Err(DriverError::QueueFull { priority: priority_name(req.priority), waiting, limit: self.cfg.queue_limit });
        }
        let circuit = self.circuit_id(req.circuit, req.filecoin.as_ref().and_then(|f| f.timing))?;
        let req_priority = req.priority;
        let now = self.now();
        let mut spec = JobSpec::new(JobKind::Generic, circuit, req.partitions).with_priority(req.priority);
        let deadline_at = req.deadline.map(|d| now + Nanos(d.as_nanos().min(u64::MAX as u128) as u64));
        if let Some(d) = deadline_at {
            spec = spec.with_deadline(d);
        }
        let hot = self.engine.tier(circuit) == Some(Tier::Hot);
        let job = self.engine.submit(spec, now).map_err(|e| match e {
            EngineError::TooLarge { .. } => DriverError::TooLarge(e),
            e => DriverError::Internal(e),
        })?;
        let queue_position = self.jobs.values().filter(|j| !j.started && j.req.priority >= req.priority).count() as u32;
        let (tx, rx) = watch::channel(None);
        self.results.insert(job, tx);
        if !req.request_id.is_empty() {
            self.request_ids.insert(req.request_id.clone(), (job, req.payload));
        }
        if let Some((rid, n)) = new_payload {
            let seen = self.payloads.entry(rid).or_insert(0);
            *seen = (*seen).max(n);
        }
        let job_id = api_id(job, &req);
        tracing::info!(job = job.0, circuit = %req.circuit.id(), priority = priority_name(req.priority), partitions = req.partitions, "job accepted");
        let n = req.partitions as usize;
        self.jobs.insert(
            job,
            LiveJob {
                req,
                circuit,
                submitted: Instant::now(),
                started: false,
                proofs: vec![None; n],
                publics: vec![Vec::new(); n],
                synth: Duration::ZERO,
                gpu: Duration::ZERO,
                srs_wait_since: (!hot).then(Instant::now),
                srs_load: Duration::ZERO,
                attempt: job,
                index_map: (0..n as u32).collect(),
                retries: 0,
                rechecks: 0,
                fault: None,
                devices: vec![None; n],
                deadline_at,
                cancelled: false,
            },
        );
        self.attempts.insert(job, job);
        self.counts.submitted += 1;
        self.drain();
        if !self.deferred.is_empty() && req_priority == cuzk_core::engine::Priority::Critical {
            self.start_deferred();
        }
        Ok(Submitted { job, job_id, queue_position, watch: rx })
    }

    /// The job an API id names: a request id's newest job, or a number.
    fn resolve(&self, r: &JobRef) -> Option<JobId> {
        match r {
            // A numbered job taken up again from the journal keeps its number as its id.
            JobRef::Id(j) => Some(self.request_ids.get(&j.0.to_string()).map_or(*j, |e| e.0)),
            JobRef::Request(rid) => self.request_ids.get(rid).map(|e| e.0),
        }
    }

    fn cancel(&mut self, job: JobId) -> Result<bool, DriverError> {
        let Some(j) = self.jobs.get(&job) else {
            return Err(if self.results.contains_key(&job) { DriverError::AlreadyEnded(job.0) } else { DriverError::NotFound(job.0.to_string()) });
        };
        let (was_running, attempt) = (j.started, j.attempt);
        let now = self.now();
        self.engine.cancel(attempt, now).map_err(DriverError::Refused)?;
        if let Some(j) = self.jobs.get_mut(&job) {
            j.cancelled = true;
        }
        self.drain();
        Ok(was_running)
    }

    fn devices(&self) -> impl Iterator<Item = Location> {
        (0..self.worker.devices() as u32).map(|d| Location::Device(cuzk_core::engine::DeviceId(d)))
    }

    /// The devices a preload goes to: not a fallback device.
    fn preload_targets(&self) -> impl Iterator<Item = Location> + '_ {
        self.devices().filter(|l| !matches!(l, Location::Device(d) if self.cfg.engine.devices.get(d.0 as usize).is_some_and(|c| c.fallback)))
    }

    fn preload(&mut self, spec: CircuitShape, reply: oneshot::Sender<Result<Preloaded, DriverError>>) {
        if self.draining.is_some() {
            let _ = reply.send(Err(DriverError::ShuttingDown));
            return;
        }
        let id = match self.circuit_id(spec, None) {
            Ok(id) => id,
            Err(e) => {
                tracing::warn!(circuit = %spec.id(), error = %e, "preload refused");
                let _ = reply.send(Err(e));
                return;
            }
        };
        let states: Vec<Option<Presence>> = self.preload_targets().map(|l| self.engine.presence(id, l)).collect();
        if states.contains(&Some(Presence::Resident)) {
            let _ = reply.send(Ok(Preloaded { already_loaded: true, load_time: Duration::ZERO }));
            return;
        }
        if !states.contains(&Some(Presence::Loading)) {
            let free = |l: Location| self.engine.usage(l).map_or(0, |u| u.capacity.saturating_sub(u.used));
            let Some(to) = self.preload_targets().max_by_key(|l| free(*l)) else {
                return;
            };
            let now = self.now();
            if let Err(e) = self.engine.preload(id, to, now) {
                self.drain();
                let _ = reply.send(Err(DriverError::TooLarge(e)));
                return;
            }
        }
        self.preload_waiters.entry(id).or_default().push((Instant::now(), reply));
        self.drain();
    }

    fn evict(&mut self, spec: CircuitShape) -> Result<Evicted, DriverError> {
        let Some(id) = self.registry.get(&spec) else {
            return Ok(Evicted { was_loaded: false, freed_bytes: 0 });
        };
        let bytes = self.registry.entry(id).map_or(0, |r| r.file_bytes);
        let mut out = Evicted { was_loaded: false, freed_bytes: 0 };
        let locs: Vec<Location> = self.devices().chain([Location::Host]).collect();
        for l in locs {
            if self.engine.presence(id, l) == Some(Presence::Resident) {
                let now = self.now();
                self.engine.evict(id, l, now).map_err(DriverError::Refused)?;
                self.drain();
                out.was_loaded = true;
                out.freed_bytes += bytes;
            }
        }
        Ok(out)
    }
}

async fn sleep_until(t: Option<Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t.into()).await,
        None => std::future::pending().await,
    }
}
