//! Proptest strategies shared by the engine's simulation tests.

// Each test binary uses its own subset.
#![allow(dead_code)]

use cuzk_core::engine::sim::{CircuitModel, Dur};
use cuzk_core::engine::{CircuitProfile, Footprint, Nanos, Priority};
use proptest::prelude::*;

/// Bytes in a MiB.
pub const MB: u64 = 1 << 20;

/// A modelled duration: base in `1..=max_base_ms`, jitter up to half of that.
pub fn dur(max_base_ms: u64) -> impl Strategy<Value = Dur> {
    (1..=max_base_ms, 0..=max_base_ms / 2 + 1).prop_map(|(b, j)| Dur::spread(Nanos::from_millis(b), Nanos::from_millis(j)))
}

/// A circuit's profile and durations: `sizes` are (host params, device params, host a/b/c,
/// host rest, device a/b/c, device rest) in MiB; `stages` the stage durations in order. A
/// device load holds none or up to 16 MiB of host memory in flight.
pub fn circuit<S, D>(sizes: S, stages: [D; 5]) -> impl Strategy<Value = (CircuitProfile, CircuitModel)>
where
    S: Strategy<Value = (u64, u64, u64, u64, u64, u64)>,
    D: Strategy<Value = Dur>,
{
    let load = prop_oneof![Just(0u64), 1..=16u64];
    (sizes, stages, dur(30), dur(10), load).prop_map(|((ph, pd, ha, hr, da, dr), stages, ld, lh, q)| {
        let footprint = Footprint { host_abc: ha * MB, host_rest: hr * MB, device_abc: da * MB, device_rest: dr * MB };
        let profile = CircuitProfile {
            params_host_bytes: ph * MB,
            params_device_bytes: pd * MB,
            params_device_host_bytes: 0,
            footprint,
            witness_footprint: None,
            load_host_bytes: q * MB,
        };
        (profile, CircuitModel { stages, load_device: ld, load_host: lh })
    })
}

/// Any priority.
pub fn priority() -> impl Strategy<Value = Priority> {
    prop_oneof![Just(Priority::Low), Just(Priority::Normal), Just(Priority::High), Just(Priority::Critical)]
}
