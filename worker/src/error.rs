//! Why a worker task failed.

use std::path::PathBuf;

use cuzk_core::backend::BackendError;
use cuzk_core::circuit::CircuitError;
use cuzk_core::jobs::{backend_fault, Fault};
use cuzk_core::params::ParamsError;
use cuzk_core::proof::VerifyError;
use cuzk_core::prover::ProveError;
use cuzk_core::synth::SynthesizeError;

/// A failed stage or parameter load. The engine records the message as the job's reason.
#[derive(Debug, thiserror::Error)]
pub enum WorkError {
    /// The circuit could not give its public inputs (its job's data is not a valid request).
    #[error("{0}")]
    Circuit(CircuitError),
    /// Synthesis failed.
    #[error(transparent)]
    Synthesize(#[from] SynthesizeError),
    /// The witness violates a constraint: the proof could not verify.
    #[error("the circuit is not satisfied (constraint {constraint}): the witness does not match the public inputs")]
    Unsatisfied {
        /// The first violated constraint.
        constraint: usize,
    },
    /// Synthesis produced other public inputs than the circuit computes from its job's data.
    #[error("the synthesized public inputs differ from the ones the request gives")]
    PublicInputsDiffer,
    /// A prover stage failed.
    #[error(transparent)]
    Prove(#[from] ProveError),
    /// Making parameters resident failed.
    #[error("making the parameters resident failed: {0}")]
    Backend(#[from] BackendError),
    /// The proof could not be checked.
    #[error(transparent)]
    Verify(#[from] VerifyError),
    /// The proof does not verify (a bug: report it).
    #[error("the proof does not verify")]
    ProofInvalid,
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A parameter file is invalid.
    #[error("parameter file {path}: {source}")]
    Params {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: ParamsError,
    },
    /// The engine asked for something the worker's state cannot satisfy (a bug: report it).
    #[error("internal: {0}")]
    Internal(String),
    /// The task panicked (a bug: report it).
    #[error("panicked{}", if .0.is_empty() { String::new() } else { format!(": {}", .0) })]
    Panicked(String),
}

impl WorkError {
    /// The fault this error is when another attempt may succeed (a device error, running out
    /// of memory, a proof that failed its check); `None` for errors that would repeat (a bad
    /// witness, a parameter mismatch, a bug).
    pub fn fault(&self) -> Option<Fault> {
        match self {
            WorkError::Backend(b) => backend_fault(b),
            WorkError::Prove(ProveError::Backend { source, .. }) => backend_fault(source),
            WorkError::ProofInvalid => Some(Fault::SelfCheck),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuzk_core::engine::Stage;

    #[test]
    fn device_errors_and_failed_checks_are_faults_bad_inputs_are_not() {
        let dev = WorkError::Prove(ProveError::Backend { stage: Stage::Msm, source: BackendError::Device("x".into()) });
        assert_eq!(dev.fault(), Some(Fault::Device));
        assert_eq!(WorkError::Backend(BackendError::OutOfMemory("x".into())).fault(), Some(Fault::OutOfMemory));
        assert_eq!(WorkError::ProofInvalid.fault(), Some(Fault::SelfCheck));
        assert_eq!(WorkError::Unsatisfied { constraint: 3 }.fault(), None);
        assert_eq!(WorkError::Backend(BackendError::InvalidInput("x".into())).fault(), None);
        assert_eq!(WorkError::Panicked("x".into()).fault(), None);
    }
}
