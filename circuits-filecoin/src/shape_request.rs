//! Shape-only requests of every kind: what Curio's client would send for a sector of any
//! supported size, with the real structure and fabricated values (`crate::shape`,
//! `crate::snap_shape`, `crate::post_shape`).

use crate::error::FilError;
use crate::ids::FilKind;
use crate::request::FilRequest;

/// A shape-only request of `kind` for a sector of `sector_size` bytes (2 KiB, 8 MiB, 512 MiB,
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
pub fn shape_request(kind: FilKind, sector_size: u64, seed: u64) -> Result<FilRequest, FilError> {
    match kind {
        FilKind::PoRep => crate::shape::porep_request(sector_size, seed),
        FilKind::SnapDeals => crate::snap_shape::snap_request(sector_size, seed),
        FilKind::WindowPoSt | FilKind::WinningPoSt => crate::post_shape::post_request(kind, sector_size, seed),
    }
}
