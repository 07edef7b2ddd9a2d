//! `filecoin-proofs`' own prover (bellperson on the CPU) on a request, for comparisons.

use filecoin_proofs::{FallbackPoStSectorProof, SealCommitPhase1Output};
use storage_proofs_core::sector::SectorId;
use storage_proofs_update::PartitionProof;

use crate::error::FilError;
use crate::ids::{porep_config, post_config, update_porep_config, FilKind};
use crate::request::{bytes32, parse_commitment, prover_id, FilRequest};

/// Proves `req` with `filecoin-proofs` (parameters from `FIL_PROOFS_PARAMETER_CACHE`); 2 KiB,
/// 8 MiB and 512 MiB sectors. The PoRep vanilla proof must be filecoin-proofs' own
/// `SealCommitPhase1Output` JSON (what `cuzk gen-vanilla` writes).
pub fn prove(req: &FilRequest) -> Result<Vec<u8>, FilError> {
    type Tree = filecoin_proofs::SectorShape2KiB;
    let fil = FilError::fil;
    let json = |e: serde_json::Error| FilError::Decode(e.to_string());
    if crate::ids::circuit_of(req.kind, req.registered_proof)?.sector_size > 1 << 29 {
        return Err(FilError::field("registered_proof", "the reference prover is wired for 2 KiB, 8 MiB and 512 MiB sectors"));
    }
    match req.kind {
        FilKind::PoRep => {
            let c1: SealCommitPhase1Output<Tree> = serde_json::from_slice(&req.vanilla_proof).map_err(json)?;
            let config = porep_config(req.registered_proof)?;
            Ok(filecoin_proofs::seal_commit_phase2(&config, c1, prover_id(req.miner_id), SectorId::from(req.sector_number)).map_err(fil)?.proof)
        }
        FilKind::SnapDeals => {
            let parts: Vec<PartitionProof<Tree>> = serde_json::from_slice(&req.vanilla_proof).map_err(json)?;
            let config = update_porep_config(req.registered_proof)?;
            let old = parse_commitment(&req.sector_key_cid, "sector_key_cid")?;
            let new = parse_commitment(&req.new_sealed_cid, "new_sealed_cid")?;
            let d = parse_commitment(&req.new_unsealed_cid, "new_unsealed_cid")?;
            Ok(filecoin_proofs::generate_empty_sector_update_proof_with_vanilla::<Tree>(&config, parts, old, new, d).map_err(fil)?.0)
        }
        FilKind::WindowPoSt | FilKind::WinningPoSt => {
            let v: Vec<FallbackPoStSectorProof<Tree>> = serde_json::from_slice(&req.vanilla_proof).map_err(json)?;
            let config = post_config(req.registered_proof, req.kind)?;
            let randomness = bytes32(&req.randomness, "randomness")?;
            let prover = prover_id(req.miner_id);
            if req.kind == FilKind::WindowPoSt {
                Ok(filecoin_proofs::generate_single_window_post_with_vanilla::<Tree>(&config, &randomness, prover, v, req.partition_index as usize)
                    .map_err(fil)?
                    .0)
            } else {
                filecoin_proofs::generate_winning_post_with_vanilla::<Tree>(&config, &randomness, prover, v).map_err(fil)
            }
        }
    }
}
