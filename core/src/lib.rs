//! `cuzk-core`: the runtime-free heart of cuzk.
//!
//! Types and buffers ([`alloc`], [`density`]), our `ConstraintSystem` ([`synth`]) and the
//! recorded constraint matrices that cache it ([`matrices`]) with witnesses written in parallel parts ([`witness`]), the bellperson parameter and
//! proof formats ([`params`], [`proof`]), the MSM helpers the backends share ([`msm`]), the
//! [`backend::Backend`] trait, one partition's circuit as the worker sees any family of them
//! ([`circuit`]), and the Groth16 prover written once over it ([`prover`]), and the
//! scheduler state machine ([`engine`]) with the job layer over it ([`jobs`]: retries,
//! device health, request ids, the low-memory hold, the watchdog).
//!
//! This crate owns no threads, never blocks on I/O and never reads a clock: callers pass time
//! in and run the work the engine asks for.

#![warn(missing_docs)]

pub mod alloc;
pub mod backend;
pub mod circuit;
pub mod compiled;
pub mod density;
pub mod domain;
pub mod engine;
pub mod jobs;
pub mod matrices;
pub mod msm;
pub mod params;
pub mod proof;
pub mod prover;
pub mod synth;
pub mod test_points;
pub mod witness;

pub use bellpepper_core;
pub use blstrs;
