//! Validation of API requests into jobs; every bad request maps to a clear gRPC status.

use std::sync::Arc;
use std::time::Duration;

use cuzk_circuits::{CircuitError, CircuitKind};
use cuzk_circuits_filecoin::{FilError, FilKind, FilRequest};
use cuzk_core::engine::Priority;
use prost::Message;
use tonic::{Code, Status};

use crate::circuits::{BuiltinShape, CircuitShape};
use crate::proto;

/// Most partitions one generic job may have.
pub const MAX_PARTITIONS: u32 = 64;
use crate::driver::{FilecoinJob, JobRequest, MAX_REQUEST_ID};

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// The proof kind number is not defined.
    #[error("unknown proof kind {0}")]
    UnknownKind(i32),
    /// No proof kind given.
    #[error("proof_kind is required")]
    NoKind,
    /// A Filecoin request that is malformed or whose vanilla proofs do not verify.
    #[error("{kind}: {source}")]
    Filecoin {
        /// The proof kind.
        kind: &'static str,
        /// What is wrong.
        #[source]
        source: FilError,
    },
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
    /// The request id could be taken for a job id.
    #[error("request_id {0:?} is a bare number, which this daemon uses for its own job ids: add a prefix")]
    RequestIdNumeric(String),
    /// The request id holds control characters (a newline would forge lines in a text log).
    #[error("request_id {0:?} holds control characters (newlines, escapes): printable text only")]
    RequestIdControl(String),
    /// The request id holds `#`, which job ids of a request id's later payloads use.
    #[error("request_id {0:?} holds '#', which this daemon uses in the job ids of a request id's later payloads (\"<id>#2\"): use another character")]
    RequestIdHash(String),
}

impl RequestError {
    /// The gRPC status for this error.
    pub fn status(&self) -> Status {
        Status::new(Code::InvalidArgument, self.to_string())
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

/// Validates a submission.
pub fn validate(req: &proto::SubmitProofRequest) -> Result<JobRequest, RequestError> {
    if req.request_id.len() > MAX_REQUEST_ID {
        return Err(RequestError::RequestIdTooLong);
    }
    if req.request_id.chars().any(char::is_control) {
        return Err(RequestError::RequestIdControl(req.request_id.clone()));
    }
    if !req.request_id.is_empty() && req.request_id.bytes().all(|b| b.is_ascii_digit()) {
        return Err(RequestError::RequestIdNumeric(req.request_id.clone()));
    }
    if req.request_id.contains('#') {
        return Err(RequestError::RequestIdHash(req.request_id.clone()));
    }
    let payload = payload_digest(req);
    let kind = proto::ProofKind::try_from(req.proof_kind).map_err(|_| RequestError::UnknownKind(req.proof_kind))?;
    let fil_kind = match kind {
        proto::ProofKind::Unspecified => return Err(RequestError::NoKind),
        proto::ProofKind::Generic => None,
        proto::ProofKind::PorepSealCommit => Some(FilKind::PoRep),
        proto::ProofKind::SnapDealsUpdate => Some(FilKind::SnapDeals),
        proto::ProofKind::WindowPostPartition => Some(FilKind::WindowPoSt),
        proto::ProofKind::WinningPost => Some(FilKind::WinningPoSt),
    };
    let priority = priority(req.priority, kind)?;
    let deadline = (req.deadline_ms > 0).then(|| Duration::from_millis(req.deadline_ms));
    if let Some(fk) = fil_kind {
        let fail = |source| RequestError::Filecoin { kind: kind.as_str_name(), source };
        let request = filecoin_request(req, fk);
        let circuit = cuzk_circuits_filecoin::circuit_of(fk, req.registered_proof).map_err(fail)?;
        if req.sector_size != 0 && req.sector_size != circuit.sector_size {
            return Err(fail(FilError::BadField {
                field: "sector_size",
                reason: format!("{} does not match registered proof {} ({} bytes)", req.sector_size, req.registered_proof, circuit.sector_size),
            }));
        }
        return Ok(JobRequest {
            request_id: req.request_id.clone(),
            kind,
            priority,
            circuit: CircuitShape::Filecoin(circuit),
            filecoin: Some(FilecoinJob { request: Arc::new(request), prepared: None, timing: None }),
            seed: 0,
            partitions: 1,
            deadline,
            payload,
        });
    }
    let g = req.generic.as_ref().ok_or(RequestError::MissingGeneric)?;
    let circuit = BuiltinShape::new(CircuitKind::from_name(&g.circuit)?, g.log_size)?;
    let partitions = g.partitions.max(1);
    if partitions > MAX_PARTITIONS {
        return Err(RequestError::TooManyPartitions(partitions));
    }
    Ok(JobRequest { request_id: req.request_id.clone(), kind, priority, circuit: circuit.into(), filecoin: None, seed: g.seed, partitions, deadline, payload })
}

/// The Filecoin fields of a submission.
pub fn filecoin_request(req: &proto::SubmitProofRequest, kind: FilKind) -> FilRequest {
    FilRequest {
        kind,
        registered_proof: req.registered_proof,
        vanilla_proof: req.vanilla_proof.clone(),
        vanilla_proofs: req.vanilla_proofs.clone(),
        sector_number: req.sector_number,
        miner_id: req.miner_id,
        randomness: req.randomness.clone(),
        partition_index: req.partition_index,
        comm_r_old: req.comm_r_old.clone(),
        comm_r_new: req.comm_r_new.clone(),
        comm_d_new: req.comm_d_new.clone(),
    }
}

/// What identifies a submission's work: a digest of every field except the request id, the
/// priority and the deadline. Two submissions under one request id with the same payload are
/// the same job.
pub fn payload_digest(req: &proto::SubmitProofRequest) -> [u8; 32] {
    use sha2::Digest;
    let mut r = req.clone();
    r.request_id.clear();
    r.priority = 0;
    r.deadline_ms = 0;
    sha2::Sha256::digest(r.encode_to_vec()).into()
}

/// Parses a Filecoin job's vanilla proofs, verifies them against its public data and builds
/// its partitions (CPU-heavy: run it on a blocking thread). A no-op for generic jobs. With
/// `unchecked` (bench mode only) the vanilla proofs are decoded and their form checked, but
/// not verified (`cuzk_circuits_filecoin::prepare_unchecked`).
pub fn prepare_filecoin(job: &mut JobRequest, unchecked: bool) -> Result<(), RequestError> {
    let Some(f) = job.filecoin.as_mut() else {
        return Ok(());
    };
    if f.prepared.is_some() {
        return Ok(());
    }
    let prepared = if unchecked { cuzk_circuits_filecoin::prepare_unchecked(&f.request) } else { cuzk_circuits_filecoin::prepare(&f.request) };
    let p = prepared.map_err(|source| RequestError::Filecoin { kind: job.kind.as_str_name(), source })?;
    job.partitions = p.partitions() as u32;
    f.prepared = Some(Arc::new(p));
    Ok(())
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
            crate::driver::JobRef::parse(&r.job_id).map_err(|e| Status::invalid_argument(e.0))?;
        }
        "CancelProof" => {
            let r = proto::CancelProofRequest::decode(body).map_err(decode_error)?;
            crate::driver::JobRef::parse(&r.job_id).map_err(|e| Status::invalid_argument(e.0))?;
        }
        "PreloadSRS" => {
            let r = proto::PreloadSrsRequest::decode(body).map_err(decode_error)?;
            CircuitShape::parse(&r.circuit_id).map_err(|e| Status::invalid_argument(e.to_string()))?;
        }
        "EvictSRS" => {
            let r = proto::EvictSrsRequest::decode(body).map_err(decode_error)?;
            CircuitShape::parse(&r.circuit_id).map_err(|e| Status::invalid_argument(e.to_string()))?;
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
