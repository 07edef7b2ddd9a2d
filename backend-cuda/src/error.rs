//! Errors of the CUDA backend.

use cudarc::driver::DriverError;
use cuzk_core::backend::BackendError;

use crate::nvrtc::NvrtcError;

/// A failure of the CUDA backend.
#[derive(Debug, thiserror::Error)]
pub enum CudaError {
    /// No driver or no device.
    #[error("CUDA unavailable: {0}")]
    Unavailable(String),
    /// The driver reported an error.
    #[error("CUDA driver: {0}")]
    Driver(#[from] DriverError),
    /// A device-side failure with context.
    #[error("CUDA: {0}")]
    Device(String),
    /// Kernel compilation failed.
    #[error(transparent)]
    Nvrtc(#[from] NvrtcError),
    /// Device or pinned memory ran out.
    #[error("out of memory: {0}")]
    OutOfMemory(String),
    /// Bad arguments.
    #[error("invalid input: {0}")]
    Invalid(String),
}

impl From<CudaError> for BackendError {
    fn from(e: CudaError) -> Self {
        match e {
            CudaError::Unavailable(s) => BackendError::Unavailable(s),
            CudaError::OutOfMemory(s) => BackendError::OutOfMemory(s),
            CudaError::Invalid(s) => BackendError::InvalidInput(s),
            CudaError::Nvrtc(NvrtcError::NotFound(s)) => BackendError::Unavailable(format!("NVRTC not found: {s}")),
            other => BackendError::Device(other.to_string()),
        }
    }
}
