//! The native witness of a PoRep partition (`StackedCircuit`).
//!
//! A partition's header (the replica id and its bits, the commitments,
//! `comm_r = H(comm_c, comm_r_last)`) is written by Filecoin's own gadgets; each challenge is
//! written by [`write_challenge`], which computes with `cuzk-gadget-witness` exactly the values
//! `stacked::circuit::params::Proof::synthesize` assigns, in its order: the data leaf and its
//! comm_d path, the DRG and expansion parents' columns with their hashes and comm_c paths, the
//! challenge index, one label per layer (the parents' bits and the SHA-256 of the labeling
//! preimage), the encoded node and its comm_r_last path, and the challenged column's hash and
//! comm_c path. `tests/witness.rs` checks it index for index against sequential synthesis.
//!
//! Filecoin keeps the parts of a vanilla proof the circuit reads (`ColumnProof`'s inclusion
//! proof, a labeling proof's node) crate-private; they are read through the proof's own serde
//! encoding into [`ColumnParts`] and [`LabelingParts`], which mirror those structures' fields.

use std::marker::PhantomData;

use blstrs::Scalar;
use cuzk_gadget_witness::bits::{num_to_bits_le, pack_bits, reverse_bit_numbering, Bit};
use cuzk_gadget_witness::column::{alloc_column, hash_single_column};
use cuzk_gadget_witness::por::{por_poseidon, por_sha256, Root, ShapeError};
use cuzk_gadget_witness::sha256::sha256;
use cuzk_gadget_witness::uint32::{U32, U64};
use cuzk_gadget_witness::Assignment;
use ff::PrimeField;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use storage_proofs_core::merkle::{MerkleProof, MerkleProofTrait, MerkleTreeTrait};
use typenum::Unsigned;

use crate::error::FilError;

/// Labels are hashed from 37 parents: the DRG parents (and from layer 2 on the expansion
/// parents) repeated, as Filecoin's `create_label_circuit` takes them.
const TOTAL_PARENTS: usize = 37;

/// What one challenge of a partition reads from its vanilla proof.
#[derive(Debug, Clone)]
pub(crate) struct ChallengeInputs {
    data_leaf: Scalar,
    comm_d_path: Path,
    drg_parents: Vec<ColumnInputs>,
    exp_parents: Vec<ColumnInputs>,
    challenge: u64,
    comm_r_last_path: Path,
    comm_c_path: Path,
}

/// A column of the replica and its path in the comm_c tree.
#[derive(Debug, Clone)]
struct ColumnInputs {
    rows: Vec<Scalar>,
    path: Path,
}

/// The fields of `storage_proofs_porep::stacked::vanilla::Column`, in its serde order.
#[derive(Deserialize)]
struct ColumnRows<D> {
    _index: u32,
    rows: Vec<D>,
    _h: PhantomData<()>,
}

/// The fields of `storage_proofs_porep::stacked::vanilla::ColumnProof`, in its serde order.
#[derive(Deserialize)]
struct ColumnParts<D, P> {
    column: ColumnRows<D>,
    inclusion_proof: P,
}

/// The fields of `storage_proofs_porep::stacked::vanilla::LabelingProof`, in its serde order.
#[derive(Deserialize)]
struct LabelingParts<D> {
    _parents: Vec<D>,
    _layer_index: u32,
    node: u64,
}

/// Re-reads `value` as `T` through its bincode encoding.
fn mirror<T: DeserializeOwned>(value: &impl Serialize, what: &str) -> Result<T, FilError> {
    let bytes = bincode::serialize(value).map_err(|e| FilError::Filecoin(format!("encoding {what}: {e}")))?;
    bincode::deserialize(&bytes).map_err(|e| FilError::Filecoin(format!("reading {what}: {e}")))
}

/// A Merkle path: siblings and index per level, as the circuit's `AuthPath` takes them.
pub(crate) type Path = Vec<(Vec<Scalar>, usize)>;

/// A Merkle proof's siblings and indices per level, as the circuit's `AuthPath` takes them.
pub(crate) fn path_of<P: MerkleProofTrait>(proof: &P) -> Result<Path, FilError> {
    proof
        .as_options()
        .into_iter()
        .map(|(siblings, index)| {
            let siblings = siblings.into_iter().collect::<Option<Vec<Scalar>>>();
            match (siblings, index) {
                (Some(s), Some(i)) => Ok((s, i)),
                _ => Err(FilError::Filecoin("a Merkle proof without values".into())),
            }
        })
        .collect()
}

type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

fn column_inputs<Tree: 'static + MerkleTreeTrait>(proof: &storage_proofs_porep::stacked::ColumnProof<TreeProof<Tree>>) -> Result<ColumnInputs, FilError> {
    let parts: ColumnParts<<Tree::Hasher as filecoin_hashers::Hasher>::Domain, TreeProof<Tree>> = mirror(proof, "a column proof")?;
    Ok(ColumnInputs { rows: parts.column.rows.into_iter().map(Into::into).collect(), path: path_of(&parts.inclusion_proof)? })
}

impl ChallengeInputs {
    /// Reads what the circuit of one challenge takes from its vanilla proof.
    pub(crate) fn of<Tree: 'static + MerkleTreeTrait>(proof: &filecoin_proofs::VanillaSealProof<Tree>) -> Result<ChallengeInputs, FilError> {
        let labeling = proof.labeling_proofs.first().ok_or_else(|| FilError::Filecoin("a PoRep challenge without labeling proofs".into()))?;
        let labeling: LabelingParts<<Tree::Hasher as filecoin_hashers::Hasher>::Domain> = mirror(labeling, "a labeling proof")?;
        let columns = &proof.replica_column_proofs;
        let comm_c: ColumnParts<<Tree::Hasher as filecoin_hashers::Hasher>::Domain, TreeProof<Tree>> = mirror(&columns.c_x, "the challenge's column proof")?;
        Ok(ChallengeInputs {
            data_leaf: proof.comm_d_proofs.leaf().into(),
            comm_d_path: path_of(&proof.comm_d_proofs)?,
            drg_parents: columns.drg_parents.iter().map(column_inputs::<Tree>).collect::<Result<_, _>>()?,
            exp_parents: columns.exp_parents.iter().map(column_inputs::<Tree>).collect::<Result<_, _>>()?,
            challenge: labeling.node,
            comm_r_last_path: path_of(&proof.comm_r_last_proof)?,
            comm_c_path: path_of(&comm_c.inclusion_proof)?,
        })
    }
}

/// The arities of a tree's base, sub and top levels.
pub(crate) fn arities<Tree: MerkleTreeTrait>() -> (usize, usize, usize) {
    (Tree::Arity::to_usize(), Tree::SubTreeArity::to_usize(), Tree::TopTreeArity::to_usize())
}

/// The replica id's bits as the header leaves them for the challenges: its 255 allocated bits
/// in little-endian order, padded to a byte with a constant and reversed within each byte
/// (`reverse_bit_numbering`).
pub(crate) fn replica_id_bits(replica_id: Scalar) -> Vec<Bit> {
    let mut scratch = Assignment::new(&mut [], &mut []);
    reverse_bit_numbering(&num_to_bits_le(&mut scratch, replica_id))
}

/// The commitments a challenge's paths end in (allocated by the header).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Roots {
    pub comm_d: Scalar,
    pub comm_c: Scalar,
    pub comm_r_last: Scalar,
}

/// Writes one challenge's assignment (everything `Proof::synthesize` allocates) into `a`.
pub(crate) fn write_challenge(
    a: &mut Assignment<'_>,
    replica_id: &[Bit],
    roots: Roots,
    c: &ChallengeInputs,
    arities: (usize, usize, usize),
) -> Result<(), FilError> {
    let layers = c.drg_parents.first().map_or(0, |p| p.rows.len());
    if !matches!(layers, 2 | 11) || c.exp_parents.is_empty() || c.drg_parents.iter().chain(&c.exp_parents).any(|p| p.rows.len() != layers) {
        return Err(FilError::Filecoin(format!("a PoRep challenge with columns of {layers} layers, or uneven or empty ones")));
    }
    a.aux(c.data_leaf);
    let shape = |what: &'static str| move |e: ShapeError| FilError::Filecoin(format!("{what}: {e}"));
    por_sha256(a, Root::Var(c.data_leaf), &c.comm_d_path, Root::Var(roots.comm_d), true).map_err(shape("comm_d path"))?;
    for parent in c.drg_parents.iter().chain(&c.exp_parents) {
        alloc_column(a, &parent.rows);
        let hash = hash_single_column(a, &parent.rows);
        por_poseidon(a, Root::Var(hash), &parent.path, arities, Root::Var(roots.comm_c), true).map_err(shape("a parent's comm_c path"))?;
    }
    let challenge = U64::alloc(a, c.challenge);
    challenge.pack_into_input(a);

    let mut labels = Vec::with_capacity(layers);
    let mut parents: Vec<Vec<Bit>> = Vec::with_capacity(c.drg_parents.len() + c.exp_parents.len());
    for layer in 1..=layers {
        parents.clear();
        for p in &c.drg_parents {
            parents.push(reverse_bit_numbering(&num_to_bits_le(a, p.rows[layer - 1])));
        }
        if layer > 1 {
            for p in &c.exp_parents {
                parents.push(reverse_bit_numbering(&num_to_bits_le(a, p.rows[layer - 2])));
            }
        }
        labels.push(label(a, replica_id, &parents, layer as u32, &challenge));
    }

    let encoded = labels[layers - 1] + c.data_leaf;
    a.aux(encoded);
    por_poseidon(a, Root::Var(encoded), &c.comm_r_last_path, arities, Root::Var(roots.comm_r_last), true).map_err(shape("comm_r_last path"))?;
    let hash = hash_single_column(a, &labels);
    por_poseidon(a, Root::Var(hash), &c.comm_c_path, arities, Root::Var(roots.comm_c), true).map_err(shape("comm_c path"))?;
    Ok(())
}

/// `create_label_circuit`: SHA-256 of the replica id, the layer and node, and 37 parents (the
/// given ones repeated), each in a 256-bit slot; the digest's bits reversed within bytes and
/// packed into one field element (its first 254 bits).
fn label(a: &mut Assignment<'_>, replica_id: &[Bit], parents: &[Vec<Bit>], layer: u32, node: &U64) -> Scalar {
    let mut preimage = Vec::with_capacity((2 + TOTAL_PARENTS) * 256);
    preimage.extend_from_slice(replica_id);
    preimage.resize(preimage.len().max(256), Bit::Constant(false));
    preimage.extend_from_slice(&U32::constant(layer).bits_be());
    preimage.extend_from_slice(&node.to_bits_be());
    preimage.resize(preimage.len().max(512), Bit::Constant(false));
    for parent in parents.iter().cycle().take(TOTAL_PARENTS) {
        preimage.extend_from_slice(parent);
        preimage.resize(preimage.len().div_ceil(256) * 256, Bit::Constant(false));
    }
    let digest = reverse_bit_numbering(&sha256(a, &preimage));
    pack_bits(a, &digest[..Scalar::CAPACITY as usize])
}
