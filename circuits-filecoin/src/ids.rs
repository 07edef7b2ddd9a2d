//! Registered proof numbers and circuit ids (the proof kinds, [`FilKind`], are declared in `kind`).

use filecoin_proofs::{PoRepConfig, PoStConfig, PoStType};
use storage_proofs_core::api_version::{ApiFeature, ApiVersion};

use crate::error::FilError;
pub use crate::kind::FilKind;

/// Sector sizes with production (or test) parameters, and their short names.
const SIZES: [(u64, &str); 5] = [(1 << 11, "2k"), (1 << 23, "8m"), (1 << 29, "512m"), (1 << 35, "32g"), (1 << 36, "64g")];

fn size_index(sector_size: u64) -> Option<usize> {
    SIZES.iter().position(|(s, _)| *s == sector_size)
}

/// A Filecoin circuit: a kind at a sector size; the unit of parameters (`wpost-2k`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FilShape {
    /// The proof kind.
    pub kind: FilKind,
    /// Sector size in bytes.
    pub sector_size: u64,
}

impl FilShape {
    /// Checks the sector size.
    pub fn new(kind: FilKind, sector_size: u64) -> Result<FilShape, FilError> {
        size_index(sector_size)
            .ok_or_else(|| FilError::field("sector_size", format!("{sector_size} is not a Filecoin sector size (2 KiB, 8 MiB, 512 MiB, 32 GiB, 64 GiB)")))?;
        Ok(FilShape { kind, sector_size })
    }

    /// The id as the API and status page show it: `porep-2k`, `wpost-32g`.
    pub fn id(&self) -> String {
        let size = size_index(self.sector_size).map_or("?", |i| SIZES[i].1);
        format!("{}-{size}", self.kind.short())
    }

    /// Parses [`FilShape::id`].
    pub fn parse(s: &str) -> Option<FilShape> {
        let (k, size) = s.split_once('-')?;
        let kind = FilKind::from_short(k)?;
        let sector_size = SIZES.iter().find(|(_, n)| *n == size)?.0;
        Some(FilShape { kind, sector_size })
    }

    /// Every circuit id at one sector size.
    pub fn all_at(sector_size: u64) -> Result<Vec<FilShape>, FilError> {
        FilKind::ALL.into_iter().map(|k| FilShape::new(k, sector_size)).collect()
    }

    /// The registered proof number this circuit uses by default (for fixtures and setup): the
    /// V1_1 seal proof, the update proof, the V1 winning and V1_1 (grindability fix) window
    /// PoSt proofs, as Go's `abi` numbers them.
    pub fn default_registered_proof(&self) -> u64 {
        let i = size_index(self.sector_size).unwrap_or(0) as u64;
        match self.kind {
            FilKind::PoRep => 5 + i,
            FilKind::SnapDeals => i,
            FilKind::WinningPoSt => i,
            FilKind::WindowPoSt => 10 + i,
        }
    }
}

/// The PoRep configuration of a registered seal proof (Go's `abi.RegisteredSealProof`).
pub fn porep_config(registered_proof: u64) -> Result<PoRepConfig, FilError> {
    let unknown = || FilError::UnknownRegisteredProof { value: registered_proof, what: "RegisteredSealProof" };
    if registered_proof >= 20 {
        return Err(unknown());
    }
    let sector_size = SIZES[(registered_proof % 5) as usize].0;
    let mut porep_id = [0u8; 32];
    porep_id[..8].copy_from_slice(&registered_proof.to_le_bytes());
    let (version, features) = match registered_proof / 5 {
        0 => (ApiVersion::V1_0_0, vec![]),
        1 => (ApiVersion::V1_1_0, vec![]),
        2 => (ApiVersion::V1_2_0, vec![ApiFeature::SyntheticPoRep]),
        _ => (ApiVersion::V1_2_0, vec![ApiFeature::NonInteractivePoRep]),
    };
    PoRepConfig::new_groth16_with_features(sector_size, porep_id, version, features).map_err(FilError::fil)
}

/// The PoRep configuration a SnapDeals update uses (Go's `abi.RegisteredUpdateProof`, 0..=4).
pub fn update_porep_config(registered_proof: u64) -> Result<PoRepConfig, FilError> {
    if registered_proof >= 5 {
        return Err(FilError::UnknownRegisteredProof { value: registered_proof, what: "RegisteredUpdateProof" });
    }
    porep_config(registered_proof + 5)
}

/// The PoSt configuration of a registered PoSt proof (Go's `abi.RegisteredPoStProof`: 0..=4
/// winning, 5..=9 window V1, 10..=14 window V1_1).
pub fn post_config(registered_proof: u64, kind: FilKind) -> Result<PoStConfig, FilError> {
    let unknown = |what| FilError::UnknownRegisteredProof { value: registered_proof, what };
    let (typ, version) = match (kind, registered_proof) {
        (FilKind::WinningPoSt, 0..=4) => (PoStType::Winning, ApiVersion::V1_0_0),
        (FilKind::WindowPoSt, 5..=9) => (PoStType::Window, ApiVersion::V1_0_0),
        (FilKind::WindowPoSt, 10..=14) => (PoStType::Window, ApiVersion::V1_2_0),
        (FilKind::WinningPoSt, _) => return Err(unknown("winning RegisteredPoStProof (0..=4)")),
        _ => return Err(unknown("window RegisteredPoStProof (5..=14)")),
    };
    let sector_size = SIZES[(registered_proof % 5) as usize].0;
    let (challenge_count, sector_count) = match typ {
        PoStType::Winning => (filecoin_proofs::WINNING_POST_CHALLENGE_COUNT, filecoin_proofs::WINNING_POST_SECTOR_COUNT),
        PoStType::Window => {
            let counts = filecoin_proofs::WINDOW_POST_SECTOR_COUNT.read().map_err(|_| FilError::Filecoin("window post sector counts poisoned".into()))?;
            let n = *counts.get(&sector_size).ok_or_else(|| unknown("window RegisteredPoStProof"))?;
            (filecoin_proofs::WINDOW_POST_CHALLENGE_COUNT, n)
        }
    };
    Ok(PoStConfig { sector_size: sector_size.into(), challenge_count, sector_count, typ, priority: false, api_version: version })
}

/// The circuit id a registered proof of `kind` proves.
pub fn circuit_of(kind: FilKind, registered_proof: u64) -> Result<FilShape, FilError> {
    let size = match kind {
        FilKind::PoRep => u64::from(porep_config(registered_proof)?.sector_size),
        FilKind::SnapDeals => u64::from(update_porep_config(registered_proof)?.sector_size),
        FilKind::WindowPoSt | FilKind::WinningPoSt => u64::from(post_config(registered_proof, kind)?.sector_size),
    };
    FilShape::new(kind, size)
}

/// filecoin-proofs-api's `RegisteredSealProof` names, indexed by Go's `abi.RegisteredSealProof`
/// number (as they appear in a C1 output's `registered_proof`).
const SEAL_PROOF_NAMES: [&str; 20] = [
    "StackedDrg2KiBV1",
    "StackedDrg8MiBV1",
    "StackedDrg512MiBV1",
    "StackedDrg32GiBV1",
    "StackedDrg64GiBV1",
    "StackedDrg2KiBV1_1",
    "StackedDrg8MiBV1_1",
    "StackedDrg512MiBV1_1",
    "StackedDrg32GiBV1_1",
    "StackedDrg64GiBV1_1",
    "StackedDrg2KiBV1_1_Feat_SyntheticPoRep",
    "StackedDrg8MiBV1_1_Feat_SyntheticPoRep",
    "StackedDrg512MiBV1_1_Feat_SyntheticPoRep",
    "StackedDrg32GiBV1_1_Feat_SyntheticPoRep",
    "StackedDrg64GiBV1_1_Feat_SyntheticPoRep",
    "StackedDrg2KiBV1_2_Feat_NonInteractivePoRep",
    "StackedDrg8MiBV1_2_Feat_NonInteractivePoRep",
    "StackedDrg512MiBV1_2_Feat_NonInteractivePoRep",
    "StackedDrg32GiBV1_2_Feat_NonInteractivePoRep",
    "StackedDrg64GiBV1_2_Feat_NonInteractivePoRep",
];

/// The name filecoin-proofs-api gives a registered seal proof (`5` is `"StackedDrg2KiBV1_1"`).
pub fn seal_proof_name(registered_proof: u64) -> Option<&'static str> {
    SEAL_PROOF_NAMES.get(usize::try_from(registered_proof).ok()?).copied()
}

/// The registered seal proof number of a filecoin-proofs-api name.
pub fn seal_proof_number(name: &str) -> Option<u64> {
    SEAL_PROOF_NAMES.iter().position(|n| *n == name).map(|i| i as u64)
}

/// The name of the `VanillaSealProof` variant (the one key of a C1 output's `vanilla_proofs`)
/// for a sector size: `"StackedDrg2KiBV1"`; the variants are named after the V1 proofs whatever
/// the proof version.
pub(crate) fn vanilla_seal_proof_key(sector_size: u64) -> Option<&'static str> {
    SEAL_PROOF_NAMES[..5].get(size_index(sector_size)?).copied()
}

/// Human-readable sector size (`2 KiB`).
pub(crate) fn size_name(sector_size: u64) -> String {
    match sector_size {
        s if s >= 1 << 30 && s % (1 << 30) == 0 => format!("{} GiB", s >> 30),
        s if s >= 1 << 20 && s % (1 << 20) == 0 => format!("{} MiB", s >> 20),
        s if s >= 1 << 10 && s % (1 << 10) == 0 => format!("{} KiB", s >> 10),
        s => format!("{s} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_proof_names_follow_the_abi_numbers() {
        // Go's abi numbers (go-state-types): 0..4 V1, 5..9 V1_1, 10..14 synthetic, 15..19 NI.
        assert_eq!(seal_proof_name(0), Some("StackedDrg2KiBV1"));
        assert_eq!(seal_proof_name(5), Some("StackedDrg2KiBV1_1"));
        assert_eq!(seal_proof_name(8), Some("StackedDrg32GiBV1_1"));
        assert_eq!(seal_proof_name(13), Some("StackedDrg32GiBV1_1_Feat_SyntheticPoRep"));
        assert_eq!(seal_proof_name(19), Some("StackedDrg64GiBV1_2_Feat_NonInteractivePoRep"));
        assert_eq!(seal_proof_name(20), None);
        for n in 0..20 {
            let name = seal_proof_name(n).unwrap();
            assert_eq!(seal_proof_number(name), Some(n));
            let size = u64::from(porep_config(n).unwrap().sector_size);
            assert!(name.starts_with(vanilla_seal_proof_key(size).unwrap()), "{name}");
        }
        assert_eq!(size_name(2048), "2 KiB");
        assert_eq!(size_name(32 << 30), "32 GiB");
        assert_eq!(size_name(512 << 20), "512 MiB");
    }
}
