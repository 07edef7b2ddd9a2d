//! Thin owners of driver objects: the context, a stream, device buffers and the kernel module.

use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::sync::Arc;

use cudarc::driver::{result, sys, CudaContext, DriverError};

use crate::error::CudaError;
use crate::{kernels, nvrtc};

/// Whether the CUDA driver library can be loaded (without panicking when it cannot).
pub fn driver_present() -> bool {
    // SAFETY: only probes dlopen.
    unsafe { sys::is_culib_present() }
}

/// Number of CUDA devices, 0 when there is no driver.
pub fn device_count() -> usize {
    if !driver_present() {
        return 0;
    }
    if result::init().is_err() {
        return 0;
    }
    result::device::get_count().map(|n| n.max(0) as usize).unwrap_or(0)
}

/// A stream of the backend's context (a cheap, shared handle).
#[derive(Debug, Clone)]
pub struct Stream {
    inner: Arc<StreamInner>,
}

#[derive(Debug)]
struct StreamInner {
    raw: sys::CUstream,
    ctx: Arc<CudaContext>,
}

// SAFETY: CUDA streams may be used from any thread once the context is current.
unsafe impl Send for StreamInner {}
unsafe impl Sync for StreamInner {}

impl Stream {
    /// A new non-blocking stream.
    pub fn new(ctx: &Arc<CudaContext>) -> Result<Self, CudaError> {
        ctx.bind_to_thread()?;
        let raw = result::stream::create(result::stream::StreamKind::NonBlocking)?;
        Ok(Stream { inner: Arc::new(StreamInner { raw, ctx: ctx.clone() }) })
    }

    /// Device memory an allocation on this stream can take, and the device's total: the
    /// driver's free figure plus the stream-ordered pool's idle bytes ([`pool_idle_bytes`]).
    pub fn memory_info(&self) -> Result<(usize, usize), CudaError> {
        self.inner.ctx.bind_to_thread()?;
        let (free, total) = result::mem_get_info()?;
        Ok((free + pool_idle_bytes(&self.inner.ctx), total))
    }

    /// Another new non-blocking stream on the same context.
    pub fn sibling(&self) -> Result<Self, CudaError> {
        Self::new(&self.inner.ctx)
    }

    /// The raw handle.
    pub fn raw(&self) -> sys::CUstream {
        self.inner.raw
    }

    /// Waits for all work on the stream.
    pub fn sync(&self) -> Result<(), CudaError> {
        // SAFETY: live stream.
        unsafe { result::stream::synchronize(self.raw()) }?;
        Ok(())
    }

    /// Records a new event (no timing) on the stream and returns it; the caller owns it.
    pub fn record(&self) -> Result<sys::CUevent, CudaError> {
        self.record_with(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
    }

    /// Records a new event created with `flags`; the caller owns it.
    fn record_with(&self, flags: sys::CUevent_flags) -> Result<sys::CUevent, CudaError> {
        let ev = result::event::create(flags)?;
        // SAFETY: live event and stream.
        unsafe { result::event::record(ev, self.raw()) }?;
        Ok(ev)
    }
}

/// An owned event (destroyed on drop; the driver releases it once it has completed).
#[derive(Debug)]
pub struct Event {
    raw: sys::CUevent,
    ctx: Arc<CudaContext>,
}

// SAFETY: events may be used from any thread once the context is current.
unsafe impl Send for Event {}
unsafe impl Sync for Event {}

impl Event {
    /// Records a new event on `stream`.
    pub fn record(stream: &Stream) -> Result<Self, CudaError> {
        Ok(Event { raw: stream.record()?, ctx: stream.inner.ctx.clone() })
    }

    /// Records a new event on `stream` that keeps its completion time (profiling).
    pub fn record_timed(stream: &Stream) -> Result<Self, CudaError> {
        stream.inner.ctx.bind_to_thread()?;
        Ok(Event { raw: stream.record_with(sys::CUevent_flags::CU_EVENT_DEFAULT)?, ctx: stream.inner.ctx.clone() })
    }

    /// Milliseconds from `earlier` to this event; both must be timed and completed.
    pub fn ms_since(&self, earlier: &Event) -> Result<f32, CudaError> {
        self.ctx.bind_to_thread()?;
        // SAFETY: live events.
        Ok(unsafe { result::event::elapsed(earlier.raw, self.raw) }?)
    }

    /// Whether the work before this event has completed (without waiting).
    pub fn is_complete(&self) -> Result<bool, CudaError> {
        self.ctx.bind_to_thread()?;
        // SAFETY: live event.
        match unsafe { result::event::query(self.raw) } {
            Ok(()) => Ok(true),
            Err(e) if e.0 == sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Blocks the calling thread until this event has completed.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        self.ctx.bind_to_thread()?;
        // SAFETY: live event.
        unsafe { result::event::synchronize(self.raw) }?;
        Ok(())
    }

    /// Makes `stream` wait (on the device) until this event has completed.
    pub fn wait_on(&self, stream: &Stream) -> Result<(), CudaError> {
        self.ctx.bind_to_thread()?;
        // SAFETY: live event and stream.
        unsafe { result::stream::wait_event(stream.raw(), self.raw, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT) }?;
        Ok(())
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: destroyed once.
        unsafe {
            let _ = result::event::destroy(self.raw);
        }
    }
}

impl Drop for StreamInner {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: destroyed once (last handle); pending work completes first.
        unsafe {
            let _ = result::stream::synchronize(self.raw);
            let _ = result::stream::destroy(self.raw);
        }
    }
}

/// Device memory from the stream-ordered allocator, freed on the same stream.
#[derive(Debug)]
pub struct DevBuf {
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) bytes: usize,
    stream: Stream,
}

// SAFETY: a device pointer is just an address; ordering goes through the stream.
unsafe impl Send for DevBuf {}
unsafe impl Sync for DevBuf {}

/// Device memory the stream-ordered pool of `ctx`'s device holds but no buffer uses: freed
/// buffers the pool keeps for reuse (its release threshold is unlimited), which the driver's free
/// figure counts as used although any allocation from the pool can take it.
fn pool_idle_bytes(ctx: &CudaContext) -> usize {
    // SAFETY: the device of a live context.
    let Ok(pool) = (unsafe { result::device::get_default_mem_pool(ctx.cu_device()) }) else { return 0 };
    let attr = |a: sys::CUmemPool_attribute| {
        let mut v: u64 = 0;
        // SAFETY: both attributes are u64 values of a valid pool.
        unsafe { result::mem_pool::get_attribute(pool, a, (&mut v as *mut u64).cast()) }.map_or(0, |()| v)
    };
    let reserved = attr(sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
    let used = attr(sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
    reserved.saturating_sub(used) as usize
}

impl DevBuf {
    /// Allocates `bytes` (at least 1) on `stream`.
    pub fn new(stream: &Stream, bytes: usize) -> Result<Self, CudaError> {
        let bytes = bytes.max(16);
        // SAFETY: plain allocation on a live stream.
        let ptr = unsafe { result::malloc_async(stream.raw(), bytes) }.map_err(|e| match e.0 {
            sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => CudaError::OutOfMemory(format!("{bytes} bytes of device memory")),
            _ => CudaError::Driver(e),
        })?;
        Ok(DevBuf { ptr, bytes, stream: stream.clone() })
    }

    /// Allocates and zeroes.
    pub fn zeroed(stream: &Stream, bytes: usize) -> Result<Self, CudaError> {
        let b = Self::new(stream, bytes)?;
        b.memset0(stream)?;
        Ok(b)
    }

    /// Zeroes the whole buffer on `stream`.
    pub fn memset0(&self, stream: &Stream) -> Result<(), CudaError> {
        // SAFETY: within the allocation.
        unsafe { result::memset_d8_async(self.ptr, 0, self.bytes, stream.raw()) }?;
        Ok(())
    }

    /// Frees the buffer on `stream` instead of the one it was allocated on (the caller orders
    /// `stream` after every use on the other stream, e.g. with an [`Event`]).
    pub fn free_on(&mut self, stream: &Stream) {
        self.stream = stream.clone();
    }

    /// Device address `offset` bytes in.
    pub fn at(&self, offset: usize) -> sys::CUdeviceptr {
        self.ptr + offset as u64
    }
}

impl Drop for DevBuf {
    fn drop(&mut self) {
        let _ = self.stream.inner.ctx.bind_to_thread();
        // SAFETY: allocated on this stream; freed once, after prior work on the stream.
        unsafe {
            let _ = result::free_async(self.ptr, self.stream.raw());
        }
    }
}

/// Copies host bytes to the device on `stream` (asynchronous; `src` must stay alive and
/// unchanged until the stream reaches this point).
///
/// # Safety
/// `dst` must have room for `src`.
pub unsafe fn htod_async(dst: sys::CUdeviceptr, src: *const u8, bytes: usize, stream: &Stream) -> Result<(), CudaError> {
    if bytes == 0 {
        return Ok(());
    }
    sys::cuMemcpyHtoDAsync_v2(dst, src.cast(), bytes, stream.raw()).result()?;
    Ok(())
}

/// Copies device bytes to the host and waits for the copy.
///
/// # Safety
/// `src` must hold `dst.len()` bytes.
pub unsafe fn dtoh_sync(dst: &mut [u8], src: sys::CUdeviceptr, stream: &Stream) -> Result<(), CudaError> {
    if dst.is_empty() {
        return Ok(());
    }
    sys::cuMemcpyDtoHAsync_v2(dst.as_mut_ptr().cast(), src, dst.len(), stream.raw()).result()?;
    stream.sync()
}

/// The loaded kernel module.
#[derive(Debug)]
pub struct Module {
    raw: sys::CUmodule,
    funcs: HashMap<&'static str, usize>,
    ctx: Arc<CudaContext>,
    /// Whether the image came from the disk cache.
    pub cached: bool,
    /// Seconds spent compiling or loading.
    pub load_seconds: f64,
    /// The `#define`s the image was built with (`kernel_defines`).
    pub defines: Vec<String>,
}

/// The `#define`s a device's image is built with: on sm_90 `CUZK_NTT_FP64`, the NTT's twiddle
/// products on the FP64 units with `ntt_pass` capped at 64 registers (measured faster on the
/// H200, whose FP64 units match its integer multipliers: docs/perf-cuda.md, "Decisions"); other
/// GPUs have far fewer FP64 units and get none (the IMAD products).
pub fn kernel_defines(arch: u32) -> Vec<String> {
    if arch == 90 {
        vec!["CUZK_NTT_FP64".to_string()]
    } else {
        Vec::new()
    }
}

/// The kernel source with `#define` lines for `defines` (`B=1` becomes `#define B 1`) in front.
pub fn kernel_source(defines: &[String]) -> std::borrow::Cow<'static, str> {
    if defines.is_empty() {
        return std::borrow::Cow::Borrowed(kernels::SOURCE);
    }
    let head: String = defines.iter().map(|x| format!("#define {}\n", x.replacen('=', " ", 1))).collect();
    std::borrow::Cow::Owned(head + kernels::SOURCE)
}

// SAFETY: module and function handles are context-wide and immutable.
unsafe impl Send for Module {}
unsafe impl Sync for Module {}

impl Module {
    /// Compiles (or fetches from the cache) and loads all kernels for the context's device.
    pub fn load(ctx: &Arc<CudaContext>) -> Result<Self, CudaError> {
        let t = std::time::Instant::now();
        let (major, minor) = ctx.compute_capability()?;
        let arch = (major * 10 + minor) as u32;
        let defines = kernel_defines(arch);
        let (image, cached) = nvrtc::compile_cached(&kernel_source(&defines), arch)?;
        ctx.bind_to_thread()?;
        // SAFETY: a complete cubin image.
        let raw = unsafe { result::module::load_data(image.as_ptr().cast()) }?;
        let mut funcs = HashMap::new();
        for &k in kernels::KERNELS {
            let name = CString::new(k).unwrap();
            // SAFETY: live module.
            let f = unsafe { result::module::get_function(raw, name) }?;
            funcs.insert(k, f as usize);
        }
        Ok(Module { raw, funcs, ctx: ctx.clone(), cached, load_seconds: t.elapsed().as_secs_f64(), defines })
    }

    /// Built with `CUZK_NTT_FP64`: the NTT's twiddle products run on the FP64 units and its
    /// tables and scaling constants must be times 2^4 (`ntt.cu`, `TW_MUL`).
    pub fn ntt_fp64(&self) -> bool {
        self.defines.iter().any(|d| d == "CUZK_NTT_FP64")
    }

    /// Launches kernel `name` with the given argument pointers.
    ///
    /// # Safety
    /// `args` must match the kernel's parameter list and the buffers must be large enough.
    pub unsafe fn launch(&self, name: &str, grid: u32, block: u32, smem: u32, stream: &Stream, mut args: Args) -> Result<(), CudaError> {
        let f = *self.funcs.get(name).ok_or_else(|| CudaError::Invalid(format!("unknown kernel {name}")))? as sys::CUfunction;
        if grid == 0 {
            return Ok(());
        }
        let mut ptrs = args.ptrs();
        result::launch_kernel(f, (grid, 1, 1), (block, 1, 1), smem, stream.raw(), &mut ptrs)
            .map_err(|e: DriverError| CudaError::Device(format!("launching {name} (grid {grid}, block {block}): {e}")))
    }

    /// Registers per thread of a kernel (for reports).
    pub fn num_regs(&self, name: &str) -> Option<i32> {
        let f = *self.funcs.get(name)? as sys::CUfunction;
        // SAFETY: live function.
        unsafe { result::function::get_function_attribute(f, sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS) }.ok()
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: unloaded once.
        unsafe {
            let _ = result::module::unload(self.raw);
        }
    }
}

/// Kernel arguments, each copied into its own 32-byte slot (pointers are taken only after the
/// last push, so the slots no longer move).
#[derive(Default)]
pub struct Args {
    slots: Vec<[u64; 4]>,
}

impl Args {
    /// No arguments yet.
    pub fn new() -> Self {
        Args::default()
    }

    /// Appends a plain-old-data argument.
    pub fn push<T: Copy>(mut self, v: T) -> Self {
        assert!(std::mem::size_of::<T>() <= 32 && std::mem::align_of::<T>() <= 8);
        let mut b = [0u64; 4];
        // SAFETY: the slot has 32 bytes, 8-aligned.
        unsafe { std::ptr::write(b.as_mut_ptr().cast::<T>(), v) };
        self.slots.push(b);
        self
    }

    /// The pointer array `cuLaunchKernel` wants.
    pub fn ptrs(&mut self) -> Vec<*mut c_void> {
        self.slots.iter_mut().map(|b| b.as_mut_ptr().cast::<c_void>()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::{kernel_defines, kernel_source};

    #[test]
    fn sm90_gets_the_fp64_ntt() {
        assert_eq!(kernel_defines(90), ["CUZK_NTT_FP64"]);
        assert!(kernel_defines(89).is_empty());
        assert!(kernel_defines(80).is_empty());
        assert!(kernel_source(&kernel_defines(90)).starts_with("#define CUZK_NTT_FP64\n"));
        assert_eq!(kernel_source(&["A=1".to_string()]).lines().next(), Some("#define A 1"));
    }
}
