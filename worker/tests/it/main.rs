//! The worker's integration tests, in one test binary (each binary links the worker again).
//! Run one group with a filter, e.g. `cargo test --release -p cuzk-worker --test it stages::`.

mod point_checks;
mod stages;
mod streamed;
mod validation_records;

/// Partition `seed` of a built-in circuit, as the worker takes it.
fn work(shape: cuzk_circuits::BuiltinShape, seed: u64) -> cuzk_worker::Work {
    std::sync::Arc::new(shape.partition(seed).expect("a built-in circuit at a valid size"))
}
