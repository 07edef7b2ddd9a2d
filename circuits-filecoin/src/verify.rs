//! Filecoin's own verifiers (`verify_seal`, `verify_empty_sector_update_proof`,
//! `verify_window_post`, `verify_winning_post`) applied to a request and a proof.
//!
//! They read verifying keys from `filecoin-proofs`' parameter cache, which it takes from
//! `FIL_PROOFS_PARAMETER_CACHE` once per process: call [`use_cache_dir`] before the first
//! verification.

use std::collections::BTreeMap;
use std::path::Path;

use filecoin_proofs::PublicReplicaInfo;
use storage_proofs_core::sector::SectorId;

use crate::decode::{c1_parts, post_sectors, with_tree};
use crate::error::FilError;
use crate::ids::{circuit_of, porep_config, post_config, update_porep_config, FilKind};
use crate::request::{bytes32, parse_commitment, prover_id, CommitmentKind, FilRequest};

/// Points `filecoin-proofs` at `dir` (sets `FIL_PROOFS_PARAMETER_CACHE`; effective only before
/// its settings are first read in this process).
pub fn use_cache_dir(dir: &Path) {
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", dir);
}

/// Verifies `proof` (concatenated partition proofs) for `req` with Filecoin's verifier for its
/// kind. `Ok(false)` is an invalid proof; errors are inputs the verifier refused.
pub fn verify(req: &FilRequest, proof: &[u8]) -> Result<bool, FilError> {
    let size = circuit_of(req.kind, req.registered_proof)?.sector_size;
    let fil = FilError::fil;
    match req.kind {
        FilKind::PoRep => {
            let config = porep_config(req.registered_proof)?;
            // Only the public fields: the vanilla proofs are not read.
            let c1 = c1_parts::<serde::de::IgnoredAny>(&req.vanilla_proof)?;
            with_tree!(size, T => filecoin_proofs::verify_seal::<T>(&config, c1.comm_r, c1.comm_d, prover_id(req.miner_id), SectorId::from(req.sector_number), c1.ticket, c1.seed, proof).map_err(fil))
        }
        FilKind::SnapDeals => {
            let config = update_porep_config(req.registered_proof)?;
            let old = parse_commitment(&req.comm_r_old, "comm_r_old", CommitmentKind::Sealed)?;
            let new = parse_commitment(&req.comm_r_new, "comm_r_new", CommitmentKind::Sealed)?;
            let d = parse_commitment(&req.comm_d_new, "comm_d_new", CommitmentKind::Unsealed)?;
            with_tree!(size, T => filecoin_proofs::verify_empty_sector_update_proof::<T>(&config, proof, old, new, d).map_err(fil))
        }
        FilKind::WindowPoSt => {
            let config = post_config(req.registered_proof, req.kind)?;
            let randomness = bytes32(&req.randomness, "randomness")?;
            let mut replicas = BTreeMap::new();
            for (id, comm_r) in post_sectors(req)? {
                replicas.insert(SectorId::from(id), PublicReplicaInfo::new(comm_r).map_err(fil)?);
            }
            with_tree!(size, T => filecoin_proofs::verify_window_post::<T>(&config, &randomness, &replicas, prover_id(req.miner_id), proof).map_err(fil))
        }
        FilKind::WinningPoSt => {
            let config = post_config(req.registered_proof, req.kind)?;
            let randomness = bytes32(&req.randomness, "randomness")?;
            let replicas = post_sectors(req)?
                .into_iter()
                .map(|(id, c)| Ok((SectorId::from(id), PublicReplicaInfo::new(c).map_err(fil)?)))
                .collect::<Result<Vec<_>, FilError>>()?;
            with_tree!(size, T => filecoin_proofs::verify_winning_post::<T>(&config, &randomness, &replicas, prover_id(req.miner_id), proof).map_err(fil))
        }
    }
}
