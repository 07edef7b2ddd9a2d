//! The job layer: the jobs a caller submits, over the engine's attempts. Sans-io like the
//! [`Engine`] it owns: it never blocks, owns no threads and never reads a clock or a file;
//! time and the host's available memory are inputs.
//!
//! It decides what the engine does not: a job's partitions that fail with a device fault or
//! a failed self-check are proved again by a further attempt (an engine job of the unproven
//! partitions, avoiding the device that failed), within [`Recovery`]'s bounds; devices that
//! keep failing leave service; device stages past the watchdog are faults; request ids join
//! the job of the same payload, and another payload under a used request id is a job of its
//! own (`<id>#n`); non-CRITICAL synthesis waits while the host's memory is low; each queue
//! is bounded; shutdown drains or cancels.
//!
//! # Driving it
//!
//! Feed one input (`admit` + `submit`, `stage_finished`, `stage_failed`, `cancel`,
//! `observe_memory`, `tick`, `with_engine`, `shutdown`, `cancel_all`), then take every
//! [`Event`] with [`Jobs::poll_event`] and execute it: [`Event::Start`] runs a stage and its
//! end is reported with [`Jobs::stage_finished`] or [`Jobs::stage_failed`]; [`Event::Ended`]
//! is the job's one final result. Call [`Jobs::tick`] at [`Jobs::next_timeout`].

mod faults;
mod requests;
pub mod sim;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap, VecDeque};

pub use faults::{backend_fault, DeviceHealth, Fault, Recovery};
pub use requests::{payload_job_id, BadJobRef, JobRef, MAX_REQUEST_ID};
use requests::{Named, RequestBook};

use crate::engine::{
    Action, CircuitId, DeviceId, Dispatch, Engine, EngineError, JobFailure, JobId, JobKind, JobSpec, Location, Nanos, Outcome, PartitionId, Priority, Stage,
};

/// How often synthesis held back by low memory looks at the available memory again.
pub const MEMORY_RECHECK: Nanos = Nanos::from_millis(250);

/// The job layer's settings.
#[derive(Debug, Clone)]
pub struct JobsConfig {
    /// Retries, watchdog and device retirement.
    pub recovery: Recovery,
    /// Jobs accepted and not started, per priority.
    pub queue_limit: u32,
    /// Non-CRITICAL synthesis waits while the host's available memory is below this (0: never).
    pub memory_margin: u64,
    /// Ended jobs remembered (for request-id joins and [`Jobs::ended`]).
    pub keep_results: usize,
}

impl Default for JobsConfig {
    fn default() -> Self {
        JobsConfig { recovery: Recovery::default(), queue_limit: u32::MAX, memory_margin: 0, keep_results: 1024 }
    }
}

/// How a shutdown treats the jobs under way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shutdown {
    /// Accepted jobs finish; no new ones are accepted.
    Drain,
    /// Every job is cancelled now.
    Cancel,
}

/// A submission's identity, checked before its circuit is registered.
#[derive(Debug, Clone)]
pub struct Submission {
    /// The caller's idempotency key (may be empty).
    pub request_id: String,
    /// A digest of what is to be proved: the same request id with the same digest joins.
    pub payload: [u8; 32],
    /// Taken up again after a restart: `request_id` is the job id an earlier run gave it
    /// (`<id>`, `<id>#n`, or its number), kept as it is.
    pub restored: bool,
    /// Scheduling priority.
    pub priority: Priority,
}

/// What to prove, once the circuit is registered.
#[derive(Debug, Clone, Copy)]
pub struct Work {
    /// The circuit (registered with the engine).
    pub circuit: CircuitId,
    /// Number of partitions.
    pub partitions: u32,
    /// Time allowed after acceptance.
    pub deadline: Option<Nanos>,
    /// Check each proof with the verifying key before it is returned.
    pub check: bool,
    /// The kind's name, for per-kind counts.
    pub kind: &'static str,
}

/// The answer to [`Jobs::admit`].
#[derive(Debug)]
pub enum Admission {
    /// The same request id and payload as a live or completed job: that job.
    Joined {
        /// The job.
        job: JobId,
        /// Its API id.
        job_id: String,
    },
    /// A new job: register its circuit, then [`Jobs::submit`] the ticket.
    New(Ticket),
}

/// A submission admitted as a new job.
#[derive(Debug)]
pub struct Ticket {
    /// The job id it will have (empty: its number).
    job_id: String,
    payload: [u8; 32],
    priority: Priority,
    /// The request id and payload number it names, when it names a new one.
    named: Option<(String, u32)>,
}

/// A job submitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// The engine's id of its first attempt, which is the job's.
    pub job: JobId,
    /// Its API id: the request id (`<id>#n` for a later payload) or its number.
    pub job_id: String,
    /// Jobs of the same or higher priority waiting before it.
    pub queue_position: u32,
}

/// Why the job layer refused an input.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum JobsError {
    /// Shutting down: no new work.
    #[error("shutting down: no new jobs are accepted")]
    ShuttingDown,
    /// No device is in service.
    #[error("{0}")]
    NoDevice(String),
    /// The queue of that priority is full.
    #[error("the {priority:?} queue is full ({waiting} jobs waiting, limit {limit})")]
    QueueFull {
        /// The priority.
        priority: Priority,
        /// Jobs waiting at it.
        waiting: u32,
        /// The limit.
        limit: u32,
    },
    /// The job can never fit the memory budgets.
    #[error(transparent)]
    TooLarge(EngineError),
    /// No job of that id.
    #[error("no job {0}")]
    NotFound(String),
    /// The job has already ended.
    #[error("job {0} has already ended")]
    AlreadyEnded(u64),
    /// The engine refused the input.
    #[error(transparent)]
    Engine(EngineError),
}

/// A job's final status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EndStatus {
    /// Every partition proved (and checked when the job asked for it).
    Completed,
    /// It failed; the reason is in [`JobEnd::error`].
    Failed,
    /// The caller or a shutdown cancelled it.
    Cancelled,
}

/// A job's one final result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobEnd {
    /// Its API id.
    pub job_id: String,
    /// How it ended.
    pub status: EndStatus,
    /// Why it failed or was cancelled (empty when completed).
    pub error: String,
    /// Cancelled by a shutdown (a restart takes it up again).
    pub interrupted: bool,
    /// From acceptance to its first stage.
    pub queue_wait: Nanos,
    /// From acceptance to its end.
    pub total: Nanos,
    /// Its partitions' synthesis, summed (from each start to its end).
    pub synthesis: Nanos,
    /// Its partitions' GPU stages (upload, NTT, MSM), summed.
    pub gpu: Nanos,
}

/// Stages of one kind that ended well since start.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StageTotals {
    /// How many.
    pub count: u64,
    /// Their time, summed.
    pub time: Nanos,
}

/// What the job layer asks of its driver, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// Run a stage of partition `index` of `job`; report its end with
    /// [`Jobs::stage_finished`] or [`Jobs::stage_failed`].
    Start {
        /// What and where (its partition is the attempt's).
        dispatch: Dispatch,
        /// The job.
        job: JobId,
        /// The job's partition index.
        index: u32,
        /// Check the proof with the verifying key (finalize).
        check: bool,
    },
    /// Load a circuit's parameters (the engine's [`Action::LoadParams`]).
    Load {
        /// The circuit.
        circuit: CircuitId,
        /// Where.
        to: Location,
        /// From the warm host copy.
        from_host: bool,
    },
    /// Device memory is set aside for a circuit's matrices.
    MatricesReserved {
        /// The circuit.
        circuit: CircuitId,
        /// The device.
        device: DeviceId,
        /// Bytes.
        bytes: u64,
    },
    /// Drop a circuit's parameters there.
    Evict {
        /// The circuit.
        circuit: CircuitId,
        /// Where.
        from: Location,
    },
    /// An attempt ended: the data of its partitions can be dropped.
    AttemptEnded(JobId),
    /// Another attempt proves a job's unproven partitions.
    Retrying {
        /// The job.
        job: JobId,
        /// The new attempt.
        attempt: JobId,
        /// Why.
        fault: Fault,
        /// The device the fault was on.
        device: Option<u32>,
        /// The partitions proved again.
        partitions: Vec<u32>,
    },
    /// A device stage ran past the watchdog.
    Watchdog {
        /// The partition.
        partition: PartitionId,
        /// The stage.
        stage: Stage,
        /// The device.
        device: u32,
    },
    /// A stage failed with a fault.
    Fault {
        /// The fault.
        fault: Fault,
        /// The device it counts against.
        device: Option<u32>,
    },
    /// A device was taken out of service.
    DeviceRetired {
        /// The device.
        device: u32,
        /// Why.
        why: String,
    },
    /// Memory is low: non-CRITICAL synthesis waits.
    Held,
    /// Synthesis held back starts (memory is back, or CRITICAL work waits behind it).
    Released,
    /// A job ended.
    Ended {
        /// The job.
        job: JobId,
        /// Its result.
        end: JobEnd,
    },
    /// An ended job is no longer remembered.
    Forgotten(JobId),
}

/// Completed and failed jobs of one kind.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct KindTotals {
    /// Completed.
    pub completed: u64,
    /// Failed.
    pub failed: u64,
    /// Summed acceptance-to-end time of the completed.
    pub total: Nanos,
}

/// Counts since start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobStats {
    /// Jobs submitted (joins not counted).
    pub submitted: u64,
    /// Completed.
    pub completed: u64,
    /// Failed.
    pub failed: u64,
    /// Cancelled.
    pub cancelled: u64,
    /// Further attempts started, per cause.
    pub retried: BTreeMap<&'static str, u64>,
    /// Proofs that failed their self-check.
    pub self_check_failures: u64,
    /// Submissions refused by a full queue.
    pub queue_refusals: u64,
    /// Per kind.
    pub kinds: BTreeMap<&'static str, KindTotals>,
    /// Per stage, in [`Stage::ALL`] order.
    pub stages: [StageTotals; 5],
}

/// A live job, as the status shows it.
#[derive(Debug, Clone, Copy)]
pub struct LiveJob<'a> {
    /// The job.
    pub job: JobId,
    /// Its API id (empty: its number).
    pub request_id: &'a str,
    /// Its circuit.
    pub circuit: CircuitId,
    /// Its priority.
    pub priority: Priority,
    /// Its kind's name.
    pub kind: &'static str,
    /// A stage of it has started.
    pub started: bool,
}

/// A stage under way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunningStage {
    /// The stage.
    pub stage: Stage,
    /// Where.
    pub location: Location,
    /// The worker slot.
    pub slot: u32,
    /// The circuit.
    pub circuit: CircuitId,
    /// When it started.
    pub start: Nanos,
    /// The watchdog has given up on it (it still reports when it ends).
    pub timed_out: bool,
}

impl RunningStage {
    /// The device it runs on (`None` on the host).
    pub fn device(&self) -> Option<u32> {
        match self.location {
            Location::Device(d) => Some(d.0),
            Location::Host => None,
        }
    }
}

#[derive(Debug)]
struct Job {
    request_id: String,
    circuit: CircuitId,
    priority: Priority,
    kind: &'static str,
    check: bool,
    submitted: Nanos,
    started: bool,
    proved: Vec<bool>,
    /// The device each partition's GPU stages last ran on.
    devices: Vec<Option<u32>>,
    /// The engine job proving its unproven partitions now (its first one is the job itself).
    attempt: JobId,
    /// The job's partition index of each of the attempt's partitions.
    index_map: Vec<u32>,
    retries: u32,
    rechecks: u32,
    /// Why the current attempt is failing, and on which device.
    fault: Option<(Fault, Option<u32>)>,
    deadline_at: Option<Nanos>,
    cancelled: bool,
    synthesis: Nanos,
    gpu: Nanos,
}

/// The job layer. See the [module documentation](self).
#[derive(Debug)]
pub struct Jobs {
    cfg: JobsConfig,
    engine: Engine,
    now: Nanos,
    jobs: HashMap<JobId, Job>,
    /// Per attempt, the job it proves for.
    attempts: HashMap<JobId, JobId>,
    requests: RequestBook,
    /// Ended jobs remembered, oldest first, with their API ids and statuses.
    ended: VecDeque<(JobId, String)>,
    ended_status: HashMap<JobId, EndStatus>,
    health: Vec<DeviceHealth>,
    running: HashMap<PartitionId, RunningStage>,
    /// Synthesis dispatched while memory was low, not started yet.
    held: VecDeque<Dispatch>,
    mem_available: Option<u64>,
    last_memory_check: Nanos,
    shutdown: Option<Shutdown>,
    stats: JobStats,
    events: VecDeque<Event>,
}

impl Jobs {
    /// A job layer over `engine`.
    pub fn new(cfg: JobsConfig, engine: Engine) -> Jobs {
        let devices = engine.config().devices.len();
        Jobs {
            cfg,
            engine,
            now: Nanos::ZERO,
            jobs: HashMap::new(),
            attempts: HashMap::new(),
            requests: RequestBook::default(),
            ended: VecDeque::new(),
            ended_status: HashMap::new(),
            health: vec![DeviceHealth::default(); devices],
            running: HashMap::new(),
            held: VecDeque::new(),
            mem_available: None,
            last_memory_check: Nanos::ZERO,
            shutdown: None,
            stats: JobStats::default(),
            events: VecDeque::new(),
        }
    }

    /// The engine (read-only).
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Feeds the engine an input that is not about jobs (registering a circuit, a preload,
    /// an eviction, a parameter load's end, recorded matrices), then takes its actions.
    pub fn with_engine<R>(&mut self, now: Nanos, f: impl FnOnce(&mut Engine, Nanos) -> R) -> R {
        self.advance(now);
        let r = f(&mut self.engine, self.now);
        self.drain();
        r
    }

    /// The next event to execute.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    fn advance(&mut self, now: Nanos) {
        self.now = self.now.max(now);
    }

    /// Whether the layer wants the host's available memory ([`Jobs::observe_memory`]) before
    /// each input.
    pub fn watches_memory(&self) -> bool {
        self.cfg.memory_margin > 0
    }

    /// The host's available memory now, bytes (`None`: unknown, never low).
    pub fn observe_memory(&mut self, available: Option<u64>) {
        self.mem_available = available;
    }

    /// The last available memory observed.
    pub fn mem_available(&self) -> Option<u64> {
        self.mem_available
    }

    fn memory_low(&self) -> bool {
        self.cfg.memory_margin > 0 && self.mem_available.is_some_and(|a| a < self.cfg.memory_margin)
    }

    /// When [`Jobs::tick`] is due next: an engine deadline, the watchdog, or a look at the
    /// memory for held synthesis.
    pub fn next_timeout(&self) -> Option<Nanos> {
        let watchdog = self
            .cfg
            .recovery
            .stage_timeout
            .and_then(|limit| self.running.values().filter(|r| matches!(r.location, Location::Device(_)) && !r.timed_out).map(|r| r.start + limit).min());
        let memory = (!self.held.is_empty()).then(|| self.last_memory_check + MEMORY_RECHECK);
        [self.engine.next_deadline(), watchdog, memory].into_iter().flatten().min()
    }

    /// Time passed: deadlines, the watchdog and held synthesis.
    pub fn tick(&mut self, now: Nanos) {
        self.advance(now);
        self.engine.tick(self.now);
        self.drain();
        self.watchdog();
        if !self.held.is_empty() && self.now >= self.last_memory_check + MEMORY_RECHECK {
            self.release_held();
        }
    }

    /// Checks a submission's identity: a join of a live or completed job of the same request
    /// id and payload, or a ticket for a new job.
    pub fn admit(&mut self, s: Submission) -> Result<Admission, JobsError> {
        if self.shutdown.is_some() {
            return Err(JobsError::ShuttingDown);
        }
        let mut job_id = s.request_id.clone();
        let mut named = None;
        if s.restored {
            named = RequestBook::parse_restored(&s.request_id);
        } else if !s.request_id.is_empty() {
            match self.requests.name(&s.request_id, &s.payload) {
                Named::Same(id, job) => match job.map(|j| (j, self.status(j))) {
                    Some((job, Some(None) | Some(Some(EndStatus::Completed)))) => return Ok(Admission::Joined { job, job_id: id }),
                    // A failed or cancelled job of the same payload (or one an earlier run
                    // ended) is proved again under its id.
                    _ => job_id = id,
                },
                Named::New(id, n) => {
                    job_id = id;
                    named = Some((s.request_id.clone(), n));
                }
            }
        }
        if let Some(why) = self.no_device_reason() {
            return Err(JobsError::NoDevice(why));
        }
        let waiting = self.jobs.values().filter(|j| !j.started && j.priority == s.priority).count() as u32;
        if waiting >= self.cfg.queue_limit {
            self.stats.queue_refusals += 1;
            return Err(JobsError::QueueFull { priority: s.priority, waiting, limit: self.cfg.queue_limit });
        }
        Ok(Admission::New(Ticket { job_id, payload: s.payload, priority: s.priority, named }))
    }

    /// Submits an admitted job.
    pub fn submit(&mut self, t: Ticket, w: Work, now: Nanos) -> Result<Accepted, JobsError> {
        self.advance(now);
        if self.shutdown.is_some() {
            return Err(JobsError::ShuttingDown);
        }
        let now = self.now;
        let mut spec = JobSpec::new(JobKind::Generic, w.circuit, w.partitions).with_priority(t.priority);
        let deadline_at = w.deadline.map(|d| now + d);
        if let Some(d) = deadline_at {
            spec = spec.with_deadline(d);
        }
        let job = self.engine.submit(spec, now).map_err(|e| match e {
            EngineError::TooLarge { .. } => JobsError::TooLarge(e),
            e => JobsError::Engine(e),
        })?;
        let queue_position = self.jobs.values().filter(|j| !j.started && j.priority >= t.priority).count() as u32;
        if !t.job_id.is_empty() {
            self.requests.record(t.job_id.clone(), Some(job), t.payload, t.named);
        }
        let n = w.partitions as usize;
        self.jobs.insert(
            job,
            Job {
                request_id: t.job_id.clone(),
                circuit: w.circuit,
                priority: t.priority,
                kind: w.kind,
                check: w.check,
                submitted: now,
                started: false,
                proved: vec![false; n],
                devices: vec![None; n],
                attempt: job,
                index_map: (0..n as u32).collect(),
                retries: 0,
                rechecks: 0,
                fault: None,
                deadline_at,
                cancelled: false,
                synthesis: Nanos::ZERO,
                gpu: Nanos::ZERO,
            },
        );
        self.attempts.insert(job, job);
        self.stats.submitted += 1;
        self.drain();
        if !self.held.is_empty() && t.priority == Priority::Critical {
            self.release_held();
        }
        let job_id = if t.job_id.is_empty() { job.0.to_string() } else { t.job_id };
        Ok(Accepted { job, job_id, queue_position })
    }

    /// Remembers a job id an earlier run gave out and ended (from a journal), so that another
    /// payload under its request id is numbered past it and never takes its id over.
    pub fn remember(&mut self, job_id: &str, payload: [u8; 32]) {
        if let Some(named) = RequestBook::parse_restored(job_id) {
            self.requests.record(job_id.to_string(), None, payload, Some(named));
        }
    }

    /// The job an API id names: a request id's newest job, or a number.
    pub fn resolve(&self, r: &JobRef) -> Option<JobId> {
        match r {
            // A numbered job taken up again from a journal keeps its number as its id.
            JobRef::Id(j) => Some(self.requests.job(&j.0.to_string()).unwrap_or(*j)),
            JobRef::Request(rid) => self.requests.job(rid),
        }
    }

    /// `None`: not known; `Some(None)`: live; `Some(Some(status))`: ended.
    pub fn status(&self, job: JobId) -> Option<Option<EndStatus>> {
        if self.jobs.contains_key(&job) {
            return Some(None);
        }
        self.ended_status.get(&job).map(|s| Some(*s))
    }

    /// Cancels a live job; returns whether a stage of it had started.
    pub fn cancel(&mut self, job: JobId, now: Nanos) -> Result<bool, JobsError> {
        self.advance(now);
        let Some(j) = self.jobs.get(&job) else {
            return Err(if self.ended_status.contains_key(&job) { JobsError::AlreadyEnded(job.0) } else { JobsError::NotFound(job.0.to_string()) });
        };
        let (was_running, attempt) = (j.started, j.attempt);
        self.engine.cancel(attempt, self.now).map_err(JobsError::Engine)?;
        if let Some(j) = self.jobs.get_mut(&job) {
            j.cancelled = true;
        }
        self.drain();
        Ok(was_running)
    }

    /// No new jobs; with [`Shutdown::Cancel`] every live job is cancelled now. A drain may be
    /// turned into a cancel.
    pub fn shutdown(&mut self, mode: Shutdown, now: Nanos) {
        let upgrade = self.shutdown == Some(Shutdown::Drain) && mode == Shutdown::Cancel;
        if self.shutdown.is_some() && !upgrade {
            return;
        }
        self.shutdown = Some(mode);
        if mode == Shutdown::Cancel {
            self.cancel_all(now);
        }
    }

    /// The shutdown under way.
    pub fn shutting_down(&self) -> Option<Shutdown> {
        self.shutdown
    }

    /// Cancels every live job.
    pub fn cancel_all(&mut self, now: Nanos) {
        self.advance(now);
        let mut ids: Vec<(JobId, JobId)> = self.jobs.iter().map(|(id, j)| (*id, j.attempt)).collect();
        ids.sort();
        for (id, attempt) in ids {
            if let Some(j) = self.jobs.get_mut(&id) {
                j.cancelled = true;
            }
            let _ = self.engine.cancel(attempt, self.now);
            self.drain();
        }
    }

    /// The job and its partition index of an attempt's partition, while that attempt is the
    /// job's current one.
    pub fn partition(&self, p: PartitionId) -> Option<(JobId, u32)> {
        let job = *self.attempts.get(&p.job)?;
        let j = self.jobs.get(&job).filter(|j| j.attempt == p.job)?;
        Some((job, *j.index_map.get(p.index as usize)?))
    }

    /// A stage ended well.
    pub fn stage_finished(&mut self, p: PartitionId, stage: Stage, now: Nanos) -> Result<(), EngineError> {
        self.advance(now);
        let run = self.running.remove(&p);
        let device = run.and_then(|r| r.device());
        let took = run.map_or(Nanos::ZERO, |r| self.now.saturating_sub(r.start));
        if let Some(t) = Stage::ALL.iter().position(|s| *s == stage).and_then(|i| self.stats.stages.get_mut(i)) {
            t.count += 1;
            t.time += took;
        }
        // A device's record is clean again once a partition's MSM succeeds there.
        if let Some(h) = device.and_then(|d| self.health.get_mut(d as usize)).filter(|_| run.is_some_and(|r| !r.timed_out) && stage == Stage::Msm) {
            h.success();
        }
        if let Some((job, i)) = self.partition(p) {
            if let Some(j) = self.jobs.get_mut(&job) {
                if let (Some(d), Some(slot)) = (device, j.devices.get_mut(i as usize)) {
                    *slot = Some(d);
                }
                match stage {
                    Stage::Synthesize => j.synthesis += took,
                    Stage::Upload | Stage::Ntt | Stage::Msm => j.gpu += took,
                    Stage::Finalize => {}
                }
                if stage == Stage::Finalize {
                    if let Some(slot) = j.proved.get_mut(i as usize) {
                        *slot = true;
                    }
                }
            }
        }
        let r = self.engine.stage_finished(p, stage, self.now);
        self.drain();
        r
    }

    /// A stage failed; `fault` is what it was when another attempt may succeed.
    pub fn stage_failed(&mut self, p: PartitionId, stage: Stage, now: Nanos, fault: Option<Fault>, reason: String) -> Result<(), EngineError> {
        self.advance(now);
        let run = self.running.remove(&p);
        let timed_out = run.is_some_and(|r| r.timed_out);
        if let (Some(fault), false) = (fault, timed_out) {
            self.stage_fault(p, fault, run.and_then(|r| r.device()));
        }
        let r = self.engine.stage_failed(p, stage, self.now, reason);
        self.drain();
        r
    }

    /// Records a fault on its job and its device.
    fn stage_fault(&mut self, p: PartitionId, fault: Fault, device: Option<u32>) {
        let mut device = device;
        if let Some((job, i)) = self.partition(p) {
            if let Some(j) = self.jobs.get_mut(&job) {
                if fault == Fault::SelfCheck {
                    // The wrong proof came from the device that ran the partition's MSM.
                    device = j.devices.get(i as usize).copied().flatten();
                }
                if j.fault.is_none() {
                    j.fault = Some((fault, device));
                }
            }
        }
        if fault == Fault::SelfCheck {
            self.stats.self_check_failures += 1;
        }
        self.events.push_back(Event::Fault { fault, device });
        if let Some(d) = device {
            self.device_fault(d, fault);
        }
    }

    /// Counts a fault against device `d`; takes it out of service at the limit (the engine
    /// then places no more work there and, once no device is left, fails the jobs that can
    /// no longer run).
    fn device_fault(&mut self, d: u32, fault: Fault) {
        let limit = self.cfg.recovery.device_fault_limit;
        let Some(h) = self.health.get_mut(d as usize) else { return };
        if !h.fault(fault, limit) {
            return;
        }
        let why = h.retired.clone().unwrap_or_default();
        self.events.push_back(Event::DeviceRetired { device: d, why });
        let _ = self.engine.retire_device(DeviceId(d), self.now);
        self.drain();
    }

    /// Device stages past the watchdog are device faults: their attempts end now (the stage
    /// still reports, and keeps its device slot and memory, until it returns).
    fn watchdog(&mut self) {
        let Some(limit) = self.cfg.recovery.stage_timeout else { return };
        let now = self.now;
        let mut expired: Vec<(PartitionId, Stage, u32)> = Vec::new();
        for (p, r) in self.running.iter_mut() {
            if let (Location::Device(d), false) = (r.location, r.timed_out) {
                if r.start + limit <= now {
                    r.timed_out = true;
                    expired.push((*p, r.stage, d.0));
                }
            }
        }
        expired.sort();
        for (p, stage, d) in expired {
            self.events.push_back(Event::Watchdog { partition: p, stage, device: d });
            self.device_fault(d, Fault::Watchdog);
            let Some((job, _)) = self.partition(p) else { continue };
            let Some(j) = self.jobs.get_mut(&job) else { continue };
            if j.fault.is_none() {
                j.fault = Some((Fault::Watchdog, Some(d)));
            }
            let attempt = j.attempt;
            let _ = self.engine.cancel(attempt, now);
            self.drain();
        }
    }

    /// Why no job can run, when no device is in service.
    pub fn no_device_reason(&self) -> Option<String> {
        if self.health.iter().any(DeviceHealth::in_service) {
            return None;
        }
        let why: Vec<String> = self.health.iter().enumerate().map(|(d, h)| format!("device {d}: {}", h.retired.clone().unwrap_or_default())).collect();
        Some(format!("no device in service ({})", why.join("; ")))
    }

    /// Takes the engine's actions into events (the drain rule).
    fn drain(&mut self) {
        while let Some(a) = self.engine.poll_action() {
            match a {
                Action::Start(d) => self.start(d),
                // Buffers move with the partition's data and are dropped when the stage that
                // consumes them ends: nothing to do.
                Action::Release { .. } => {}
                Action::LoadParams { circuit, to, from_host, .. } => self.events.push_back(Event::Load { circuit, to, from_host }),
                Action::MatricesReserved { circuit, device, bytes } => self.events.push_back(Event::MatricesReserved { circuit, device, bytes }),
                Action::EvictParams { circuit, from, .. } => self.events.push_back(Event::Evict { circuit, from }),
                Action::JobEnded { job, outcome } => self.attempt_ended(job, outcome),
            }
        }
    }

    fn start(&mut self, d: Dispatch) {
        if d.stage == Stage::Synthesize {
            if let Some((job, _)) = self.partition(d.partition) {
                let critical = self.jobs.get(&job).is_some_and(|j| j.priority == Priority::Critical);
                if !critical && (!self.held.is_empty() || self.memory_low()) {
                    if self.held.is_empty() {
                        self.events.push_back(Event::Held);
                        self.last_memory_check = self.now;
                    }
                    self.held.push_back(d);
                    return;
                }
            }
        }
        self.dispatch(d);
    }

    fn dispatch(&mut self, d: Dispatch) {
        let Some((job, index)) = self.partition(d.partition) else {
            // A stage of an attempt that has ended (its job was cancelled or is retried).
            let _ = self.engine.stage_failed(d.partition, d.stage, self.now, "job ended");
            return;
        };
        let Some(j) = self.jobs.get_mut(&job) else { return };
        j.started = true;
        let check = d.stage == Stage::Finalize && j.check;
        self.running
            .insert(d.partition, RunningStage { stage: d.stage, location: d.location, slot: d.slot, circuit: d.circuit, start: self.now, timed_out: false });
        self.events.push_back(Event::Start { dispatch: d, job, index, check });
    }

    /// Starts the synthesis held back by low memory once memory is back, a CRITICAL job
    /// waits, or its job ended.
    fn release_held(&mut self) {
        self.last_memory_check = self.now;
        let critical_waiting = self.jobs.values().any(|j| j.priority == Priority::Critical && !j.started);
        let low = self.memory_low() && !critical_waiting;
        let (mut keep, mut go) = (VecDeque::new(), Vec::new());
        while let Some(d) = self.held.pop_front() {
            if low && self.partition(d.partition).is_some() {
                keep.push_back(d);
            } else {
                go.push(d);
            }
        }
        self.held = keep;
        let released = go.iter().any(|d| self.partition(d.partition).is_some());
        // Ended jobs' stages are reported failed here: every start is reported once.
        for d in go {
            self.dispatch(d);
        }
        self.drain();
        if released && self.held.is_empty() {
            self.events.push_back(Event::Released);
        }
    }

    /// An attempt (engine job) ended: another attempt, or the job's final result.
    fn attempt_ended(&mut self, attempt: JobId, outcome: Outcome) {
        self.events.push_back(Event::AttemptEnded(attempt));
        let Some(job) = self.attempts.remove(&attempt) else { return };
        let Some(j) = self.jobs.get_mut(&job).filter(|j| j.attempt == attempt) else { return };
        let fault = j.fault.take();
        let user_cancelled = j.cancelled;
        let (retries, rechecks) = (j.retries, j.rechecks);
        let first_unproven = j.proved.iter().position(|p| !p).unwrap_or(0);
        let retryable = match (&outcome, fault) {
            (Outcome::Failed(JobFailure::Stage { .. }), Some(f)) => Some(f),
            (Outcome::Cancelled, Some(f)) if !user_cancelled => Some(f),
            // A partition stranded on a device taken out of service: prove it elsewhere.
            (Outcome::Failed(JobFailure::DeviceRetired { device, .. }), _) => Some((Fault::OutOfService, Some(device.0))),
            _ => None,
        };
        let Some((fault, device)) = retryable else {
            return self.finish(job, outcome, None);
        };
        let (used, limit) = if fault == Fault::SelfCheck { (rechecks, self.cfg.recovery.rechecks) } else { (retries, self.cfg.recovery.retries) };
        let cancelling = self.shutdown == Some(Shutdown::Cancel);
        let why = if used >= limit {
            Some(match fault {
                Fault::SelfCheck => format!(
                    "partition {first_unproven}: the proof failed its check with the verifying key {} times (re-proved {used} times); no unchecked proof is returned",
                    used + 1
                ),
                f => format!("partition {first_unproven}: {} ({}), after {used} retries", describe(f, device, &outcome), f.name()),
            })
        } else if cancelling {
            Some("cancelled: the daemon is shutting down".into())
        } else {
            self.no_device_reason()
        };
        if let Some(why) = why {
            let outcome = if cancelling { Outcome::Cancelled } else { outcome };
            return self.finish(job, outcome, (!cancelling).then_some(why));
        }
        if let Err(why) = self.retry(job, fault, device) {
            self.finish(job, outcome, Some(why));
        }
    }

    /// Starts another attempt of the job's unproven partitions.
    fn retry(&mut self, job: JobId, fault: Fault, device: Option<u32>) -> Result<(), String> {
        let now = self.now;
        let Some(j) = self.jobs.get(&job) else { return Err("job unknown".into()) };
        if j.deadline_at.is_some_and(|d| d <= now) {
            return Err("deadline exceeded".into());
        }
        let missing: Vec<u32> = (0..j.proved.len() as u32).filter(|i| !j.proved[*i as usize]).collect();
        let mut spec = JobSpec::new(JobKind::Generic, j.circuit, missing.len() as u32).with_priority(j.priority);
        if let Some(d) = j.deadline_at {
            spec = spec.with_deadline(d);
        }
        // Another device, when there is one in service, proves it again (the engine uses the
        // avoided one only when no other can serve).
        if let Some(d) = device {
            spec = spec.avoiding(DeviceId(d));
        }
        let attempt = self.engine.submit(spec, now).map_err(|e| format!("another attempt was refused: {e}"))?;
        *self.stats.retried.entry(fault.name()).or_default() += 1;
        self.attempts.insert(attempt, job);
        if let Some(j) = self.jobs.get_mut(&job) {
            if fault == Fault::SelfCheck {
                j.rechecks += 1;
            } else {
                j.retries += 1;
            }
            j.attempt = attempt;
            j.index_map = missing.clone();
        }
        self.events.push_back(Event::Retrying { job, attempt, fault, device, partitions: missing });
        Ok(())
    }

    /// The job's one final result: `why` replaces the reason of a failure (and turns a
    /// cancellation into one).
    fn finish(&mut self, job: JobId, outcome: Outcome, why: Option<String>) {
        let Some(j) = self.jobs.remove(&job) else { return };
        let outcome = match (outcome, why.is_some()) {
            (Outcome::Cancelled, true) => Outcome::Failed(JobFailure::DeadlineExceeded),
            (o, _) => o,
        };
        let queue_wait = self.engine.timeline().job(job).and_then(|r| r.queue_wait()).unwrap_or(Nanos::ZERO);
        let total = self.now.saturating_sub(j.submitted);
        let mut end = JobEnd {
            job_id: if j.request_id.is_empty() { job.0.to_string() } else { j.request_id.clone() },
            status: EndStatus::Completed,
            error: String::new(),
            interrupted: false,
            queue_wait,
            total,
            synthesis: j.synthesis,
            gpu: j.gpu,
        };
        match outcome {
            Outcome::Completed if j.proved.iter().all(|p| *p) => self.stats.completed += 1,
            Outcome::Completed => {
                end.status = EndStatus::Failed;
                end.error = "internal: a partition's proof is missing".into();
            }
            Outcome::Failed(f) => {
                end.status = EndStatus::Failed;
                end.error = match (why, f) {
                    (Some(why), _) => why,
                    (None, JobFailure::Stage { partition, stage, reason }) => format!("partition {} failed in {}: {reason}", partition.index, stage.name()),
                    (None, JobFailure::Params { reason, .. }) => format!("loading parameters failed: {reason}"),
                    (None, JobFailure::DeadlineExceeded) => "deadline exceeded".into(),
                    (None, JobFailure::NoDevice) => self.no_device_reason().unwrap_or_else(|| "no device in service".into()),
                    (None, JobFailure::DeviceRetired { partition, device }) => {
                        format!("partition {} was on device {} when it was taken out of service", partition.index, device.0)
                    }
                };
            }
            Outcome::Cancelled => {
                end.status = EndStatus::Cancelled;
                end.interrupted = self.shutdown.is_some();
                end.error = if end.interrupted { "cancelled: the daemon is shutting down".into() } else { "cancelled".into() };
                self.stats.cancelled += 1;
            }
        }
        let totals = self.stats.kinds.entry(j.kind).or_default();
        match end.status {
            EndStatus::Completed => {
                totals.completed += 1;
                totals.total += total;
            }
            EndStatus::Failed => {
                totals.failed += 1;
                self.stats.failed += 1;
            }
            EndStatus::Cancelled => {}
        }
        self.ended_status.insert(job, end.status);
        self.ended.push_back((job, j.request_id));
        self.events.push_back(Event::Ended { job, end });
        while self.ended.len() > self.cfg.keep_results.max(1) {
            if let Some((old, rid)) = self.ended.pop_front() {
                self.ended_status.remove(&old);
                self.requests.forget(&rid, old);
                self.events.push_back(Event::Forgotten(old));
            }
        }
    }

    /// Live jobs.
    pub fn live(&self) -> impl Iterator<Item = LiveJob<'_>> {
        self.jobs.iter().map(|(id, j)| LiveJob {
            job: *id,
            request_id: &j.request_id,
            circuit: j.circuit,
            priority: j.priority,
            kind: j.kind,
            started: j.started,
        })
    }

    /// Number of live jobs.
    pub fn live_count(&self) -> usize {
        self.jobs.len()
    }

    /// A live job's API id.
    pub fn job_id(&self, job: JobId) -> Option<String> {
        self.jobs.get(&job).map(|j| if j.request_id.is_empty() { job.0.to_string() } else { j.request_id.clone() })
    }

    /// The stages under way.
    pub fn running(&self) -> impl Iterator<Item = (PartitionId, RunningStage)> + '_ {
        self.running.iter().map(|(p, r)| (*p, *r))
    }

    /// Each device's fault record.
    pub fn health(&self) -> &[DeviceHealth] {
        &self.health
    }

    /// Synthesis held back by low memory.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// Counts since start.
    pub fn stats(&self) -> &JobStats {
        &self.stats
    }

    /// The settings.
    pub fn config(&self) -> &JobsConfig {
        &self.cfg
    }
}

/// What the last fault of an attempt was, for the job's error.
fn describe(f: Fault, device: Option<u32>, outcome: &Outcome) -> String {
    let on = device.map(|d| format!(" on device {d}")).unwrap_or_default();
    match (f, outcome) {
        (Fault::Watchdog, _) => format!("a device stage{on} ran past the watchdog"),
        (_, Outcome::Failed(JobFailure::Stage { stage, reason, .. })) => format!("{} failed{on}: {reason}", stage.name()),
        (f, _) => format!("{}{on}", f.name()),
    }
}
