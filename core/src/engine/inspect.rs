//! Read-only views of the engine: time, configuration, timeline, residency, memory use,
//! and consistency checks and state dumps for tests and diagnostics.

use super::job::{PartKey, Phase};
use super::residency::{CircuitState, Presence};
use super::timeline::{DeviceReport, Timeline};
use super::types::{CircuitId, DeviceId, Location, Nanos, Tier};
use super::Stage;
use super::{CircuitProfile, Engine, EngineConfig, MatricesShortfall, MemoryUsage};

impl Engine {
    /// The latest time seen.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// The configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.cfg
    }

    /// What happened so far.
    pub fn timeline(&self) -> &Timeline {
        &self.timeline
    }

    /// Jobs accepted and not yet ended.
    pub fn live_jobs(&self) -> usize {
        self.live_jobs
    }

    /// True when no job is live and no stage or load is outstanding.
    pub fn is_quiescent(&self) -> bool {
        self.live_jobs == 0
            && self.jobs.is_empty()
            && self.circuits.values().all(|c| c.host.state != Presence::Loading && c.devices.iter().all(|r| r.state != Presence::Loading))
    }

    /// Whether device `d` is in service (known and not retired by [`Engine::retire_device`]).
    pub fn in_service(&self, d: DeviceId) -> bool {
        self.serves(d.0 as usize)
    }

    /// How close a circuit's parameters are to a GPU.
    pub fn tier(&self, circuit: CircuitId) -> Option<Tier> {
        self.circuits.get(&circuit).map(CircuitState::tier)
    }

    /// Whether a circuit's parameters are at a location.
    pub fn presence(&self, circuit: CircuitId, at: Location) -> Option<Presence> {
        self.circuits.get(&circuit)?.at(at).map(|r| r.state)
    }

    /// Whether the device copy of a circuit at `at` includes its constraint matrices (`None`
    /// for an unknown circuit or device, `Some(false)` on the host).
    pub fn matrices_at(&self, circuit: CircuitId, at: Location) -> Option<bool> {
        Some(self.circuits.get(&circuit)?.at(at)?.matrices)
    }

    /// The profile a circuit was registered with.
    pub fn circuit_profile(&self, circuit: CircuitId) -> Option<CircuitProfile> {
        self.circuits.get(&circuit).map(|c| c.profile)
    }

    /// Host bytes reserved for the streamed bases of a circuit's evicted device copies while
    /// its partitions are under way ([`CircuitProfile::params_device_host_bytes`]).
    pub fn kept_host_bytes(&self, circuit: CircuitId) -> Option<u64> {
        self.circuits.get(&circuit).map(|c| c.host_kept)
    }

    /// Device bytes of a circuit's constraint matrices as reported by
    /// [`Engine::matrices_recorded`] (0 until then).
    pub fn matrices_bytes(&self, circuit: CircuitId) -> Option<u64> {
        self.circuits.get(&circuit).map(|c| c.matrices)
    }

    /// `None` when `circuit`'s matrices fit some device in service beside its parameters and
    /// one partition, or are not known yet; else the device that comes closest and what it
    /// lacks (operators: the budget that would keep them there).
    pub fn matrices_shortfall(&self, circuit: CircuitId) -> Option<MatricesShortfall> {
        let c = self.circuits.get(&circuit)?;
        if c.matrices == 0 || (0..self.devices.len()).any(|d| self.serves(d) && self.matrices_fit(c, d)) {
            return None;
        }
        let (d, s) = self.devices.iter().enumerate().filter(|(d, _)| self.serves(*d)).max_by_key(|(_, s)| s.pool.usable(false))?;
        Some(MatricesShortfall { device: DeviceId(d as u32), needed: c.matrices_copy_need(), usable: s.pool.usable(false), budget: s.pool.capacity })
    }

    /// Memory use of the host budget or a device budget.
    pub fn usage(&self, at: Location) -> Option<MemoryUsage> {
        let p = match at {
            Location::Host => &self.host,
            Location::Device(d) => &self.devices.get(d.0 as usize)?.pool,
        };
        Some(MemoryUsage { used: p.used, capacity: p.capacity, set_aside: p.set_aside, in_loads: p.transient })
    }

    /// Busy time and idle gaps of a device over `[from, to]` (see [`Timeline::device_report`]).
    pub fn device_report(&self, d: DeviceId, from: Nanos, to: Nanos) -> Option<DeviceReport> {
        self.timeline.device_report(d, from, to)
    }

    /// Recomputes every reservation from the partitions and parameters and compares with the
    /// budgets' counters; a test aid. Returns a description of the first mismatch.
    pub fn check_consistency(&self) -> Result<(), String> {
        self.check_queues()?;
        let mut host = 0u64;
        let mut devs = vec![0u64; self.devices.len()];
        let (mut in_loads, mut queued, mut aside) = (0u64, 0usize, 0u64);
        for (id, c) in &self.circuits {
            aside = aside.max(c.profile.load_host_bytes);
            for (d, r) in c.devices.iter().enumerate() {
                match (r.state, self.queued(*id, DeviceId(d as u32))) {
                    (Presence::Loading, false) => in_loads += c.profile.load_host_bytes,
                    (Presence::Loading, true) => queued += 1,
                    (_, true) => return Err(format!("circuit {} on device {d}: queued load {:?}", id.0, r.state)),
                    _ => {}
                }
            }
            if c.host.present() {
                host += c.profile.params_host_bytes;
            }
            if c.host_kept > 0 && c.active.is_empty() {
                return Err(format!("circuit {} keeps {} host bytes with no partition under way", id.0, c.host_kept));
            }
            host += c.host_kept;
            for (d, r) in c.devices.iter().enumerate() {
                if r.present() {
                    host += c.profile.params_device_host_bytes;
                    devs[d] += c.copy_bytes(Location::Device(DeviceId(d as u32)));
                } else if r.matrices {
                    return Err(format!("circuit {} has matrices without parameters on device {d}", id.0));
                }
            }
            if c.host.matrices {
                return Err("matrices in a host copy".into());
            }
        }
        let mut witness: std::collections::BTreeMap<CircuitId, u32> = Default::default();
        for j in self.jobs.values() {
            for p in &j.parts {
                let waiting = matches!(p.phase, Phase::Running(Stage::Synthesize) | Phase::Ready(Stage::Upload));
                if p.witness && waiting {
                    *witness.entry(j.spec.circuit).or_default() += 1;
                }
                host += p.held.host_abc + p.held.host_rest;
                let dev_bytes = p.held.dev_abc + p.held.dev_rest;
                match p.device {
                    Some(d) => devs[d.0 as usize] += dev_bytes,
                    None if dev_bytes > 0 => return Err(format!("{:?} holds device bytes off-device", j.key.id)),
                    None => {}
                }
            }
        }
        for (id, c) in &self.circuits {
            let n = witness.get(id).copied().unwrap_or(0);
            if c.witness_waiting != n {
                return Err(format!("circuit {} counts {} waiting witness partitions, {n} found", id.0, c.witness_waiting));
            }
        }
        if queued != self.load_queue.len() {
            return Err(format!("{} queued loads found, {} in the load queue (a duplicate or an unknown circuit)", queued, self.load_queue.len()));
        }
        if aside != self.host.set_aside {
            return Err(format!("{} host bytes set aside for loads, the largest load needs {aside}", self.host.set_aside));
        }
        if in_loads != self.host.transient || in_loads > self.host.set_aside {
            return Err(format!("loads in flight hold {in_loads} host bytes, counted {} of {} set aside", self.host.transient, self.host.set_aside));
        }
        host += in_loads;
        if host != self.host.used {
            return Err(format!("host used {} but reservations sum to {host}", self.host.used));
        }
        if self.host.used > self.host.capacity {
            return Err(format!("host used {} exceeds {}", self.host.used, self.host.capacity));
        }
        self.check_retired()?;
        for (d, s) in self.devices.iter().enumerate() {
            if devs[d] != s.pool.used {
                return Err(format!("device {d} used {} but reservations sum to {}", s.pool.used, devs[d]));
            }
            if s.pool.used > s.pool.capacity {
                return Err(format!("device {d} used {} exceeds {}", s.pool.used, s.pool.capacity));
            }
        }
        Ok(())
    }

    /// A multi-line description of the internal state (jobs and partition phases, queues,
    /// devices, parameter residency), for logs and diagnostics.
    pub fn describe(&self) -> String {
        use std::fmt::Write as _;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "now {} live {} lookahead {} gpu_waiting {} host {}/{} (loads {} of {} set aside, queued {:?}) host_blocked {}",
            self.now,
            self.live_jobs,
            self.lookahead,
            self.gpu_waiting,
            self.host.used,
            self.host.capacity,
            self.host.transient,
            self.host.set_aside,
            self.load_queue.iter().map(|(c, d)| (c.0, d.0)).collect::<Vec<_>>(),
            self.host_blocked
        );
        for j in self.jobs.values() {
            let phases: Vec<String> =
                j.parts.iter().map(|p| format!("{:?}@{:?}{}", p.phase, p.device.map(|d| d.0), if p.witness { "w" } else { "" })).collect();
            let _ = writeln!(
                o,
                "job {:?} {:?} c{} ended {} running {} next_synth {} next_upload {} [{}]",
                j.key.id,
                j.key.prio.0,
                j.spec.circuit.0,
                j.ended,
                j.running,
                j.next_synth,
                j.next_upload,
                phases.join(", ")
            );
        }
        let _ = writeln!(o, "synth_queue {:?}", self.synth_queue.iter().map(|k| k.id.0).collect::<Vec<_>>());
        let _ = writeln!(o, "gpu_ready {:?}", self.gpu_ready.iter().map(|k| (k.job.id.0, k.index)).collect::<Vec<_>>());
        let _ = writeln!(o, "finalize_queue {:?}", self.finalize_queue.iter().map(|k| (k.job.id.0, k.index)).collect::<Vec<_>>());
        for (d, s) in self.devices.iter().enumerate() {
            let _ = writeln!(
                o,
                "device {d}{}{}: used {}/{} reserve {} free workers {} lanes free {} active {} claimed {} lane_queue {:?}",
                if s.fallback { " (fallback)" } else { "" },
                if s.retired { " (retired)" } else { "" },
                s.pool.used,
                s.pool.capacity,
                s.pool.reserve,
                s.workers.free_count(),
                s.lanes_free,
                s.active,
                self.claimed.get(d).copied().unwrap_or(false),
                s.lane_queue.iter().map(|k| (k.job.id.0, k.index)).collect::<Vec<_>>()
            );
        }
        for (id, c) in &self.circuits {
            let devs: Vec<String> = c.devices.iter().map(|r| format!("{:?}/{}{}", r.state, r.users, if r.matrices { "+m" } else { "" })).collect();
            let _ = writeln!(
                o,
                "circuit {}: host {:?}/{} devices [{}] demand {:?} active {:?} bytes {}+{} host {} kept {} matrices {} witness waiting {}",
                id.0,
                c.host.state,
                c.host.users,
                devs.join(", "),
                c.demand.iter().map(|(k, n)| (k.id.0, *n)).collect::<Vec<_>>(),
                c.active.iter().map(|(k, n)| (k.id.0, *n)).collect::<Vec<_>>(),
                c.profile.params_device_bytes,
                c.profile.footprint.device(),
                c.profile.params_device_host_bytes,
                c.host_kept,
                c.matrices,
                c.witness_waiting
            );
        }
        o
    }

    /// A retired device holds parameters only while partitions use them or a load is in
    /// flight, and no partition there waits for a further device stage.
    fn check_retired(&self) -> Result<(), String> {
        for (d, s) in self.devices.iter().enumerate().filter(|(_, s)| s.retired) {
            if !s.lane_queue.is_empty() {
                return Err(format!("retired device {d} has partitions waiting for a kernel lane"));
            }
            if let Some((id, _)) = self.circuits.iter().find(|(_, c)| c.devices[d].resident() && c.devices[d].users == 0) {
                return Err(format!("retired device {d} keeps unused parameters of circuit {}", id.0));
            }
        }
        Ok(())
    }

    /// `gpu_ready` holds exactly the synthesized partitions that are next in line in their
    /// job, and agrees with the per-circuit index.
    fn check_queues(&self) -> Result<(), String> {
        let per_circuit: usize = self.circuits.values().map(|c| c.ready.len()).sum();
        if per_circuit != self.gpu_ready.len() {
            return Err(format!("gpu_ready has {} entries, circuits index {per_circuit}", self.gpu_ready.len()));
        }
        for j in self.jobs.values() {
            let head = j.parts.get(j.next_upload as usize);
            let waiting = !j.ended && head.is_some_and(|p| p.phase == Phase::Ready(Stage::Upload));
            let pk = PartKey { job: j.key, index: j.next_upload };
            if waiting != self.gpu_ready.contains(&pk) {
                return Err(format!("{:?} partition {} waiting {waiting} but not queued so", j.key.id, j.next_upload));
            }
            let indexed = self.circuits.get(&j.spec.circuit).is_some_and(|c| c.ready.contains(&pk));
            if waiting != indexed {
                return Err(format!("{:?} missing from its circuit's ready index", j.key.id));
            }
        }
        Ok(())
    }
}
