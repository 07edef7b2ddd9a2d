//! The CPU backend's conformance, bellperson equivalence and the repository checks, in one test binary (the CUDA and wgpu suites keep binaries of their own, which the GPU host scripts copy by name).
//! Run one group with a filter, e.g. `cargo test --release -p cuzk-tests --test it bellperson_equivalence::`.

mod bellperson_equivalence;
mod cpu_conformance;
mod gpu_trace_scripts;
mod layers;
mod matrices_parallel;
mod repo_text;
