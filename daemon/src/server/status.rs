//! The daemon's state as data: served as JSON on `GET /status`, rendered by the status page,
//! turned into Prometheus text and into `GetStatus` answers.

use serde::{Deserialize, Serialize};

use crate::server::listen::ListenerStatus;

/// Bytes as a person reads them: `512 B`, `8.0 MiB`, `47.2 GiB` (binary units, one decimal,
/// halves rounded up). The status page's script formats sizes the same way (`human` in
/// `status.html`; a test holds them to each other).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut k = 1;
    while k + 1 < UNITS.len() && bytes >= 1u64 << (10 * (k + 1)) {
        k += 1;
    }
    let tenths = |k: usize| {
        let unit = 1u128 << (10 * k);
        (u128::from(bytes) * 10 + unit / 2) / unit
    };
    let mut t = tenths(k);
    // 1023.96 KiB reads 1024.0 KiB: one unit up.
    if t >= 10 * 1024 && k + 1 < UNITS.len() {
        k += 1;
        t = tenths(k);
    }
    format!("{}.{} {}", t / 10, t % 10, UNITS[k])
}

/// Everything the status endpoints show.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Snapshot {
    /// Daemon version.
    pub version: String,
    /// Backend name.
    pub backend: String,
    /// Seconds since start.
    pub uptime_s: f64,
    /// Engine clock, ms since start (span times use this clock).
    pub now_ms: f64,
    /// Shutting down: no new jobs accepted.
    pub draining: bool,
    /// Job counters.
    pub jobs: JobCounts,
    /// Queue depths per priority, highest first.
    pub queues: Vec<QueueDepth>,
    /// Live jobs and totals per proof kind.
    pub kinds: Vec<KindStatus>,
    /// Memory budgets.
    pub memory: Memory,
    /// Parameter residency per registered circuit.
    pub params: Vec<ParamsEntry>,
    /// Host workers (synthesis, finalize): recent spans.
    pub host: Track,
    /// Devices with their recent spans.
    pub devices: Vec<DeviceStatus>,
    /// Per-stage totals.
    pub stages: Vec<StageTotal>,
    /// Job latency histograms per circuit.
    pub latency: Vec<Histogram>,
    /// Retries and refusals.
    #[serde(default)]
    pub recovery: Recovery,
    /// Admission of new synthesis under host memory pressure.
    #[serde(default)]
    pub admission: Admission,
    /// The daemon's resident set size, bytes.
    #[serde(default)]
    pub rss_bytes: Option<u64>,
    /// Recorded constraint matrices per circuit.
    #[serde(default)]
    pub matrices: Vec<MatricesEntry>,
    /// The listeners (filled in by the HTTP side, which knows them).
    #[serde(default)]
    pub listeners: Vec<ListenerStatus>,
    /// The budget for request bytes in flight (filled in beside the listeners).
    #[serde(default)]
    pub requests: crate::server::intake::RequestBudgetStatus,
    /// The journal of accepted jobs, when it is on (filled in beside the listeners).
    #[serde(default)]
    pub journal: Option<crate::server::journal::JournalStatus>,
}

/// What the layers around the driver know and add to its snapshot: the listeners, the budget
/// for request bytes, the journal.
#[derive(Clone, Debug, Default)]
pub struct Outside {
    /// The listeners.
    pub listeners: crate::server::listen::Listeners,
    /// The request budget.
    pub requests: Option<crate::server::intake::RequestBudget>,
    /// The journal.
    pub journal: Option<std::sync::Arc<crate::server::journal::Journal>>,
}

impl Outside {
    /// Fills in their parts of `s`.
    pub fn fill(&self, s: &mut Snapshot) {
        s.listeners = self.listeners.status();
        if let Some(r) = &self.requests {
            s.requests = r.status();
        }
        s.journal = self.journal.as_ref().map(|j| j.status());
    }
}

/// One circuit's recorded constraint matrices.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct MatricesEntry {
    /// Circuit id.
    pub circuit: String,
    /// Non-zero entries of `A, B, C`.
    pub entries: u64,
    /// Host bytes.
    pub host_bytes: u64,
    /// Device bytes of the resident copy per device (0: not resident).
    pub device_bytes: Vec<u64>,
    /// Device bytes the engine counts for the matrices per device, within the device's
    /// reserved memory (0: that device's copy of the circuit has no matrices, or none).
    #[serde(default)]
    pub reserved_bytes: Vec<u64>,
    /// The device budget (`engine.device_memory_bytes`) that would keep them on the device
    /// that comes closest, when they fit none beside the parameters and one partition (every
    /// partition then evaluates `a, b, c` on the host); 0 when they fit.
    #[serde(default)]
    pub budget_needed: u64,
}

/// What the driver did about faults and load.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct Recovery {
    /// Further attempts of partitions started, per cause (`device-error`, `out-of-memory`,
    /// `watchdog`, `self-check`, `out-of-service`).
    pub retried: Vec<(String, u64)>,
    /// Proofs that failed their check with the verifying key (none of them was returned).
    pub self_check_failures: u64,
    /// Submissions refused because their priority's queue was full.
    pub queue_refusals: u64,
    /// Jobs accepted and not started, per priority, beyond which submissions are refused.
    pub queue_limit: u32,
}

/// Whether new synthesis waits for host memory.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct Admission {
    /// Synthesis waits: the host's available memory is below the margin.
    pub paused: bool,
    /// Partitions whose synthesis waits.
    pub waiting_synthesis: u32,
    /// `MemAvailable` when last read, bytes.
    pub mem_available_bytes: Option<u64>,
    /// The margin, bytes (0: not checked).
    pub margin_bytes: u64,
}

/// Job counters since start.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct JobCounts {
    /// Accepted.
    pub submitted: u64,
    /// Completed with proofs.
    pub completed: u64,
    /// Failed.
    pub failed: u64,
    /// Cancelled.
    pub cancelled: u64,
    /// Accepted and not ended.
    pub live: u64,
}

/// Jobs of one priority.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct QueueDepth {
    /// `critical`, `high`, `normal` or `low`.
    pub priority: String,
    /// Live jobs with no stage started yet.
    pub pending: u32,
    /// Live jobs with a stage started.
    pub running: u32,
}

/// Jobs of one proof kind.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KindStatus {
    /// The kind as Curio's daemon names it: `porep-c2`, `snap-update`, `window-post`,
    /// `winning-post`, or `generic`.
    pub kind: String,
    /// Live jobs with no stage started yet.
    pub pending: u32,
    /// Live jobs with a stage started.
    pub running: u32,
    /// Jobs completed since start.
    pub completed: u64,
    /// Jobs failed since start.
    pub failed: u64,
    /// Summed submission-to-end seconds of the completed jobs.
    pub completed_seconds: f64,
}

/// A memory budget.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct Budget {
    /// Bytes reserved.
    pub used: u64,
    /// Bytes in the budget.
    pub capacity: u64,
    /// Bytes of the budget set aside for the query a device load holds in flight (host only).
    #[serde(default)]
    pub loads_set_aside: u64,
    /// Bytes of `used` that device loads in flight hold (host only).
    #[serde(default)]
    pub in_loads: u64,
}

/// The memory budgets.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Memory {
    /// Host (pinned pool and warm parameters).
    pub host: Budget,
    /// One per device.
    pub devices: Vec<Budget>,
}

/// How close a circuit's parameters are to the devices (`hot`, `warm`, `cold` in JSON).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ParamsTier {
    /// On a device.
    Hot,
    /// In host memory.
    Warm,
    /// On disk only.
    Cold,
}

/// A copy of a circuit's parameters at one place (`absent`, `loading`, `resident` in JSON).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CopyState {
    /// Not there.
    Absent,
    /// On its way.
    Loading,
    /// There.
    Resident,
}

/// Where a circuit's parameters are.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ParamsEntry {
    /// Circuit id, e.g. `squaring-chain-2^10`.
    pub circuit: String,
    /// On a device, in host memory, or on disk.
    pub tier: ParamsTier,
    /// The host copy.
    pub host: CopyState,
    /// Per device, its copy.
    pub devices: Vec<CopyState>,
    /// Parameter file size.
    pub bytes: u64,
    /// Live jobs using this circuit.
    pub ref_count: u32,
}

/// One stage of one partition (or a parameter load) on a worker.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SpanView {
    /// Job id (0 for loads).
    pub job: u64,
    /// Partition index.
    pub partition: u32,
    /// Stage name or `load-params`.
    pub stage: String,
    /// Worker slot.
    pub slot: u32,
    /// Circuit id.
    pub circuit: String,
    /// Start, ms on the engine clock.
    pub start_ms: f64,
    /// End, ms; `None` while running.
    pub end_ms: Option<f64>,
    /// Ended in failure.
    pub failed: bool,
}

/// Recent activity of the host workers.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Track {
    /// Finished spans in the window and running ones.
    pub spans: Vec<SpanView>,
}

/// One device.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DeviceStatus {
    /// The engine's number for it (0, 1, ...: one per backend).
    pub id: u32,
    /// The device ordinal it drives (two backends may drive one GPU in a test setup).
    #[serde(default)]
    pub ordinal: u32,
    /// Backend name of the device.
    pub name: String,
    /// Seconds with a GPU stage running, since start.
    pub busy_s: f64,
    /// `busy_s / uptime`.
    pub busy_fraction: f64,
    /// Its memory budget.
    pub memory: Budget,
    /// Partitions on it now (upload through MSM).
    pub active: u32,
    /// API id of the job with a stage running on it now (empty when idle).
    pub current_job: String,
    /// That job's proof kind, as in [`KindStatus::kind`].
    pub current_kind: String,
    /// Whether work is placed on it (false once taken out of service after repeated faults).
    #[serde(default = "yes")]
    pub in_service: bool,
    /// The CPU fallback device (`engine.cpu_fallback`): it takes only what no GPU may.
    #[serde(default)]
    pub fallback: bool,
    /// Why it was taken out of service (empty while in service).
    #[serde(default)]
    pub retired_because: String,
    /// Faults counted against it since start, per cause.
    #[serde(default)]
    pub faults: Vec<(String, u64)>,
    /// Recent spans (finished in the window, and running).
    pub spans: Vec<SpanView>,
}

fn yes() -> bool {
    true
}

/// Totals of one stage.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StageTotal {
    /// Stage name.
    pub stage: String,
    /// Runs finished.
    pub count: u64,
    /// Seconds spent.
    pub seconds: f64,
}

/// A latency histogram.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Histogram {
    /// Circuit id.
    pub circuit: String,
    /// Upper bounds (seconds) with cumulative counts.
    pub buckets: Vec<(f64, u64)>,
    /// Sum of observations, seconds.
    pub sum: f64,
    /// Number of observations.
    pub count: u64,
}

/// Histogram bucket bounds, seconds. 15 and 20 s are there for WinningPoSt, which must end well
/// within its ~25 s window (contrib/prometheus/cuzk-alerts.yml alerts at 10 and 20 s).
pub const LATENCY_BUCKETS: [f64; 16] = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 60.0, 300.0, 1200.0];

impl Histogram {
    /// An empty histogram.
    pub fn new(circuit: String) -> Histogram {
        Histogram { circuit, buckets: LATENCY_BUCKETS.iter().map(|b| (*b, 0)).collect(), sum: 0.0, count: 0 }
    }

    /// Records one observation.
    pub fn observe(&mut self, seconds: f64) {
        for (le, n) in &mut self.buckets {
            if seconds <= *le {
                *n += 1;
            }
        }
        self.sum += seconds;
        self.count += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::human_bytes;

    #[test]
    fn sizes_in_human_units() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1024), "1.0 KiB");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(8 << 20), "8.0 MiB");
        assert_eq!(human_bytes(50_680_000_000), "47.2 GiB");
        // Halves round up; just below the next unit reads as the next unit.
        assert_eq!(human_bytes(1280), "1.3 KiB");
        assert_eq!(human_bytes((1 << 20) - 1), "1.0 MiB");
        assert_eq!(human_bytes(u64::MAX), "16384.0 PiB");
    }
}
