//! The native witness of a SnapDeals partition (`EmptySectorUpdateCircuit`).
//!
//! The header ([`SnapPartition::write_header`]: everything the circuit allocates before its
//! first challenge) and each challenge ([`SnapPartition::write_challenge`]: one iteration of the
//! circuit's loop over `generated_bits`) are written natively, exactly what the gadgets
//! allocate, in their order. The header:
//!
//! 1. `k_and_h_select` (aux, then its input), its low `partition_bit_len + hs.len()` bits
//!    (1 each), the partition index packed from its bits (`pack_bits`: 1);
//! 2. `comm_r_old`, `comm_d_new`, `comm_r_new` (aux, then input, each); `phi = H(comm_d_new,
//!    comm_r_old)`: Poseidon of arity 2 with the `GEN_RANDOMNESS` domain tag;
//! 3. `comm_c`, `root_r_old`, `root_r_new`, the apex leaves and the partition path's siblings (1
//!    each); `comm_r_old_calc = H(comm_c, root_r_old)` and `comm_r_new_calc` (Poseidon of arity
//!    2, tree constants);
//! 4. the apex tree, row by row: per pair of nodes the SHA-256 `hash2` of their bits (127
//!    hashes for 128 leaves, each of equal length, so each is written on its own thread);
//! 5. `por_no_challenge_input` from the apex root up the partition path into TreeD, indexed by
//!    the partition's bits;
//! 6. `gen_challenge_bits`: per digest `j` the index `k * digests_per_partition + j` (1), the
//!    digest `H(comm_r_new, index)` (Poseidon, `GEN_RANDOMNESS`) and its 255 bits.
//!
//! Each challenge:
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
//! fields are public). What the circuit asserts on its inputs (the partition index below the
//! partition count, one `h_select` bit, one partition path shared by every challenge, the
//! encoding of each `leaf_r_new`) is checked here too, as an error. `tests/it/witness.rs`
//! checks the result index for index against sequential synthesis.

use blstrs::Scalar;
use cuzk_gadget_witness::bits::{num_to_bits_le, pack_bits, Bit};
use cuzk_gadget_witness::por::{por_no_challenge_input_poseidon, por_no_challenge_input_sha256, select_num, sha256_multi_leaf};
use cuzk_gadget_witness::poseidon::{constants_2, poseidon_hash, poseidon_value};
use cuzk_gadget_witness::Assignment;
use ff::{Field, PrimeField};
use filecoin_hashers::sha256::{Sha256Domain, Sha256Function};
use filecoin_hashers::HashFunction;
use rayon::prelude::*;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_update::constants::{hs, POSEIDON_CONSTANTS_GEN_RANDOMNESS};
use storage_proofs_update::EmptySectorUpdateCircuit;
use typenum::Unsigned;

use crate::error::FilError;

/// The root-level namespace where the circuit starts its first challenge (the header ends).
#[cfg(test)]
pub(crate) const FIRST_CHALLENGE: &str = "get_challenge_high_bits (c_index=0)";

/// The root-level namespace where challenge `k` starts (the marker of its repeated block).
pub(crate) fn challenge_marker(k: usize) -> String {
    format!("get_challenge_high_bits (c_index={k})")
}

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

/// What the header reads besides the challenge bits, `phi` and the apex leaves.
#[derive(Debug, Clone)]
struct HeaderInputs {
    k_and_h_select: Scalar,
    /// The low `partition_bit_len + hs.len()` bits of `k_and_h_select`: the partition index's,
    /// then `h_select`.
    select_bits: Vec<bool>,
    partition_bit_len: usize,
    comm_r_old: Scalar,
    comm_d_new: Scalar,
    comm_r_new: Scalar,
    comm_c: Scalar,
    root_r_old: Scalar,
    root_r_new: Scalar,
    /// The data path's siblings from the apex root up to `comm_d_new` (one per level).
    partition_path: Vec<Vec<Scalar>>,
    /// `k * digests_per_partition + j` for each digest `j` of `gen_challenge_bits`.
    digest_indices: Vec<Scalar>,
    /// Generated bits a challenge takes from a digest.
    bits_per_challenge: usize,
    /// Challenges whose bits one digest gives.
    challenges_per_digest: usize,
}

/// Where the header's parts lie among its aux values: the commitments (and every input), the
/// apex tree, the partition path's proof, then one run per digest (its index, its Poseidon
/// hash, its bits). The lengths depend on the partition's shape only, never on its values.
#[derive(Debug, Clone, Copy)]
struct HeaderLayout {
    commitments: usize,
    inputs: usize,
    apex_hash: usize,
    apex: usize,
    partition_por: usize,
    digest: usize,
    digests: usize,
}

impl HeaderLayout {
    /// Where digest `j`'s bits start.
    fn digest_bits(&self, j: usize) -> usize {
        self.commitments + self.apex + self.partition_por + j * self.digest + self.digest - Scalar::NUM_BITS as usize
    }
}

/// Everything one partition's witness reads: the header's values and each challenge's proofs.
#[derive(Debug, Clone)]
pub(crate) struct SnapPartition {
    header: HeaderInputs,
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

        let k_and_h_select_value = value(circuit.pub_inputs.k_and_h_select, "k_and_h_select")?;
        let k_and_h_select = le_bits(k_and_h_select_value);
        let partition_bits = &k_and_h_select[..pbl];
        let h_select = k_and_h_select[pbl..pbl + hs.len()].to_vec();
        let k = partition_bits.iter().enumerate().fold(0u64, |k, (i, &b)| k | (u64::from(b) << i));
        // What the circuit asserts of `k_and_h_select`.
        if k >= p.partition_count as u64 {
            return Err(bad(format!("partition index {k} is not below the partition count {}", p.partition_count)));
        }
        if h_select.iter().filter(|&&b| b).count() != 1 || k_and_h_select[pbl + hs.len()..].iter().any(|&b| b) {
            return Err(bad("k_and_h_select does not select exactly one h or has bits above it"));
        }
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
        let digest_indices: Vec<Scalar> = (0..digests_per_partition).map(|j| Scalar::from(k) * Scalar::from(digests_per_partition) + Scalar::from(j)).collect();
        for &index in &digest_indices {
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
        if apex_leafs.len() != p.apex_leaf_count {
            return Err(bad(format!("{} apex leaves, the circuit takes {}", apex_leafs.len(), p.apex_leaf_count)));
        }
        // The partition path: the data path's last `partition_bit_len` levels, the same for
        // every challenge.
        let partition_path_of = |path: &[Vec<Option<Scalar>>]| path.get(cbl - pbl..).filter(|levels| levels.len() == pbl).map(<[_]>::to_vec);
        let first = private.challenge_proofs.first().and_then(|c| partition_path_of(&c.path_d_new)).ok_or_else(|| bad("a data path of the wrong length"))?;
        if private.challenge_proofs.iter().any(|c| partition_path_of(&c.path_d_new).as_ref() != Some(&first)) {
            return Err(bad("the challenges' data paths do not end in the same partition path"));
        }
        let partition_path = first
            .iter()
            .map(|siblings| match siblings[..] {
                [sibling] => value(sibling, "a partition path sibling").map(|s| vec![s]),
                _ => Err(bad("a partition path level without exactly one sibling")),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let header = HeaderInputs {
            k_and_h_select: k_and_h_select_value,
            select_bits: k_and_h_select[..pbl + hs.len()].to_vec(),
            partition_bit_len: pbl,
            comm_r_old,
            comm_d_new,
            comm_r_new,
            comm_c: value(private.comm_c, "comm_c")?,
            root_r_old: value(private.root_r_old, "root_r_old")?,
            root_r_new: value(private.root_r_new, "root_r_new")?,
            partition_path,
            digest_indices,
            bits_per_challenge,
            challenges_per_digest: per_digest,
        };
        Ok(SnapPartition {
            header,
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

    /// What the header allocates: aux values and inputs (without `ONE`).
    pub(crate) fn header_len(&self) -> (usize, usize) {
        let l = self.header_layout();
        (l.commitments + l.apex + l.partition_por + l.digests * l.digest, l.inputs)
    }

    /// The header's layout, counted by running its writers without storing anything.
    fn header_layout(&self) -> HeaderLayout {
        static APEX_HASH: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        let h = &self.header;
        let apex_hash = *APEX_HASH.get_or_init(|| {
            counts(|a| {
                sha256_multi_leaf(a, &[Scalar::ZERO, Scalar::ZERO]);
            })
            .0
        });
        let (commitments, inputs) = counts(|a| self.write_commitments(a));
        let partition_por = counts(|a| {
            let _ = self.write_partition_por(a, Scalar::ZERO);
        })
        .0;
        let digest = counts(|a| {
            write_digest(a, h.comm_r_new, Scalar::ZERO);
        })
        .0;
        let apex = self.apex_leafs.len().saturating_sub(1) * apex_hash;
        HeaderLayout { commitments, inputs, apex_hash, apex, partition_por, digest, digests: h.digest_indices.len() }
    }

    /// Where each challenge's generated bits lie in the header: `(k, i)` → the header aux index
    /// challenge `k` reads where challenge 0 reads `i` (every other header variable is shared).
    /// Challenge `k` takes bits `(k mod n)·b …` of digest `k / n` (`b` bits a challenge, `n`
    /// challenges a digest).
    pub(crate) fn challenge_bits_map(&self) -> impl Fn(usize, usize) -> usize + Send + Sync + 'static {
        let l = self.header_layout();
        let (per_challenge, per_digest) = (self.header.bits_per_challenge, self.header.challenges_per_digest);
        let first = l.digest_bits(0);
        move |k, i| {
            if (first..first + per_challenge).contains(&i) {
                l.digest_bits(k / per_digest) + (k % per_digest) * per_challenge + (i - first)
            } else {
                i
            }
        }
    }

    /// Writes the header (everything the circuit allocates before its first challenge) into
    /// `aux` and `input` (without `ONE`), which it must fill exactly. The apex tree's hashes,
    /// most of the header, are each written on a thread of their own.
    pub(crate) fn write_header(&self, aux: &mut [Scalar], input: &mut [Scalar]) -> Result<(), FilError> {
        let tree = apex_tree(&self.apex_leafs);
        let apex_root = tree.last().map_or(self.apex_leafs.first().copied(), |node| Some(node[2])).ok_or_else(|| bad("no apex leaves"))?;
        let l = self.header_layout();
        if aux.len() < l.commitments + l.apex {
            return Err(bad(format!("a header of {} aux values, shorter than its commitments and apex tree ({} + {})", aux.len(), l.commitments, l.apex)));
        }
        let (prefix, rest) = aux.split_at_mut(l.commitments);
        let (apex, suffix) = rest.split_at_mut(l.apex);
        fn layout(what: &'static str) -> impl Fn(cuzk_gadget_witness::LayoutError) -> FilError {
            move |e| bad(format!("header, {what}: {e}"))
        }

        let mut a = Assignment::new(prefix, input);
        self.write_commitments(&mut a);
        a.finish().map_err(layout("inputs and commitments"))?;

        apex.par_chunks_mut(l.apex_hash.max(1)).zip(tree.par_iter()).try_for_each(|(window, &[left, right, parent])| {
            let mut a = Assignment::new(window, &mut []);
            let hash = sha256_multi_leaf(&mut a, &[left, right]);
            a.finish().map_err(layout("an apex tree hash"))?;
            if hash != parent {
                return Err(bad("an apex tree hash differs from its SHA-256"));
            }
            Ok(())
        })?;

        let mut a = Assignment::new(suffix, &mut []);
        self.write_partition_por(&mut a, apex_root)?;
        self.header.digest_indices.iter().for_each(|&index| write_digest(&mut a, self.header.comm_r_new, index));
        a.finish().map_err(layout("partition path and challenge generation"))
    }

    /// The header after the apex tree: the partition path's proof from the apex root up to
    /// `comm_d_new`.
    fn write_partition_por(&self, a: &mut Assignment<'_>, apex_root: Scalar) -> Result<(), FilError> {
        let h = &self.header;
        por_no_challenge_input_sha256(a, apex_root, &h.partition_path, &h.select_bits[..h.partition_bit_len])
            .map(|_| ())
            .map_err(|e| bad(format!("partition path: {e}")))
    }

    /// The header up to the apex tree: `k_and_h_select` and its bits, the packed partition
    /// index, the commitments and `phi`, the private roots, apex leaves and partition path, and
    /// both `comm_r` checks' hashes.
    fn write_commitments(&self, a: &mut Assignment<'_>) {
        let h = &self.header;
        a.aux(h.k_and_h_select);
        a.input(h.k_and_h_select);
        h.select_bits.iter().for_each(|&b| a.bit(b));
        let partition_bits: Vec<Bit> = h.select_bits[..h.partition_bit_len].iter().map(|&b| Bit::Is(b)).collect();
        pack_bits(a, &partition_bits);
        for comm in [h.comm_r_old, h.comm_d_new, h.comm_r_new] {
            a.aux(comm);
            a.input(comm);
        }
        poseidon_hash(a, &[h.comm_d_new, h.comm_r_old], &*POSEIDON_CONSTANTS_GEN_RANDOMNESS);
        [h.comm_c, h.root_r_old, h.root_r_new]
            .into_iter()
            .chain(self.apex_leafs.iter().copied())
            .chain(h.partition_path.iter().flatten().copied())
            .for_each(|v| a.aux(v));
        poseidon_hash(a, &[h.comm_c, h.root_r_old], constants_2());
        poseidon_hash(a, &[h.comm_c, h.root_r_new], constants_2());
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

/// The aux values and inputs `write` pushes (their counts depend on the layout, never on the
/// values).
fn counts(write: impl FnOnce(&mut Assignment<'_>)) -> (usize, usize) {
    let mut counting = Assignment::new(&mut [], &mut []);
    write(&mut counting);
    (counting.aux_used(), counting.inputs_used())
}

/// One digest of `gen_challenge_bits`: its index (allocated), `H(comm_r_new, index)` (Poseidon,
/// `GEN_RANDOMNESS`) and its 255 bits.
fn write_digest(a: &mut Assignment<'_>, comm_r_new: Scalar, index: Scalar) {
    a.aux(index);
    let digest = poseidon_hash(a, &[comm_r_new, index], &*POSEIDON_CONSTANTS_GEN_RANDOMNESS);
    num_to_bits_le(a, digest);
}

/// The apex tree's hashes row by row from the leaves, as `[left, right, parent]`: filecoin-hashers'
/// SHA-256 `hash2` (the digest's first 254 bits), which the circuit's `hash2_circuit` computes.
fn apex_tree(leaves: &[Scalar]) -> Vec<[Scalar; 3]> {
    let hash2 = |l: Scalar, r: Scalar| Scalar::from(Sha256Function::hash2(&Sha256Domain::from(l), &Sha256Domain::from(r)));
    let mut nodes = Vec::with_capacity(leaves.len().saturating_sub(1));
    let mut row = leaves.to_vec();
    while row.len() > 1 {
        let next: Vec<Scalar> = row.chunks_exact(2).map(|pair| hash2(pair[0], pair[1])).collect();
        nodes.extend(row.chunks_exact(2).zip(&next).map(|(pair, &parent)| [pair[0], pair[1], parent]));
        row = next;
    }
    nodes
}
