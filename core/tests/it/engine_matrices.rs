//! Constraint matrices as part of a circuit's device copy: counted against the device budget
//! with the parameters once known (`Engine::matrices_recorded`), grown into a resident copy
//! where they fit, freed when the copy is evicted, left out where they do not fit (the host
//! path), and, in random job mixes with matrices and parameters near or over the budgets, no
//! budget is ever exceeded and every job ends.

use crate::strategies::{self, dur, priority, MB};
use cuzk_core::engine::sim::{CircuitModel, Dur, Model, Sim};
use cuzk_core::engine::{
    Action, CircuitId, CircuitProfile, DeviceConfig, DeviceId, Engine, EngineConfig, Footprint, JobId, JobKind, JobSpec, Location, Nanos, Outcome, PartitionId,
    Presence, Stage,
};
use proptest::prelude::*;
use std::collections::BTreeMap;

const GB: u64 = 1 << 30;
const A: CircuitId = CircuitId(1);
const B: CircuitId = CircuitId(2);
const D0: Location = Location::Device(DeviceId(0));

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

fn engine(device_gb: u64) -> Engine {
    engine_reserving(device_gb, 0)
}

/// [`engine`] with a CRITICAL reserve of `critical` bytes on the device.
fn engine_reserving(device_gb: u64, critical: u64) -> Engine {
    let dev = DeviceConfig { memory_bytes: device_gb * GB, gpu_workers: 1, kernel_lanes: 1, fallback: false };
    let mut cfg = EngineConfig::new(1, 64 * GB, vec![dev]);
    cfg.finalize_workers = 1;
    cfg.critical_device_reserve = critical;
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

/// Matrices that fit no device are reported with the budget that would hold them; once a
/// device can hold them, or before they are known, nothing is reported.
#[test]
fn matrices_that_fit_no_device_are_reported_with_the_budget_they_need() {
    // Parameters 2 GB + matrices 3 GB + a partition 4 GB = 9 GB.
    let mut e = engine(8);
    assert_eq!(e.matrices_shortfall(A), None, "matrices not known yet");
    e.matrices_recorded(A, 3 * GB, t(0)).expect("matrices");
    drain(&mut e);
    let s = e.matrices_shortfall(A).expect("9 GB needed, 8 GB budget");
    assert_eq!((s.device, s.needed, s.usable, s.budget, s.budget_needed()), (DeviceId(0), 9 * GB, 8 * GB, 8 * GB, 9 * GB));
    assert_eq!(e.matrices_shortfall(B), None, "B's matrices are not known");
    assert_eq!(engine_with_matrices(9).matrices_shortfall(A), None, "9 GB holds them");

    // A CRITICAL reserve is not usable for them: the budget needed grows by it.
    let mut e = engine_reserving(9, GB);
    e.matrices_recorded(A, 3 * GB, t(0)).expect("matrices");
    let s = e.matrices_shortfall(A).expect("8 GB usable of 9");
    assert_eq!((s.usable, s.budget_needed()), (8 * GB, 10 * GB));
}

fn engine_with_matrices(device_gb: u64) -> Engine {
    let mut e = engine(device_gb);
    e.matrices_recorded(A, 3 * GB, t(0)).expect("matrices");
    drain(&mut e);
    e
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

// ---- witness-only circuits -----------------------------------------------------------------

const W: CircuitId = CircuitId(3);
const D1: Location = Location::Device(DeviceId(1));

/// A witness-only circuit: 3 GB of host `a, b, c` on the host path, the witness (1 GB) alone
/// when the device evaluates them.
fn witness_profile() -> CircuitProfile {
    let footprint = Footprint { host_abc: 3 * GB, host_rest: GB, device_abc: 3 * GB, device_rest: GB };
    CircuitProfile { witness_footprint: Some(Footprint { host_abc: 0, ..footprint }), ..profile() }
}

/// An engine with devices of the given sizes (one worker each), two synthesis workers, 64 GB
/// of host memory, and circuits A, B (host path only) and W (witness-only).
fn engine_on(devices_gb: &[u64]) -> Engine {
    let devs = devices_gb.iter().map(|g| DeviceConfig { memory_bytes: g * GB, gpu_workers: 1, kernel_lanes: 1, fallback: false }).collect();
    let mut e = Engine::new(EngineConfig::new(2, 64 * GB, devs), Nanos::ZERO).expect("valid config");
    e.register_circuit(A, profile()).expect("register");
    e.register_circuit(B, profile()).expect("register");
    e.register_circuit(W, witness_profile()).expect("register");
    e
}

/// Copies of `W` loaded on both devices, then its 3 GB of matrices recorded (the actions that
/// follow the recording are left to the caller).
fn copies_then_matrices(e: &mut Engine) {
    for d in [D0, D1] {
        e.preload(W, d, t(0)).expect("preload");
        drain(e);
        e.params_loaded(W, d, t(1)).expect("loaded");
        drain(e);
    }
    e.matrices_recorded(W, 3 * GB, t(2)).expect("matrices");
}

fn host_used(e: &Engine) -> u64 {
    e.usage(Location::Host).map_or(0, |u| u.used)
}

/// Host bytes each synthesis start reserved, by partition.
fn synth_reserved(a: &[Action]) -> Vec<(PartitionId, u64)> {
    a.iter()
        .filter_map(|a| match a {
            Action::Start(d) if d.stage == Stage::Synthesize => Some((d.partition, d.reserved)),
            _ => None,
        })
        .collect()
}

/// Devices of the uploads started, by partition.
fn uploads(a: &[Action]) -> Vec<(PartitionId, Location)> {
    a.iter()
        .filter_map(|a| match a {
            Action::Start(d) if d.stage == Stage::Upload => Some((d.partition, d.location)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_witness_footprint_must_keep_the_device_side() {
    let mut e = engine(16);
    let mut bad = witness_profile();
    bad.witness_footprint = bad.witness_footprint.map(|w| Footprint { device_abc: 0, ..w });
    assert!(e.register_circuit(CircuitId(9), bad).is_err());
    let mut bad = witness_profile();
    bad.witness_footprint = bad.witness_footprint.map(|w| Footprint { host_rest: 5 * GB, ..w });
    assert!(e.register_circuit(CircuitId(9), bad).is_err());
}

/// Before the matrices are known (the circuit's first job) a witness-only partition reserves
/// the full footprint on the host (the upload evaluates `a, b, c` there); once the device's
/// copy includes them, partitions reserve only the witness, by the engine's ledger and the
/// synthesis starts.
#[test]
fn witness_partitions_reserve_the_witness_once_matrices_are_reserved() {
    let mut e = engine_on(&[16]);
    let job = e.submit(JobSpec::new(JobKind::PoRep, W, 1), t(0)).expect("submit");
    let a = drain(&mut e);
    assert_eq!(synth_reserved(&a), vec![(PartitionId { job, index: 0 }, 4 * GB)], "first job: full footprint");
    assert_eq!(host_used(&e), 4 * GB);
    e.params_loaded(W, D0, t(1)).expect("loaded");
    drain(&mut e);
    let a = prove(&mut e, job, Some((W, 3 * GB)), 5);
    assert!(a.contains(&Action::MatricesReserved { circuit: W, device: DeviceId(0), bytes: 3 * GB }), "{a:?}");
    assert!(a.contains(&Action::JobEnded { job, outcome: Outcome::Completed }), "{a:?}");
    assert_eq!(host_used(&e), 0);
    // Now the device's copy includes the matrices: the witness alone.
    let job = e.submit(JobSpec::new(JobKind::PoRep, W, 3), t(20)).expect("submit");
    let a = drain(&mut e);
    let p = |index| PartitionId { job, index };
    assert_eq!(synth_reserved(&a), vec![(p(0), GB), (p(1), GB)]);
    assert_eq!(host_used(&e), 2 * GB, "two partitions synthesizing, one witness each");
    e.stage_finished(p(0), Stage::Synthesize, t(21)).expect("synth");
    let a = drain(&mut e);
    assert_eq!(uploads(&a), vec![(p(0), D0)]);
    assert_eq!(synth_reserved(&a), vec![(p(2), GB)]);
    assert_eq!(host_used(&e), 3 * GB);
    // A circuit without a witness footprint keeps its full footprint.
    let other = e.submit(JobSpec::new(JobKind::PoRep, A, 1), t(22)).expect("submit");
    drain(&mut e);
    e.stage_finished(p(1), Stage::Synthesize, t(23)).expect("synth");
    let a = drain(&mut e);
    assert_eq!(synth_reserved(&a), vec![(PartitionId { job: other, index: 0 }, 4 * GB)]);
}

/// The first job of a circuit: partitions synthesized before its matrices were reported
/// reserve the full footprint, the later ones (after the copy grew) the witness.
#[test]
fn the_first_job_reserves_the_full_footprint_until_matrices_are_known() {
    let mut e = engine_on(&[16]);
    let job = e.submit(JobSpec::new(JobKind::PoRep, W, 3), t(0)).expect("submit");
    let mut a = drain(&mut e);
    e.params_loaded(W, D0, t(1)).expect("loaded");
    a.extend(drain(&mut e));
    let p = |index| PartitionId { job, index };
    assert_eq!(synth_reserved(&a), vec![(p(0), 4 * GB), (p(1), 4 * GB)]);
    e.matrices_recorded(W, 3 * GB, t(2)).expect("matrices");
    drain(&mut e);
    e.stage_finished(p(0), Stage::Synthesize, t(3)).expect("synth");
    let a = drain(&mut e);
    assert_eq!(synth_reserved(&a), vec![(p(2), GB)]);
    assert_eq!(host_used(&e), 4 * GB + 4 * GB + GB);
}

/// Only a device whose copy includes the matrices takes a witness partition: with the copy
/// on device 1 (device 0 too small for the matrices), the partition waits for device 1 even
/// while device 0 is free; a job avoiding device 1 reserves the full footprint and may use
/// device 0.
#[test]
fn witness_partitions_wait_for_a_device_with_matrices() {
    // Device 0: 2 GB parameters + 4 GB partition fit 8 GB, with 3 GB of matrices they do not.
    let mut e = engine_on(&[8, 16]);
    copies_then_matrices(&mut e);
    let a = drain(&mut e);
    assert_eq!(a, vec![Action::MatricesReserved { circuit: W, device: DeviceId(1), bytes: 3 * GB }]);
    let job = e.submit(JobSpec::new(JobKind::PoRep, W, 2), t(3)).expect("submit");
    let a = drain(&mut e);
    let p = |index| PartitionId { job, index };
    assert_eq!(synth_reserved(&a), vec![(p(0), GB), (p(1), GB)]);
    e.stage_finished(p(0), Stage::Synthesize, t(4)).expect("synth");
    assert_eq!(uploads(&drain(&mut e)), vec![(p(0), D1)]);
    e.stage_finished(p(1), Stage::Synthesize, t(5)).expect("synth");
    assert_eq!(uploads(&drain(&mut e)), vec![], "device 0 is free but has no matrices");
    e.stage_finished(p(0), Stage::Upload, t(6)).expect("upload");
    drain(&mut e);
    e.stage_finished(p(0), Stage::Ntt, t(7)).expect("ntt");
    drain(&mut e);
    e.stage_finished(p(0), Stage::Msm, t(8)).expect("msm");
    assert_eq!(uploads(&drain(&mut e)), vec![(p(1), D1)]);
    // A retry avoiding device 1: the full footprint, and device 0 takes it.
    let retry = e.submit(JobSpec::new(JobKind::PoRep, W, 1).avoiding(DeviceId(1)), t(9)).expect("submit");
    let a = drain(&mut e);
    let r = PartitionId { job: retry, index: 0 };
    assert_eq!(synth_reserved(&a), vec![(r, 4 * GB)]);
    e.stage_finished(r, Stage::Synthesize, t(10)).expect("synth");
    assert_eq!(uploads(&drain(&mut e)), vec![(r, D0)]);
}

/// The copy a waiting witness partition needs is not evicted for a later job's partition,
/// even though another device holds the parameters (without matrices): the witness partition
/// is uploaded there, and the later job gets the room after it.
#[test]
fn the_copy_a_witness_partition_needs_is_not_evicted() {
    // Device 0 (8 GB): W's parameters alone. Device 1 (12 GB): W's copy with matrices (5 GB);
    // `big` (8 GB parameters + 4 GB partition) fits device 1 only without W's copy.
    let mut e = engine_on(&[8, 12]);
    let big = CircuitId(4);
    e.register_circuit(big, CircuitProfile { params_device_bytes: 8 * GB, ..profile() }).expect("register");
    copies_then_matrices(&mut e);
    drain(&mut e);
    let job = e.submit(JobSpec::new(JobKind::PoRep, W, 1), t(3)).expect("submit");
    let later = e.submit(JobSpec::new(JobKind::PoRep, big, 1), t(3)).expect("submit");
    let a = drain(&mut e);
    let (p, q) = (PartitionId { job, index: 0 }, PartitionId { job: later, index: 0 });
    assert_eq!(synth_reserved(&a), vec![(p, GB), (q, 4 * GB)]);
    // The later job's partition is ready first: W's copy on device 1 stays (the replica on
    // device 0 has no matrices).
    e.stage_finished(q, Stage::Synthesize, t(4)).expect("synth");
    let a = drain(&mut e);
    assert!(!a.iter().any(|a| matches!(a, Action::EvictParams { circuit: W, .. })), "{a:?}");
    assert_eq!(e.matrices_at(W, D1), Some(true));
    e.stage_finished(p, Stage::Synthesize, t(5)).expect("synth");
    assert_eq!(uploads(&drain(&mut e)), vec![(p, D1)], "{}", e.describe());
    let mut a = Vec::new();
    for (i, s) in [Stage::Upload, Stage::Ntt, Stage::Msm].into_iter().enumerate() {
        e.stage_finished(p, s, t(6 + i as u64)).expect("stage");
        a.extend(drain(&mut e));
    }
    // Once the witness partition left the device, the later job may have the room.
    assert!(a.contains(&Action::EvictParams { circuit: W, from: D1, bytes: 5 * GB }), "{a:?}");
    assert!(a.contains(&Action::LoadParams { circuit: big, to: D1, bytes: 8 * GB, from_host: false }), "{a:?}");
}

/// When the only device with the matrices leaves service while a witness partition waits,
/// the partition goes to another device by the host path and its job completes.
#[test]
fn a_witness_partition_takes_the_host_path_when_its_device_retires() {
    let mut e = engine_on(&[8, 16]);
    copies_then_matrices(&mut e);
    drain(&mut e);
    let job = e.submit(JobSpec::new(JobKind::PoRep, W, 1), t(3)).expect("submit");
    let a = drain(&mut e);
    let p = PartitionId { job, index: 0 };
    assert_eq!(synth_reserved(&a), vec![(p, GB)]);
    e.retire_device(DeviceId(1), t(4)).expect("retire");
    drain(&mut e);
    e.stage_finished(p, Stage::Synthesize, t(5)).expect("synth");
    assert_eq!(uploads(&drain(&mut e)), vec![(p, D0)]);
    for (i, s) in [Stage::Upload, Stage::Ntt, Stage::Msm, Stage::Finalize].into_iter().enumerate() {
        e.stage_finished(p, s, t(6 + i as u64)).expect("stage");
        let a = drain(&mut e);
        if s == Stage::Finalize {
            assert!(a.contains(&Action::JobEnded { job, outcome: Outcome::Completed }), "{a:?}");
        }
    }
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
    run_with(s, &[], &[])
}

/// [`run`], with the circuits flagged in `witness` witness-only (host `a, b, c` left out of
/// their witness footprint) and job `i` avoiding device `avoid[i]` where set.
fn run_with(s: &Scenario, witness: &[bool], avoid: &[Option<u32>]) -> Sim {
    run_streamed(s, witness, avoid, &[])
}

/// [`run_with`], with circuit `i` streamed where `streamed[i]` is `Some((device, host))`: its
/// device copy takes `device` bytes of the device and `host` bytes of the host.
fn run_streamed(s: &Scenario, witness: &[bool], avoid: &[Option<u32>], streamed: &[Option<(u64, u64)>]) -> Sim {
    let mut model = Model::default();
    for (i, (_, m, x)) in s.circuits.iter().enumerate() {
        model.circuits.insert(CircuitId(i as u32), *m);
        if let Some(x) = x {
            model.matrices.insert(CircuitId(i as u32), *x);
        }
    }
    let mut sim = Sim::new(s.cfg.clone(), model, s.seed).expect("valid config");
    for (i, (p, _, _)) in s.circuits.iter().enumerate() {
        let mut p = *p;
        if witness.get(i).copied().unwrap_or(false) {
            p.witness_footprint = Some(Footprint { host_abc: 0, ..p.footprint });
        }
        if let Some((device, host)) = streamed.get(i).copied().flatten() {
            p.params_device_bytes = device;
            p.params_device_host_bytes = host;
        }
        sim.register(CircuitId(i as u32), p).expect("register");
    }
    let devices = s.cfg.devices.len() as u32;
    for (i, (c, prio, parts, at)) in s.jobs.iter().enumerate() {
        let mut spec = JobSpec::new(JobKind::Generic, CircuitId(*c), *parts).with_priority(*prio);
        if let Some(d) = avoid.get(i).copied().flatten() {
            spec = spec.avoiding(DeviceId(d % devices));
        }
        sim.submit_at(Nanos::from_millis(*at), spec);
    }
    let n = sim.run(2_000_000);
    assert!(n < 2_000_000, "simulation did not settle");
    sim
}

fn compact(s: &Scenario, witness: &[bool], avoid: &[Option<u32>]) -> String {
    let mut o = String::new();
    for d in &s.cfg.devices {
        o += &format!("dev {}MB w{} l{}\n", d.memory_bytes / MB, d.gpu_workers, d.kernel_lanes);
    }
    o += &format!(
        "host {}MB synth {} look {} dres {}\n",
        s.cfg.host_memory_bytes / MB,
        s.cfg.synth_workers,
        s.cfg.synth_lookahead,
        s.cfg.critical_device_reserve / MB
    );
    for (i, (p, _, x)) in s.circuits.iter().enumerate() {
        let f = p.footprint;
        o += &format!(
            "c{i}: params {} dev {}+{} host {}+{} matrices {:?} witness {:?}\n",
            p.params_device_bytes / MB,
            f.device_abc / MB,
            f.device_rest / MB,
            f.host_abc / MB,
            f.host_rest / MB,
            x.map(|x| x / MB),
            witness.get(i)
        );
    }
    for (i, j) in s.jobs.iter().enumerate() {
        o += &format!("job {i}: {j:?} avoid {:?}\n", avoid.get(i));
    }
    o
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

    /// The same mixes with some circuits witness-only and some jobs avoiding a device: no
    /// budget is exceeded, every job completes, and a partition that reserved only its
    /// witness on the host is uploaded only to a device whose copy of the circuit includes
    /// the matrices (by the sim's record of the actions), never to the device its job avoids.
    #[test]
    fn witness_partitions_go_only_where_matrices_are_reserved(
        s in scenario(),
        witness in prop::collection::vec(prop::bool::weighted(0.7), 4),
        avoid in prop::collection::vec(prop::option::weighted(0.2, 0..3u32), 25),
    ) {
        let sim = run_with(&s, &witness, &avoid);
        prop_assert!(sim.audit().is_ok(), "{:?}\n{}", sim.audit(), sim.engine().describe());
        for (job, ends) in &sim.log().ends {
            prop_assert_eq!(&ends[0].1, &Outcome::Completed, "{:?}", job);
        }
        for (at, dev) in sim.log().peak.iter() {
            let cap = sim.engine().usage(*at).map_or(0, |u| u.capacity);
            prop_assert!(*dev <= i128::from(cap), "{at:?}: peak {dev}");
        }
        let synth: BTreeMap<PartitionId, u64> =
            sim.log().starts.iter().filter(|(_, d)| d.stage == Stage::Synthesize).map(|(_, d)| (d.partition, d.reserved)).collect();
        for (d, matrices) in &sim.log().uploads {
            let (profile, _, _) = s.circuits[d.circuit.0 as usize];
            let with_witness = witness.get(d.circuit.0 as usize).copied().unwrap_or(false);
            let reserved = synth.get(&d.partition).copied();
            prop_assert!(reserved.is_some(), "{:?} uploaded unsynthesized", d.partition);
            let lean = with_witness && reserved != Some(profile.footprint.host());
            if lean {
                prop_assert_eq!(reserved, Some(profile.footprint.host_rest), "{:?}", d.partition);
                prop_assert!(*matrices, "witness partition {:?} uploaded to {:?} without matrices\n{}\n{}", d.partition, d.location, compact(&s, &witness, &avoid), sim.engine().describe());
                let ticket = (0..s.jobs.len()).find(|t| sim.job(*t) == Some(d.partition.job));
                if let Some(a) = ticket.and_then(|t| avoid.get(t).copied().flatten()) {
                    let a = Location::Device(DeviceId(a % s.cfg.devices.len() as u32));
                    prop_assert!(d.location != a, "witness partition {:?} on the avoided device", d.partition);
                }
            }
        }
    }
}

/// Streamed circuits: a device copy of `1..=8` MiB on the device and `8..=300` MiB of bases
/// on the host (often more than a device's budget, sometimes more than the host's).
fn streamed() -> impl Strategy<Value = Vec<Option<(u64, u64)>>> {
    prop::collection::vec(prop::option::weighted(0.6, (1..=8u64, 8..=300u64).prop_map(|(d, h)| (d * MB, h * MB))), 4)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, max_shrink_iters: 2000, ..ProptestConfig::default() })]

    /// Random mixes with streamed copies (small on the device, large on the host), matrices,
    /// witness-only circuits, avoided devices and parameters over the budgets: neither the
    /// host nor any device budget is ever exceeded (the sim's ledger counts a device copy's
    /// host bytes from its load to its eviction; the engine's recount checks its own
    /// reservations after every input), every accepted job completes (no deadlock), and at
    /// the end the host holds exactly the warm copies and the streamed copies' bases.
    #[test]
    fn streamed_copies_never_exceed_a_budget_nor_deadlock(
        s in scenario(),
        streamed in streamed(),
        witness in prop::collection::vec(prop::bool::weighted(0.3), 4),
        avoid in prop::collection::vec(prop::option::weighted(0.1, 0..3u32), 25),
    ) {
        let sim = run_streamed(&s, &witness, &avoid, &streamed);
        prop_assert!(sim.audit().is_ok(), "{:?}\n{}\n{}", sim.audit(), compact(&s, &witness, &avoid), sim.engine().describe());
        for (job, ends) in &sim.log().ends {
            prop_assert_eq!(&ends[0].1, &Outcome::Completed, "{:?}\n{}", job, sim.engine().describe());
        }
        for (at, peak) in sim.log().peak.iter() {
            let cap = sim.engine().usage(*at).map_or(0, |u| u.capacity);
            prop_assert!(*peak <= i128::from(cap), "{at:?}: peak {peak}");
        }
        // A job is refused at once only when one partition and a copy can never fit (the host
        // less what is set aside for loads' queries).
        let aside = s.circuits.iter().map(|(p, _, _)| p.load_host_bytes).max().unwrap_or(0);
        let host = i128::from(s.cfg.host_memory_bytes - aside);
        for (ticket, _) in &sim.log().rejected {
            let (c, prio, _, _) = s.jobs[*ticket];
            let reserve = if prio == cuzk_core::engine::Priority::Critical { 0 } else { s.cfg.critical_device_reserve };
            let (p, _, _) = s.circuits[c as usize];
            let h = streamed.get(c as usize).copied().flatten().map_or(0, |(_, h)| h);
            let dev = streamed.get(c as usize).copied().flatten().map_or(p.params_device_bytes, |(d, _)| d);
            let dev_cap = s.cfg.devices.iter().map(|d| d.memory_bytes - reserve).max().unwrap_or(0);
            prop_assert!(i128::from(p.footprint.host() + h) > host || dev + p.footprint.device() > dev_cap, "ticket {ticket} refused");
        }
    }
}

/// A streamed circuit whose parameters are far larger than the device budget is placed and
/// proved: its copy reserves its small device side and its bases on the host, and eviction
/// frees both.
#[test]
fn a_streamed_copy_reserves_host_memory_and_frees_it() {
    let dev = DeviceConfig { memory_bytes: 10 * GB, gpu_workers: 1, kernel_lanes: 1, fallback: false };
    let mut cfg = EngineConfig::new(1, 64 * GB, vec![dev]);
    cfg.finalize_workers = 1;
    let mut e = Engine::new(cfg, Nanos::ZERO).expect("valid config");
    let streamed = CircuitProfile { params_host_bytes: 0, params_device_bytes: GB, params_device_host_bytes: 47 * GB, ..profile() };
    e.register_circuit(A, streamed).expect("register");
    let job = e.submit(JobSpec::new(JobKind::Generic, A, 1), t(0)).expect("submit");
    let a = drain(&mut e);
    // Synthesis starts once the copy, and with it the host room for its bases, is on its way.
    assert!(a.contains(&Action::LoadParams { circuit: A, to: D0, bytes: GB, from_host: false }), "{a:?}");
    assert!(a.iter().any(|a| matches!(a, Action::Start(d) if d.stage == Stage::Synthesize)), "{a:?}");
    assert_eq!(e.usage(Location::Host).map(|u| u.used), Some(47 * GB + 4 * GB));
    e.params_loaded(A, D0, t(1)).expect("loaded");
    drain(&mut e);
    // Evicted while its partition is under way, the copy's bases stay reserved for its reload.
    e.evict(A, D0, t(2)).expect("evict");
    assert_eq!(drain(&mut e), vec![Action::EvictParams { circuit: A, from: D0, bytes: GB }]);
    assert_eq!(e.kept_host_bytes(A), Some(47 * GB));
    assert_eq!(e.usage(Location::Host).map(|u| u.used), Some(47 * GB + 4 * GB));
    let p = PartitionId { job, index: 0 };
    e.stage_finished(p, Stage::Synthesize, t(3)).expect("synthesized");
    let a = drain(&mut e);
    assert!(a.contains(&Action::LoadParams { circuit: A, to: D0, bytes: GB, from_host: false }), "{a:?}");
    assert_eq!(e.kept_host_bytes(A), Some(0));
    e.params_loaded(A, D0, t(4)).expect("loaded");
    drain(&mut e);
    for (i, stage) in Stage::ALL.into_iter().enumerate().skip(1) {
        e.stage_finished(p, stage, t(5 + i as u64)).expect("stage");
        drain(&mut e);
    }
    assert_eq!(e.usage(Location::Host).map(|u| u.used), Some(47 * GB));
    e.evict(A, D0, t(20)).expect("evict");
    drain(&mut e);
    assert_eq!(e.usage(Location::Host).map(|u| u.used), Some(0));
    assert_eq!(used(&e), 0);
}

/// A job of a streamed circuit whose bases and one partition exceed the host budget is
/// refused at once.
#[test]
fn a_streamed_copy_too_large_for_the_host_is_refused() {
    let mut e = engine(10);
    let c = CircuitId(3);
    e.register_circuit(c, CircuitProfile { params_device_bytes: GB, params_device_host_bytes: 61 * GB, ..profile() }).expect("register");
    let r = e.submit(JobSpec::new(JobKind::Generic, c, 1), t(0));
    assert!(matches!(r, Err(cuzk_core::engine::EngineError::TooLarge { location: Location::Host, .. })), "{r:?}");
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
        params_device_host_bytes: 0,
        footprint: Footprint { host_abc: 30 * MB, host_rest: 10 * MB, device_abc: 30 * MB, device_rest: 10 * MB },
        witness_footprint: None,
        load_host_bytes: 0,
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
