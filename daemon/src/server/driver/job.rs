//! A job as the driver receives it (validated by `crate::server::request`).

use std::sync::Arc;
use std::time::Duration;

use cuzk_circuits_filecoin::{FilRequest, Prepared};
use cuzk_core::circuit::WitnessCheck;
use cuzk_core::engine::Priority;

use crate::circuits::{CircuitShape, ParamChoice};

/// A Filecoin job: the request as sent and, once checked, its partitions.
#[derive(Debug, Clone)]
pub struct FilecoinJob {
    /// The request.
    pub request: Arc<FilRequest>,
    /// Its checked partitions (set by `crate::server::request::prepare_filecoin` before the job
    /// reaches the driver).
    pub prepared: Option<Arc<Prepared>>,
}

/// A validated proof job.
#[derive(Debug, Clone)]
pub struct JobRequest {
    /// Caller's idempotency key (may be empty); once submitted, the job id it names (`<id>#n`
    /// for the request id's n-th payload).
    pub request_id: String,
    /// The proof kind's name (`crate::names::kind_name`), for per-kind counts.
    pub kind: &'static str,
    /// Scheduling priority.
    pub priority: Priority,
    /// The circuit.
    pub circuit: CircuitShape,
    /// The Filecoin request, for Filecoin kinds.
    pub filecoin: Option<FilecoinJob>,
    /// What happens to its partitions' witness checks: trusted for GENERIC jobs (built here
    /// from the seed), enforced for requests; `Ignore` only where the service chose it
    /// (then no proof is handed out).
    pub witness: WitnessCheck,
    /// Where its circuit's parameters come from, should this job register it.
    pub params: ParamChoice,
    /// Witness seed of partition 0.
    pub seed: u64,
    /// Number of partitions.
    pub partitions: u32,
    /// Deadline after acceptance.
    pub deadline: Option<Duration>,
    /// [`payload_digest`] of the submission.
    pub payload: [u8; 32],
    /// Taken up again from the journal after a restart: `request_id` is the job id an earlier
    /// run gave it (`<id>`, `<id>#n`, or its number), kept as it is.
    pub restored: bool,
}
