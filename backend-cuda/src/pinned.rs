//! A pool of page-locked host buffers (`cuMemHostAlloc`, portable, not write-combined).
//!
//! Allocating page-locked memory is slow (about half a second per GiB), so buffers are never
//! returned to the driver while the pool lives: a freed buffer goes back to the pool and is
//! handed out again for a request of similar size. A buffer that a device copy may still be
//! reading is *fenced* with an event ([`PinnedPool::fence`]); when such a buffer is freed it is
//! parked until the event completes and only then becomes reusable.

use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use cudarc::driver::{result, sys, CudaContext};
use cuzk_core::alloc::{AllocError, PinnedAllocator, BUFFER_ALIGN};

/// Granularity of pooled buffer sizes for requests above 2 MiB.
const LARGE_GRANULE: usize = 2 << 20;

#[derive(Debug)]
struct Buf {
    ptr: usize,
    bytes: usize,
}

#[derive(Debug, Default)]
struct State {
    /// Ready to be handed out.
    free: Vec<Buf>,
    /// Freed by their owner but possibly still read by a copy: (buffer, event).
    parked: Vec<(Buf, usize)>,
    /// In use and fenced: pointer -> event.
    fences: Vec<(usize, usize)>,
    /// Bytes obtained from the driver.
    total: usize,
}

/// A pooled page-locked allocator bound to a CUDA context.
#[derive(Debug)]
pub struct PinnedPool {
    ctx: Arc<CudaContext>,
    state: Mutex<State>,
}

// SAFETY: the raw pointers in State are owned by the pool and only touched under the mutex.
unsafe impl Send for PinnedPool {}
unsafe impl Sync for PinnedPool {}

fn round(bytes: usize) -> Option<usize> {
    if bytes <= LARGE_GRANULE {
        Some(bytes.max(4096).next_power_of_two())
    } else {
        bytes.checked_add(LARGE_GRANULE - 1).map(|b| b / LARGE_GRANULE * LARGE_GRANULE)
    }
}

impl PinnedPool {
    /// A new, empty pool.
    pub fn new(ctx: Arc<CudaContext>) -> Self {
        PinnedPool { ctx, state: Mutex::new(State::default()) }
    }

    /// Bytes of page-locked memory the pool holds (in use or free).
    pub fn total_bytes(&self) -> usize {
        self.state.lock().map(|s| s.total).unwrap_or(0)
    }

    /// Marks the buffer containing `ptr` as read by work that completes with `event` (a raw
    /// `CUevent` the pool takes ownership of): it will not be reused before the event completes.
    pub fn fence(&self, ptr: *const u8, event: sys::CUevent) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let p = ptr as usize;
        if let Some(f) = s.fences.iter_mut().find(|(q, _)| *q == p) {
            // SAFETY: the old event belongs to the pool.
            unsafe {
                let _ = result::event::destroy(f.1 as sys::CUevent);
            }
            f.1 = event as usize;
        } else {
            s.fences.push((p, event as usize));
        }
    }

    /// Moves parked buffers whose copies have completed to the free list.
    fn reclaim(s: &mut State) {
        let mut i = 0;
        while i < s.parked.len() {
            let ev = s.parked[i].1 as sys::CUevent;
            // SAFETY: the event is owned by the pool and alive.
            let done = unsafe { result::event::query(ev) }.is_ok();
            if done {
                let (buf, ev) = s.parked.swap_remove(i);
                // SAFETY: as above; destroyed once.
                unsafe {
                    let _ = result::event::destroy(ev as sys::CUevent);
                }
                s.free.push(buf);
            } else {
                i += 1;
            }
        }
    }

    /// Returns every free buffer to the driver (parked ones stay until their copies finish).
    pub fn trim(&self) {
        let _ = self.ctx.bind_to_thread();
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        Self::reclaim(&mut s);
        for b in std::mem::take(&mut s.free) {
            // SAFETY: allocated by cuMemHostAlloc and not in use.
            unsafe {
                let _ = result::free_host(b.ptr as *mut _);
            }
            s.total -= b.bytes;
        }
    }
}

// SAFETY: cuMemHostAlloc returns page-aligned memory (>= BUFFER_ALIGN), valid until freed; the
// pool frees nothing that is handed out.
unsafe impl PinnedAllocator for PinnedPool {
    fn allocate(&self, min_bytes: usize) -> Result<(NonNull<u8>, usize), AllocError> {
        let want = round(min_bytes).ok_or(AllocError::Overflow)?;
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        Self::reclaim(&mut s);
        // Best fit among buffers not more than twice the request.
        let best = s.free.iter().enumerate().filter(|(_, b)| b.bytes >= want && b.bytes <= want.saturating_mul(2)).min_by_key(|(_, b)| b.bytes).map(|(i, _)| i);
        if let Some(i) = best {
            let b = s.free.swap_remove(i);
            // SAFETY: non-null pointer from the driver.
            return Ok((unsafe { NonNull::new_unchecked(b.ptr as *mut u8) }, b.bytes));
        }
        drop(s);
        self.ctx.bind_to_thread().map_err(|e| AllocError::OutOfMemory { bytes: want, reason: e.to_string() })?;
        // SAFETY: plain allocation; PORTABLE so every context may DMA from it.
        let ptr =
            unsafe { result::malloc_host(want, sys::CU_MEMHOSTALLOC_PORTABLE) }.map_err(|e| AllocError::OutOfMemory { bytes: want, reason: e.to_string() })?;
        debug_assert_eq!(ptr as usize % BUFFER_ALIGN, 0);
        self.state.lock().unwrap_or_else(|e| e.into_inner()).total += want;
        NonNull::new(ptr.cast::<u8>()).map(|p| (p, want)).ok_or(AllocError::OutOfMemory { bytes: want, reason: "cuMemHostAlloc returned null".into() })
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, bytes: usize) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let p = ptr.as_ptr() as usize;
        let buf = Buf { ptr: p, bytes };
        if let Some(i) = s.fences.iter().position(|(q, _)| *q == p) {
            let (_, ev) = s.fences.swap_remove(i);
            s.parked.push((buf, ev));
        } else {
            s.free.push(buf);
        }
    }

    fn is_page_locked(&self) -> bool {
        true
    }
}

impl Drop for PinnedPool {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        let s = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        for (buf, ev) in s.parked.drain(..) {
            // SAFETY: wait for the copy, then free; each handle released once.
            unsafe {
                let _ = result::event::synchronize(ev as sys::CUevent);
                let _ = result::event::destroy(ev as sys::CUevent);
            }
            s.free.push(buf);
        }
        for (_, ev) in s.fences.drain(..) {
            // SAFETY: as above.
            unsafe {
                let _ = result::event::synchronize(ev as sys::CUevent);
                let _ = result::event::destroy(ev as sys::CUevent);
            }
        }
        for b in s.free.drain(..) {
            // SAFETY: allocated by cuMemHostAlloc, no longer used.
            unsafe {
                let _ = result::free_host(b.ptr as *mut _);
            }
        }
    }
}
