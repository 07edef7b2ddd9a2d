//! The worker's integration tests, in one test binary (each binary links the worker and filecoin-proofs again).
//! Run one group with a filter, e.g. `cargo test --release -p cuzk-worker --test it stages::`.

mod stages;
mod streamed;
mod validation_records;
