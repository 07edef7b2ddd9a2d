//! Builds the [`Snapshot`] the status endpoints serve, from what the driver shows
//! ([`DriverView`]) for the length of one command.

use cuzk_core::engine::{DeviceId, Location, Nanos, Presence, Priority, SpanKind, Tier};

use crate::names::priority_name;
use crate::server::driver::{DriverError, DriverHandle, DriverView};
use crate::server::status::{
    Admission, Budget, CopyState, DeviceStatus, JobCounts, KindStatus, MatricesEntry, Memory, ParamsEntry, ParamsTier, QueueDepth, Recovery, Snapshot,
    SpanView, StageTotal, Track,
};

/// How far back the timeline on the status page reaches.
pub const TIMELINE_WINDOW: Nanos = Nanos::from_secs(120);
/// Most finished spans shown per track.
pub const TIMELINE_SPANS: usize = 2_000;

fn ms(t: Nanos) -> f64 {
    t.0 as f64 / 1e6
}

fn presence(p: Option<Presence>) -> CopyState {
    match p {
        Some(Presence::Resident) => CopyState::Resident,
        Some(Presence::Loading) => CopyState::Loading,
        Some(Presence::Absent) | None => CopyState::Absent,
    }
}

/// Live jobs not started yet, and those with a stage started.
fn pending_running<'a>(jobs: impl Iterator<Item = cuzk_core::jobs::LiveJob<'a>>) -> (u32, u32) {
    jobs.fold((0, 0), |(p, r), j| if j.started { (p, r + 1) } else { (p + 1, r) })
}

/// The kinds the status lists, as `crate::names::kind_name` names them.
const KINDS: [&str; 5] = ["porep-c2", "snap-update", "window-post", "winning-post", "generic"];

impl DriverHandle {
    /// The daemon's state now.
    pub async fn snapshot(&self) -> Result<Snapshot, DriverError> {
        self.inspect(build).await
    }
}

/// The snapshot of what `v` shows.
fn build(v: &DriverView<'_>) -> Snapshot {
    let now = v.now;
    let from = now.saturating_sub(TIMELINE_WINDOW);
    let name = |c| v.registry.entry(c).map(|r| r.spec.id()).unwrap_or_default();
    let n_dev = v.device_names.len();
    let engine = v.jobs.engine();
    // Finished spans of the window (the newest per track), then the stages and loads under way.
    // The host's track first, then each device's.
    let mut tracks: Vec<Vec<SpanView>> = vec![Vec::new(); n_dev + 1];
    let track = |at: Location| match at {
        Location::Host => 0,
        Location::Device(d) => d.0 as usize + 1,
    };
    let view = |job, partition, stage: String, slot, circuit, start: Nanos, end: Option<Nanos>, failed| SpanView {
        job,
        partition,
        stage,
        slot,
        circuit: name(circuit),
        start_ms: ms(start),
        end_ms: end.map(ms),
        failed,
    };
    for s in engine.timeline().spans().filter(|s| s.end >= from) {
        let (job, partition) = s.partition.map_or((0, 0), |p| (p.job.0, p.index));
        let stage = match s.kind {
            SpanKind::Stage(st) => st.name().to_string(),
            SpanKind::LoadParams => "load-params".into(),
        };
        if let Some(t) = tracks.get_mut(track(s.location)) {
            t.push(view(job, partition, stage, s.slot, s.circuit, s.start, Some(s.end), s.failed));
        }
    }
    for t in &mut tracks {
        let extra = t.len().saturating_sub(TIMELINE_SPANS);
        t.drain(..extra);
    }
    let running: Vec<_> = v.jobs.running().collect();
    for (p, r) in &running {
        if let Some(t) = tracks.get_mut(track(r.location)) {
            t.push(view(p.job.0, p.index, r.stage.name().into(), r.slot, r.circuit, r.start, None, false));
        }
    }
    for &((c, at), since) in &v.loading {
        if let Some(t) = tracks.get_mut(track(at)) {
            t.push(view(0, 0, "load-params".into(), 0, c, since, None, false));
        }
    }
    let host = Track { spans: tracks.remove(0) };
    let dev_spans = tracks;
    let budget =
        |l| engine.usage(l).map_or(Budget::default(), |u| Budget { used: u.used, capacity: u.capacity, loads_set_aside: u.set_aside, in_loads: u.in_loads });
    let devices = dev_spans
        .into_iter()
        .enumerate()
        .map(|(d, spans)| {
            let id = DeviceId(d as u32);
            let busy = engine.device_report(id, Nanos::ZERO, now).map_or(Nanos::ZERO, |r| r.busy);
            let active = running.iter().filter(|(_, r)| r.location == Location::Device(id)).count() as u32;
            let current = running
                .iter()
                .filter(|(_, r)| r.location == Location::Device(id))
                .min_by_key(|(_, r)| r.start)
                .and_then(|(p, _)| v.jobs.partition(*p))
                .and_then(|(job, _)| Some((v.jobs.job_id(job)?, v.jobs.live().find(|j| j.job == job)?.kind)));
            let health = v.jobs.health().get(d).cloned().unwrap_or_default();
            DeviceStatus {
                id: d as u32,
                ordinal: v.cfg.ordinals.get(d).copied().unwrap_or(d as u32),
                name: v.device_names.get(d).cloned().unwrap_or_default(),
                busy_s: busy.as_secs_f64(),
                busy_fraction: if now.0 == 0 { 0.0 } else { busy.0 as f64 / now.0 as f64 },
                memory: budget(Location::Device(id)),
                active,
                current_job: current.as_ref().map(|c| c.0.clone()).unwrap_or_default(),
                current_kind: current.map(|c| c.1.to_string()).unwrap_or_default(),
                in_service: health.in_service(),
                fallback: v.cfg.engine.devices.get(d).is_some_and(|c| c.fallback),
                retired_because: health.retired.clone().unwrap_or_default(),
                faults: health.faults.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
                spans,
            }
        })
        .collect();
    let queues = [Priority::Critical, Priority::High, Priority::Normal, Priority::Low]
        .into_iter()
        .map(|p| {
            let (pending, running) = pending_running(v.jobs.live().filter(|j| j.priority == p));
            QueueDepth { priority: priority_name(p).into(), pending, running }
        })
        .collect();
    let stats = v.jobs.stats();
    let kinds = KINDS
        .into_iter()
        .map(|name| {
            let (pending, running) = pending_running(v.jobs.live().filter(|j| j.kind == name));
            let t = stats.kinds.get(name).copied().unwrap_or_default();
            KindStatus { kind: name.into(), pending, running, completed: t.completed, failed: t.failed, completed_seconds: t.total.as_secs_f64() }
        })
        .collect();
    let params = v
        .registry
        .iter()
        .map(|(id, r)| ParamsEntry {
            circuit: r.spec.id(),
            tier: match engine.tier(id) {
                Some(Tier::Hot) => ParamsTier::Hot,
                Some(Tier::Warm) => ParamsTier::Warm,
                _ => ParamsTier::Cold,
            },
            host: presence(engine.presence(id, Location::Host)),
            devices: (0..n_dev).map(|d| presence(engine.presence(id, Location::Device(DeviceId(d as u32))))).collect(),
            bytes: r.file_bytes,
            ref_count: v.jobs.live().filter(|j| j.circuit == id).count() as u32,
        })
        .collect();
    let stages = cuzk_core::engine::Stage::ALL
        .iter()
        .zip(stats.stages)
        .map(|(s, t)| StageTotal { stage: s.name().into(), count: t.count, seconds: t.time.as_secs_f64() })
        .collect();
    let mut latency: Vec<_> = v.latency.values().cloned().collect();
    latency.sort_by(|a, b| a.circuit.cmp(&b.circuit));
    Snapshot {
        version: env!("CARGO_PKG_VERSION").into(),
        backend: v.device_names.first().cloned().unwrap_or_default(),
        uptime_s: v.uptime.as_secs_f64(),
        now_ms: ms(now),
        draining: v.jobs.shutting_down().is_some(),
        jobs: JobCounts {
            submitted: stats.submitted,
            completed: stats.completed,
            failed: stats.failed,
            cancelled: stats.cancelled,
            live: v.jobs.live_count() as u64,
        },
        queues,
        kinds,
        memory: Memory { host: budget(Location::Host), devices: (0..n_dev).map(|d| budget(Location::Device(DeviceId(d as u32)))).collect() },
        params,
        host,
        devices,
        stages,
        latency,
        recovery: Recovery {
            retried: stats.retried.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            self_check_failures: stats.self_check_failures,
            queue_refusals: stats.queue_refusals,
            queue_limit: v.cfg.jobs.queue_limit,
        },
        admission: Admission {
            paused: v.jobs.held() > 0,
            waiting_synthesis: v.jobs.held() as u32,
            mem_available_bytes: v.jobs.mem_available().or_else(|| crate::meminfo::mem_available(&v.cfg.meminfo)),
            margin_bytes: v.cfg.jobs.memory_margin,
        },
        rss_bytes: crate::meminfo::own_rss(),
        matrices: v
            .matrices
            .iter()
            .map(|m| {
                let id = v.registry.iter().find(|(_, r)| r.spec.id() == m.circuit).map(|(id, _)| id);
                let reserved = |d: usize| {
                    let id = id?;
                    let with = engine.matrices_at(id, Location::Device(DeviceId(d as u32)))?;
                    with.then(|| engine.matrices_bytes(id)).flatten()
                };
                let reserved_bytes = (0..n_dev).map(|d| reserved(d).unwrap_or(0)).collect();
                let budget_needed = id.and_then(|id| engine.matrices_shortfall(id)).map_or(0, |s| s.budget_needed());
                MatricesEntry {
                    circuit: m.circuit.clone(),
                    entries: m.entries,
                    host_bytes: m.host_bytes,
                    device_bytes: m.device_bytes.clone(),
                    reserved_bytes,
                    budget_needed,
                }
            })
            .collect(),
        listeners: Vec::new(),
        requests: Default::default(),
        journal: None,
    }
}
