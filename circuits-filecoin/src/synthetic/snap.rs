//! Synthetic SnapDeals jobs and requests: partition proofs that are structurally exact for a
//! sector size (challenge count, apex leaves, Merkle path lengths and arities, one partition
//! path shared by every challenge of a partition) with fabricated values, so production-size
//! partitions can be synthesized without updating a sector. Each new replica leaf is the
//! encoding of its old leaf and data leaf (the circuit asserts it), the data paths end in
//! `comm_d_new` and `comm_r_old`/`comm_r_new` are `H(comm_c, root)` of the replica paths' roots;
//! nothing else verifies, and nothing proved from them is a valid proof.
//!
//! One fabricator serves both [`snap`] (a [`Prepared`] job of one partition) and
//! [`snap_request`] (the request Curio would send, every partition).

use std::sync::Arc;

use blstrs::Scalar;
use filecoin_hashers::sha256::{Sha256Domain, Sha256Hasher};
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::{SectorShape2KiB, SectorShape32GiB, SectorShape64GiB, TreeRHasher};
use rand::{Rng, SeedableRng};
use storage_proofs_core::merkle::{MerkleProof, MerkleTreeTrait};
use storage_proofs_update::{ChallengeProof, Challenges, PartitionProof, PublicInputs, PublicParams};
use typenum::U2;

use crate::circuit::{AnyJob, Prepared};
use crate::error::FilError;
use crate::fixtures::blank;
use crate::ids::{FilKind, FilShape};
use crate::jobs::SnapJob;
use crate::request::FilRequest;
use crate::synthetic::{comm_r_of, path, tree_levels};

type TreeRDomain = <TreeRHasher as Hasher>::Domain;

/// A fabricated sector update: the public parameters and inputs and partition proofs `0..n`
/// (`n`: `partitions`, `None` for the real count) of `challenges` challenges each (`None`: the
/// real count; a smaller count is set in the public parameters, which the circuit and the
/// native witness both read).
pub(crate) struct SnapFabric<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    pub(crate) params: PublicParams,
    pub(crate) inputs: PublicInputs,
    pub(crate) proofs: Vec<PartitionProof<Tree>>,
}

pub(crate) fn fabricate<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    registered_proof: u64,
    partitions: Option<usize>,
    challenges: Option<usize>,
    rng: &mut impl Rng,
) -> Result<SnapFabric<Tree>, FilError> {
    let (mut params, config) = SnapJob::<Tree>::compound(registered_proof)?;
    if let Some(n) = challenges {
        if n == 0 || n > params.challenge_count {
            return Err(FilError::BadField { field: "challenges", reason: format!("{n}: a partition of this size takes 1 to {}", params.challenge_count) });
        }
        params.challenge_count = n;
    }
    let (nodes, cbl, pbl) = (params.sector_nodes, params.challenge_bit_len, params.partition_bit_len);
    let comm_c = TreeRDomain::random(&mut *rng);
    let (root_r_old, root_r_new) = (TreeRDomain::random(&mut *rng), TreeRDomain::random(&mut *rng));
    let inputs = PublicInputs {
        k: 0,
        comm_r_old: comm_r_of(&comm_c, &root_r_old),
        comm_d_new: Sha256Domain::random(&mut *rng),
        comm_r_new: comm_r_of(&comm_c, &root_r_new),
        h: config.h,
    };
    let phi = storage_proofs_update::phi(&inputs.comm_d_new, &inputs.comm_r_old);
    let r_levels = tree_levels::<Tree>(nodes)?;
    let partitions = partitions.unwrap_or(usize::from(config.update_partitions));
    let proofs = (0..partitions)
        .map(|k| {
            // The partition path (the data path's last `pbl` levels) is the same for every
            // challenge of partition `k`.
            let partition_path = path::<Sha256Domain>(k, &vec![2; pbl], rng);
            let challenge_proofs = Challenges::new(nodes, inputs.comm_r_new, k)
                .take(params.challenge_count)
                .map(|c| {
                    let node = c as usize;
                    let leaf_r_old: Scalar = TreeRDomain::random(&mut *rng).into();
                    let leaf_d_new: Scalar = Sha256Domain::random(&mut *rng).into();
                    let rho = storage_proofs_update::rho(&phi, c >> (cbl - config.h));
                    let leaf_r_new = leaf_r_old + leaf_d_new * rho;
                    let mut d_path = path::<Sha256Domain>(node, &vec![2; cbl - pbl], rng);
                    d_path.extend(partition_path.iter().cloned());
                    ChallengeProof {
                        proof_r_old: MerkleProof::from_parts(leaf_r_old.into(), root_r_old, path(node, &r_levels, rng)),
                        proof_d_new: MerkleProof::<Sha256Hasher, U2>::from_parts(leaf_d_new.into(), inputs.comm_d_new, d_path),
                        proof_r_new: MerkleProof::from_parts(leaf_r_new.into(), root_r_new, path(node, &r_levels, rng)),
                    }
                })
                .collect();
            PartitionProof { comm_c, apex_leafs: (0..params.apex_leaf_count).map(|_| Sha256Domain::random(&mut *rng)).collect(), challenge_proofs }
        })
        .collect();
    Ok(SnapFabric { params, inputs, proofs })
}

/// A synthetic SnapDeals job of `sector_size` (2 KiB, 32 GiB or 64 GiB, by tree shape): one
/// partition (`k = 0`) of `challenges` challenges (`None`: the real count), fabricated from
/// `seed`. It synthesizes like a real partition of that size; the proofs made from it are not
/// valid.
pub fn snap(sector_size: u64, challenges: Option<usize>, seed: u64) -> Result<Prepared, FilError> {
    let circuit = FilShape::new(FilKind::SnapDeals, sector_size)?;
    let registered_proof = circuit.default_registered_proof();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    fn build<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
        registered_proof: u64,
        challenges: Option<usize>,
        rng: &mut impl Rng,
    ) -> Result<SnapJob<Tree>, FilError> {
        let f = fabricate::<Tree>(registered_proof, Some(1), challenges, rng)?;
        Ok(SnapJob::unchecked(f.params, f.inputs, f.proofs))
    }
    let job = match sector_size {
        s if s <= 1 << 29 => AnyJob::Snap8(build::<SectorShape2KiB>(registered_proof, challenges, &mut rng)?),
        s if s == 1 << 35 => AnyJob::Snap88(build::<SectorShape32GiB>(registered_proof, challenges, &mut rng)?),
        _ => AnyJob::Snap882(build::<SectorShape64GiB>(registered_proof, challenges, &mut rng)?),
    };
    Ok(Prepared::from_job(circuit, Arc::new(job), 1))
}

/// A synthetic SnapDeals request of `sector_size`, fabricated from `seed`, in Curio's
/// encodings: the update proof of that size, one bincode `PartitionProof` per partition (the
/// real count) in `vanilla_proofs`, and the three commitments as raw 32 bytes. It decodes; its
/// partition proofs do not verify ([`crate::prepare`] refuses it, [`crate::prepare_unchecked`]
/// builds its circuits).
pub fn snap_request(sector_size: u64, seed: u64) -> Result<FilRequest, FilError> {
    let registered_proof = FilShape::new(FilKind::SnapDeals, sector_size)?.default_registered_proof();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut req = blank(FilKind::SnapDeals, registered_proof);
    crate::decode::with_tree!(sector_size, T => {
        let f = fabricate::<T>(registered_proof, None, None, &mut rng)?;
        req.vanilla_proofs = f.proofs.iter().map(bincode::serialize).collect::<Result<_, _>>().map_err(|e| FilError::Decode(format!("bincode: {e}")))?;
        req.comm_r_old = <[u8; 32]>::from(f.inputs.comm_r_old).to_vec();
        req.comm_r_new = <[u8; 32]>::from(f.inputs.comm_r_new).to_vec();
        req.comm_d_new = <[u8; 32]>::from(f.inputs.comm_d_new).to_vec();
    });
    Ok(req)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snap::witness::{SnapPartition, FIRST_CHALLENGE};
    use ff::{Field, PrimeField};
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use storage_proofs_core::compound_proof::CompoundProof;
    use storage_proofs_update::constants::hs;
    use storage_proofs_update::EmptySectorUpdateCompound;

    type Tree = SectorShape32GiB;

    /// The native header's length is what Filecoin's gadgets allocate before the first
    /// challenge, at the 32 GiB shape (partition path of 4 levels, 128 apex leaves, 10 digests).
    #[test]
    fn the_header_is_as_long_as_the_gadgets_header() {
        let registered_proof = FilShape::new(FilKind::SnapDeals, 32 << 30).expect("shape").default_registered_proof();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let f = fabricate::<Tree>(registered_proof, Some(2), None, &mut rng).expect("fabricate");
        let circuit = EmptySectorUpdateCompound::<Tree>::circuit(&f.inputs, (), &f.proofs[1], &f.params, Some(1)).expect("circuit");
        let native = SnapPartition::of(&circuit).expect("partition").header_len();
        assert_eq!(Some(native), crate::parallel::header(circuit, FIRST_CHALLENGE));
    }

    /// Where Filecoin's circuit asserts on a partition (one `h_select` bit and none above it,
    /// one partition path for every challenge, the apex leaf count), its gadgets panic; the
    /// native witness refuses the same partition with an error instead.
    #[test]
    fn partitions_the_circuit_asserts_against_are_refused() {
        let registered_proof = FilShape::new(FilKind::SnapDeals, 32 << 30).expect("shape").default_registered_proof();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        let f = fabricate::<Tree>(registered_proof, Some(1), Some(2), &mut rng).expect("fabricate");
        let circuit = || EmptySectorUpdateCompound::<Tree>::circuit(&f.inputs, (), &f.proofs[0], &f.params, Some(0)).expect("circuit");
        assert!(SnapPartition::of(&circuit()).is_ok(), "the well-formed partition is read");

        let (pbl, cbl) = (f.params.partition_bit_len, f.params.challenge_bit_len);
        let h_bits = hs(f.params.sector_nodes).len();
        let k_and_h_select = circuit().pub_inputs.k_and_h_select.expect("k_and_h_select");
        let repr = k_and_h_select.to_repr();
        let unset_h_bit = (pbl..pbl + h_bits).find(|&i| (repr[i / 8] >> (i % 8)) & 1 == 0).expect("an unset h bit");
        let with_bit = |i: usize| {
            let mut c = circuit();
            c.pub_inputs.k_and_h_select = Some(k_and_h_select + Scalar::from(2u64).pow_vartime([i as u64]));
            c
        };
        let mut other_partition_path = circuit();
        other_partition_path.priv_inputs.challenge_proofs[1].path_d_new[cbl - 1][0] = Some(Scalar::from(7u64));
        let mut one_apex_leaf_short = circuit();
        one_apex_leaf_short.priv_inputs.apex_leafs.pop();
        let cases = [
            ("two h_select bits", with_bit(unset_h_bit)),
            ("a bit above h_select", with_bit(pbl + h_bits)),
            ("another partition path", other_partition_path),
            ("an apex leaf short", one_apex_leaf_short),
        ];
        for (what, c) in cases {
            let native = SnapPartition::of(&c);
            assert!(native.is_err(), "{what}: the native witness read it");
            let gadgets = catch_unwind(AssertUnwindSafe(|| crate::parallel::count(c)));
            assert!(gadgets.is_err(), "{what}: Filecoin's circuit did not assert (native: {:?})", native.err());
        }
    }
}
