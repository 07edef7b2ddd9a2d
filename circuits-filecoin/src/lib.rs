//! Filecoin proof kinds for cuzk: PoRep C2, SnapDeals, WindowPoSt and WinningPoSt.
//!
//! A request (vanilla proofs plus the public data of the proof, in the encodings Curio sends:
//! see [`FilRequest`]) is decoded ([`decode_request_parts`]) and checked
//! ([`prepare`]): the vanilla proofs are verified against the public inputs with the
//! `storage-proofs` verifiers before anything is proved, so a tampered vanilla proof or wrong
//! randomness is refused with an error. The result is a [`Prepared`] job whose partitions are
//! [`PartitionCircuit`]s: cheap, cloneable handles that build Filecoin's own circuit
//! (`CompoundProof::circuit`) and synthesize it into any `bellpepper_core::ConstraintSystem`.
//! Proofs are the 192-byte partition proofs concatenated, as Filecoin's verifiers read them.
//!
//! Parameters live in a Filecoin parameter cache directory under the names `filecoin-proofs`
//! uses ([`params`]); [`params::generate`] writes random test parameters there with
//! `cuzk-setup`. [`verify`] runs Filecoin's own verifiers, and [`fixtures`] seals small sectors
//! to produce vanilla proofs for tests and benchmarks. For sizes where no sealed sector exists,
//! [`synthetic_request`] fabricates structurally exact requests of every kind and
//! [`prepare_unchecked`] builds their circuits without verifying their vanilla proofs (for
//! benchmarks only: nothing proved from them is valid).
//!
//! Each proof kind has a folder ([`porep`], [`snap`], [`post`]) with the native witness writer
//! of its partitions and its synthetic jobs and requests (`synthetic`).

#![warn(missing_docs)]

mod circuit;
mod curio;
mod decode;
mod error;
pub mod fixtures;
mod ids;
mod jobs;
mod kind;
mod parallel;
pub mod params;
pub mod porep;
pub mod post;
pub mod reference;
mod request;
pub mod snap;
pub mod synthetic;
pub mod verify;

pub use circuit::{prepare, prepare_unchecked, PartitionCircuit, Prepared};
pub use curio::{ffi_layout, supraseal_layout, wrap_c1_like_curio};
pub use decode::decode_request_parts;
pub use error::FilError;
pub use ids::{circuit_of, porep_config, post_config, seal_proof_name, seal_proof_number, update_porep_config, FilKind, FilShape};
pub use parallel::CircuitSize;
pub use request::{commitment_cid, parse_commitment, prover_id, CommitmentKind, FilRequest};
pub use synthetic::synthetic_request;
