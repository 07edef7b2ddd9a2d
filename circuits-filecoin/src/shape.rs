//! Shape-only PoRep jobs: vanilla proofs that are structurally exact for a sector size (its
//! partition and challenge counts, Merkle path lengths and arities, column heights, parent
//! counts) with fabricated values, so production-size circuits can be synthesized and timed
//! without sealing a sector. They do not verify: their partitions are built without Filecoin's
//! check, and nothing proved from them is a valid proof.

use std::sync::Arc;

use cuzk_gadget_witness::por::level_arities;
use filecoin_hashers::sha256::{Sha256Domain, Sha256Hasher};
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::{SectorShape2KiB, SectorShape32GiB, SectorShape64GiB, TreeRHasher, VanillaSealProof};
use rand::{Rng, SeedableRng};
use storage_proofs_core::merkle::{compound_path_length, MerkleProof, MerkleTreeTrait};
use storage_proofs_porep::stacked::{self, ColumnProof, EncodingProof, LabelingProof, ReplicaColumnProof};
use typenum::{U0, U2};

use crate::circuit::{AnyJob, Prepared};
use crate::error::FilError;
use crate::ids::{FilKind, FilShape};
use crate::jobs::PoRepJob;

type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

/// A path to leaf `node` through levels of the given arities (from the leaf up), fabricated
/// siblings, and the index digits of `node`.
fn path<H: Hasher>(node: usize, level_arities: &[usize], rng: &mut impl Rng) -> Vec<(Vec<H::Domain>, usize)> {
    let mut rest = node;
    level_arities
        .iter()
        .map(|&arity| {
            let index = rest % arity;
            rest /= arity;
            ((0..arity - 1).map(|_| H::Domain::random(&mut *rng)).collect(), index)
        })
        .collect()
}

fn tree_proof<Tree: MerkleTreeTrait>(node: usize, tree_levels: &[usize], root: <Tree::Hasher as Hasher>::Domain, rng: &mut impl Rng) -> TreeProof<Tree> {
    let leaf = <Tree::Hasher as Hasher>::Domain::random(&mut *rng);
    MerkleProof::from_parts(leaf, root, path::<Tree::Hasher>(node, tree_levels, rng))
}

fn column_proof<Tree: MerkleTreeTrait>(
    node: usize,
    tree_levels: &[usize],
    layers: usize,
    comm_c: <Tree::Hasher as Hasher>::Domain,
    rng: &mut impl Rng,
) -> ColumnProof<TreeProof<Tree>> {
    let rows = (0..layers).map(|_| <Tree::Hasher as Hasher>::Domain::random(&mut *rng)).collect();
    ColumnProof::new(node as u32, rows, tree_proof::<Tree>(node, tree_levels, comm_c, rng))
}

/// Fabricated vanilla proofs of the PoRep circuit `params` describes: `partitions` of
/// `challenges` challenge proofs each, sharing one comm_c and one comm_r_last as a real sector's do.
fn porep_vanilla<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    params: &stacked::PublicParams<Tree>,
    partitions: usize,
    challenges: usize,
    rng: &mut impl Rng,
) -> Result<Vec<Vec<VanillaSealProof<Tree>>>, FilError> {
    use storage_proofs_core::drgraph::Graph;
    let leaves = params.graph.size();
    let layers = params.num_layers;
    let (degree, expansion) = (params.graph.base_graph().degree(), params.graph.expansion_degree());
    let comm_c = <Tree::Hasher as Hasher>::Domain::random(&mut *rng);
    let comm_r_last = <Tree::Hasher as Hasher>::Domain::random(&mut *rng);
    let levels = |arities, len| level_arities(arities, len).map_err(|e| FilError::Filecoin(e.to_string()));
    let d_levels = levels((2, 0, 0), compound_path_length::<U2, U0, U0>(leaves))?;
    let tree_levels = levels(crate::porep_witness::arities::<Tree>(), compound_path_length::<Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity>(leaves))?;
    Ok((0..partitions)
        .map(|_| {
            (0..challenges)
                .map(|_| {
                    let node = rng.gen_range(0..leaves);
                    let comm_d_path = path::<Sha256Hasher>(node, &d_levels, rng);
                    let comm_d_proofs =
                        MerkleProof::<Sha256Hasher, U2>::from_parts(Sha256Domain::random(&mut *rng), Sha256Domain::random(&mut *rng), comm_d_path);
                    let mut parent = || rng.gen_range(0..leaves);
                    let (drg, exp): (Vec<usize>, Vec<usize>) = ((0..degree).map(|_| parent()).collect(), (0..expansion).map(|_| parent()).collect());
                    let replica_column_proofs = ReplicaColumnProof {
                        c_x: column_proof::<Tree>(node, &tree_levels, layers, comm_c, rng),
                        drg_parents: drg.iter().map(|&p| column_proof::<Tree>(p, &tree_levels, layers, comm_c, rng)).collect(),
                        exp_parents: exp.iter().map(|&p| column_proof::<Tree>(p, &tree_levels, layers, comm_c, rng)).collect(),
                    };
                    let labeling_proofs = (1..=layers)
                        .map(|layer| {
                            let parents = if layer == 1 { degree } else { degree + expansion };
                            LabelingProof::new(layer as u32, node as u64, (0..parents).map(|_| <Tree::Hasher as Hasher>::Domain::random(&mut *rng)).collect())
                        })
                        .collect();
                    let encoding_parents = (0..degree + expansion).map(|_| <Tree::Hasher as Hasher>::Domain::random(&mut *rng)).collect();
                    stacked::Proof {
                        comm_d_proofs,
                        comm_r_last_proof: tree_proof::<Tree>(node, &tree_levels, comm_r_last, rng),
                        replica_column_proofs,
                        labeling_proofs,
                        encoding_proof: EncodingProof::new(layers as u32, node as u64, encoding_parents),
                    }
                })
                .collect()
        })
        .collect())
}

/// The challenges of one PoRep partition at `sector_size`.
pub fn porep_challenges(sector_size: u64) -> Result<usize, FilError> {
    let config = crate::ids::porep_config(FilShape::new(FilKind::PoRep, sector_size)?.default_registered_proof())?;
    Ok(filecoin_proofs::parameters::setup_params(&config).map_err(FilError::fil)?.challenges.num_challenges_per_partition())
}

/// A shape-only PoRep job of `sector_size` (2 KiB, 8 MiB, 512 MiB, 32 GiB or 64 GiB):
/// `partitions` partitions (`None`: the real count) of `challenges` challenges each (`None`:
/// the real count), fabricated from `seed`. Its partitions synthesize like a real job's of that
/// size; the proofs made from them are not valid.
pub fn porep(sector_size: u64, partitions: Option<usize>, challenges: Option<usize>, seed: u64) -> Result<Prepared, FilError> {
    let circuit = FilShape::new(FilKind::PoRep, sector_size)?;
    let registered_proof = circuit.default_registered_proof();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    fn build<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
        registered_proof: u64,
        partitions: Option<usize>,
        challenges: Option<usize>,
        rng: &mut impl Rng,
    ) -> Result<(PoRepJob<Tree>, usize), FilError> {
        let (params, real_partitions) = PoRepJob::<Tree>::compound(registered_proof)?;
        let partitions = partitions.unwrap_or(real_partitions);
        let challenges = challenges.unwrap_or_else(|| params.challenges.num_challenges_per_partition());
        let proofs = porep_vanilla(&params, partitions, challenges, rng)?;
        let mut seed = [0u8; 32];
        rng.fill(&mut seed[..31]);
        let inputs = stacked::PublicInputs {
            replica_id: <Tree::Hasher as Hasher>::Domain::random(&mut *rng),
            tau: Some(stacked::Tau { comm_d: Sha256Domain::random(&mut *rng), comm_r: <Tree::Hasher as Hasher>::Domain::random(&mut *rng) }),
            k: None,
            seed: Some(seed),
        };
        Ok((PoRepJob::unchecked(params, inputs, proofs), partitions))
    }
    let (job, partitions) = match sector_size {
        s if s <= 1 << 29 => {
            let (j, n) = build::<SectorShape2KiB>(registered_proof, partitions, challenges, &mut rng)?;
            (AnyJob::PoRep8(j), n)
        }
        s if s == 1 << 35 => {
            let (j, n) = build::<SectorShape32GiB>(registered_proof, partitions, challenges, &mut rng)?;
            (AnyJob::PoRep88(j), n)
        }
        _ => {
            let (j, n) = build::<SectorShape64GiB>(registered_proof, partitions, challenges, &mut rng)?;
            (AnyJob::PoRep882(j), n)
        }
    };
    Ok(Prepared::from_job(circuit, Arc::new(job), partitions))
}
