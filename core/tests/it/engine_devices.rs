//! Device faults, avoidance and retirement: a device that breaks, jobs retried away from it
//! and the device taken out of service, as the daemon's driver does it; jobs avoiding a
//! device; every device retired. Checked against the simulator's trace of stage starts and
//! ends per device and its byte ledger.

use std::collections::BTreeMap;

use crate::strategies::{self, dur, priority, MB};
use cuzk_core::engine::sim::{CircuitModel, Faults, Model, Sim, Trace};
use cuzk_core::engine::{
    Action, CircuitId, CircuitProfile, DeviceConfig, DeviceId, Engine, EngineConfig, EngineError, Footprint, JobFailure, JobId, JobKind, JobSpec, Location,
    Nanos, Outcome, Presence, Priority, Stage,
};
use proptest::prelude::*;

const MAX_EVENTS: u64 = 2_000_000;

fn circuit() -> impl Strategy<Value = (CircuitProfile, CircuitModel)> {
    strategies::circuit((0..=32u64, 1..=48u64, 1..=32u64, 0..=16u64, 1..=32u64, 0..=16u64), [dur(30), dur(10), dur(20), dur(30), dur(20)])
}

#[derive(Debug, Clone)]
struct JobPlan {
    circuit: u32,
    priority: Priority,
    partitions: u32,
    at_ms: u64,
    /// Index into the devices, reduced modulo their number.
    avoid: Option<u32>,
}

fn jobs(circuits: u32, max: usize, avoid: bool) -> impl Strategy<Value = Vec<JobPlan>> {
    let a = if avoid { prop::option::of(0..3u32).boxed() } else { Just(None).boxed() };
    let job = (0..circuits, priority(), 1..=5u32, 0..400u64, a).prop_map(|(circuit, priority, partitions, at_ms, avoid)| JobPlan {
        circuit,
        priority,
        partitions,
        at_ms,
        avoid,
    });
    prop::collection::vec(job, 1..=max)
}

/// Devices on which every circuit fits (parameters and one partition); `room` adds space for
/// more resident parameters and partitions at once.
fn devices(n: usize, circuits: &[(CircuitProfile, CircuitModel)], workers: u32, lanes: u32, room_mb: u64) -> Vec<DeviceConfig> {
    let need = circuits.iter().map(|(p, _)| p.params_device_bytes + p.footprint.device()).max().unwrap_or(0);
    vec![DeviceConfig { memory_bytes: need + room_mb * MB, gpu_workers: workers, kernel_lanes: lanes, fallback: false }; n]
}

/// Devices where every circuit's parameters stay resident and every worker fits its largest
/// partition, and CRITICAL work's own worker its largest: memory never holds anything back.
fn ample_devices(n: usize, circuits: &[(CircuitProfile, CircuitModel)], workers: u32, lanes: u32) -> Vec<DeviceConfig> {
    let params: u64 = circuits.iter().map(|(p, _)| p.params_device_bytes).sum();
    let biggest = circuits.iter().map(|(p, _)| p.footprint.device()).max().unwrap_or(0);
    // One more partition than workers: CRITICAL work's own worker.
    vec![DeviceConfig { memory_bytes: params + u64::from(workers + 1) * biggest, gpu_workers: workers, kernel_lanes: lanes, fallback: false }; n]
}

/// Host memory for `synth` partitions of the largest circuit plus every warm copy, and what
/// is set aside for device loads' queries.
fn host_bytes(circuits: &[(CircuitProfile, CircuitModel)], synth: u32, extra: u32) -> u64 {
    let params: u64 = circuits.iter().map(|(p, _)| p.params_host_bytes).sum();
    let biggest = circuits.iter().map(|(p, _)| p.footprint.host()).max().unwrap_or(0);
    let loads = circuits.iter().map(|(p, _)| p.load_host_bytes).max().unwrap_or(0);
    params + u64::from(synth + extra) * biggest + loads
}

fn sim(cfg: EngineConfig, circuits: &[(CircuitProfile, CircuitModel)], faults: Faults, seed: u64) -> Sim {
    let mut model = Model { faults, ..Model::default() };
    for (i, (_, m)) in circuits.iter().enumerate() {
        model.circuits.insert(CircuitId(i as u32), *m);
    }
    let mut sim = Sim::new(cfg, model, seed).expect("valid config");
    for (i, (p, _)) in circuits.iter().enumerate() {
        sim.register(CircuitId(i as u32), *p).expect("register");
    }
    sim
}

fn spec(j: &JobPlan, ndev: u32) -> JobSpec {
    let s = JobSpec::new(JobKind::Generic, CircuitId(j.circuit), j.partitions).with_priority(j.priority);
    match j.avoid {
        Some(d) => s.avoiding(DeviceId(d % ndev)),
        None => s,
    }
}

/// The first trace position of each device's retirement.
fn retirements(trace: &[Trace]) -> BTreeMap<DeviceId, usize> {
    let mut r = BTreeMap::new();
    for (i, e) in trace.iter().enumerate() {
        if let Trace::Retired { device, .. } = e {
            r.entry(*device).or_insert(i);
        }
    }
    r
}

/// No stage starts on a device after its retirement (in trace order).
fn check_no_start_after_retirement(trace: &[Trace]) -> Result<(), TestCaseError> {
    let retired = retirements(trace);
    for (i, e) in trace.iter().enumerate() {
        if let Trace::Start { dispatch, at } = e {
            if let Location::Device(d) = dispatch.location {
                let after = retired.get(&d).is_some_and(|r| *r < i);
                prop_assert!(!after, "{:?} {:?} started on retired {d:?} at {at}", dispatch.partition, dispatch.stage);
            }
        }
    }
    Ok(())
}

/// A retired device's byte ledger (from the actions alone) is back to zero.
fn check_retired_ledgers(sim: &Sim) -> Result<(), TestCaseError> {
    for d in retirements(&sim.log().trace).keys() {
        let at = Location::Device(*d);
        prop_assert_eq!(sim.log().ledger.get(&at).copied().unwrap_or(0), 0, "ledger of retired {:?}", d);
        prop_assert_eq!(sim.engine().usage(at).map(|u| u.used), Some(0));
    }
    Ok(())
}

/// One original job and its attempts.
#[derive(Debug)]
struct Chain {
    spec: JobSpec,
    /// Partitions not yet proven by any attempt.
    remaining: u32,
    /// Tickets of its attempts, the live one last.
    tickets: Vec<usize>,
    /// The device each attempt avoids.
    avoids: Vec<Option<DeviceId>>,
    /// Final outcomes (exactly one expected).
    ends: Vec<Outcome>,
}

/// What the daemon's driver does around the engine: a failed attempt whose failure blames a
/// device is submitted again for its unproven partitions, avoiding that device, up to
/// `max_retries` times; a device with `retire_after` consecutive faults (reset by a
/// successful MSM there) is retired. Reads only the simulator's trace and outcomes.
struct Driver {
    chains: Vec<Chain>,
    retire_after: u32,
    max_retries: usize,
    cursor: usize,
    consecutive: BTreeMap<DeviceId, u32>,
    /// Partitions finalized per attempt, from the stage ends.
    finalized: BTreeMap<JobId, u32>,
    job_chain: BTreeMap<JobId, usize>,
}

impl Driver {
    fn new(retire_after: u32, max_retries: usize) -> Driver {
        Driver {
            chains: Vec::new(),
            retire_after,
            max_retries,
            cursor: 0,
            consecutive: BTreeMap::new(),
            finalized: BTreeMap::new(),
            job_chain: BTreeMap::new(),
        }
    }

    fn submit(&mut self, sim: &mut Sim, at: Nanos, spec: JobSpec) {
        let ticket = sim.submit_at(at, spec.clone());
        self.chains.push(Chain { remaining: spec.partitions, avoids: vec![spec.avoid], spec, tickets: vec![ticket], ends: Vec::new() });
    }

    /// Runs the simulation to the end, reacting to every trace entry.
    fn run(&mut self, sim: &mut Sim) -> u64 {
        let mut n = 0;
        loop {
            self.react(sim);
            if n >= MAX_EVENTS || sim.run(1) == 0 {
                return n;
            }
            n += 1;
        }
    }

    fn chain_of(&mut self, sim: &Sim, job: JobId) -> Option<usize> {
        if let Some(c) = self.job_chain.get(&job) {
            return Some(*c);
        }
        let c = self.chains.iter().position(|c| c.tickets.last().is_some_and(|t| sim.job(*t) == Some(job)))?;
        self.job_chain.insert(job, c);
        Some(c)
    }

    fn react(&mut self, sim: &mut Sim) {
        while let Some(e) = sim.log().trace.get(self.cursor).cloned() {
            self.cursor += 1;
            match e {
                Trace::End { partition, stage, location, failed, .. } => {
                    if stage == Stage::Finalize && !failed {
                        *self.finalized.entry(partition.job).or_insert(0) += 1;
                    }
                    let Location::Device(d) = location else { continue };
                    let count = self.consecutive.entry(d).or_insert(0);
                    if failed {
                        *count += 1;
                        if *count >= self.retire_after && sim.engine().in_service(d) {
                            sim.retire_device(d).expect("retire");
                        }
                    } else if stage == Stage::Msm {
                        *count = 0;
                    }
                }
                Trace::JobEnded { job, at } => self.job_ended(sim, job, at),
                Trace::Start { .. } | Trace::Retired { .. } => {}
            }
        }
    }

    fn job_ended(&mut self, sim: &mut Sim, job: JobId, at: Nanos) {
        let Some(c) = self.chain_of(sim, job) else { return };
        let outcome = sim.log().ends[&job][0].1.clone();
        let proven = self.finalized.get(&job).copied().unwrap_or(0);
        let chain = &mut self.chains[c];
        chain.remaining = chain.remaining.saturating_sub(proven);
        let blamed = match &outcome {
            Outcome::Failed(JobFailure::Stage { partition, stage, .. }) => {
                // The device the failed stage ran on, from the trace.
                let ran = sim.log().trace.iter().rev().find_map(|e| match e {
                    Trace::End { partition: p, stage: s, location, failed: true, .. } if p == partition && s == stage => Some(*location),
                    _ => None,
                });
                match ran {
                    Some(Location::Device(d)) => Some(Some(d)),
                    _ => Some(None),
                }
            }
            Outcome::Failed(JobFailure::DeviceRetired { device, .. }) => Some(Some(*device)),
            _ => None,
        };
        match blamed {
            Some(avoid) if chain.tickets.len() <= self.max_retries && chain.remaining > 0 => {
                let mut spec = chain.spec.clone();
                spec.partitions = chain.remaining;
                spec.avoid = avoid;
                let ticket = sim.submit_at(at, spec);
                chain.tickets.push(ticket);
                chain.avoids.push(avoid);
            }
            _ => chain.ends.push(outcome),
        }
    }
}

/// A device that breaks: from `at_ms` on, every stage there fails; the driver retires it
/// after `retire_after` consecutive faults.
#[derive(Debug, Clone, Copy)]
struct Failure {
    device: DeviceId,
    at_ms: u64,
    retire_after: u32,
    /// Workers per device (bounds the retries a job may need).
    workers: u32,
}

/// Runs `jobs` (avoided devices taken modulo `spec_devices`) on `devs` with `failure`, through
/// the [`Driver`]'s retries and retirement, and checks what every such run must show: it
/// settles, the engine's audit holds, nothing is rejected, and every original job ends
/// exactly once, completed, with all its partitions proven.
fn run_with_failure(
    devs: Vec<DeviceConfig>,
    synth: u32,
    circuits: &[(CircuitProfile, CircuitModel)],
    jobs: &[JobPlan],
    spec_devices: u32,
    failure: Failure,
    seed: u64,
) -> Result<(Sim, Driver), TestCaseError> {
    let cfg = EngineConfig::new(synth, host_bytes(circuits, synth, 2), devs);
    let faults = Faults { failing_device: Some((failure.device, Nanos::from_millis(failure.at_ms))), ..Faults::default() };
    let mut sim = sim(cfg, circuits, faults, seed);
    // Each fault fails at most one attempt. Faults before the retirement: `retire_after` in
    // a row, restarted at most once per worker by an MSM that began before the break; after
    // it: the stages running there, and partitions caught between two stages there (at most
    // three per worker in all).
    let retries = ((failure.workers + 1) * failure.retire_after + 3 * failure.workers + 1) as usize;
    let mut driver = Driver::new(failure.retire_after, retries);
    for j in jobs {
        driver.submit(&mut sim, Nanos::from_millis(j.at_ms), spec(j, spec_devices));
    }
    let n = driver.run(&mut sim);
    prop_assert!(n < MAX_EVENTS, "simulation did not settle");
    prop_assert!(sim.audit().is_ok(), "{:?}\n{}", sim.audit(), sim.engine().describe());
    prop_assert!(sim.log().rejected.is_empty(), "{:?}", sim.log().rejected);
    for (i, chain) in driver.chains.iter().enumerate() {
        prop_assert_eq!(chain.ends.len(), 1, "job {} ended {:?} after {} attempts", i, chain.ends, chain.tickets.len());
        prop_assert_eq!(&chain.ends[0], &Outcome::Completed, "job {} after {} attempts", i, chain.tickets.len());
        prop_assert_eq!(chain.remaining, 0);
    }
    Ok((sim, driver))
}

#[derive(Debug, Clone)]
struct FaultCase {
    ndev: usize,
    workers: u32,
    lanes: u32,
    synth: u32,
    room_mb: u64,
    circuits: Vec<(CircuitProfile, CircuitModel)>,
    jobs: Vec<JobPlan>,
    failing: u32,
    fail_at_ms: u64,
    retire_after: u32,
    seed: u64,
}

fn fault_case() -> impl Strategy<Value = FaultCase> {
    let shape = (2..=3usize, 1..=3u32, 1..=2u32, 1..=4u32, 0..=200u64);
    (shape, prop::collection::vec(circuit(), 1..=3), 0..3u32, 0..600u64, 1..=4u32, any::<u64>()).prop_flat_map(
        |((ndev, workers, lanes, synth, room_mb), circuits, failing, fail_at_ms, retire_after, seed)| {
            let n = circuits.len() as u32;
            (Just((ndev, workers, lanes, synth, room_mb)), Just(circuits), jobs(n, 20, false), Just((failing, fail_at_ms, retire_after, seed))).prop_map(
                |((ndev, workers, lanes, synth, room_mb), circuits, jobs, (failing, fail_at_ms, retire_after, seed))| FaultCase {
                    ndev,
                    workers,
                    lanes,
                    synth,
                    room_mb,
                    circuits,
                    jobs,
                    failing: failing % ndev as u32,
                    fail_at_ms,
                    retire_after,
                    seed,
                },
            )
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, max_shrink_iters: 2000, ..ProptestConfig::default() })]

    /// A device breaks at a random time; failed attempts are retried on the partitions they
    /// did not prove, avoiding the device, and the device is retired after `retire_after`
    /// consecutive faults. Every original job ends exactly once and completes, no stage
    /// starts on the device after its retirement, and every reservation is returned.
    #[test]
    fn a_failing_device_is_avoided_then_retired(c in fault_case()) {
        let devs = devices(c.ndev, &c.circuits, c.workers, c.lanes, c.room_mb);
        let failure = Failure { device: DeviceId(c.failing), at_ms: c.fail_at_ms, retire_after: c.retire_after, workers: c.workers };
        let (sim, _) = run_with_failure(devs, c.synth, &c.circuits, &c.jobs, c.ndev as u32, failure, c.seed)?;
        let failing = failure.device;
        let trace = &sim.log().trace;
        check_no_start_after_retirement(trace)?;
        check_retired_ledgers(&sim)?;
        let retired = retirements(trace);
        prop_assert!(retired.keys().all(|d| *d == failing), "a healthy device was retired: {:?}", retired);
        prop_assert!((0..c.ndev as u32).any(|d| sim.engine().in_service(DeviceId(d))));
    }
}

#[derive(Debug, Clone)]
struct AvoidCase {
    ndev: usize,
    workers: u32,
    lanes: u32,
    synth: u32,
    circuits: Vec<(CircuitProfile, CircuitModel)>,
    jobs: Vec<JobPlan>,
    seed: u64,
}

fn avoid_case() -> impl Strategy<Value = AvoidCase> {
    ((2..=3usize, 1..=3u32, 1..=2u32, 1..=4u32), prop::collection::vec(circuit(), 1..=3), any::<u64>()).prop_flat_map(
        |((ndev, workers, lanes, synth), circuits, seed)| {
            let n = circuits.len() as u32;
            (Just((ndev, workers, lanes, synth)), Just(circuits), jobs(n, 25, true), Just(seed))
                .prop_map(|((ndev, workers, lanes, synth), circuits, jobs, seed)| AvoidCase { ndev, workers, lanes, synth, circuits, jobs, seed })
        },
    )
}

/// Preloads every circuit on every device and runs until they are resident; returns when.
fn preload_everywhere(sim: &mut Sim, circuits: &[(CircuitProfile, CircuitModel)], ndev: usize) -> Result<Nanos, TestCaseError> {
    for c in 0..circuits.len() as u32 {
        for d in 0..ndev as u32 {
            sim.preload_at(Nanos::ZERO, CircuitId(c), Location::Device(DeviceId(d)));
        }
    }
    // Loads whose queries do not fit the host bytes set aside for loads together run one
    // after another: all of them in a row bound the wait.
    let loaded = Nanos(circuits.iter().map(|(_, m)| m.load_device.max().0).sum::<u64>().saturating_mul(ndev as u64));
    sim.run_until(loaded);
    for c in 0..circuits.len() as u32 {
        for d in 0..ndev as u32 {
            let at = Location::Device(DeviceId(d));
            prop_assert_eq!(sim.engine().presence(CircuitId(c), at), Some(Presence::Resident), "circuit {} on {:?}", c, at);
        }
    }
    Ok(loaded + Nanos::from_millis(1))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, max_shrink_iters: 2000, ..ProptestConfig::default() })]

    /// With every parameter set resident on every device (and memory for every worker), a
    /// partition of a job avoiding a device never starts there while another device in
    /// service has a free worker (replayed from the trace), nor at all while another device
    /// holds its parameters: it waits for them instead. Every job completes.
    #[test]
    fn avoiding_jobs_keep_off_their_device(c in avoid_case()) {
        let cfg = EngineConfig::new(c.synth, host_bytes(&c.circuits, c.synth, 2), ample_devices(c.ndev, &c.circuits, c.workers, c.lanes));
        let mut sim = sim(cfg, &c.circuits, Faults::default(), c.seed);
        let t0 = preload_everywhere(&mut sim, &c.circuits, c.ndev)?;
        let mut tickets = Vec::new();
        for j in &c.jobs {
            tickets.push((sim.submit_at(t0 + Nanos::from_millis(j.at_ms), spec(j, c.ndev as u32)), j.avoid.map(|d| DeviceId(d % c.ndev as u32))));
        }
        let n = sim.run(MAX_EVENTS);
        prop_assert!(n < MAX_EVENTS, "simulation did not settle");
        prop_assert!(sim.audit().is_ok(), "{:?}\n{}", sim.audit(), sim.engine().describe());
        prop_assert_eq!(sim.log().evictions, 0);
        let avoid: BTreeMap<JobId, DeviceId> = tickets.iter().filter_map(|(t, a)| Some((sim.job(*t)?, (*a)?))).collect();
        for (t, _) in &tickets {
            let job = sim.job(*t).expect("accepted");
            prop_assert_eq!(&sim.log().ends[&job][0].1, &Outcome::Completed);
        }
        // Workers busy per device, from upload start to MSM end (no faults, no cancels: a
        // partition leaves its device only at the end of its MSM).
        let mut busy = vec![0u32; c.ndev];
        for e in &sim.log().trace {
            match e {
                Trace::Start { dispatch, at } if dispatch.stage == Stage::Upload => {
                    let Location::Device(d) = dispatch.location else { continue };
                    if let Some(a) = avoid.get(&dispatch.partition.job) {
                        let free: Vec<usize> = (0..c.ndev).filter(|&e| e != a.0 as usize && busy[e] < c.workers).collect();
                        prop_assert!(d != *a || free.is_empty(), "{:?} started on avoided {a:?} at {at} while {free:?} had a free worker", dispatch.partition);
                        prop_assert_ne!(d, *a, "{:?} started on avoided {:?} at {}", dispatch.partition, a, at);
                    }
                    busy[d.0 as usize] += 1;
                }
                Trace::End { stage: Stage::Msm, location: Location::Device(d), .. } => busy[d.0 as usize] -= 1,
                _ => {}
            }
        }
        prop_assert!(busy.iter().all(|b| *b == 0), "{busy:?}");
    }
}

#[derive(Debug, Clone)]
struct FallbackCase {
    avoid: AvoidCase,
    /// Retirement time of each device but device 0.
    retire_ms: Vec<u64>,
}

fn fallback_case() -> impl Strategy<Value = FallbackCase> {
    (avoid_case(), prop::collection::vec(0..500u64, 2)).prop_map(|(avoid, retire_ms)| FallbackCase { avoid, retire_ms })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, max_shrink_iters: 2000, ..ProptestConfig::default() })]

    /// Every job avoids device 0 and the other devices are retired at random times: the
    /// avoided device then takes the work (no job waits for ever). Jobs end exactly once,
    /// completed or (when one of their partitions was caught between device stages on a
    /// device being retired) failed with `DeviceRetired`; jobs submitted after the last
    /// retirement complete on device 0.
    #[test]
    fn the_avoided_device_serves_once_the_others_retire(c in fallback_case()) {
        let a = &c.avoid;
        let cfg = EngineConfig::new(a.synth, host_bytes(&a.circuits, a.synth, 2), ample_devices(a.ndev, &a.circuits, a.workers, a.lanes));
        let mut sim = sim(cfg, &a.circuits, Faults::default(), a.seed);
        let t0 = preload_everywhere(&mut sim, &a.circuits, a.ndev)?;
        let mut last = t0;
        for d in 1..a.ndev {
            let at = t0 + Nanos::from_millis(c.retire_ms[d - 1]);
            last = last.max(at);
            sim.retire_at(at, DeviceId(d as u32));
        }
        let mut tickets = Vec::new();
        for j in &a.jobs {
            let at = t0 + Nanos::from_millis(j.at_ms);
            let s = JobSpec::new(JobKind::Generic, CircuitId(j.circuit), j.partitions).with_priority(j.priority).avoiding(DeviceId(0));
            tickets.push((sim.submit_at(at, s), at));
        }
        let n = sim.run(MAX_EVENTS);
        prop_assert!(n < MAX_EVENTS, "simulation did not settle");
        prop_assert!(sim.audit().is_ok(), "{:?}\n{}", sim.audit(), sim.engine().describe());
        prop_assert!(sim.log().refused.is_empty(), "{:?}", sim.log().refused);
        let trace = &sim.log().trace;
        check_no_start_after_retirement(trace)?;
        check_retired_ledgers(&sim)?;
        for (t, at) in &tickets {
            let job = sim.job(*t).expect("accepted");
            let outcome = &sim.log().ends[&job][0].1;
            let retired = matches!(outcome, Outcome::Failed(JobFailure::DeviceRetired { device, .. }) if device.0 != 0);
            prop_assert!(*outcome == Outcome::Completed || retired, "{job:?}: {outcome:?}");
            if *at > last {
                prop_assert_eq!(outcome, &Outcome::Completed);
                let elsewhere = trace.iter().any(|e| matches!(e, Trace::Start { dispatch, .. } if dispatch.partition.job == job && matches!(dispatch.location, Location::Device(d) if d.0 != 0)));
                prop_assert!(!elsewhere, "{job:?} ran off device 0 after the others were retired");
            }
        }
    }
}

#[derive(Debug, Clone)]
struct RetireAllCase {
    ndev: usize,
    workers: u32,
    lanes: u32,
    synth: u32,
    room_mb: Vec<u64>,
    circuits: Vec<(CircuitProfile, CircuitModel)>,
    jobs: Vec<JobPlan>,
    retire_ms: Vec<u64>,
    stage_fail_ppm: u32,
    seed: u64,
}

fn retire_all_case() -> impl Strategy<Value = RetireAllCase> {
    let shape = (2..=3usize, 1..=3u32, 1..=2u32, 1..=4u32, prop::collection::vec(0..=150u64, 3), prop::collection::vec(0..700u64, 3));
    (shape, prop::collection::vec(circuit(), 1..=3), prop_oneof![Just(0u32), 0..=30_000u32], any::<u64>()).prop_flat_map(
        |((ndev, workers, lanes, synth, room_mb, retire_ms), circuits, stage_fail_ppm, seed)| {
            let n = circuits.len() as u32;
            (Just((ndev, workers, lanes, synth, room_mb, retire_ms)), Just(circuits), jobs(n, 25, true), Just((stage_fail_ppm, seed))).prop_map(
                |((ndev, workers, lanes, synth, room_mb, retire_ms), circuits, jobs, (stage_fail_ppm, seed))| RetireAllCase {
                    ndev,
                    workers,
                    lanes,
                    synth,
                    room_mb,
                    circuits,
                    jobs,
                    retire_ms,
                    stage_fail_ppm,
                    seed,
                },
            )
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, max_shrink_iters: 2000, ..ProptestConfig::default() })]

    /// Every device is retired at a random time, while jobs (some avoiding a device) arrive
    /// before and after. Every job ends exactly once and nothing hangs (the simulator runs
    /// out of events); a job fails with `NoDevice` only once no device in service could
    /// run it, every job submitted after the last retirement fails so, no stage starts on a
    /// retired device, and every device ends with nothing reserved.
    #[test]
    fn retiring_every_device_fails_what_is_left(c in retire_all_case()) {
        let need = c.circuits.iter().map(|(p, _)| p.params_device_bytes + p.footprint.device()).max().unwrap_or(0);
        let devs: Vec<DeviceConfig> = (0..c.ndev)
            .map(|d| DeviceConfig { memory_bytes: need + c.room_mb[d] * MB, gpu_workers: c.workers, kernel_lanes: c.lanes, fallback: false })
            .collect();
        let cfg = EngineConfig::new(c.synth, host_bytes(&c.circuits, c.synth, 2), devs);
        let faults = Faults { stage_fail_ppm: c.stage_fail_ppm, ..Faults::default() };
        let mut sim = sim(cfg, &c.circuits, faults, c.seed);
        let mut last = Nanos::ZERO;
        for d in 0..c.ndev {
            let at = Nanos::from_millis(c.retire_ms[d]);
            last = last.max(at);
            sim.retire_at(at, DeviceId(d as u32));
        }
        let mut tickets = Vec::new();
        for j in &c.jobs {
            let at = Nanos::from_millis(j.at_ms);
            tickets.push((sim.submit_at(at, spec(j, c.ndev as u32)), at));
        }
        let n = sim.run(MAX_EVENTS);
        prop_assert!(n < MAX_EVENTS, "simulation did not settle");
        prop_assert!(sim.audit().is_ok(), "{:?}\n{}", sim.audit(), sim.engine().describe());
        prop_assert!(sim.log().rejected.is_empty(), "{:?}", sim.log().rejected);
        let trace = &sim.log().trace;
        check_no_start_after_retirement(trace)?;
        let retired = retirements(trace);
        prop_assert_eq!(retired.len(), c.ndev);
        for d in 0..c.ndev as u32 {
            prop_assert!(!sim.engine().in_service(DeviceId(d)));
            let at = Location::Device(DeviceId(d));
            prop_assert_eq!(sim.log().ledger.get(&at).copied().unwrap_or(0), 0, "ledger of {:?}", at);
        }
        for (t, at) in &tickets {
            let job = sim.job(*t).expect("accepted");
            let (ended, outcome) = &sim.log().ends[&job][0];
            let ok = matches!(outcome, Outcome::Completed | Outcome::Failed(JobFailure::NoDevice | JobFailure::DeviceRetired { .. } | JobFailure::Stage { .. }));
            prop_assert!(ok, "{job:?}: {outcome:?}");
            if *at > last {
                prop_assert_eq!(outcome, &Outcome::Failed(JobFailure::NoDevice), "{:?} submitted after every device was retired", job);
            }
            if *outcome == Outcome::Failed(JobFailure::NoDevice) {
                // Every device retired by then (the devices all fit every circuit).
                let pos = trace.iter().position(|e| matches!(e, Trace::JobEnded { job: j, .. } if *j == job)).expect("traced");
                let gone = retired.values().all(|r| *r < pos);
                prop_assert!(gone, "{job:?} failed with NoDevice at {ended} while a device was in service");
            }
        }
    }
}

#[derive(Debug, Clone)]
struct PressureCase {
    workers: u32,
    lanes: u32,
    synth: u32,
    room_mb: Vec<u64>,
    circuits: Vec<(CircuitProfile, CircuitModel)>,
    jobs: Vec<JobPlan>,
    preload: Vec<(u32, u32)>,
    seed: u64,
}

fn pressure_case() -> impl Strategy<Value = PressureCase> {
    let shape = (1..=3u32, 1..=2u32, 1..=4u32, prop::collection::vec(0..=80u64, 1..=3), any::<u64>());
    (shape, prop::collection::vec(circuit(), 1..=4)).prop_flat_map(|((workers, lanes, synth, room_mb, seed), circuits)| {
        let n = circuits.len() as u32;
        let preload = prop::collection::vec((0..n, 0..3u32), 0..=3);
        (Just((workers, lanes, synth, room_mb, seed)), Just(circuits), jobs(n, 25, true), preload).prop_map(
            |((workers, lanes, synth, room_mb, seed), circuits, jobs, preload)| PressureCase { workers, lanes, synth, room_mb, circuits, jobs, preload, seed },
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, max_shrink_iters: 2000, ..ProptestConfig::default() })]

    /// Jobs avoiding devices, on one to three devices with little memory (parameters are
    /// evicted and reloaded, devices wait for memory) and no faults: every job completes,
    /// including those avoiding the only device. Avoidance never deadlocks.
    #[test]
    fn avoiding_jobs_complete_under_memory_pressure(c in pressure_case()) {
        let ndev = c.room_mb.len();
        let need = c.circuits.iter().map(|(p, _)| p.params_device_bytes + p.footprint.device()).max().unwrap_or(0);
        let devs: Vec<DeviceConfig> =
            c.room_mb.iter().map(|r| DeviceConfig { memory_bytes: need + r * MB, gpu_workers: c.workers, kernel_lanes: c.lanes, fallback: false }).collect();
        let cfg = EngineConfig::new(c.synth, host_bytes(&c.circuits, c.synth, 0), devs);
        let mut sim = sim(cfg, &c.circuits, Faults::default(), c.seed);
        for (circuit, d) in &c.preload {
            sim.preload_at(Nanos::ZERO, CircuitId(*circuit), Location::Device(DeviceId(d % ndev as u32)));
        }
        let mut tickets = Vec::new();
        for j in &c.jobs {
            tickets.push(sim.submit_at(Nanos::from_millis(j.at_ms), spec(j, ndev as u32)));
        }
        let n = sim.run(MAX_EVENTS);
        prop_assert!(n < MAX_EVENTS, "simulation did not settle");
        prop_assert!(sim.audit().is_ok(), "{:?}\n{}", sim.audit(), sim.engine().describe());
        for t in &tickets {
            let job = sim.job(*t).expect("accepted");
            prop_assert_eq!(&sim.log().ends[&job][0].1, &Outcome::Completed, "{:?}\n{}", job, sim.engine().describe());
        }
    }
}

fn small_engine(devices: usize) -> Engine {
    let dev = DeviceConfig { memory_bytes: 64 * MB, gpu_workers: 1, kernel_lanes: 1, fallback: false };
    let mut e = Engine::new(EngineConfig::new(1, 256 * MB, vec![dev; devices]), Nanos::ZERO).expect("config");
    let fp = Footprint { host_abc: MB, host_rest: MB, device_abc: MB, device_rest: MB };
    e.register_circuit(
        CircuitId(0),
        CircuitProfile {
            params_host_bytes: 0,
            params_device_bytes: 8 * MB,
            params_device_host_bytes: 0,
            footprint: fp,
            witness_footprint: None,
            load_host_bytes: 0,
        },
    )
    .expect("register");
    e
}

fn drain(e: &mut Engine) -> Vec<Action> {
    std::iter::from_fn(|| e.poll_action()).collect()
}

/// Retirement and avoidance inputs: their errors, idempotence, and what a retired device
/// refuses.
#[test]
fn retirement_inputs_and_errors() {
    let mut e = small_engine(2);
    let (d0, d1) = (DeviceId(0), DeviceId(1));
    assert!(e.in_service(d0) && e.in_service(d1) && !e.in_service(DeviceId(2)));
    assert_eq!(e.retire_device(DeviceId(2), Nanos::ZERO), Err(EngineError::UnknownDevice(DeviceId(2))));
    let avoid_unknown = JobSpec::new(JobKind::Generic, CircuitId(0), 1).avoiding(DeviceId(5));
    assert_eq!(e.submit(avoid_unknown, Nanos::ZERO), Err(EngineError::UnknownDevice(DeviceId(5))));

    e.preload(CircuitId(0), Location::Device(d0), Nanos::ZERO).expect("preload");
    let acts = drain(&mut e);
    assert!(matches!(acts.as_slice(), [Action::LoadParams { to: Location::Device(d), .. }] if *d == d0), "{acts:?}");
    e.params_loaded(CircuitId(0), Location::Device(d0), Nanos(1)).expect("loaded");
    drain(&mut e);

    // Retiring evicts the unused parameters; a second retirement changes nothing.
    e.retire_device(d0, Nanos(2)).expect("retire");
    let acts = drain(&mut e);
    assert!(matches!(acts.as_slice(), [Action::EvictParams { from: Location::Device(d), .. }] if *d == d0), "{acts:?}");
    assert!(!e.in_service(d0));
    assert_eq!(e.presence(CircuitId(0), Location::Device(d0)), Some(Presence::Absent));
    e.retire_device(d0, Nanos(3)).expect("idempotent");
    assert!(drain(&mut e).is_empty());
    assert_eq!(e.preload(CircuitId(0), Location::Device(d0), Nanos(3)), Err(EngineError::DeviceRetired(d0)));
    assert!(drain(&mut e).is_empty());
    assert!(e.describe().contains("device 0 (retired)"));

    // A job avoiding the retired device runs on the other; none is left once both retire.
    let job = e.submit(JobSpec::new(JobKind::Generic, CircuitId(0), 1).avoiding(d0), Nanos(4)).expect("submit");
    let acts = drain(&mut e);
    assert!(acts.iter().any(|a| matches!(a, Action::LoadParams { to: Location::Device(d), .. } if *d == d1)), "{acts:?}");
    assert!(!acts.iter().any(|a| matches!(a, Action::LoadParams { to: Location::Device(d), .. } if *d == d0)), "{acts:?}");
    e.retire_device(d1, Nanos(5)).expect("retire");
    let acts = drain(&mut e);
    assert!(acts.contains(&Action::JobEnded { job, outcome: Outcome::Failed(JobFailure::NoDevice) }), "{acts:?}");
    let late = e.submit(JobSpec::new(JobKind::Generic, CircuitId(0), 2), Nanos(6)).expect("accepted");
    let acts = drain(&mut e);
    assert!(acts.contains(&Action::JobEnded { job: late, outcome: Outcome::Failed(JobFailure::NoDevice) }), "{acts:?}");
    assert!(!acts.iter().any(|a| matches!(a, Action::Start(_) | Action::LoadParams { .. })), "{acts:?}");
}

#[derive(Debug, Clone)]
struct CpuFallbackCase {
    /// Devices that are not fallbacks (the fallback device comes after them).
    primaries: usize,
    workers: u32,
    synth: u32,
    room_mb: u64,
    circuits: Vec<(CircuitProfile, CircuitModel)>,
    jobs: Vec<JobPlan>,
    failing: u32,
    fail_at_ms: u64,
    retire_after: u32,
    seed: u64,
}

fn cpu_fallback_case() -> impl Strategy<Value = CpuFallbackCase> {
    let shape = (1..=2usize, 1..=2u32, 1..=4u32, 0..=200u64);
    (shape, prop::collection::vec(circuit(), 1..=3), 0..2u32, 0..600u64, 1..=6u32, any::<u64>()).prop_flat_map(
        |((primaries, workers, synth, room_mb), circuits, failing, fail_at_ms, retire_after, seed)| {
            let n = circuits.len() as u32;
            (Just((primaries, workers, synth, room_mb)), Just(circuits), jobs(n, 16, false), Just((failing, fail_at_ms, retire_after, seed))).prop_map(
                |((primaries, workers, synth, room_mb), circuits, jobs, (failing, fail_at_ms, retire_after, seed))| CpuFallbackCase {
                    primaries,
                    workers,
                    synth,
                    room_mb,
                    circuits,
                    jobs,
                    failing: failing % primaries as u32,
                    fail_at_ms,
                    retire_after,
                    seed,
                },
            )
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, max_shrink_iters: 2000, ..ProptestConfig::default() })]

    /// One or two devices and a fallback device after them (the CPU beside the GPUs); one of
    /// the non-fallback devices breaks at a random time, failed attempts are retried avoiding
    /// it and it is retired after `retire_after` consecutive faults. A partition starts on the
    /// fallback device only when its job avoids the one other device in service, or once no
    /// other device is in service (replayed from the trace); with a single non-fallback
    /// device every retry runs there. Every job ends exactly once and completes, and every
    /// reservation is returned.
    #[test]
    fn the_fallback_device_takes_only_what_no_other_device_may(c in cpu_fallback_case()) {
        let mut devs = devices(c.primaries + 1, &c.circuits, c.workers, 1, c.room_mb);
        if let Some(f) = devs.last_mut() {
            f.fallback = true;
        }
        let failure = Failure { device: DeviceId(c.failing), at_ms: c.fail_at_ms, retire_after: c.retire_after, workers: c.workers };
        let (sim, driver) = run_with_failure(devs, c.synth, &c.circuits, &c.jobs, c.primaries as u32, failure, c.seed)?;
        // The device each engine job avoids, from the attempts the driver submitted.
        let mut avoids = BTreeMap::new();
        for chain in &driver.chains {
            for (t, avoid) in chain.tickets.iter().zip(&chain.avoids) {
                if let Some(job) = sim.job(*t) {
                    avoids.insert(job, *avoid);
                }
            }
        }
        let fallback = DeviceId(c.primaries as u32);
        let mut retired = Vec::new();
        let mut on_fallback = 0;
        for e in &sim.log().trace {
            match e {
                Trace::Retired { device, .. } => retired.push(*device),
                Trace::Start { dispatch, at } if dispatch.location == Location::Device(fallback) => {
                    on_fallback += 1;
                    let avoid = avoids.get(&dispatch.partition.job).copied().flatten();
                    let others: Vec<DeviceId> = (0..c.primaries as u32).map(DeviceId).filter(|d| Some(*d) != avoid && !retired.contains(d)).collect();
                    prop_assert!(others.is_empty(), "{:?} {:?} started on the fallback at {} (job avoiding {:?}) while {:?} served", dispatch.partition, dispatch.stage, at, avoid, others);
                }
                _ => {}
            }
        }
        let retried = driver.chains.iter().any(|ch| ch.tickets.len() > 1);
        if c.primaries == 1 && retried {
            prop_assert!(on_fallback > 0, "a retry avoiding the only other device did not run on the fallback");
        }
        check_retired_ledgers(&sim)?;
    }
}
