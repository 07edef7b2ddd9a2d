//! The engine's own cost: how long the state machine takes per stage transition, per
//! partition, and per action, with the work itself taking no time (every started stage is
//! reported finished in FIFO order, 1 µs of virtual time later).
//!
//! Time is this thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), not wall time, so that other
//! processes on a shared machine do not inflate it; the engine is single-threaded and does
//! no I/O, so the two agree on a quiet machine.
//!
//! `cargo bench -p cuzk-core --bench engine`

use std::collections::VecDeque;
use std::hint::black_box;

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use cuzk_core::engine::{Action, CircuitId, CircuitProfile, DeviceConfig, Engine, EngineConfig, Footprint, JobKind, JobSpec, Nanos, Priority};

const GB: u64 = 1 << 30;
const PARTS: u32 = 10;

struct Setup {
    devices: usize,
    jobs: u32,
    circuits: u32,
    timeline: bool,
}

fn engine(s: &Setup) -> Engine {
    let dev = DeviceConfig { memory_bytes: 80 * GB, gpu_workers: 2, kernel_lanes: 1, fallback: false };
    let mut cfg = EngineConfig::new(16, 1 << 50, vec![dev; s.devices]);
    if !s.timeline {
        cfg.timeline_capacity = 0;
    }
    let mut e = Engine::new(cfg, Nanos::ZERO).expect("config");
    for c in 0..s.circuits {
        let profile = CircuitProfile {
            params_host_bytes: 0,
            params_device_bytes: 20 * GB,
            params_device_host_bytes: 0,
            footprint: Footprint { host_abc: 12 * GB, host_rest: GB, device_abc: 12 * GB, device_rest: 2 * GB },
            witness_footprint: None,
            load_host_bytes: 0,
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

/// CPU time of the calling thread, in nanoseconds.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant libc knows.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Criterion measurement: thread CPU time.
struct ThreadCpu;

struct NanosFormatter;

impl ValueFormatter for NanosFormatter {
    fn scale_values(&self, typical: f64, values: &mut [f64]) -> &'static str {
        let (div, unit) = match typical {
            t if t < 1e3 => (1.0, "ns"),
            t if t < 1e6 => (1e3, "µs"),
            t if t < 1e9 => (1e6, "ms"),
            _ => (1e9, "s"),
        };
        values.iter_mut().for_each(|v| *v /= div);
        unit
    }

    fn scale_throughputs(&self, typical: f64, t: &Throughput, values: &mut [f64]) -> &'static str {
        let n = match t {
            Throughput::Elements(n) | Throughput::Bytes(n) | Throughput::BytesDecimal(n) => *n as f64,
        };
        // values are ns per iteration; turn them into elements per second.
        values.iter_mut().for_each(|v| *v = n * 1e9 / *v);
        let _ = typical;
        "elem/s"
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

impl Measurement for ThreadCpu {
    type Intermediate = u64;
    type Value = u64;

    fn start(&self) -> u64 {
        thread_cpu_ns()
    }

    fn end(&self, start: u64) -> u64 {
        thread_cpu_ns().saturating_sub(start)
    }

    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }

    fn zero(&self) -> u64 {
        0
    }

    fn to_f64(&self, v: &u64) -> f64 {
        *v as f64
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        &NanosFormatter
    }
}

fn bench(c: &mut Criterion<ThreadCpu>) {
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
            g.bench_function(unit, |b| b.iter_batched(|| engine(s), |mut e| black_box(drive(&mut e, s)), BatchSize::LargeInput));
        }
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(ThreadCpu);
    targets = bench
}
criterion_main!(benches);
