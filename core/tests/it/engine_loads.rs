//! The host memory a device load holds in flight (one decoded query): set aside in the host
//! budget, counted while the load runs, and never used by partitions; loads beyond it wait
//! for each other.

use cuzk_core::engine::{
    Action, CircuitId, CircuitProfile, DeviceConfig, DeviceId, Engine, EngineConfig, EngineError, Footprint, JobKind, JobSpec, Location, Nanos, Outcome,
    Presence, Stage,
};

const GB: u64 = 1 << 30;
const A: CircuitId = CircuitId(1);
const B: CircuitId = CircuitId(2);
const HOST: Location = Location::Host;
const D0: Location = Location::Device(DeviceId(0));
const D1: Location = Location::Device(DeviceId(1));

/// Parameters of 2 GB, partitions of 4 GB on each side, and a device load holding `query`
/// bytes on the host.
fn profile(query: u64) -> CircuitProfile {
    CircuitProfile {
        params_host_bytes: 2 * GB,
        params_device_bytes: 2 * GB,
        params_device_host_bytes: 0,
        footprint: Footprint { host_abc: 3 * GB, host_rest: GB, device_abc: 3 * GB, device_rest: GB },
        witness_footprint: None,
        load_host_bytes: query,
    }
}

fn engine(devices: usize, host_gb: u64) -> Engine {
    let dev = DeviceConfig { memory_bytes: 16 * GB, gpu_workers: 1, kernel_lanes: 1, fallback: false };
    Engine::new(EngineConfig::new(1, host_gb * GB, vec![dev; devices]), Nanos::ZERO).expect("valid config")
}

fn drain(e: &mut Engine) -> Vec<Action> {
    std::iter::from_fn(|| e.poll_action()).collect()
}

fn loads(actions: &[Action]) -> Vec<(CircuitId, Location)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::LoadParams { circuit, to, .. } => Some((*circuit, *to)),
            _ => None,
        })
        .collect()
}

fn t(ms: u64) -> Nanos {
    Nanos::from_millis(ms)
}

fn host(e: &Engine) -> (u64, u64, u64) {
    let u = e.usage(HOST).expect("host");
    (u.used, u.in_loads, u.set_aside)
}

#[test]
fn a_device_load_holds_its_query_on_the_host_until_reported() {
    let mut e = engine(1, 32);
    e.register_circuit(A, profile(5 * GB)).expect("register");
    assert_eq!(host(&e), (0, 0, 5 * GB), "the largest query is set aside at registration");

    e.preload(A, D0, t(0)).expect("preload");
    assert_eq!(loads(&drain(&mut e)), vec![(A, D0)]);
    assert_eq!(host(&e), (5 * GB, 5 * GB, 5 * GB));
    e.check_consistency().expect("consistent");

    e.params_loaded(A, D0, t(1)).expect("loaded");
    assert_eq!(host(&e), (0, 0, 5 * GB));
    e.check_consistency().expect("consistent");

    // A host (warm) load decodes the whole set into its own counted copy: nothing in flight.
    e.preload(A, HOST, t(2)).expect("preload host");
    assert_eq!(loads(&drain(&mut e)), vec![(A, HOST)]);
    assert_eq!(host(&e), (2 * GB, 0, 5 * GB));
}

#[test]
fn loads_beyond_the_set_aside_wait_for_each_other_in_order() {
    let mut e = engine(2, 64);
    e.register_circuit(A, profile(5 * GB)).expect("register");
    e.register_circuit(B, profile(3 * GB)).expect("register");
    e.preload(A, D0, t(0)).expect("preload A");
    assert_eq!(loads(&drain(&mut e)), vec![(A, D0)]);

    // 5 + 3 GB exceed the 5 GB set aside: B's load waits, its device memory reserved.
    e.preload(B, D1, t(1)).expect("preload B");
    assert!(loads(&drain(&mut e)).is_empty());
    assert_eq!(e.presence(B, D1), Some(Presence::Loading));
    assert_eq!(e.usage(D1).map(|u| u.used), Some(2 * GB));
    assert_eq!(e.params_loaded(B, D1, t(2)), Err(EngineError::NotLoading { circuit: B, location: D1 }), "not asked for yet");
    assert_eq!(e.evict(B, D1, t(2)), Err(EngineError::ParamsInUse { circuit: B, location: D1 }));
    e.check_consistency().expect("consistent");

    e.params_loaded(A, D0, t(3)).expect("A loaded");
    assert_eq!(loads(&drain(&mut e)), vec![(B, D1)], "asked for once A's query is freed");
    assert_eq!(host(&e), (3 * GB, 3 * GB, 5 * GB));
    e.params_loaded(B, D1, t(4)).expect("B loaded");
    assert_eq!(host(&e), (0, 0, 5 * GB));
    assert!(e.is_quiescent());

    // The timeline spans the load from when it was asked for.
    let spans: Vec<_> = e.timeline().spans().filter(|s| s.circuit == B).map(|s| (s.start, s.end)).collect();
    assert_eq!(spans, vec![(t(3), t(4))]);
}

#[test]
fn small_loads_run_together_within_the_set_aside() {
    let mut e = engine(2, 64);
    e.register_circuit(A, profile(6 * GB)).expect("register");
    e.register_circuit(B, profile(3 * GB)).expect("register");
    e.preload(B, D0, t(0)).expect("preload B on 0");
    e.preload(B, D1, t(0)).expect("preload B on 1");
    assert_eq!(loads(&drain(&mut e)), vec![(B, D0), (B, D1)], "3 + 3 GB fit the 6 GB set aside");
    assert_eq!(host(&e), (6 * GB, 6 * GB, 6 * GB));
}

#[test]
fn partitions_never_use_the_set_aside() {
    // 14 GB of host: 5 GB set aside leaves 9 GB, two 4 GB partitions (and never a third).
    let mut e = engine(1, 14);
    e.register_circuit(A, profile(5 * GB)).expect("register");
    let job = e.submit(JobSpec::new(JobKind::Generic, A, 3), t(0)).expect("submit");
    let a = drain(&mut e);
    assert_eq!(loads(&a), vec![(A, D0)]);
    let synth = a.iter().filter(|a| matches!(a, Action::Start(d) if d.stage == Stage::Synthesize)).count();
    assert_eq!(synth, 1, "one synthesis worker");
    assert_eq!(host(&e), (4 * GB + 5 * GB, 5 * GB, 5 * GB));

    // A job whose partition needs more than the host less the set aside is refused.
    let big = CircuitProfile { footprint: Footprint { host_abc: 9 * GB, host_rest: GB, ..profile(0).footprint }, ..profile(0) };
    e.register_circuit(B, big).expect("register");
    match e.submit(JobSpec::new(JobKind::Generic, B, 1), t(1)) {
        Err(EngineError::TooLarge { location: HOST, need, capacity, .. }) => assert_eq!((need, capacity), (10 * GB, 9 * GB)),
        other => panic!("expected TooLarge on the host, got {other:?}"),
    }
    e.cancel(job, t(2)).expect("cancel");
}

#[test]
fn a_load_that_would_strand_accepted_jobs_is_refused_at_registration() {
    let mut e = engine(1, 10);
    e.register_circuit(A, profile(0)).expect("register");
    assert_eq!(
        e.register_circuit(B, profile(11 * GB)),
        Err(EngineError::LoadTooLarge { circuit: B, need: 11 * GB, capacity: 10 * GB }),
        "more than the host budget"
    );
    let job = e.submit(JobSpec::new(JobKind::Generic, A, 1), t(0)).expect("submit");
    // A's 4 GB partitions must still fit: at most 6 GB can be set aside while the job lives.
    assert_eq!(e.register_circuit(B, profile(7 * GB)), Err(EngineError::LoadTooLarge { circuit: B, need: 7 * GB, capacity: 6 * GB }));
    assert_eq!(e.register_circuit(B, profile(6 * GB)), Ok(()));
    assert_eq!(host(&e).2, 6 * GB);
    e.cancel(job, t(1)).expect("cancel");
    let ended = drain(&mut e).into_iter().any(|a| a == Action::JobEnded { job, outcome: Outcome::Cancelled });
    assert!(ended);
}

/// Two devices; A's load (5 GB query) onto device 0 asked for, B's (5 GB) onto device 1
/// queued behind it in the 5 GB set aside; the actions drained.
fn a_loading_b_queued() -> Engine {
    let mut e = engine(2, 64);
    e.register_circuit(A, profile(5 * GB)).expect("register");
    e.register_circuit(B, profile(5 * GB)).expect("register");
    e.preload(A, D0, t(0)).expect("preload A");
    e.preload(B, D1, t(0)).expect("preload B");
    assert_eq!(loads(&drain(&mut e)), vec![(A, D0)]);
    e
}

#[test]
fn a_queued_load_onto_a_retired_device_is_dropped_unasked() {
    let mut e = a_loading_b_queued();
    e.retire_device(DeviceId(1), t(1)).expect("retire");
    assert!(drain(&mut e).is_empty(), "the caller never heard of B's load: nothing to evict");
    assert_eq!(e.presence(B, D1), Some(Presence::Absent));
    assert_eq!(e.usage(D1).map(|u| u.used), Some(0));
    e.check_consistency().expect("consistent");
    e.params_loaded(A, D0, t(2)).expect("A loaded");
    assert!(drain(&mut e).is_empty());
    assert!(e.is_quiescent());
}

#[test]
fn matrices_of_a_queued_load_are_reported_when_it_is_asked_for() {
    let mut e = a_loading_b_queued();
    // B's queued copy grows to include its matrices; the caller hears of them with the load.
    e.matrices_recorded(B, GB, t(1)).expect("recorded");
    assert!(drain(&mut e).is_empty());
    assert_eq!(e.usage(D1).map(|u| u.used), Some(3 * GB));
    e.params_loaded(A, D0, t(2)).expect("A loaded");
    let a = drain(&mut e);
    assert_eq!(loads(&a), vec![(B, D1)]);
    assert!(a.contains(&Action::MatricesReserved { circuit: B, device: DeviceId(1), bytes: GB }), "{a:?}");
    e.check_consistency().expect("consistent");
}

#[test]
fn a_set_aside_grown_over_idle_copies_evicts_them_for_the_load() {
    let mut e = engine(1, 10);
    e.register_circuit(A, CircuitProfile { params_host_bytes: 8 * GB, ..profile(0) }).expect("register");
    e.preload(A, HOST, t(0)).expect("preload A warm");
    e.params_loaded(A, HOST, t(1)).expect("loaded");
    drain(&mut e);
    // 4 GB set aside leaves 6 GB beside it, which A's idle 8 GB warm copy exceeds.
    e.register_circuit(B, profile(4 * GB)).expect("register");
    e.preload(B, D0, t(2)).expect("preload B");
    let a = drain(&mut e);
    assert_eq!(a.first(), Some(&Action::EvictParams { circuit: A, from: HOST, bytes: 8 * GB }), "{a:?}");
    assert_eq!(loads(&a), vec![(B, D0)]);
    assert_eq!(host(&e), (4 * GB, 4 * GB, 4 * GB));
    e.check_consistency().expect("consistent");
}

mod late {
    //! Circuits registered when their first job comes, while other jobs run.

    use super::*;
    use cuzk_core::engine::sim::{CircuitModel, Model, Sim};
    use cuzk_core::engine::Priority;
    use proptest::prelude::*;

    use crate::strategies::{self, dur, priority, MB};

    #[derive(Debug, Clone)]
    struct Scenario {
        cfg: EngineConfig,
        circuits: Vec<(CircuitProfile, CircuitModel)>,
        /// (circuit, priority, partitions, at ms), in time order.
        jobs: Vec<(u32, Priority, u32, u64)>,
        seed: u64,
    }

    fn scenario() -> impl Strategy<Value = Scenario> {
        let dev =
            (60..=300u64, 1..=3u32, 1..=2u32).prop_map(|(m, w, l)| DeviceConfig { memory_bytes: m * MB, gpu_workers: w, kernel_lanes: l, fallback: false });
        let cfg = (prop::collection::vec(dev, 1..=3), 1..=4u32, 48..=256u64, 0..=16u64).prop_map(|(devices, synth, host, hres)| {
            let mut cfg = EngineConfig::new(synth, host * MB, devices);
            cfg.critical_host_reserve = hres * MB;
            cfg
        });
        // Queries up to 96 MiB: some cannot be set aside beside the jobs accepted before them.
        let circuit = (
            strategies::circuit((0..=32u64, 1..=48u64, 1..=32u64, 0..=16u64, 1..=32u64, 0..=16u64), [dur(20), dur(5), dur(10), dur(15), dur(10)]),
            prop_oneof![Just(0u64), 1..=96u64],
        )
            .prop_map(|((p, m), q)| (CircuitProfile { load_host_bytes: q * MB, ..p }, m));
        (cfg, prop::collection::vec(circuit, 1..=4), any::<u64>()).prop_flat_map(|(cfg, circuits, seed)| {
            let n = circuits.len() as u32;
            let jobs = prop::collection::vec((0..n, priority(), 1..=5u32, 0..400u64), 1..=25).prop_map(|mut j| {
                j.sort_by_key(|j| j.3);
                j
            });
            (Just(cfg), Just(circuits), jobs, Just(seed)).prop_map(|(cfg, circuits, jobs, seed)| Scenario { cfg, circuits, jobs, seed })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, max_shrink_iters: 2000, ..ProptestConfig::default() })]

        /// A registration is refused only when its load's query cannot be set aside beside
        /// the host budget's other needs (the budget itself, or a live job's partition); the
        /// budgets are never exceeded, loads counted (the simulation's ledger counts each
        /// device load's query from its request to its report), and every accepted job
        /// completes.
        #[test]
        fn circuits_registered_while_jobs_run_never_strand_work(s in scenario()) {
            let mut model = Model::default();
            for (i, (_, m)) in s.circuits.iter().enumerate() {
                model.circuits.insert(CircuitId(i as u32), *m);
            }
            let mut sim = Sim::new(s.cfg.clone(), model, s.seed).expect("valid config");
            let mut registered = vec![None; s.circuits.len()];
            let mut accepted: Vec<(usize, u32, Priority)> = Vec::new();
            for &(c, prio, parts, at) in &s.jobs {
                let at = Nanos::from_millis(at);
                sim.run_until(at);
                let p = s.circuits[c as usize].0;
                if registered[c as usize].is_none() {
                    let r = sim.register(CircuitId(c), p);
                    if let Err(e) = &r {
                        prop_assert!(matches!(e, EngineError::LoadTooLarge { .. }), "{e:?}");
                        // Justified: beyond the budget, or beside a live job's partition.
                        let host = s.cfg.host_memory_bytes;
                        let live = accepted.iter().filter(|(t, _, _)| sim.job(*t).is_some_and(|j| !sim.log().ends.contains_key(&j)));
                        let room = live
                            .map(|(_, lc, lp)| {
                                let reserve = if *lp == Priority::Critical { 0 } else { s.cfg.critical_host_reserve };
                                host.saturating_sub(reserve).saturating_sub(s.circuits[*lc as usize].0.footprint.host())
                            })
                            .min()
                            .unwrap_or(host);
                        prop_assert!(p.load_host_bytes > room, "refused {} bytes with {room} free of other needs", p.load_host_bytes);
                    }
                    registered[c as usize] = Some(r.is_ok());
                }
                if registered[c as usize] == Some(true) {
                    let t = sim.submit_at(at, JobSpec::new(JobKind::Generic, CircuitId(c), parts).with_priority(prio));
                    sim.run_until(at);
                    accepted.push((t, c, prio));
                }
            }
            let n = sim.run(2_000_000);
            prop_assert!(n < 2_000_000, "simulation did not settle");
            prop_assert!(sim.audit().is_ok(), "{:?}\n{}", sim.audit(), sim.engine().describe());
            for (job, ends) in &sim.log().ends {
                prop_assert_eq!(&ends[0].1, &Outcome::Completed, "{:?}\n{}", job, sim.engine().describe());
            }
            for (at, peak) in sim.log().peak.iter() {
                let cap = sim.engine().usage(*at).map_or(0, |u| u.capacity);
                prop_assert!(*peak <= i128::from(cap), "{at:?}: peak {peak}");
            }
        }
    }
}

#[test]
fn a_preload_goes_to_the_device_in_service_with_the_most_free_memory_once() {
    let fallback = DeviceConfig { memory_bytes: 64 * GB, gpu_workers: 1, kernel_lanes: 1, fallback: true };
    let dev = |gb| DeviceConfig { memory_bytes: gb * GB, gpu_workers: 1, kernel_lanes: 1, fallback: false };
    let mut e = Engine::new(EngineConfig::new(1, 64 * GB, vec![fallback, dev(24), dev(16)]), Nanos::ZERO).expect("valid config");
    e.register_circuit(A, profile(GB)).expect("register");
    // The fallback device has the most memory but takes no preload.
    assert_eq!(e.preload_anywhere(A, t(0)), Ok(Presence::Loading));
    assert_eq!(loads(&drain(&mut e)), vec![(A, D1)]);
    assert_eq!(e.preload_anywhere(A, t(1)), Ok(Presence::Loading), "on its way: no second load");
    assert!(drain(&mut e).is_empty());
    e.params_loaded(A, D1, t(2)).expect("loaded");
    assert_eq!(e.preload_anywhere(A, t(3)), Ok(Presence::Resident));
    assert!(drain(&mut e).is_empty());
    // Evicted everywhere it is resident (device 1, then the host copy a second preload made).
    e.preload(A, HOST, t(4)).expect("preload host");
    e.params_loaded(A, HOST, t(5)).expect("loaded");
    drain(&mut e);
    assert_eq!(e.evict_everywhere(A, t(6)), Ok(2));
    assert_eq!((e.presence(A, D1), e.presence(A, HOST)), (Some(Presence::Absent), Some(Presence::Absent)));
    // With device 1 out of service the preload goes to device 2, and with none left it fails.
    e.retire_device(DeviceId(1), t(7)).expect("retire");
    assert_eq!(e.preload_anywhere(A, t(8)), Ok(Presence::Loading));
    assert_eq!(loads(&drain(&mut e)), vec![(A, Location::Device(DeviceId(2)))]);
    e.params_loaded(A, Location::Device(DeviceId(2)), t(9)).expect("loaded");
    e.evict_everywhere(A, t(10)).expect("evict");
    e.retire_device(DeviceId(2), t(11)).expect("retire");
    assert!(e.preload_anywhere(A, t(12)).is_err());
}
