//! Identifiers, time and job descriptions used by the engine.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in time (or a duration) in nanoseconds on the caller's clock.
///
/// The engine never reads a clock: every input carries the time it happened. Arithmetic
/// saturates instead of overflowing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Nanos(pub u64);

impl Nanos {
    /// Zero.
    pub const ZERO: Nanos = Nanos(0);
    /// The largest representable time.
    pub const MAX: Nanos = Nanos(u64::MAX);

    /// `us` microseconds.
    pub const fn from_micros(us: u64) -> Nanos {
        Nanos(us.saturating_mul(1_000))
    }

    /// `ms` milliseconds.
    pub const fn from_millis(ms: u64) -> Nanos {
        Nanos(ms.saturating_mul(1_000_000))
    }

    /// `s` seconds.
    pub const fn from_secs(s: u64) -> Nanos {
        Nanos(s.saturating_mul(1_000_000_000))
    }

    /// `self - earlier`, or zero when `earlier` is later.
    pub const fn saturating_sub(self, earlier: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(earlier.0))
    }

    /// Seconds as a float (for reports).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
}

impl Add for Nanos {
    type Output = Nanos;
    fn add(self, rhs: Nanos) -> Nanos {
        Nanos(self.0.saturating_add(rhs.0))
    }
}

impl AddAssign for Nanos {
    fn add_assign(&mut self, rhs: Nanos) {
        *self = *self + rhs;
    }
}

impl Sub for Nanos {
    type Output = Nanos;
    fn sub(self, rhs: Nanos) -> Nanos {
        self.saturating_sub(rhs)
    }
}

impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}s", self.as_secs_f64())
    }
}

/// A job, numbered by the engine in submission order (older jobs have smaller ids).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobId(pub u64);

/// One partition of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PartitionId {
    /// The job.
    pub job: JobId,
    /// Index of the partition within the job, from 0.
    pub index: u32,
}

/// A GPU, numbered from 0 in the order of [`crate::engine::EngineConfig::devices`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DeviceId(pub u32);

/// A registered circuit (and its parameters, the SRS).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CircuitId(pub u32);

/// Where memory lives or where work runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Location {
    /// Host memory (the pinned pool) or a CPU worker.
    Host,
    /// A GPU.
    Device(DeviceId),
}

/// Scheduling priority; higher wins at every free slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Priority {
    /// Background work.
    Low,
    /// PoRep and SnapDeals.
    Normal,
    /// WindowPoSt.
    High,
    /// WinningPoSt: may use the reserves kept for it and skips the synthesis look-ahead limit.
    Critical,
}

/// What a job proves; sets the default priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobKind {
    /// WinningPoSt (CRITICAL).
    WinningPost,
    /// WindowPoSt (HIGH).
    WindowPost,
    /// PoRep commit C2 (NORMAL).
    PoRep,
    /// SnapDeals replica update (NORMAL).
    SnapDeals,
    /// Any other registered circuit (NORMAL).
    Generic,
}

impl JobKind {
    /// The priority a job of this kind gets unless told otherwise.
    pub fn default_priority(self) -> Priority {
        match self {
            JobKind::WinningPost => Priority::Critical,
            JobKind::WindowPost => Priority::High,
            JobKind::PoRep | JobKind::SnapDeals | JobKind::Generic => Priority::Normal,
        }
    }
}

/// A proof job as submitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSpec {
    /// What it proves.
    pub kind: JobKind,
    /// Its priority.
    pub priority: Priority,
    /// The circuit (and parameters) of every partition.
    pub circuit: CircuitId,
    /// Number of partitions (at least 1).
    pub partitions: u32,
    /// When set, the job fails with [`crate::engine::JobFailure::DeadlineExceeded`] if it has
    /// not completed by then.
    pub deadline: Option<Nanos>,
    /// A device this job's partitions should keep off (set by [`JobSpec::avoiding`]).
    pub avoid: Option<DeviceId>,
}

impl JobSpec {
    /// A job of `kind` over `circuit` with `partitions` partitions at the kind's priority.
    pub fn new(kind: JobKind, circuit: CircuitId, partitions: u32) -> JobSpec {
        JobSpec { kind, priority: kind.default_priority(), circuit, partitions, deadline: None, avoid: None }
    }

    /// The same job at another priority.
    pub fn with_priority(mut self, priority: Priority) -> JobSpec {
        self.priority = priority;
        self
    }

    /// The same job with a deadline.
    pub fn with_deadline(mut self, deadline: Nanos) -> JobSpec {
        self.deadline = Some(deadline);
        self
    }

    /// The same job, preferring to keep its partitions off `device` (typically the device
    /// whose fault failed an earlier attempt of the job). A soft preference:
    ///
    /// * a partition goes to any other device that can take it now (in service, a free
    ///   worker, the parameters resident and the memory there, evicting if allowed) before
    ///   the avoided one;
    /// * when only the avoided device can take it now, it waits while another device in
    ///   service holds or is loading the parameters and can ever fit it, and goes to the
    ///   avoided device otherwise (in particular once every other device is retired);
    /// * parameter loads for it prefer the other devices.
    ///
    /// Ignored once `device` is retired (the job then runs on the devices in service).
    pub fn avoiding(mut self, device: DeviceId) -> JobSpec {
        self.avoid = Some(device);
        self
    }
}

/// How close a circuit's parameters are to a GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    /// Only on disk.
    Cold,
    /// In host memory, on no device.
    Warm,
    /// Resident on at least one device.
    Hot,
}

/// Which of a partition's buffers a [`crate::engine::Action::Release`] frees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Buffers {
    /// The `a, b, c` evaluation vectors (no longer needed after the NTT).
    Abc,
    /// Everything else (assignments, density, `h`, MSM scratch).
    Rest,
}
