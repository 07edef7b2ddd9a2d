//! What the driver shows to a [`Command::Inspect`](super::Command::Inspect): its state, read-only.

use std::collections::HashMap;
use std::time::Duration;

use cuzk_core::engine::{CircuitId, Location, Nanos};
use cuzk_core::jobs::Jobs;
use cuzk_worker::MatricesInfo;

use super::DriverConfig;
use crate::circuits::Registry;
use crate::server::status::Histogram;

/// The driver's state at one instant.
pub struct DriverView<'a> {
    /// Its configuration.
    pub cfg: &'a DriverConfig,
    /// The job layer (and through it the engine).
    pub jobs: &'a Jobs,
    /// The circuits registered.
    pub registry: &'a Registry,
    /// Each device's name, in engine order.
    pub device_names: Vec<String>,
    /// The constraint matrices the worker has recorded.
    pub matrices: Vec<MatricesInfo>,
    /// Parameter loads under way, with their start.
    pub loading: Vec<((CircuitId, Location), Nanos)>,
    /// Completed jobs' latency per circuit.
    pub latency: &'a HashMap<CircuitId, Histogram>,
    /// Since the driver started.
    pub uptime: Duration,
    /// Now, on the job layer's clock.
    pub now: Nanos,
}
