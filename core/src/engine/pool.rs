//! Memory budgets and worker slots.

use std::collections::BTreeSet;

use super::config::DeviceConfig;
use super::job::PartKey;

/// A memory budget.
///
/// On the host, `set_aside` bytes of the capacity are kept for the decoded query a device
/// load holds in flight (`transient`, part of `used`): other reservations may not use them,
/// so a load never waits on memory a partition holds, only on other loads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pool {
    pub capacity: u64,
    /// Bytes reserved, loads in flight included.
    pub used: u64,
    /// Bytes only CRITICAL work may use.
    pub reserve: u64,
    /// Bytes only loads in flight may use (0 on devices).
    pub set_aside: u64,
    /// Bytes of `used` that loads in flight hold (at most `set_aside`).
    pub transient: u64,
}

impl Pool {
    pub fn new(capacity: u64, reserve: u64) -> Pool {
        Pool { capacity, used: 0, reserve: reserve.min(capacity), set_aside: 0, transient: 0 }
    }

    /// Bytes reserved by everything but loads in flight.
    pub fn held(&self) -> u64 {
        self.used.saturating_sub(self.transient)
    }

    /// Bytes that may still be reserved (not by a load in flight).
    pub fn avail(&self, critical: bool) -> u64 {
        self.usable(critical).saturating_sub(self.held())
    }

    /// Largest reservation ever possible (not by a load in flight).
    pub fn usable(&self, critical: bool) -> u64 {
        let cap = self.capacity.saturating_sub(self.set_aside);
        if critical {
            cap
        } else {
            cap.saturating_sub(self.reserve)
        }
    }

    /// A load in flight takes `bytes`.
    pub fn take_load(&mut self, bytes: u64) {
        self.used = self.used.saturating_add(bytes);
        self.transient = self.transient.saturating_add(bytes);
    }

    /// A load in flight ended and gives back `bytes`.
    pub fn give_load(&mut self, bytes: u64) {
        self.used = self.used.saturating_sub(bytes);
        self.transient = self.transient.saturating_sub(bytes);
    }

    /// A load holding `bytes` in flight may start now: within what is set aside for loads
    /// and within the capacity.
    pub fn load_fits(&self, bytes: u64) -> bool {
        self.transient.saturating_add(bytes) <= self.set_aside && self.used.saturating_add(bytes) <= self.capacity
    }
}

/// Numbered worker slots; the lowest free number is handed out first.
#[derive(Debug, Clone)]
pub(crate) struct Slots {
    n: u32,
    free: BTreeSet<u32>,
    /// Slot `n`, which only CRITICAL work takes, and only with the others busy: in use.
    extra: bool,
}

impl Slots {
    pub fn new(n: u32) -> Slots {
        Slots { n, free: (0..n).collect(), extra: false }
    }

    pub fn has_free(&self) -> bool {
        !self.free.is_empty()
    }

    /// A slot for work of this criticality: CRITICAL work may also take slot `n`.
    pub fn has_free_for(&self, critical: bool) -> bool {
        self.has_free() || (critical && !self.extra)
    }

    pub fn free_count(&self) -> usize {
        self.free.len()
    }

    pub fn take(&mut self) -> Option<u32> {
        self.free.pop_first()
    }

    /// [`Slots::take`], and for CRITICAL work with none free slot `n` if it is free.
    pub fn take_for(&mut self, critical: bool) -> Option<u32> {
        if let Some(s) = self.take() {
            return Some(s);
        }
        if !critical || self.extra {
            return None;
        }
        self.extra = true;
        Some(self.n)
    }

    pub fn give(&mut self, slot: u32) {
        if slot < self.n {
            self.free.insert(slot);
        } else {
            self.extra = false;
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
