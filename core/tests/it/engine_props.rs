//! Property tests: random job mixes, configurations, durations, faults, cancellations and
//! deadlines, run to completion in the simulator.

use std::collections::BTreeMap;

use crate::strategies::{self, dur, priority, MB};
use cuzk_core::engine::sim::{CircuitModel, Faults, Model, Sim};
use cuzk_core::engine::{
    CircuitId, CircuitProfile, DeviceConfig, DeviceId, EngineConfig, EngineError, JobId, JobKind, JobSpec, Location, Nanos, Outcome, Priority, SpanKind, Stage,
};
use proptest::prelude::*;

const MAX_EVENTS: u64 = 2_000_000;

#[derive(Debug, Clone)]
struct JobPlan {
    circuit: u32,
    priority: Priority,
    partitions: u32,
    at_ms: u64,
    cancel_after_ms: Option<u64>,
    deadline_after_ms: Option<u64>,
}

#[derive(Debug, Clone)]
struct Scenario {
    cfg: EngineConfig,
    circuits: Vec<(CircuitProfile, CircuitModel)>,
    jobs: Vec<JobPlan>,
    faults: Faults,
    preload: Vec<(u32, Location)>,
    seed: u64,
}

fn circuit() -> impl Strategy<Value = (CircuitProfile, CircuitModel)> {
    strategies::circuit((0..=64u64, 0..=64u64, 1..=64u64, 0..=32u64, 1..=64u64, 0..=32u64), [dur(40), dur(10), dur(20), dur(30), dur(20)])
}

fn job(circuits: u32, cancels: bool, deadlines: bool) -> impl Strategy<Value = JobPlan> {
    let cancel = if cancels { prop::option::weighted(0.2, 0..400u64).boxed() } else { Just(None).boxed() };
    let deadline = if deadlines { prop::option::weighted(0.15, 1..600u64).boxed() } else { Just(None).boxed() };
    (0..circuits, priority(), 1..=6u32, 0..500u64, cancel, deadline).prop_map(|(circuit, priority, partitions, at_ms, c, d)| JobPlan {
        circuit,
        priority,
        partitions,
        at_ms,
        cancel_after_ms: c,
        deadline_after_ms: d,
    })
}

fn device(tight: bool) -> impl Strategy<Value = DeviceConfig> {
    let mb = if tight { 60..=160u64 } else { 100..=400u64 };
    (mb, 1..=3u32, 1..=2u32).prop_map(|(m, w, l)| DeviceConfig { memory_bytes: m * MB, gpu_workers: w, kernel_lanes: l, fallback: false })
}

fn config(tight: bool) -> impl Strategy<Value = EngineConfig> {
    let devs = prop::collection::vec(device(tight), 1..=3);
    let host = if tight { 48..=192u64 } else { 64..=512u64 };
    (devs, 1..=4u32, 1..=3u32, host, 1..=8u32, 0..=32u64, 0..=32u64, any::<bool>()).prop_map(|(devices, synth, fin, host, look, hres, dres, abc_after_ntt)| {
        let mut cfg = EngineConfig::new(synth, host * MB, devices);
        cfg.finalize_workers = fin;
        cfg.synth_lookahead = look;
        cfg.critical_host_reserve = hres * MB;
        cfg.critical_device_reserve = dres * MB;
        if abc_after_ntt {
            cfg.release_host_abc_after = Stage::Ntt;
        }
        cfg
    })
}

fn scenario(faults: bool, cancels: bool, deadlines: bool, tight: bool) -> impl Strategy<Value = Scenario> {
    let fault = if faults {
        (0..=40_000u32, 0..=100_000u32).prop_map(|(s, l)| Faults { stage_fail_ppm: s, load_fail_ppm: l, ..Faults::default() }).boxed()
    } else {
        Just(Faults::default()).boxed()
    };
    (config(tight), prop::collection::vec(circuit(), 1..=5), fault, any::<u64>())
        .prop_flat_map(move |(cfg, circuits, faults, seed)| {
            let n = circuits.len() as u32;
            let ndev = cfg.devices.len() as u32;
            let jobs = prop::collection::vec(job(n, cancels, deadlines), 1..=30);
            let preload = prop::collection::vec(
                (0..n, prop_oneof![Just(None), (0..ndev).prop_map(Some)]).prop_map(|(c, d)| (c, d.map_or(Location::Host, |d| Location::Device(DeviceId(d))))),
                0..=2,
            );
            (Just(cfg), Just(circuits), jobs, Just(faults), preload, Just(seed))
        })
        .prop_map(|(cfg, circuits, jobs, faults, preload, seed)| Scenario { cfg, circuits, jobs, faults, preload, seed })
}

struct Run {
    sim: Sim,
    tickets: Vec<usize>,
}

fn run(s: &Scenario) -> Run {
    let mut model = Model { faults: s.faults, ..Model::default() };
    for (i, (_, m)) in s.circuits.iter().enumerate() {
        model.circuits.insert(CircuitId(i as u32), *m);
    }
    let mut sim = Sim::new(s.cfg.clone(), model, s.seed).expect("valid config");
    for (i, (p, _)) in s.circuits.iter().enumerate() {
        sim.register(CircuitId(i as u32), *p).expect("register");
    }
    for (c, at) in &s.preload {
        sim.preload_at(Nanos::ZERO, CircuitId(*c), *at);
    }
    let mut tickets = Vec::new();
    for j in &s.jobs {
        let at = Nanos::from_millis(j.at_ms);
        let mut spec = JobSpec::new(JobKind::Generic, CircuitId(j.circuit), j.partitions).with_priority(j.priority);
        if let Some(d) = j.deadline_after_ms {
            spec = spec.with_deadline(at + Nanos::from_millis(d));
        }
        let t = sim.submit_at(at, spec);
        if let Some(c) = j.cancel_after_ms {
            sim.cancel_at(at + Nanos::from_millis(c), t);
        }
        tickets.push(t);
    }
    let n = sim.run(MAX_EVENTS);
    assert!(n < MAX_EVENTS, "simulation did not settle");
    Run { sim, tickets }
}

/// Partitions of a job are synthesized and sent to a GPU in index order; on a device with one
/// kernel lane they leave the GPU in that order; with one device, one lane and one finalize worker they also
/// finish (finalize) in that order.
fn check_order(r: &Run, cfg: &EngineConfig) -> Result<(), TestCaseError> {
    let mut seen: BTreeMap<(JobId, Stage), u32> = BTreeMap::new();
    for (_, d) in &r.sim.log().starts {
        if matches!(d.stage, Stage::Synthesize | Stage::Upload) {
            let last = seen.insert((d.partition.job, d.stage), d.partition.index);
            prop_assert!(!matches!(last, Some(l) if l >= d.partition.index), "{:?} out of order at {:?}", d.partition, d.stage);
        }
    }
    let mut gpu_end: BTreeMap<(JobId, Location), u32> = BTreeMap::new();
    let mut fin_end: BTreeMap<JobId, u32> = BTreeMap::new();
    let strict = cfg.devices.len() == 1 && cfg.devices[0].kernel_lanes == 1 && cfg.finalize_workers == 1;
    let mut spans: Vec<_> = r.sim.engine().timeline().spans().filter(|s| !s.failed).copied().collect();
    spans.sort_by_key(|s| (s.end, s.start));
    for s in spans {
        let (SpanKind::Stage(stage), Some(p)) = (s.kind, s.partition) else { continue };
        let one_lane = match s.location {
            Location::Device(d) => cfg.devices[d.0 as usize].kernel_lanes == 1,
            Location::Host => false,
        };
        if stage == Stage::Msm && one_lane {
            let last = gpu_end.insert((p.job, s.location), p.index);
            prop_assert!(!matches!(last, Some(l) if l >= p.index), "{p:?} left {:?} out of order", s.location);
        }
        if stage == Stage::Finalize && strict {
            let last = fin_end.insert(p.job, p.index);
            prop_assert!(!matches!(last, Some(l) if l >= p.index), "{p:?} finished out of order");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10000, max_shrink_iters: 2000, ..ProptestConfig::default() })]

    /// With faults, cancellations and deadlines: budgets are never exceeded (checked on
    /// every action by an independent ledger and by the engine's own recount after every
    /// input), every accepted job ends exactly once, nothing leaks at quiescence, and
    /// partitions keep their order.
    #[test]
    fn chaos_keeps_every_invariant(s in any::<bool>().prop_flat_map(|tight| scenario(true, true, true, tight))) {
        let r = run(&s);
        prop_assert!(r.sim.audit().is_ok(), "{:?}\n{}", r.sim.audit(), r.sim.engine().describe());
        for t in &r.tickets {
            let accepted = r.sim.job(*t).is_some();
            let rejected = r.sim.log().rejected.iter().any(|(x, _)| x == t);
            prop_assert!(accepted != rejected, "ticket {t} accepted={accepted} rejected={rejected}");
        }
        check_order(&r, &s.cfg)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10000, max_shrink_iters: 2000, ..ProptestConfig::default() })]

    /// Without faults, cancellations or deadlines, every accepted job completes (no
    /// deadlock, whatever the memory pressure and parameter juggling; `tight` shrinks the
    /// budgets so that parameters are evicted and devices are claimed often).
    #[test]
    fn every_job_completes_without_faults(s in any::<bool>().prop_flat_map(|tight| scenario(false, false, false, tight))) {
        let r = run(&s);
        prop_assert!(r.sim.audit().is_ok(), "{:?}\n{}", r.sim.audit(), r.sim.engine().describe());
        for (job, ends) in &r.sim.log().ends {
            prop_assert_eq!(&ends[0].1, &Outcome::Completed, "{:?}", job);
        }
        let preload_misses = |e: &EngineError| matches!(e, EngineError::InsufficientMemory { .. });
        prop_assert!(r.sim.log().refused.iter().all(preload_misses), "{:?}", r.sim.log().refused);
        check_order(&r, &s.cfg)?;
    }
}
