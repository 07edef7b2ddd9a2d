//! Hand-driven engine scenarios: exact action sequences, error paths, cancellation, failure,
//! deadlines, parameter residency and the trace export.

use cuzk_core::engine::{
    Action, Buffers, CircuitId, CircuitProfile, DeviceConfig, DeviceId, Dispatch, Engine, EngineConfig, EngineError, Footprint, JobFailure, JobId, JobKind,
    JobSpec, Location, Nanos, Outcome, PartitionId, Presence, Priority, Stage, Tier,
};

const GB: u64 = 1 << 30;
const C: CircuitId = CircuitId(1);
const D0: Location = Location::Device(DeviceId(0));
const D1: Location = Location::Device(DeviceId(1));

fn profile() -> CircuitProfile {
    CircuitProfile {
        params_host_bytes: GB,
        params_device_bytes: 2 * GB,
        params_device_host_bytes: 0,
        footprint: Footprint { host_abc: 3 * GB, host_rest: GB, device_abc: 3 * GB, device_rest: GB },
        witness_footprint: None,
        load_host_bytes: 0,
    }
}

fn engine(devices: usize, workers: u32) -> Engine {
    engine_with(devices, workers, |_| {})
}

fn engine_with(devices: usize, workers: u32, f: impl FnOnce(&mut EngineConfig)) -> Engine {
    let dev = DeviceConfig { memory_bytes: 16 * GB, gpu_workers: workers, kernel_lanes: 1, fallback: false };
    let mut cfg = EngineConfig::new(1, 64 * GB, vec![dev; devices]);
    cfg.finalize_workers = 1;
    f(&mut cfg);
    let mut e = Engine::new(cfg, Nanos::ZERO).expect("valid config");
    e.register_circuit(C, profile()).expect("register");
    e
}

fn drain(e: &mut Engine) -> Vec<Action> {
    std::iter::from_fn(|| e.poll_action()).collect()
}

fn starts(actions: &[Action]) -> Vec<Dispatch> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Start(d) => Some(d.clone()),
            _ => None,
        })
        .collect()
}

fn p(job: JobId, index: u32) -> PartitionId {
    PartitionId { job, index }
}

fn t(ms: u64) -> Nanos {
    Nanos::from_millis(ms)
}

#[test]
fn one_partition_walks_every_stage_and_releases_on_time() {
    let mut e = engine(1, 1);
    let job = e.submit(JobSpec::new(JobKind::PoRep, C, 1), t(0)).expect("submit");
    let a = drain(&mut e);
    assert_eq!(a.len(), 2, "{a:?}");
    assert!(matches!(a[0], Action::LoadParams { circuit: C, to: D0, bytes, from_host: false } if bytes == 2 * GB));
    let s = starts(&a);
    assert_eq!((s[0].stage, s[0].location, s[0].reserved), (Stage::Synthesize, Location::Host, 4 * GB));

    e.params_loaded(C, D0, t(1)).expect("loaded");
    assert!(drain(&mut e).is_empty());
    assert_eq!(e.tier(C), Some(Tier::Hot));

    e.stage_finished(p(job, 0), Stage::Synthesize, t(10)).expect("synth");
    let s = starts(&drain(&mut e));
    assert_eq!((s[0].stage, s[0].location, s[0].reserved), (Stage::Upload, D0, 4 * GB));
    assert_eq!(e.usage(D0).map(|u| u.used), Some(6 * GB));

    e.stage_finished(p(job, 0), Stage::Upload, t(11)).expect("upload");
    let a = drain(&mut e);
    assert_eq!(a[0], Action::Release { partition: p(job, 0), location: Location::Host, buffers: Buffers::Abc, bytes: 3 * GB });
    assert_eq!(starts(&a)[0].stage, Stage::Ntt);

    e.stage_finished(p(job, 0), Stage::Ntt, t(12)).expect("ntt");
    let a = drain(&mut e);
    assert_eq!(a[0], Action::Release { partition: p(job, 0), location: D0, buffers: Buffers::Abc, bytes: 3 * GB });
    assert_eq!(starts(&a)[0].stage, Stage::Msm);

    e.stage_finished(p(job, 0), Stage::Msm, t(13)).expect("msm");
    let a = drain(&mut e);
    assert_eq!(a[0], Action::Release { partition: p(job, 0), location: D0, buffers: Buffers::Rest, bytes: GB });
    assert_eq!(starts(&a)[0].stage, Stage::Finalize);
    assert_eq!(e.usage(D0).map(|u| u.used), Some(2 * GB), "only the parameters stay on the device");

    e.stage_finished(p(job, 0), Stage::Finalize, t(14)).expect("finalize");
    let a = drain(&mut e);
    assert_eq!(a[0], Action::Release { partition: p(job, 0), location: Location::Host, buffers: Buffers::Rest, bytes: GB });
    assert_eq!(a[1], Action::JobEnded { job, outcome: Outcome::Completed });
    assert!(e.is_quiescent());
    assert_eq!(e.usage(Location::Host).map(|u| u.used), Some(0));
    let rec = e.timeline().job(job).copied().expect("record");
    assert_eq!(rec.queue_wait(), Some(Nanos::ZERO));
    assert_eq!(rec.latency(), Some(t(14)));
}

#[test]
fn next_gpu_work_is_dispatched_before_finalize() {
    let mut e = engine(1, 2);
    e.preload(C, D0, t(0)).expect("preload");
    drain(&mut e);
    e.params_loaded(C, D0, t(0)).expect("loaded");
    let job = e.submit(JobSpec::new(JobKind::PoRep, C, 2), t(0)).expect("submit");
    drain(&mut e);
    e.stage_finished(p(job, 0), Stage::Synthesize, t(1)).expect("s0");
    drain(&mut e);
    e.stage_finished(p(job, 1), Stage::Synthesize, t(2)).expect("s1");
    drain(&mut e);
    for (st, ms) in [(Stage::Upload, 3), (Stage::Ntt, 4)] {
        e.stage_finished(p(job, 0), st, t(ms)).expect("p0");
        drain(&mut e);
    }
    e.stage_finished(p(job, 1), Stage::Upload, t(5)).expect("p1 upload");
    assert!(starts(&drain(&mut e)).is_empty(), "p1 waits for the kernel lane");
    e.stage_finished(p(job, 0), Stage::Msm, t(6)).expect("p0 msm");
    let s = starts(&drain(&mut e));
    let order: Vec<_> = s.iter().map(|d| (d.partition.index, d.stage)).collect();
    assert_eq!(order, vec![(1, Stage::Ntt), (0, Stage::Finalize)]);
}

#[test]
fn bad_inputs_are_errors_not_panics() {
    let mut e = engine(1, 1);
    assert_eq!(e.cancel(JobId(42), t(0)), Err(EngineError::UnknownJob(JobId(42))));
    let x = p(JobId(7), 0);
    assert_eq!(e.stage_finished(x, Stage::Ntt, t(0)), Err(EngineError::UnknownPartition(x)));
    assert_eq!(e.submit(JobSpec::new(JobKind::PoRep, CircuitId(9), 1), t(0)), Err(EngineError::UnknownCircuit(CircuitId(9))));
    assert_eq!(e.submit(JobSpec::new(JobKind::PoRep, C, 0), t(0)), Err(EngineError::NoPartitions));
    assert_eq!(e.register_circuit(C, profile()), Err(EngineError::CircuitExists(C)));
    assert_eq!(e.params_loaded(C, D0, t(0)), Err(EngineError::NotLoading { circuit: C, location: D0 }));
    assert_eq!(e.preload(C, D1, t(0)), Err(EngineError::UnknownDevice(DeviceId(1))));
    let huge = CircuitProfile { footprint: Footprint { host_abc: 100 * GB, ..Footprint::default() }, ..profile() };
    e.register_circuit(CircuitId(2), huge).expect("register");
    assert!(matches!(e.submit(JobSpec::new(JobKind::PoRep, CircuitId(2), 1), t(0)), Err(EngineError::TooLarge { location: Location::Host, .. })));
    assert!(drain(&mut e).is_empty(), "refused inputs produce no actions");

    let job = e.submit(JobSpec::new(JobKind::PoRep, C, 1), t(0)).expect("submit");
    drain(&mut e);
    let p0 = p(job, 0);
    assert_eq!(e.stage_finished(p0, Stage::Ntt, t(1)), Err(EngineError::NotRunning { partition: p0, stage: Stage::Ntt }));
    e.stage_finished(p0, Stage::Synthesize, t(1)).expect("first report");
    assert!(e.stage_finished(p0, Stage::Synthesize, t(1)).is_err(), "duplicate report");
    assert_eq!(e.evict(C, D0, t(1)), Err(EngineError::ParamsInUse { circuit: C, location: D0 }), "loading");
    e.cancel(job, t(2)).expect("cancel");
    assert_eq!(e.cancel(job, t(2)), Err(EngineError::UnknownJob(job)), "ended and forgotten");
    // Time going backwards is clamped, not a panic.
    e.tick(t(0));
    assert_eq!(e.now(), t(2));
}

#[test]
fn cancel_ends_at_once_and_running_stages_release_at_their_end() {
    let mut e = engine(1, 1);
    e.preload(C, D0, t(0)).expect("preload");
    drain(&mut e);
    e.params_loaded(C, D0, t(0)).expect("loaded");
    let job = e.submit(JobSpec::new(JobKind::PoRep, C, 3), t(0)).expect("submit");
    drain(&mut e);
    e.stage_finished(p(job, 0), Stage::Synthesize, t(1)).expect("s0");
    drain(&mut e); // p0 uploads, p1 synthesizes
    e.stage_finished(p(job, 0), Stage::Upload, t(2)).expect("u0");
    drain(&mut e); // p0 NTT
    e.cancel(job, t(3)).expect("cancel");
    let a = drain(&mut e);
    assert_eq!(a.iter().filter(|a| matches!(a, Action::JobEnded { .. })).count(), 1);
    assert!(a.contains(&Action::JobEnded { job, outcome: Outcome::Cancelled }));
    assert!(starts(&a).is_empty());
    assert!(e.cancel(job, t(3)).is_err());
    // The running NTT and synthesis are still reported; they release everything.
    e.stage_finished(p(job, 0), Stage::Ntt, t(4)).expect("ntt after cancel");
    let a = drain(&mut e);
    assert!(starts(&a).is_empty(), "no MSM for a cancelled job: {a:?}");
    e.stage_finished(p(job, 1), Stage::Synthesize, t(5)).expect("synth after cancel");
    assert!(starts(&drain(&mut e)).is_empty());
    assert!(e.is_quiescent());
    assert_eq!(e.usage(Location::Host).map(|u| u.used), Some(0));
    assert_eq!(e.usage(D0).map(|u| u.used), Some(2 * GB));
    e.check_consistency().expect("consistent");
}

#[test]
fn failure_fails_the_job_once() {
    let mut e = engine(1, 1);
    let job = e.submit(JobSpec::new(JobKind::PoRep, C, 2), t(0)).expect("submit");
    drain(&mut e);
    e.stage_failed(p(job, 0), Stage::Synthesize, t(1), "oom").expect("fail");
    let a = drain(&mut e);
    let ends: Vec<_> = a.iter().filter(|a| matches!(a, Action::JobEnded { .. })).collect();
    assert_eq!(ends.len(), 1);
    assert!(matches!(ends[0], Action::JobEnded { outcome: Outcome::Failed(JobFailure::Stage { stage: Stage::Synthesize, .. }), .. }));
    assert_eq!(e.live_jobs(), 0);
    e.params_loaded(C, D0, t(2)).expect("prefetch still completes");
    assert!(e.is_quiescent());
    e.check_consistency().expect("consistent");
}

#[test]
fn deadlines_fire_on_tick() {
    let mut e = engine(1, 1);
    let job = e.submit(JobSpec::new(JobKind::WinningPost, C, 1).with_deadline(t(100)), t(0)).expect("submit");
    drain(&mut e);
    assert_eq!(e.next_deadline(), Some(t(100)));
    e.tick(t(99));
    assert!(drain(&mut e).is_empty());
    e.tick(t(100));
    let a = drain(&mut e);
    assert!(a.contains(&Action::JobEnded { job, outcome: Outcome::Failed(JobFailure::DeadlineExceeded) }));
    assert_eq!(e.next_deadline(), None);
    e.stage_finished(p(job, 0), Stage::Synthesize, t(101)).expect("late report accepted");
    assert!(starts(&drain(&mut e)).is_empty());
}

#[test]
fn failed_parameter_load_fails_waiting_jobs() {
    let mut e = engine(1, 1);
    let job = e.submit(JobSpec::new(JobKind::PoRep, C, 1), t(0)).expect("submit");
    drain(&mut e);
    e.params_load_failed(C, D0, t(1), "corrupt file").expect("report");
    let a = drain(&mut e);
    assert!(a.contains(&Action::EvictParams { circuit: C, from: D0, bytes: 2 * GB }));
    assert!(a.iter().any(|a| matches!(a, Action::JobEnded { job: j, outcome: Outcome::Failed(JobFailure::Params { .. }) } if *j == job)));
    e.stage_finished(p(job, 0), Stage::Synthesize, t(2)).expect("late");
    drain(&mut e);
    assert!(e.is_quiescent());
    assert_eq!(e.usage(D0).map(|u| u.used), Some(0));
}

#[test]
fn tiers_follow_preload_and_evict() {
    let mut e = engine(1, 1);
    assert_eq!(e.tier(C), Some(Tier::Cold));
    e.preload(C, Location::Host, t(0)).expect("warm");
    assert!(matches!(drain(&mut e)[..], [Action::LoadParams { to: Location::Host, .. }]));
    e.preload(C, Location::Host, t(0)).expect("no-op while loading");
    assert!(drain(&mut e).is_empty());
    e.params_loaded(C, Location::Host, t(1)).expect("loaded");
    assert_eq!(e.tier(C), Some(Tier::Warm));
    e.preload(C, D0, t(1)).expect("hot");
    assert!(matches!(drain(&mut e)[..], [Action::LoadParams { to: D0, from_host: true, .. }]));
    assert_eq!(e.evict(C, Location::Host, t(1)), Err(EngineError::ParamsInUse { circuit: C, location: Location::Host }));
    e.params_loaded(C, D0, t(2)).expect("loaded");
    assert_eq!(e.tier(C), Some(Tier::Hot));
    e.evict(C, D0, t(3)).expect("evict");
    assert_eq!(drain(&mut e), vec![Action::EvictParams { circuit: C, from: D0, bytes: 2 * GB }]);
    assert_eq!(e.tier(C), Some(Tier::Warm));
    e.evict(C, Location::Host, t(3)).expect("evict");
    drain(&mut e);
    assert_eq!(e.tier(C), Some(Tier::Cold));
    assert_eq!(e.evict(C, Location::Host, t(3)), Ok(()), "absent: no-op");
}

/// Runs every start of `e` to completion at 1 ms per stage, loading parameters at once.
fn run_all(e: &mut Engine, mut now: Nanos, log: &mut Vec<Action>) -> Nanos {
    let mut pending: std::collections::VecDeque<Action> = drain(e).into();
    while let Some(a) = pending.pop_front() {
        log.push(a.clone());
        now += t(1);
        match a {
            Action::Start(d) => e.stage_finished(d.partition, d.stage, now).expect("finish"),
            Action::LoadParams { circuit, to, .. } => e.params_loaded(circuit, to, now).expect("load"),
            _ => continue,
        }
        pending.extend(drain(e));
    }
    now
}

#[test]
fn least_recently_used_unreferenced_parameters_are_evicted() {
    // Room for two parameter sets plus one partition.
    let dev = DeviceConfig { memory_bytes: 8 * GB, gpu_workers: 1, kernel_lanes: 1, fallback: false };
    let mut e = Engine::new(EngineConfig::new(1, 64 * GB, vec![dev]), Nanos::ZERO).expect("config");
    for c in 1..=3 {
        e.register_circuit(CircuitId(c), profile()).expect("register");
    }
    let mut log = Vec::new();
    let mut now = Nanos::ZERO;
    for c in [1, 2, 1, 3] {
        e.submit(JobSpec::new(JobKind::Generic, CircuitId(c), 1), now).expect("submit");
        now = run_all(&mut e, now, &mut log);
    }
    let evicted: Vec<_> = log
        .iter()
        .filter_map(|a| match a {
            Action::EvictParams { circuit, .. } => Some(circuit.0),
            _ => None,
        })
        .collect();
    assert_eq!(evicted, vec![2], "circuit 2 was used least recently");
    assert_eq!(e.presence(CircuitId(1), D0), Some(Presence::Resident));
    assert_eq!(e.presence(CircuitId(3), D0), Some(Presence::Resident));
}

#[test]
fn partitions_go_to_the_device_holding_their_parameters() {
    let mut e = engine(2, 1);
    e.preload(C, D1, t(0)).expect("preload");
    drain(&mut e);
    e.params_loaded(C, D1, t(0)).expect("loaded");
    let job = e.submit(JobSpec::new(JobKind::PoRep, C, 1), t(0)).expect("submit");
    drain(&mut e);
    e.stage_finished(p(job, 0), Stage::Synthesize, t(1)).expect("synth");
    let s = starts(&drain(&mut e));
    assert_eq!((s[0].stage, s[0].location), (Stage::Upload, D1));
}

#[test]
fn higher_priority_takes_the_next_free_slot() {
    let mut e = engine_with(1, 1, |c| c.synth_lookahead = 100);
    let first = e.submit(JobSpec::new(JobKind::Generic, C, 1), t(0)).expect("submit");
    let kinds = [
        JobSpec::new(JobKind::Generic, C, 1).with_priority(Priority::Low),
        JobSpec::new(JobKind::PoRep, C, 1),
        JobSpec::new(JobKind::WindowPost, C, 1),
        JobSpec::new(JobKind::WinningPost, C, 1),
        JobSpec::new(JobKind::SnapDeals, C, 1),
    ];
    let ids: Vec<_> = kinds.into_iter().map(|k| e.submit(k, t(0)).expect("submit")).collect();
    drain(&mut e);
    let mut order = Vec::new();
    let mut cur = first;
    for i in 0..5 {
        e.stage_finished(p(cur, 0), Stage::Synthesize, t(i + 1)).expect("synth");
        let next = starts(&drain(&mut e)).into_iter().find(|d| d.stage == Stage::Synthesize).expect("next");
        cur = next.partition.job;
        order.push(cur);
    }
    assert_eq!(order, vec![ids[3], ids[2], ids[1], ids[4], ids[0]], "CRITICAL, HIGH, NORMAL (older first), LOW");
}

#[test]
fn chrome_trace_is_valid_json() {
    let mut e = engine(2, 2);
    let mut log = Vec::new();
    for _ in 0..3 {
        e.submit(JobSpec::new(JobKind::PoRep, C, 4), t(0)).expect("submit");
    }
    run_all(&mut e, t(0), &mut log);
    let json = e.timeline().chrome_trace();
    let v: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    let events = v["traceEvents"].as_array().expect("array");
    let stages = events.iter().filter(|e| e["cat"] == "stage").count();
    assert_eq!(stages, 3 * 4 * 5);
    assert!(events.iter().any(|e| e["cat"] == "idle"));
    assert!(events.iter().any(|e| e["cat"] == "params"));
}
