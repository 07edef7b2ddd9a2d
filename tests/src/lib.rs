//! Shared helpers for cuzk's cross-backend and end-to-end tests.

#![warn(missing_docs)]

use std::path::PathBuf;

/// The external test vectors (`../shared/vectors` beside the repository), or `CUZK_VECTORS`.
pub fn vectors_dir() -> PathBuf {
    if let Ok(p) = std::env::var("CUZK_VECTORS") {
        return PathBuf::from(p);
    }
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let candidate = here.join("../../shared/vectors");
    assert!(candidate.is_dir(), "external vectors not found at {} (set CUZK_VECTORS)", candidate.display());
    candidate
}
