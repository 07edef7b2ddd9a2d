//! Synthetic requests of every kind, for benchmarks: what Curio's client would send for a sector
//! of any supported size, with the real structure and fabricated values. Each kind fabricates
//! its own in its folder ([`crate::synthetic::porep`], [`crate::synthetic::snap`],
//! [`crate::synthetic::post`]) with the Merkle-path helpers here.

use cuzk_gadget_witness::por::level_arities;
use filecoin_hashers::{Domain, HashFunction, Hasher};
use filecoin_proofs::TreeRHasher;
use rand::Rng;
use storage_proofs_core::merkle::{compound_path_length, MerkleProof, MerkleTreeTrait};

use crate::error::FilError;
use crate::ids::FilKind;
use crate::request::FilRequest;

pub(crate) type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

/// A path to leaf `node` through levels of the given arities (from the leaf up): per level,
/// fabricated siblings and `node`'s digit at that level.
pub(crate) fn path<D: Domain>(node: usize, level_arities: &[usize], rng: &mut impl Rng) -> Vec<(Vec<D>, usize)> {
    let mut rest = node;
    level_arities
        .iter()
        .map(|&arity| {
            let index = rest % arity;
            rest /= arity;
            ((0..arity - 1).map(|_| D::random(&mut *rng)).collect(), index)
        })
        .collect()
}

/// The arity of each level (from the leaf up) of `Tree` over `leaves` leaves.
pub(crate) fn tree_levels<Tree: MerkleTreeTrait>(leaves: usize) -> Result<Vec<usize>, FilError> {
    let len = compound_path_length::<Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity>(leaves);
    level_arities(crate::porep::witness::arities::<Tree>(), len).map_err(|e| FilError::Filecoin(e.to_string()))
}

/// An inclusion proof of a fabricated leaf at `node` of a tree with levels `tree_levels` and
/// root `root`.
pub(crate) fn tree_proof<Tree: MerkleTreeTrait>(
    node: usize,
    tree_levels: &[usize],
    root: <Tree::Hasher as Hasher>::Domain,
    rng: &mut impl Rng,
) -> TreeProof<Tree> {
    let leaf = <Tree::Hasher as Hasher>::Domain::random(&mut *rng);
    MerkleProof::from_parts(leaf, root, path(node, tree_levels, rng))
}

/// `comm_r = H(comm_c, comm_r_last)`, as sealing computes it.
pub(crate) fn comm_r_of(comm_c: &<TreeRHasher as Hasher>::Domain, comm_r_last: &<TreeRHasher as Hasher>::Domain) -> <TreeRHasher as Hasher>::Domain {
    <TreeRHasher as Hasher>::Function::hash2(comm_c, comm_r_last)
}

/// 32 random bytes that are a field element (top bits cleared), as tickets and seeds are.
pub(crate) fn random_ticket(rng: &mut impl Rng) -> [u8; 32] {
    let mut t: [u8; 32] = rng.gen();
    t[31] &= 0x3f;
    t
}

/// A synthetic request of `kind` for a sector of `sector_size` bytes (2 KiB, 8 MiB, 512 MiB,
/// 32 GiB or 64 GiB), fabricated from `seed`: the registered proof of that size that
/// [`crate::FilShape::default_registered_proof`] names, and the real partition, challenge and
/// sector counts, Merkle path lengths and arities, with random values, in the encodings
/// [`FilRequest`] describes (as [`crate::fixtures::generate`] writes them: PoRep's C1 output
/// bare, filecoin-proofs' layout; SnapDeals and PoSt as Curio sends them). WindowPoSt is one
/// full partition (partition 0).
///
/// For benchmarks at sizes where no sealed sector exists: [`crate::prepare_unchecked`] builds
/// its circuits; [`crate::prepare`] refuses it (its vanilla proofs do not verify), and nothing
/// proved from it is a valid proof.
pub fn synthetic_request(kind: FilKind, sector_size: u64, seed: u64) -> Result<FilRequest, FilError> {
    match kind {
        FilKind::PoRep => crate::synthetic::porep::porep_request(sector_size, seed),
        FilKind::SnapDeals => crate::synthetic::snap::snap_request(sector_size, seed),
        FilKind::WindowPoSt | FilKind::WinningPoSt => crate::synthetic::post::post_request(kind, sector_size, seed),
    }
}

pub mod porep;
pub mod post;
pub mod snap;
