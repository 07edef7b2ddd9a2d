//! Parameter generation's integration tests, in one test binary.
//! Run one group with a filter, e.g. `cargo test --release -p cuzk-setup --test it bellperson_accepts::`.

mod bellperson_accepts;
mod timing;
