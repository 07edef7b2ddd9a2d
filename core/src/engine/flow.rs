//! Stage transitions: what happens when a stage ends, when a partition is dropped and when a
//! job ends.

use crate::prover::Stage;

use super::action::{Action, Dispatch, JobFailure, Outcome};
use super::job::{JobKey, PartKey, Phase};
use super::timeline::{EndKind, Span, SpanKind};
use super::types::{Buffers, CircuitId, Location, PartitionId};
use super::Engine;

impl Engine {
    /// The running stage of `p` ended (`failure` set when it failed).
    pub(crate) fn finish_stage(&mut self, p: PartitionId, stage: Stage, failure: Option<String>) {
        let now = self.now;
        let Some(job) = self.jobs.get_mut(&p.job) else { return };
        job.running = job.running.saturating_sub(1);
        let (key, circuit, ended) = (job.key, job.spec.circuit, job.ended);
        let Some(part) = job.parts.get_mut(p.index as usize) else { return };
        let (slot, device, since) = (part.slot, part.device, part.since);
        let gpu = matches!(stage, Stage::Upload | Stage::Ntt | Stage::Msm);
        let location = match (gpu, device) {
            (true, Some(d)) => Location::Device(d),
            _ => Location::Host,
        };
        let failed = failure.is_some();
        let kind = SpanKind::Stage(stage);
        let span = Span { kind, partition: Some(p), circuit, location, slot, start: since, end: now, failed };
        self.timeline.span(span);
        match stage {
            Stage::Synthesize => self.synth_slots.give(slot),
            Stage::Finalize => self.finalize_slots.give(slot),
            _ => {
                if let Some(s) = device.and_then(|d| self.devices.get_mut(d.0 as usize)) {
                    s.active = s.active.saturating_sub(1);
                }
            }
        }
        if failed || ended {
            self.drop_part(key, p.index);
            if let (Some(reason), false) = (failure, ended) {
                let f = JobFailure::Stage { partition: p, stage, reason };
                self.end_job(p.job, Outcome::Failed(f));
            }
            self.forget_if_done(p.job);
            return;
        }
        if let Some(d) = device.filter(|d| matches!(stage, Stage::Upload | Stage::Ntt) && !self.serves(d.0 as usize)) {
            // The next stage would run on a retired device.
            self.drop_part(key, p.index);
            self.end_job(p.job, Outcome::Failed(JobFailure::DeviceRetired { partition: p, device: d }));
            self.forget_if_done(p.job);
            return;
        }
        let pk = PartKey { job: key, index: p.index };
        match stage {
            Stage::Synthesize => {
                self.set_phase(p, Phase::Ready(Stage::Upload));
                // Only a job's next partition in line waits in `gpu_ready`.
                if self.jobs.get(&p.job).is_some_and(|j| j.next_upload == p.index) {
                    self.ready_insert(pk, circuit);
                }
            }
            Stage::Upload => {
                if self.cfg.release_host_abc_after == Stage::Upload {
                    self.release(p, Location::Host, Buffers::Abc);
                }
                self.set_phase(p, Phase::Ready(Stage::Ntt));
                if let Some(s) = device.and_then(|d| self.devices.get_mut(d.0 as usize)) {
                    s.lane_queue.insert(pk);
                }
            }
            Stage::Ntt => {
                let Some(d) = device else { return };
                self.release(p, Location::Device(d), Buffers::Abc);
                if self.cfg.release_host_abc_after == Stage::Ntt {
                    self.release(p, Location::Host, Buffers::Abc);
                }
                self.begin(p, Stage::Msm, Location::Device(d), slot, 0);
            }
            Stage::Msm => {
                if let Some(d) = device {
                    self.release(p, Location::Device(d), Buffers::Rest);
                }
                self.leave_device(key, p.index);
                self.set_phase(p, Phase::Ready(Stage::Finalize));
                self.finalize_queue.insert(pk);
            }
            Stage::Finalize => {
                self.release(p, Location::Host, Buffers::Rest);
                self.set_phase(p, Phase::Done);
                let Some(job) = self.jobs.get_mut(&p.job) else { return };
                job.finalized += 1;
                if job.finalized == job.spec.partitions {
                    self.end_job(p.job, Outcome::Completed);
                    self.forget_if_done(p.job);
                }
            }
        }
    }

    /// Marks `p` running `stage` at `location` and emits the start.
    pub(crate) fn begin(&mut self, p: PartitionId, stage: Stage, location: Location, slot: u32, reserved: u64) {
        let now = self.now;
        let Some(job) = self.jobs.get_mut(&p.job) else { return };
        job.running += 1;
        let circuit = job.spec.circuit;
        let Some(part) = job.parts.get_mut(p.index as usize) else { return };
        part.phase = Phase::Running(stage);
        part.since = now;
        part.slot = slot;
        if let Location::Device(d) = location {
            if let Some(s) = self.devices.get_mut(d.0 as usize) {
                s.active += 1;
                if s.active == 1 {
                    self.timeline.gpu_busy(d.0 as usize, now);
                }
            }
        }
        let dispatch = Dispatch { partition: p, circuit, stage, location, slot, reserved };
        self.actions.push_back(Action::Start(dispatch));
    }

    fn set_phase(&mut self, p: PartitionId, phase: Phase) {
        if let Some(part) = self.jobs.get_mut(&p.job).and_then(|j| j.parts.get_mut(p.index as usize)) {
            part.phase = phase;
        }
    }

    /// Frees one set of a partition's buffers (if it holds any there).
    pub(crate) fn release(&mut self, p: PartitionId, location: Location, buffers: Buffers) {
        let Some(part) = self.jobs.get_mut(&p.job).and_then(|j| j.parts.get_mut(p.index as usize)) else {
            return;
        };
        let h = &mut part.held;
        let field = match (location, buffers) {
            (Location::Host, Buffers::Abc) => &mut h.host_abc,
            (Location::Host, Buffers::Rest) => &mut h.host_rest,
            (Location::Device(_), Buffers::Abc) => &mut h.dev_abc,
            (Location::Device(_), Buffers::Rest) => &mut h.dev_rest,
        };
        let bytes = std::mem::take(field);
        if bytes > 0 {
            self.pool_give(location, bytes);
            self.actions.push_back(Action::Release { partition: p, location, buffers, bytes });
        }
    }

    /// The partition leaves its GPU: worker, lane, parameter use and demand go.
    fn leave_device(&mut self, key: JobKey, index: u32) {
        let tick = self.lru_tick();
        let Some(job) = self.jobs.get_mut(&key.id) else { return };
        let circuit = job.spec.circuit;
        let Some(part) = job.parts.get_mut(index as usize) else { return };
        let needs = part.needs_params();
        let Some(d) = part.device.take() else { return };
        let lane = std::mem::take(&mut part.lane);
        let slot = part.slot;
        if let Some(s) = self.devices.get_mut(d.0 as usize) {
            s.workers.give(slot);
            if lane {
                s.lanes_free += 1;
            }
        }
        if let Some(c) = self.circuits.get_mut(&circuit) {
            if let Some(r) = c.devices.get_mut(d.0 as usize) {
                r.users = r.users.saturating_sub(1);
                r.last_used = tick;
            }
            if needs {
                c.sub_demand(key, true);
            }
        }
        self.release_kept(circuit);
    }

    /// Drops a partition that is not running a stage (or whose stage just ended): removes it
    /// from queues and releases everything it holds.
    pub(crate) fn drop_part(&mut self, key: JobKey, index: u32) {
        let p = PartitionId { job: key.id, index };
        let pk = PartKey { job: key, index };
        let Some(job) = self.jobs.get(&key.id) else { return };
        let circuit = job.spec.circuit;
        let Some(part) = job.parts.get(index as usize) else { return };
        let (phase, device, needs, witness) = (part.phase, part.device, part.needs_params(), part.witness);
        match phase {
            Phase::Done | Phase::Dropped => return,
            Phase::Ready(Stage::Upload) => {
                self.ready_remove(pk, circuit);
            }
            Phase::Ready(Stage::Ntt) => {
                if let Some(s) = device.and_then(|d| self.devices.get_mut(d.0 as usize)) {
                    s.lane_queue.remove(&pk);
                }
            }
            Phase::Ready(Stage::Finalize) => {
                self.finalize_queue.remove(&pk);
            }
            _ => {}
        }
        let before_gpu = matches!(phase, Phase::Pending | Phase::Running(Stage::Synthesize) | Phase::Ready(Stage::Upload));
        if before_gpu {
            self.gpu_waiting = self.gpu_waiting.saturating_sub(1);
            if phase != Phase::Pending && !key.critical() {
                self.lookahead = self.lookahead.saturating_sub(1);
            }
            if witness {
                if let Some(c) = self.circuits.get_mut(&circuit) {
                    c.witness_waiting = c.witness_waiting.saturating_sub(1);
                }
            }
        }
        if device.is_some() {
            self.leave_device(key, index);
        } else if needs {
            if let Some(c) = self.circuits.get_mut(&circuit) {
                c.sub_demand(key, phase != Phase::Pending);
            }
            self.release_kept(circuit);
        }
        for (loc, b) in [(Location::Host, Buffers::Abc), (Location::Host, Buffers::Rest)] {
            self.release(p, loc, b);
        }
        if let Some(d) = device {
            for b in [Buffers::Abc, Buffers::Rest] {
                self.release(p, Location::Device(d), b);
            }
        }
        self.set_phase(p, Phase::Dropped);
    }

    /// Ends a live job: emits [`Action::JobEnded`] and drops its idle partitions.
    pub(crate) fn end_job(&mut self, id: super::types::JobId, outcome: Outcome) {
        let Some(job) = self.jobs.get_mut(&id) else { return };
        if job.ended {
            return;
        }
        job.ended = true;
        let (key, deadline, n) = (job.key, job.spec.deadline, job.spec.partitions);
        self.live_jobs = self.live_jobs.saturating_sub(1);
        if let Some(t) = deadline {
            self.deadlines.remove(&(t, id));
        }
        self.synth_queue.remove(&key);
        let how = match outcome {
            Outcome::Completed => EndKind::Completed,
            Outcome::Failed(_) => EndKind::Failed,
            Outcome::Cancelled => EndKind::Cancelled,
        };
        self.timeline.job_ended(id, self.now, how);
        self.actions.push_back(Action::JobEnded { job: id, outcome });
        for index in 0..n {
            let idle = self.jobs.get(&id).and_then(|j| j.parts.get(index as usize)).is_some_and(|p| !matches!(p.phase, Phase::Running(_)));
            if idle {
                self.drop_part(key, index);
            }
        }
        self.forget_if_done(id);
    }

    /// Forgets an ended job once none of its stages is outstanding.
    fn forget_if_done(&mut self, id: super::types::JobId) {
        if self.jobs.get(&id).is_some_and(|j| j.ended && j.running == 0) {
            self.jobs.remove(&id);
        }
    }

    /// After a failed device load: if `circuit` can no longer reach any device in service,
    /// every live job still waiting for it fails.
    pub(crate) fn fail_params_waiters(&mut self, circuit: CircuitId, reason: String) {
        let Some(c) = self.circuits.get(&circuit) else { return };
        if c.devices.iter().enumerate().any(|(d, r)| r.present() && self.serves(d)) {
            return;
        }
        let waiting: Vec<_> = c.demand.keys().map(|k| k.id).collect();
        for id in waiting {
            let f = JobFailure::Params { circuit, reason: reason.clone() };
            self.end_job(id, Outcome::Failed(f));
        }
    }
}
