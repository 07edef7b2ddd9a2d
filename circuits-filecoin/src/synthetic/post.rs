//! Synthetic WindowPoSt and WinningPoSt requests: sector proofs that are structurally exact for
//! a sector size (a full partition's sector count, the challenge count per sector, Merkle path
//! lengths and arities) with fabricated values, so production-size PoSt circuits can be built
//! ([`crate::prepare_unchecked`]) and timed without a sealed sector. Each sector's `comm_r` is
//! `H(comm_c, comm_r_last)` of its proofs' root; the challenges are not those the randomness
//! selects and the leaves are not the replica's, so nothing verifies ([`crate::prepare`] refuses
//! them) and nothing proved from them is a valid proof.

use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::{FallbackPoStSectorProof, TreeRHasher};
use rand::{Rng, SeedableRng};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::sector::SectorId;
use storage_proofs_post::fallback::{Proof, SectorProof};

use crate::error::FilError;
use crate::fixtures::blank;
use crate::ids::{post_config, FilKind, FilShape};
use crate::request::FilRequest;
use crate::synthetic::{comm_r_of, random_ticket, tree_levels, tree_proof};

/// `sectors` fabricated sector proofs (sector ids 1, 2, …) of `challenges` inclusion proofs
/// each in a sector of `sector_size` bytes.
fn sector_proofs<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    sector_size: u64,
    sectors: usize,
    challenges: usize,
    rng: &mut impl Rng,
) -> Result<Vec<FallbackPoStSectorProof<Tree>>, FilError> {
    let leaves = (sector_size / 32) as usize;
    let levels = tree_levels::<Tree>(leaves)?;
    Ok((1..=sectors as u64)
        .map(|id| {
            let (comm_c, comm_r_last) = (<TreeRHasher as Hasher>::Domain::random(&mut *rng), <TreeRHasher as Hasher>::Domain::random(&mut *rng));
            let inclusion_proofs = (0..challenges).map(|_| tree_proof::<Tree>(rng.gen_range(0..leaves), &levels, comm_r_last, rng)).collect();
            FallbackPoStSectorProof {
                sector_id: SectorId::from(id),
                comm_r: comm_r_of(&comm_c, &comm_r_last),
                vanilla_proof: Proof { sectors: vec![SectorProof { inclusion_proofs, comm_c, comm_r_last }] },
            }
        })
        .collect())
}

/// A synthetic WindowPoSt or WinningPoSt request of `sector_size`, fabricated from `seed`, in
/// Curio's encodings: the default registered PoSt proof of that size (V1_1 window, V1 winning),
/// one bincode `FallbackPoStSectorProof` per sector in `vanilla_proofs` — WindowPoSt: a full
/// partition (partition 0), as many sectors as a partition of that size proves (2349 at
/// 32 GiB, 2300 at 64 GiB) with its challenge count each (10); WinningPoSt: its one sector with
/// 66 challenges — and a 32-byte randomness. It decodes; its proofs do not verify.
pub fn post_request(kind: FilKind, sector_size: u64, seed: u64) -> Result<FilRequest, FilError> {
    if !matches!(kind, FilKind::WindowPoSt | FilKind::WinningPoSt) {
        return Err(FilError::field("kind", format!("{kind:?} is not a PoSt kind")));
    }
    let registered_proof = FilShape::new(kind, sector_size)?.default_registered_proof();
    let config = post_config(registered_proof, kind)?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut req = blank(kind, registered_proof);
    req.randomness = random_ticket(&mut rng).to_vec();
    let encode = |e: bincode::Error| FilError::Decode(format!("bincode: {e}"));
    req.vanilla_proofs = crate::decode::with_tree!(sector_size, T => sector_proofs::<T>(sector_size, config.sector_count, config.challenge_count, &mut rng)?
        .iter()
        .map(bincode::serialize)
        .collect::<Result<_, _>>()
        .map_err(encode)?);
    Ok(req)
}
