//! Parameter (SRS) residency: where each circuit's parameters are, who uses them, and which
//! may be evicted (least recently used, unreferenced) when memory is needed.

use std::collections::{BTreeMap, BTreeSet};

use super::action::Action;
use super::config::CircuitProfile;
use super::job::{JobKey, PartKey};
use super::timeline::{Span, SpanKind};
use super::types::{CircuitId, DeviceId, Location, Nanos, Tier};
use super::Engine;

/// State of one copy of a circuit's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// Not there.
    Absent,
    /// Being loaded (memory already reserved).
    Loading,
    /// There.
    Resident,
}

/// One copy (host or one device).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Residence {
    pub state: Presence,
    /// Partitions on the device using it, or device loads reading the host copy.
    pub users: u32,
    /// Logical time of last use (LRU).
    pub last_used: u64,
    /// Start of the load in flight.
    pub since: Nanos,
    /// The load in flight reads the warm host copy.
    pub from_host: bool,
    /// A device copy that includes the circuit's constraint matrices (their bytes are
    /// reserved with the parameters and freed with them).
    pub matrices: bool,
}

impl Residence {
    const ABSENT: Residence = Residence { state: Presence::Absent, users: 0, last_used: 0, since: Nanos::ZERO, from_host: false, matrices: false };

    pub fn resident(&self) -> bool {
        self.state == Presence::Resident
    }

    pub fn present(&self) -> bool {
        self.state != Presence::Absent
    }
}

/// A registered circuit.
#[derive(Debug, Clone)]
pub(crate) struct CircuitState {
    pub profile: CircuitProfile,
    /// Device bytes of the circuit's recorded constraint matrices, 0 until reported
    /// ([`Engine::matrices_recorded`]).
    pub matrices: u64,
    pub host: Residence,
    pub devices: Vec<Residence>,
    /// Partitions per job that still need device parameters, in job order.
    pub demand: BTreeMap<JobKey, u32>,
    /// The subset of `demand` already started (synthesizing, waiting for or on a GPU); only
    /// these protect parameters from eviction by later jobs, so queued work cannot pin
    /// memory that started work needs.
    pub active: BTreeMap<JobKey, u32>,
    /// This circuit's entries of the engine's `gpu_ready`.
    pub ready: BTreeSet<PartKey>,
    /// Partitions synthesized with the witness footprint not yet admitted to a device.
    pub witness_waiting: u32,
    /// Host bytes of evicted streamed device copies still reserved because partitions of
    /// the circuit are under way ([`CircuitProfile::params_device_host_bytes`]); the next
    /// device load takes them, and they are freed once no partition is under way.
    pub host_kept: u64,
}

impl CircuitState {
    pub fn new(profile: CircuitProfile, devices: usize) -> CircuitState {
        CircuitState {
            profile,
            matrices: 0,
            host: Residence::ABSENT,
            devices: vec![Residence::ABSENT; devices],
            demand: BTreeMap::new(),
            active: BTreeMap::new(),
            ready: BTreeSet::new(),
            witness_waiting: 0,
            host_kept: 0,
        }
    }

    pub fn at(&self, loc: Location) -> Option<&Residence> {
        match loc {
            Location::Host => Some(&self.host),
            Location::Device(d) => self.devices.get(d.0 as usize),
        }
    }

    pub fn at_mut(&mut self, loc: Location) -> Option<&mut Residence> {
        match loc {
            Location::Host => Some(&mut self.host),
            Location::Device(d) => self.devices.get_mut(d.0 as usize),
        }
    }

    /// Bytes of the parameters at `loc`.
    pub fn bytes(&self, loc: Location) -> u64 {
        match loc {
            Location::Host => self.profile.params_host_bytes,
            Location::Device(_) => self.profile.params_device_bytes,
        }
    }

    /// Bytes the copy at `loc` reserves: the parameters, plus the matrices where it includes them.
    pub fn copy_bytes(&self, loc: Location) -> u64 {
        let m = if self.at(loc).is_some_and(|r| r.matrices) { self.matrices } else { 0 };
        self.bytes(loc).saturating_add(m)
    }

    /// Device bytes of a copy with the matrices and one partition beside it: what a device
    /// must let non-CRITICAL work use to hold the matrices ([`Engine::matrices_fit`]).
    pub fn matrices_copy_need(&self) -> u64 {
        self.profile.params_device_bytes.saturating_add(self.matrices).saturating_add(self.profile.footprint.device())
    }

    /// Host bytes a device copy holds (streamed bases), 0 for a resident copy.
    pub fn copy_host_bytes(&self) -> u64 {
        self.profile.params_device_host_bytes
    }

    /// Host bytes a new device copy must still reserve: its host bytes less those kept from
    /// an evicted copy.
    pub fn copy_host_need(&self) -> u64 {
        self.copy_host_bytes().saturating_sub(self.host_kept)
    }

    pub fn tier(&self) -> Tier {
        if self.devices.iter().any(Residence::resident) {
            Tier::Hot
        } else if self.host.resident() {
            Tier::Warm
        } else {
            Tier::Cold
        }
    }

    pub fn add_demand(&mut self, key: JobKey, n: u32) {
        bump(&mut self.demand, key, n);
    }

    /// One partition of `key` no longer needs the parameters (`started`: it had begun).
    pub fn sub_demand(&mut self, key: JobKey, started: bool) {
        drop_one(&mut self.demand, key);
        if started {
            drop_one(&mut self.active, key);
        }
    }

    /// One partition of `key` started synthesis.
    pub fn add_active(&mut self, key: JobKey) {
        bump(&mut self.active, key, 1);
    }
}

fn bump(m: &mut BTreeMap<JobKey, u32>, key: JobKey, n: u32) {
    if n > 0 {
        *m.entry(key).or_insert(0) += n;
    }
}

fn drop_one(m: &mut BTreeMap<JobKey, u32>, key: JobKey) {
    if let Some(n) = m.get_mut(&key) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            m.remove(&key);
        }
    }
}

/// Which resident, unreferenced parameters a request may evict.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Evict {
    /// Those no job needs.
    Idle,
    /// Those no started partition of a job ordered before this one needs (or that have a
    /// copy on another device).
    Before(JobKey),
}

impl Engine {
    pub(crate) fn lru_tick(&mut self) -> u64 {
        self.lru_clock += 1;
        self.lru_clock
    }

    /// Free bytes at `loc` (respecting the CRITICAL reserve unless `critical`).
    pub(crate) fn avail(&self, loc: Location, critical: bool) -> u64 {
        match loc {
            Location::Host => self.host.avail(critical),
            Location::Device(d) => self.devices.get(d.0 as usize).map_or(0, |s| s.pool.avail(critical)),
        }
    }

    fn evictable(&self, c: &CircuitState, loc: Location, rule: Evict) -> bool {
        let Some(r) = c.at(loc) else { return false };
        if !r.resident() || r.users > 0 {
            return false;
        }
        match (loc, rule) {
            (Location::Host, _) => true,
            (_, Evict::Idle) => c.demand.is_empty(),
            (Location::Device(d), Evict::Before(k)) => {
                let later = !matches!(c.active.keys().next(), Some(first) if *first <= k);
                // Witness partitions waiting for a copy with matrices need a replica with them.
                let matrices = r.matrices && c.witness_waiting > 0;
                let replica = c.devices.iter().enumerate().any(|(i, o)| i != d.0 as usize && o.resident() && self.serves(i) && (o.matrices || !matrices));
                later || replica
            }
        }
    }

    /// A device load of `c` may be decided: its query, and a streamed copy's bases, fit the
    /// host budget beside everything but the loads in flight. A decided load then waits only
    /// for other loads (the set-aside may grow after the decision, the rest of the host never
    /// does beyond its share), so its device memory, reserved meanwhile, is never held
    /// against partitions that themselves hold the host memory it waits for.
    pub(crate) fn load_host_fits(&self, c: &CircuitState) -> bool {
        self.host.held().saturating_add(c.copy_host_need()).saturating_add(c.profile.load_host_bytes) <= self.host.capacity
    }

    /// Makes `need` bytes available at `loc`, evicting least recently used parameters that
    /// `rule` allows (never `keep`'s); evicts nothing and returns false when that cannot be
    /// enough.
    pub(crate) fn make_room_keeping(&mut self, loc: Location, need: u64, critical: bool, rule: Evict, keep: Option<CircuitId>) -> bool {
        let Some(plan) = self.plan_room(loc, need, critical, rule, keep, 0, &[]) else { return false };
        for (id, at) in plan {
            self.evict_now(id, at);
        }
        true
    }

    /// Makes room for a new device copy of `id` at `loc` that needs `need` device bytes:
    /// and, for streamed parameters, room on the host for its bases
    /// ([`CircuitState::copy_host_need`]). Evicts (least recently used copies that `rule`
    /// allows, never `keep`'s nor `id`'s host copies) only when both can be made; false
    /// otherwise.
    pub(crate) fn make_copy_room(&mut self, id: CircuitId, loc: Location, need: u64, critical: bool, rule: Evict, keep: Option<CircuitId>) -> bool {
        let Some(c) = self.circuits.get(&id) else { return false };
        let device = matches!(loc, Location::Device(_));
        let host_need = if device { c.copy_host_need() } else { 0 };
        let query_fits = !device || self.load_host_fits(c);
        let Some(mut plan) = self.plan_room(loc, need, critical, rule, keep, 0, &[]) else { return false };
        if host_need > 0 || !query_fits {
            // Device copies evicted for the device room free their host bytes too. Streamed
            // bases need their room within what this priority may use; a resident copy's
            // load, whose query does not fit beside the rest of the host (the set-aside grew
            // over it), the rest back within its share.
            let credit = plan.iter().map(|(e, at)| self.circuits.get(e).map_or(0, |c| host_freed(c, *at))).sum();
            let Some(more) = self.plan_room(Location::Host, host_need, critical || host_need == 0, rule, Some(id), credit, &plan) else { return false };
            plan.extend(more);
        }
        for (e, at) in plan {
            self.evict_now(e, at);
        }
        true
    }

    /// The copies to evict so that `need` bytes are available at `loc` (counting `credit`
    /// bytes about to be freed there, and not the copies in `skip`), least recently used
    /// first; `None` when that cannot be enough. Host room may also come from streamed
    /// device copies, whose bases are in host memory: like warm host copies, any that no
    /// partition uses and none of whose circuit's partitions is under way.
    #[allow(clippy::too_many_arguments)]
    fn plan_room(
        &self,
        loc: Location,
        need: u64,
        critical: bool,
        rule: Evict,
        keep: Option<CircuitId>,
        credit: u64,
        skip: &[(CircuitId, Location)],
    ) -> Option<Vec<(CircuitId, Location)>> {
        // Signed: usage may already exceed what non-CRITICAL work may use (the reserve).
        let pool = match loc {
            Location::Host => self.host,
            Location::Device(d) => self.devices.get(d.0 as usize)?.pool,
        };
        let mut have = i128::from(pool.usable(critical)) - i128::from(pool.held()) + i128::from(credit);
        let need = i128::from(need);
        if have >= need {
            return Some(Vec::new());
        }
        let mut cands: Vec<(u64, CircuitId, Location, u64)> = Vec::new();
        for (id, c) in self.circuits.iter().filter(|(id, _)| Some(**id) != keep) {
            if self.evictable(c, loc, rule) && !skip.contains(&(*id, loc)) {
                cands.push((c.at(loc).map_or(0, |r| r.last_used), *id, loc, c.copy_bytes(loc)));
            }
            if loc == Location::Host && c.copy_host_bytes() > 0 {
                for (d, r) in c.devices.iter().enumerate() {
                    let at = Location::Device(dev(d));
                    let freed = host_freed(c, at);
                    // Like a warm host copy, unreferenced and with no partition of its
                    // circuit under way (those are what a later load would wait behind).
                    if freed > 0 && r.resident() && r.users == 0 && !skip.contains(&(*id, at)) {
                        cands.push((r.last_used, *id, at, freed));
                    }
                }
            }
        }
        if let (Location::Host, Some(k)) = (loc, keep) {
            // The kept circuit's own idle streamed copies may give their host room too where
            // they cannot serve it: beyond one copy (one stays, the one with matrices if any,
            // else the most recently used), and on a device that can never run its partitions
            // at this priority (a copy loaded there for CRITICAL work).
            if let Some(c) = self.circuits.get(&k).filter(|c| c.copy_host_bytes() > 0) {
                let present = c.devices.iter().filter(|r| r.present()).count();
                let keeper = c
                    .devices
                    .iter()
                    .enumerate()
                    .filter(|(d, r)| r.present() && self.fits_ever(c, *d, critical))
                    .max_by_key(|(_, r)| (r.matrices, r.last_used))
                    .map(|(d, _)| d);
                for (d, r) in c.devices.iter().enumerate() {
                    let at = Location::Device(dev(d));
                    let idle = r.resident() && r.users == 0 && host_freed(c, at) > 0 && !skip.contains(&(k, at));
                    let useless = !self.fits_ever(c, d, critical);
                    if idle && Some(d) != keeper && (useless || present > 1) {
                        cands.push((r.last_used, k, at, host_freed(c, at)));
                    }
                }
            }
        }
        cands.sort_unstable();
        let mut chosen = 0;
        for (_, _, _, b) in &cands {
            if have >= need {
                break;
            }
            have += i128::from(*b);
            chosen += 1;
        }
        if have < need {
            return None;
        }
        Some(cands.into_iter().take(chosen).map(|(_, id, at, _)| (id, at)).collect())
    }

    /// Frees the host bytes kept for `id`'s evicted streamed copies once none of its
    /// partitions is under way.
    pub(crate) fn release_kept(&mut self, id: CircuitId) {
        let Some(c) = self.circuits.get_mut(&id) else { return };
        if c.active.is_empty() && c.host_kept > 0 {
            let kept = std::mem::take(&mut c.host_kept);
            self.pool_give(Location::Host, kept);
        }
    }

    /// Gives back (or, with partitions of the circuit under way, keeps for its next load)
    /// the host bytes of `id`'s device copy dropped from `loc`.
    fn drop_copy_host(&mut self, id: CircuitId, loc: Location) {
        let Some(c) = self.circuits.get_mut(&id) else { return };
        let h = c.copy_host_bytes();
        if h == 0 || loc == Location::Host {
            return;
        }
        if c.active.is_empty() {
            self.pool_give(Location::Host, h);
        } else {
            c.host_kept = c.host_kept.saturating_add(h);
        }
    }

    /// Drops resident, unreferenced parameters (and the matrices of a device copy with them).
    pub(crate) fn evict_now(&mut self, id: CircuitId, loc: Location) {
        let Some(c) = self.circuits.get_mut(&id) else { return };
        let bytes = c.copy_bytes(loc);
        let Some(r) = c.at_mut(loc) else { return };
        r.state = Presence::Absent;
        r.matrices = false;
        self.pool_give(loc, bytes);
        self.drop_copy_host(id, loc);
        self.actions.push_back(Action::EvictParams { circuit: id, from: loc, bytes });
    }

    /// Reserves memory for a load (the caller checked that it fits), of the parameters alone
    /// or, with `matrices`, of a device copy that includes the matrices, and asks for it. A
    /// device load is asked for once its query fits the host bytes set aside for loads
    /// ([`Engine::start_queued_loads`]); until then it waits in line, its memory reserved.
    pub(crate) fn start_load(&mut self, id: CircuitId, loc: Location, matrices: bool) {
        let now = self.now;
        let Some(c) = self.circuits.get_mut(&id) else { return };
        if !matches!(c.at(loc), Some(r) if !r.present()) {
            return; // already there or on its way (or no such device): nothing to reserve
        }
        let (params, m) = (c.bytes(loc), c.matrices);
        let matrices = matrices && m > 0;
        // A device copy of streamed parameters holds their bases in host memory.
        let host = if matches!(loc, Location::Device(_)) {
            let kept = c.host_kept.min(c.copy_host_bytes());
            c.host_kept -= kept;
            c.copy_host_bytes() - kept
        } else {
            0
        };
        let from_host = matches!(loc, Location::Device(_)) && c.host.resident();
        if from_host {
            c.host.users += 1;
        }
        let Some(r) = c.at_mut(loc) else { return };
        r.state = Presence::Loading;
        r.since = now;
        r.from_host = from_host;
        r.matrices = matrices;
        self.pool_take(loc, params);
        self.pool_take(Location::Host, host);
        match loc {
            Location::Host => self.actions.push_back(Action::LoadParams { circuit: id, to: loc, bytes: params, from_host }),
            Location::Device(device) => {
                if matrices {
                    self.pool_take(loc, m);
                }
                self.load_queue.push_back((id, device));
                self.start_queued_loads();
            }
        }
    }

    /// Asks for the queued device loads whose query fits the host bytes set aside for loads
    /// beside those in flight, in the order they were queued, with the matrices reserved for
    /// them ([`Action::MatricesReserved`]); drops those onto a retired device, which the
    /// caller never heard of.
    pub(crate) fn start_queued_loads(&mut self) {
        let mut i = 0;
        while let Some(&(id, device)) = self.load_queue.get(i) {
            let loc = Location::Device(device);
            let Some(c) = self.circuits.get(&id) else {
                self.load_queue.remove(i);
                continue;
            };
            if !self.serves(device.0 as usize) {
                self.load_queue.remove(i);
                self.drop_queued(id, loc);
                continue;
            }
            let (query, params, m) = (c.profile.load_host_bytes, c.bytes(loc), c.matrices);
            if !self.host.load_fits(query) {
                i += 1;
                continue;
            }
            self.load_queue.remove(i);
            self.host.take_load(query);
            let now = self.now;
            let Some(r) = self.circuits.get_mut(&id).and_then(|c| c.at_mut(loc)) else { continue };
            r.since = now;
            let (from_host, matrices) = (r.from_host, r.matrices);
            self.actions.push_back(Action::LoadParams { circuit: id, to: loc, bytes: params, from_host });
            if matrices {
                self.actions.push_back(Action::MatricesReserved { circuit: id, device, bytes: m });
            }
        }
    }

    /// The load of `id` onto `device` is decided but not asked for yet (in the load queue).
    pub(crate) fn queued(&self, id: CircuitId, device: DeviceId) -> bool {
        self.load_queue.contains(&(id, device))
    }

    /// Gives back what a queued load reserved (it was never asked for).
    fn drop_queued(&mut self, id: CircuitId, loc: Location) {
        let Some(c) = self.circuits.get_mut(&id) else { return };
        let bytes = c.copy_bytes(loc);
        let Some(r) = c.at_mut(loc) else { return };
        let from_host = r.from_host;
        *r = Residence { last_used: r.last_used, ..Residence::ABSENT };
        if from_host {
            c.host.users = c.host.users.saturating_sub(1);
        }
        self.pool_give(loc, bytes);
        self.drop_copy_host(id, loc);
    }

    /// Device `d` can take a copy of `c` that includes its matrices: they are known, and
    /// parameters, matrices and one partition fit what non-CRITICAL work may use there (so
    /// the bigger copy never stops a partition from ever fitting).
    pub(crate) fn matrices_fit(&self, c: &CircuitState, d: usize) -> bool {
        c.matrices > 0 && self.devices.get(d).is_some_and(|s| s.pool.usable(false) >= c.matrices_copy_need())
    }

    /// Whether a load of `id` onto `loc`, for which the caller made room for the parameters
    /// and `extra` bytes, should include the matrices: when they fit the device and room
    /// for them too can be made now under `rule` (evicting as for parameters).
    pub(crate) fn room_for_matrices(&mut self, id: CircuitId, loc: Location, extra: u64, critical: bool, rule: Evict) -> bool {
        let Location::Device(d) = loc else { return false };
        let Some(c) = self.circuits.get(&id) else { return false };
        if !self.matrices_fit(c, d.0 as usize) {
            return false;
        }
        let need = c.profile.params_device_bytes.saturating_add(c.matrices).saturating_add(extra);
        self.make_room_keeping(loc, need, critical, rule, Some(id))
    }

    /// The matrices of `id` became known: every device copy in service without them grows to
    /// include them where they fit and free memory (evicting parameters no job needs) allows.
    pub(crate) fn grow_copies(&mut self, id: CircuitId) {
        for d in 0..self.devices.len() {
            self.grow_copy(id, d, false, Evict::Idle);
        }
    }

    /// Grows the copy of `id` on device `d` (present, in service, without matrices) to
    /// include its matrices where they fit and room can be made under `rule`; true if it did.
    pub(crate) fn grow_copy(&mut self, id: CircuitId, d: usize, critical: bool, rule: Evict) -> bool {
        let Some(c) = self.circuits.get(&id) else { return false };
        let r = c.devices[d];
        if !r.present() || r.matrices || !self.serves(d) || !self.matrices_fit(c, d) {
            return false;
        }
        let (m, loc) = (c.matrices, Location::Device(dev(d)));
        if !self.make_room_keeping(loc, m, critical, rule, Some(id)) {
            return false;
        }
        if let Some(r) = self.circuits.get_mut(&id).and_then(|c| c.devices.get_mut(d)) {
            r.matrices = true;
        }
        self.pool_take(loc, m);
        // A queued load reports its matrices when it is asked for.
        if !self.queued(id, dev(d)) {
            self.actions.push_back(Action::MatricesReserved { circuit: id, device: dev(d), bytes: m });
        }
        true
    }

    /// `c`'s parameters are streamed and some device holds (or is loading) a copy: the engine
    /// makes no second one (each would hold the bases in host memory again).
    pub(crate) fn streamed_copy_elsewhere(c: &CircuitState) -> bool {
        c.copy_host_bytes() > 0 && c.devices.iter().any(Residence::present)
    }

    /// A streamed circuit has one device copy; when every copy it has is idle on a device
    /// where the waiting partition can never be uploaded (none of `cands`: one that cannot
    /// hold the matrices a witness partition needs, or whose free memory outside the CRITICAL
    /// reserve is too small for a partition of a job that is not), evicts them so the copy can
    /// be made again on a device of `cands`. Whether it evicted.
    pub(crate) fn move_streamed_copy(&mut self, circuit: CircuitId, cands: &[usize]) -> bool {
        let Some(c) = self.circuits.get(&circuit) else { return false };
        let present: Vec<usize> = c.devices.iter().enumerate().filter(|(_, r)| r.present()).map(|(d, _)| d).collect();
        let movable = present.iter().all(|&d| c.devices[d].resident() && c.devices[d].users == 0 && !cands.contains(&d));
        if present.is_empty() || !movable {
            return false;
        }
        for d in present {
            self.evict_now(circuit, Location::Device(dev(d)));
        }
        true
    }

    /// Some device in service other than `avoid` that a job avoiding `avoid` may use and
    /// that can run `c`'s partitions holds (or is loading) `c`'s copy with its matrices: a
    /// witness-only partition of that job may reserve the witness footprint, or, synthesized
    /// so, must go to such a device.
    pub(crate) fn matrices_copy(&self, c: &CircuitState, critical: bool, avoid: Option<usize>) -> bool {
        c.devices.iter().enumerate().any(|(d, r)| Some(d) != avoid && r.present() && r.matrices && self.open_to(d, avoid) && self.fits_ever(c, d, critical))
    }

    /// Some device in service other than `avoid` that a job avoiding `avoid` may use can
    /// hold `c`'s copy with its matrices and run its partitions ([`Engine::matrices_fit`]).
    pub(crate) fn matrices_reachable(&self, c: &CircuitState, critical: bool, avoid: Option<usize>) -> bool {
        (0..self.devices.len()).any(|d| Some(d) != avoid && self.open_to(d, avoid) && self.matrices_fit(c, d) && self.fits_ever(c, d, critical))
    }

    /// Device `d` is in service (not retired).
    pub(crate) fn serves(&self, d: usize) -> bool {
        self.devices.get(d).is_some_and(|s| !s.retired)
    }

    /// Device `d` is in service and can ever hold `c`'s parameters and one of its partitions
    /// (and the host the host bytes of such a copy and one partition's host footprint).
    pub(crate) fn fits_ever(&self, c: &CircuitState, d: usize, critical: bool) -> bool {
        let total = c.profile.params_device_bytes.saturating_add(c.profile.footprint.device());
        let host = c.copy_host_bytes().saturating_add(c.profile.footprint.host());
        (c.copy_host_bytes() == 0 || self.host.usable(critical) >= host) && self.devices.get(d).is_some_and(|s| !s.retired && s.pool.usable(critical) >= total)
    }

    /// Device `d` is in service and may take work of a job avoiding `avoid`: a fallback
    /// device only while no other non-fallback device than `avoid` is in service.
    pub(crate) fn open_to(&self, d: usize, avoid: Option<usize>) -> bool {
        let Some(s) = self.devices.get(d) else { return false };
        !s.retired && (!s.fallback || !self.devices.iter().enumerate().any(|(p, o)| p != d && Some(p) != avoid && !o.fallback && !o.retired))
    }

    /// `c`'s parameters are (or are being loaded) on a device other than `except` that a job
    /// avoiding `avoid` may use and that can run its partitions.
    pub(crate) fn usable_copy(&self, c: &CircuitState, critical: bool, except: Option<usize>, avoid: Option<usize>) -> bool {
        c.devices.iter().enumerate().any(|(d, r)| Some(d) != except && r.present() && self.open_to(d, avoid) && self.fits_ever(c, d, critical))
    }

    /// Loads `id` onto up to `copies` devices that can run it, other than `avoid` (counting
    /// copies already there), using free memory or parameters no job needs (used when a job
    /// is submitted).
    pub(crate) fn prefetch(&mut self, id: CircuitId, critical: bool, copies: u32, avoid: Option<usize>) {
        let Some(c) = self.circuits.get(&id) else { return };
        let n = self.devices.len();
        let ok = |d: usize| Some(d) != avoid && self.open_to(d, avoid) && self.fits_ever(c, d, critical);
        let have = (0..n).filter(|&d| ok(d) && c.devices[d].present()).count();
        // Streamed parameters get one device copy: each holds its bases in host memory.
        let copies = if c.copy_host_bytes() > 0 { copies.min(1) } else { copies };
        let want = (copies as usize).min(n).saturating_sub(have);
        let need = c.profile.params_device_bytes;
        let mut cands: Vec<(u64, std::cmp::Reverse<usize>)> =
            (0..n).filter(|&d| ok(d) && !c.devices[d].present()).map(|d| (self.avail(Location::Device(dev(d)), critical), std::cmp::Reverse(d))).collect();
        cands.sort_unstable_by(|a, b| b.cmp(a));
        for (_, std::cmp::Reverse(d)) in cands.into_iter().take(want) {
            let loc = Location::Device(dev(d));
            if self.make_copy_room(id, loc, need, critical, Evict::Idle, None) {
                let m = self.room_for_matrices(id, loc, 0, critical, Evict::Idle);
                self.start_load(id, loc, m);
            }
        }
    }

    /// Loads `id` for a waiting partition of job `key` that needs `extra` device bytes to run,
    /// onto a device in service other than `avoid` if one can make room now, else onto
    /// `avoid`. Returns false when no unclaimed device can make room now. Callers ask when no
    /// copy the job can use is present: a streamed circuit's one copy, idle where the job can
    /// never run (a device whose CRITICAL reserve only a CRITICAL job may use), is moved, or
    /// the job would wait for it forever.
    pub(crate) fn demand_load(&mut self, id: CircuitId, key: JobKey, extra: u64, avoid: Option<usize>) -> bool {
        let crit = key.critical();
        if let Some(c) = self.circuits.get(&id).filter(|c| Engine::streamed_copy_elsewhere(c)) {
            let cands: Vec<usize> = (0..self.devices.len()).filter(|&d| self.open_to(d, avoid) && self.fits_ever(c, d, crit)).collect();
            if !cands.is_empty() {
                self.move_streamed_copy(id, &cands);
            }
        }
        let Some(c) = self.circuits.get(&id) else { return false };
        let need = c.profile.params_device_bytes.saturating_add(extra);
        let host_free = self.avail(Location::Host, crit) >= c.copy_host_need() && self.load_host_fits(c);
        let n = self.devices.len();
        let open = |e: &Engine, d: usize| {
            !e.claimed[d] && e.open_to(d, avoid) && e.circuits.get(&id).is_some_and(|c| !c.devices[d].present() && e.fits_ever(c, d, crit))
        };
        // The other devices first, then the avoided one.
        for avoided in [false, true] {
            let group = |d: &usize| (Some(*d) == avoid) == avoided;
            // Without eviction first: prefer a device with a free worker, then the most room.
            let mut best: Option<(bool, u64, std::cmp::Reverse<usize>)> = None;
            for d in (0..n).filter(group) {
                let avail = self.avail(Location::Device(dev(d)), crit);
                if open(self, d) && avail >= need && host_free {
                    best = best.max(Some((self.devices[d].workers.has_free(), avail, std::cmp::Reverse(d))));
                }
            }
            let mut pick = best.map(|(_, _, std::cmp::Reverse(d))| d);
            if pick.is_none() {
                pick = (0..n).filter(group).find(|&d| open(self, d) && self.make_copy_room(id, Location::Device(dev(d)), need, crit, Evict::Before(key), None));
            }
            if let Some(d) = pick {
                let loc = Location::Device(dev(d));
                let m = self.room_for_matrices(id, loc, extra, crit, Evict::Before(key));
                self.start_load(id, loc, m);
                return true;
            }
        }
        false
    }

    /// A load finished (or failed): bookkeeping shared by both.
    pub(crate) fn load_done(&mut self, id: CircuitId, loc: Location, ok: bool) {
        let now = self.now;
        let tick = self.lru_tick();
        let Some(c) = self.circuits.get_mut(&id) else { return };
        let (bytes, query) = (c.copy_bytes(loc), c.profile.load_host_bytes);
        let Some(r) = c.at_mut(loc) else { return };
        let since = r.since;
        let from_host = std::mem::take(&mut r.from_host);
        // Only loads asked for are reported (a queued one is not): a device load's query goes.
        let query = if matches!(loc, Location::Device(_)) { query } else { 0 };
        if ok {
            r.state = Presence::Resident;
            r.last_used = tick;
        } else {
            r.state = Presence::Absent;
            r.matrices = false;
        }
        if from_host {
            c.host.users = c.host.users.saturating_sub(1);
        }
        self.host.give_load(query);
        self.timeline.span(Span { kind: SpanKind::LoadParams, partition: None, circuit: id, location: loc, slot: 0, start: since, end: now, failed: !ok });
        if !ok {
            self.pool_give(loc, bytes);
            self.drop_copy_host(id, loc);
            self.actions.push_back(Action::EvictParams { circuit: id, from: loc, bytes });
        }
    }
}

/// Host bytes that evicting `c`'s copy at `at` frees now: a device copy's streamed bases,
/// unless partitions of the circuit are under way (then they stay reserved for its next load).
fn host_freed(c: &CircuitState, at: Location) -> u64 {
    match at {
        Location::Device(_) if c.active.is_empty() => c.copy_host_bytes(),
        _ => 0,
    }
}

pub(crate) fn dev(d: usize) -> DeviceId {
    DeviceId(d as u32)
}
