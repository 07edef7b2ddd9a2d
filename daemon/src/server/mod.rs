//! The server side of `cuzk serve`: [`driver`] owns the sans-io job layer and hands its events
//! to the worker; [`request`] validates API requests into jobs ([`intake`] bounds their
//! size in flight); [`service`] is the `cuzk.v1.ProvingEngine` gRPC
//! API and the one place driver errors become gRPC codes; [`journal`] keeps accepted jobs across
//! restarts; [`http`] serves the status page, `/status` and `/metrics` ([`snapshot`] builds
//! the [`status`] the driver shows, [`metrics`] renders it); [`listen`] accepts connections. This module starts the driver and the
//! listeners and shuts everything down in order. Nothing here imports the client side or the
//! command line.

pub mod driver;
pub mod http;
pub mod intake;
pub mod journal;
pub mod listen;
pub mod metrics;
pub mod request;
pub mod service;
pub mod snapshot;
pub mod status;

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cuzk_backend_cpu::CpuBackend;
use cuzk_core::backend::Backend;
use cuzk_core::engine::{DeviceConfig, EngineConfig, EngineError, Stage};
use cuzk_core::params::Validation;
use cuzk_worker::BackendWorker;
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tonic::service::interceptor::InterceptedService;

use crate::any_backend::AnyBackend;
use crate::auth::RequireToken;
use crate::circuits::CircuitShape;
use crate::config::{Config, ConfigError, EngineSection, ShutdownMode};
use crate::devices::{self, DeviceError, Devices};
use crate::proto::proving_engine_server::ProvingEngineServer;
use crate::server::driver::{DriverConfig, DriverHandle, Recovery};
use crate::server::journal::{Journal, OpenJob};
use crate::server::listen::{Limits, ListenerStats, Listeners};
use crate::server::service::{Service, ServiceConfig};
use crate::server::status::Outside;
use cuzk_core::engine::Nanos;
use cuzk_core::jobs::JobsConfig;

/// Why the daemon could not start or stopped badly.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Bad configuration.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The engine refused the configuration.
    #[error("engine: {0}")]
    Engine(#[from] EngineError),
    /// A listener could not be set up.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// Another daemon answers on the socket (or holds its lock).
    #[error("{0} is in use by a running daemon: stop it first, or give this one another server.socket")]
    SocketInUse(PathBuf),
    /// Something other than a socket is where the socket should be; it is left alone.
    #[error("{0} exists and is not a unix socket: refusing to replace it")]
    NotASocket(PathBuf),
    /// The selected devices could not be opened.
    #[error(transparent)]
    Devices(#[from] DeviceError),
    /// A configured path is unusable.
    #[error("{what} {}: {reason}", path.display())]
    BadPath {
        /// Which setting.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The journal could not be opened.
    #[error(transparent)]
    Journal(#[from] crate::server::journal::JournalError),
    /// The gRPC server failed.
    #[error("gRPC server: {0}")]
    Transport(#[from] tonic::transport::Error),
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ServeError {
    let what = what.into();
    move |source| ServeError::Io { what, source }
}

/// Where the daemon listens.
#[derive(Debug, Clone, Default)]
pub struct Listening {
    /// The unix socket.
    pub socket: Option<PathBuf>,
    /// The TCP gRPC address.
    pub tcp: Option<SocketAddr>,
    /// The HTTP address.
    pub http: Option<SocketAddr>,
}

/// A running daemon.
pub struct Server {
    /// Its addresses.
    pub listening: Listening,
    handle: DriverHandle,
    shutdown: crate::config::ShutdownSection,
    task: JoinHandle<Result<(), ServeError>>,
}

impl Server {
    /// A handle to the driver.
    pub fn handle(&self) -> DriverHandle {
        self.handle.clone()
    }

    /// Starts the shutdown with the configured mode and timeout.
    pub fn shutdown(&self) {
        self.handle.shutdown(self.shutdown.mode, Duration::from_secs(self.shutdown.timeout_s));
    }

    /// Starts the shutdown with the given mode.
    pub fn shutdown_with(&self, mode: ShutdownMode) {
        self.handle.shutdown(mode, Duration::from_secs(self.shutdown.timeout_s));
    }

    /// Waits until the daemon has stopped.
    pub async fn wait(self) -> Result<(), ServeError> {
        self.task.await.unwrap_or(Ok(()))
    }
}

/// The default socket path.
pub fn default_socket(data_dir: &Path) -> PathBuf {
    data_dir.join("cuzk.sock")
}

/// Starts the daemon on the configured backend (`engine.backend`), one backend per device
/// of `engine.devices`.
///
/// With `engine.cpu_fallback` and a GPU backend, the CPU backend comes after the GPUs as a
/// fallback device.
pub async fn start(mut cfg: Config, data_dir: PathBuf) -> Result<Server, ServeError> {
    cfg.validate()?;
    let Devices { mut backends, mut ordinals } = devices::open(&cfg.engine.backend, &cfg.engine.device_selection())?;
    if cfg.engine.cpu_fallback {
        if matches!(backends[..], [AnyBackend::Cpu(_), ..]) {
            tracing::warn!("engine.cpu_fallback has no effect on the CPU backend");
            cfg.engine.cpu_fallback = false;
        } else {
            // The GPUs, then the CPU backend as their fallback (ordinal 0: the host's one CPU).
            backends.push(AnyBackend::CpuFallback(CpuBackend::new()));
            ordinals.push(0);
        }
    }
    launch(cfg, data_dir, backends, ordinals).await
}

/// Starts over `backends`, each wrapped in a fault injector when `[faults]` is enabled.
async fn launch(cfg: Config, data_dir: PathBuf, backends: Vec<AnyBackend>, ordinals: Vec<u32>) -> Result<Server, ServeError> {
    if !cfg.faults.enabled {
        return start_devices(cfg, data_dir, backends, ordinals).await;
    }
    let mut wrapped = Vec::new();
    for (d, b) in backends.into_iter().enumerate() {
        let plan = cfg.faults.plan(d as u32)?.unwrap_or_default();
        tracing::error!(
            device = d,
            rules = ?plan.rules.iter().map(ToString::to_string).collect::<Vec<_>>(),
            seed = plan.seed,
            "FAULT INJECTION IS ON ([faults] enabled): this daemon fails, corrupts and delays backend calls on purpose; test use only"
        );
        wrapped.push(AnyBackend::faulty(b, plan));
    }
    start_devices(cfg, data_dir, wrapped, ordinals).await
}

/// The engine's configuration, and the budget for request bytes in flight (taken out of the
/// host budget before the engine gets it).
fn engine_config(cfg: &Config, backends: &[AnyBackend], ordinals: &[u32]) -> (EngineConfig, u64) {
    let e = &cfg.engine;
    let meminfo = e.meminfo();
    let whole = e.host_budget(crate::meminfo::mem_available(&meminfo));
    let requests = cfg.server.request_budget(whole);
    let host = whole.saturating_sub(requests).max(whole / 2);
    tracing::info!(budget = requests, sized = cfg.server.request_budget_bytes == 0, "request bytes in flight budget (out of the host budget)");
    let free: Vec<Option<u64>> = backends.iter().map(|b| b.free_memory()).collect();
    let sharing = devices::sharing(ordinals, &free.iter().map(Option::is_some).collect::<Vec<_>>());
    let fallback = e.cpu_fallback.then(|| backends.len().saturating_sub(1));
    let devices = backends
        .iter()
        .enumerate()
        .map(|(d, b)| {
            if Some(d) == fallback {
                let memory_bytes = e.cpu_fallback_budget(host);
                tracing::info!(device = d, name = %b.name(), budget = memory_bytes, "CPU fallback device: takes only what no GPU may");
                return DeviceConfig { memory_bytes, gpu_workers: 1, kernel_lanes: 1, fallback: true };
            }
            let memory_bytes = e.device_budget(free[d], host, sharing[d]);
            tracing::info!(device = d, ordinal = ordinals[d], name = %b.name(), budget = memory_bytes, sized = e.device_memory_bytes == 0, sharing = sharing[d], "device memory budget");
            DeviceConfig { memory_bytes, gpu_workers: e.gpu_workers, kernel_lanes: e.kernel_lanes, fallback: false }
        })
        .collect();
    tracing::info!(budget = host, sized = e.host_memory_bytes == 0, "host memory budget");
    let synth = cfg.synth_workers();
    let mut ec = EngineConfig::new(synth, host, devices);
    if e.finalize_workers > 0 {
        ec.finalize_workers = e.finalize_workers;
    }
    if e.synth_lookahead > 0 {
        ec.synth_lookahead = e.synth_lookahead;
    }
    ec.critical_host_reserve = e.critical_host_reserve.unwrap_or_else(|| EngineSection::critical_reserve(host));
    let smallest = ec.devices.iter().map(|d| d.memory_bytes).min().unwrap_or(0);
    ec.critical_device_reserve = e.critical_device_reserve.unwrap_or_else(|| EngineSection::critical_reserve(smallest));
    ec.timeline_capacity = e.timeline_capacity;
    // The CPU backend adopts the host a, b, c buffers at upload and transforms them in place,
    // so they stay in use until the NTT ends; a GPU backend copies them at upload.
    if backends.first().is_some_and(|b| b.name().starts_with("cpu")) {
        ec.release_host_abc_after = Stage::Ntt;
    }
    (ec, requests)
}

/// The lock file beside a socket: `cuzk.sock` → `cuzk.sock.lock`.
pub fn socket_lock_path(socket: &Path) -> PathBuf {
    let mut s = socket.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

/// Binds the unix socket. One daemon per socket: an advisory lock on `<socket>.lock` is held
/// for the daemon's life (returned with the listener), so two daemons starting at once cannot
/// both take the path. A socket file left by a daemon that died (nobody answers on it) is
/// replaced; one a live daemon answers on, or anything that is not a socket, is refused.
/// With `group`, the socket (and a directory made for it) belong to that group, mode 0660
/// (0750): its members connect.
async fn bind_socket(path: &Path, group: Option<u32>) -> Result<(UnixListener, std::fs::File), ServeError> {
    use std::os::unix::fs::FileTypeExt;
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !parent.exists() {
            std::fs::create_dir_all(parent).map_err(io(format!("creating {}", parent.display())))?;
            let mode = if group.is_some() { 0o750 } else { 0o700 };
            std::fs::set_permissions(parent, std::fs::Permissions::from_mode(mode)).map_err(io(format!("chmod {}", parent.display())))?;
            if group.is_some() {
                std::os::unix::fs::chown(parent, None, group).map_err(io(format!("chgrp {}", parent.display())))?;
            }
        }
    }
    let lock_path = socket_lock_path(path);
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(io(format!("opening the socket lock {}", lock_path.display())))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return Err(ServeError::SocketInUse(path.into())),
        Err(std::fs::TryLockError::Error(e)) => return Err(io(format!("locking {}", lock_path.display()))(e)),
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.file_type().is_socket() => return Err(ServeError::NotASocket(path.into())),
        Ok(_) => match tokio::time::timeout(Duration::from_secs(2), tokio::net::UnixStream::connect(path)).await {
            Ok(Ok(_)) | Err(_) => return Err(ServeError::SocketInUse(path.into())),
            Ok(Err(e)) if matches!(e.kind(), std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound) => {
                tracing::warn!(socket = %path.display(), "replacing a stale socket (no daemon answers on it)");
                std::fs::remove_file(path).map_err(io(format!("removing stale socket {}", path.display())))?;
            }
            Ok(Err(e)) => return Err(io(format!("probing {}", path.display()))(e)),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(format!("inspecting {}", path.display()))(e)),
    }
    let l = UnixListener::bind(path).map_err(io(format!("binding {}", path.display())))?;
    // Owner only, or the configured group: the socket is the daemon's whole authentication.
    if group.is_some() {
        std::os::unix::fs::chown(path, None, group).map_err(io(format!("chgrp {} (the daemon's user must be in server.socket_group)", path.display())))?;
    }
    let mode = if group.is_some() { 0o660 } else { 0o600 };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(io(format!("chmod {}", path.display())))?;
    Ok((l, lock))
}

/// Checks a configured directory: an error when it exists and is not a readable directory;
/// a warning when it is missing (jobs needing it are refused with FAILED_PRECONDITION).
fn check_dir(what: &'static str, path: &Path) -> Result<(), ServeError> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_dir() => Err(ServeError::BadPath { what, path: path.into(), reason: "not a directory".into() }),
        Ok(_) => std::fs::read_dir(path).map(|_| ()).map_err(|e| ServeError::BadPath { what, path: path.into(), reason: e.to_string() }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            tracing::warn!(path = %path.display(), "{what} does not exist: jobs that need parameters from it are refused");
            Ok(())
        }
        Err(e) => Err(ServeError::BadPath { what, path: path.into(), reason: e.to_string() }),
    }
}

/// Refuses a directory of the daemon's own files (parameters it generated, validation records,
/// recorded matrices) that others may write to: a file planted or changed there would be
/// trusted. A directory not there yet is created later, owner-only.
fn check_private(what: &'static str, path: &Path) -> Result<(), ServeError> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() && m.permissions().mode() & 0o022 != 0 => Err(ServeError::BadPath {
            what,
            path: path.into(),
            reason: format!(
                "writable by other users (mode {:o}): a file planted or changed there would be trusted; make it the daemon's own (chmod go-w)",
                m.permissions().mode() & 0o7777
            ),
        }),
        _ => Ok(()),
    }
}

async fn stopped(mut rx: watch::Receiver<bool>) {
    let _ = rx.wait_for(|s| *s).await;
}

/// Starts the daemon over the given backends (one per device, ordinals 0, 1, ...); with
/// `engine.cpu_fallback` the last one is the fallback device.
pub async fn start_with(cfg: Config, data_dir: PathBuf, backends: Vec<AnyBackend>) -> Result<Server, ServeError> {
    let ordinals = (0..backends.len() as u32).collect();
    start_devices(cfg, data_dir, backends, ordinals).await
}

/// Starts the daemon over `backends`; engine device `i` drives ordinal `ordinals[i]`.
async fn start_devices(cfg: Config, data_dir: PathBuf, backends: Vec<AnyBackend>, ordinals: Vec<u32>) -> Result<Server, ServeError> {
    cfg.validate()?;
    if backends.is_empty() || backends.len() != ordinals.len() {
        return Err(ConfigError::Invalid(format!("{} backends for {} device ordinals", backends.len(), ordinals.len())).into());
    }
    if cfg.engine.cpu_fallback && backends.len() < 2 {
        return Err(ConfigError::Invalid("engine.cpu_fallback: the CPU fallback stands beside a GPU, and there is none".into()).into());
    }
    for n in &cfg.notes {
        tracing::warn!("{n}");
    }
    if cfg.engine.cpu_threads > 0 {
        // The pool synthesis and the constraint-matrix products run in; once per process.
        if let Err(e) = rayon::ThreadPoolBuilder::new().num_threads(cfg.engine.cpu_threads as usize).build_global() {
            tracing::warn!("engine.cpu_threads = {} not applied: {e}", cfg.engine.cpu_threads);
        }
    }
    let token = cfg.token()?;
    let data_dir = cfg.params.data_dir.clone().unwrap_or(data_dir);
    check_dir("the data directory (params.data_dir)", &data_dir)?;
    check_private("the data directory (params.data_dir)", &data_dir)?;
    if let Some(m) = cfg.params.matrices_dir.as_deref().filter(|m| !m.as_os_str().is_empty()) {
        check_private("the matrices directory (params.matrices_dir)", m)?;
    }
    check_dir("the Filecoin parameter cache (params.filecoin_dir)", &cfg.filecoin_dir())?;
    let (ec, request_budget) = engine_config(&cfg, &backends, &ordinals);
    let request_budget = crate::server::intake::RequestBudget::new(request_budget);
    let threads = (ec.synth_workers + ec.finalize_workers) as usize;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("cuzk-cpu-{i}"))
        .build()
        .map_err(|e| ServeError::Io { what: "starting the CPU pool".into(), source: std::io::Error::other(e) })?;
    let preload = cfg.params.preload.iter().filter_map(|p| CircuitShape::parse(p).ok()).collect();
    let mut dcfg = DriverConfig {
        data_dir: data_dir.clone(),
        fil_dir: cfg.filecoin_dir(),
        validation: if cfg.params.trusted { Validation::Trusted } else { Validation::Full },
        self_check: cfg.self_check(),
        jobs: JobsConfig {
            recovery: Recovery {
                retries: cfg.engine.fault_retries,
                rechecks: 1,
                stage_timeout: (cfg.engine.stage_timeout_ms > 0).then(|| Nanos::from_millis(cfg.engine.stage_timeout_ms)),
                device_fault_limit: cfg.engine.device_fault_limit,
            },
            queue_limit: cfg.engine.queue_limit,
            memory_margin: cfg.engine.host_memory_margin_bytes,
            keep_results: cfg.server.keep_results,
        },
        meminfo: cfg.engine.meminfo(),
        engine: ec,
        preload,
        linger: Duration::from_millis(cfg.shutdown.linger_ms),
        ordinals: ordinals.clone(),
        first_job_id: 0,
        remembered: Vec::new(),
    };
    if cfg.bench.enabled {
        tracing::error!(
            parameters = ?cfg.bench.parameters,
            "BENCH MODE IS ON ([bench] enabled): Filecoin requests are NOT checked and their proofs are withheld; never point a real client at this daemon"
        );
    }

    // Bind everything before starting the engine, so a bad address fails fast.
    let socket = match &cfg.server.socket {
        Some(p) if p.as_os_str().is_empty() => None,
        Some(p) => Some(p.clone()),
        None => Some(default_socket(&data_dir)),
    };
    let (uds, socket_lock) = match &socket {
        Some(p) => {
            let (l, lock) = bind_socket(p, cfg.server.socket_gid()?).await?;
            (Some(l), Some(lock))
        }
        None => (None, None),
    };
    let tcp = match cfg.server.tcp {
        Some(a) => {
            if cfg.server.tcp_insecure && !a.ip().is_loopback() {
                tracing::warn!(
                    "gRPC on {a} WITHOUT AUTHENTICATION (server.tcp_insecure): anyone who can reach this port can submit and cancel proofs; keep it on a trusted network or firewall it"
                );
            } else if cfg.server.tcp_insecure {
                tracing::warn!("gRPC on {a} without authentication (server.tcp_insecure)");
            }
            Some(TcpListener::bind(a).await.map_err(io(format!("binding gRPC TCP {a}")))?)
        }
        None => None,
    };
    let http = if cfg.server.http.trim().is_empty() {
        None
    } else {
        let a: SocketAddr = cfg.server.http.parse().map_err(|e| ConfigError::Invalid(format!("server.http {:?}: {e}", cfg.server.http)))?;
        if !a.ip().is_loopback() && token.is_none() {
            return Err(ConfigError::Invalid(format!("server.http {a} is not a loopback address: set server.token to protect it")).into());
        }
        Some(TcpListener::bind(a).await.map_err(io(format!("binding HTTP {a}")))?)
    };
    // The journal after the socket: a second daemon on the same socket is told so first.
    let (journal, reopened) = open_journal(&cfg, &data_dir)?;
    if let Some(j) = &journal {
        dcfg.first_job_id = j.next_job_number();
        dcfg.remembered = j.ended_ids();
    }
    let listening =
        Listening { socket: socket.clone(), tcp: tcp.as_ref().and_then(|l| l.local_addr().ok()), http: http.as_ref().and_then(|l| l.local_addr().ok()) };

    let matrices_dir = cfg.params.matrices_dir.clone().unwrap_or_else(|| data_dir.join("matrices"));
    // Device copies of the matrices are counted and evicted by the engine with the parameters.
    let mut worker = BackendWorker::new(backends.into_iter().map(Arc::new).collect()).with_budgeted_matrices();
    if !matrices_dir.as_os_str().is_empty() {
        worker = worker.with_matrix_store(matrices_dir);
    }
    // A file validated in full once is trusted while its length and checksum match the record.
    if !cfg.params.trusted {
        worker = worker.with_validation_records(crate::setup::validation_records(&data_dir));
        // Filecoin's own files are trusted at disk speed when their digest is the published one.
        worker = worker.with_published_digests(Arc::new(cuzk_circuits_filecoin::params::matches_published_digest));
    }
    let worker = Arc::new(worker);
    // Bench mode: Filecoin witnesses unchecked, their circuits registered with timing-only
    // parameters of the size their recorded matrices give (recorded while the first request is
    // prepared).
    let in_memory = cfg.bench.enabled && cfg.bench.parameters == crate::config::BenchParameters::Memory;
    let timing_only: Option<crate::server::service::TimingQueries> = in_memory.then(|| {
        let w = worker.clone();
        crate::server::service::TimingQueries(Arc::new(move |first: &dyn cuzk_core::circuit::PartitionCircuit| {
            let m = w.record_matrices(first).map_err(|e| e.to_string())?;
            cuzk_setup::timing::QueryLengths::of(&m).map_err(|e| e.to_string())
        }))
    });
    // Recorded matrices are written to their files beside the jobs; a clean stop waits for them.
    let matrix_saves = worker.matrices().map(|m| m.saves());
    let (handle, driver_task) = driver::spawn(dcfg, worker, pool)?;
    let max = cfg.server.max_request_bytes;
    let (stop_tx, stop_rx) = watch::channel(false);
    let limits = |max_connections| Limits {
        max_connections,
        handshake: Duration::from_millis(cfg.server.handshake_timeout_ms),
        idle: Duration::from_millis(cfg.server.idle_timeout_ms),
    };
    let (grpc_limits, http_limits) = (limits(cfg.server.max_connections), limits(cfg.server.http_max_connections));
    let uds_stats = uds.as_ref().map(|_| ListenerStats::new("grpc-unix", socket.as_ref().map(|p| p.display().to_string()).unwrap_or_default(), grpc_limits));
    let tcp_stats = tcp.as_ref().map(|_| ListenerStats::new("grpc-tcp", listening.tcp.map(|a| a.to_string()).unwrap_or_default(), grpc_limits));
    let http_stats = http.as_ref().map(|_| ListenerStats::new("http", listening.http.map(|a| a.to_string()).unwrap_or_default(), http_limits));
    let mut listeners = Listeners::default();
    for s in [&uds_stats, &tcp_stats, &http_stats].into_iter().flatten() {
        listeners.push(s.clone());
    }
    let outside = Outside { listeners, requests: Some(request_budget.clone()), journal: journal.clone() };
    let service = Service::new(
        handle.clone(),
        ServiceConfig {
            data_dir: data_dir.clone(),
            fil_dir: cfg.filecoin_dir(),
            generate_missing: cfg.params.generate_missing,
            // Curio's `assigned_gpu` names a GPU: the fallback is not one.
            ordinals: ordinals[..ordinals.len() - usize::from(cfg.engine.cpu_fallback)].to_vec(),
            unchecked_witness: cfg.bench.enabled,
            timing_only,
            journal,
            outside: outside.clone(),
        },
    );
    if !reopened.is_empty() {
        tracing::info!(jobs = reopened.len(), "journal: taking up the jobs an earlier run accepted and did not end");
        tokio::spawn(service.clone().take_up(reopened));
    }
    let files = listen::raise_file_limit();
    let held =
        cfg.server.max_connections * (usize::from(uds.is_some()) + usize::from(tcp.is_some())) + usize::from(http.is_some()) * cfg.server.http_max_connections;
    if let Some(n) = files.filter(|&n| n < (held + FILES_OF_OUR_OWN) as u64) {
        tracing::warn!(
            "the open-file limit is {n}, below the {held} connections the listeners may hold plus {FILES_OF_OUR_OWN} for the daemon's own files: accepts will back off when it runs out (raise LimitNOFILE, or lower server.max_connections)"
        );
    }
    // The gRPC listeners ping their clients every third of the idle timeout and drop one that
    // does not answer within another third.
    let ping = Duration::from_millis(cfg.server.idle_timeout_ms / 3);
    let grpc = || tonic::transport::Server::builder().http2_keepalive_interval(Some(ping)).http2_keepalive_timeout(Some(ping));
    let budgeted = || {
        crate::server::intake::Budgeted::new(
            ProvingEngineServer::new(service.clone()).max_decoding_message_size(max).max_encoding_message_size(max),
            request_budget.clone(),
            max,
        )
    };
    let mut servers: Vec<JoinHandle<Result<(), ServeError>>> = Vec::new();
    if let (Some(l), Some(stats)) = (uds, uds_stats) {
        let svc = budgeted();
        let (stop, incoming) = (stopped(stop_rx.clone()), listen::incoming(l, stats, stop_rx.clone()));
        let mut server = grpc();
        servers.push(tokio::spawn(async move {
            server.add_service(svc).serve_with_incoming_shutdown(incoming, stop).await?;
            Ok(())
        }));
    }
    if let (Some(l), Some(stats)) = (tcp, tcp_stats) {
        let svc = budgeted();
        let (stop, incoming) = (stopped(stop_rx.clone()), listen::incoming(l, stats, stop_rx.clone()));
        let mut server = grpc();
        if cfg.server.tcp_insecure {
            servers.push(tokio::spawn(async move {
                server.add_service(svc).serve_with_incoming_shutdown(incoming, stop).await?;
                Ok(())
            }));
        } else {
            let Some(t) = token.clone() else {
                return Err(ConfigError::Invalid("TCP needs a token".into()).into());
            };
            // The token is checked before the message is read or charged.
            let svc = InterceptedService::new(svc, RequireToken(t.into()));
            servers.push(tokio::spawn(async move {
                server.add_service(svc).serve_with_incoming_shutdown(incoming, stop).await?;
                Ok(())
            }));
        }
    }
    if let (Some(l), Some(stats)) = (http, http_stats) {
        let local = l.local_addr().map(|a| a.ip().is_loopback()).unwrap_or(false);
        let incoming = listen::incoming(l, stats, stop_rx.clone());
        let router = crate::server::http::router(handle.clone(), if local { None } else { token.clone() }, outside.clone());
        servers.push(tokio::spawn(crate::server::http::serve(incoming, router, http_limits.handshake, stop_rx.clone())));
    }
    tracing::info!(socket = ?listening.socket, tcp = ?listening.tcp, http = ?listening.http, data_dir = %data_dir.display(), "cuzk daemon listening");

    let task = tokio::spawn(async move {
        // The driver ends only after a shutdown, once every accepted job has a final status.
        let _ = driver_task.await;
        let _ = stop_tx.send(true);
        let mut result = Ok(());
        for s in servers {
            match s.await {
                Ok(Err(e)) => result = Err(e),
                Err(e) => tracing::error!(error = %e, "listener task failed"),
                Ok(Ok(())) => {}
            }
        }
        // Before the socket and its lock go: a daemon started next finds the files whole.
        if let Some(saves) = matrix_saves.filter(|s| s.running() > 0) {
            tracing::info!(files = saves.running(), "waiting for recorded constraint matrices to be written");
            let _ = tokio::task::spawn_blocking(move || saves.wait()).await;
        }
        if let Some(p) = socket {
            let _ = std::fs::remove_file(p);
        }
        drop(socket_lock);
        tracing::info!("cuzk daemon stopped");
        result
    });
    Ok(Server { listening, handle, shutdown: cfg.shutdown.clone(), task })
}

/// Opens the journal when it is on: the journal and the jobs an earlier run left open.
fn open_journal(cfg: &Config, data_dir: &Path) -> Result<(Option<Arc<Journal>>, Vec<OpenJob>), ServeError> {
    if !cfg.journal.enabled {
        tracing::warn!("[journal] enabled = false: accepted jobs are lost if the daemon stops before they end");
        return Ok((None, Vec::new()));
    }
    let dir = cfg.journal.dir.clone().unwrap_or_else(|| data_dir.join("journal"));
    let (j, open) = Journal::open(&dir, Duration::from_secs(cfg.journal.retention_s), cfg.server.keep_results)?;
    let s = j.status();
    tracing::info!(dir = %dir.display(), open = s.open, ended = s.ended, bytes = s.bytes, damaged = s.damaged, "journal opened");
    Ok((Some(Arc::new(j)), open))
}

/// Descriptors the daemon keeps for itself beyond its connections (parameter and matrices
/// files, pipes, the devices).
const FILES_OF_OUR_OWN: usize = 256;

/// Runs the daemon until SIGTERM or SIGINT (a second signal cancels whatever is left).
pub async fn serve(cfg: Config, data_dir: PathBuf) -> Result<(), ServeError> {
    let server = start(cfg, data_dir).await?;
    let handle = server.handle();
    let mode = server.shutdown.mode;
    let timeout = Duration::from_secs(server.shutdown.timeout_s);
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).map_err(io("installing the SIGTERM handler"))?;
    let signals = tokio::spawn(async move {
        let mut first = true;
        loop {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            let m = if first { mode } else { ShutdownMode::Cancel };
            tracing::info!(mode = ?m, "signal received");
            handle.shutdown(m, timeout);
            first = false;
        }
    });
    let r = server.wait().await;
    signals.abort();
    r
}
