//! Curve and subgroup checks of decoded points on the device ([`Backend::first_invalid_g1`]):
//! the points go up in chunks, copied on one of two streams while the other's chunk is checked
//! (`kernels/cuda/curve/points.cu`, one thread a point), and the lowest failing index comes
//! back as eight bytes. The checks run on streams of their own, outside the compute lock, so a
//! parameter load's checks do not wait for (or hold up) proofs on the same device.
//!
//! [`Backend::first_invalid_g1`]: cuzk_core::backend::Backend::first_invalid_g1

use blstrs::{G1Affine, G2Affine};
use cudarc::driver::result;
use cuzk_core::params::{PointError, PointFailure};

use crate::device::{dtoh_sync, htod_async, Args, DevBuf};
use crate::{as_bytes, CudaBackend, CudaError};

/// Threads per block (`POINTS_BLOCK` in `points.cu`).
const BLOCK: u32 = 128;

/// Points per chunk by default: 2^22 G1 or 2^21 G2 points, 384 MiB either way (two chunks are
/// on the device at once).
pub const CHUNK_G1: usize = 1 << 22;
/// G2 counterpart of [`CHUNK_G1`].
pub const CHUNK_G2: usize = 1 << 21;

/// What the kernel leaves in `first`: `index·2 + 1` for a point off the curve or outside the
/// subgroup, `index·2` for the identity, all ones when every point passed.
fn decode(first: u64) -> Option<PointFailure> {
    let reason = if first & 1 == 1 { PointError::NotOnCurveOrSubgroup } else { PointError::Identity };
    (first != u64::MAX).then_some(PointFailure { index: (first >> 1) as usize, reason })
}

impl CudaBackend {
    /// [`Backend::first_invalid_g1`](cuzk_core::backend::Backend::first_invalid_g1) on the
    /// device, `chunk` points at a time (at least one; the trait method takes [`CHUNK_G1`]).
    pub fn first_invalid_g1_with(&self, points: &[G1Affine], chunk: usize) -> Result<Option<PointFailure>, CudaError> {
        self.first_invalid_points("check_points_g1", as_bytes(points), points.len(), chunk)
    }

    /// G2 counterpart of [`CudaBackend::first_invalid_g1_with`] (the trait method takes
    /// [`CHUNK_G2`]).
    pub fn first_invalid_g2_with(&self, points: &[G2Affine], chunk: usize) -> Result<Option<PointFailure>, CudaError> {
        self.first_invalid_points("check_points_g2", as_bytes(points), points.len(), chunk)
    }

    /// Checks `n` points of `bytes.len() / n` bytes each with `kernel`.
    fn first_invalid_points(&self, kernel: &str, bytes: &[u8], n: usize, chunk: usize) -> Result<Option<PointFailure>, CudaError> {
        if n == 0 {
            return Ok(None);
        }
        let size = bytes.len() / n;
        let per = chunk.clamp(1, n).min(u32::MAX as usize);
        self.inner.ctx.bind_to_thread()?;
        let streams = [self.inner.stream.sibling()?, self.inner.stream.sibling()?];
        let bufs = [DevBuf::new(&streams[0], per * size)?, DevBuf::new(&streams[1], per * size)?];
        let first = DevBuf::new(&streams[0], 8)?;
        // SAFETY: the buffer holds eight bytes.
        unsafe { result::memset_d8_async(first.ptr, 0xff, 8, streams[0].raw()) }?;
        // Both buffers and the initialised `first` exist before either stream uses them.
        streams[0].sync()?;
        streams[1].sync()?;
        let run = || -> Result<(), CudaError> {
            for (j, lo) in (0..n).step_by(per).enumerate() {
                let (s, buf) = (&streams[j % 2], &bufs[j % 2]);
                let count = per.min(n - lo);
                // SAFETY: the buffer holds `per` points; the source bytes are in range and
                // outlive this call, which waits for both streams. The copy is ordered after the
                // check that last read this buffer (same stream).
                unsafe { htod_async(buf.ptr, bytes[lo * size..].as_ptr(), count * size, s)? };
                let args = Args::new().push(buf.ptr).push(count as u32).push(lo as u64).push(first.ptr);
                // SAFETY: check_points_g1/g2 take (points, n, base, first); the buffer holds
                // `count` points and `first` eight bytes.
                unsafe { self.inner.module.launch(kernel, (count as u32).div_ceil(BLOCK), BLOCK, 0, s, args)? };
            }
            Ok(())
        };
        let queued = run();
        // Wait for both streams even when queueing failed: the copies read `bytes`.
        let synced = streams[1].sync().and(streams[0].sync());
        queued?;
        synced?;
        let mut out = [0u8; 8];
        // SAFETY: `first` holds eight bytes.
        unsafe { dtoh_sync(&mut out, first.ptr, &streams[0])? };
        Ok(decode(u64::from_le_bytes(out)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_result_word_decodes() {
        assert_eq!(decode(u64::MAX), None);
        assert_eq!(decode(0), Some(PointFailure { index: 0, reason: PointError::Identity }));
        assert_eq!(decode(7), Some(PointFailure { index: 3, reason: PointError::NotOnCurveOrSubgroup }));
    }
}
