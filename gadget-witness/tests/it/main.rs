//! The witness writers against the gadgets they replace, in one test binary (each binary links storage-proofs again).
//! Run one group with a filter, e.g. `cargo test --release -p cuzk-gadget-witness --test it column::`.

mod column;
mod por;
mod por_no_challenge;
mod poseidon;
mod sha256;
