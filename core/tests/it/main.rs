//! The core's integration tests (the engine, recorded matrices, parameter errors), in one test
//! binary: each binary links the crate and proptest again.
//! Run one group with a filter, e.g. `cargo test --release -p cuzk-core --test it engine_basic::`.

mod strategies;

mod engine_basic;
mod engine_critical;
mod engine_devices;
mod engine_loads;
mod engine_matrices;
mod engine_no_clock;
mod engine_props;
mod engine_utilization;
mod fuzz_bodies;
mod matrices_parallel;
mod matrices_repeated;
mod params_errors;
