//! The dispatch pass run after every input: kernel lanes, GPU admission (with parameter
//! placement), synthesis, finalize, then idle-cause bookkeeping. GPU work goes first so that
//! nothing on the GPU path waits behind CPU-side bookkeeping.

use std::ops::Bound::{Excluded, Unbounded};

use crate::prover::Stage;

use super::job::{PartKey, Phase};
use super::residency::{dev, Evict};
use super::timeline::IdleCause;
use super::types::{CircuitId, JobId, Location, PartitionId};
use super::Engine;

fn pid(pk: PartKey) -> PartitionId {
    PartitionId { job: pk.job.id, index: pk.index }
}

impl Engine {
    /// Starts everything that can start now.
    pub(crate) fn schedule(&mut self) {
        self.evict_retired();
        self.start_queued_loads();
        self.dispatch_lanes();
        self.dispatch_gpu();
        self.dispatch_synthesis();
        self.dispatch_finalize();
        self.update_idle();
    }

    /// Uploaded partitions take free kernel lanes, in priority order per device; a partition
    /// waits while an earlier partition of its job is still uploading to the same device, so
    /// that a job's partitions leave each device in order.
    fn dispatch_lanes(&mut self) {
        for d in 0..self.devices.len() {
            loop {
                if self.devices[d].lanes_free == 0 {
                    break;
                }
                let next = self.devices[d].lane_queue.iter().copied().find(|pk| self.lane_turn(*pk, d));
                let Some(pk) = next else { break };
                let s = &mut self.devices[d];
                s.lane_queue.remove(&pk);
                s.lanes_free -= 1;
                let p = pid(pk);
                let Some(part) = self.jobs.get_mut(&p.job).and_then(|j| j.parts.get_mut(p.index as usize)) else {
                    self.devices[d].lanes_free += 1;
                    continue;
                };
                part.lane = true;
                let slot = part.slot;
                self.begin(p, Stage::Ntt, Location::Device(dev(d)), slot, 0);
            }
        }
    }

    /// No earlier partition of `pk`'s job is still uploading to device `d`.
    fn lane_turn(&self, pk: PartKey, d: usize) -> bool {
        let Some(job) = self.jobs.get(&pk.job.id) else { return true };
        let earlier = job.parts.iter().take(pk.index as usize);
        !earlier.into_iter().any(|p| p.phase == Phase::Running(Stage::Upload) && p.device == Some(dev(d)))
    }

    fn open_device(&self) -> bool {
        (0..self.devices.len()).any(|d| !self.claimed[d] && self.serves(d) && self.devices[d].workers.has_free())
    }

    /// Synthesized partitions go to GPUs in priority order (partitions of a job in index
    /// order); parameters are loaded where needed.
    fn dispatch_gpu(&mut self) {
        self.claimed.iter_mut().for_each(|c| *c = false);
        self.stuck.clear();
        let mut cursor: Option<PartKey> = None;
        loop {
            let next = match cursor {
                None => self.gpu_ready.first().copied(),
                Some(c) => self.gpu_ready.range((Excluded(c), Unbounded)).next().copied(),
            };
            let Some(pk) = next else { break };
            // CRITICAL partitions (first in `gpu_ready`) may take a device's CRITICAL worker.
            if !pk.job.critical() && !self.open_device() {
                break;
            }
            cursor = Some(pk);
            let Some(job) = self.jobs.get(&pk.job.id) else { continue };
            let circuit = job.spec.circuit;
            let key = (circuit, pk.job.critical(), job.spec.avoid, self.witness_bound(pk, circuit));
            // A later partition of a circuit that just could not go cannot go either (it may
            // evict no more than the earlier one, and avoids the same device), so skip the work.
            if pk.index != job.next_upload || self.stuck.contains(&key) {
                continue;
            }
            if !self.try_admit(pk, circuit) {
                self.stuck.push(key);
            }
        }
        self.replicate();
    }

    /// Admits `pk` to the best device holding its parameters (true), or arranges for them.
    /// A job avoiding a device ([`super::JobSpec::avoiding`]) tries the other devices first,
    /// waits for them while one of them holds (or is loading) its parameters, and only then
    /// takes the avoided device.
    ///
    /// A partition synthesized with the witness footprint goes only to a device whose copy
    /// includes the matrices ([`Engine::try_admit_witness`]) while a device it may take can
    /// hold one; with none left (retired) it is placed like any other (the host path).
    fn try_admit(&mut self, pk: PartKey, circuit: CircuitId) -> bool {
        let avoid = self.avoided(pk);
        if self.witness_bound(pk, circuit) {
            return self.try_admit_witness(pk, circuit, avoid);
        }
        if let Some(admitted) = self.place(pk, circuit, |e, d| Some(d) != avoid && e.open_to(d, avoid)) {
            return admitted;
        }
        let Some(c) = self.circuits.get(&circuit) else { return false };
        let crit = pk.job.critical();
        if let Some(a) = avoid {
            if self.usable_copy(c, crit, Some(a), avoid) {
                return false;
            }
            if let Some(admitted) = self.place(pk, circuit, |_, d| d == a) {
                return admitted;
            }
        }
        let Some(c) = self.circuits.get(&circuit) else { return false };
        if self.usable_copy(c, crit, None, avoid) {
            return false;
        }
        let need = c.profile.footprint.device();
        let total = c.profile.params_device_bytes.saturating_add(need);
        if !self.demand_load(circuit, pk.job, need, avoid) {
            let n = self.devices.len();
            let holdable = |d: &usize| !self.claimed[*d] && self.open_to(*d, avoid) && self.devices[*d].pool.usable(crit) >= total;
            // Hold back later work from a device it can wait on, the avoided one last.
            let hold = (0..n).filter(|&d| Some(d) != avoid).find(holdable).or_else(|| avoid.filter(holdable));
            if let Some(d) = hold {
                self.claimed[d] = true;
            }
        }
        false
    }

    /// Admits a witness partition to a device (other than `avoid`) whose copy of its circuit
    /// includes the matrices, as parameters are for other partitions: it waits while such a
    /// copy is there or loading; without one it grows a copy without matrices, or loads one
    /// with them, where room can be made (evicting as for parameters), and else holds back
    /// later work from a device that could take such a copy.
    fn try_admit_witness(&mut self, pk: PartKey, circuit: CircuitId, avoid: Option<usize>) -> bool {
        let allowed = move |e: &Engine, d: usize| Some(d) != avoid && e.open_to(d, avoid);
        let with_matrices = move |e: &Engine, d: usize| allowed(e, d) && e.circuits.get(&circuit).is_some_and(|c| c.devices[d].matrices);
        if let Some(admitted) = self.place(pk, circuit, with_matrices) {
            return admitted;
        }
        let Some(c) = self.circuits.get(&circuit) else { return false };
        let crit = pk.job.critical();
        if self.matrices_copy(c, crit, avoid) {
            return false;
        }
        let cands: Vec<usize> =
            (0..self.devices.len()).filter(|&d| !self.claimed[d] && allowed(self, d) && self.matrices_fit(c, d) && self.fits_ever(c, d, crit)).collect();
        let full = c.profile.params_device_bytes.saturating_add(c.matrices).saturating_add(c.profile.footprint.device());
        for &d in &cands {
            let loc = Location::Device(dev(d));
            if self.circuits.get(&circuit).is_some_and(|c| c.devices[d].present()) {
                if self.grow_copy(circuit, d, crit, Evict::Before(pk.job)) {
                    return false;
                }
            } else if (!self.circuits.get(&circuit).is_some_and(Engine::streamed_copy_elsewhere) || self.move_streamed_copy(circuit, &cands))
                && self.make_copy_room(circuit, loc, full, crit, Evict::Before(pk.job), Some(circuit))
            {
                self.start_load(circuit, loc, true);
                return false;
            }
        }
        if let Some(&d) = cands.first() {
            self.claimed[d] = true;
        }
        false
    }

    /// `pk` was synthesized with the witness footprint and a device it may take can hold its
    /// circuit's copy with matrices: it must be uploaded to such a device.
    pub(crate) fn witness_bound(&self, pk: PartKey, circuit: CircuitId) -> bool {
        let witness = self.jobs.get(&pk.job.id).and_then(|j| j.parts.get(pk.index as usize)).is_some_and(|p| p.witness);
        witness && self.circuits.get(&circuit).is_some_and(|c| self.matrices_reachable(c, pk.job.critical(), self.avoided(pk)))
    }

    /// The device `pk`'s job avoids, if it is still in service.
    fn avoided(&self, pk: PartKey) -> Option<usize> {
        self.job_avoids(pk.job.id)
    }

    /// The device job `id` avoids, if it is still in service.
    pub(crate) fn job_avoids(&self, id: JobId) -> Option<usize> {
        let d = self.jobs.get(&id)?.spec.avoid?.0 as usize;
        self.serves(d).then_some(d)
    }

    /// Admits `pk` to the best device among those `allowed` that holds its parameters:
    /// `Some(true)` when admitted, `Some(false)` when it waits for memory on one of them
    /// (which it then holds), `None` when none of them can take it.
    fn place(&mut self, pk: PartKey, circuit: CircuitId, allowed: impl Fn(&Engine, usize) -> bool) -> Option<bool> {
        let c = self.circuits.get(&circuit)?;
        let need = c.profile.footprint.device();
        let crit = pk.job.critical();
        let mut best: Option<(usize, u64, std::cmp::Reverse<usize>)> = None;
        let mut tight = None;
        for d in (0..self.devices.len()).filter(|&d| allowed(self, d)) {
            let s = &self.devices[d];
            if self.claimed[d] || !s.workers.has_free_for(crit) || !c.devices[d].resident() || !self.fits_ever(c, d, crit) {
                continue;
            }
            let avail = s.pool.avail(crit);
            // A CRITICAL partition takes a worker past `gpu_workers` only into free memory:
            // it evicts nothing for one, it waits for a worker as other work does.
            let extra = !s.workers.has_free();
            if avail >= need {
                best = best.max(Some((s.workers.free_count(), avail, std::cmp::Reverse(d))));
            } else if tight.is_none() && !extra {
                tight = Some(d);
            }
        }
        if let Some((_, _, std::cmp::Reverse(d))) = best {
            self.admit(pk, d, need);
            return Some(true);
        }
        let d = tight?;
        // Never by evicting the copy it is to use (a replica elsewhere makes it evictable).
        if self.make_room_keeping(Location::Device(dev(d)), need, crit, Evict::Before(pk.job), Some(circuit)) {
            self.admit(pk, d, need);
            return Some(true);
        }
        self.claimed[d] = true;
        Some(false)
    }

    /// Starts the upload of `pk` on device `d` (the caller checked worker and memory).
    fn admit(&mut self, pk: PartKey, d: usize, need: u64) {
        let p = pid(pk);
        let Some(circuit) = self.jobs.get(&p.job).map(|j| j.spec.circuit) else { return };
        let Some(fp) = self.circuits.get(&circuit).map(|c| c.profile.footprint) else { return };
        let Some(slot) = self.devices[d].workers.take_for(pk.job.critical()) else { return };
        let (now, tick) = (self.now, self.lru_tick());
        self.ready_remove(pk, circuit);
        if !pk.job.critical() {
            self.lookahead = self.lookahead.saturating_sub(1);
        }
        self.gpu_waiting = self.gpu_waiting.saturating_sub(1);
        self.pool_take(Location::Device(dev(d)), need);
        let witness = self.jobs.get(&p.job).and_then(|j| j.parts.get(p.index as usize)).is_some_and(|p| p.witness);
        if let Some(c) = self.circuits.get_mut(&circuit) {
            if witness {
                c.witness_waiting = c.witness_waiting.saturating_sub(1);
            }
            if let Some(r) = c.devices.get_mut(d) {
                r.users += 1;
                r.last_used = tick;
            }
        }
        let Some(job) = self.jobs.get_mut(&p.job) else { return };
        job.next_upload += 1;
        let next = job.parts.get(job.next_upload as usize).map(|n| n.phase);
        if let Some(part) = job.parts.get_mut(p.index as usize) {
            part.device = Some(dev(d));
            part.held.dev_abc = fp.device_abc;
            part.held.dev_rest = fp.device_rest;
        }
        if next == Some(Phase::Ready(Stage::Upload)) {
            self.ready_insert(PartKey { job: pk.job, index: pk.index + 1 }, circuit);
        }
        self.timeline.job_started(p.job, now, true);
        self.begin(p, Stage::Upload, Location::Device(dev(d)), slot, need);
    }

    /// A device in service with a free worker and nothing it can run loads the parameters of
    /// the first waiting partition (not avoiding it) whose circuit it lacks, using free memory
    /// or parameters nobody needs.
    fn replicate(&mut self) {
        for d in 0..self.devices.len() {
            if self.claimed[d] || !self.serves(d) || !self.devices[d].workers.has_free() {
                continue;
            }
            let target = self
                .circuits
                .iter()
                .filter(|(_, c)| !c.devices[d].present() && !Engine::streamed_copy_elsewhere(c))
                .filter_map(|(id, c)| c.ready.iter().find(|pk| self.avoided(**pk) != Some(d) && self.open_to(d, self.avoided(**pk))).map(|pk| (*pk, *id, c)))
                .min_by_key(|(pk, _, _)| *pk)
                .map(|(pk, id, c)| {
                    let total = c.profile.params_device_bytes.saturating_add(c.profile.footprint.device());
                    (id, total, pk.job.critical())
                });
            if let Some((circuit, total, crit)) = target {
                let loc = Location::Device(dev(d));
                if self.make_copy_room(circuit, loc, total, crit, Evict::Idle, None) {
                    let extra = total.saturating_sub(self.circuits.get(&circuit).map_or(0, |c| c.profile.params_device_bytes));
                    let m = self.room_for_matrices(circuit, loc, extra, crit, Evict::Idle);
                    self.start_load(circuit, loc, m);
                }
            }
        }
    }

    /// Drops the parameters on retired devices that no partition there uses any more.
    fn evict_retired(&mut self) {
        for d in 0..self.devices.len() {
            if self.serves(d) {
                continue;
            }
            let idle: Vec<CircuitId> = self.circuits.iter().filter(|(_, c)| c.devices[d].resident() && c.devices[d].users == 0).map(|(id, _)| *id).collect();
            for id in idle {
                self.evict_now(id, Location::Device(dev(d)));
            }
        }
    }

    /// Puts a job's next partition in line into `gpu_ready`.
    pub(crate) fn ready_insert(&mut self, pk: PartKey, circuit: CircuitId) {
        self.gpu_ready.insert(pk);
        if let Some(c) = self.circuits.get_mut(&circuit) {
            c.ready.insert(pk);
        }
    }

    /// Takes a partition out of `gpu_ready`.
    pub(crate) fn ready_remove(&mut self, pk: PartKey, circuit: CircuitId) {
        self.gpu_ready.remove(&pk);
        if let Some(c) = self.circuits.get_mut(&circuit) {
            c.ready.remove(&pk);
        }
    }

    /// Jobs in priority order get free synthesis workers, within the look-ahead limit
    /// (CRITICAL exempt) and the host budget; the first job that does not fit stops the pass.
    fn dispatch_synthesis(&mut self) {
        self.host_blocked = false;
        while self.synth_slots.has_free() {
            let Some(&jk) = self.synth_queue.first() else { break };
            let crit = jk.critical();
            if !crit && self.lookahead >= self.cfg.synth_lookahead {
                break;
            }
            let Some(circuit) = self.jobs.get(&jk.id).map(|j| j.spec.circuit) else {
                self.synth_queue.remove(&jk);
                continue;
            };
            let Some(c) = self.circuits.get(&circuit) else {
                self.synth_queue.remove(&jk);
                continue;
            };
            // A streamed circuit's device copy holds host memory, which its partitions would
            // hold in turn while they wait for one: the copy comes first (it is there or
            // loading, or its host bytes are still reserved), else the pass stops here.
            let avoid = self.job_avoids(jk.id);
            if c.copy_host_need() > 0 && !self.usable_copy(c, crit, None, avoid) {
                let extra = c.profile.footprint.device();
                if !self.demand_load(circuit, jk, extra, avoid) {
                    self.host_blocked = true;
                    break;
                }
            }
            let Some(c) = self.circuits.get(&circuit) else { break };
            // A witness-only partition reserves the witness alone when a device it may take
            // holds the circuit's copy with matrices (and then goes only to such a device).
            let witness = c.profile.witness_footprint.filter(|_| self.matrices_copy(c, crit, avoid));
            let fp = witness.unwrap_or(c.profile.footprint);
            // Never by evicting the circuit's own streamed copy, which the partition needs (its
            // warm host copy may go, as any other: a device copy does not need it).
            let keep = (c.copy_host_bytes() > 0).then_some(circuit);
            if !self.make_room_keeping(Location::Host, fp.host(), crit, Evict::Idle, keep) {
                self.host_blocked = true;
                break;
            }
            let Some(slot) = self.synth_slots.take() else { break };
            let Some(job) = self.jobs.get_mut(&jk.id) else { break };
            let index = job.next_synth;
            job.next_synth += 1;
            if job.next_synth >= job.spec.partitions {
                self.synth_queue.remove(&jk);
            }
            if let Some(part) = job.parts.get_mut(index as usize) {
                part.held.host_abc = fp.host_abc;
                part.held.host_rest = fp.host_rest;
                part.witness = witness.is_some();
            }
            let circuit = job.spec.circuit;
            if let Some(c) = self.circuits.get_mut(&circuit) {
                c.add_active(jk);
                c.witness_waiting += u32::from(witness.is_some());
            }
            self.pool_take(Location::Host, fp.host());
            if !crit {
                self.lookahead += 1;
            }
            self.timeline.job_started(jk.id, self.now, false);
            let p = PartitionId { job: jk.id, index };
            self.begin(p, Stage::Synthesize, Location::Host, slot, fp.host());
        }
    }

    /// Partitions off the GPU get free finalize workers in priority order.
    fn dispatch_finalize(&mut self) {
        while self.finalize_slots.has_free() {
            let Some(pk) = self.finalize_queue.pop_first() else { break };
            let Some(slot) = self.finalize_slots.take() else { break };
            self.begin(pid(pk), Stage::Finalize, Location::Host, slot, 0);
        }
    }

    /// Records why each device without a running GPU stage is idle.
    fn update_idle(&mut self) {
        let mut eligible = None;
        for d in 0..self.devices.len() {
            if self.devices[d].active > 0 {
                continue;
            }
            // A fallback device on standby has work only when a retry waits for it.
            let standby = !self.open_to(d, None) && !self.gpu_ready.iter().any(|pk| self.avoided(*pk).is_some_and(|a| self.open_to(d, Some(a))));
            let cause = if self.gpu_waiting == 0 || self.devices[d].retired || standby {
                IdleCause::NoWork
            } else if self.claimed[d] {
                IdleCause::DeviceMemory
            } else if *eligible.get_or_insert_with(|| self.eligible_ready()) {
                IdleCause::Params
            } else if self.host_blocked {
                IdleCause::HostMemory
            } else {
                IdleCause::Synthesis
            };
            self.timeline.gpu_idle(d, self.now, cause);
        }
    }

    /// Some synthesized partition is next in line within its job.
    fn eligible_ready(&self) -> bool {
        !self.gpu_ready.is_empty()
    }
}
