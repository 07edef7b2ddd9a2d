//! A job as the driver receives it (validated by `crate::request`) and as the API names it.

use std::sync::Arc;
use std::time::Duration;

use cuzk_circuits_filecoin::{FilRequest, Prepared};
use cuzk_core::engine::{JobId, Priority};

use crate::circuits::CircuitShape;
use crate::proto;

/// Longest accepted request id.
pub const MAX_REQUEST_ID: usize = 256;

/// A Filecoin job: the request as sent and, once checked, its partitions.
#[derive(Debug, Clone)]
pub struct FilecoinJob {
    /// The request.
    pub request: Arc<FilRequest>,
    /// Its checked partitions (set by [`prepare_filecoin`] before the job reaches the driver).
    pub prepared: Option<Arc<Prepared>>,
    /// Bench mode: the query lengths of its circuit's timing-only parameters.
    pub timing: Option<cuzk_setup::timing::QueryLengths>,
}

/// A validated proof job.
#[derive(Debug, Clone)]
pub struct JobRequest {
    /// Caller's idempotency key (may be empty); once submitted, the job id it names (`<id>#n`
    /// for the request id's n-th payload).
    pub request_id: String,
    /// The proof kind as the API names it.
    pub kind: proto::ProofKind,
    /// Scheduling priority.
    pub priority: Priority,
    /// The circuit.
    pub circuit: CircuitShape,
    /// The Filecoin request, for Filecoin kinds.
    pub filecoin: Option<FilecoinJob>,
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

/// A job as the API names it: the daemon's own number, or the request id it was submitted
/// under (the newest job of that id).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum JobRef {
    /// The daemon's job number.
    Id(JobId),
    /// A request id.
    Request(String),
}

impl JobRef {
    /// Parses an API job id: a decimal number is the daemon's own id, anything else a request
    /// id (request ids may not be bare numbers).
    pub fn parse(s: &str) -> Result<JobRef, BadJobRef> {
        let s = s.trim();
        if s.is_empty() {
            return Err(BadJobRef("job_id is empty: pass the id SubmitProof returned, or the request id".into()));
        }
        if s.bytes().all(|b| b.is_ascii_digit()) {
            return s.parse::<u64>().map(|n| JobRef::Id(JobId(n))).map_err(|_| BadJobRef(format!("job_id {s:?} is out of range")));
        }
        if s.len() > MAX_REQUEST_ID {
            return Err(BadJobRef(format!("job_id longer than {MAX_REQUEST_ID} bytes")));
        }
        Ok(JobRef::Request(s.to_string()))
    }
}

impl std::fmt::Display for JobRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JobRef::Id(j) => write!(f, "{}", j.0),
            JobRef::Request(r) => f.write_str(r),
        }
    }
}

/// An API job id that names no job.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadJobRef(pub String);
