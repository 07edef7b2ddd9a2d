//! `cuzk-backend-cuda`: the CUDA backend of cuzk.
//!
//! - The driver is reached through cudarc with dynamic loading, and the kernels (CUDA C under
//!   `kernels/cuda/`) are compiled at run time by NVRTC for the device's architecture and
//!   cached on disk ([`nvrtc`]), so building this crate needs no CUDA toolkit.
//! - [`PinnedPool`] hands out pooled page-locked host buffers; synthesis writes `a, b, c` into
//!   them and [`CudaBackend::upload_scalars`] moves them to the device by DMA at line rate, on
//!   a copy stream of its own: an upload runs while kernels of other partitions run, and the
//!   kernels that read the uploaded scalars wait for it on the device (an event), not on the
//!   host.
//! - Scalars, G1 and G2 bases live on the device; the NTT family, the quotient, `compute_h`
//!   and G1/G2 Pippenger MSMs run on the GPU ([`ntt`], [`msm`]).
//! - A circuit's recorded constraint matrices live on the device too ([`CudaMatrices`]), and
//!   `a, b, c` are evaluated there from the uploaded witness ([`constraints`]).
//! - The curve and subgroup checks of a parameter file validated in full run there too
//!   ([`points`]).
//!
//! blstrs types are `repr(transparent)` over blst's, whose Montgomery limbs are exactly the
//! kernels' 32-bit-limb Montgomery form, so uploads and downloads are plain byte copies.

#![warn(missing_docs)]

pub mod constraints;
pub mod device;
pub mod error;
pub mod kernels;
pub mod msm;
pub mod ntt;
pub mod nvrtc;
pub mod pinned;
pub mod points;
mod timeline;

/// In a test: the shared first CUDA device ([`CudaBackend::first_shared`]), or a visible
/// `SKIPPED: <module> needs a CUDA device` on stderr (past the harness's capture) and return.
#[macro_export]
macro_rules! need_gpu {
    () => {
        match $crate::CudaBackend::first_shared() {
            Ok(b) => b,
            Err(why) => {
                use ::std::io::Write as _;
                let _ = writeln!(::std::io::stderr(), "SKIPPED: {} needs a CUDA device: {why}", module_path!());
                return;
            }
        }
    };
}

use std::sync::{Arc, Mutex, OnceLock};

use blstrs::{Fp, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use cudarc::driver::{result, sys, CudaContext};
use cuzk_core::alloc::{PinnedVec, SharedAllocator};
use cuzk_core::backend::{Backend, BackendError, MsmScalars, NttDirection};
use cuzk_core::domain::Domain;
use cuzk_core::matrices::ConstraintMatrices;
use cuzk_core::msm::{fp2_from_bytes, fp_from_bytes};
use cuzk_core::params::PointFailure;
use group::Group as _;

pub use constraints::CudaMatrices;
pub use error::CudaError;
pub use pinned::PinnedPool;

use device::{dtoh_sync, htod_async, Args, DevBuf, Event, Module, Stream};

const _: () = assert!(std::mem::size_of::<Scalar>() == 32);
const _: () = assert!(std::mem::size_of::<G1Affine>() == 96);
const _: () = assert!(std::mem::size_of::<G2Affine>() == 192);
const _: () = assert!(std::mem::size_of::<G1Projective>() == 144);
const _: () = assert!(std::mem::size_of::<G2Projective>() == 288);
const _: () = assert!(std::mem::size_of::<Fp>() == 48);

/// Bytes of a resident upload (parameters) copied under the copy lock at a time: the scalars
/// of a partition in flight wait for at most one piece (64 MiB, a few ms over PCIe).
const RESIDENT_UPLOAD_PIECE: usize = 64 << 20;

/// A scalar passed by value to a kernel (8 × u32, Montgomery form).
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub struct FrArg(pub [u32; 8]);

impl From<Scalar> for FrArg {
    fn from(s: Scalar) -> Self {
        // SAFETY: Scalar is 32 bytes of Montgomery limbs (asserted above).
        FrArg(unsafe { std::mem::transmute::<Scalar, [u32; 8]>(s) })
    }
}

/// The raw bytes of a slice of plain-old-data blstrs values.
pub(crate) fn as_bytes<T>(v: &[T]) -> &[u8] {
    // SAFETY: the blstrs types used here have no padding and no invalid bit patterns as bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// Scalars as little-endian u64 words (Montgomery form).
pub(crate) fn scalar_words(v: &[Scalar]) -> Vec<u64> {
    as_bytes(v).chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect()
}

/// Scalars on the device (Montgomery form).
#[derive(Debug)]
pub struct CudaScalars {
    buf: Option<DevBuf>,
    len: usize,
    /// Set when the scalars arrive on the copy stream: the event that completes the copy, and
    /// the compute stream that frees the buffer (ordered after the event in `Drop`).
    ready: Option<(Event, Stream)>,
}

impl Drop for CudaScalars {
    fn drop(&mut self) {
        if let (Some(_), Some((ev, home))) = (&self.buf, &self.ready) {
            // The buffer is freed on `home`; make sure that comes after the copy.
            let _ = ev.wait_on(home);
        }
    }
}

impl CudaScalars {
    /// Number of scalars.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    fn ptr(&self) -> u64 {
        self.buf.as_ref().map_or(0, |b| b.ptr)
    }
}

/// Affine bases (G1 or G2): resident on the device, or kept in page-locked host memory and
/// streamed through the device in chunks during each MSM when they do not fit.
#[derive(Debug)]
pub struct CudaBases {
    buf: Option<DevBuf>,
    len: usize,
    /// Streamed bases: the host copy and the points per chunk.
    host: Option<(PinnedVec<u8>, usize)>,
}

impl CudaBases {
    fn ptr(&self) -> u64 {
        self.buf.as_ref().map_or(0, |b| b.ptr)
    }

    /// Whether the bases live in host memory and are streamed during MSMs.
    pub fn is_streamed(&self) -> bool {
        self.host.is_some()
    }
}

/// Device memory left free for working buffers when deciding whether bases fit: the larger
/// of 16 GiB and a fifth of the device.
fn headroom(total: usize) -> usize {
    (16usize << 30).max(total / 5)
}

/// Points per streamed chunk: 2^22 G1 or 2^21 G2 points, 384 MiB either way
/// ([`CudaBackend::load_g1_streamed`] takes another).
fn stream_chunk(group: msm::Group) -> usize {
    if group == msm::Group::G1 {
        1 << 22
    } else {
        1 << 21
    }
}

struct Inner {
    // Field order is drop order: GPU objects before the context.
    tables: OnceLock<ntt::NttTables>,
    module: Module,
    stream: Stream,
    /// Host-to-device copies of scalars from the pinned pool (overlap the compute stream).
    copy_stream: Stream,
    copy_lock: Mutex<()>,
    pool: Arc<PinnedPool>,
    ctx: Arc<CudaContext>,
    name: String,
    lock: Mutex<()>,
    /// Operations bracketed by timed events (`CUZK_GPU_TIMELINE`), when on.
    timeline: Option<timeline::Timeline>,
}

/// The CUDA backend on one device.
#[derive(Clone)]
pub struct CudaBackend {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBackend").field("name", &self.inner.name).finish()
    }
}

impl CudaBackend {
    /// Opens device `ordinal`: context, stream, kernels (compiled or from the cache).
    pub fn new(ordinal: usize) -> Result<Self, CudaError> {
        if !device::driver_present() {
            return Err(CudaError::Unavailable("libcuda not found".into()));
        }
        let count = device::device_count();
        if ordinal >= count {
            return Err(CudaError::Unavailable(format!("device {ordinal} requested, {count} present")));
        }
        let ctx = CudaContext::new(ordinal)?;
        // Keep freed device memory in the stream-ordered pool instead of returning it.
        // SAFETY: plain attribute set on the device's default pool.
        unsafe {
            if let Ok(pool) = result::device::get_default_mem_pool(ctx.cu_device()) {
                let mut thr: u64 = u64::MAX;
                let _ = result::mem_pool::set_attribute(pool, sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, (&mut thr as *mut u64).cast());
            }
        }
        let stream = Stream::new(&ctx)?;
        let copy_stream = Stream::new(&ctx)?;
        let module = Module::load(&ctx)?;
        let name = format!("cuda:{ordinal} {}", ctx.name().unwrap_or_default());
        tracing::info!(
            device = %name,
            cached = module.cached,
            seconds = module.load_seconds,
            defines = %module.defines.join(","),
            "CUDA kernels ready"
        );
        let pool = Arc::new(PinnedPool::new(ctx.clone()));
        let timeline = timeline::Timeline::from_env(ordinal, &stream);
        Ok(CudaBackend {
            inner: Arc::new(Inner {
                tables: OnceLock::new(),
                module,
                stream,
                copy_stream,
                copy_lock: Mutex::new(()),
                pool,
                ctx,
                name,
                lock: Mutex::new(()),
                timeline,
            }),
        })
    }

    /// The first device, or `None` (with the reason) when there is no usable GPU.
    pub fn first() -> Result<Self, CudaError> {
        Self::new(0)
    }

    /// The first device, opened once per process and shared by every caller (test and bench
    /// binaries); why there is none, in words, otherwise. Prints the device and whether its
    /// kernels came from the cache the first time.
    pub fn first_shared() -> Result<&'static CudaBackend, &'static str> {
        static FIRST: OnceLock<Result<CudaBackend, String>> = OnceLock::new();
        FIRST
            .get_or_init(|| {
                let b = Self::first().map_err(|e| e.to_string())?;
                let (cached, secs) = b.module_info();
                eprintln!("using {} (kernels {} in {secs:.1}s)", b.name(), if cached { "from cache" } else { "compiled" });
                Ok(b)
            })
            .as_ref()
            .map_err(String::as_str)
    }

    /// The pinned pool (also available as [`Backend::host_allocator`]).
    pub fn pool(&self) -> &Arc<PinnedPool> {
        &self.inner.pool
    }

    /// Whether the kernels came from the disk cache, and the seconds spent compiling/loading.
    pub fn module_info(&self) -> (bool, f64) {
        (self.inner.module.cached, self.inner.module.load_seconds)
    }

    /// The `#define`s the kernels were built with (on sm_90 the NTT's FP64 variant; see
    /// `device::kernel_defines`).
    pub fn kernel_defines(&self) -> &[String] {
        &self.inner.module.defines
    }

    /// Registers per thread of a kernel.
    pub fn kernel_regs(&self, name: &str) -> Option<i32> {
        self.inner.module.num_regs(name)
    }

    /// Identifies this backend and its clones (they share one context and its buffers).
    fn id(&self) -> usize {
        Arc::as_ptr(&self.inner) as usize
    }

    fn enter(&self) -> Result<std::sync::MutexGuard<'_, ()>, CudaError> {
        self.inner.ctx.bind_to_thread()?;
        Ok(self.inner.lock.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Runs `f`, which queues work without waiting for it, as the operation `label` of the
    /// compute stream's timeline (when on).
    fn timed<T>(&self, label: impl FnOnce() -> String, f: impl FnOnce() -> Result<T, CudaError>) -> Result<T, CudaError> {
        timeline::around(self.inner.timeline.as_ref(), &self.inner.stream, "compute", false, label, f)
    }

    /// [`CudaBackend::timed`] for an `f` that waits for its work before it returns.
    fn timed_sync<T>(&self, label: impl FnOnce() -> String, f: impl FnOnce() -> Result<T, CudaError>) -> Result<T, CudaError> {
        timeline::around(self.inner.timeline.as_ref(), &self.inner.stream, "compute", true, label, f)
    }

    fn tables(&self) -> Result<&ntt::NttTables, CudaError> {
        if let Some(t) = self.inner.tables.get() {
            return Ok(t);
        }
        let t = ntt::NttTables::new(&self.inner.module, &self.inner.stream)?;
        let _ = self.inner.tables.set(t);
        Ok(self.inner.tables.get().expect("just set"))
    }

    /// Holds `bytes` of device memory from the stream-ordered pool until the returned buffer is
    /// dropped (benchmarks: MSMs on a device that parameters and partitions nearly fill, as the
    /// daemon's on an 80 GB card at 32 GiB PoRep).
    pub fn hold_device_memory(&self, bytes: usize) -> Result<DevBuf, CudaError> {
        let _g = self.enter()?;
        let held = DevBuf::new(&self.inner.stream, bytes)?;
        self.inner.stream.sync()?;
        Ok(held)
    }

    /// Device memory an allocation can take now: the driver's free figure plus the idle bytes
    /// of the stream-ordered pool (what the MSM sizes its batch-affine groups from).
    pub fn allocatable_bytes(&self) -> Result<usize, CudaError> {
        let _g = self.enter()?;
        Ok(self.inner.stream.memory_info()?.0)
    }

    /// Waits for all queued work (kernels and copies).
    pub fn synchronize(&self) -> Result<(), CudaError> {
        let _g = self.enter()?;
        self.inner.copy_stream.sync()?;
        self.inner.stream.sync()
    }

    /// Copies raw bytes to a new device buffer; pinned pool memory is copied asynchronously and
    /// fenced, anything else synchronously.
    fn upload_bytes(&self, bytes: &[u8], from_pool: bool) -> Result<Option<DevBuf>, CudaError> {
        if bytes.is_empty() {
            return Ok(None);
        }
        let s = &self.inner.stream;
        let buf = DevBuf::new(s, bytes.len())?;
        // SAFETY: the buffer has room; the source stays alive until fenced or synced.
        unsafe { htod_async(buf.ptr, bytes.as_ptr(), bytes.len(), s)? };
        if from_pool {
            let ev = s.record()?;
            self.inner.pool.fence(bytes.as_ptr(), ev);
        } else {
            s.sync()?;
        }
        Ok(Some(buf))
    }

    /// Copies bytes that stay on the device (parameters) on the copy stream, in pieces that other
    /// uploads can come between, and waits for them there: a load neither waits for the compute
    /// stream's queued work nor holds the compute lock (a WinningPoSt's first load inside a
    /// PoRep backlog used to wait for the partition queued on the compute stream, once per query).
    fn upload_resident(&self, bytes: &[u8]) -> Result<Option<DevBuf>, CudaError> {
        if bytes.is_empty() {
            return Ok(None);
        }
        self.inner.ctx.bind_to_thread()?;
        let cs = &self.inner.copy_stream;
        let mut buf = match DevBuf::new(cs, bytes.len()) {
            Ok(buf) => buf,
            // Memory that the compute stream's queued work frees is not yet reusable from the
            // copy stream: on a full device, allocate and copy after that work, as before.
            Err(CudaError::OutOfMemory(_)) => {
                let _g = self.enter()?;
                return self.upload_bytes(bytes, false);
            }
            Err(e) => return Err(e),
        };
        for (i, piece) in bytes.chunks(RESIDENT_UPLOAD_PIECE).enumerate() {
            let _g = self.inner.copy_lock.lock().unwrap_or_else(|e| e.into_inner());
            // SAFETY: the buffer holds all of `bytes`; `piece` starts `i` pieces in and the
            // source outlives the copy (synchronized below).
            unsafe { htod_async(buf.at(i * RESIDENT_UPLOAD_PIECE), piece.as_ptr(), piece.len(), cs)? };
        }
        cs.sync()?;
        buf.free_on(&self.inner.stream);
        Ok(Some(buf))
    }

    /// Uploads pinned-pool bytes on the copy stream without taking the compute lock; the
    /// returned scalars carry the event their consumers wait for.
    fn upload_on_copy_stream(&self, bytes: &[u8], len: usize) -> Result<CudaScalars, CudaError> {
        self.inner.ctx.bind_to_thread()?;
        let _g = self.inner.copy_lock.lock().unwrap_or_else(|e| e.into_inner());
        let cs = &self.inner.copy_stream;
        let mut buf = DevBuf::new(cs, bytes.len())?;
        // SAFETY: the buffer has room; the pool keeps the source until the fence completes.
        timeline::around(
            self.inner.timeline.as_ref(),
            cs,
            "copy",
            false,
            || format!("upload n={len}"),
            || unsafe { htod_async(buf.ptr, bytes.as_ptr(), bytes.len(), cs) },
        )?;
        self.inner.pool.fence(bytes.as_ptr(), cs.record()?);
        let ready = Event::record(cs)?;
        buf.free_on(&self.inner.stream);
        Ok(CudaScalars { buf: Some(buf), len, ready: Some((ready, self.inner.stream.clone())) })
    }

    /// Orders the compute stream after the upload of `s` (if it came on the copy stream).
    fn ready(&self, s: &CudaScalars) -> Result<(), CudaError> {
        if let Some((ev, _)) = &s.ready {
            ev.wait_on(&self.inner.stream)?;
        }
        Ok(())
    }

    fn is_our_pool(&self, a: &SharedAllocator) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(&self.inner.pool))
    }

    /// Uploads scalars from any slice (synchronous copy).
    pub fn upload_slice(&self, v: &[Scalar]) -> Result<CudaScalars, CudaError> {
        let _g = self.enter()?;
        Ok(CudaScalars { buf: self.upload_bytes(as_bytes(v), false)?, len: v.len(), ready: None })
    }

    /// Runs a self-test kernel over `n` element pairs of `elem` bytes and returns `out_per`
    /// elements of `out_bytes` each per pair (diagnostics for the tests).
    pub fn selftest(&self, kernel: &str, a: &[u8], b: &[u8], n: usize, out_bytes: usize) -> Result<Vec<u8>, CudaError> {
        let _g = self.enter()?;
        let s = &self.inner.stream;
        let da = self.upload_bytes(a, false)?.ok_or_else(|| CudaError::Invalid("empty".into()))?;
        let db = self.upload_bytes(b, false)?.ok_or_else(|| CudaError::Invalid("empty".into()))?;
        let out = DevBuf::new(s, out_bytes)?;
        let args = Args::new().push(da.ptr).push(db.ptr).push(out.ptr).push(n as u32);
        // SAFETY: the self-test kernels take (a, b, out, n).
        unsafe { self.inner.module.launch(kernel, (n as u32).div_ceil(64), 64, 0, s, args)? };
        let mut host = vec![0u8; out_bytes];
        // SAFETY: out holds out_bytes.
        unsafe { dtoh_sync(&mut host, out.ptr, s)? };
        Ok(host)
    }

    /// Runs a product-throughput kernel (`bench_fr_mul` / `bench_fp_mul`) once: `threads`
    /// threads (a multiple of 256), each doing `4 · iters` products on elements taken from
    /// `input` (1024 field elements). Returns the seconds the launch took, synchronized.
    pub fn product_throughput(&self, kernel: &str, input: &[u8], threads: u32, iters: u32) -> Result<f64, CudaError> {
        if threads == 0 || threads & 255 != 0 || input.len() & 1023 != 0 || input.is_empty() {
            return Err(CudaError::Invalid("product_throughput needs threads a multiple of 256 and 1024 input elements".into()));
        }
        let _g = self.enter()?;
        let s = &self.inner.stream;
        let din = self.upload_bytes(input, false)?.ok_or_else(|| CudaError::Invalid("empty".into()))?;
        let out = DevBuf::new(s, threads as usize * (input.len() / 1024))?;
        let args = Args::new().push(din.ptr).push(out.ptr).push(iters);
        // SAFETY: the throughput kernels take (in with 1024 elements, out with one per thread, iters).
        self.time_launch(|| unsafe { self.inner.module.launch(kernel, threads / 256, 256, 0, s, args) })
    }

    /// Seconds one launch of the MSM's last-level inversion kernel (`msm_inv_each_g1`: one
    /// Fp inversion per thread) takes on `elements` (48-byte Montgomery-form Fp elements), for
    /// `cuzk-cuda-kernels field`. The elements are inverted in place.
    pub fn inversion_seconds(&self, elements: &[u8]) -> Result<f64, CudaError> {
        if elements.is_empty() || !elements.len().is_multiple_of(48) {
            return Err(CudaError::Invalid("inversion_seconds needs whole 48-byte elements".into()));
        }
        let n = elements.len() / 48;
        let _g = self.enter()?;
        let s = &self.inner.stream;
        let buf = self.upload_bytes(elements, false)?.ok_or_else(|| CudaError::Invalid("empty".into()))?;
        let args = Args::new().push(buf.ptr).push(n as u32);
        // SAFETY: msm_inv_each_g1 takes (n elements, n).
        self.time_launch(|| unsafe { self.inner.module.launch("msm_inv_each_g1", (n as u32).div_ceil(64), 64, 0, s, args) })
    }

    /// Output buffers of `domain.size()` scalars for an evaluation of `m` with the rows beyond
    /// the constraints zeroed, once the shapes are checked. The caller holds the compute lock
    /// and has made the compute stream wait for the witness (`ready`).
    fn evaluation_outputs(&self, m: &CudaMatrices, input: &CudaScalars, aux: &CudaScalars, domain: &Domain) -> Result<[DevBuf; 3], CudaError> {
        if m.owner != self.id() {
            return Err(CudaError::Invalid(format!("matrices loaded by another CUDA backend than {}", self.inner.name)));
        }
        cuzk_core::backend::check_evaluation(m.host(), input.len, aux.len, domain).map_err(|e| match e {
            BackendError::InvalidInput(s) => CudaError::Invalid(s),
            other => CudaError::Invalid(other.to_string()),
        })?;
        let (s, n, rows) = (&self.inner.stream, domain.size(), m.host().num_constraints());
        let alloc = || -> Result<DevBuf, CudaError> {
            let b = DevBuf::new(s, 32 * n)?;
            if n > rows {
                // SAFETY: the tail lies inside the buffer.
                unsafe { result::memset_d8_async(b.at(32 * rows), 0, 32 * (n - rows), s.raw()) }?;
            }
            Ok(b)
        };
        Ok([alloc()?, alloc()?, alloc()?])
    }

    /// [`Backend::load_matrices`] with the row offsets forced to u64 (`Some(true)`) or to u32
    /// (`Some(false)`, refused when some matrix has more than `u32::MAX` entries); `None` is the
    /// trait method's choice, u32 whenever they fit (tests reach the u64 kernel this way).
    pub fn load_matrices_with(&self, m: &Arc<ConstraintMatrices>, wide_offsets: Option<bool>) -> Result<CudaMatrices, CudaError> {
        let _g = self.enter()?;
        constraints::load(&self.inner.stream, m, wide_offsets, self.id())
    }

    /// [`Backend::evaluate_constraints`] with each matrix's rows on 2^`log_lanes[i]` lanes of a
    /// warp (at most 32; tests and benchmarks: the trait method takes
    /// [`CudaMatrices::default_log_lanes`]).
    pub fn evaluate_constraints_with(
        &self,
        m: &CudaMatrices,
        input: &CudaScalars,
        aux: &CudaScalars,
        domain: &Domain,
        log_lanes: [u32; 3],
    ) -> Result<[CudaScalars; 3], CudaError> {
        let _g = self.enter()?;
        // Waits for the uploads before the span begins: on the timeline, a wait is a gap.
        self.ready(input)?;
        self.ready(aux)?;
        let out = self.timed(
            || format!("eval n={}", domain.size()),
            || {
                let out = self.evaluation_outputs(m, input, aux, domain)?;
                constraints::launch(&self.inner.module, &self.inner.stream, m, [0, 1, 2].map(|i| out[i].ptr), input.ptr(), aux.ptr(), log_lanes)?;
                Ok(out)
            },
        )?;
        let n = domain.size();
        Ok(out.map(|b| CudaScalars { buf: Some(b), len: n, ready: None }))
    }

    /// [`Backend::first_unsatisfied`] on the device: a kernel checks every row and the lowest
    /// violated one comes back as four bytes. The compute lock is released before waiting for
    /// the result, so other partitions' work can be queued meanwhile.
    pub fn first_unsatisfied_on_device(&self, a: &CudaScalars, b: &CudaScalars, c: &CudaScalars, rows: usize) -> Result<Option<usize>, CudaError> {
        cuzk_core::backend::check_rows(rows, [a.len, b.len, c.len]).map_err(|e| CudaError::Invalid(e.to_string()))?;
        if rows >= u32::MAX as usize {
            return Err(CudaError::Invalid(format!("{rows} rows: at most 2^32 - 2 are checked on the GPU")));
        }
        if rows == 0 {
            return Ok(None);
        }
        let mut host = PinnedVec::from_elem_in(u32::MAX, 1, self.inner.pool.clone()).map_err(|e| CudaError::OutOfMemory(e.to_string()))?;
        let done = {
            let _g = self.enter()?;
            for v in [a, b, c] {
                self.ready(v)?;
            }
            let s = &self.inner.stream;
            let first = DevBuf::new(s, 4)?;
            // SAFETY: the buffer holds (at least) four bytes.
            unsafe { result::memset_d8_async(first.ptr, 0xff, 4, s.raw()) }?;
            self.timed(|| format!("check n={rows}"), || constraints::launch_check(&self.inner.module, s, [a.ptr(), b.ptr(), c.ptr()], rows as u32, first.ptr))?;
            // SAFETY: four bytes into page-locked memory, fenced below: the pool does not hand
            // it out again before the copy has completed.
            unsafe { sys::cuMemcpyDtoHAsync_v2(host.as_mut_ptr().cast(), first.ptr, 4, s.raw()).result() }?;
            match s.record() {
                Ok(ev) => self.inner.pool.fence(host.as_ptr().cast(), ev),
                Err(e) => {
                    let _ = s.sync();
                    return Err(e);
                }
            }
            Event::record(s)?
        };
        done.synchronize()?;
        Ok((host[0] != u32::MAX).then_some(host[0] as usize))
    }

    /// Seconds the constraint-evaluation kernel alone takes on `m` at the witness `(input,
    /// aux)` (outputs allocated and padding zeroed beforehand), with the default lanes per row.
    pub fn time_evaluate_constraints(&self, m: &CudaMatrices, input: &CudaScalars, aux: &CudaScalars, domain: &Domain) -> Result<f64, CudaError> {
        self.time_evaluate_constraints_with(m, input, aux, domain, m.default_log_lanes())
    }

    /// [`CudaBackend::time_evaluate_constraints`] with 2^`log_lanes[i]` lanes per row of matrix
    /// `i` (see [`CudaBackend::evaluate_constraints_with`]).
    pub fn time_evaluate_constraints_with(
        &self,
        m: &CudaMatrices,
        input: &CudaScalars,
        aux: &CudaScalars,
        domain: &Domain,
        log_lanes: [u32; 3],
    ) -> Result<f64, CudaError> {
        let _g = self.enter()?;
        self.ready(input)?;
        self.ready(aux)?;
        let out = self.evaluation_outputs(m, input, aux, domain)?;
        let ptrs = [0, 1, 2].map(|i| out[i].ptr);
        self.time_launch(|| constraints::launch(&self.inner.module, &self.inner.stream, m, ptrs, input.ptr(), aux.ptr(), log_lanes))
    }

    /// Seconds `launch` takes on the main stream, from the stream's earlier work (uploads)
    /// finished to the launched work finished.
    fn time_launch(&self, launch: impl FnOnce() -> Result<(), CudaError>) -> Result<f64, CudaError> {
        let s = &self.inner.stream;
        s.sync()?;
        let t = std::time::Instant::now();
        launch()?;
        s.sync()?;
        Ok(t.elapsed().as_secs_f64())
    }

    /// Whether a base set of `bytes` should stay in host memory: when it would leave less than
    /// the headroom free on the device.
    fn should_stream(&self, bytes: usize) -> Result<bool, CudaError> {
        let (free, total) = self.inner.stream.memory_info()?;
        Ok(bytes + headroom(total) > free)
    }

    /// Bases the caller placed on the device (the engine counted them against its device
    /// budget): uploaded without the headroom rule of [`Backend::load_g1`]; only when the
    /// device really has no room are they streamed from host memory instead, with a warning.
    fn place_resident(&self, bytes: &[u8], len: usize, group: msm::Group) -> Result<CudaBases, CudaError> {
        match self.place_bases(bytes, len, None) {
            Err(CudaError::OutOfMemory(what)) => {
                tracing::warn!(bytes = bytes.len(), %what, "no device room for bases the budget placed on the device: streaming them from host memory");
                self.place_bases(bytes, len, Some(stream_chunk(group)))
            }
            placed => placed,
        }
    }

    /// Puts bases on the device, or (with `Some(chunk)`) in page-locked host memory to be
    /// streamed `chunk` points at a time.
    fn place_bases(&self, bytes: &[u8], len: usize, chunk: Option<usize>) -> Result<CudaBases, CudaError> {
        match chunk {
            None => Ok(CudaBases { buf: self.upload_resident(bytes)?, len, host: None }),
            Some(chunk) => {
                let host = PinnedVec::from_slice_in(bytes, self.inner.pool.clone())
                    .map_err(|e| CudaError::OutOfMemory(format!("{} bytes of page-locked host memory for streamed bases: {e}", bytes.len())))?;
                tracing::info!(bytes = bytes.len(), chunk, "bases kept in host memory and streamed during MSMs");
                Ok(CudaBases { buf: None, len, host: Some((host, chunk.max(1))) })
            }
        }
    }

    /// Loads G1 bases that stay in host memory and are streamed `chunk` points at a time
    /// (what `load_g1` does on its own when the bases do not fit on the device).
    pub fn load_g1_streamed(&self, points: &[G1Affine], chunk: usize) -> Result<CudaBases, CudaError> {
        self.place_bases(as_bytes(points), points.len(), Some(chunk))
    }

    /// G2 counterpart of [`CudaBackend::load_g1_streamed`].
    pub fn load_g2_streamed(&self, points: &[G2Affine], chunk: usize) -> Result<CudaBases, CudaError> {
        self.place_bases(as_bytes(points), points.len(), Some(chunk))
    }

    /// MSM over streamed bases: the scalars are prepared once, then each chunk of bases is
    /// copied (copy stream, two staging buffers) while the previous chunk's MSM runs; returns
    /// the window sums of every chunk.
    fn msm_streamed(
        &self,
        group: msm::Group,
        host: &PinnedVec<u8>,
        chunk: usize,
        offset: usize,
        src: &msm::ScalarSource<'_>,
        cfg: msm::MsmConfig,
    ) -> Result<Vec<(Vec<u8>, u32, usize)>, CudaError> {
        let (m, s, cs) = (&self.inner.module, &self.inner.stream, &self.inner.copy_stream);
        let Some((prepared, count)) = msm::prepare(m, s, src)? else {
            return Ok(Vec::new());
        };
        let ab = group.affine_bytes();
        let per = chunk.min(count);
        let staging = [DevBuf::new(s, per * ab)?, DevBuf::new(s, per * ab)?];
        s.sync()?; // the staging buffers exist before the copy stream writes them
        let nchunks = count.div_ceil(per);
        let copy = |j: usize| -> Result<Event, CudaError> {
            let lo = j * per;
            let n = per.min(count - lo);
            let start = (offset + lo) * ab;
            // SAFETY: the staging buffer holds `per` points; the host bytes are in range
            // (checked by the caller) and page-locked, and outlive this call, which waits
            // for every chunk.
            unsafe { htod_async(staging[j % 2].ptr, host[start..start + n * ab].as_ptr(), n * ab, cs)? };
            Event::record(cs)
        };
        let mut next = Some(copy(0)?);
        let mut out = Vec::with_capacity(nchunks);
        for j in 0..nchunks {
            let ev = next.take().expect("copy queued");
            ev.wait_on(s)?;
            // Chunk j-1 used the other staging buffer and has finished (windows_prepared waits
            // for its results), so the copy of chunk j+1 may overwrite it now.
            if j + 1 < nchunks {
                next = Some(copy(j + 1)?);
            }
            let lo = j * per;
            let n = per.min(count - lo);
            out.push(msm::windows_prepared(m, s, group, staging[j % 2].ptr, prepared.ptr + (32 * lo) as u64, n, cfg)?);
        }
        Ok(out)
    }

    fn msm_raw(
        &self,
        group: msm::Group,
        bases: &CudaBases,
        offset: usize,
        sc: MsmScalars<'_, CudaScalars>,
        cfg: msm::MsmConfig,
    ) -> Result<Vec<(Vec<u8>, u32, usize)>, CudaError> {
        cuzk_core::msm::check_inputs(&sc, sc.buf.len, bases.len, offset).map_err(CudaError::Invalid)?;
        let _g = self.enter()?;
        self.ready(sc.buf)?;
        let src = msm::ScalarSource { ptr: sc.buf.ptr(), len: sc.len, density: sc.density.map(|d| (d.words(), d.count())) };
        let label = || {
            let g = if group == msm::Group::G1 { "g1" } else { "g2" };
            let sel = sc.density.map_or(String::new(), |d| format!(" sel={}", d.count()));
            format!("msm_{g} n={}{sel}", sc.len)
        };
        self.timed_sync(label, || {
            if let Some((host, chunk)) = &bases.host {
                return self.msm_streamed(group, host, *chunk, offset, &src, cfg);
            }
            let base_ptr = bases.ptr() + (offset * group.affine_bytes()) as u64;
            Ok(vec![msm::msm_windows(&self.inner.module, &self.inner.stream, group, base_ptr, &src, cfg)?])
        })
    }

    /// G1 MSM with forced choices (`cfg`: window size, batch-affine rule; tests and benchmarks);
    /// [`Backend::msm_g1`] is this with `MsmConfig::default()`.
    pub fn msm_g1_with(&self, bases: &CudaBases, offset: usize, sc: MsmScalars<'_, CudaScalars>, cfg: msm::MsmConfig) -> Result<G1Projective, CudaError> {
        let mut acc = G1Projective::identity();
        for (raw, c, w) in self.msm_raw(msm::Group::G1, bases, offset, sc, cfg)? {
            let pts: Vec<G1Projective> = raw.chunks_exact(144).map(g1_from_jacobian).collect();
            debug_assert_eq!(pts.len(), w);
            acc += cuzk_core::backend::combine_windows(&pts, c);
        }
        Ok(acc)
    }

    /// G2 counterpart of [`CudaBackend::msm_g1_with`].
    pub fn msm_g2_with(&self, bases: &CudaBases, offset: usize, sc: MsmScalars<'_, CudaScalars>, cfg: msm::MsmConfig) -> Result<G2Projective, CudaError> {
        let mut acc = G2Projective::identity();
        for (raw, c, w) in self.msm_raw(msm::Group::G2, bases, offset, sc, cfg)? {
            let pts: Vec<G2Projective> = raw.chunks_exact(288).map(g2_from_jacobian).collect();
            debug_assert_eq!(pts.len(), w);
            acc += cuzk_core::backend::combine_windows(&pts, c);
        }
        Ok(acc)
    }
}

fn g1_from_jacobian(b: &[u8]) -> G1Projective {
    G1Projective::from_raw_unchecked(fp_from_bytes(&b[0..48]), fp_from_bytes(&b[48..96]), fp_from_bytes(&b[96..144]))
}

fn g2_from_jacobian(b: &[u8]) -> G2Projective {
    G2Projective::from_raw_unchecked(fp2_from_bytes(&b[0..96]), fp2_from_bytes(&b[96..192]), fp2_from_bytes(&b[192..288]))
}

impl Backend for CudaBackend {
    type Scalars = CudaScalars;
    type G1Bases = CudaBases;
    type G2Bases = CudaBases;
    type Matrices = CudaMatrices;

    fn load_matrices(&self, m: &Arc<ConstraintMatrices>) -> Result<Self::Matrices, BackendError> {
        Ok(self.load_matrices_with(m, None)?)
    }

    fn matrices_bytes(&self, m: &Self::Matrices) -> u64 {
        m.bytes()
    }

    fn evaluate_constraints(
        &self,
        m: &Self::Matrices,
        input: &Self::Scalars,
        aux: &Self::Scalars,
        domain: &Domain,
    ) -> Result<[Self::Scalars; 3], BackendError> {
        Ok(self.evaluate_constraints_with(m, input, aux, domain, m.default_log_lanes())?)
    }

    fn first_unsatisfied(&self, a: &Self::Scalars, b: &Self::Scalars, c: &Self::Scalars, rows: usize) -> Result<Option<usize>, BackendError> {
        Ok(self.first_unsatisfied_on_device(a, b, c, rows)?)
    }

    fn evaluates_constraints_on_device(&self) -> bool {
        true
    }

    /// On the device ([`points`]), in chunks of 2^22 G1 or 2^21 G2 points.
    fn checks_points(&self) -> bool {
        true
    }

    fn first_invalid_g1(&self, points: &[G1Affine]) -> Result<Option<PointFailure>, BackendError> {
        Ok(self.first_invalid_g1_with(points, points::CHUNK_G1)?)
    }

    fn first_invalid_g2(&self, points: &[G2Affine]) -> Result<Option<PointFailure>, BackendError> {
        Ok(self.first_invalid_g2_with(points, points::CHUNK_G2)?)
    }

    fn name(&self) -> String {
        self.inner.name.clone()
    }

    fn host_allocator(&self) -> SharedAllocator {
        self.inner.pool.clone()
    }

    fn wait_idle(&self) -> Result<(), BackendError> {
        Ok(self.synchronize()?)
    }

    fn free_memory(&self) -> Option<u64> {
        self.inner.ctx.bind_to_thread().ok()?;
        result::mem_get_info().ok().map(|(free, _)| free as u64)
    }

    fn upload_scalars(&self, host: PinnedVec<Scalar>) -> Result<Self::Scalars, BackendError> {
        let len = host.len();
        if self.is_our_pool(host.allocator()) && len > 0 {
            let s = self.upload_on_copy_stream(as_bytes(&host), len)?;
            drop(host); // parked by the pool until the copy has completed
            return Ok(s);
        }
        let _g = self.enter()?;
        let buf = self.upload_bytes(as_bytes(&host), false)?;
        Ok(CudaScalars { buf, len, ready: None })
    }

    fn download_scalars(&self, buf: &Self::Scalars) -> Result<Vec<Scalar>, BackendError> {
        let _g = self.enter()?;
        self.ready(buf)?;
        let mut out = vec![Scalar::from(0u64); buf.len];
        if let Some(b) = &buf.buf {
            // SAFETY: Scalar is plain bytes; the device buffer holds len scalars.
            let bytes = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<u8>(), 32 * buf.len) };
            // SAFETY: sizes match.
            unsafe { dtoh_sync(bytes, b.ptr, &self.inner.stream)? };
        }
        Ok(out)
    }

    fn ntt(&self, buf: &mut Self::Scalars, domain: &Domain, direction: NttDirection, coset: bool) -> Result<(), BackendError> {
        if buf.len != domain.size() {
            return Err(BackendError::InvalidInput(format!("NTT of {} scalars over a domain of {}", buf.len, domain.size())));
        }
        let _g = self.enter()?;
        self.ready(buf)?;
        let t = self.tables()?;
        let inverse = direction == NttDirection::Inverse;
        self.timed(
            || format!("ntt n={} inverse={inverse} coset={coset}", domain.size()),
            || ntt::ntt_natural(&self.inner.module, &self.inner.stream, t, buf.ptr(), domain, inverse, coset),
        )?;
        Ok(())
    }

    fn quotient_on_coset(&self, a: &mut Self::Scalars, b: &Self::Scalars, c: &Self::Scalars, domain: &Domain) -> Result<(), BackendError> {
        let n = domain.size();
        if a.len != n || b.len != n || c.len != n {
            return Err(BackendError::InvalidInput("quotient operands must have the domain's size".into()));
        }
        let _g = self.enter()?;
        for s in [&*a, b, c] {
            self.ready(s)?;
        }
        let n32 = n as u32;
        let block = n32.min(256);
        let args = Args::new().push(a.ptr()).push(b.ptr()).push(c.ptr()).push(FrArg::from(domain.z_inv_on_coset)).push(n32);
        // SAFETY: arguments match ntt_quotient.
        self.timed(
            || format!("quotient n={n}"),
            || unsafe { self.inner.module.launch("ntt_quotient", n32.div_ceil(block), block, 0, &self.inner.stream, args) },
        )?;
        Ok(())
    }

    fn compute_h(&self, a: Self::Scalars, b: Self::Scalars, c: Self::Scalars, domain: &Domain) -> Result<Self::Scalars, BackendError> {
        let n = domain.size();
        if a.len != n || b.len != n || c.len != n {
            return Err(BackendError::InvalidInput("compute_h operands must have the domain's size".into()));
        }
        let _g = self.enter()?;
        let t = self.tables()?;
        // Each operand's transforms wait for its own upload only: a's run while b and c copy.
        let ops = [&a, &b, &c];
        self.timed(
            || format!("compute_h n={n}"),
            || ntt::compute_h(&self.inner.module, &self.inner.stream, t, [a.ptr(), b.ptr(), c.ptr()], domain, |i| self.ready(ops[i])),
        )?;
        drop((b, c));
        Ok(a)
    }

    fn load_g1(&self, points: Vec<G1Affine>) -> Result<Self::G1Bases, BackendError> {
        let stream = self.should_stream(std::mem::size_of_val(&points[..]))?;
        Ok(self.place_bases(as_bytes(&points), points.len(), stream.then(|| stream_chunk(msm::Group::G1)))?)
    }

    fn load_g2(&self, points: Vec<G2Affine>) -> Result<Self::G2Bases, BackendError> {
        let stream = self.should_stream(std::mem::size_of_val(&points[..]))?;
        Ok(self.place_bases(as_bytes(&points), points.len(), stream.then(|| stream_chunk(msm::Group::G2)))?)
    }

    /// `streamed`: [`CudaBackend::load_g1_streamed`] in chunks of 2^22 points; otherwise on the
    /// device, where the caller's budget put them (streamed only if the device has no room).
    fn load_g1_placed(&self, points: Vec<G1Affine>, streamed: bool) -> Result<Self::G1Bases, BackendError> {
        if !streamed {
            return Ok(self.place_resident(as_bytes(&points), points.len(), msm::Group::G1)?);
        }
        Ok(self.load_g1_streamed(&points, stream_chunk(msm::Group::G1))?)
    }

    /// G2 counterpart of [`Backend::load_g1_placed`] (chunks of 2^21 points).
    fn load_g2_placed(&self, points: Vec<G2Affine>, streamed: bool) -> Result<Self::G2Bases, BackendError> {
        if !streamed {
            return Ok(self.place_resident(as_bytes(&points), points.len(), msm::Group::G2)?);
        }
        Ok(self.load_g2_streamed(&points, stream_chunk(msm::Group::G2))?)
    }

    fn g1_len(&self, bases: &Self::G1Bases) -> usize {
        bases.len
    }

    fn g2_len(&self, bases: &Self::G2Bases) -> usize {
        bases.len
    }

    fn msm_g1(&self, bases: &Self::G1Bases, bases_offset: usize, scalars: MsmScalars<'_, Self::Scalars>) -> Result<G1Projective, BackendError> {
        Ok(self.msm_g1_with(bases, bases_offset, scalars, msm::MsmConfig::default())?)
    }

    fn msm_g2(&self, bases: &Self::G2Bases, bases_offset: usize, scalars: MsmScalars<'_, Self::Scalars>) -> Result<G2Projective, BackendError> {
        Ok(self.msm_g2_with(bases, bases_offset, scalars, msm::MsmConfig::default())?)
    }
}

#[cfg(test)]
mod tests {
    use crate::device::DevBuf;

    /// A buffer freed back to the stream-ordered pool stays reserved by the pool (the driver's
    /// free figure does not grow) but counts in [`Stream::memory_info`](device::Stream::memory_info),
    /// which sizes the MSM's batch-affine groups.
    #[test]
    fn memory_freed_to_the_pool_counts_as_free() {
        let backend = crate::need_gpu!();
        let _guard = backend.inner.lock.lock().unwrap_or_else(|e| e.into_inner());
        let s = &backend.inner.stream;
        let bytes = 256usize << 20;
        let buf = DevBuf::new(s, bytes).expect("256 MiB on the device");
        s.sync().expect("sync");
        let (before, driver_before) = (s.memory_info().expect("free").0, cudarc::driver::result::mem_get_info().expect("info").0);
        drop(buf);
        s.sync().expect("sync");
        let (after, driver_after) = (s.memory_info().expect("free").0, cudarc::driver::result::mem_get_info().expect("info").0);
        assert!(after >= before + bytes, "free memory {before} -> {after} after freeing {bytes} bytes");
        assert!(
            driver_after < driver_before + bytes,
            "the pool returned the buffer to the driver ({driver_before} -> {driver_after}): its release threshold is not kept"
        );
    }
}
