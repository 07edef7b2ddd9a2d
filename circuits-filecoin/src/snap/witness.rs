//! The native witness of a SnapDeals partition (`EmptySectorUpdateCircuit`).
//!
//! A partition's header (`k_and_h_select` and its bits, the packed partition index, the three
//! commitments, `phi = H(comm_d_new, comm_r_old)`, `comm_c`, both replica roots, the apex
//! leaves, the partition path, both `comm_r = H(comm_c, root_r)` checks, the apex tree and its
//! path to `comm_d_new`, and every challenge's generated bits) is written by Filecoin's own
//! gadgets. Each challenge (one iteration of the circuit's loop over `generated_bits`) is
//! written by [`SnapPartition::write_challenge`], which pushes exactly what the gadgets
//! allocate, in their order:
//!
//! 1. `get_challenge_high_bits`: per `h` in `hs` (6 of them) the packed `h` high challenge bits
//!    (`pack_bits`: 1) and that value times its `h_select` bit (1); then their sum (1);
//! 2. `rho = H(phi, c_high)`: Poseidon of arity 2 with the `GEN_RANDOMNESS` domain tag (311);
//! 3. `leaf_r_old`, `leaf_d_new` (1 each); `label_r_new`: `leaf_d_new * rho` and
//!    `leaf_r_old + leaf_d_new * rho` (1 each);
//! 4. the old replica path's siblings (arity - 1 per level), then `por_no_challenge_input`
//!    into TreeR (per level the insertion and the Poseidon hash; the index bits are the
//!    challenge's bits, allocated by the header; the root is only constrained);
//! 5. the same for the new replica path, from the computed `leaf_r_new`;
//! 6. `select` of the challenge's apex leaf among the partition's apex leaves (`count - 1`
//!    picks);
//! 7. the data path's siblings up to the apex leaf (1 per level), then `por_no_challenge_input`
//!    into TreeD (per level the insertion of 2 and the SHA-256 of the two nodes' bits).
//!
//! A challenge allocates no input. Everything is read from the partition's circuit (whose
//! fields are public); the values the header computes (the challenge bits, `phi`) are computed
//! natively. `tests/witness.rs` checks the result index for index against sequential
//! synthesis.

use blstrs::Scalar;
use cuzk_gadget_witness::bits::{pack_bits, Bit};
use cuzk_gadget_witness::por::{por_no_challenge_input_poseidon, por_no_challenge_input_sha256, select_num};
use cuzk_gadget_witness::poseidon::{poseidon_hash, poseidon_value};
use cuzk_gadget_witness::Assignment;
use ff::{Field, PrimeField};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_update::constants::{hs, POSEIDON_CONSTANTS_GEN_RANDOMNESS};
use storage_proofs_update::EmptySectorUpdateCircuit;
use typenum::Unsigned;

use crate::error::FilError;

/// The root-level namespace where the circuit starts its first challenge (the header ends).
pub(crate) const FIRST_CHALLENGE: &str = "get_challenge_high_bits (c_index=0)";

fn bad(detail: impl Into<String>) -> FilError {
    FilError::Filecoin(format!("SnapDeals native witness: {}", detail.into()))
}

/// What one challenge reads from its Merkle proofs.
#[derive(Debug, Clone)]
struct ChallengeInputs {
    leaf_r_old: Scalar,
    leaf_d_new: Scalar,
    leaf_r_new: Scalar,
    path_r_old: Vec<Vec<Scalar>>,
    path_r_new: Vec<Vec<Scalar>>,
    /// The data path's first sibling per level, up to the apex leaf.
    path_to_apex_leaf: Vec<Scalar>,
}

/// Everything the challenges of one partition read: the header's values and each challenge's
/// proofs.
#[derive(Debug, Clone)]
pub(crate) struct SnapPartition {
    /// Per challenge, its `challenge_bit_len` bits, least significant first (generated bits,
    /// then the partition index's bits).
    c_bits: Vec<Vec<bool>>,
    hs: Vec<usize>,
    h_select: Vec<bool>,
    phi: Scalar,
    apex_leafs: Vec<Scalar>,
    /// Where the apex leaf's index starts among a challenge's bits (the data path's length to
    /// the apex leaf).
    apex_start: usize,
    apex_leaf_bit_len: usize,
    arities: (usize, usize, usize),
    challenges: Vec<ChallengeInputs>,
}

/// The 255 little-endian bits of a scalar's canonical representation.
fn le_bits(v: Scalar) -> Vec<bool> {
    let repr = v.to_repr();
    (0..Scalar::NUM_BITS as usize).map(|i| (repr[i / 8] >> (i % 8)) & 1 == 1).collect()
}

fn value(v: Option<Scalar>, what: &str) -> Result<Scalar, FilError> {
    v.ok_or_else(|| bad(format!("no value for {what}")))
}

fn values(path: &[Vec<Option<Scalar>>], what: &str) -> Result<Vec<Vec<Scalar>>, FilError> {
    path.iter().map(|level| level.iter().map(|s| value(*s, what)).collect()).collect()
}

impl SnapPartition {
    /// Reads a partition's circuit: its parameters, public and private inputs; computes the
    /// challenge bits and `phi` as the header's gadgets do.
    pub(crate) fn of<Tree: MerkleTreeTrait<Hasher = filecoin_proofs::TreeRHasher>>(circuit: &EmptySectorUpdateCircuit<Tree>) -> Result<Self, FilError> {
        let p = &circuit.pub_params;
        let (cbl, pbl, albl) = (p.challenge_bit_len, p.partition_bit_len, p.apex_leaf_bit_len);
        let hs = hs(p.sector_nodes).to_vec();
        let bits_per_challenge = cbl.checked_sub(pbl).filter(|&b| b > 0 && b <= Scalar::CAPACITY as usize).ok_or_else(|| bad("challenge bit lengths"))?;
        let apex_start = bits_per_challenge.checked_sub(albl).ok_or_else(|| bad("apex leaf bit length"))?;
        if hs.iter().any(|&h| h > cbl) || pbl + hs.len() > Scalar::NUM_BITS as usize || albl >= usize::BITS as usize || p.apex_leaf_count != 1 << albl {
            return Err(bad("h values or apex leaves do not fit the challenge bits"));
        }

        let k_and_h_select = le_bits(value(circuit.pub_inputs.k_and_h_select, "k_and_h_select")?);
        let partition_bits = &k_and_h_select[..pbl];
        let h_select = k_and_h_select[pbl..pbl + hs.len()].to_vec();
        let k = partition_bits.iter().enumerate().fold(0u64, |k, (i, &b)| k | (u64::from(b) << i));
        let comm_r_old = value(circuit.pub_inputs.comm_r_old, "comm_r_old")?;
        let comm_d_new = value(circuit.pub_inputs.comm_d_new, "comm_d_new")?;
        let comm_r_new = value(circuit.pub_inputs.comm_r_new, "comm_r_new")?;
        let phi = poseidon_value(&[comm_d_new, comm_r_old], &*POSEIDON_CONSTANTS_GEN_RANDOMNESS);

        // `gen_challenge_bits`: digest `j` is `H(comm_r_new, k * digests_per_partition + j)`;
        // its bits, in chunks of `bits_per_challenge`, are the challenges' generated bits.
        let count = p.challenge_count;
        let per_digest = Scalar::CAPACITY as usize / bits_per_challenge;
        let digests_per_partition = (count as f32 / per_digest as f32).ceil() as u64;
        let mut c_bits = Vec::with_capacity(count);
        for j in 0..digests_per_partition {
            let index = Scalar::from(k) * Scalar::from(digests_per_partition) + Scalar::from(j);
            let digest = le_bits(poseidon_value(&[comm_r_new, index], &*POSEIDON_CONSTANTS_GEN_RANDOMNESS));
            let take = per_digest.min(count - c_bits.len());
            for chunk in digest.chunks(bits_per_challenge).take(take) {
                c_bits.push(chunk.iter().chain(partition_bits).copied().collect::<Vec<bool>>());
            }
        }

        let private = &circuit.priv_inputs;
        if private.challenge_proofs.len() != count || c_bits.len() != count {
            return Err(bad(format!("{} challenge proofs, {} challenge bit runs, {count} challenges", private.challenge_proofs.len(), c_bits.len())));
        }
        let challenges = private
            .challenge_proofs
            .iter()
            .map(|c| {
                let path_to_apex_leaf = c
                    .path_d_new
                    .get(..apex_start)
                    .ok_or_else(|| bad("a data path shorter than the apex leaf's depth"))?
                    .iter()
                    .map(|siblings| value(siblings.first().copied().flatten(), "a data path sibling"))
                    .collect::<Result<_, _>>()?;
                Ok(ChallengeInputs {
                    leaf_r_old: value(c.leaf_r_old, "leaf_r_old")?,
                    leaf_d_new: value(c.leaf_d_new, "leaf_d_new")?,
                    leaf_r_new: value(c.leaf_r_new, "leaf_r_new")?,
                    path_r_old: values(&c.path_r_old, "an old replica path sibling")?,
                    path_r_new: values(&c.path_r_new, "a new replica path sibling")?,
                    path_to_apex_leaf,
                })
            })
            .collect::<Result<Vec<_>, FilError>>()?;
        let apex_leafs = private.apex_leafs.iter().map(|l| value(*l, "an apex leaf")).collect::<Result<Vec<_>, _>>()?;
        Ok(SnapPartition {
            c_bits,
            hs,
            h_select,
            phi,
            apex_leafs,
            apex_start,
            apex_leaf_bit_len: albl,
            arities: (Tree::Arity::to_usize(), Tree::SubTreeArity::to_usize(), Tree::TopTreeArity::to_usize()),
            challenges,
        })
    }

    /// The partition's challenges.
    pub(crate) fn challenges(&self) -> usize {
        self.challenges.len()
    }

    /// Writes challenge `i`'s assignment (everything one iteration of the circuit's challenge
    /// loop allocates) into `a`.
    pub(crate) fn write_challenge(&self, i: usize, a: &mut Assignment<'_>) -> Result<(), FilError> {
        let (Some(c), Some(c_bits)) = (self.challenges.get(i), self.c_bits.get(i)) else {
            return Err(bad(format!("no challenge {i}")));
        };
        let shape = |e: cuzk_gadget_witness::por::ShapeError| bad(format!("challenge {i}: {e}"));

        // get_challenge_high_bits
        let mut c_high = Scalar::ZERO;
        for (&h, &selected) in self.hs.iter().zip(&self.h_select) {
            let high: Vec<Bit> = c_bits[c_bits.len() - h..].iter().map(|&b| Bit::Is(b)).collect();
            let packed = pack_bits(a, &high);
            let or_zero = if selected { packed } else { Scalar::ZERO };
            a.aux(or_zero);
            c_high += or_zero;
        }
        a.aux(c_high);
        let rho = poseidon_hash(a, &[self.phi, c_high], &*POSEIDON_CONSTANTS_GEN_RANDOMNESS);

        a.aux(c.leaf_r_old);
        a.aux(c.leaf_d_new);
        let d_rho = c.leaf_d_new * rho;
        a.aux(d_rho);
        let leaf_r_new = c.leaf_r_old + d_rho;
        a.aux(leaf_r_new);
        if leaf_r_new != c.leaf_r_new {
            // The circuit asserts this; let sequential synthesis report it.
            return Err(bad(format!("challenge {i}: leaf_r_new is not the encoding of leaf_d_new")));
        }

        for (leaf, path) in [(c.leaf_r_old, &c.path_r_old), (leaf_r_new, &c.path_r_new)] {
            path.iter().flatten().for_each(|s| a.aux(*s));
            por_no_challenge_input_poseidon(a, leaf, path, c_bits, self.arities).map_err(shape)?;
        }

        let apex_bits = &c_bits[self.apex_start..self.apex_start + self.apex_leaf_bit_len];
        select_num(a, &self.apex_leafs, apex_bits).map_err(shape)?;

        let path: Vec<Vec<Scalar>> = c.path_to_apex_leaf.iter().map(|s| vec![*s]).collect();
        c.path_to_apex_leaf.iter().for_each(|s| a.aux(*s));
        por_no_challenge_input_sha256(a, c.leaf_d_new, &path, &c_bits[..self.apex_start]).map_err(shape)?;
        Ok(())
    }
}
