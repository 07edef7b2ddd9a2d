//! Errors of the Filecoin proof kinds.

/// Why a Filecoin request could not be turned into circuits (or checked).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilError {
    /// The registered proof number is not one this kind knows.
    #[error("registered proof {value} is not a known {what}")]
    UnknownRegisteredProof {
        /// The number sent.
        value: u64,
        /// Which enumeration it was read as.
        what: &'static str,
    },
    /// A field has the wrong length or encoding.
    #[error("{field}: {reason}")]
    BadField {
        /// The field.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// One element of `vanilla_proofs` (API field 11) is malformed.
    #[error("vanilla_proofs[{index}]: {reason}")]
    Element {
        /// Its position in the list.
        index: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The vanilla proofs came in the other API field than the one this kind reads.
    #[error("{kind:?} reads its vanilla proofs from {expected}, but {got} is set")]
    WrongField {
        /// The kind of the request.
        kind: crate::kind::FilKind,
        /// The field the kind reads.
        expected: &'static str,
        /// The field that was set instead.
        got: &'static str,
    },
    /// The vanilla proof bytes do not decode.
    #[error("vanilla proof does not decode: {0}")]
    Decode(String),
    /// The vanilla proofs do not verify against the public inputs (tampered proof, wrong
    /// randomness, wrong sector or miner id, wrong commitments).
    #[error("vanilla proof rejected: {0}")]
    VanillaInvalid(String),
    /// Filecoin's code refused the inputs.
    #[error("filecoin-proofs: {0}")]
    Filecoin(String),
    /// Parameter files could not be read or written.
    #[error("{path}: {reason}")]
    Params {
        /// The file.
        path: std::path::PathBuf,
        /// What went wrong.
        reason: String,
    },
}

impl FilError {
    pub(crate) fn fil(e: impl std::fmt::Display) -> FilError {
        FilError::Filecoin(format!("{e:#}"))
    }

    pub(crate) fn element(index: usize, reason: impl Into<String>) -> FilError {
        FilError::Element { index, reason: reason.into() }
    }

    pub(crate) fn field(field: &'static str, reason: impl Into<String>) -> FilError {
        FilError::BadField { field, reason: reason.into() }
    }
}
