//! `filecoin-proofs`' own prover (bellperson on the CPU) on a request, for comparisons.

use filecoin_proofs::SealCommitPhase1Output;
use storage_proofs_core::sector::SectorId;

use crate::decode;
use crate::error::FilError;
use crate::ids::{porep_config, post_config, update_porep_config, FilKind};
use crate::request::{bytes32, prover_id, FilRequest};

/// Proves `req` with `filecoin-proofs` (parameters from `FIL_PROOFS_PARAMETER_CACHE`); 2 KiB,
/// 8 MiB and 512 MiB sectors. The request is decoded as [`crate::prepare`] decodes it (any C1
/// layout, Curio's wrapper, bincode elements) and handed to filecoin-proofs' `*_with_vanilla`
/// provers.
pub fn prove(req: &FilRequest) -> Result<Vec<u8>, FilError> {
    type Tree = filecoin_proofs::SectorShape2KiB;
    let fil = FilError::fil;
    if crate::ids::circuit_of(req.kind, req.registered_proof)?.sector_size > 1 << 29 {
        return Err(FilError::field("registered_proof", "the reference prover is wired for 2 KiB, 8 MiB and 512 MiB sectors"));
    }
    match req.kind {
        FilKind::PoRep => {
            let parts = decode::porep::<Tree>(req)?;
            let c1 = SealCommitPhase1Output::<Tree> {
                vanilla_proofs: parts.c1.proofs,
                comm_r: parts.c1.comm_r,
                comm_d: parts.c1.comm_d,
                replica_id: parts.replica_id,
                seed: parts.c1.seed,
                ticket: parts.c1.ticket,
            };
            let config = porep_config(req.registered_proof)?;
            Ok(filecoin_proofs::seal_commit_phase2(&config, c1, prover_id(req.miner_id), SectorId::from(req.sector_number)).map_err(fil)?.proof)
        }
        FilKind::SnapDeals => {
            let parts = decode::snap::<Tree>(req)?;
            let config = update_porep_config(req.registered_proof)?;
            Ok(filecoin_proofs::generate_empty_sector_update_proof_with_vanilla::<Tree>(
                &config,
                parts.proofs,
                parts.comm_r_old,
                parts.comm_r_new,
                parts.comm_d_new,
            )
            .map_err(fil)?
            .0)
        }
        FilKind::WindowPoSt | FilKind::WinningPoSt => {
            let v = decode::post::<Tree>(req)?.proofs;
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
