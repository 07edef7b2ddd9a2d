//! The engine's own cost: how long the state machine takes per stage transition, per
//! partition, and per action, with the work itself taking no time (every started stage is
//! reported finished in FIFO order, 1 µs of virtual time later).
//!
//! `cargo bench -p cuzk-core --bench engine`

use std::collections::VecDeque;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use cuzk_core::engine::{
    Action, CircuitId, CircuitProfile, DeviceConfig, Engine, EngineConfig, Footprint, JobKind, JobSpec, Nanos, Priority,
};

const GB: u64 = 1 << 30;
const PARTS: u32 = 10;

struct Setup {
    devices: usize,
    jobs: u32,
    circuits: u32,
    timeline: bool,
}

fn engine(s: &Setup) -> Engine {
    let dev = DeviceConfig { memory_bytes: 80 * GB, gpu_workers: 2, kernel_lanes: 1 };
    let mut cfg = EngineConfig::new(16, 1 << 50, vec![dev; s.devices]);
    if !s.timeline {
        cfg.timeline_capacity = 0;
    }
    let mut e = Engine::new(cfg, Nanos::ZERO).expect("config");
    for c in 0..s.circuits {
        let profile = CircuitProfile {
            params_host_bytes: 0,
            params_device_bytes: 20 * GB,
            footprint: Footprint { host_abc: 12 * GB, host_rest: GB, device_abc: 12 * GB, device_rest: 2 * GB },
        };
        e.register_circuit(CircuitId(c), profile).expect("register");
    }
    e
}

/// Submits every job, then completes work FIFO until the engine is quiescent. Returns the
/// number of actions drained.
fn drive(e: &mut Engine, s: &Setup) -> u64 {
    let prios = [Priority::Low, Priority::Normal, Priority::High, Priority::Critical];
    let mut now = Nanos(0);
    let mut inflight = VecDeque::new();
    let mut actions = 0;
    for j in 0..s.jobs {
        let spec = JobSpec::new(JobKind::PoRep, CircuitId(j % s.circuits), PARTS).with_priority(prios[j as usize % 4]);
        e.submit(spec, now).expect("submit");
        while let Some(a) = e.poll_action() {
            actions += 1;
            inflight.push_back(a);
        }
    }
    while let Some(a) = inflight.pop_front() {
        now.0 += 1_000;
        let r = match a {
            Action::Start(d) => e.stage_finished(d.partition, d.stage, now),
            Action::LoadParams { circuit, to, .. } => e.params_loaded(circuit, to, now),
            _ => continue,
        };
        r.expect("report");
        while let Some(a) = e.poll_action() {
            actions += 1;
            inflight.push_back(a);
        }
    }
    assert!(e.is_quiescent());
    actions
}

fn bench(c: &mut Criterion) {
    let cases = [
        ("1gpu_100jobs", Setup { devices: 1, jobs: 100, circuits: 1, timeline: true }),
        ("1gpu_100jobs_no_timeline", Setup { devices: 1, jobs: 100, circuits: 1, timeline: false }),
        ("4gpu_1000jobs_3circuits", Setup { devices: 4, jobs: 1000, circuits: 3, timeline: true }),
    ];
    for (name, s) in &cases {
        let mut probe = engine(s);
        let actions = drive(&mut probe, s);
        let partitions = u64::from(s.jobs) * u64::from(PARTS);
        let transitions = partitions * 5;
        eprintln!("{name}: {partitions} partitions, {transitions} stage transitions, {actions} actions per run");
        let mut g = c.benchmark_group(format!("engine/{name}"));
        g.sample_size(20);
        for (unit, n) in [("transitions", transitions), ("actions", actions)] {
            g.throughput(Throughput::Elements(n));
            g.bench_function(unit, |b| {
                b.iter_batched(|| engine(s), |mut e| black_box(drive(&mut e, s)), BatchSize::LargeInput)
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
