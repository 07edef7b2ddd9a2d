//! API names of proof kinds and priorities, shared by the server side and the client side.

use cuzk_circuits_filecoin::FilKind;
use cuzk_core::engine::Priority;

use crate::circuits::CircuitShape;
use crate::proto::ProofKind;

/// The API name of an engine priority.
pub fn priority_name(p: Priority) -> &'static str {
    match p {
        Priority::Low => "low",
        Priority::Normal => "normal",
        Priority::High => "high",
        Priority::Critical => "critical",
    }
}

/// The API proof kind of a Filecoin kind.
pub fn proto_kind(kind: FilKind) -> ProofKind {
    match kind {
        FilKind::PoRep => ProofKind::PorepSealCommit,
        FilKind::SnapDeals => ProofKind::SnapDealsUpdate,
        FilKind::WindowPoSt => ProofKind::WindowPostPartition,
        FilKind::WinningPoSt => ProofKind::WinningPost,
    }
}

/// A proof kind as Curio's daemon names it in `GetStatus` (`porep-c2`, `snap-update`,
/// `window-post`, `winning-post`; `generic` for cuzk's own circuits).
pub fn kind_name(kind: ProofKind) -> &'static str {
    match kind {
        ProofKind::PorepSealCommit => "porep-c2",
        ProofKind::SnapDealsUpdate => "snap-update",
        ProofKind::WindowPostPartition => "window-post",
        ProofKind::WinningPost => "winning-post",
        ProofKind::Generic | ProofKind::Unspecified => "generic",
    }
}

/// The API kind of a circuit.
pub fn circuit_kind(c: CircuitShape) -> ProofKind {
    match c {
        CircuitShape::Filecoin(f) => proto_kind(f.kind),
        CircuitShape::Generic(_) => ProofKind::Generic,
    }
}
