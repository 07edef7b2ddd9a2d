//! Synthetic PoRep jobs and requests: vanilla proofs that are structurally exact for a sector
//! size (its partition and challenge counts, Merkle path lengths and arities, column heights,
//! parent counts) with fabricated values, so production-size circuits can be synthesized and
//! timed without sealing a sector. They do not verify: their partitions are built without
//! Filecoin's check, and nothing proved from them is a valid proof.
//!
//! One fabricator serves both [`porep`] (a [`Prepared`] job, built directly) and
//! [`porep_request`] (the request Curio would send, for [`crate::prepare_unchecked`]).

use std::sync::Arc;

use cuzk_gadget_witness::por::level_arities;
use filecoin_hashers::sha256::{Sha256Domain, Sha256Hasher};
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::{DefaultPieceDomain, SealCommitPhase1Output, SectorShape2KiB, SectorShape32GiB, SectorShape64GiB, TreeRHasher};
use rand::{Rng, SeedableRng};
use storage_proofs_core::merkle::{compound_path_length, MerkleProof, MerkleTreeTrait};
use storage_proofs_porep::stacked::{self, generate_replica_id, ColumnProof, EncodingProof, LabelingProof, ReplicaColumnProof};
use typenum::{U0, U2};

use crate::circuit::{AnyJob, Prepared};
use crate::error::FilError;
use crate::fixtures::{blank, MINER_ID, SECTOR_NUMBER};
use crate::ids::{porep_config, FilKind, FilShape};
use crate::jobs::PoRepJob;
use crate::request::{prover_id, FilRequest};
use crate::synthetic::{comm_r_of, path, random_ticket, tree_levels, tree_proof, TreeProof};

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
/// `challenges` challenge proofs each, sharing one comm_c, comm_r_last and comm_d as a real
/// sector's do.
fn porep_vanilla<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    params: &stacked::PublicParams<Tree>,
    roots: (Sha256Domain, <TreeRHasher as Hasher>::Domain, <TreeRHasher as Hasher>::Domain),
    partitions: usize,
    challenges: usize,
    rng: &mut impl Rng,
) -> Result<Vec<Vec<filecoin_proofs::VanillaSealProof<Tree>>>, FilError> {
    use storage_proofs_core::drgraph::Graph;
    let leaves = params.graph.size();
    let layers = params.num_layers;
    let (degree, expansion) = (params.graph.base_graph().degree(), params.graph.expansion_degree());
    let (comm_d, comm_c, comm_r_last) = roots;
    let d_levels = level_arities((2, 0, 0), compound_path_length::<U2, U0, U0>(leaves)).map_err(|e| FilError::Filecoin(e.to_string()))?;
    let tree_levels = tree_levels::<Tree>(leaves)?;
    Ok((0..partitions)
        .map(|_| {
            (0..challenges)
                .map(|_| {
                    let node = rng.gen_range(0..leaves);
                    let comm_d_path = path::<Sha256Domain>(node, &d_levels, rng);
                    let comm_d_proofs = MerkleProof::<Sha256Hasher, U2>::from_parts(Sha256Domain::random(&mut *rng), comm_d, comm_d_path);
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

/// A fabricated PoRep sector: the circuit's public parameters and inputs and the C1 output that
/// holds them (comm_r = H(comm_c, comm_r_last) of the proofs' roots, comm_d the root of their
/// data paths, the replica id of [`MINER_ID`], [`SECTOR_NUMBER`], the ticket and comm_d).
struct PoRepFabric<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    params: stacked::PublicParams<Tree>,
    inputs: stacked::PublicInputs<<TreeRHasher as Hasher>::Domain, DefaultPieceDomain>,
    c1: SealCommitPhase1Output<Tree>,
}

/// Fabricates `partitions` (`None`: the real count) of `challenges` (`None`: the real count)
/// challenge proofs for `registered_proof`.
fn fabricate<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    registered_proof: u64,
    partitions: Option<usize>,
    challenges: Option<usize>,
    rng: &mut impl Rng,
) -> Result<PoRepFabric<Tree>, FilError> {
    let (params, real_partitions) = PoRepJob::<Tree>::compound(registered_proof)?;
    let partitions = partitions.unwrap_or(real_partitions);
    let challenges = challenges.unwrap_or_else(|| params.challenges.num_challenges_per_partition());
    let comm_d = Sha256Domain::random(&mut *rng);
    let (comm_c, comm_r_last) = (<TreeRHasher as Hasher>::Domain::random(&mut *rng), <TreeRHasher as Hasher>::Domain::random(&mut *rng));
    let comm_r = comm_r_of(&comm_c, &comm_r_last);
    let proofs = porep_vanilla(&params, (comm_d, comm_c, comm_r_last), partitions, challenges, rng)?;
    let (ticket, seed) = (random_ticket(rng), random_ticket(rng));
    let porep_id = porep_config(registered_proof)?.porep_id;
    let replica_id = generate_replica_id::<TreeRHasher, _>(&prover_id(MINER_ID), SECTOR_NUMBER, &ticket, comm_d, &porep_id);
    let inputs = stacked::PublicInputs { replica_id, tau: Some(stacked::Tau { comm_d, comm_r }), k: None, seed: Some(seed) };
    let c1 = SealCommitPhase1Output { vanilla_proofs: proofs, comm_r: comm_r.into(), comm_d: comm_d.into(), replica_id, seed, ticket };
    Ok(PoRepFabric { params, inputs, c1 })
}

/// The challenges of one PoRep partition at `sector_size`.
pub fn porep_challenges(sector_size: u64) -> Result<usize, FilError> {
    let config = crate::ids::porep_config(FilShape::new(FilKind::PoRep, sector_size)?.default_registered_proof())?;
    Ok(filecoin_proofs::parameters::setup_params(&config).map_err(FilError::fil)?.challenges.num_challenges_per_partition())
}

/// A synthetic PoRep job of `sector_size` (2 KiB, 8 MiB, 512 MiB, 32 GiB or 64 GiB):
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
        let f = fabricate::<Tree>(registered_proof, partitions, challenges, rng)?;
        let n = f.c1.vanilla_proofs.len();
        Ok((PoRepJob::unchecked(f.params, f.inputs, f.c1.vanilla_proofs), n))
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

/// A synthetic PoRep request of `sector_size`, fabricated from `seed`: the default (V1_1)
/// registered seal proof, miner [`MINER_ID`], sector [`SECTOR_NUMBER`], and in `vanilla_proof`
/// filecoin-proofs' C1 output JSON (bare, as [`crate::fixtures::generate`] writes it;
/// [`crate::wrap_c1_like_curio`] puts it in Curio's wrapper) with every partition and challenge
/// of that size. Its replica id is recomputed correctly from the request, so it decodes; its
/// vanilla proofs do not verify ([`crate::prepare`] refuses it, [`crate::prepare_unchecked`]
/// builds its circuits).
pub fn porep_request(sector_size: u64, seed: u64) -> Result<FilRequest, FilError> {
    let registered_proof = FilShape::new(FilKind::PoRep, sector_size)?.default_registered_proof();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let json = crate::decode::with_tree!(sector_size, T => {
        let f = fabricate::<T>(registered_proof, None, None, &mut rng)?;
        serde_json::to_vec(&f.c1).map_err(|e| FilError::Decode(format!("C1 output JSON: {e}")))?
    });
    let mut req = blank(FilKind::PoRep, registered_proof);
    req.vanilla_proof = json;
    Ok(req)
}
