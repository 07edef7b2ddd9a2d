//! Memory budgets and worker slots.

use std::collections::BTreeSet;

use super::config::DeviceConfig;
use super::job::PartKey;

/// A memory budget.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pool {
    pub capacity: u64,
    pub used: u64,
    /// Bytes only CRITICAL work may use.
    pub reserve: u64,
}

impl Pool {
    pub fn new(capacity: u64, reserve: u64) -> Pool {
        Pool { capacity, used: 0, reserve: reserve.min(capacity) }
    }

    /// Bytes that may still be reserved.
    pub fn avail(&self, critical: bool) -> u64 {
        let cap = if critical { self.capacity } else { self.capacity - self.reserve };
        cap.saturating_sub(self.used)
    }

    /// Largest reservation ever possible.
    pub fn usable(&self, critical: bool) -> u64 {
        if critical {
            self.capacity
        } else {
            self.capacity - self.reserve
        }
    }
}

/// Numbered worker slots; the lowest free number is handed out first.
#[derive(Debug, Clone)]
pub(crate) struct Slots {
    n: u32,
    free: BTreeSet<u32>,
    /// Slots past the first `n` taken by CRITICAL work, which never waits for a slot.
    extra: BTreeSet<u32>,
}

impl Slots {
    pub fn new(n: u32) -> Slots {
        Slots { n, free: (0..n).collect(), extra: BTreeSet::new() }
    }

    pub fn has_free(&self) -> bool {
        !self.free.is_empty()
    }

    /// A slot for work of this criticality: CRITICAL work always gets one.
    pub fn has_free_for(&self, critical: bool) -> bool {
        critical || self.has_free()
    }

    pub fn free_count(&self) -> usize {
        self.free.len()
    }

    pub fn take(&mut self) -> Option<u32> {
        self.free.pop_first()
    }

    /// [`Slots::take`], and for CRITICAL work with none free a slot past the first `n`.
    pub fn take_for(&mut self, critical: bool) -> Option<u32> {
        if let Some(s) = self.take() {
            return Some(s);
        }
        if !critical {
            return None;
        }
        let s = (self.n..).find(|s| !self.extra.contains(s))?;
        self.extra.insert(s);
        Some(s)
    }

    pub fn give(&mut self, slot: u32) {
        if slot < self.n {
            self.free.insert(slot);
        } else {
            self.extra.remove(&slot);
        }
    }
}

/// One GPU's scheduling state.
#[derive(Debug, Clone)]
pub(crate) struct DeviceState {
    pub pool: Pool,
    pub workers: Slots,
    pub lanes_free: u32,
    /// Uploaded partitions waiting for a kernel lane.
    pub lane_queue: BTreeSet<PartKey>,
    /// GPU stages running now.
    pub active: u32,
    /// Taken out of service: nothing is admitted or loaded here any more.
    pub retired: bool,
    /// Takes only work no other device may take ([`super::DeviceConfig::fallback`]).
    pub fallback: bool,
}

impl DeviceState {
    pub fn new(cfg: &DeviceConfig, reserve: u64) -> DeviceState {
        DeviceState {
            pool: Pool::new(cfg.memory_bytes, reserve),
            workers: Slots::new(cfg.gpu_workers),
            lanes_free: cfg.kernel_lanes,
            lane_queue: BTreeSet::new(),
            active: 0,
            retired: false,
            fallback: cfg.fallback,
        }
    }
}
