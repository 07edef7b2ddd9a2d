//! The native witness of a PoSt partition (`FallbackPoStCircuit`, WindowPoSt and WinningPoSt).
//!
//! The circuit allocates nothing before its sectors and each sector's variables are its own,
//! so a partition is `sector_count` equal runs, each written by [`write_sector`] on its own
//! thread: what `&Sector<Tree>`'s `synthesize` assigns, in its order: `comm_r_last`,
//! `comm_c` and `comm_r`, `comm_r` as an input, the Poseidon hash of `comm_c` and
//! `comm_r_last`, then per challenge the leaf and its private inclusion path into
//! `comm_r_last`. `tests/witness.rs` checks it index for index against sequential synthesis.

use blstrs::Scalar;
use cuzk_gadget_witness::por::{por_poseidon, Root, ShapeError};
use cuzk_gadget_witness::poseidon::hash_multi_leaf;
use cuzk_gadget_witness::Assignment;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_post::fallback::{FallbackPoStCircuit, SectorProof};

use crate::error::FilError;
use crate::porep::witness::{path_of, Path};

/// What one sector of a partition reads from its public sector and its vanilla proof.
#[derive(Debug, Clone)]
pub(crate) struct SectorInputs {
    comm_r: Scalar,
    comm_c: Scalar,
    comm_r_last: Scalar,
    /// Per challenge, the leaf and its path in the `comm_r_last` tree.
    challenges: Vec<(Scalar, Path)>,
}

impl SectorInputs {
    /// The sectors of `circuit` (Filecoin's constructor: public sectors padded with the last
    /// one) with their paths from `proofs`, the partition's sector proofs in the same order.
    pub(crate) fn of<Tree: 'static + MerkleTreeTrait>(
        circuit: &FallbackPoStCircuit<Tree>,
        proofs: &[SectorProof<<Tree as MerkleTreeTrait>::Proof>],
    ) -> Result<Vec<SectorInputs>, FilError> {
        if circuit.sectors.len() != proofs.len() {
            return Err(FilError::Filecoin(format!("{} circuit sectors for {} sector proofs", circuit.sectors.len(), proofs.len())));
        }
        let missing = || FilError::Filecoin("a PoSt sector without values".into());
        circuit
            .sectors
            .iter()
            .zip(proofs)
            .map(|(s, p)| {
                if s.leafs.len() != p.inclusion_proofs.len() {
                    return Err(FilError::Filecoin(format!("{} leaves for {} inclusion proofs", s.leafs.len(), p.inclusion_proofs.len())));
                }
                let challenges = s
                    .leafs
                    .iter()
                    .zip(&p.inclusion_proofs)
                    .map(|(leaf, proof)| Ok((leaf.ok_or_else(missing)?, path_of(proof)?)))
                    .collect::<Result<_, FilError>>()?;
                Ok(SectorInputs {
                    comm_r: s.comm_r.ok_or_else(missing)?,
                    comm_c: s.comm_c.ok_or_else(missing)?,
                    comm_r_last: s.comm_r_last.ok_or_else(missing)?,
                    challenges,
                })
            })
            .collect()
    }
}

/// Writes one sector's assignment (everything `&Sector<Tree>`'s `synthesize` allocates) into
/// `a`, for a `comm_r_last` tree of `arities`.
pub(crate) fn write_sector(a: &mut Assignment<'_>, s: &SectorInputs, arities: (usize, usize, usize)) -> Result<(), ShapeError> {
    a.aux(s.comm_r_last);
    a.aux(s.comm_c);
    a.aux(s.comm_r);
    a.input(s.comm_r); // `inputize`
    hash_multi_leaf(a, &[s.comm_c, s.comm_r_last]); // `hash2_circuit`, then constrained equal to comm_r
    for (leaf, path) in &s.challenges {
        por_poseidon(a, Root::Val(*leaf), path, arities, Root::Var(s.comm_r_last), true)?;
    }
    Ok(())
}
