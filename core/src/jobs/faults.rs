//! Faults: the failures worth another attempt, the health of each device, and the settings
//! that bound both.

use std::collections::BTreeMap;

use crate::backend::BackendError;
use crate::engine::Nanos;

/// A failure that another attempt of the partition may not repeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fault {
    /// The backend reported a device error.
    Device,
    /// The backend ran out of memory.
    OutOfMemory,
    /// A device stage ran past the watchdog.
    Watchdog,
    /// The finished proof failed its check with the verifying key.
    SelfCheck,
    /// The device the engine chose had been taken out of service.
    OutOfService,
}

impl Fault {
    /// The name in logs and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Fault::Device => "device-error",
            Fault::OutOfMemory => "out-of-memory",
            Fault::Watchdog => "watchdog",
            Fault::SelfCheck => "self-check",
            Fault::OutOfService => "out-of-service",
        }
    }

    /// Whether the fault counts against the device it happened on.
    pub fn blames_device(self) -> bool {
        !matches!(self, Fault::OutOfService)
    }
}

/// The fault a backend error is, if another attempt may succeed: device errors and running
/// out of memory; bad input and an unavailable device are not retried here.
pub fn backend_fault(e: &BackendError) -> Option<Fault> {
    match e {
        BackendError::Device(_) => Some(Fault::Device),
        BackendError::OutOfMemory(_) => Some(Fault::OutOfMemory),
        BackendError::InvalidInput(_) | BackendError::Unavailable(_) => None,
    }
}

/// How hard the job layer tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recovery {
    /// Further attempts after device faults, per job.
    pub retries: u32,
    /// Further attempts after a failed self-check, per job.
    pub rechecks: u32,
    /// Watchdog of the device stages.
    pub stage_timeout: Option<Nanos>,
    /// Consecutive faults that take a device out of service (0: never).
    pub device_fault_limit: u32,
}

impl Default for Recovery {
    fn default() -> Self {
        Recovery { retries: 3, rechecks: 1, stage_timeout: Some(Nanos::from_secs(600)), device_fault_limit: 3 }
    }
}

/// One device's fault record.
#[derive(Debug, Clone, Default)]
pub struct DeviceHealth {
    /// Faults since its last successful stage.
    pub consecutive: u32,
    /// Faults per cause since start.
    pub faults: BTreeMap<&'static str, u64>,
    /// Why it was taken out of service, once it was.
    pub retired: Option<String>,
}

impl DeviceHealth {
    /// Whether the engine's work may run there.
    pub fn in_service(&self) -> bool {
        self.retired.is_none()
    }

    /// Records a partition's successful MSM: the count of consecutive faults starts again.
    pub fn success(&mut self) {
        self.consecutive = 0;
    }

    /// Records a fault; returns true when it takes the device out of service.
    pub fn fault(&mut self, f: Fault, limit: u32) -> bool {
        if !self.in_service() || !f.blames_device() {
            return false;
        }
        self.consecutive += 1;
        *self.faults.entry(f.name()).or_default() += 1;
        if limit > 0 && self.consecutive >= limit {
            self.retired = Some(format!("{} consecutive faults, the last one {}", self.consecutive, f.name()));
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_errors_are_faults_bad_inputs_are_not() {
        assert_eq!(backend_fault(&BackendError::Device("x".into())), Some(Fault::Device));
        assert_eq!(backend_fault(&BackendError::OutOfMemory("x".into())), Some(Fault::OutOfMemory));
        assert_eq!(backend_fault(&BackendError::InvalidInput("x".into())), None);
        assert_eq!(backend_fault(&BackendError::Unavailable("x".into())), None);
    }

    #[test]
    fn a_device_leaves_service_after_the_limit_of_consecutive_faults() {
        let mut h = DeviceHealth::default();
        assert!(!h.fault(Fault::Device, 3));
        assert!(!h.fault(Fault::Watchdog, 3));
        assert!(h.fault(Fault::SelfCheck, 3));
        assert!(!h.in_service());
        assert!(!h.fault(Fault::Device, 3), "retired once");
        assert_eq!(h.faults.values().sum::<u64>(), 3);
        let mut h = DeviceHealth::default();
        assert!(!h.fault(Fault::OutOfService, 1), "not the device's fault");
        assert!(!h.fault(Fault::Device, 0), "limit 0: never retired");
    }
}
