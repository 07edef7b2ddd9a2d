//! Property test: a CRITICAL job submitted into a full NORMAL backlog waits for at most one
//! running synthesis to get a CPU worker, and once it is synthesized (and its parameters are
//! resident) it starts its GPU work within one partition's GPU time; at once when the device
//! has room for it beside every busy worker's partition (then it does not wait for a GPU
//! worker).

use cuzk_core::engine::sim::{CircuitModel, Dur, Model, Sim};
use cuzk_core::engine::{CircuitId, CircuitProfile, DeviceConfig, EngineConfig, Footprint, JobKind, JobSpec, Location, Nanos, Outcome, SpanKind, Stage};
use proptest::prelude::*;

const MB: u64 = 1 << 20;
const CRIT: CircuitId = CircuitId(100);

fn dur(max_base_ms: u64) -> impl Strategy<Value = Dur> {
    (1..=max_base_ms, 0..=max_base_ms / 2 + 1).prop_map(|(b, j)| Dur::spread(Nanos::from_millis(b), Nanos::from_millis(j)))
}

fn model() -> impl Strategy<Value = CircuitModel> {
    ([dur(60), dur(10), dur(20), dur(30), dur(40)], dur(30)).prop_map(|(stages, load)| CircuitModel { stages, load_device: load, load_host: load })
}

fn profile() -> impl Strategy<Value = CircuitProfile> {
    (1..=32u64, 1..=32u64, 0..=16u64, 1..=32u64, 0..=16u64).prop_map(|(p, ha, hr, da, dr)| CircuitProfile {
        params_host_bytes: p * MB,
        params_device_bytes: p * MB,
        params_device_host_bytes: 0,
        footprint: Footprint { host_abc: ha * MB, host_rest: hr * MB, device_abc: da * MB, device_rest: dr * MB },
        witness_footprint: None,
        load_host_bytes: 0,
    })
}

#[derive(Debug, Clone)]
struct Case {
    devices: usize,
    workers: u32,
    lanes: u32,
    synth: u32,
    finalize: u32,
    host_slack_mb: u64,
    normal: Vec<(CircuitProfile, CircuitModel)>,
    critical: (CircuitProfile, CircuitModel),
    backlog: Vec<(u32, u32)>,
    submit_ms: u64,
    preload: bool,
    /// Device memory for one more partition than there are workers.
    room: bool,
    seed: u64,
}

fn case() -> impl Strategy<Value = Case> {
    let normal = prop::collection::vec((profile(), model()), 1..=2);
    let backlog = prop::collection::vec((0..2u32, 1..=10u32), 3..=12);
    (
        (1..=2usize, 1..=3u32, 1..=2u32, 1..=4u32, 1..=2u32, 0..=256u64),
        normal,
        (profile(), model()),
        backlog,
        (0..=600u64, any::<bool>(), any::<bool>(), any::<u64>()),
    )
        .prop_map(|((devices, workers, lanes, synth, finalize, host_slack_mb), normal, critical, backlog, (submit_ms, preload, room, seed))| Case {
            devices,
            workers,
            lanes,
            synth,
            finalize,
            host_slack_mb,
            normal,
            critical,
            backlog,
            submit_ms,
            preload,
            room,
            seed,
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 5000, max_shrink_iters: 2000, ..ProptestConfig::default() })]

    #[test]
    fn critical_jumps_a_full_normal_backlog(c in case()) {
        let all: Vec<_> = c.normal.iter().chain(std::iter::once(&c.critical)).collect();
        // Device memory for every parameter set plus every worker's largest partition: the
        // bound is about scheduling, not about waiting for memory.
        let params: u64 = all.iter().map(|(p, _)| p.params_device_bytes).sum();
        let biggest = all.iter().map(|(p, _)| p.footprint.device()).max().unwrap_or(0);
        let partitions = u64::from(c.workers) + u64::from(c.room);
        let dev = DeviceConfig { memory_bytes: params + partitions * biggest, gpu_workers: c.workers, kernel_lanes: c.lanes, fallback: false };
        // Host memory: one normal partition plus slack, and a reserve for the critical one.
        let normal_host = c.normal.iter().map(|(p, _)| p.footprint.host()).max().unwrap_or(0);
        let reserve = c.critical.0.footprint.host();
        let mut cfg = EngineConfig::new(c.synth, normal_host + c.host_slack_mb * MB + reserve, vec![dev; c.devices]);
        cfg.finalize_workers = c.finalize;
        cfg.critical_host_reserve = reserve;

        let mut model = Model::default();
        let mut sim_profiles = Vec::new();
        for (i, (p, m)) in c.normal.iter().enumerate() {
            model.circuits.insert(CircuitId(i as u32), *m);
            sim_profiles.push((CircuitId(i as u32), *p));
        }
        model.circuits.insert(CRIT, c.critical.1);
        sim_profiles.push((CRIT, c.critical.0));
        let mut sim = Sim::new(cfg, model.clone(), c.seed).expect("config");
        for (id, p) in sim_profiles {
            sim.register(id, p).expect("register");
        }
        if c.preload {
            sim.preload_at(Nanos::ZERO, CRIT, Location::Device(cuzk_core::engine::DeviceId(0)));
        }
        for (circuit, parts) in &c.backlog {
            let circuit = CircuitId(circuit % c.normal.len() as u32);
            sim.submit_at(Nanos::ZERO, JobSpec::new(JobKind::PoRep, circuit, *parts));
        }
        let t = Nanos::from_millis(c.submit_ms);
        let ticket = sim.submit_at(t, JobSpec::new(JobKind::WinningPost, CRIT, 1));
        sim.run(1_000_000);
        prop_assert!(sim.audit().is_ok(), "{:?}", sim.audit());
        let job = sim.job(ticket).expect("accepted");
        prop_assert_eq!(&sim.log().ends[&job][0].1, &Outcome::Completed);

        let max_synth = model.circuits.values().map(|m| m.stage(Stage::Synthesize).max()).max().unwrap_or_default();
        let max_gpu = model.circuits.values().map(CircuitModel::max_gpu).max().unwrap_or_default();
        let spans: Vec<_> = sim.engine().timeline().spans().copied().collect();
        let stage = |st: Stage| spans.iter().find(|s| s.kind == SpanKind::Stage(st) && s.partition.map(|p| p.job) == Some(job)).copied();
        let synth = stage(Stage::Synthesize).expect("synthesized");
        let upload = stage(Stage::Upload).expect("uploaded");
        let loaded = spans
            .iter()
            .filter(|s| s.kind == SpanKind::LoadParams && s.circuit == CRIT && !s.failed)
            .map(|s| s.end)
            .min()
            .unwrap_or(Nanos::ZERO);
        let record = sim.engine().timeline().job(job).copied().expect("record");
        prop_assert!(synth.start - t <= max_synth, "waited {} for a synthesis worker (max synthesis {})", synth.start - t, max_synth);
        prop_assert_eq!(record.queue_wait(), Some(synth.start - t));
        let ready = synth.end.max(loaded);
        prop_assert!(
            upload.start - ready <= max_gpu,
            "GPU start {} after ready {} (synthesized {}, params {}); one partition's GPU time is at most {}",
            upload.start, ready, synth.end, loaded, max_gpu
        );
        if c.room {
            prop_assert_eq!(upload.start, ready, "with room on the device the upload starts when the partition is ready");
        }
    }
}
