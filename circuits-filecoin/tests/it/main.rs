//! The Filecoin circuits' integration tests, in one test binary: one link of filecoin-proofs, one sealing of the 2 KiB fixtures and one parameter cache for all of them.
//! Run one group with a filter, e.g. `cargo test --release -p cuzk-circuits-filecoin --test it encodings::`.

mod common;

mod encodings;
mod fuzz_bodies;
mod post;
mod record_parallel;
mod record_repeated;
mod reference;
mod synthetic_requests;
mod timing_params;
mod witness;
