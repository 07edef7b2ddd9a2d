//! A deterministic simulator that drives an [`Engine`] with modelled stage and load
//! durations and injected faults (in the spirit of quinn-proto's test `Pair` and str0m's
//! netem): a virtual clock, an ordered event queue, a seeded generator, and an independent
//! ledger of every byte the actions reserve and release.
//!
//! Same seed and inputs, same run: every event is ordered by (time, sequence number), and
//! the modelled duration and fault of a stage are a hash of (seed, job, partition, stage),
//! so they do not depend on the order in which the engine happened to schedule things.

use std::collections::{BTreeMap, BTreeSet};

use crate::prover::Stage;

use super::{Action, CircuitId, CircuitProfile, DeviceId, Dispatch, Engine, EngineConfig, EngineError, JobId, JobSpec, Location, Nanos, Outcome, PartitionId};

/// A modelled duration: uniform in `[base, base + jitter]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Dur {
    /// Shortest.
    pub base: Nanos,
    /// Spread above `base`.
    pub jitter: Nanos,
}

impl Dur {
    /// Exactly `t`.
    pub const fn fixed(t: Nanos) -> Dur {
        Dur { base: t, jitter: Nanos::ZERO }
    }

    /// Uniform in `[base, base + jitter]`.
    pub const fn spread(base: Nanos, jitter: Nanos) -> Dur {
        Dur { base, jitter }
    }

    /// The longest it can be.
    pub fn max(&self) -> Nanos {
        self.base + self.jitter
    }
}

/// Durations for one circuit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CircuitModel {
    /// Per stage, in [`Stage::ALL`] order.
    pub stages: [Dur; 5],
    /// Loading parameters onto a device.
    pub load_device: Dur,
    /// Loading parameters into host memory.
    pub load_host: Dur,
}

impl CircuitModel {
    /// The modelled duration of `stage`.
    pub fn stage(&self, stage: Stage) -> Dur {
        self.stages[stage_index(stage)]
    }

    /// The longest a partition can keep a GPU worker busy (upload + NTT + MSM).
    pub fn max_gpu(&self) -> Nanos {
        self.stage(Stage::Upload).max() + self.stage(Stage::Ntt).max() + self.stage(Stage::Msm).max()
    }
}

fn stage_index(stage: Stage) -> usize {
    Stage::ALL.iter().position(|s| *s == stage).unwrap_or(0)
}

/// Injected faults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Faults {
    /// Chance that a stage fails, in parts per million.
    pub stage_fail_ppm: u32,
    /// Chance that a parameter load fails, in parts per million.
    pub load_fail_ppm: u32,
    /// A device that breaks at a time: every device stage (upload, NTT, MSM) that starts
    /// there at or after that time fails.
    pub failing_device: Option<(DeviceId, Nanos)>,
}

/// Everything the simulator models.
#[derive(Debug, Clone, Default)]
pub struct Model {
    /// Per-circuit durations.
    pub circuits: BTreeMap<CircuitId, CircuitModel>,
    /// Durations for circuits not listed.
    pub default: CircuitModel,
    /// Faults.
    pub faults: Faults,
    /// Device bytes of a circuit's constraint matrices, reported to the engine
    /// ([`Engine::matrices_recorded`]) when the first synthesis of the circuit succeeds, as
    /// the daemon's driver does; circuits not listed have none.
    pub matrices: BTreeMap<CircuitId, u64>,
}

impl Model {
    fn circuit(&self, c: CircuitId) -> &CircuitModel {
        self.circuits.get(&c).unwrap_or(&self.default)
    }
}

/// SplitMix64: small, fast, deterministic.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, n]`.
    pub fn upto(&mut self, n: u64) -> u64 {
        if n == u64::MAX {
            self.next_u64()
        } else {
            self.next_u64() % (n + 1)
        }
    }

    /// True with probability `ppm / 1e6`.
    pub fn chance(&mut self, ppm: u32) -> bool {
        ppm > 0 && self.next_u64() % 1_000_000 < u64::from(ppm)
    }
}

/// A 64-bit hash of `parts` (SplitMix64 over each word).
pub fn hash64(parts: &[u64]) -> u64 {
    let mut r = Rng::new(0x243F_6A88_85A3_08D3);
    let mut h = 0u64;
    for p in parts {
        r.0 ^= p.wrapping_add(h);
        h = r.next_u64();
    }
    h
}

/// A duration drawn from `d` by the hash `h`.
pub(crate) fn sample(d: Dur, h: u64) -> Nanos {
    let j = d.jitter.0;
    d.base + Nanos(if j == u64::MAX { h } else { h % (j + 1) })
}

/// True with probability `ppm / 1e6`, decided by the hash `h`.
pub(crate) fn chance(ppm: u32, h: u64) -> bool {
    ppm > 0 && h % 1_000_000 < u64::from(ppm)
}

#[derive(Debug, Clone)]
enum Event {
    Submit { ticket: usize, spec: JobSpec },
    Cancel { ticket: usize },
    Preload { circuit: CircuitId, at: Location },
    StageEnd { p: PartitionId, circuit: CircuitId, stage: Stage, location: Location, fail: bool },
    LoadEnd { circuit: CircuitId, at: Location, fail: bool },
    Retire { device: DeviceId },
    Tick,
}

/// One entry of [`SimLog::trace`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trace {
    /// A stage started.
    Start {
        /// When.
        at: Nanos,
        /// What and where.
        dispatch: Dispatch,
    },
    /// The end of a stage was reported to the engine.
    End {
        /// When.
        at: Nanos,
        /// The partition.
        partition: PartitionId,
        /// The stage.
        stage: Stage,
        /// Where it ran.
        location: Location,
        /// Reported as failed.
        failed: bool,
    },
    /// The engine accepted the retirement of a device.
    Retired {
        /// When.
        at: Nanos,
        /// The device.
        device: DeviceId,
    },
    /// A job ended (its outcome is in [`SimLog::ends`]).
    JobEnded {
        /// When.
        at: Nanos,
        /// The job.
        job: JobId,
    },
}

/// What the simulator observed.
#[derive(Debug, Clone, Default)]
pub struct SimLog {
    /// Every `JobEnded` per job, in order (more than one entry is a bug).
    pub ends: BTreeMap<JobId, Vec<(Nanos, Outcome)>>,
    /// Submissions the engine refused, by ticket.
    pub rejected: Vec<(usize, EngineError)>,
    /// Caller requests the engine refused (cancelling an ended job, a preload that did not fit).
    pub refused: Vec<EngineError>,
    /// Broken invariants: over-budget or negative ledgers, refused stage or load reports,
    /// failed consistency checks.
    pub violations: Vec<String>,
    /// Bytes reserved minus released per location, from the actions alone.
    pub ledger: BTreeMap<Location, i128>,
    /// Highest ledger value per location.
    pub peak: BTreeMap<Location, i128>,
    /// Every `Start`, in order, with its time.
    pub starts: Vec<(Nanos, Dispatch)>,
    /// Stage starts and ends, device retirements and job ends, in the order the simulator
    /// saw them (ties in time keep their order here).
    pub trace: Vec<Trace>,
    /// Every upload started (with `record_starts`): the dispatch, and whether the engine had
    /// reserved the circuit's matrices on that device (from the actions) when it started.
    pub uploads: Vec<(Dispatch, bool)>,
    /// Number of actions executed.
    pub actions: u64,
    /// Number of parameter evictions (including failed loads).
    pub evictions: u64,
    /// Number of inputs fed.
    pub inputs: u64,
}

/// The simulator: an engine, a virtual clock and a queue of future events.
#[derive(Debug, Clone)]
pub struct Sim {
    engine: Engine,
    model: Model,
    seed: u64,
    loads: u64,
    now: Nanos,
    seq: u64,
    queue: BTreeMap<(Nanos, u64), Event>,
    ticks: BTreeSet<Nanos>,
    tickets: Vec<Option<JobId>>,
    profiles: BTreeMap<CircuitId, CircuitProfile>,
    /// Circuits whose matrices were reported.
    recorded: BTreeSet<CircuitId>,
    /// Device copies whose matrices are reserved, from the actions.
    matrices_on: BTreeSet<(CircuitId, DeviceId)>,
    /// Check [`Engine::check_consistency`] after every input (slower; on by default).
    pub check_each_step: bool,
    /// Record every start in [`SimLog::starts`] and [`SimLog::trace`] (on by default).
    pub record_starts: bool,
    log: SimLog,
}

impl Sim {
    /// A simulator starting at time zero.
    pub fn new(cfg: EngineConfig, model: Model, seed: u64) -> Result<Sim, EngineError> {
        Ok(Sim {
            engine: Engine::new(cfg, Nanos::ZERO)?,
            model,
            seed,
            loads: 0,
            now: Nanos::ZERO,
            seq: 0,
            queue: BTreeMap::new(),
            ticks: BTreeSet::new(),
            tickets: Vec::new(),
            profiles: BTreeMap::new(),
            recorded: BTreeSet::new(),
            matrices_on: BTreeSet::new(),
            check_each_step: true,
            record_starts: true,
            log: SimLog::default(),
        })
    }

    /// Registers a circuit with the engine.
    pub fn register(&mut self, id: CircuitId, profile: CircuitProfile) -> Result<(), EngineError> {
        self.engine.register_circuit(id, profile)?;
        self.profiles.insert(id, profile);
        Ok(())
    }

    /// Checks the state after a run to completion: no violation was seen; every accepted
    /// job ended exactly once; the engine is quiescent; and the ledger of every location
    /// holds exactly the resident parameters there, with the matrices of the device copies
    /// that include them (no reservation leaked).
    pub fn audit(&self) -> Result<(), String> {
        if let Some(v) = self.log.violations.first() {
            return Err(format!("{} violations, first: {v}", self.log.violations.len()));
        }
        for (ticket, job) in self.tickets.iter().enumerate() {
            let Some(job) = job else { continue };
            match self.log.ends.get(job).map(Vec::len) {
                Some(1) => {}
                n => return Err(format!("ticket {ticket} ({job:?}) ended {} times", n.unwrap_or(0))),
            }
        }
        if !self.engine.is_quiescent() {
            return Err("engine not quiescent".into());
        }
        let n = self.engine.config().devices.len() as u32;
        let locs = std::iter::once(Location::Host).chain((0..n).map(|d| Location::Device(super::DeviceId(d))));
        for at in locs {
            let mut params = 0i128;
            for (id, p) in &self.profiles {
                if self.engine.presence(*id, at) == Some(super::Presence::Resident) {
                    let b = if at == Location::Host { p.params_host_bytes } else { p.params_device_bytes };
                    params += i128::from(b);
                    if self.engine.matrices_at(*id, at) == Some(true) {
                        params += i128::from(self.engine.matrices_bytes(*id).unwrap_or(0));
                    }
                }
            }
            if at == Location::Host {
                // Streamed device copies hold their bases in host memory.
                for (id, p) in &self.profiles {
                    let copies = (0..n).filter(|d| self.engine.presence(*id, Location::Device(super::DeviceId(*d))) == Some(super::Presence::Resident)).count();
                    params += i128::from(p.params_device_host_bytes) * copies as i128;
                }
            }
            let ledger = self.log.ledger.get(&at).copied().unwrap_or(0);
            let used = self.engine.usage(at).map_or(0, |u| i128::from(u.used));
            if ledger != params || used != params {
                return Err(format!("{at:?}: ledger {ledger}, engine {used}, resident parameters {params}"));
            }
        }
        Ok(())
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// What was observed so far.
    pub fn log(&self) -> &SimLog {
        &self.log
    }

    /// The virtual clock.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// The job a ticket from [`Sim::submit_at`] became, once submitted and accepted.
    pub fn job(&self, ticket: usize) -> Option<JobId> {
        self.tickets.get(ticket).copied().flatten()
    }

    fn push(&mut self, at: Nanos, e: Event) {
        self.seq += 1;
        self.queue.insert((at.max(self.now), self.seq), e);
    }

    /// Submits `spec` at time `at`; returns a ticket for [`Sim::job`] and [`Sim::cancel_at`].
    pub fn submit_at(&mut self, at: Nanos, spec: JobSpec) -> usize {
        let ticket = self.tickets.len();
        self.tickets.push(None);
        self.push(at, Event::Submit { ticket, spec });
        ticket
    }

    /// Cancels the job of `ticket` at time `at`.
    pub fn cancel_at(&mut self, at: Nanos, ticket: usize) {
        self.push(at, Event::Cancel { ticket });
    }

    /// Preloads parameters at time `at`.
    pub fn preload_at(&mut self, at: Nanos, circuit: CircuitId, to: Location) {
        self.push(at, Event::Preload { circuit, at: to });
    }

    /// Retires a device at time `at` (a refusal is logged in [`SimLog::refused`]).
    pub fn retire_at(&mut self, at: Nanos, device: DeviceId) {
        self.push(at, Event::Retire { device });
    }

    /// Retires a device now, as a driver reacting to what it just saw would, and executes
    /// the actions that follow.
    pub fn retire_device(&mut self, device: DeviceId) -> Result<(), EngineError> {
        self.log.inputs += 1;
        let r = self.retire(device);
        self.drain();
        r
    }

    fn retire(&mut self, device: DeviceId) -> Result<(), EngineError> {
        let was = self.engine.in_service(device);
        self.engine.retire_device(device, self.now)?;
        if was && self.record_starts {
            self.log.trace.push(Trace::Retired { at: self.now, device });
        }
        Ok(())
    }

    /// Runs every event up to and including time `t`; returns the number processed.
    pub fn run_until(&mut self, t: Nanos) -> u64 {
        let mut n = 0;
        while let Some(entry) = self.queue.first_entry() {
            if entry.key().0 > t {
                break;
            }
            let ((at, _), e) = entry.remove_entry();
            self.now = self.now.max(at);
            self.handle(e);
            n += 1;
        }
        n
    }

    /// Runs until no event is left or `max_events` were processed; returns the number
    /// processed.
    pub fn run(&mut self, max_events: u64) -> u64 {
        let mut n = 0;
        while n < max_events {
            let Some(((at, _), e)) = self.queue.pop_first() else { break };
            self.now = self.now.max(at);
            self.handle(e);
            n += 1;
        }
        n
    }

    fn handle(&mut self, e: Event) {
        let now = self.now;
        self.log.inputs += 1;
        match e {
            Event::Submit { ticket, spec } => match self.engine.submit(spec, now) {
                Ok(id) => {
                    if let Some(t) = self.tickets.get_mut(ticket) {
                        *t = Some(id);
                    }
                }
                Err(err) => self.log.rejected.push((ticket, err)),
            },
            Event::Cancel { ticket } => {
                if let Some(id) = self.job(ticket) {
                    if let Err(err) = self.engine.cancel(id, now) {
                        self.log.refused.push(err);
                    }
                }
            }
            Event::Preload { circuit, at } => {
                if let Err(err) = self.engine.preload(circuit, at, now) {
                    self.log.refused.push(err);
                }
            }
            Event::StageEnd { p, circuit, stage, location, fail } => {
                if self.record_starts {
                    self.log.trace.push(Trace::End { at: now, partition: p, stage, location, failed: fail });
                }
                if stage == Stage::Synthesize && !fail {
                    self.report_matrices(circuit);
                }
                let r = if fail { self.engine.stage_failed(p, stage, now, "injected fault") } else { self.engine.stage_finished(p, stage, now) };
                if let Err(err) = r {
                    self.log.violations.push(format!("stage report refused: {err}"));
                }
            }
            Event::LoadEnd { circuit, at, fail } => {
                if matches!(at, Location::Device(_)) {
                    // The query the load held in flight.
                    let q = self.profiles.get(&circuit).map_or(0, |p| p.load_host_bytes);
                    self.account(Location::Host, -i128::from(q));
                }
                let r = if fail { self.engine.params_load_failed(circuit, at, now, "injected fault") } else { self.engine.params_loaded(circuit, at, now) };
                if let Err(err) = r {
                    self.log.violations.push(format!("load report refused: {err}"));
                }
            }
            Event::Retire { device } => {
                if let Err(err) = self.retire(device) {
                    self.log.refused.push(err);
                }
            }
            Event::Tick => {
                self.ticks.remove(&now);
                self.engine.tick(now);
            }
        }
        self.drain();
    }

    /// After a synthesis of `job`: the first of its circuit reports the circuit's matrices
    /// (an input of its own, drained before the stage's report).
    fn report_matrices(&mut self, circuit: CircuitId) {
        let Some(&bytes) = self.model.matrices.get(&circuit) else { return };
        if !self.recorded.insert(circuit) {
            return;
        }
        self.log.inputs += 1;
        if let Err(err) = self.engine.matrices_recorded(circuit, bytes, self.now) {
            self.log.violations.push(format!("matrices report refused: {err}"));
        }
        self.drain();
    }

    fn drain(&mut self) {
        while let Some(a) = self.engine.poll_action() {
            self.execute(a);
        }
        if let Some(t) = self.engine.next_deadline() {
            if self.ticks.insert(t) {
                self.push(t, Event::Tick);
            }
        }
        if self.check_each_step {
            if let Err(e) = self.engine.check_consistency() {
                self.log.violations.push(format!("at {}: {e}", self.now));
            }
        }
    }

    fn capacity(&self, at: Location) -> i128 {
        self.engine.usage(at).map_or(0, |u| i128::from(u.capacity))
    }

    fn account(&mut self, at: Location, delta: i128) {
        let cap = self.capacity(at);
        let v = self.log.ledger.entry(at).or_insert(0);
        *v += delta;
        let v = *v;
        let peak = self.log.peak.entry(at).or_insert(0);
        *peak = (*peak).max(v);
        if v < 0 || v > cap {
            self.log.violations.push(format!("at {}: ledger {at:?} = {v} outside [0, {cap}]", self.now));
        }
    }

    fn execute(&mut self, a: Action) {
        self.log.actions += 1;
        let now = self.now;
        match a {
            Action::Start(d) => {
                self.account(d.location, i128::from(d.reserved));
                let m = *self.model.circuit(d.circuit);
                let (job, index) = (d.partition.job.0, u64::from(d.partition.index));
                let key = [self.seed, job, index, stage_index(d.stage) as u64];
                let dur = sample(m.stage(d.stage), hash64(&key));
                let broken = matches!((self.model.faults.failing_device, d.location), (Some((b, t)), Location::Device(x)) if x == b && now >= t);
                let fail = broken || chance(self.model.faults.stage_fail_ppm, hash64(&[key[0], key[1], key[2], key[3], 1]));
                self.push(now + dur, Event::StageEnd { p: d.partition, circuit: d.circuit, stage: d.stage, location: d.location, fail });
                if self.record_starts {
                    if let (Stage::Upload, Location::Device(dev)) = (d.stage, d.location) {
                        let m = self.matrices_on.contains(&(d.circuit, dev));
                        self.log.uploads.push((d.clone(), m));
                    }
                    self.log.trace.push(Trace::Start { at: now, dispatch: d.clone() });
                    self.log.starts.push((now, d));
                }
            }
            Action::Release { location, bytes, .. } => self.account(location, -i128::from(bytes)),
            Action::LoadParams { circuit, to, bytes, .. } => {
                self.account(to, i128::from(bytes));
                if matches!(to, Location::Device(_)) {
                    // Streamed bases, and the query the load holds in flight.
                    let h = self.profiles.get(&circuit).map_or(0, |p| p.params_device_host_bytes.saturating_add(p.load_host_bytes));
                    self.account(Location::Host, i128::from(h));
                }
                let m = *self.model.circuit(circuit);
                let d = if matches!(to, Location::Host) { m.load_host } else { m.load_device };
                self.loads += 1;
                let h = hash64(&[self.seed, u64::from(circuit.0), self.loads, 2]);
                let dur = sample(d, h);
                let fail = chance(self.model.faults.load_fail_ppm, hash64(&[h, 3]));
                self.push(now + dur, Event::LoadEnd { circuit, at: to, fail });
            }
            Action::MatricesReserved { circuit, device, bytes } => {
                self.matrices_on.insert((circuit, device));
                self.account(Location::Device(device), i128::from(bytes));
            }
            Action::EvictParams { circuit, from, bytes } => {
                if let Location::Device(d) = from {
                    self.matrices_on.remove(&(circuit, d));
                }
                self.log.evictions += 1;
                self.account(from, -i128::from(bytes));
                if matches!(from, Location::Device(_)) {
                    let h = self.profiles.get(&circuit).map_or(0, |p| p.params_device_host_bytes);
                    self.account(Location::Host, -i128::from(h));
                }
            }
            Action::JobEnded { job, outcome } => {
                if self.record_starts {
                    self.log.trace.push(Trace::JobEnded { at: now, job });
                }
                self.log.ends.entry(job).or_default().push((now, outcome));
            }
        }
    }
}
