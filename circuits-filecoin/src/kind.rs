//! The Filecoin proof kinds: the lowest module of the crate (errors name them).

/// The four Filecoin proof kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FilKind {
    /// PoRep commit phase 2 (from a `SealCommitPhase1Output`).
    PoRep,
    /// SnapDeals replica update.
    SnapDeals,
    /// One WindowPoSt partition.
    WindowPoSt,
    /// WinningPoSt.
    WinningPoSt,
}

impl FilKind {
    /// All kinds.
    pub const ALL: [FilKind; 4] = [FilKind::PoRep, FilKind::SnapDeals, FilKind::WindowPoSt, FilKind::WinningPoSt];

    /// Short name used in circuit ids (`porep`, `snap`, `wpost`, `winning`).
    pub fn short(self) -> &'static str {
        match self {
            FilKind::PoRep => "porep",
            FilKind::SnapDeals => "snap",
            FilKind::WindowPoSt => "wpost",
            FilKind::WinningPoSt => "winning",
        }
    }

    /// The kind from [`FilKind::short`].
    pub fn from_short(s: &str) -> Option<FilKind> {
        FilKind::ALL.into_iter().find(|k| k.short() == s)
    }
}
