//! A deterministic simulator of the job layer: a virtual clock, modelled stage and load
//! durations, injected device faults, corrupted proofs, hung device stages, a device that
//! breaks, low host memory, duplicate request ids and crashes followed by a restart that
//! takes the unfinished jobs up again (as the daemon's journal does). It keeps its own
//! record of what each caller was promised and checks it against what the job layer did.

use std::collections::{BTreeMap, BTreeSet};

use super::{Accepted, Admission, EndStatus, Event, Fault, Jobs, JobsConfig, Submission, Work};
use crate::engine::sim::{chance, hash64, sample, Dur};
use crate::engine::{CircuitId, CircuitProfile, DeviceConfig, DeviceId, Engine, EngineConfig, Footprint, JobId, Location, Nanos, PartitionId, Priority, Stage};

const GB: u64 = 1 << 30;

/// What goes wrong, per stage run, in parts per million.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mishaps {
    /// A device stage fails with a device error.
    pub device_error_ppm: u32,
    /// An MSM returns a wrong result (the proof will not verify).
    pub corrupt_ppm: u32,
    /// A device stage hangs past the watchdog (it ends much later).
    pub hang_ppm: u32,
    /// From this time every device stage on this device fails.
    pub broken_device: Option<(u32, Nanos)>,
}

/// One caller's request.
#[derive(Debug, Clone)]
pub struct Request {
    /// When it arrives.
    pub at: Nanos,
    /// Its request id (may be empty).
    pub request_id: String,
    /// Which payload (the same number is the same statement).
    pub payload: u8,
    /// Its priority.
    pub priority: Priority,
    /// Partitions.
    pub partitions: u32,
    /// Check the proofs.
    pub check: bool,
    /// Cancelled by its caller at this time.
    pub cancel_at: Option<Nanos>,
}

/// A simulated run's inputs.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Devices.
    pub devices: u32,
    /// The job layer's settings.
    pub config: JobsConfig,
    /// Stage durations (all circuits alike), in [`Stage::ALL`] order.
    pub stages: [Dur; 5],
    /// What goes wrong.
    pub mishaps: Mishaps,
    /// The requests.
    pub requests: Vec<Request>,
    /// The host's available memory from each time on (none: unknown).
    pub memory: Vec<(Nanos, u64)>,
    /// Crashes: at each time the job layer is dropped with every stage under way, and a new
    /// one takes the unfinished jobs up again.
    pub crashes: Vec<Nanos>,
    /// Seed of the mishaps.
    pub seed: u64,
}

/// What the simulator saw.
#[derive(Debug, Clone, Default)]
pub struct Record {
    /// Per API job id: the statuses it ended with and when, in order, across restarts.
    pub ends: BTreeMap<String, Vec<(EndStatus, Nanos)>>,
    /// Per API job id: how many times a submission was accepted as a new job under it
    /// (a failed job's id is proved again by a later submission).
    pub accepted: BTreeMap<String, u32>,
    /// Per job (restart, engine job): further attempts after device faults and after failed
    /// self-checks.
    pub attempts: BTreeMap<(u32, JobId), (u32, u32)>,
    /// Per API job id: the payload it proves.
    pub payload_of: BTreeMap<String, u8>,
    /// Per request: the job id it was given, or why it was refused.
    pub answers: Vec<Result<(String, bool), String>>,
    /// Job ids whose completed proofs include a corrupted partition.
    pub wrong_proofs: BTreeSet<String>,
    /// Retries started, per fault.
    pub retries: BTreeMap<Fault, u64>,
    /// Per API job id, the faults its further attempts were started for.
    pub retried: BTreeMap<String, Vec<Fault>>,
    /// Devices taken out of service, in order: the restart it happened in, the device and
    /// the time.
    pub retired: Vec<(u32, u32, Nanos)>,
    /// Stage starts on a device after it was taken out of service.
    pub starts_on_retired: u64,
    /// Non-CRITICAL synthesis started while the memory observed was below the margin and no
    /// CRITICAL job was waiting.
    pub starts_while_low: u64,
    /// Stage faults seen.
    pub faults_seen: u64,
    /// Per API job id, at its last end: its synthesis and GPU stage time as the job layer
    /// reported it, and as the simulator timed the stages it ran for it.
    pub stage_time: BTreeMap<String, [(Nanos, Nanos); 2]>,
    /// Broken rules (reports refused, starts of ended jobs, …).
    pub violations: Vec<String>,
    /// Restarts done.
    pub restarts: u32,
}

#[derive(Debug, Clone)]
enum Input {
    Request(usize),
    Cancel(usize),
    StageEnd { epoch: u32, p: PartitionId, stage: Stage, fault: Option<Fault> },
    LoadEnd { epoch: u32, circuit: CircuitId, at: Location },
    Memory(u64),
    Crash,
}

/// The simulator.
pub struct JobSim {
    s: Scenario,
    jobs: Jobs,
    epoch: u32,
    now: Nanos,
    seq: u64,
    queue: BTreeMap<(Nanos, u64), Input>,
    /// API job ids accepted and not ended, with what a journal keeps of them.
    open: BTreeMap<String, usize>,
    /// Per live attempt partition: the MSM result was corrupted.
    corrupt: BTreeSet<(JobId, u32)>,
    /// Per job: its partitions whose proof was corrupted and went out unchecked.
    unchecked_wrong: BTreeMap<JobId, bool>,
    /// Job id of each engine job of this epoch.
    job_ids: BTreeMap<JobId, String>,
    /// Request of each job of this epoch.
    request_of: BTreeMap<JobId, usize>,
    memory: Option<u64>,
    retired_at: BTreeMap<u32, Nanos>,
    /// Per job of this epoch: the synthesis and GPU time of its stages started so far.
    timed: BTreeMap<JobId, (Nanos, Nanos)>,
    /// What a journal keeps of ended jobs: payload and status per job id.
    journal: BTreeMap<String, (u8, EndStatus)>,
    record: Record,
    next_job: u64,
}

/// The one circuit of the simulation.
pub const CIRCUIT: CircuitId = CircuitId(1);

fn engine(devices: u32) -> Engine {
    let cfg = EngineConfig::new(2, 64 * GB, (0..devices).map(|_| DeviceConfig::new(16 * GB)).collect());
    let mut e = Engine::new(cfg, Nanos::ZERO).expect("engine config");
    let profile = CircuitProfile {
        params_host_bytes: GB,
        params_device_bytes: GB,
        params_device_host_bytes: 0,
        footprint: Footprint { host_abc: GB, host_rest: GB / 2, device_abc: GB, device_rest: GB / 2 },
        witness_footprint: None,
        load_host_bytes: 0,
    };
    e.register_circuit(CIRCUIT, profile).expect("circuit");
    e
}

fn payload(n: u8) -> [u8; 32] {
    [n; 32]
}

impl JobSim {
    /// A simulator of `s`.
    pub fn new(s: Scenario) -> JobSim {
        let jobs = Jobs::new(s.config.clone(), engine(s.devices));
        let mut sim = JobSim {
            jobs,
            epoch: 0,
            now: Nanos::ZERO,
            seq: 0,
            queue: BTreeMap::new(),
            open: BTreeMap::new(),
            corrupt: BTreeSet::new(),
            unchecked_wrong: BTreeMap::new(),
            job_ids: BTreeMap::new(),
            request_of: BTreeMap::new(),
            memory: None,
            retired_at: BTreeMap::new(),
            timed: BTreeMap::new(),
            journal: BTreeMap::new(),
            record: Record::default(),
            next_job: 1,
            s,
        };
        for i in 0..sim.s.requests.len() {
            let r = &sim.s.requests[i];
            let (at, cancel) = (r.at, r.cancel_at);
            sim.push(at, Input::Request(i));
            if let Some(c) = cancel {
                sim.push(c, Input::Cancel(i));
            }
        }
        for (t, m) in sim.s.memory.clone() {
            sim.push(t, Input::Memory(m));
        }
        for t in sim.s.crashes.clone() {
            sim.push(t, Input::Crash);
        }
        sim.record.answers = vec![Err("never answered".into()); sim.s.requests.len()];
        sim
    }

    fn push(&mut self, at: Nanos, i: Input) {
        self.seq += 1;
        self.queue.insert((at, self.seq), i);
    }

    /// Runs until nothing is left to do (or `limit` of virtual time); returns the record.
    pub fn run(mut self, limit: Nanos) -> Record {
        let mut steps = 0u64;
        loop {
            steps += 1;
            if steps > 1_000_000 {
                self.record.violations.push(format!("no end after {steps} steps at {:?}", self.now));
                break;
            }
            let next_input = self.queue.keys().next().map(|k| k.0);
            let next_tick = self.jobs.next_timeout();
            let t = match (next_input, next_tick) {
                (None, None) => break,
                (a, b) => a.into_iter().chain(b).min().unwrap_or(Nanos::ZERO),
            };
            if t > limit {
                self.record.violations.push(format!("still running at {limit:?}: {} live jobs", self.jobs.live_count()));
                break;
            }
            self.now = self.now.max(t);
            if self.jobs.watches_memory() {
                self.jobs.observe_memory(self.memory);
            }
            if next_input == Some(t) {
                let (_, input) = self.queue.pop_first().expect("an input");
                self.input(input);
            } else {
                self.jobs.tick(self.now);
            }
            self.events();
        }
        self.record
    }

    fn input(&mut self, i: Input) {
        match i {
            Input::Request(r) => self.request(r, false),
            Input::Cancel(r) => {
                if let Ok((id, _)) = self.record.answers[r].clone() {
                    if let Some(job) = self.jobs.resolve(&super::JobRef::parse(&id).expect("job id")) {
                        let _ = self.jobs.cancel(job, self.now);
                    }
                }
            }
            Input::StageEnd { epoch, p, stage, fault } => {
                if epoch != self.epoch {
                    return;
                }
                let r = match fault {
                    None => self.jobs.stage_finished(p, stage, self.now),
                    Some(f) => self.jobs.stage_failed(p, stage, self.now, Some(f), format!("injected {}", f.name())),
                };
                if let Err(e) = r {
                    self.record.violations.push(format!("stage report refused: {e}"));
                }
            }
            Input::LoadEnd { epoch, circuit, at } => {
                if epoch != self.epoch {
                    return;
                }
                let r = self.jobs.with_engine(self.now, |e, now| e.params_loaded(circuit, at, now));
                if let Err(e) = r {
                    self.record.violations.push(format!("load report refused: {e}"));
                }
            }
            Input::Memory(m) => self.memory = Some(m),
            Input::Crash => self.crash(),
        }
    }

    /// Submits request `r` (again, after a restart, under the id it was given).
    fn request(&mut self, r: usize, restored: bool) {
        let req = self.s.requests[r].clone();
        let request_id = match (restored, &self.record.answers[r]) {
            (true, Ok((id, _))) => id.clone(),
            _ => req.request_id.clone(),
        };
        // As the daemon does: a request id the job layer does not know but the journal has
        // completed with this payload gets the journal's result.
        let unknown = !restored && !request_id.is_empty() && self.jobs.resolve(&super::JobRef::Request(request_id.clone())).is_none();
        if unknown && self.journal.get(&request_id) == Some(&(req.payload, EndStatus::Completed)) {
            self.record.answers[r] = Ok((request_id, true));
            return;
        }
        let sub = Submission { request_id, payload: payload(req.payload), restored, priority: req.priority };
        let answer = match self.jobs.admit(sub) {
            Ok(Admission::Joined { job_id, .. }) => {
                if self.record.payload_of.get(&job_id) != Some(&req.payload) {
                    self.record.violations.push(format!(
                        "request {r} (payload {}) joined {job_id} of payload {:?}",
                        req.payload,
                        self.record.payload_of.get(&job_id)
                    ));
                }
                Ok((job_id, true))
            }
            Ok(Admission::New(ticket)) => {
                let work = Work { circuit: CIRCUIT, partitions: req.partitions, deadline: None, check: req.check, kind: "sim" };
                match self.jobs.submit(ticket, work, self.now) {
                    Ok(Accepted { job, job_id, .. }) => {
                        if let Some(p) = self.record.payload_of.insert(job_id.clone(), req.payload) {
                            if p != req.payload {
                                self.record.violations.push(format!("{job_id} proved payload {p} and then payload {}", req.payload));
                            }
                        }
                        self.job_ids.insert(job, job_id.clone());
                        self.request_of.insert(job, r);
                        self.next_job = self.next_job.max(job.0 + 1);
                        self.open.insert(job_id.clone(), r);
                        if !restored {
                            *self.record.accepted.entry(job_id.clone()).or_default() += 1;
                        }
                        Ok((job_id, false))
                    }
                    Err(e) => Err(e.to_string()),
                }
            }
            Err(e) => Err(e.to_string()),
        };
        if !restored {
            self.record.answers[r] = answer;
        } else if let Err(e) = answer {
            self.record.violations.push(format!("request {r} was not taken up after a restart: {e}"));
        }
    }

    /// Drops the job layer with everything under way and takes the open jobs up again.
    fn crash(&mut self) {
        self.epoch += 1;
        self.timed.clear();
        self.record.restarts += 1;
        let mut jobs = Jobs::new(self.s.config.clone(), engine(self.s.devices));
        jobs.with_engine(self.now, |e, _| e.number_jobs_from(self.next_job));
        for (id, (p, _)) in &self.journal {
            jobs.remember(id, payload(*p));
        }
        if jobs.watches_memory() {
            jobs.observe_memory(self.memory);
        }
        self.jobs = jobs;
        self.corrupt.clear();
        self.job_ids.clear();
        self.request_of.clear();
        self.retired_at.clear();
        let open: Vec<(String, usize)> = std::mem::take(&mut self.open).into_iter().collect();
        for (_, r) in open {
            self.request(r, true);
        }
    }

    fn events(&mut self) {
        while let Some(e) = self.jobs.poll_event() {
            match e {
                Event::Start { dispatch: d, job, check, .. } => {
                    let on_device = match d.location {
                        Location::Device(DeviceId(x)) => Some(x),
                        Location::Host => None,
                    };
                    if on_device.is_some_and(|x| self.retired_at.contains_key(&x)) {
                        self.record.starts_on_retired += 1;
                    }
                    if d.stage == Stage::Synthesize {
                        let critical_waiting = self.jobs.live().any(|j| j.priority == Priority::Critical && !j.started);
                        let low = self.s.config.memory_margin > 0 && self.memory.is_some_and(|m| m < self.s.config.memory_margin);
                        let mine = self.request_of.get(&job).map(|r| self.s.requests[*r].priority);
                        let any_critical = self.s.requests.iter().any(|r| r.priority == Priority::Critical);
                        if low && !critical_waiting && !any_critical && mine != Some(Priority::Critical) {
                            self.record.starts_while_low += 1;
                        }
                    }
                    let h = hash64(&[self.s.seed, u64::from(self.epoch), d.partition.job.0, u64::from(d.partition.index), d.stage as u64]);
                    let mut dur = self.s.stages[Stage::ALL.iter().position(|s| *s == d.stage).unwrap_or(0)];
                    let m = self.s.mishaps;
                    let mut fault = None;
                    if let Some(x) = on_device {
                        if m.broken_device.is_some_and(|(b, from)| b == x && self.now >= from) || chance(m.device_error_ppm, h) {
                            fault = Some(Fault::Device);
                        } else if chance(m.hang_ppm, h.rotate_left(17)) {
                            dur = Dur::fixed(Nanos::from_secs(10_000));
                        }
                        if d.stage == Stage::Msm && fault.is_none() && chance(m.corrupt_ppm, h.rotate_left(31)) {
                            self.corrupt.insert((d.partition.job, d.partition.index));
                        }
                    }
                    if d.stage == Stage::Finalize && self.corrupt.remove(&(d.partition.job, d.partition.index)) {
                        if check {
                            fault = Some(Fault::SelfCheck);
                        } else {
                            self.unchecked_wrong.insert(job, true);
                        }
                    }
                    let took = sample(dur, h.rotate_left(7));
                    let t = self.timed.entry(job).or_default();
                    match d.stage {
                        Stage::Synthesize => t.0 += took,
                        Stage::Upload | Stage::Ntt | Stage::Msm => t.1 += took,
                        Stage::Finalize => {}
                    }
                    let epoch = self.epoch;
                    self.push(self.now + took, Input::StageEnd { epoch, p: d.partition, stage: d.stage, fault });
                }
                Event::Load { circuit, to, .. } => {
                    let epoch = self.epoch;
                    self.push(self.now + Nanos::from_millis(50), Input::LoadEnd { epoch, circuit, at: to });
                }
                Event::Retrying { job, fault, .. } => {
                    *self.record.retries.entry(fault).or_default() += 1;
                    if let Some(id) = self.job_ids.get(&job) {
                        self.record.retried.entry(id.clone()).or_default().push(fault);
                    }
                    let a = self.record.attempts.entry((self.epoch, job)).or_default();
                    if fault == Fault::SelfCheck {
                        a.1 += 1;
                    } else {
                        a.0 += 1;
                    }
                }
                Event::DeviceRetired { device, .. } => {
                    self.retired_at.insert(device, self.now);
                    self.record.retired.push((self.epoch, device, self.now));
                }
                Event::Fault { .. } => self.record.faults_seen += 1,
                Event::Ended { job, end } => {
                    let Some(id) = self.job_ids.get(&job).cloned() else {
                        self.record.violations.push(format!("job {job:?} of no request ended"));
                        continue;
                    };
                    if end.job_id != id {
                        self.record.violations.push(format!("job {job:?} ended as {} but was accepted as {id}", end.job_id));
                    }
                    let wrong = self.unchecked_wrong.remove(&job).unwrap_or(false);
                    if end.status == EndStatus::Completed && wrong {
                        self.record.wrong_proofs.insert(id.clone());
                    }
                    self.open.remove(&id);
                    if let Some(p) = self.record.payload_of.get(&id) {
                        self.journal.insert(id.clone(), (*p, end.status));
                    }
                    let timed = self.timed.remove(&job).unwrap_or_default();
                    self.record.stage_time.insert(id.clone(), [(end.synthesis, end.gpu), timed]);
                    self.record.ends.entry(id).or_default().push((end.status, self.now));
                }
                Event::MatricesReserved { .. }
                | Event::Evict { .. }
                | Event::AttemptEnded(_)
                | Event::Watchdog { .. }
                | Event::Held
                | Event::Released
                | Event::Forgotten(_) => {}
            }
        }
    }
}
