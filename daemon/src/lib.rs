//! `cuzk-daemon`: the `cuzk` command and the `cuzk serve` proving daemon.
//!
//! The daemon is plumbing over the two layers below it: the sans-io engine (`cuzk-core`) decides
//! what runs, the worker (`cuzk-worker`) runs it. Server side: [`driver`] owns the engine and
//! hands its actions to the worker; [`request`] validates API requests into jobs; [`service`]
//! is the `cuzk.v1.ProvingEngine` gRPC API ([`proto`]) and the one place driver errors become
//! gRPC codes; [`http`] serves the status page, `/status` and `/metrics` ([`status`],
//! [`metrics`]); [`server`] wires the listeners and the shutdown. Shared by both sides:
//! [`proto`], [`names`], [`auth`], [`circuits`], [`config`], [`setup`]. Client side: [`client`]
//! (nothing on the server side imports it). Command-line tools: [`filecoin`], [`compare_bellperson`].

#![warn(missing_docs)]
// gRPC handlers return `tonic::Status` (176 bytes) by design; boxing it everywhere buys nothing.
#![allow(clippy::result_large_err)]

pub mod any_backend;
pub mod auth;
pub mod circuits;
pub mod cli;
pub mod client;
pub mod codec;
pub mod compare_bellperson;
pub mod config;
pub mod devices;
pub mod driver;
pub mod families;
pub mod filecoin;
pub mod http;
pub mod intake;
pub mod journal;
pub mod listen;
pub mod metrics;
pub mod names;
pub mod proto;
pub mod prove;
pub mod request;
pub mod server;
pub mod service;
pub mod setup;
pub mod status;

use std::path::PathBuf;

use cuzk_circuits::CircuitError;
use cuzk_core::prover::ProveError;
use cuzk_core::synth::SynthesizeError;

/// Errors the CLI reports to the user.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad circuit name or size.
    #[error(transparent)]
    Circuit(#[from] CircuitError),
    /// Bad family name or size of a GENERIC circuit.
    #[error(transparent)]
    Generic(#[from] families::GenericError),
    /// A circuit could not be built.
    #[error("{0}")]
    Build(cuzk_core::circuit::CircuitError),
    /// File system trouble.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// Reading parameters or running a stage failed.
    #[error(transparent)]
    Work(#[from] cuzk_worker::WorkError),
    /// The selected devices could not be opened.
    #[error(transparent)]
    Devices(#[from] devices::DeviceError),
    /// Synthesis failed.
    #[error(transparent)]
    Synthesize(#[from] SynthesizeError),
    /// Proving failed.
    #[error(transparent)]
    Prove(#[from] ProveError),
    /// Parameter generation failed.
    #[error("parameter generation failed: {0}")]
    Setup(String),
    /// A GENERIC family's parameters could not be made.
    #[error(transparent)]
    Params(#[from] setup::SetupError),
    /// The proof did not verify (a bug: report it).
    #[error("the proof does not verify")]
    InvalidProof,
    /// The daemon could not run.
    #[error(transparent)]
    Serve(#[from] server::ServeError),
    /// A client command failed.
    #[error(transparent)]
    Client(#[from] client::ClientError),
    /// Bad configuration.
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    /// A command-line value is invalid.
    #[error("{0}")]
    Usage(String),
}

/// The data directory: `explicit`, else `$CUZK_DATA_DIR`, else `$XDG_DATA_HOME/cuzk`, else
/// `~/.local/share/cuzk`.
pub fn data_dir(explicit: Option<PathBuf>) -> PathBuf {
    if let Some(d) = explicit {
        return d;
    }
    if let Some(d) = std::env::var_os("CUZK_DATA_DIR") {
        return d.into();
    }
    if let Some(d) = std::env::var_os("XDG_DATA_HOME") {
        return PathBuf::from(d).join("cuzk");
    }
    match std::env::var_os("HOME") {
        Some(h) => PathBuf::from(h).join(".local/share/cuzk"),
        None => PathBuf::from(".cuzk"),
    }
}
