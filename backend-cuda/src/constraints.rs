//! Host side of constraint evaluation on the GPU (`kernels/cuda/constraints/eval.cu`):
//! `a = A·w, b = B·w, c = C·w` from a circuit's recorded matrices, resident on the device.
//!
//! [`load`] checks the matrices ([`check_csr`], from `cuzk_core::matrices`: every offset, column and coefficient index in
//! range, so the kernel never reads outside its buffers) and uploads them once: per matrix the
//! row offsets, as u32 when every matrix has at most `u32::MAX` entries ([`offsets_fit_u32`]),
//! else as u64, the entries' columns and coefficient-table indices as recorded, and one
//! coefficient table of Montgomery-form scalars, and per matrix the rows longer than
//! [`LONG_ROW`] entries. [`launch`] runs one kernel over the rows of all three matrices, each
//! row on 2^[`log_lanes`] lanes of a warp, and one over the long rows, a warp each.

use std::sync::Arc;

use cuzk_core::matrices::ConstraintMatrices;

use crate::as_bytes;
use crate::device::{htod_async, Args, DevBuf, Module, Stream};
use crate::error::CudaError;

/// Threads per block of the evaluation kernels (`EVAL_BLOCK` in `eval.cu`).
const BLOCK: u64 = 256;

/// Widest lane group per row: a warp.
pub const MAX_LOG_LANES: u32 = 5;

/// Rows with more entries than this are evaluated a warp per row. SHA-256's additions give
/// rows of 128–1023 entries: about 0.2% of the rows of a SHA-256 chain, and a third of the
/// entries of its `A`.
pub const LONG_ROW: u64 = 64;

/// Offsets converted to u32 and copied this many at a time (16 MiB of host memory).
const OFFSET_CHUNK: usize = 1 << 22;

/// Whether the row offsets of matrices with `entries` entries each fit u32 (the largest offset
/// is the entry count).
pub fn offsets_fit_u32(entries: [usize; 3]) -> bool {
    entries.iter().all(|&e| e <= u32::MAX as usize)
}

/// Log2 of the lanes that evaluate one row of a matrix with `entries` entries in `rows` rows:
/// a thread per row up to 8 entries a row on average, then one lane per 4 entries (at most a
/// warp).
pub fn log_lanes(entries: usize, rows: usize) -> u32 {
    let mean = entries / rows.max(1);
    if mean < 8 {
        0
    } else {
        (mean / 4).ilog2().min(MAX_LOG_LANES)
    }
}

pub use cuzk_core::matrices::check_csr;

/// One matrix on the device (`None`: nothing to hold).
#[derive(Debug)]
struct DeviceCsr {
    offsets: Option<DevBuf>,
    cols: Option<DevBuf>,
    coeffs: Option<DevBuf>,
    entries: usize,
    /// Rows of more than [`LONG_ROW`] entries.
    long_rows: Option<DevBuf>,
    long_count: usize,
}

impl DeviceCsr {
    fn ptrs(&self) -> [u64; 3] {
        [&self.offsets, &self.cols, &self.coeffs].map(|b| b.as_ref().map_or(0, |b| b.ptr))
    }
}

/// A circuit's constraint matrices resident on the device ([`crate::CudaBackend`]'s
/// `Backend::Matrices`). Keeps the host matrices it was made from (shared, not copied) for the
/// shape checks of each evaluation.
#[derive(Debug)]
pub struct CudaMatrices {
    host: Arc<ConstraintMatrices>,
    csr: [DeviceCsr; 3],
    table: Option<DevBuf>,
    wide: bool,
    bytes: u64,
    /// The backend that loaded them (its buffers are that context's).
    pub(crate) owner: usize,
}

impl CudaMatrices {
    /// The host matrices these were uploaded from.
    pub fn host(&self) -> &Arc<ConstraintMatrices> {
        &self.host
    }

    /// Whether the row offsets are u64 (some matrix has more than `u32::MAX` entries).
    pub fn wide_offsets(&self) -> bool {
        self.wide
    }

    /// Device bytes: offsets, entries and the coefficient table.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Log2 of the lanes per row that [`launch`] uses for `A`, `B`, `C` by default.
    pub fn default_log_lanes(&self) -> [u32; 3] {
        let rows = self.host.num_constraints();
        [0, 1, 2].map(|i| log_lanes(self.csr[i].entries, rows))
    }
}

/// A new device buffer holding `bytes` (`None` when empty), copied on `stream`: the caller
/// keeps `bytes` alive and unchanged until `stream` has been synchronized.
fn queue_upload(stream: &Stream, bytes: &[u8]) -> Result<Option<DevBuf>, CudaError> {
    if bytes.is_empty() {
        return Ok(None);
    }
    let buf = DevBuf::new(stream, bytes.len())?;
    // SAFETY: the buffer has room; the caller keeps the source until the stream is synced.
    unsafe { htod_async(buf.ptr, bytes.as_ptr(), bytes.len(), stream)? };
    Ok(Some(buf))
}

/// Row offsets as u32, converted and copied a chunk at a time (synchronously).
fn upload_offsets_u32(stream: &Stream, offsets: &[u64]) -> Result<Option<DevBuf>, CudaError> {
    if offsets.is_empty() {
        return Ok(None);
    }
    let buf = DevBuf::new(stream, 4 * offsets.len())?;
    let mut chunk = Vec::with_capacity(OFFSET_CHUNK.min(offsets.len()));
    for (i, part) in offsets.chunks(OFFSET_CHUNK).enumerate() {
        chunk.clear();
        chunk.extend(part.iter().map(|&o| o as u32));
        // SAFETY: the chunk lies inside the buffer; it is synced before `chunk` is reused.
        unsafe { htod_async(buf.at(4 * i * OFFSET_CHUNK), chunk.as_ptr().cast(), 4 * chunk.len(), stream)? };
        stream.sync()?;
    }
    Ok(Some(buf))
}

/// The rows of more than [`LONG_ROW`] entries (the row count fits u32: `load` checks it).
pub fn long_rows(row_start: &[u64]) -> Vec<u32> {
    row_start.windows(2).enumerate().filter(|(_, w)| w[1] - w[0] > LONG_ROW).map(|(r, _)| r as u32).collect()
}

/// Checks `m` and uploads it on `stream`; returns once the copies have completed. `wide` forces
/// u64 offsets (`Some(true)`) or u32 ones (`Some(false)`, refused when they do not fit); `None`
/// takes u32 whenever they fit. `owner` identifies the loading backend.
pub(crate) fn load(stream: &Stream, m: &Arc<ConstraintMatrices>, wide: Option<bool>, owner: usize) -> Result<CudaMatrices, CudaError> {
    let rows = m.num_constraints();
    if rows > u32::MAX as usize {
        return Err(CudaError::Invalid(format!("{rows} constraints: at most 2^32 - 1 are evaluated on the GPU")));
    }
    let table = m.coefficients();
    let views = m.views();
    let mut entries = [0usize; 3];
    for (i, v) in views.iter().enumerate() {
        entries[i] = check_csr(v, rows, m.num_inputs, m.num_aux, table.len()).map_err(|e| CudaError::Invalid(format!("matrix {}: {e}", ["A", "B", "C"][i])))?;
    }
    let fit = offsets_fit_u32(entries);
    if wide == Some(false) && !fit {
        return Err(CudaError::Invalid(format!("u32 row offsets for matrices of {entries:?} entries")));
    }
    let wide = wide.unwrap_or(!fit);
    let mut csr = Vec::with_capacity(3);
    let long: Vec<Vec<u32>> = views.iter().map(|v| long_rows(v.row_start)).collect();
    for ((v, &entries), long) in views.iter().zip(&entries).zip(&long) {
        let offsets = if wide { queue_upload(stream, as_bytes(v.row_start))? } else { upload_offsets_u32(stream, v.row_start)? };
        let cols = queue_upload(stream, as_bytes(v.cols))?;
        let coeffs = queue_upload(stream, as_bytes(v.coeffs))?;
        let long_rows = queue_upload(stream, as_bytes(long))?;
        csr.push(DeviceCsr { offsets, cols, coeffs, entries, long_rows, long_count: long.len() });
    }
    let table_buf = queue_upload(stream, as_bytes(table))?;
    stream.sync()?; // the host slices may go now
    let csr: [DeviceCsr; 3] = csr.try_into().expect("three matrices");
    let offset_bytes = if wide { 8 } else { 4 };
    let bytes = csr.iter().map(|c| (c.offsets.is_some() as usize * offset_bytes * (rows + 1) + 8 * c.entries + 4 * c.long_count) as u64).sum::<u64>()
        + 32 * table.len() as u64;
    Ok(CudaMatrices { host: m.clone(), csr, table: table_buf, wide, bytes, owner })
}

/// Queues the evaluation of rows `0..num_constraints` of `A, B, C` into `out` on `stream`, row
/// `r` of each matrix on 2^`log_lanes[i]` lanes (each at most [`MAX_LOG_LANES`]). `input` and
/// `aux` hold the witness (checked by the caller); rows beyond the constraints are the
/// caller's.
pub(crate) fn launch(module: &Module, stream: &Stream, m: &CudaMatrices, out: [u64; 3], input: u64, aux: u64, log_lanes: [u32; 3]) -> Result<(), CudaError> {
    if let Some(l) = log_lanes.iter().find(|&&l| l > MAX_LOG_LANES) {
        return Err(CudaError::Invalid(format!("2^{l} lanes per row: at most 2^{MAX_LOG_LANES}")));
    }
    let rows = m.host.num_constraints() as u64;
    if rows == 0 {
        return Ok(());
    }
    let blocks = log_lanes.map(|l| (rows << l).div_ceil(BLOCK));
    let total = blocks.iter().sum::<u64>();
    if total > i32::MAX as u64 {
        return Err(CudaError::Invalid(format!("{rows} rows need {total} blocks")));
    }
    let [a, b, c] = [0, 1, 2].map(|i| m.csr[i].ptrs());
    let mut args = Args::new();
    for k in 0..3 {
        for p in [a[k], b[k], c[k]] {
            args = args.push(p);
        }
    }
    for p in out {
        args = args.push(p);
    }
    for l in log_lanes {
        args = args.push(l);
    }
    let table = m.table.as_ref().map_or(0, |t| t.ptr);
    let args = args.push(blocks[0] as u32).push((blocks[0] + blocks[1]) as u32).push(table).push(input).push(aux).push(rows as u32).push(LONG_ROW as u32);
    let kernel = if m.wide { "eval_constraints_u64" } else { "eval_constraints_u32" };
    // SAFETY: the arguments match EVAL_PARAMS; `load` checked every offset, column and
    // coefficient index against the buffers, and the caller the witness lengths and outputs.
    unsafe { module.launch(kernel, total as u32, BLOCK as u32, 0, stream, args)? };
    let long_kernel = if m.wide { "eval_long_rows_u64" } else { "eval_long_rows_u32" };
    for (csr, out) in m.csr.iter().zip(out) {
        let Some(list) = &csr.long_rows else { continue };
        let [off, col, coeff] = csr.ptrs();
        let blocks = (32 * csr.long_count as u64).div_ceil(BLOCK);
        let args = Args::new().push(off).push(col).push(coeff).push(out).push(list.ptr).push(csr.long_count as u32).push(table).push(input).push(aux);
        // SAFETY: the arguments match EVAL_LONG_PARAMS; every listed row is a row of this
        // matrix, whose entries `load` checked.
        unsafe { module.launch(long_kernel, blocks as u32, BLOCK as u32, 0, stream, args)? };
    }
    Ok(())
}

/// Threads per block of the satisfaction check (`CHECK_BLOCK` in `check.cu`).
const CHECK_BLOCK: u64 = 256;

/// Queues the satisfaction check of rows `0..rows` of the evaluated `a, b, c` (device
/// pointers, each holding at least `rows` scalars: checked by the caller) on `stream`: the
/// lowest violated row is left in the u32 at `first`, which the caller has set to `u32::MAX`.
pub(crate) fn launch_check(module: &Module, stream: &Stream, [a, b, c]: [u64; 3], rows: u32, first: u64) -> Result<(), CudaError> {
    if rows == 0 {
        return Ok(());
    }
    let blocks = (rows as u64).div_ceil(CHECK_BLOCK) as u32;
    let args = Args::new().push(a).push(b).push(c).push(rows).push(first);
    // SAFETY: check_constraints takes (a, b, c, rows, first); every buffer holds `rows` scalars
    // and `first` one u32.
    unsafe { module.launch("check_constraints", blocks, CHECK_BLOCK as u32, 0, stream, args) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_u32_up_to_u32_max_entries() {
        assert!(offsets_fit_u32([0, 0, 0]));
        assert!(offsets_fit_u32([u32::MAX as usize, 5, 0]));
        assert!(!offsets_fit_u32([1, u32::MAX as usize + 1, 0]));
        assert!(!offsets_fit_u32([0, 0, 1 << 40]));
    }

    #[test]
    fn long_rows_are_those_over_the_limit() {
        let l = LONG_ROW;
        assert_eq!(long_rows(&[0, l, 2 * l + 1, 2 * l + 1, 4 * l]), vec![1, 3]);
        assert!(long_rows(&[]).is_empty() && long_rows(&[0]).is_empty());
    }

    #[test]
    fn lanes_grow_with_row_length() {
        assert_eq!(log_lanes(0, 0), 0);
        assert_eq!(log_lanes(4 << 20, 1 << 20), 0);
        assert_eq!(log_lanes(7, 1), 0);
        assert_eq!(log_lanes(8, 1), 1);
        assert_eq!(log_lanes(16, 1), 2);
        assert_eq!(log_lanes(64, 1), 4);
        assert_eq!(log_lanes(1 << 20, 1), MAX_LOG_LANES);
    }
}
