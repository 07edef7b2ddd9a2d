//! The daemon's integration tests, in one test binary: each binary links the whole daemon and
//! filecoin-proofs, and linking six of them dominated CI's build time. Run one group with a
//! filter, e.g. `cargo test --release -p cuzk-daemon --test it filecoin::`.

mod common;

mod bad_requests;
mod bench_mode;
mod cli;
mod contrib;
mod curio;
mod devices;
mod doctor;
mod faults;
mod filecoin;
mod fuzz_bodies;
mod grpc;
mod hostile;
mod http_metrics;
mod intake;
mod journal;
mod listeners;
mod outside_circuit;
mod restart;
mod status_page;
mod wire;
