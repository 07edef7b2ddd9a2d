//! `cuzk`: the command-line front end of the cuzk proving engine.

mod bench;
mod setup;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand, ValueEnum};
use cuzk_backend_cpu::CpuBackend;
use cuzk_circuits::{CircuitError, CircuitKind};
use cuzk_core::backend::Backend;
use cuzk_core::params::{Parameters, ParamsError, Validation};
use cuzk_core::proof::verify;
use cuzk_core::prover::{prove, ProveError, ProvingKey, Stage};
use cuzk_core::synth::{synthesize, SizeHint, SynthesizeError};
use ff::Field;
use rand::SeedableRng;

/// Errors the CLI reports to the user.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad circuit name or size.
    #[error(transparent)]
    Circuit(#[from] CircuitError),
    /// File system trouble.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The parameter file is invalid.
    #[error("parameter file {path}: {source}")]
    Params {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: ParamsError,
    },
    /// Synthesis failed.
    #[error(transparent)]
    Synthesize(#[from] SynthesizeError),
    /// Proving failed.
    #[error(transparent)]
    Prove(#[from] ProveError),
    /// Parameter generation failed.
    #[error("parameter generation failed: {0}")]
    Setup(String),
    /// The proof did not verify (a bug: report it).
    #[error("the proof does not verify")]
    InvalidProof,
    /// The requested backend is not available.
    #[error("backend {0} is not available in this build or on this machine")]
    BackendUnavailable(String),
}

#[derive(Parser, Debug)]
#[command(name = "cuzk", version, about = "GPU Groth16 proving engine for BLS12-381")]
struct Cli {
    /// Where parameters are cached (default: $CUZK_DATA_DIR, else $XDG_DATA_HOME/cuzk, else
    /// ~/.local/share/cuzk).
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
enum BackendChoice {
    /// The best available: a GPU when one is present, else the CPU.
    Auto,
    /// The CPU reference backend.
    Cpu,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Writes bellperson-format parameters for a built-in circuit into the data directory.
    Setup {
        /// Built-in circuit: sha256-chain or squaring-chain.
        #[arg(long)]
        circuit: String,
        /// log2 of the domain size.
        #[arg(long)]
        log_size: u32,
        /// Regenerate even if the file exists.
        #[arg(long)]
        force: bool,
    },
    /// Synthesizes, proves and verifies one proof of a built-in circuit; prints stage times.
    Prove {
        /// Built-in circuit: sha256-chain or squaring-chain.
        #[arg(long)]
        circuit: String,
        /// log2 of the domain size.
        #[arg(long)]
        log_size: u32,
        /// Compute backend.
        #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
        backend: BackendChoice,
        /// Seed of the witness and of `r, s`.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Skip curve and subgroup checks of the parameter points (trusted files only).
        #[arg(long)]
        trust_params: bool,
    },
    /// Benchmarks our CPU prover against bellperson's on the same circuits and parameters.
    BenchProver {
        /// Built-in circuits to run (default: both).
        #[arg(long, value_delimiter = ',')]
        circuits: Vec<String>,
        /// log2 domain sizes.
        #[arg(long, value_delimiter = ',', default_value = "14,15,16,17,18")]
        log_sizes: Vec<u32>,
        /// Repetitions per prover (the median is reported).
        #[arg(long, default_value_t = 3)]
        reps: usize,
    },
}

fn data_dir(explicit: Option<PathBuf>) -> PathBuf {
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

/// Reads and decodes a parameter file with all cores.
pub fn read_params(path: &std::path::Path, validation: Validation) -> Result<Parameters, CliError> {
    let file = std::fs::File::open(path).map_err(|source| CliError::Io { path: path.into(), source })?;
    // SAFETY: the file is only read; cuzk never writes a file it has open.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|source| CliError::Io { path: path.into(), source })?;
    cuzk_backend_cpu::params::load_parameters(&map, validation).map_err(|source| CliError::Params { path: path.into(), source })
}

fn fmt_dur(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms < 1000.0 {
        format!("{ms:9.1} ms")
    } else {
        format!("{:9.3} s ", d.as_secs_f64())
    }
}

fn run_prove<B: Backend>(backend: &B, kind: CircuitKind, log_size: u32, seed: u64, params: Parameters, read: Duration) -> Result<(), CliError> {
    let circuit = kind.instance(log_size, seed)?;
    let public = circuit.public_inputs();
    let t = Instant::now();
    let key = ProvingKey::load(backend, params).map_err(|e| CliError::Prove(ProveError::Backend { stage: Stage::Upload, source: e }))?;
    let load = t.elapsed();

    let mut times: Vec<(Stage, Duration)> = Vec::new();
    let t0 = Instant::now();
    let synth = synthesize(circuit, backend.host_allocator(), SizeHint::default())?;
    let constraints = synth.num_constraints();
    times.push((Stage::Synthesize, t0.elapsed()));
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
    let (r, s) = (blstrs::Scalar::random(&mut rng), blstrs::Scalar::random(&mut rng));
    let mut last: Option<(Stage, Instant)> = None;
    let proof = prove(backend, &key, synth, r, s, &mut |stage| {
        let now = Instant::now();
        if let Some((prev, since)) = last {
            times.push((prev, now - since));
        }
        last = Some((stage, now));
    })?;
    if let Some((prev, since)) = last {
        times.push((prev, since.elapsed()));
    }
    let total = t0.elapsed();
    let ok = verify(&key.vk, &proof, &public).map_err(|_| CliError::InvalidProof)?;

    println!("circuit   {} (2^{log_size} domain, {constraints} constraints, {} public inputs)", kind.name(), public.len());
    println!("backend   {}", backend.name());
    println!("params    read in {}, made resident in {}", fmt_dur(read).trim(), fmt_dur(load).trim());
    println!();
    println!("{:<12} {:>12}", "stage", "time");
    for (stage, d) in &times {
        println!("{:<12} {}", stage.name(), fmt_dur(*d));
    }
    println!("{:<12} {}", "total", fmt_dur(total));
    println!();
    println!("proof     {}", hex(&proof.to_bytes()));
    if !ok {
        return Err(CliError::InvalidProof);
    }
    println!("verified  yes");
    Ok(())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let dir = data_dir(cli.data_dir);
    let result = match cli.command {
        Command::Setup { circuit, log_size, force } => CircuitKind::from_name(&circuit)
            .map_err(CliError::from)
            .and_then(|kind| setup::ensure_params(&dir, kind, log_size, force).map(|p| println!("parameters: {}", p.display()))),
        Command::Prove { circuit, log_size, backend, seed, trust_params } => (|| {
            let kind = CircuitKind::from_name(&circuit)?;
            kind.instance(log_size, seed)?; // validate the size before any setup work
            let path = setup::ensure_params(&dir, kind, log_size, false)?;
            let validation = if trust_params { Validation::Trusted } else { Validation::Full };
            let t = Instant::now();
            let params = read_params(&path, validation)?;
            let read = t.elapsed();
            match backend {
                BackendChoice::Auto | BackendChoice::Cpu => run_prove(&CpuBackend::new(), kind, log_size, seed, params, read),
            }
        })(),
        Command::BenchProver { circuits, log_sizes, reps } => bench::bench_prover(&dir, &circuits, &log_sizes, reps),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            let mut src = std::error::Error::source(&e);
            while let Some(s) = src {
                eprintln!("  caused by: {s}");
                src = s.source();
            }
            ExitCode::FAILURE
        }
    }
}
