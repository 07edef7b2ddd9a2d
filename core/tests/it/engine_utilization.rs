//! Simulated utilization: with synthesis capacity above GPU demand the devices stay busy,
//! the reported gaps account for every idle nanosecond, and a slow finalize step does not
//! touch the GPU schedule.

use cuzk_core::engine::sim::{CircuitModel, Dur, Model, Sim};
use cuzk_core::engine::{
    CircuitId, CircuitProfile, DeviceConfig, DeviceId, DeviceReport, EngineConfig, Footprint, IdleCause, JobKind, JobSpec, Location, Nanos, Outcome, Span,
    SpanKind, Stage,
};

const GB: u64 = 1 << 30;
const POREP: CircuitId = CircuitId(0);

fn ms(v: u64) -> Nanos {
    Nanos::from_millis(v)
}

/// A PoRep-like partition: 4 s synthesis, ~1 s on the GPU (upload overlapped by a second
/// worker), 12 GiB of a/b/c on each side.
fn porep(finalize: Nanos) -> (CircuitProfile, CircuitModel) {
    let profile = CircuitProfile {
        params_host_bytes: 0,
        params_device_bytes: 30 * GB,
        params_device_host_bytes: 0,
        footprint: Footprint { host_abc: 12 * GB, host_rest: GB, device_abc: 12 * GB, device_rest: 2 * GB },
        witness_footprint: None,
        load_host_bytes: 0,
    };
    let model = CircuitModel {
        stages: [
            Dur::spread(ms(4000), ms(400)),
            Dur::spread(ms(100), ms(20)),
            Dur::spread(ms(300), ms(30)),
            Dur::spread(ms(600), ms(60)),
            Dur::fixed(finalize),
        ],
        load_device: Dur::fixed(ms(2000)),
        load_host: Dur::fixed(ms(1000)),
    };
    (profile, model)
}

struct Outcomes {
    sim: Sim,
    reports: Vec<DeviceReport>,
}

fn simulate(devices: usize, synth_workers: u32, finalize: Nanos, finalize_workers: u32, jobs: u32) -> Outcomes {
    let dev = DeviceConfig { memory_bytes: 80 * GB, gpu_workers: 2, kernel_lanes: 1, fallback: false };
    let mut cfg = EngineConfig::new(synth_workers, 512 * GB, vec![dev; devices]);
    cfg.finalize_workers = finalize_workers;
    let (profile, m) = porep(finalize);
    let mut model = Model::default();
    model.circuits.insert(POREP, m);
    let mut sim = Sim::new(cfg, model, 7).expect("config");
    sim.check_each_step = false;
    sim.register(POREP, profile).expect("register");
    for _ in 0..jobs {
        sim.submit_at(Nanos::ZERO, JobSpec::new(JobKind::PoRep, POREP, 10));
    }
    sim.run(10_000_000);
    sim.audit().expect("clean run");
    assert!(sim.log().ends.values().all(|e| e[0].1 == Outcome::Completed));
    // Steady state: from the first GPU stage to the last, per device.
    let reports = (0..devices as u32)
        .map(|d| {
            let gpu = gpu_spans(&sim, d);
            let from = gpu.iter().map(|s| s.start).min().expect("device used");
            let to = gpu.iter().map(|s| s.end).max().expect("device used");
            sim.engine().device_report(DeviceId(d), from, to).expect("device")
        })
        .collect();
    Outcomes { sim, reports }
}

fn gpu_spans(sim: &Sim, d: u32) -> Vec<Span> {
    sim.engine().timeline().spans().filter(|s| s.location == Location::Device(DeviceId(d)) && matches!(s.kind, SpanKind::Stage(_))).copied().collect()
}

fn describe(r: &DeviceReport) -> String {
    let causes: Vec<String> = IdleCause::ALL.iter().filter(|c| r.idle_by(**c) > Nanos::ZERO).map(|c| format!("{} {}", c.name(), r.idle_by(*c))).collect();
    format!("device {}: wall {} busy {} ({:.4}%) idle {} [{}]", r.device.0, r.wall(), r.busy, 100.0 * r.busy_fraction(), r.idle(), causes.join(", "))
}

#[test]
fn gpu_stays_busy_when_synthesis_keeps_up() {
    for devices in [1, 2] {
        // 10 synthesis workers per device: 2.4 partitions/s per device against ~1/s of GPU.
        let o = simulate(devices, 10 * devices as u32, ms(50), 2, 20);
        for r in &o.reports {
            println!("{} devices, steady state: {}", devices, describe(r));
            assert!(r.busy_fraction() >= 0.99, "{}", describe(r));
            assert_eq!(r.busy + r.idle(), r.wall(), "gaps account for all idle time");
        }
        // The whole run, ramp-up included, is accounted for too.
        let end = o.sim.now();
        for d in 0..devices as u32 {
            let all = o.sim.engine().device_report(DeviceId(d), Nanos::ZERO, end).expect("device");
            println!("{} devices, whole run:    {}", devices, describe(&all));
            assert_eq!(all.busy + all.idle(), all.wall());
            assert!(all.idle_by(IdleCause::Synthesis) >= ms(4000), "ramp-up waits for the first synthesis");
        }
    }
}

#[test]
fn slow_finalize_leaves_gpu_time_unchanged() {
    let fast = simulate(1, 10, ms(50), 1, 12);
    let slow = simulate(1, 10, ms(500), 1, 12);
    println!("finalize 50 ms:  {}", describe(&fast.reports[0]));
    println!("finalize 500 ms: {}", describe(&slow.reports[0]));
    assert_eq!(gpu_spans(&fast.sim, 0), gpu_spans(&slow.sim, 0), "identical GPU schedule");
    assert_eq!(fast.reports[0].busy, slow.reports[0].busy);
    assert_eq!(fast.reports[0].wall(), slow.reports[0].wall());
    assert!(slow.reports[0].busy_fraction() >= 0.99, "{}", describe(&slow.reports[0]));
    // The finalize work did happen, 500 ms each, off the GPU path.
    let fin: Vec<_> = slow.sim.engine().timeline().spans().filter(|s| s.kind == SpanKind::Stage(Stage::Finalize)).collect();
    assert!(fin.iter().all(|s| s.end - s.start == ms(500) && s.location == Location::Host));
    assert_eq!(fin.len(), 120);
}

#[test]
fn starved_gpu_reports_why() {
    // 2 synthesis workers: ~0.48 partitions/s against ~1/s of GPU.
    let o = simulate(1, 2, ms(50), 1, 3);
    let r = &o.reports[0];
    println!("synthesis-bound: {}", describe(r));
    assert!(r.busy_fraction() < 0.6);
    assert_eq!(r.busy + r.idle(), r.wall());
    assert!(r.idle_by(IdleCause::Synthesis).0 * 10 >= r.idle().0 * 9, "the gaps are blamed on synthesis");
}

#[test]
fn simulation_is_deterministic() {
    let a = simulate(2, 8, ms(50), 1, 4);
    let b = simulate(2, 8, ms(50), 1, 4);
    assert_eq!(a.sim.log().starts, b.sim.log().starts);
    assert_eq!(a.sim.engine().timeline().chrome_trace(), b.sim.engine().timeline().chrome_trace());
}
