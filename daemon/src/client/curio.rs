//! Requests as Curio's Go client builds them (`lib/ffi/cuzk_funcs.go` in filecoin-project/curio):
//! the request ids it reuses on every retry, the priority of each kind and the fields each kind
//! sets. `cuzk gen-vanilla` writes fixtures in these encodings and `cuzk submit` / `cuzk load`
//! send them with [`submission`], so the daemon's tests and load runs speak the one wire format
//! Curio speaks.

use cuzk_circuits_filecoin::{circuit_of, wrap_c1_like_curio, FilKind, FilRequest};

use crate::names::proto_kind;
use crate::proto;

/// The request id Curio gives a job of this request (`porep-<miner>-<sector>`,
/// `snap-<miner>-<sector>`, `wdpost-<miner>-<partition>-<randomness[..8]>` with Go's `%d` of a
/// byte slice, `winpost-<miner>-<hex of randomness[..8]>`).
pub fn request_id(r: &FilRequest) -> String {
    let head = &r.randomness[..r.randomness.len().min(8)];
    match r.kind {
        FilKind::PoRep => format!("porep-{}-{}", r.miner_id, r.sector_number),
        FilKind::SnapDeals => format!("snap-{}-{}", r.miner_id, r.sector_number),
        FilKind::WindowPoSt => {
            let bytes: Vec<String> = head.iter().map(u8::to_string).collect();
            format!("wdpost-{}-{}-[{}]", r.miner_id, r.partition_index, bytes.join(" "))
        }
        FilKind::WinningPoSt => format!("winpost-{}-{}", r.miner_id, hex::encode(head)),
    }
}

/// The priority Curio sends for a kind: NORMAL for PoRep and SnapDeals, HIGH for WindowPoSt,
/// CRITICAL for WinningPoSt.
pub fn priority(kind: FilKind) -> proto::Priority {
    match kind {
        FilKind::PoRep | FilKind::SnapDeals => proto::Priority::Normal,
        FilKind::WindowPoSt => proto::Priority::High,
        FilKind::WinningPoSt => proto::Priority::Critical,
    }
}

/// A fixture from `cuzk_circuits_filecoin::fixtures` (or a synthetic request) in Curio's
/// encodings: the PoRep C1 output as filecoin-ffi hands it to Curio (filecoin-proofs-api's
/// `SealCommitPhase1Output`, [`cuzk_circuits_filecoin::ffi_layout`]) inside Curio's
/// `{"SectorNum", "Phase1Out", "SectorSize"}` wrapper (the other kinds' fields are already as
/// Curio sends them). A request already wrapped is returned unchanged; a C1 output that does
/// not parse is an error.
pub fn from_fixture(mut r: FilRequest) -> Result<FilRequest, cuzk_circuits_filecoin::FilError> {
    if r.kind == FilKind::PoRep && !r.vanilla_proof.starts_with(b"{\"SectorNum\"") {
        let size = circuit_of(r.kind, r.registered_proof).map_or(0, |c| c.sector_size);
        let api = cuzk_circuits_filecoin::ffi_layout(&r.vanilla_proof, r.registered_proof)?;
        r.vanilla_proof = wrap_c1_like_curio(&api, r.sector_number, size);
    }
    Ok(r)
}

/// The `SubmitProofRequest` Curio sends for `r`: only the fields its Go code sets for that
/// kind, with its request id and priority.
pub fn submission(r: &FilRequest) -> proto::SubmitProofRequest {
    let sector_size = circuit_of(r.kind, r.registered_proof).map_or(0, |c| c.sector_size);
    let mut s = proto::SubmitProofRequest {
        request_id: request_id(r),
        proof_kind: proto_kind(r.kind) as i32,
        sector_size,
        registered_proof: r.registered_proof,
        priority: priority(r.kind) as i32,
        miner_id: r.miner_id,
        ..Default::default()
    };
    match r.kind {
        FilKind::PoRep => {
            s.vanilla_proof = r.vanilla_proof.clone();
            s.sector_number = r.sector_number;
        }
        FilKind::SnapDeals => {
            s.vanilla_proofs = r.vanilla_proofs.clone();
            s.sector_number = r.sector_number;
            s.comm_r_old = r.comm_r_old.clone();
            s.comm_r_new = r.comm_r_new.clone();
            s.comm_d_new = r.comm_d_new.clone();
        }
        FilKind::WindowPoSt => {
            s.vanilla_proofs = r.vanilla_proofs.clone();
            s.randomness = r.randomness.clone();
            s.partition_index = r.partition_index;
        }
        FilKind::WinningPoSt => {
            s.vanilla_proofs = r.vanilla_proofs.clone();
            s.randomness = r.randomness.clone();
        }
    }
    s
}

/// Reads a request file (JSON, as `cuzk gen-vanilla` writes it).
pub fn read_request(path: &std::path::Path) -> Result<FilRequest, crate::CliError> {
    let bytes = std::fs::read(path).map_err(|source| crate::CliError::Io { path: path.into(), source })?;
    serde_json::from_slice(&bytes).map_err(|e| crate::CliError::Usage(format!("{}: not a Filecoin request: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(kind: FilKind) -> FilRequest {
        FilRequest {
            kind,
            registered_proof: 0,
            vanilla_proof: Vec::new(),
            vanilla_proofs: Vec::new(),
            sector_number: 42,
            miner_id: 1000,
            randomness: (1..=32).collect(),
            partition_index: 3,
            comm_r_old: Vec::new(),
            comm_r_new: Vec::new(),
            comm_d_new: Vec::new(),
        }
    }

    #[test]
    fn request_ids_are_formatted_as_go_formats_them() {
        // Go: fmt.Sprintf("wdpost-%d-%d-%d", 1000, 3, randomness[:8]) and
        // fmt.Sprintf("winpost-%d-%x", 1000, randomness[:8]).
        assert_eq!(request_id(&req(FilKind::WindowPoSt)), "wdpost-1000-3-[1 2 3 4 5 6 7 8]");
        assert_eq!(request_id(&req(FilKind::WinningPoSt)), "winpost-1000-0102030405060708");
        assert_eq!(request_id(&req(FilKind::PoRep)), "porep-1000-42");
        assert_eq!(request_id(&req(FilKind::SnapDeals)), "snap-1000-42");
    }
}
