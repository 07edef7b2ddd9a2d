//! Validation of API requests into jobs; every bad request maps to a clear gRPC status.

use std::time::Duration;

use cuzk_circuits::{CircuitError, CircuitKind};
use cuzk_core::engine::Priority;
use prost::Message;
use tonic::{Code, Status};

use crate::circuits::CircuitSpec;
use crate::proto;

/// Most partitions one generic job may have.
pub const MAX_PARTITIONS: u32 = 64;
/// Longest accepted request id.
pub const MAX_REQUEST_ID: usize = 256;

/// A validated proof job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRequest {
    /// Caller's idempotency key (may be empty).
    pub request_id: String,
    /// The proof kind as the API names it.
    pub kind: proto::ProofKind,
    /// Scheduling priority.
    pub priority: Priority,
    /// The circuit.
    pub circuit: CircuitSpec,
    /// Witness seed of partition 0.
    pub seed: u64,
    /// Number of partitions.
    pub partitions: u32,
    /// Deadline after acceptance.
    pub deadline: Option<Duration>,
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// The proof kind number is not defined.
    #[error("unknown proof kind {0}")]
    UnknownKind(i32),
    /// No proof kind given.
    #[error("proof_kind is required")]
    NoKind,
    /// A Filecoin proof kind, not implemented yet.
    #[error("proof kind {0} is not implemented by this daemon yet; use GENERIC")]
    Unimplemented(&'static str),
    /// The priority number is not defined.
    #[error("unknown priority {0}")]
    UnknownPriority(i32),
    /// A GENERIC job without its description.
    #[error("proof_kind GENERIC needs the generic field")]
    MissingGeneric,
    /// Bad circuit name or size.
    #[error(transparent)]
    Circuit(#[from] CircuitError),
    /// Too many partitions.
    #[error("a job may have at most {MAX_PARTITIONS} partitions, got {0}")]
    TooManyPartitions(u32),
    /// The request id is too long.
    #[error("request_id longer than {MAX_REQUEST_ID} bytes")]
    RequestIdTooLong,
}

impl RequestError {
    /// The gRPC status for this error.
    pub fn status(&self) -> Status {
        let code = match self {
            RequestError::Unimplemented(_) => Code::Unimplemented,
            _ => Code::InvalidArgument,
        };
        Status::new(code, self.to_string())
    }
}

impl From<RequestError> for Status {
    fn from(e: RequestError) -> Status {
        e.status()
    }
}

/// Maps an API priority (0 = the kind's default) to the engine's.
pub fn priority(p: i32, kind: proto::ProofKind) -> Result<Priority, RequestError> {
    Ok(match proto::Priority::try_from(p).map_err(|_| RequestError::UnknownPriority(p))? {
        proto::Priority::Unspecified => match kind {
            proto::ProofKind::WinningPost => Priority::Critical,
            proto::ProofKind::WindowPostPartition => Priority::High,
            _ => Priority::Normal,
        },
        proto::Priority::Low => Priority::Low,
        proto::Priority::Normal => Priority::Normal,
        proto::Priority::High => Priority::High,
        proto::Priority::Critical => Priority::Critical,
    })
}

/// The API name of an engine priority.
pub fn priority_name(p: Priority) -> &'static str {
    match p {
        Priority::Low => "low",
        Priority::Normal => "normal",
        Priority::High => "high",
        Priority::Critical => "critical",
    }
}

/// Validates a submission.
pub fn validate(req: &proto::SubmitProofRequest) -> Result<JobRequest, RequestError> {
    if req.request_id.len() > MAX_REQUEST_ID {
        return Err(RequestError::RequestIdTooLong);
    }
    let kind = proto::ProofKind::try_from(req.proof_kind).map_err(|_| RequestError::UnknownKind(req.proof_kind))?;
    match kind {
        proto::ProofKind::Unspecified => return Err(RequestError::NoKind),
        proto::ProofKind::Generic => {}
        other => return Err(RequestError::Unimplemented(other.as_str_name())),
    }
    let priority = priority(req.priority, kind)?;
    let g = req.generic.as_ref().ok_or(RequestError::MissingGeneric)?;
    let circuit = CircuitSpec::new(CircuitKind::from_name(&g.circuit)?, g.log_size)?;
    let partitions = g.partitions.max(1);
    if partitions > MAX_PARTITIONS {
        return Err(RequestError::TooManyPartitions(partitions));
    }
    let deadline = (req.deadline_ms > 0).then(|| Duration::from_millis(req.deadline_ms));
    Ok(JobRequest { request_id: req.request_id.clone(), kind, priority, circuit, seed: g.seed, partitions, deadline })
}

/// Decodes the body of a call to `method` (a `ProvingEngine` method name) and validates it as
/// the server would; the fuzz target's entry point. Never panics.
pub fn decode_request(method: &str, body: &[u8]) -> Result<(), Status> {
    use crate::codec::decode_error;
    match method {
        "SubmitProof" => {
            let r = proto::SubmitProofRequest::decode(body).map_err(decode_error)?;
            validate(&r)?;
        }
        "Prove" => {
            let r = proto::ProveRequest::decode(body).map_err(decode_error)?;
            validate(&r.submit.unwrap_or_default())?;
        }
        "AwaitProof" => {
            let r = proto::AwaitProofRequest::decode(body).map_err(decode_error)?;
            crate::service::parse_job_id(&r.job_id)?;
        }
        "CancelProof" => {
            let r = proto::CancelProofRequest::decode(body).map_err(decode_error)?;
            crate::service::parse_job_id(&r.job_id)?;
        }
        "PreloadSRS" => {
            let r = proto::PreloadSrsRequest::decode(body).map_err(decode_error)?;
            CircuitSpec::parse(&r.circuit_id).map_err(|e| Status::invalid_argument(e.to_string()))?;
        }
        "EvictSRS" => {
            let r = proto::EvictSrsRequest::decode(body).map_err(decode_error)?;
            CircuitSpec::parse(&r.circuit_id).map_err(|e| Status::invalid_argument(e.to_string()))?;
        }
        "GetStatus" => {
            proto::GetStatusRequest::decode(body).map_err(decode_error)?;
        }
        "GetMetrics" => {
            proto::GetMetricsRequest::decode(body).map_err(decode_error)?;
        }
        _ => return Err(Status::unimplemented(format!("unknown method {method}"))),
    }
    Ok(())
}
