//! `cuzk-daemon`: the `cuzk` command and the `cuzk serve` proving daemon.
//!
//! The daemon is plumbing over the layers below it: the sans-io job layer and engine
//! (`cuzk-core`) decide what runs, the worker (`cuzk-worker`) runs it. Three sides, one folder
//! each: [`server`] (the driver, the gRPC API, the journal, the status endpoints and the
//! listeners), [`client`] (the client commands and the `cuzk load` load generator) and
//! [`tools`] (one-shot commands). Shared by all: [`proto`] and its [`codec`], [`names`], [`auth`], [`circuits`],
//! [`families`], [`config`], [`setup`], [`devices`]. [`cli`] parses the command line; the server
//! side imports neither it nor the client side.

#![warn(missing_docs)]
// gRPC handlers return `tonic::Status` (176 bytes) by design; boxing it everywhere buys nothing.
#![allow(clippy::result_large_err)]

pub mod any_backend;
pub mod auth;
pub mod circuits;
pub mod cli;
pub mod client;
pub mod codec;
pub mod config;
pub mod devices;
pub mod families;
pub mod limits;
pub mod meminfo;
pub mod names;
pub mod proto;
pub mod server;
pub mod setup;
pub mod tools;

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
