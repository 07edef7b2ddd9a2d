//! Shape-only SnapDeals jobs: one partition proof that is structurally exact for a sector size
//! (challenge count, apex leaves, Merkle path lengths and arities, one partition path shared
//! by every challenge) with fabricated values, so production-size partitions can be
//! synthesized without updating a sector. Each new replica leaf is the encoding of its old
//! leaf and data leaf (the circuit asserts it); nothing else verifies, and nothing proved from
//! them is a valid proof.

use std::sync::Arc;

use blstrs::Scalar;
use filecoin_hashers::sha256::{Sha256Domain, Sha256Hasher};
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::{SectorShape2KiB, SectorShape32GiB, SectorShape64GiB, TreeRHasher};
use rand::{Rng, SeedableRng};
use storage_proofs_core::merkle::{compound_path_length, MerkleProof, MerkleTreeTrait};
use storage_proofs_update::{ChallengeProof, Challenges, PartitionProof, PublicInputs};
use typenum::{Unsigned, U2};

use crate::circuit::{AnyJob, Prepared};
use crate::error::FilError;
use crate::ids::{FilKind, FilShape};
use crate::jobs::SnapJob;

type TreeRDomain = <TreeRHasher as Hasher>::Domain;

/// Per level from the leaf up: fabricated siblings and `node`'s digit at that level.
fn path<D: Domain>(node: usize, arities: &[usize], rng: &mut impl Rng) -> Vec<(Vec<D>, usize)> {
    let mut rest = node;
    arities
        .iter()
        .map(|&arity| {
            let index = rest % arity;
            rest /= arity;
            ((0..arity - 1).map(|_| D::random(&mut *rng)).collect(), index)
        })
        .collect()
}

fn build<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(registered_proof: u64, rng: &mut impl Rng) -> Result<SnapJob<Tree>, FilError> {
    let (params, config) = SnapJob::<Tree>::compound(registered_proof)?;
    let (nodes, cbl, pbl) = (params.sector_nodes, params.challenge_bit_len, params.partition_bit_len);
    let inputs = PublicInputs {
        k: 0,
        comm_r_old: TreeRDomain::random(&mut *rng),
        comm_d_new: Sha256Domain::random(&mut *rng),
        comm_r_new: TreeRDomain::random(&mut *rng),
        h: config.h,
    };
    let phi = storage_proofs_update::phi(&inputs.comm_d_new, &inputs.comm_r_old);
    let (root_r_old, root_r_new) = (TreeRDomain::random(&mut *rng), TreeRDomain::random(&mut *rng));
    let levels = compound_path_length::<Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity>(nodes);
    let (base, sub, top) = (Tree::Arity::to_usize(), Tree::SubTreeArity::to_usize(), Tree::TopTreeArity::to_usize());
    let extra = usize::from(sub > 0) + usize::from(top > 0);
    let mut r_arities = vec![base; levels - extra];
    r_arities.extend([sub, top].into_iter().filter(|&n| n > 0));
    // The partition path (the data path's last `pbl` levels) is the same for every challenge.
    let partition_path = path::<Sha256Domain>(0, &vec![2; pbl], rng);
    let challenge_proofs = Challenges::new(nodes, inputs.comm_r_new, inputs.k)
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
                proof_r_old: MerkleProof::from_parts(leaf_r_old.into(), root_r_old, path(node, &r_arities, rng)),
                proof_d_new: MerkleProof::<Sha256Hasher, U2>::from_parts(leaf_d_new.into(), inputs.comm_d_new, d_path),
                proof_r_new: MerkleProof::from_parts(leaf_r_new.into(), root_r_new, path(node, &r_arities, rng)),
            }
        })
        .collect();
    let proof = PartitionProof {
        comm_c: TreeRDomain::random(&mut *rng),
        apex_leafs: (0..params.apex_leaf_count).map(|_| Sha256Domain::random(&mut *rng)).collect(),
        challenge_proofs,
    };
    Ok(SnapJob::unchecked(params, inputs, vec![proof]))
}

/// A shape-only SnapDeals job of `sector_size` (2 KiB, 32 GiB or 64 GiB, by tree shape): one
/// partition (`k = 0`) of the real challenge count, fabricated from `seed`. It synthesizes like
/// a real partition of that size; the proofs made from it are not valid.
pub fn snap(sector_size: u64, seed: u64) -> Result<Prepared, FilError> {
    let circuit = FilShape::new(FilKind::SnapDeals, sector_size)?;
    let registered_proof = circuit.default_registered_proof();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let job = match sector_size {
        s if s <= 1 << 29 => AnyJob::Snap8(build::<SectorShape2KiB>(registered_proof, &mut rng)?),
        s if s == 1 << 35 => AnyJob::Snap88(build::<SectorShape32GiB>(registered_proof, &mut rng)?),
        _ => AnyJob::Snap882(build::<SectorShape64GiB>(registered_proof, &mut rng)?),
    };
    Ok(Prepared::from_job(circuit, Arc::new(job), 1))
}
