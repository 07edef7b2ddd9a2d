//! Errors of the wgpu backend and their mapping into [`BackendError`].

use cuzk_core::backend::BackendError;

/// A failure of the wgpu backend.
#[derive(Debug, thiserror::Error)]
pub enum WgpuError {
    /// No adapter matched the selection (or none exists at all).
    #[error("no wgpu adapter found: {0}")]
    NoAdapter(String),
    /// The adapter refused to open a device.
    #[error("could not open a device on {adapter}: {reason}")]
    RequestDevice {
        /// The adapter's name.
        adapter: String,
        /// What wgpu said.
        reason: String,
    },
    /// A WGSL kernel did not assemble or compile.
    #[error("shader {0}: {1}")]
    Shader(String, String),
    /// wgpu reported a validation or internal error, or the device was lost.
    #[error("device error: {0}")]
    Device(String),
    /// An allocation exceeds the adapter's limits or its memory.
    #[error("out of memory: {0}")]
    OutOfMemory(String),
    /// Inconsistent arguments.
    #[error("invalid input: {0}")]
    Invalid(String),
}

impl From<WgpuError> for BackendError {
    fn from(e: WgpuError) -> Self {
        match e {
            WgpuError::NoAdapter(_) | WgpuError::RequestDevice { .. } => BackendError::Unavailable(e.to_string()),
            WgpuError::OutOfMemory(m) => BackendError::OutOfMemory(m),
            WgpuError::Invalid(m) => BackendError::InvalidInput(m),
            WgpuError::Shader(..) | WgpuError::Device(_) => BackendError::Device(e.to_string()),
        }
    }
}
