//! Validation of API requests into jobs; every bad request maps to a clear gRPC status.

use std::sync::Arc;
use std::time::Duration;

use cuzk_circuits_filecoin::{FilError, FilKind, FilRequest};
use cuzk_core::circuit::WitnessCheck;
use cuzk_core::engine::Priority;
use prost::Message;
use tonic::{Code, Status};

use crate::circuits::{CircuitShape, GenericShape, ParamChoice};
use crate::families::GenericError;
use crate::proto;

/// Most partitions one generic job may have.
pub const MAX_PARTITIONS: u32 = 64;
use crate::names::{kind_name, proto_kind};
use crate::server::driver::{FilecoinJob, JobRequest, MAX_REQUEST_ID};

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
    Circuit(#[from] GenericError),
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
    /// A field the proof kind does not read is set.
    #[error("{kind} does not use {field} (set to {value}): leave it unset")]
    UnusedField {
        /// The proof kind.
        kind: &'static str,
        /// The field.
        field: &'static str,
        /// What it holds.
        value: String,
    },
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

/// The fields of a submission each proof kind reads, beside the request id, the kind, the
/// priority and the deadline; any other field set is refused, not ignored.
fn fields_used(kind: proto::ProofKind) -> &'static [&'static str] {
    use proto::ProofKind as K;
    match kind {
        K::PorepSealCommit => &["sector_size", "registered_proof", "vanilla_proof", "sector_number", "miner_id"],
        K::SnapDealsUpdate => &["sector_size", "registered_proof", "vanilla_proofs", "sector_number", "miner_id", "comm_r_old", "comm_r_new", "comm_d_new"],
        K::WindowPostPartition => &["sector_size", "registered_proof", "vanilla_proofs", "miner_id", "randomness", "partition_index"],
        K::WinningPost => &["sector_size", "registered_proof", "vanilla_proofs", "miner_id", "randomness"],
        K::Generic => &["generic"],
        K::Unspecified => &[],
    }
}

/// Validates a submission (taking its payload, which the job then holds).
pub fn validate(req: proto::SubmitProofRequest) -> Result<JobRequest, RequestError> {
    let payload = payload_digest(&req);
    let proto::SubmitProofRequest {
        request_id,
        proof_kind,
        sector_size,
        registered_proof,
        priority: api_priority,
        vanilla_proof,
        vanilla_proofs,
        sector_number,
        miner_id,
        randomness,
        partition_index,
        comm_r_old,
        comm_r_new,
        comm_d_new,
        generic,
        deadline_ms,
    } = req;
    if request_id.len() > MAX_REQUEST_ID {
        return Err(RequestError::RequestIdTooLong);
    }
    if request_id.chars().any(char::is_control) {
        return Err(RequestError::RequestIdControl(request_id));
    }
    if !request_id.is_empty() && request_id.bytes().all(|b| b.is_ascii_digit()) {
        return Err(RequestError::RequestIdNumeric(request_id));
    }
    if request_id.contains('#') {
        return Err(RequestError::RequestIdHash(request_id));
    }
    let kind = proto::ProofKind::try_from(proof_kind).map_err(|_| RequestError::UnknownKind(proof_kind))?;
    let bytes = |b: &[u8]| format!("{} bytes", b.len());
    let set: [(&str, Option<String>); 11] = [
        ("sector_size", (sector_size != 0).then(|| sector_size.to_string())),
        ("registered_proof", (registered_proof != 0).then(|| registered_proof.to_string())),
        ("vanilla_proof", (!vanilla_proof.is_empty()).then(|| bytes(&vanilla_proof))),
        ("vanilla_proofs", (!vanilla_proofs.is_empty()).then(|| format!("{} entries", vanilla_proofs.len()))),
        ("sector_number", (sector_number != 0).then(|| sector_number.to_string())),
        ("miner_id", (miner_id != 0).then(|| miner_id.to_string())),
        ("randomness", (!randomness.is_empty()).then(|| bytes(&randomness))),
        ("partition_index", (partition_index != 0).then(|| partition_index.to_string())),
        ("comm_r_old", (!comm_r_old.is_empty()).then(|| bytes(&comm_r_old))),
        ("comm_r_new", (!comm_r_new.is_empty()).then(|| bytes(&comm_r_new))),
        ("comm_d_new", (!comm_d_new.is_empty()).then(|| bytes(&comm_d_new))),
    ];
    let generic_set = generic.as_ref().map(|_| "set".to_string());
    if kind != proto::ProofKind::Unspecified {
        let used = fields_used(kind);
        for (field, value) in set.into_iter().chain([("generic", generic_set)]) {
            if let Some(value) = value.filter(|_| !used.contains(&field)) {
                return Err(RequestError::UnusedField { kind: kind.as_str_name(), field, value });
            }
        }
    }
    let fil_kind = match kind {
        proto::ProofKind::Unspecified => return Err(RequestError::NoKind),
        proto::ProofKind::Generic => None,
        proto::ProofKind::PorepSealCommit => Some(FilKind::PoRep),
        proto::ProofKind::SnapDealsUpdate => Some(FilKind::SnapDeals),
        proto::ProofKind::WindowPostPartition => Some(FilKind::WindowPoSt),
        proto::ProofKind::WinningPost => Some(FilKind::WinningPoSt),
    };
    let priority = priority(api_priority, kind)?;
    let deadline = (deadline_ms > 0).then(|| Duration::from_millis(deadline_ms));
    if let Some(fk) = fil_kind {
        let fail = |source| RequestError::Filecoin { kind: kind.as_str_name(), source };
        let circuit = cuzk_circuits_filecoin::circuit_of(fk, registered_proof).map_err(fail)?;
        if sector_size != 0 && sector_size != circuit.sector_size {
            return Err(fail(FilError::BadField {
                field: "sector_size",
                reason: format!("{sector_size} does not match registered proof {registered_proof} ({} bytes)", circuit.sector_size),
            }));
        }
        let request = FilRequest {
            kind: fk,
            registered_proof,
            vanilla_proof,
            vanilla_proofs,
            sector_number,
            miner_id,
            randomness,
            partition_index,
            comm_r_old,
            comm_r_new,
            comm_d_new,
        };
        return Ok(JobRequest {
            request_id,
            kind: kind_name(kind),
            priority,
            circuit: CircuitShape::Filecoin(circuit),
            filecoin: Some(FilecoinJob { request: Arc::new(request), prepared: None }),
            witness: WitnessCheck::Enforce,
            params: ParamChoice::File,
            seed: 0,
            partitions: 1,
            deadline,
            payload,
            restored: false,
        });
    }
    let g = generic.ok_or(RequestError::MissingGeneric)?;
    let circuit = GenericShape::new(&g.circuit, g.log_size)?;
    let partitions = g.partitions.max(1);
    if partitions > MAX_PARTITIONS {
        return Err(RequestError::TooManyPartitions(partitions));
    }
    Ok(JobRequest {
        request_id,
        kind: kind_name(kind),
        priority,
        circuit: circuit.into(),
        filecoin: None,
        witness: WitnessCheck::Trusted,
        params: ParamChoice::File,
        seed: g.seed,
        partitions,
        deadline,
        payload,
        restored: false,
    })
}

/// What identifies a submission's work: a digest of every field except the request id, the
/// priority and the deadline, each with its length (no copy of the payload is made). Two
/// submissions under one request id with the same payload are the same job.
pub fn payload_digest(req: &proto::SubmitProofRequest) -> [u8; 32] {
    use sha2::Digest;
    // Naming every field: a field added to the message must be placed here.
    let proto::SubmitProofRequest {
        request_id: _,
        priority: _,
        deadline_ms: _,
        proof_kind,
        sector_size,
        registered_proof,
        vanilla_proof,
        vanilla_proofs,
        sector_number,
        miner_id,
        randomness,
        partition_index,
        comm_r_old,
        comm_r_new,
        comm_d_new,
        generic,
    } = req;
    let mut h = sha2::Sha256::new();
    let mut put = |b: &[u8]| {
        h.update((b.len() as u64).to_le_bytes());
        h.update(b);
    };
    put(&proof_kind.to_le_bytes());
    put(&sector_size.to_le_bytes());
    put(&registered_proof.to_le_bytes());
    put(vanilla_proof);
    put(&(vanilla_proofs.len() as u64).to_le_bytes());
    for v in vanilla_proofs {
        put(v);
    }
    put(&sector_number.to_le_bytes());
    put(&miner_id.to_le_bytes());
    put(randomness);
    put(&partition_index.to_le_bytes());
    put(comm_r_old);
    put(comm_r_new);
    put(comm_d_new);
    put(&generic.as_ref().map(|g| g.encode_to_vec()).unwrap_or_default());
    put(&[u8::from(generic.is_some())]);
    h.finalize().into()
}

/// Parses a Filecoin job's vanilla proofs, verifies them against its public data and builds
/// its partitions (CPU-heavy: run it on a blocking thread). A no-op for generic jobs. A job
/// whose witness checks are ignored has its vanilla proofs decoded and their form checked,
/// but not verified (`cuzk_circuits_filecoin::prepare_unchecked`).
pub fn prepare_filecoin(job: &mut JobRequest) -> Result<(), RequestError> {
    let unchecked = job.witness == WitnessCheck::Ignore;
    let Some(f) = job.filecoin.as_mut() else {
        return Ok(());
    };
    if f.prepared.is_some() {
        return Ok(());
    }
    let prepared = if unchecked { cuzk_circuits_filecoin::prepare_unchecked(&f.request) } else { cuzk_circuits_filecoin::prepare(&f.request) };
    let kind = proto_kind(f.request.kind).as_str_name();
    let p = prepared.map_err(|source| RequestError::Filecoin { kind, source })?;
    job.partitions = p.partitions() as u32;
    f.prepared = Some(Arc::new(p));
    Ok(())
}

/// Decodes the body of a call to `method` (a `ProvingEngine` method name) and validates it as
/// the server would; the fuzz target's entry point. Never panics.
pub fn decode_request(method: &str, body: &[u8]) -> Result<(), Status> {
    use crate::codec::{decode, decode_error};
    match method {
        "SubmitProof" => {
            validate(decode::<proto::SubmitProofRequest>(body)?)?;
        }
        "Prove" => {
            validate(decode::<proto::ProveRequest>(body)?.submit.unwrap_or_default())?;
        }
        "AwaitProof" => {
            let r = proto::AwaitProofRequest::decode(body).map_err(decode_error)?;
            crate::server::driver::JobRef::parse(&r.job_id).map_err(|e| Status::invalid_argument(e.0))?;
        }
        "CancelProof" => {
            let r = proto::CancelProofRequest::decode(body).map_err(decode_error)?;
            crate::server::driver::JobRef::parse(&r.job_id).map_err(|e| Status::invalid_argument(e.0))?;
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
