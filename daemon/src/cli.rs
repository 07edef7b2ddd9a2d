//! `cuzk`: the command-line front end of the cuzk proving engine: local proving and setup,
//! the `serve` daemon, and the client commands that talk to it. It lives in the library, so
//! that the binary (`src/main.rs`, which only calls [`main`]) compiles nothing of its own.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::client::commands::{self, Conn, SubmitArgs};
use crate::client::loadgen::LoadArgs;
use crate::config::{Config, DeviceSelection, LogFormat, ShutdownMode};
use crate::tools::compare_bellperson;
use crate::tools::prove::{run_prove, ProveRun};
use crate::{data_dir, server, setup, CliError};
use clap::{Parser, Subcommand, ValueEnum};
use cuzk_core::params::Validation;

#[derive(Parser, Debug)]
#[command(name = "cuzk", version, about = "GPU Groth16 proving engine for BLS12-381")]
struct Cli {
    /// Where parameters are cached (default: $CUZK_DATA_DIR, else $XDG_DATA_HOME/cuzk, else
    /// ~/.local/share/cuzk).
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
    /// Daemon address for client commands: unix:/path, /path or http://host:port (default: the
    /// socket in the data directory).
    #[arg(long, global = true, env = "CUZK_ADDR")]
    addr: Option<String>,
    /// Bearer token (client commands over TCP; `serve`: the token TCP clients must send).
    #[arg(long, global = true, env = "CUZK_TOKEN", hide_env_values = true)]
    token: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
enum BackendChoice {
    /// The best available: a GPU when one is present, else the CPU.
    Auto,
    /// The CPU reference backend.
    Cpu,
    /// The first CUDA device (an error without one).
    Cuda,
    /// A wgpu adapter (Vulkan, Metal or DX12; `CUZK_WGPU_ADAPTER` / `CUZK_WGPU_DEVICE_TYPE`
    /// pick one; an error without one). Never chosen by `auto`.
    Wgpu,
}

/// `cuzk serve` flags; each overrides the config file.
#[derive(clap::Args, Debug)]
struct ServeArgs {
    /// TOML configuration file (see docs/daemon.md).
    #[arg(long)]
    config: Option<PathBuf>,
    /// gRPC unix socket path ("" disables it).
    #[arg(long)]
    socket: Option<PathBuf>,
    /// gRPC TCP address (needs --token or server.token, or --tcp-insecure).
    #[arg(long)]
    tcp: Option<SocketAddr>,
    /// Serve TCP without authentication, as Curio's client connects (trusted networks only).
    #[arg(long)]
    tcp_insecure: bool,
    /// HTTP status address ("" disables it).
    #[arg(long)]
    http: Option<String>,
    /// Synthesis workers.
    #[arg(long)]
    synth_workers: Option<u32>,
    /// Generate missing parameter files instead of refusing jobs.
    #[arg(long)]
    generate_params: bool,
    /// Skip curve and subgroup checks of parameter points (files you made yourself).
    #[arg(long)]
    trust_params: bool,
    /// Circuits to make resident at start, e.g. squaring-chain-2^10.
    #[arg(long, value_delimiter = ',')]
    preload: Vec<String>,
    /// What SIGTERM/SIGINT do with accepted jobs.
    #[arg(long, value_enum)]
    shutdown_mode: Option<ShutdownMode>,
    /// Check every proof, of every kind, with the verifying key before returning it
    /// (engine.self_check = "all", which is the default; for configurations that set it lower).
    #[arg(long)]
    verify_proofs: bool,
    /// Compute backend (overrides engine.backend).
    #[arg(long, value_enum)]
    backend: Option<BackendChoice>,
    /// Filecoin parameter cache (overrides params.filecoin_dir).
    #[arg(long)]
    filecoin_dir: Option<PathBuf>,
    /// Bench mode (bench.enabled): Filecoin requests unchecked, timing-only parameters,
    /// proofs withheld; for synthetic requests (`gen-vanilla --synthetic`). Never in production.
    #[arg(long)]
    bench_mode: bool,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Writes bellperson-format parameters for a built-in circuit into the data directory, or
    /// random Filecoin parameters (and `.vk` files) into the Filecoin parameter cache.
    Setup {
        /// Built-in circuit: sha256-chain or squaring-chain.
        #[arg(long, required_unless_present = "filecoin")]
        circuit: Option<String>,
        /// log2 of the domain size.
        #[arg(long, required_unless_present = "filecoin")]
        log_size: Option<u32>,
        /// Filecoin circuits: porep-2k, snap-2k, wpost-2k, winning-2k, or all-2k (any sector size).
        #[arg(long, value_delimiter = ',', conflicts_with = "circuit")]
        filecoin: Vec<String>,
        /// Filecoin parameter cache (default: $FIL_PROOFS_PARAMETER_CACHE, else /var/tmp/filecoin-proof-parameters).
        #[arg(long)]
        filecoin_dir: Option<PathBuf>,
        /// Regenerate even if the file exists.
        #[arg(long)]
        force: bool,
        /// With --filecoin: timing-only parameters (the real file layout and names, pseudo-random
        /// points, any sector size, written at disk speed). Proofs made with them do not verify:
        /// for benchmarks only, never in a cache real proofs are made from.
        #[arg(long, requires = "filecoin")]
        timing_only: bool,
    },
    /// Seals a small sector with filecoin-proofs and writes a request (vanilla proofs and public
    /// data) of each Filecoin kind as JSON: test fixtures and `cuzk load` inputs. With
    /// --synthetic, fabricates requests of any sector size instead (they do not verify).
    GenVanilla {
        /// Sector size: 2k, 8m or 512m (with --synthetic also 32g and 64g).
        #[arg(long, default_value = "2k")]
        sector_size: String,
        /// Synthetic requests: the real partition, challenge and sector counts and Merkle paths
        /// with random values, no sector sealed. They do not verify; the daemon accepts them only
        /// with unchecked witnesses and timing-only parameters, and withholds what it proves from them.
        #[arg(long)]
        synthetic: bool,
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
        /// Seed of the sector data, ticket, seed and randomness.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Checks a proof of a Filecoin request with Filecoin's own verifier.
    FilVerify {
        /// The request (JSON from gen-vanilla).
        #[arg(long)]
        request: PathBuf,
        /// The proof bytes (e.g. from `cuzk submit --request … --wait --out`).
        #[arg(long)]
        proof: PathBuf,
        /// Filecoin parameter cache holding the verifying keys.
        #[arg(long)]
        filecoin_dir: Option<PathBuf>,
    },
    /// Synthesis time per constraint of a Filecoin request, plain and through the
    /// constraint-matrix cache.
    FilSynthTimes {
        /// The request (JSON from gen-vanilla).
        #[arg(long)]
        request: PathBuf,
        /// Runs of each (the median is reported).
        #[arg(long, default_value_t = 3)]
        reps: usize,
    },
    /// Proves a Filecoin request with filecoin-proofs' own CPU prover (for comparisons).
    FilReference {
        /// The request (JSON from gen-vanilla).
        #[arg(long)]
        request: PathBuf,
        /// Filecoin parameter cache.
        #[arg(long)]
        filecoin_dir: Option<PathBuf>,
        /// Write the proof here.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Synthesizes, proves and verifies one proof of a built-in circuit (of one or more
    /// partitions, spread over the devices); prints stage times.
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
        /// Devices the partitions spread over: `all`, or ordinals separated by commas (an
        /// ordinal given twice opens two backends on one GPU). Default: the first device.
        #[arg(long)]
        devices: Option<DeviceSelection>,
        /// Partitions of the proof (partition `i` proves the witness of seed `seed + i`).
        #[arg(long, default_value_t = 1)]
        partitions: u32,
        /// Seed of the witness and of `r, s`.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Skip curve and subgroup checks of the parameter points (trusted files only).
        #[arg(long)]
        trust_params: bool,
    },
    /// Times our CPU prover against bellperson's on the same circuits and parameters.
    CompareBellperson {
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
    /// Runs the proving daemon (gRPC cuzk.v1.ProvingEngine, HTTP status) until SIGTERM/SIGINT.
    Serve(ServeArgs),
    /// Submits a proof job to the daemon.
    Submit(SubmitArgs),
    /// Waits for a job and prints its result.
    Await {
        /// The job id.
        job_id: String,
        /// Give up after this many ms (0: wait until it ends).
        #[arg(long, default_value_t = 0)]
        timeout_ms: u64,
        /// Write the proof bytes here.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Prints the daemon's status.
    Status,
    /// Cancels a job.
    Cancel {
        /// The job id.
        job_id: String,
    },
    /// Load generator: mixed circuits and priorities against a running daemon.
    Load(LoadArgs),
    /// Checks this host before the first job (GPUs, driver, NVRTC, limits, memory, parameter
    /// files, data directory, socket) and says what is wrong and what to do; exits 2 when a
    /// finding is fatal (the daemon would not start, or jobs would fail).
    Doctor {
        /// TOML configuration file, as `cuzk serve --config` takes it (default: the defaults).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Print the findings as a JSON array of {check, severity, message, fix}.
        #[arg(long)]
        json: bool,
    },
    /// Writes the daemon's timeline as a Chrome trace (chrome://tracing, Perfetto).
    Trace {
        /// The daemon's HTTP address (server.http; its default is 127.0.0.1:9821).
        #[arg(long, default_value = "127.0.0.1:9821")]
        http: SocketAddr,
        /// Output file.
        #[arg(long, default_value = "cuzk-trace.json")]
        out: PathBuf,
    },
}

fn serve_config(args: &ServeArgs, token: Option<String>) -> Result<Config, CliError> {
    let mut cfg = match &args.config {
        Some(p) => Config::load(p)?,
        None => Config::default(),
    };
    if let Some(s) = &args.socket {
        cfg.server.socket = Some(s.clone());
    }
    if let Some(t) = args.tcp {
        cfg.server.tcp = Some(t);
    }
    cfg.server.tcp_insecure |= args.tcp_insecure;
    if let Some(h) = &args.http {
        cfg.server.http = h.clone();
    }
    if token.is_some() {
        cfg.server.token = token;
    }
    if let Some(n) = args.synth_workers {
        cfg.engine.synth_workers = n;
    }
    cfg.params.generate_missing |= args.generate_params;
    cfg.params.trusted |= args.trust_params;
    cfg.bench.enabled |= args.bench_mode;
    cfg.params.preload.extend(args.preload.iter().cloned());
    if let Some(m) = args.shutdown_mode {
        cfg.shutdown.mode = m;
    }
    cfg.engine.verify_proofs |= args.verify_proofs;
    if let Some(b) = args.backend {
        cfg.engine.backend = match b {
            BackendChoice::Auto => "auto",
            BackendChoice::Cpu => "cpu",
            BackendChoice::Cuda => "cuda",
            BackendChoice::Wgpu => "wgpu",
        }
        .into();
    }
    if let Some(d) = &args.filecoin_dir {
        cfg.params.filecoin_dir = Some(d.clone());
    }
    cfg.validate()?;
    Ok(cfg)
}

fn init_logging(filter: &str, format: LogFormat) {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(filter));
    // Colour codes only on a terminal: a log file or journald gets plain text.
    let b = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(std::io::stderr().is_terminal());
    let _ = match format {
        LogFormat::Json => b.json().try_init(),
        LogFormat::Text => b.try_init(),
    };
}

fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|source| CliError::Io { path: "tokio runtime".into(), source })
}

fn run(cli: Cli) -> Result<(), CliError> {
    let dir = data_dir(cli.data_dir);
    let conn = || Conn { addr: cli.addr.clone().unwrap_or_else(|| format!("unix:{}", server::default_socket(&dir).display())), token: cli.token.clone() };
    match cli.command {
        Command::Setup { circuit, log_size, filecoin, filecoin_dir, force, timing_only } => {
            if !filecoin.is_empty() {
                let fdir = filecoin_dir.unwrap_or_else(cuzk_circuits_filecoin::params::cache_dir);
                return crate::tools::filecoin::setup(&fdir, &filecoin, force, timing_only);
            }
            let (Some(circuit), Some(log_size)) = (circuit, log_size) else { return Err(CliError::Usage("--circuit and --log-size are required".into())) };
            let p = setup::ensure_params(&dir, crate::families::GenericShape::new(&circuit, log_size)?, force)?;
            println!("parameters: {}", p.display());
            Ok(())
        }
        Command::GenVanilla { sector_size, out, seed, synthetic } => {
            crate::tools::filecoin::gen_vanilla(&out, crate::tools::filecoin::sector_size(&sector_size)?, seed, synthetic).map(|_| ())
        }
        Command::FilVerify { request, proof, filecoin_dir } => {
            crate::tools::filecoin::verify_file(&filecoin_dir.unwrap_or_else(cuzk_circuits_filecoin::params::cache_dir), &request, &proof)
        }
        Command::FilSynthTimes { request, reps } => crate::tools::filecoin::synth_times(&request, reps).map(|_| ()),
        Command::FilReference { request, filecoin_dir, out } => {
            crate::tools::filecoin::reference_prove(&filecoin_dir.unwrap_or_else(cuzk_circuits_filecoin::params::cache_dir), &request, out.as_deref())
        }
        Command::Prove { circuit, log_size, backend, devices, partitions, seed, trust_params } => {
            // Warnings by default; RUST_LOG=info also says how the parameter file was checked.
            init_logging("warn", LogFormat::Text);
            let shape = crate::families::GenericShape::new(&circuit, log_size)?; // before any setup work
            if partitions == 0 {
                return Err(CliError::Usage("--partitions must be at least 1".into()));
            }
            let path = setup::ensure_params(&dir, shape, false)?;
            let validation = if trust_params { Validation::Trusted } else { Validation::Full };
            let choice = match backend {
                BackendChoice::Auto => "auto",
                BackendChoice::Cpu => "cpu",
                BackendChoice::Cuda => "cuda",
                BackendChoice::Wgpu => "wgpu",
            };
            let selection = devices.unwrap_or(DeviceSelection::List(vec![0]));
            let selection = match (backend, selection) {
                // `auto` on a host without a GPU: the default means "the first device there is".
                (BackendChoice::Auto, DeviceSelection::List(l)) if l == [0] && cuzk_backend_cuda::device::device_count() == 0 => DeviceSelection::All,
                (_, s) => s,
            };
            let opened = crate::devices::open(choice, &selection)?;
            let records = Some(setup::validation_records(&dir));
            let run = ProveRun { shape, seed, partitions, path, validation, records, ordinals: opened.ordinals };
            run_prove(opened.backends, run)
        }
        Command::CompareBellperson { circuits, log_sizes, reps } => compare_bellperson::compare_bellperson(&dir, &circuits, &log_sizes, reps),
        Command::Serve(args) => {
            let cfg = serve_config(&args, cli.token.clone())?;
            init_logging(&cfg.log.filter, cfg.log.format);
            runtime()?.block_on(server::serve(cfg, dir.clone()))?;
            Ok(())
        }
        Command::Submit(args) => runtime()?.block_on(commands::submit(&conn(), &args)),
        Command::Await { job_id, timeout_ms, out } => runtime()?.block_on(commands::await_job(&conn(), &job_id, timeout_ms, out.as_ref())),
        Command::Status => runtime()?.block_on(commands::status(&conn())),
        Command::Cancel { job_id } => runtime()?.block_on(commands::cancel(&conn(), &job_id)),
        Command::Load(args) => runtime()?.block_on(crate::client::loadgen::run(&conn(), &dir, &args)).map(|_| ()),
        Command::Doctor { config, json } => {
            if crate::tools::doctor::run(config.as_deref(), &dir, json)? {
                // A fatal finding: exit status 2, for scripts (1 is an error of the command).
                std::process::exit(2);
            }
            Ok(())
        }
        Command::Trace { http, out } => runtime()?.block_on(commands::trace(http, cli.token.as_deref(), &out)),
    }
}

/// Parses the command line and runs the command; errors are printed with their causes.
pub fn main() -> ExitCode {
    match run(Cli::parse()) {
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
