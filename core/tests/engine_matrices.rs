//! Constraint matrices as part of a circuit's device copy: counted against the device budget
//! with the parameters once known (`Engine::matrices_recorded`), grown into a resident copy
//! where they fit, freed when the copy is evicted, left out where they do not fit (the host
//! path), and, in random job mixes with matrices and parameters near or over the budgets, no
//! budget is ever exceeded and every job ends.

use cuzk_core::engine::sim::{CircuitModel, Dur, Model, Sim};
use cuzk_core::engine::{
    Action, CircuitId, CircuitProfile, DeviceConfig, DeviceId, Engine, EngineConfig, Footprint, JobId, JobKind, JobSpec, Location, Nanos, Outcome, PartitionId,
    Presence, Stage,
};
use proptest::prelude::*;
use strategies::{dur, priority, MB};

mod strategies;

const GB: u64 = 1 << 30;
const A: CircuitId = CircuitId(1);
const B: CircuitId = CircuitId(2);
const D0: Location = Location::Device(DeviceId(0));

fn profile() -> CircuitProfile {
    CircuitProfile {
        params_host_bytes: GB,
        params_device_bytes: 2 * GB,
        footprint: Footprint { host_abc: 3 * GB, host_rest: GB, device_abc: 3 * GB, device_rest: GB },
    }
}

fn engine(device_gb: u64) -> Engine {
    let dev = DeviceConfig { memory_bytes: device_gb * GB, gpu_workers: 1, kernel_lanes: 1, fallback: false };
    let mut cfg = EngineConfig::new(1, 64 * GB, vec![dev]);
    cfg.finalize_workers = 1;
    let mut e = Engine::new(cfg, Nanos::ZERO).expect("valid config");
    e.register_circuit(A, profile()).expect("register");
    e.register_circuit(B, profile()).expect("register");
    e
}

fn drain(e: &mut Engine) -> Vec<Action> {
    let a: Vec<Action> = std::iter::from_fn(|| e.poll_action()).collect();
    e.check_consistency().unwrap_or_else(|err| panic!("{err}\n{}", e.describe()));
    a
}

fn t(ms: u64) -> Nanos {
    Nanos::from_millis(ms)
}

fn used(e: &Engine) -> u64 {
    e.usage(D0).map_or(0, |u| u.used)
}

/// Runs one partition of `job` from its synthesis to its end; `matrices` are reported after
/// the synthesis (as the driver does when it recorded them).
fn prove(e: &mut Engine, job: JobId, matrices: Option<(CircuitId, u64)>, ms: u64) -> Vec<Action> {
    let p = PartitionId { job, index: 0 };
    let mut all = Vec::new();
    if let Some((c, bytes)) = matrices {
        e.matrices_recorded(c, bytes, t(ms)).expect("matrices");
        all.extend(drain(e));
    }
    for (i, stage) in Stage::ALL.into_iter().enumerate() {
        e.stage_finished(p, stage, t(ms + 1 + i as u64)).expect("stage");
        all.extend(drain(e));
    }
    all
}

/// The matrices join the resident copy once reported (the device's reservation grows by
/// them), later partitions find them there, and evicting the circuit frees both.
#[test]
fn matrices_are_counted_with_the_parameters_and_freed_with_them() {
    let mut e = engine(16);
    let job = e.submit(JobSpec::new(JobKind::PoRep, A, 1), t(0)).expect("submit");
    drain(&mut e);
    e.params_loaded(A, D0, t(1)).expect("loaded");
    drain(&mut e);
    assert_eq!(used(&e), 2 * GB);
    e.matrices_recorded(A, 3 * GB, t(5)).expect("matrices");
    let a = drain(&mut e);
    assert_eq!(a, vec![Action::MatricesReserved { circuit: A, device: DeviceId(0), bytes: 3 * GB }]);
    assert_eq!(used(&e), 5 * GB, "the device's reservation includes the matrices");
    assert_eq!(e.matrices_at(A, D0), Some(true));
    // A second report changes nothing.
    e.matrices_recorded(A, 7 * GB, t(6)).expect("matrices again");
    assert!(drain(&mut e).is_empty());
    let a = prove(&mut e, job, None, 10);
    assert!(a.contains(&Action::JobEnded { job, outcome: Outcome::Completed }), "{a:?}");
    assert_eq!(used(&e), 5 * GB);
    e.evict(A, D0, t(100)).expect("evict");
    assert_eq!(drain(&mut e), vec![Action::EvictParams { circuit: A, from: D0, bytes: 5 * GB }]);
    assert_eq!((used(&e), e.matrices_at(A, D0)), (0, Some(false)));
    // The next load takes the matrices with the parameters.
    e.preload(A, D0, t(101)).expect("preload");
    let a = drain(&mut e);
    assert_eq!(
        a,
        vec![
            Action::LoadParams { circuit: A, to: D0, bytes: 2 * GB, from_host: false },
            Action::MatricesReserved { circuit: A, device: DeviceId(0), bytes: 3 * GB }
        ]
    );
    assert_eq!(used(&e), 5 * GB);
}

/// Where parameters, matrices and a partition do not fit together, the copy stays the
/// parameters alone (the device uses the host path for the circuit) and jobs still run.
#[test]
fn matrices_that_do_not_fit_stay_off_the_device() {
    // 2 GB parameters + 4 GB partition fit 8 GB; with 3 GB of matrices they would not.
    let mut e = engine(8);
    let job = e.submit(JobSpec::new(JobKind::PoRep, A, 1), t(0)).expect("submit");
    drain(&mut e);
    e.params_loaded(A, D0, t(1)).expect("loaded");
    drain(&mut e);
    let a = prove(&mut e, job, Some((A, 3 * GB)), 5);
    assert!(!a.iter().any(|a| matches!(a, Action::MatricesReserved { .. })), "{a:?}");
    assert!(a.contains(&Action::JobEnded { job, outcome: Outcome::Completed }), "{a:?}");
    assert_eq!((used(&e), e.matrices_at(A, D0)), (2 * GB, Some(false)));
}

/// A copy with matrices is evicted whole (parameters and matrices) when another circuit
/// needs the room, and the other circuit's copy takes its own matrices when they fit.
#[test]
fn a_copy_with_matrices_is_evicted_for_another_circuit() {
    // 9 GB: A's copy (2 + 3) and B's parameters (2) fit, B's matrices (3) too only without A.
    let mut e = engine(9);
    let job = e.submit(JobSpec::new(JobKind::PoRep, A, 1), t(0)).expect("submit");
    drain(&mut e);
    e.params_loaded(A, D0, t(1)).expect("loaded");
    drain(&mut e);
    prove(&mut e, job, Some((A, 3 * GB)), 5);
    assert_eq!(used(&e), 5 * GB);
    e.matrices_recorded(B, 3 * GB, t(20)).expect("B's matrices from the store");
    drain(&mut e);
    let job = e.submit(JobSpec::new(JobKind::PoRep, B, 1), t(30)).expect("submit B");
    let a = drain(&mut e);
    assert!(a.contains(&Action::LoadParams { circuit: B, to: D0, bytes: 2 * GB, from_host: false }), "{a:?}");
    assert!(a.contains(&Action::EvictParams { circuit: A, from: D0, bytes: 5 * GB }), "A's idle copy makes room for B's matrices: {a:?}");
    assert!(a.contains(&Action::MatricesReserved { circuit: B, device: DeviceId(0), bytes: 3 * GB }), "{a:?}");
    assert_eq!(e.presence(A, D0), Some(Presence::Absent));
    e.params_loaded(B, D0, t(31)).expect("loaded");
    drain(&mut e);
    let a = prove(&mut e, job, None, 40);
    assert!(a.contains(&Action::JobEnded { job, outcome: Outcome::Completed }), "{a:?}");
    assert_eq!(used(&e), 5 * GB);
}

/// A copy in use is never grown past the budget: the growth waits for nothing and only uses
/// free memory (or evicts idle parameters), so a partition on the device keeps its bytes.
#[test]
fn growth_uses_only_free_memory() {
    // 10 GB: A's parameters (2) and a partition (4) leave 4; B idle (2) leaves 2 free.
    let mut e = engine(10);
    e.preload(B, D0, t(0)).expect("preload B");
    drain(&mut e);
    e.params_loaded(B, D0, t(1)).expect("loaded");
    drain(&mut e);
    let job = e.submit(JobSpec::new(JobKind::PoRep, A, 1), t(2)).expect("submit");
    drain(&mut e);
    e.params_loaded(A, D0, t(3)).expect("loaded");
    drain(&mut e);
    let p = PartitionId { job, index: 0 };
    e.stage_finished(p, Stage::Synthesize, t(4)).expect("synth");
    drain(&mut e);
    assert_eq!(used(&e), 8 * GB, "B, A and A's partition");
    // 3 GB of matrices: only by evicting idle B (2 free + 2).
    e.matrices_recorded(A, 3 * GB, t(5)).expect("matrices");
    let a = drain(&mut e);
    assert_eq!(
        a,
        vec![Action::EvictParams { circuit: B, from: D0, bytes: 2 * GB }, Action::MatricesReserved { circuit: A, device: DeviceId(0), bytes: 3 * GB }]
    );
    assert_eq!(used(&e), 9 * GB);
}

// ---- random mixes -------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Scenario {
    cfg: EngineConfig,
    circuits: Vec<(CircuitProfile, CircuitModel, Option<u64>)>,
    jobs: Vec<(u32, cuzk_core::engine::Priority, u32, u64)>,
    seed: u64,
}

/// Circuits whose parameters, matrices and partitions are of the order of the device budget
/// (some over it together, some even alone with their matrices).
fn scenario() -> impl Strategy<Value = Scenario> {
    let device =
        (40..=160u64, 1..=3u32, 1..=2u32).prop_map(|(m, w, l)| DeviceConfig { memory_bytes: m * MB, gpu_workers: w, kernel_lanes: l, fallback: false });
    let cfg = (prop::collection::vec(device, 1..=3), 1..=3u32, 1..=2u32, 48..=256u64, 1..=6u32, 0..=16u64, any::<bool>()).prop_map(
        |(devices, synth, fin, host, look, dres, after_ntt)| {
            let mut cfg = EngineConfig::new(synth, host * MB, devices);
            cfg.finalize_workers = fin;
            cfg.synth_lookahead = look;
            cfg.critical_device_reserve = dres * MB;
            if after_ntt {
                cfg.release_host_abc_after = Stage::Ntt;
            }
            cfg
        },
    );
    let circuit = (
        strategies::circuit((0..=48u64, 1..=64u64, 1..=32u64, 0..=16u64, 1..=32u64, 0..=16u64), [dur(20), dur(5), dur(10), dur(15), dur(10)]),
        prop::option::weighted(0.8, 1..=160u64),
    )
        .prop_map(|((p, m), x)| (p, m, x.map(|x| x * MB)));
    (cfg, prop::collection::vec(circuit, 1..=4), any::<u64>()).prop_flat_map(|(cfg, circuits, seed)| {
        let n = circuits.len() as u32;
        let jobs = prop::collection::vec((0..n, priority(), 1..=5u32, 0..400u64), 1..=25);
        (Just(cfg), Just(circuits), jobs, Just(seed)).prop_map(|(cfg, circuits, jobs, seed)| Scenario { cfg, circuits, jobs, seed })
    })
}

fn run(s: &Scenario) -> Sim {
    let mut model = Model::default();
    for (i, (_, m, x)) in s.circuits.iter().enumerate() {
        model.circuits.insert(CircuitId(i as u32), *m);
        if let Some(x) = x {
            model.matrices.insert(CircuitId(i as u32), *x);
        }
    }
    let mut sim = Sim::new(s.cfg.clone(), model, s.seed).expect("valid config");
    for (i, (p, _, _)) in s.circuits.iter().enumerate() {
        sim.register(CircuitId(i as u32), *p).expect("register");
    }
    for (c, prio, parts, at) in &s.jobs {
        sim.submit_at(Nanos::from_millis(*at), JobSpec::new(JobKind::Generic, CircuitId(*c), *parts).with_priority(*prio));
    }
    let n = sim.run(2_000_000);
    assert!(n < 2_000_000, "simulation did not settle");
    sim
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, max_shrink_iters: 2000, ..ProptestConfig::default() })]

    /// Random job mixes with matrices and parameters near or over the device budgets: the
    /// ledgers (the sim's own from the actions, and the engine's recount after every input)
    /// never exceed a budget, every accepted job ends exactly once and completes (no
    /// deadlock), and nothing leaks: at the end every device holds exactly its resident
    /// copies, parameters plus included matrices.
    #[test]
    fn matrices_never_exceed_a_budget_nor_deadlock(s in scenario()) {
        let sim = run(&s);
        prop_assert!(sim.audit().is_ok(), "{:?}\n{}", sim.audit(), sim.engine().describe());
        for (job, ends) in &sim.log().ends {
            prop_assert_eq!(&ends[0].1, &Outcome::Completed, "{:?}", job);
        }
        for (d, dev) in s.cfg.devices.iter().enumerate() {
            let peak = sim.log().peak.get(&Location::Device(DeviceId(d as u32))).copied().unwrap_or(0);
            prop_assert!(peak <= i128::from(dev.memory_bytes), "device {d}: peak {peak}");
        }
    }
}

/// The matrices do count: in a mix where they fit, some device copy includes them and the
/// peak of that device's ledger is above what parameters and partitions alone could reach.
#[test]
fn matrices_are_reserved_in_a_simulated_mix() {
    let dev = DeviceConfig { memory_bytes: 1000 * MB, gpu_workers: 1, kernel_lanes: 1, fallback: false };
    let cfg = EngineConfig::new(1, 4096 * MB, vec![dev]);
    let p = CircuitProfile {
        params_host_bytes: 0,
        params_device_bytes: 100 * MB,
        footprint: Footprint { host_abc: 30 * MB, host_rest: 10 * MB, device_abc: 30 * MB, device_rest: 10 * MB },
    };
    let m = CircuitModel {
        stages: [Dur::fixed(Nanos::from_millis(5)); 5],
        load_device: Dur::fixed(Nanos::from_millis(5)),
        load_host: Dur::fixed(Nanos::from_millis(5)),
    };
    let mut model = Model::default();
    model.matrices.insert(A, 500 * MB);
    model.circuits.insert(A, m);
    let mut sim = Sim::new(cfg, model, 1).expect("config");
    sim.register(A, p).expect("register");
    for i in 0..3 {
        sim.submit_at(Nanos::from_millis(i * 100), JobSpec::new(JobKind::Generic, A, 2));
    }
    sim.run(100_000);
    sim.audit().expect("audit");
    assert_eq!(sim.engine().matrices_at(A, D0), Some(true));
    assert_eq!(sim.engine().usage(D0).map(|u| u.used), Some(600 * MB));
    let peak = sim.log().peak.get(&D0).copied().unwrap_or(0);
    assert!(peak >= i128::from(640 * MB), "peak {peak}");
}
