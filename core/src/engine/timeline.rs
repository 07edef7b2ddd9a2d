//! What happened when: stage spans, device busy/idle intervals with causes, job records, and
//! reports and a Chrome trace-event export derived from them.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;

use crate::prover::Stage;

use super::types::{CircuitId, DeviceId, JobId, Location, Nanos, PartitionId, Priority};

/// What a span measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpanKind {
    /// A stage of a partition.
    Stage(Stage),
    /// Loading a circuit's parameters.
    LoadParams,
}

/// One finished piece of work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// What ran.
    pub kind: SpanKind,
    /// The partition (none for parameter loads).
    pub partition: Option<PartitionId>,
    /// The circuit.
    pub circuit: CircuitId,
    /// Where it ran.
    pub location: Location,
    /// Worker slot (0 for loads).
    pub slot: u32,
    /// Start.
    pub start: Nanos,
    /// End.
    pub end: Nanos,
    /// Whether the caller reported a failure.
    pub failed: bool,
}

/// Why a device had no GPU stage running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IdleCause {
    /// No submitted partition still needs a GPU (beyond those already on devices).
    NoWork,
    /// Work exists but no partition is synthesized yet.
    Synthesis,
    /// Synthesis is held back by the host memory budget.
    HostMemory,
    /// Synthesized partitions wait for parameters to be loaded (here or elsewhere).
    Params,
    /// A waiting partition holds this device for memory to drain.
    DeviceMemory,
}

impl IdleCause {
    /// All causes.
    pub const ALL: [IdleCause; 5] = [IdleCause::NoWork, IdleCause::Synthesis, IdleCause::HostMemory, IdleCause::Params, IdleCause::DeviceMemory];

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            IdleCause::NoWork => "no-work",
            IdleCause::Synthesis => "waiting-synthesis",
            IdleCause::HostMemory => "host-memory",
            IdleCause::Params => "waiting-params",
            IdleCause::DeviceMemory => "device-memory",
        }
    }
}

/// An interval with no GPU stage running on a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gap {
    /// Start.
    pub start: Nanos,
    /// End.
    pub end: Nanos,
    /// Why.
    pub cause: IdleCause,
}

/// How a job ended, without details.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EndKind {
    /// Completed.
    Completed,
    /// Failed.
    Failed,
    /// Cancelled.
    Cancelled,
}

/// Per-job timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobRecord {
    /// The job.
    pub job: JobId,
    /// Its circuit.
    pub circuit: CircuitId,
    /// Its priority.
    pub priority: Priority,
    /// Number of partitions.
    pub partitions: u32,
    /// Submission time.
    pub submitted: Nanos,
    /// Start of its first synthesis.
    pub first_start: Option<Nanos>,
    /// Start of its first GPU stage.
    pub first_gpu: Option<Nanos>,
    /// When and how it ended.
    pub ended: Option<(Nanos, EndKind)>,
}

impl JobRecord {
    /// Time from submission to the first synthesis start.
    pub fn queue_wait(&self) -> Option<Nanos> {
        self.first_start.map(|t| t - self.submitted)
    }

    /// Time from submission to the end.
    pub fn latency(&self) -> Option<Nanos> {
        self.ended.map(|(t, _)| t - self.submitted)
    }
}

#[derive(Debug, Clone, Default)]
struct DeviceTrack {
    busy: VecDeque<(Nanos, Nanos)>,
    gaps: VecDeque<Gap>,
    open_busy: Option<Nanos>,
    open_gap: Option<(Nanos, IdleCause)>,
}

/// Utilization of one device over a window.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceReport {
    /// The device.
    pub device: DeviceId,
    /// Window start.
    pub from: Nanos,
    /// Window end.
    pub to: Nanos,
    /// Time with at least one GPU stage (upload, NTT, MSM) running.
    pub busy: Nanos,
    /// Idle intervals, clipped to the window.
    pub gaps: Vec<Gap>,
}

impl DeviceReport {
    /// Window length.
    pub fn wall(&self) -> Nanos {
        self.to - self.from
    }

    /// `busy / wall` (1.0 for an empty window).
    pub fn busy_fraction(&self) -> f64 {
        if self.wall() == Nanos::ZERO {
            1.0
        } else {
            self.busy.0 as f64 / self.wall().0 as f64
        }
    }

    /// Sum of the gaps.
    pub fn idle(&self) -> Nanos {
        self.gaps.iter().fold(Nanos::ZERO, |a, g| a + (g.end - g.start))
    }

    /// Sum of the gaps with this cause.
    pub fn idle_by(&self, cause: IdleCause) -> Nanos {
        let g = self.gaps.iter().filter(|g| g.cause == cause);
        g.fold(Nanos::ZERO, |a, g| a + (g.end - g.start))
    }
}

/// The engine's record of what happened, bounded to a capacity (oldest entries dropped).
#[derive(Debug, Clone)]
pub struct Timeline {
    capacity: usize,
    spans: VecDeque<Span>,
    devices: Vec<DeviceTrack>,
    jobs: BTreeMap<JobId, JobRecord>,
}

fn push_bounded<T>(q: &mut VecDeque<T>, cap: usize, v: T) {
    if cap == 0 {
        return;
    }
    if q.len() >= cap {
        q.pop_front();
    }
    q.push_back(v);
}

impl Timeline {
    pub(crate) fn new(devices: usize, capacity: usize, now: Nanos) -> Timeline {
        let track = DeviceTrack { open_gap: Some((now, IdleCause::NoWork)), ..Default::default() };
        Timeline { capacity, spans: VecDeque::new(), devices: vec![track; devices], jobs: BTreeMap::new() }
    }

    pub(crate) fn span(&mut self, span: Span) {
        push_bounded(&mut self.spans, self.capacity, span);
    }

    pub(crate) fn job_submitted(&mut self, rec: JobRecord) {
        if self.capacity == 0 {
            return;
        }
        if self.jobs.len() >= self.capacity {
            self.jobs.pop_first();
        }
        self.jobs.insert(rec.job, rec);
    }

    pub(crate) fn job_started(&mut self, job: JobId, now: Nanos, gpu: bool) {
        if let Some(r) = self.jobs.get_mut(&job) {
            let slot = if gpu { &mut r.first_gpu } else { &mut r.first_start };
            slot.get_or_insert(now);
        }
    }

    pub(crate) fn job_ended(&mut self, job: JobId, now: Nanos, how: EndKind) {
        if let Some(r) = self.jobs.get_mut(&job) {
            r.ended.get_or_insert((now, how));
        }
    }

    /// A GPU stage started on an idle device.
    pub(crate) fn gpu_busy(&mut self, d: usize, now: Nanos) {
        let cap = self.capacity;
        let Some(t) = self.devices.get_mut(d) else { return };
        if t.open_busy.is_some() {
            return;
        }
        if let Some((start, cause)) = t.open_gap.take() {
            if now > start {
                push_bounded(&mut t.gaps, cap, Gap { start, end: now, cause });
            }
        }
        t.open_busy = Some(now);
    }

    /// The device has no GPU stage running (after an input was fully processed).
    pub(crate) fn gpu_idle(&mut self, d: usize, now: Nanos, cause: IdleCause) {
        let cap = self.capacity;
        let Some(t) = self.devices.get_mut(d) else { return };
        if let Some(start) = t.open_busy.take() {
            if now > start {
                push_bounded(&mut t.busy, cap, (start, now));
            }
            t.open_gap = Some((now, cause));
            return;
        }
        match t.open_gap {
            Some((start, c)) if c != cause => {
                if now > start {
                    push_bounded(&mut t.gaps, cap, Gap { start, end: now, cause: c });
                    t.open_gap = Some((now, cause));
                } else {
                    t.open_gap = Some((start, cause));
                }
            }
            Some(_) => {}
            None => t.open_gap = Some((now, cause)),
        }
    }

    /// Finished spans, oldest first.
    pub fn spans(&self) -> impl Iterator<Item = &Span> {
        self.spans.iter()
    }

    /// The record of a job.
    pub fn job(&self, job: JobId) -> Option<&JobRecord> {
        self.jobs.get(&job)
    }

    /// All job records, by id.
    pub fn jobs(&self) -> impl Iterator<Item = &JobRecord> {
        self.jobs.values()
    }

    /// Busy time and gaps of device `d` over `[from, to]`; intervals still open are taken to
    /// last until `to`. Busy time plus the gaps equals the window (while nothing was dropped
    /// for capacity).
    pub fn device_report(&self, d: DeviceId, from: Nanos, to: Nanos) -> Option<DeviceReport> {
        let t = self.devices.get(d.0 as usize)?;
        let to = to.max(from);
        let clip = |s: Nanos, e: Nanos| {
            let (s, e) = (s.max(from), e.min(to));
            (e > s).then_some((s, e))
        };
        let mut busy = Nanos::ZERO;
        let open_busy = t.open_busy.map(|s| (s, to.max(s)));
        for (s, e) in t.busy.iter().copied().chain(open_busy) {
            if let Some((s, e)) = clip(s, e) {
                busy += e - s;
            }
        }
        let open_gap = t.open_gap.map(|(s, c)| Gap { start: s, end: to.max(s), cause: c });
        let gaps = t.gaps.iter().copied().chain(open_gap).filter_map(|g| clip(g.start, g.end).map(|(start, end)| Gap { start, end, cause: g.cause })).collect();
        Some(DeviceReport { device: d, from, to, busy, gaps })
    }

    /// The whole timeline as Chrome trace-event JSON (open in `chrome://tracing` or
    /// Perfetto): process 0 is the host, process `d + 1` is device `d`; threads are worker
    /// slots; idle gaps appear on their own thread named `idle`.
    pub fn chrome_trace(&self) -> String {
        let mut out = String::from("{\"traceEvents\":[\n");
        let mut first = true;
        let mut ev = |out: &mut String, s: String| {
            if !first {
                out.push_str(",\n");
            }
            first = false;
            out.push_str(&s);
        };
        ev(&mut out, meta("process_name", 0, None, "host"));
        for d in 0..self.devices.len() {
            let pid = d as u64 + 1;
            ev(&mut out, meta("process_name", pid, None, &format!("gpu {d}")));
            ev(&mut out, meta("thread_name", pid, Some(IDLE_TID), "idle"));
        }
        for s in &self.spans {
            let pid = match s.location {
                Location::Host => 0,
                Location::Device(d) => u64::from(d.0) + 1,
            };
            let (name, cat, tid) = match s.kind {
                SpanKind::Stage(st) => (st.name(), "stage", u64::from(s.slot)),
                SpanKind::LoadParams => ("load-params", "params", LOAD_TID),
            };
            let mut args = format!("\"circuit\":{},\"failed\":{}", s.circuit.0, s.failed);
            if let Some(p) = s.partition {
                let _ = write!(args, ",\"job\":{},\"partition\":{}", p.job.0, p.index);
            }
            let e = format!(
                "{{\"name\":\"{name}\",\"cat\":\"{cat}\",\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":{pid},\"tid\":{tid},\"args\":{{{args}}}}}",
                micros(s.start),
                micros(s.end - s.start)
            );
            ev(&mut out, e);
        }
        for (d, t) in self.devices.iter().enumerate() {
            for g in &t.gaps {
                let e = format!(
                    "{{\"name\":\"{}\",\"cat\":\"idle\",\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":{},\"tid\":{IDLE_TID},\"args\":{{}}}}",
                    g.cause.name(),
                    micros(g.start),
                    micros(g.end - g.start),
                    d + 1
                );
                ev(&mut out, e);
            }
        }
        out.push_str("\n],\"displayTimeUnit\":\"ms\"}\n");
        out
    }
}

const IDLE_TID: u64 = 1_000_000;
const LOAD_TID: u64 = 1_000_001;

fn micros(t: Nanos) -> String {
    format!("{}.{:03}", t.0 / 1_000, t.0 % 1_000)
}

fn meta(kind: &str, pid: u64, tid: Option<u64>, name: &str) -> String {
    let tid = tid.map(|t| format!(",\"tid\":{t}")).unwrap_or_default();
    format!("{{\"name\":\"{kind}\",\"ph\":\"M\",\"pid\":{pid}{tid},\"args\":{{\"name\":\"{name}\"}}}}")
}
