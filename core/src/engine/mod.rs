//! The sans-io engine: a state machine that schedules partitions of proof jobs through
//! synthesize → upload → NTT → MSM → finalize across CPU workers and GPUs.
//!
//! It schedules; it does not compute. It never blocks, owns no threads and never reads a
//! clock: every input carries the time ([`Nanos`]) at which it happened on the caller's clock.
//!
//! # Driving the engine (the drain contract)
//!
//! ```text
//! loop {
//!     feed ONE input:  submit / stage_finished / stage_failed / cancel /
//!                      preload / evict / params_loaded / params_load_failed /
//!                      matrices_recorded / retire_device / tick
//!     while let Some(action) = engine.poll_action() { execute(action) }
//! }
//! ```
//!
//! 1. After every input, call [`Engine::poll_action`] until it returns `None`. Actions are
//!    produced only by inputs, so once drained nothing new appears until the next input.
//! 2. Execute actions in the order they come. [`Action::Release`],
//!    [`Action::MatricesReserved`] and [`Action::EvictParams`] are cheap (return buffers to a pool, free device memory) and
//!    must be done before the actions that follow them: the engine counts that memory as free
//!    the moment it emits them and may hand it out in the very next action.
//! 3. [`Action::Start`] and [`Action::LoadParams`] are long: run them elsewhere (a task, a
//!    stream) and report their end with [`Engine::stage_finished`] / [`Engine::stage_failed`]
//!    or [`Engine::params_loaded`] / [`Engine::params_load_failed`], passing the time they
//!    ended. Every `Start` must be reported exactly once, even if its job was cancelled.
//! 4. Call [`Engine::tick`] at [`Engine::next_deadline`] (if any) so deadlines fire.
//! 5. An input that returns an error changed nothing (a late or duplicate report, an unknown
//!    job, …); it is safe to log and continue. Times earlier than the last one seen are
//!    treated as the last one.
//!
//! [`Action::JobEnded`] is emitted exactly once per accepted job. When a job is cancelled or
//! fails, its idle partitions release everything at once; partitions in the middle of a
//! stage release at the end of that stage (the next stage boundary), which the caller still
//! reports.
//!
//! # Policies
//!
//! * Priority CRITICAL > HIGH > NORMAL > LOW wins at every free slot (synthesis worker, GPU
//!   worker, kernel lane, finalize worker); older jobs first within a priority; the partitions
//!   of a job are synthesized and sent to a GPU in index order, and take a device's kernel
//!   lanes in that order (so with one lane they leave the device in order). Running stages
//!   are never interrupted. CRITICAL work skips the synthesis look-ahead limit, has one more
//!   GPU worker per device (taken when the others are busy and the device has free memory for
//!   it, evicting nothing: its upload overlaps the running kernels and it takes the next free
//!   kernel lane) and may use the `critical_*_reserve` memory.
//! * The GPU path never waits on finalize: a partition leaves its GPU worker, kernel lane and
//!   device memory when its MSM ends, and the next partition's GPU work is dispatched in the
//!   same drain, before its finalize starts.
//! * Memory: host bytes are reserved at synthesis (`a, b, c` released after the upload or the
//!   NTT, the rest after finalize), device bytes at upload (`a, b, c` released after the NTT,
//!   the rest after the MSM). A reservation is made only when it fits; budgets are never
//!   exceeded. A waiting partition that does not fit holds back later-ordered work from
//!   that device until memory drains, so large partitions are not starved by small ones.
//! * Parameters (hot on a device, warm in host memory, cold on disk): a partition runs only
//!   on a device holding its circuit's parameters; among those the least busy is chosen.
//!   Parameters are loaded when a job is submitted (onto up to one device per partition, if
//!   memory nobody needs allows), when a synthesized partition needs them, or onto an idle
//!   device that waiting work could use. When memory is needed, the least recently used
//!   parameters are evicted among those no partition on that device uses and no started
//!   partition of an earlier-ordered job still needs (unless another device holds a copy).
//!   A device load reads the warm host copy when there is one, and holds one decoded query
//!   in host memory while it runs ([`CircuitProfile::load_host_bytes`]): the largest such
//!   query among the registered circuits is set aside in the host budget, which nothing but
//!   loads in flight may use. A device load is decided (its memory reserved) only when its
//!   query fits the host budget beside everything but the loads in flight (evicting idle
//!   copies as for parameters), and asked for only when its query fits the set-aside beside
//!   the loads in flight, in the order loads were decided. A load thus waits only for other
//!   loads, never for a partition. Once a circuit's constraint
//!   matrices are known ([`Engine::matrices_recorded`]) its device copies include them where
//!   they fit: counted, evicted and replaced like the parameters they belong to.
//! * Witness-only circuits ([`CircuitProfile::witness_footprint`]): a partition synthesized
//!   while a device in service that may take its job (not the one it avoids) holds the
//!   circuit's copy with matrices reserves only the witness on the host, and is then uploaded
//!   only to a device whose copy includes the matrices: it waits while such a copy is there
//!   or loading, and otherwise has a copy grown to include them or loaded with them (evicting
//!   as for parameters). A replica elsewhere makes the copy such partitions wait for
//!   evictable only when it too includes the matrices. Other partitions reserve the full
//!   footprint and go anywhere (the upload evaluates `a, b, c` on the host where the matrices
//!   are not reserved). Should no device that may take a waiting witness partition be able
//!   to hold such a copy any more (retired), it goes anywhere by the host path, whose
//!   `a, b, c` are then beyond the host reservation until its upload ends.
//! * Devices: a job may avoid a device ([`JobSpec::avoiding`], e.g. a retry after a fault
//!   there): its partitions go elsewhere when they can. A retired device
//!   ([`Engine::retire_device`]) gets no new partitions or parameters; jobs no device in
//!   service can run fail with [`JobFailure::NoDevice`]. A fallback device
//!   ([`DeviceConfig::fallback`], the CPU beside the GPUs) takes only what no other device
//!   may: a job avoiding the one other device in service, or everything once none is.
//!
//! See [`sim`] for a deterministic simulator that drives the engine.

mod action;
mod config;
mod error;
mod flow;
mod inspect;
mod job;
mod pool;
mod residency;
mod sched;
pub mod sim;
mod timeline;
mod types;

use std::collections::{BTreeMap, BTreeSet, VecDeque};

pub use action::{Action, Dispatch, JobFailure, Outcome};
pub use config::{CircuitProfile, DeviceConfig, EngineConfig, Footprint};
pub use error::EngineError;
pub use residency::Presence;
pub use timeline::{DeviceReport, EndKind, Gap, IdleCause, JobRecord, Span, SpanKind, Timeline};
pub use types::{Buffers, CircuitId, DeviceId, JobId, JobKind, JobSpec, Location, Nanos, PartitionId, Priority, Tier};

pub use crate::prover::Stage;

use job::{Job, JobKey, PartKey, Phase};
use pool::{DeviceState, Pool, Slots};
use residency::{CircuitState, Evict};
use timeline::JobRecord as Record;

/// Memory use of one budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryUsage {
    /// Bytes reserved now.
    pub used: u64,
    /// The budget.
    pub capacity: u64,
    /// Bytes of the budget set aside for the query a device load holds in flight, which
    /// nothing else may use (the largest [`CircuitProfile::load_host_bytes`] registered; 0
    /// on devices).
    pub set_aside: u64,
    /// Bytes of `used` that device loads in flight hold.
    pub in_loads: u64,
}

/// A circuit whose constraint matrices fit no device in service beside its parameters and one
/// partition ([`Engine::matrices_shortfall`]): its partitions take the host path (`a, b, c`
/// evaluated on the host and copied) on every device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatricesShortfall {
    /// The device that comes closest.
    pub device: DeviceId,
    /// Bytes the parameters, the matrices and one partition take together.
    pub needed: u64,
    /// Bytes of that device's budget that non-CRITICAL work may use.
    pub usable: u64,
    /// That device's budget.
    pub budget: u64,
}

impl MatricesShortfall {
    /// The device budget that would hold them (the budget grown by the shortfall).
    pub fn budget_needed(&self) -> u64 {
        self.budget.saturating_add(self.needed.saturating_sub(self.usable))
    }
}

/// The scheduler state machine. See the [module documentation](self) for how to drive it.
#[derive(Debug, Clone)]
pub struct Engine {
    cfg: EngineConfig,
    now: Nanos,
    circuits: BTreeMap<crate::engine::CircuitId, CircuitState>,
    jobs: BTreeMap<JobId, Job>,
    next_job: u64,
    /// Jobs with partitions still to synthesize.
    synth_queue: BTreeSet<JobKey>,
    /// Synthesized partitions waiting for a GPU that are next in line in their job (at most
    /// one per job; the others wait in their job until their turn).
    gpu_ready: BTreeSet<PartKey>,
    /// Partitions waiting for a finalize worker.
    finalize_queue: BTreeSet<PartKey>,
    devices: Vec<DeviceState>,
    host: Pool,
    synth_slots: Slots,
    finalize_slots: Slots,
    /// Non-CRITICAL partitions synthesizing or waiting for a GPU.
    lookahead: u32,
    deadlines: BTreeSet<(Nanos, JobId)>,
    actions: VecDeque<Action>,
    timeline: Timeline,
    live_jobs: usize,
    /// Partitions of live jobs that have not yet been admitted to a GPU.
    gpu_waiting: u64,
    /// The last synthesis pass stopped on host memory.
    host_blocked: bool,
    lru_clock: u64,
    /// Devices held by a waiting partition during a dispatch pass.
    claimed: Vec<bool>,
    /// Circuits (with CRITICAL flag, avoided device and whether bound to a copy with
    /// matrices) that could not be dispatched in this pass.
    stuck: Vec<(CircuitId, bool, Option<DeviceId>, bool)>,
    /// Device loads reserved but not yet asked for, waiting for room for their query in the
    /// host bytes set aside for loads, in the order they were decided.
    load_queue: VecDeque<(CircuitId, DeviceId)>,
}

impl Engine {
    /// A new engine at time `now`.
    pub fn new(cfg: EngineConfig, now: Nanos) -> Result<Engine, EngineError> {
        cfg.validate()?;
        let devices = cfg.devices.iter().map(|d| DeviceState::new(d, cfg.critical_device_reserve)).collect();
        Ok(Engine {
            host: Pool::new(cfg.host_memory_bytes, cfg.critical_host_reserve),
            synth_slots: Slots::new(cfg.synth_workers),
            finalize_slots: Slots::new(cfg.finalize_workers),
            timeline: Timeline::new(cfg.devices.len(), cfg.timeline_capacity, now),
            claimed: vec![false; cfg.devices.len()],
            stuck: Vec::new(),
            load_queue: VecDeque::new(),
            devices,
            cfg,
            now,
            circuits: BTreeMap::new(),
            jobs: BTreeMap::new(),
            next_job: 0,
            synth_queue: BTreeSet::new(),
            gpu_ready: BTreeSet::new(),
            finalize_queue: BTreeSet::new(),
            lookahead: 0,
            deadlines: BTreeSet::new(),
            actions: VecDeque::new(),
            live_jobs: 0,
            gpu_waiting: 0,
            host_blocked: false,
            lru_clock: 0,
        })
    }

    /// Registers a circuit and the memory it needs. Produces no actions. A witness footprint
    /// ([`CircuitProfile::witness_footprint`]) must have `footprint`'s device side and no
    /// larger a host side ([`EngineError::InvalidConfig`] otherwise).
    pub fn register_circuit(&mut self, id: CircuitId, profile: CircuitProfile) -> Result<(), EngineError> {
        if self.circuits.contains_key(&id) {
            return Err(EngineError::CircuitExists(id));
        }
        if !profile.witness_ok() {
            return Err(EngineError::InvalidConfig("a witness footprint needs the footprint's device side and at most its host side"));
        }
        if profile.load_host_bytes > self.host.set_aside {
            self.check_set_aside(id, profile.load_host_bytes)?;
            self.host.set_aside = profile.load_host_bytes;
        }
        self.circuits.insert(id, CircuitState::new(profile, self.devices.len()));
        Ok(())
    }

    /// Whether `bytes` may be set aside in the host budget for device loads of `circuit`:
    /// they fit the budget, and every accepted job's partitions still fit what is left.
    fn check_set_aside(&self, circuit: CircuitId, bytes: u64) -> Result<(), EngineError> {
        let capacity = self.host.capacity;
        let refuse = |capacity| Err(EngineError::LoadTooLarge { circuit, need: bytes, capacity });
        if bytes > capacity {
            return refuse(capacity);
        }
        for j in self.jobs.values().filter(|j| !j.ended) {
            let Some(c) = self.circuits.get(&j.spec.circuit) else { continue };
            let need = c.profile.footprint.host().saturating_add(c.copy_host_bytes());
            let reserve = if j.key.critical() { 0 } else { self.host.reserve };
            let left = capacity.saturating_sub(reserve).saturating_sub(need);
            if bytes > left {
                return refuse(left);
            }
        }
        Ok(())
    }

    /// Numbers the jobs accepted from now on from `first` (or later): the owner of a journal
    /// of an earlier run keeps the numbers it gave out.
    pub fn number_jobs_from(&mut self, first: u64) {
        self.next_job = self.next_job.max(first);
    }

    /// Accepts a job; it will end with exactly one [`Action::JobEnded`]. When no device in
    /// service can run it (every device that could was retired) it fails at once with
    /// [`JobFailure::NoDevice`].
    pub fn submit(&mut self, spec: JobSpec, now: Nanos) -> Result<JobId, EngineError> {
        let c = self.circuits.get(&spec.circuit).ok_or(EngineError::UnknownCircuit(spec.circuit))?;
        if spec.partitions == 0 {
            return Err(EngineError::NoPartitions);
        }
        if let Some(d) = spec.avoid.filter(|d| d.0 as usize >= self.devices.len()) {
            return Err(EngineError::UnknownDevice(d));
        }
        let crit = spec.priority == Priority::Critical;
        let fp = c.profile.footprint;
        let host_cap = self.host.usable(crit);
        // A streamed circuit's device copy holds host memory beside one partition.
        let host_need = fp.host().saturating_add(c.copy_host_bytes());
        if host_need > host_cap {
            let (need, capacity) = (host_need, host_cap);
            return Err(EngineError::TooLarge { circuit: spec.circuit, location: Location::Host, need, capacity });
        }
        let dev_need = fp.device().saturating_add(c.profile.params_device_bytes);
        let dev_cap = self.devices.iter().map(|d| d.pool.usable(crit)).max().unwrap_or(0);
        if dev_need > dev_cap {
            let location = Location::Device(DeviceId(0));
            return Err(EngineError::TooLarge { circuit: spec.circuit, location, need: dev_need, capacity: dev_cap });
        }
        self.advance(now);
        let id = JobId(self.next_job);
        self.next_job += 1;
        let key = JobKey::new(spec.priority, id);
        if let Some(c) = self.circuits.get_mut(&spec.circuit) {
            c.add_demand(key, spec.partitions);
        }
        self.timeline.job_submitted(Record {
            job: id,
            circuit: spec.circuit,
            priority: spec.priority,
            partitions: spec.partitions,
            submitted: self.now,
            first_start: None,
            first_gpu: None,
            ended: None,
        });
        if let Some(t) = spec.deadline {
            self.deadlines.insert((t, id));
        }
        self.gpu_waiting += u64::from(spec.partitions);
        self.live_jobs += 1;
        self.synth_queue.insert(key);
        let (circuit, partitions, avoid) = (spec.circuit, spec.partitions, spec.avoid.map(|d| d.0 as usize));
        self.jobs.insert(id, Job::new(key, spec));
        self.expire_deadlines();
        if self.jobs.get(&id).is_some_and(|j| !j.ended) {
            if self.runnable(id) {
                self.prefetch(circuit, crit, partitions, avoid);
            } else {
                self.end_job(id, Outcome::Failed(JobFailure::NoDevice));
            }
        }
        self.schedule();
        Ok(id)
    }

    /// A stage started by [`Action::Start`] finished successfully at `now`.
    pub fn stage_finished(&mut self, partition: PartitionId, stage: Stage, now: Nanos) -> Result<(), EngineError> {
        self.check_running(partition, stage)?;
        self.advance(now);
        self.finish_stage(partition, stage, None);
        self.schedule();
        Ok(())
    }

    /// A stage failed at `now`; its job fails (if it has not ended already).
    pub fn stage_failed(&mut self, partition: PartitionId, stage: Stage, now: Nanos, reason: impl Into<String>) -> Result<(), EngineError> {
        self.check_running(partition, stage)?;
        self.advance(now);
        self.finish_stage(partition, stage, Some(reason.into()));
        self.schedule();
        Ok(())
    }

    /// Cancels a job: it ends now; its running stages release their memory when reported.
    pub fn cancel(&mut self, job: JobId, now: Nanos) -> Result<(), EngineError> {
        match self.jobs.get(&job) {
            None => return Err(EngineError::UnknownJob(job)),
            Some(j) if j.ended => return Err(EngineError::JobEnded(job)),
            Some(_) => {}
        }
        self.advance(now);
        // The deadline may just have ended it.
        if self.jobs.get(&job).is_some_and(|j| !j.ended) {
            self.end_job(job, Outcome::Cancelled);
        }
        self.schedule();
        Ok(())
    }

    /// Loads a circuit's parameters to the host (warm) or a device (hot) ahead of need,
    /// evicting only parameters no job needs. A no-op if they are there or on their way; an
    /// error ([`EngineError::DeviceRetired`]) for a retired device.
    pub fn preload(&mut self, circuit: CircuitId, to: Location, now: Nanos) -> Result<(), EngineError> {
        let c = self.circuits.get(&circuit).ok_or(EngineError::UnknownCircuit(circuit))?;
        let r = self.residence(c, to)?;
        if let Location::Device(d) = to {
            if !self.serves(d.0 as usize) {
                return Err(EngineError::DeviceRetired(d));
            }
        }
        if r.present() {
            return Ok(());
        }
        let need = c.bytes(to);
        self.advance(now);
        if !self.make_copy_room(circuit, to, need, false, Evict::Idle, None) {
            self.schedule();
            return Err(EngineError::InsufficientMemory { location: to, need });
        }
        let m = self.room_for_matrices(circuit, to, 0, false, Evict::Idle);
        self.start_load(circuit, to, m);
        self.schedule();
        Ok(())
    }

    /// Makes a circuit's parameters resident on a device ahead of need: the device in service
    /// (not a fallback one) with the most free memory, unless a copy is there or on its way.
    /// Answers whether they are [`Presence::Resident`] already or [`Presence::Loading`].
    pub fn preload_anywhere(&mut self, circuit: CircuitId, now: Nanos) -> Result<Presence, EngineError> {
        let targets: Vec<Location> =
            (0..self.devices.len()).filter(|&d| self.serves(d) && !self.cfg.devices[d].fallback).map(|d| Location::Device(DeviceId(d as u32))).collect();
        let states: Vec<Option<Presence>> = targets.iter().map(|l| self.presence(circuit, *l)).collect();
        if states.contains(&Some(Presence::Resident)) {
            return Ok(Presence::Resident);
        }
        if !states.contains(&Some(Presence::Loading)) {
            let free = |l: &Location| self.usage(*l).map_or(0, |u| u.capacity.saturating_sub(u.used));
            let to = *targets.iter().max_by_key(|l| free(l)).ok_or(EngineError::InvalidConfig("no device in service to preload to"))?;
            self.preload(circuit, to, now)?;
        }
        Ok(Presence::Loading)
    }

    /// Evicts a circuit's parameters from every location where they are resident; answers
    /// how many copies went.
    pub fn evict_everywhere(&mut self, circuit: CircuitId, now: Nanos) -> Result<u32, EngineError> {
        let mut gone = 0;
        for at in (0..self.devices.len() as u32).map(|d| Location::Device(DeviceId(d))).chain([Location::Host]) {
            if self.presence(circuit, at) == Some(Presence::Resident) {
                self.evict(circuit, at, now)?;
                gone += 1;
            }
        }
        Ok(gone)
    }

    /// Evicts a circuit's parameters from a location. A no-op if absent; an error while
    /// partitions use them or a load is in flight.
    pub fn evict(&mut self, circuit: CircuitId, from: Location, now: Nanos) -> Result<(), EngineError> {
        let c = self.circuits.get(&circuit).ok_or(EngineError::UnknownCircuit(circuit))?;
        let r = self.residence(c, from)?;
        match r.state {
            Presence::Absent => return Ok(()),
            Presence::Loading => return Err(EngineError::ParamsInUse { circuit, location: from }),
            Presence::Resident if r.users > 0 => return Err(EngineError::ParamsInUse { circuit, location: from }),
            Presence::Resident => {}
        }
        self.advance(now);
        self.evict_now(circuit, from);
        self.schedule();
        Ok(())
    }

    /// The worker recorded `circuit`'s constraint matrices, which take `device_bytes` on a
    /// device (known at `now`; the first report counts, later ones change nothing).
    ///
    /// From then on a device copy of the circuit is its parameters plus its matrices
    /// wherever they fit ([`Action::MatricesReserved`]): loads include them when parameters,
    /// matrices and one partition fit what non-CRITICAL work may use on the device and room
    /// can be made for them as for parameters (else the copy is the parameters alone, and
    /// that device evaluates `a, b, c` on the host for the circuit until its next load);
    /// copies already there or loading grow now where free memory, after evicting parameters
    /// no job needs, allows. [`Action::EvictParams`] of a device copy frees its matrices with
    /// it.
    pub fn matrices_recorded(&mut self, circuit: CircuitId, device_bytes: u64, now: Nanos) -> Result<(), EngineError> {
        let c = self.circuits.get_mut(&circuit).ok_or(EngineError::UnknownCircuit(circuit))?;
        if c.matrices > 0 || device_bytes == 0 {
            return Ok(());
        }
        c.matrices = device_bytes;
        self.advance(now);
        self.grow_copies(circuit);
        self.schedule();
        Ok(())
    }

    /// A [`Action::LoadParams`] completed at `now`.
    pub fn params_loaded(&mut self, circuit: CircuitId, at: Location, now: Nanos) -> Result<(), EngineError> {
        self.check_loading(circuit, at)?;
        self.advance(now);
        self.load_done(circuit, at, true);
        self.schedule();
        Ok(())
    }

    /// A [`Action::LoadParams`] failed at `now`. The engine emits [`Action::EvictParams`] for
    /// the reservation; if the circuit is then on no device in service and loading on none,
    /// every live job still needing it fails (not when the failed load was onto a retired
    /// device: that says nothing about the parameters).
    pub fn params_load_failed(&mut self, circuit: CircuitId, at: Location, now: Nanos, reason: impl Into<String>) -> Result<(), EngineError> {
        self.check_loading(circuit, at)?;
        self.advance(now);
        self.load_done(circuit, at, false);
        if matches!(at, Location::Device(d) if self.serves(d.0 as usize)) {
            self.fail_params_waiters(circuit, reason.into());
        }
        self.schedule();
        Ok(())
    }

    /// Takes device `d` out of service at `now`, for good (a no-op if it already is).
    ///
    /// From then on no partition is admitted there and no parameters are loaded there
    /// (demand loads, replication and [`Engine::preload`] go elsewhere). Parameters there
    /// that no partition uses are evicted now, the others as soon as their last user leaves
    /// (and loads in flight there once they are reported). Stages running there finish or
    /// fail as usual; a partition that would need another device stage there (waiting for a
    /// kernel lane, or whose upload or NTT there ends later) stops and its job fails with
    /// [`JobFailure::DeviceRetired`]. Jobs that no device in service can run any more fail
    /// with [`JobFailure::NoDevice`]; the others go on on the devices in service.
    pub fn retire_device(&mut self, d: DeviceId, now: Nanos) -> Result<(), EngineError> {
        let i = d.0 as usize;
        let s = self.devices.get(i).ok_or(EngineError::UnknownDevice(d))?;
        if s.retired {
            return Ok(());
        }
        self.advance(now);
        self.devices[i].retired = true;
        let waiting: Vec<_> = self.devices[i].lane_queue.iter().copied().collect();
        for pk in waiting {
            let partition = PartitionId { job: pk.job.id, index: pk.index };
            if self.jobs.get(&pk.job.id).is_some_and(|j| !j.ended) {
                self.end_job(pk.job.id, Outcome::Failed(JobFailure::DeviceRetired { partition, device: d }));
            }
        }
        let doomed: Vec<JobId> = self.jobs.iter().filter(|(id, j)| !j.ended && !self.runnable(**id)).map(|(id, _)| *id).collect();
        for id in doomed {
            self.end_job(id, Outcome::Failed(JobFailure::NoDevice));
        }
        self.schedule();
        Ok(())
    }

    /// Advances time to `now`: fires deadlines and runs the scheduler.
    pub fn tick(&mut self, now: Nanos) {
        self.advance(now);
        self.schedule();
    }

    /// The next action to execute, if any. See the drain contract in the module docs.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// The earliest job deadline still pending: call [`Engine::tick`] then.
    pub fn next_deadline(&self) -> Option<Nanos> {
        self.deadlines.first().map(|(t, _)| *t)
    }

    /// Job `id` has no partition still to be admitted to a GPU, or some device in service
    /// can ever run one.
    fn runnable(&self, id: JobId) -> bool {
        let Some(j) = self.jobs.get(&id) else { return true };
        let waiting = j.parts.iter().any(|p| p.device.is_none() && p.needs_params());
        let Some(c) = self.circuits.get(&j.spec.circuit) else { return true };
        let avoid = self.job_avoids(id);
        !waiting || (0..self.devices.len()).any(|d| self.open_to(d, avoid) && self.fits_ever(c, d, j.key.critical()))
    }

    fn residence<'a>(&self, c: &'a CircuitState, at: Location) -> Result<&'a residency::Residence, EngineError> {
        match at {
            Location::Device(d) => c.at(at).ok_or(EngineError::UnknownDevice(d)),
            Location::Host => Ok(&c.host),
        }
    }

    fn check_loading(&self, circuit: CircuitId, at: Location) -> Result<(), EngineError> {
        let c = self.circuits.get(&circuit).ok_or(EngineError::UnknownCircuit(circuit))?;
        let queued = matches!(at, Location::Device(d) if self.queued(circuit, d));
        if self.residence(c, at)?.state != Presence::Loading || queued {
            return Err(EngineError::NotLoading { circuit, location: at });
        }
        Ok(())
    }

    fn check_running(&self, p: PartitionId, stage: Stage) -> Result<(), EngineError> {
        let part = self.jobs.get(&p.job).and_then(|j| j.parts.get(p.index as usize)).ok_or(EngineError::UnknownPartition(p))?;
        if part.phase != Phase::Running(stage) {
            return Err(EngineError::NotRunning { partition: p, stage });
        }
        Ok(())
    }

    fn advance(&mut self, now: Nanos) {
        self.now = self.now.max(now);
        self.expire_deadlines();
    }

    fn expire_deadlines(&mut self) {
        while let Some(&(t, job)) = self.deadlines.first() {
            if t > self.now {
                break;
            }
            self.deadlines.pop_first();
            if self.jobs.get(&job).is_some_and(|j| !j.ended) {
                self.end_job(job, Outcome::Failed(JobFailure::DeadlineExceeded));
            }
        }
    }

    fn pool_take(&mut self, loc: Location, bytes: u64) {
        let p = match loc {
            Location::Host => &mut self.host,
            Location::Device(d) => match self.devices.get_mut(d.0 as usize) {
                Some(s) => &mut s.pool,
                None => return,
            },
        };
        p.used = p.used.saturating_add(bytes);
    }

    fn pool_give(&mut self, loc: Location, bytes: u64) {
        let p = match loc {
            Location::Host => &mut self.host,
            Location::Device(d) => match self.devices.get_mut(d.0 as usize) {
                Some(s) => &mut s.pool,
                None => return,
            },
        };
        p.used = p.used.saturating_sub(bytes);
    }
}
