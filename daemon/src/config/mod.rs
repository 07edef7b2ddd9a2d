//! The daemon's configuration: a TOML file (every key optional, documented in
//! `docs/daemon.md`), then command-line flags on top. A Curio `cuzk.toml` (the configuration
//! of the daemon that ships inside Curio) is accepted too and mapped onto this one ([`curio`]).

pub mod curio;
#[cfg(test)]
mod doc_keys;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Why a configuration is unusable.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid TOML for this schema.
    #[error("parsing {path}: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: Box<toml::de::Error>,
    },
    /// A key of a Curio `cuzk.toml` that cannot be honoured here.
    #[error("{path}: {key}: {reason}")]
    CurioKey {
        /// The file.
        path: PathBuf,
        /// The key, as `section.key`.
        key: String,
        /// Why it is refused.
        reason: String,
    },
    /// A value is out of range or inconsistent.
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

/// Whole configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Listeners and authentication.
    pub server: ServerConfig,
    /// Scheduling and memory.
    pub engine: EngineSection,
    /// Parameter files.
    pub params: ParamsSection,
    /// What happens on SIGTERM/SIGINT.
    pub shutdown: ShutdownSection,
    /// The journal of accepted jobs.
    pub journal: JournalSection,
    /// Logging.
    pub log: LogSection,
    /// Fault injection (test support; off by default).
    pub faults: FaultsSection,
    /// Bench mode for production-size Filecoin shapes (off by default).
    pub bench: BenchSection,
    /// What loading the file noticed (Curio keys with no effect here); logged at start.
    #[serde(skip)]
    pub notes: Vec<String>,
}

/// `[server]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// gRPC unix socket path; empty disables it. Default: `<data_dir>/cuzk.sock`.
    pub socket: Option<PathBuf>,
    /// Group that may connect to the socket (Curio's user being a member, the daemon's user
    /// one too): the socket is made mode 0660 in that group. Unset: mode 0600, only the
    /// daemon's own user (and root) can connect.
    pub socket_group: Option<String>,
    /// gRPC TCP address (e.g. `127.0.0.1:9820`); off unless set, and then a token is required
    /// unless `tcp_insecure` is set.
    pub tcp: Option<SocketAddr>,
    /// Serve TCP without any authentication, as Curio's client expects (plaintext gRPC, no
    /// credentials). Only for a trusted network: anyone who reaches the port can submit and
    /// cancel jobs. Logged as a warning, loudly when the address is not loopback.
    pub tcp_insecure: bool,
    /// Bearer token required on TCP (and on HTTP when it listens beyond loopback).
    pub token: Option<String>,
    /// File holding the token (first line), instead of `token`.
    pub token_file: Option<PathBuf>,
    /// HTTP status/metrics address; empty string disables it. (9820 is the gRPC port Curio's
    /// documentation gives its daemon, so the status listener stays off it.)
    pub http: String,
    /// Largest gRPC message accepted or sent, bytes (Curio's client sends and receives up to
    /// 256 MiB: a 32 GiB C1 output is ~51 MB).
    pub max_request_bytes: usize,
    /// Bytes of requests in flight (received or being decoded, until their job is accepted),
    /// all listeners together; a message that would pass it is refused with
    /// RESOURCE_EXHAUSTED. Taken out of the host budget. 0: an eighth of the host budget, at
    /// most 4 GiB, and never less than one largest request (`ServerConfig::request_budget`).
    pub request_budget_bytes: u64,
    /// Finished jobs whose results are kept for AwaitProof.
    pub keep_results: usize,
    /// Connections each gRPC listener (unix socket, TCP) holds at once; one more is closed on
    /// accept.
    pub max_connections: usize,
    /// Connections the HTTP status listener holds at once.
    pub http_max_connections: usize,
    /// A new connection's first bytes (and an HTTP request's headers) must come within this, ms.
    pub handshake_timeout_ms: u64,
    /// A connection whose client sends nothing for this long is closed, ms. The gRPC listeners
    /// ping their clients every third of it, so a live client always answers in time.
    pub idle_timeout_ms: u64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            socket: None,
            socket_group: None,
            tcp: None,
            token: None,
            tcp_insecure: false,
            token_file: None,
            http: "127.0.0.1:9821".into(),
            max_request_bytes: 256 << 20,
            request_budget_bytes: 0,
            keep_results: 10_000,
            max_connections: 512,
            http_max_connections: 64,
            handshake_timeout_ms: 10_000,
            idle_timeout_ms: 90_000,
        }
    }
}

impl ServerConfig {
    /// The budget for request bytes in flight out of a host budget: `request_budget_bytes`
    /// when set, else an eighth of `host_budget`, at most 4 GiB, at least what one message of
    /// `max_request_bytes` is charged.
    pub fn request_budget(&self, host_budget: u64) -> u64 {
        let one = crate::limits::charge(self.max_request_bytes);
        if self.request_budget_bytes > 0 {
            return self.request_budget_bytes;
        }
        (host_budget / 8).min(4 << 30).max(one)
    }
}

/// `[engine]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineSection {
    /// Threads of the CPU pool used inside synthesis and the constraint-matrix products (0:
    /// one per core).
    pub cpu_threads: u32,
    /// The devices driven, one backend each: `"all"` (every CUDA device; the CPU backend when
    /// there is none, or one CPU backend) or a list of CUDA ordinals. An ordinal may be listed
    /// twice (two backends sharing one GPU, for testing); with `backend = "cpu"` each entry is
    /// one more CPU backend (for tests of several devices on a host without a GPU).
    pub devices: DeviceSelection,
    /// Older files: the same as `devices = [n]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cuda_device: Option<u32>,
    /// Compute backend: `cpu`, `cuda` (CUDA devices; an error without one), `wgpu` (one
    /// Vulkan/Metal/DX12 adapter; an error without one) or `auto` (CUDA when a device is
    /// present, else the CPU).
    pub backend: String,
    /// Partitions synthesized at once (0: half the cores, at least 1).
    pub synth_workers: u32,
    /// Partitions finalized at once (0: same as synth_workers).
    pub finalize_workers: u32,
    /// Host memory budget, bytes; 0 (the default): sized from the machine at start
    /// ([`EngineSection::host_budget`]).
    pub host_memory_bytes: u64,
    /// Memory budget of each device, bytes; 0 (the default): sized from each device's free
    /// memory at start ([`EngineSection::device_budget`]).
    pub device_memory_bytes: u64,
    /// Partitions on a device at once (upload through MSM).
    pub gpu_workers: u32,
    /// Partitions running kernels on a device at once.
    pub kernel_lanes: u32,
    /// Non-CRITICAL partitions synthesized ahead of the devices (0: automatic).
    pub synth_lookahead: u32,
    /// Host bytes only CRITICAL work may use; unset: [`EngineSection::critical_reserve`] of
    /// the host budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub critical_host_reserve: Option<u64>,
    /// Device bytes only CRITICAL work may use; unset: [`EngineSection::critical_reserve`] of
    /// the smallest device budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub critical_device_reserve: Option<u64>,
    /// Spans and job records kept for the timeline.
    pub timeline_capacity: usize,
    /// Check every proof, of every kind, with the verifying key before returning it (the same
    /// as `self_check = "all"`; kept for older configuration files).
    pub verify_proofs: bool,
    /// Which proofs are checked with the verifying key before they are returned: `all` (the
    /// default), `filecoin` (the four Filecoin kinds), or `off`.
    pub self_check: SelfCheck,
    /// Further attempts of a partition after a device fault (a device error, out of memory,
    /// a stage past the watchdog).
    pub fault_retries: u32,
    /// Watchdog of the device stages (upload, NTT, MSM), ms: a stage running longer is a
    /// device fault. 0 disables it.
    pub stage_timeout_ms: u64,
    /// Consecutive faults after which a device is taken out of service until the daemon
    /// restarts. 0: never.
    pub device_fault_limit: u32,
    /// Jobs of one priority accepted and not started; more are refused with
    /// RESOURCE_EXHAUSTED. Each priority has its own queue, so a flood of one never blocks
    /// another.
    pub queue_limit: u32,
    /// Synthesis of non-CRITICAL partitions waits while the host's available memory
    /// (`MemAvailable` in /proc/meminfo) is below this many bytes. 0 disables the check.
    pub host_memory_margin_bytes: u64,
    /// With a GPU backend, the CPU backend as one more device that takes only what no GPU
    /// may: a partition retried after a fault on the one GPU in service (or on the only other
    /// one), and all work once every GPU is out of service. Off by default: the CPU proves a
    /// large partition in minutes, not seconds.
    pub cpu_fallback: bool,
    /// Memory budget of the CPU fallback device, bytes (its parameters and partitions, in
    /// host memory besides `host_memory_bytes`); 0: 16 GiB or half the host budget,
    /// whichever is less, as for a CPU backend device.
    pub cpu_fallback_memory_bytes: u64,
    /// Where the available memory is read (tests point it elsewhere).
    #[serde(skip)]
    pub meminfo_path: Option<PathBuf>,
}

/// Which devices the daemon drives (`engine.devices`): `"all"` or a list of ordinals.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum DeviceSelection {
    /// Every device the backend finds.
    #[default]
    All,
    /// These ordinals, in this order (engine device `i` is the `i`-th entry).
    List(Vec<u32>),
}

impl Serialize for DeviceSelection {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            DeviceSelection::All => s.serialize_str("all"),
            DeviceSelection::List(l) => l.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for DeviceSelection {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Name(String),
            List(Vec<u32>),
        }
        match Raw::deserialize(d).map_err(|_| serde::de::Error::custom("engine.devices must be \"all\" or a list of device ordinals, e.g. [0, 1]"))? {
            Raw::Name(n) if n == "all" => Ok(DeviceSelection::All),
            Raw::Name(n) => Err(serde::de::Error::custom(format!("engine.devices {n:?}: use \"all\" or a list of device ordinals, e.g. [0, 1]"))),
            Raw::List(l) => Ok(DeviceSelection::List(l)),
        }
    }
}

impl std::str::FromStr for DeviceSelection {
    type Err = ConfigError;

    /// `all`, or ordinals separated by commas (`0,1`).
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        if s.trim() == "all" {
            return Ok(DeviceSelection::All);
        }
        s.split(',')
            .map(|x| x.trim().parse::<u32>().map_err(|_| ConfigError::Invalid(format!("devices {s:?}: use all, or ordinals separated by commas (0,1)"))))
            .collect::<Result<Vec<_>, _>>()
            .map(DeviceSelection::List)
    }
}

/// Which proofs the daemon checks with the verifying key before returning them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SelfCheck {
    /// The four Filecoin kinds.
    Filecoin,
    /// Every proof.
    All,
    /// None.
    Off,
}

impl SelfCheck {
    /// Whether a proof of a job is checked: a Filecoin one or not, with its witness checked or
    /// not (an unchecked witness, proved with timing-only parameters, can never pass).
    pub fn applies(self, filecoin: bool, witness: cuzk_core::circuit::WitnessCheck) -> bool {
        witness != cuzk_core::circuit::WitnessCheck::Ignore && (self == SelfCheck::All || (self == SelfCheck::Filecoin && filecoin))
    }
}

impl Default for EngineSection {
    fn default() -> Self {
        EngineSection {
            cpu_threads: 0,
            devices: DeviceSelection::All,
            cuda_device: None,
            backend: "auto".into(),
            synth_workers: 0,
            finalize_workers: 0,
            host_memory_bytes: 0,
            device_memory_bytes: 0,
            gpu_workers: 2,
            kernel_lanes: 1,
            synth_lookahead: 0,
            critical_host_reserve: None,
            critical_device_reserve: None,
            timeline_capacity: 100_000,
            verify_proofs: false,
            self_check: SelfCheck::All,
            fault_retries: 3,
            stage_timeout_ms: 600_000,
            device_fault_limit: 3,
            queue_limit: 64,
            host_memory_margin_bytes: 1 << 30,
            cpu_fallback: false,
            cpu_fallback_memory_bytes: 0,
            meminfo_path: None,
        }
    }
}

/// Share of the measured memory a sized budget leaves unused, in percent (besides the margin).
const SIZED_RESERVE_PERCENT: u64 = 10;
/// Device memory a sized budget leaves free for the driver, kernels' scratch and other
/// processes.
const DEVICE_MARGIN: u64 = 2 << 30;
/// Smallest sized budget.
const MIN_BUDGET: u64 = 1 << 30;
/// A device that reports no memory of its own (the CPU backend shares the host's) gets this
/// much, at most half the host budget.
const SHARED_DEVICE_BUDGET: u64 = 16 << 30;

impl EngineSection {
    /// The `/proc/meminfo`-format file the host's memory is read from (`meminfo_path`, a test
    /// setting; `/proc/meminfo` by default).
    pub fn meminfo(&self) -> PathBuf {
        self.meminfo_path.clone().unwrap_or_else(|| "/proc/meminfo".into())
    }

    /// The host budget: `host_memory_bytes` when set, else 90% of the host's available memory
    /// (`available`, from `/proc/meminfo`) less `host_memory_margin_bytes`, at least 1 GiB;
    /// 16 GiB when the available memory is unknown.
    pub fn host_budget(&self, available: Option<u64>) -> u64 {
        if self.host_memory_bytes > 0 {
            return self.host_memory_bytes;
        }
        match available {
            Some(a) => (a - a * SIZED_RESERVE_PERCENT / 100).saturating_sub(self.host_memory_margin_bytes).max(MIN_BUDGET),
            None => 16 << 30,
        }
    }

    /// The default CRITICAL reserve of a `budget`: 1/32 of it, at most 2 GiB. A WinningPoSt
    /// partition (32 GiB sectors: a 2^19 domain) needs a few hundred MiB, and without a
    /// reserve it waits for a backlog's partition to leave memory (2.3 s in a 32 GiB PoRep
    /// backlog on the H200; docs/perf.md).
    pub fn critical_reserve(budget: u64) -> u64 {
        (budget / 32).min(2 << 30)
    }

    /// A device's budget: `device_memory_bytes` when set, else 90% of the device's free
    /// memory (`free`, measured at start) less 2 GiB, at least 1 GiB; for a device that reports
    /// none (the CPU backend), 16 GiB or half of `host_budget`, whichever is less. `sharing`
    /// backends drive the same memory (one GPU listed twice, or several CPU backends): each
    /// gets its share of the sized figure.
    pub fn device_budget(&self, free: Option<u64>, host_budget: u64, sharing: u32) -> u64 {
        if self.device_memory_bytes > 0 {
            return self.device_memory_bytes;
        }
        let sharing = u64::from(sharing.max(1));
        match free {
            Some(f) => ((f - f * SIZED_RESERVE_PERCENT / 100).saturating_sub(DEVICE_MARGIN) / sharing).max(MIN_BUDGET),
            None => (SHARED_DEVICE_BUDGET.min(host_budget / 2) / sharing).max(MIN_BUDGET),
        }
    }

    /// The CPU fallback device's budget: `cpu_fallback_memory_bytes` when set, else sized as a
    /// CPU backend device beside `host_budget`.
    pub fn cpu_fallback_budget(&self, host_budget: u64) -> u64 {
        match self.cpu_fallback_memory_bytes {
            0 => SHARED_DEVICE_BUDGET.min(host_budget / 2).max(MIN_BUDGET),
            b => b,
        }
    }

    /// The devices after the older `cuda_device` key.
    pub fn device_selection(&self) -> DeviceSelection {
        match self.cuda_device {
            Some(d) if self.devices == DeviceSelection::All => DeviceSelection::List(vec![d]),
            _ => self.devices.clone(),
        }
    }
}

impl ServerConfig {
    /// The group id of `socket_group`, looked up in the system's group database; an error
    /// for a group that does not exist.
    pub fn socket_gid(&self) -> Result<Option<u32>, ConfigError> {
        let Some(name) = &self.socket_group else {
            return Ok(None);
        };
        group_id(name).map(Some).ok_or_else(|| {
            ConfigError::Invalid(format!("server.socket_group: no group {name:?} on this host (create it with groupadd, and add Curio's user to it)"))
        })
    }
}

/// The id of the group named `name` (a number is taken as an id), or `None` if there is none.
pub fn group_id(name: &str) -> Option<u32> {
    if let Ok(gid) = name.parse::<u32>() {
        return Some(gid);
    }
    let c_name = std::ffi::CString::new(name).ok()?;
    let mut buf = vec![0 as libc::c_char; 16 << 10];
    let mut grp: libc::group = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::group = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call; `buf` outlives `grp`'s borrowed strings,
    // and only the gid (a plain number) is read from the result.
    let rc = unsafe { libc::getgrnam_r(c_name.as_ptr(), &mut grp, buf.as_mut_ptr(), buf.len(), &mut found) };
    (rc == 0 && !found.is_null()).then_some(grp.gr_gid)
}

/// `[params]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct ParamsSection {
    /// Data directory holding `params/` (default: the CLI's data directory).
    pub data_dir: Option<PathBuf>,
    /// Generate missing parameter files for built-in circuits instead of refusing the job.
    pub generate_missing: bool,
    /// Skip curve and subgroup checks when loading (only for files you made yourself).
    pub trusted: bool,
    /// Circuits (ids like `squaring-chain-2^10`, `wpost-2k`) made resident at start.
    pub preload: Vec<String>,
    /// Filecoin parameter cache (default: `$FIL_PROOFS_PARAMETER_CACHE`, else
    /// `/var/tmp/filecoin-proof-parameters`).
    pub filecoin_dir: Option<PathBuf>,
    /// Where recorded constraint matrices are kept across restarts (default:
    /// `<data_dir>/matrices`; empty: not kept, each start records them again).
    pub matrices_dir: Option<PathBuf>,
}

/// `[bench]`: timing Filecoin proofs at sizes whose sectors and parameters are not at hand
/// (synthetic requests from `cuzk gen-vanilla --synthetic`). Never enable it in production.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct BenchSection {
    /// Bench mode: Filecoin requests are accepted without checking their vanilla proofs, the
    /// checks of their witness run but do not fail the job, and their proofs are withheld:
    /// a completed job answers COMPLETED with an empty `proof` and an `error_message` saying
    /// so. Built-in circuits are proved as usual. Logged as an error at start.
    pub enabled: bool,
    /// Where bench mode takes Filecoin parameters from.
    pub parameters: BenchParameters,
}

/// `bench.parameters`: where bench mode's Filecoin parameters come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum BenchParameters {
    /// Timing-only parameters made in memory from the recorded constraint matrices
    /// (pseudo-random points, not a real SRS); no parameter file is needed.
    #[default]
    Memory,
    /// The files in the Filecoin parameter cache, loaded as in production (e.g. written by
    /// `cuzk setup --filecoin … --timing-only`, the same file another prover reads).
    FilecoinCache,
}

/// `[faults]`: test support. Wraps every device's backend in `cuzk_faults::FaultyBackend`,
/// which fails, corrupts or delays the calls its rules name. Never enable it in production.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct FaultsSection {
    /// Inject faults (off by default; logged as an error at start when on).
    pub enabled: bool,
    /// Seed of the random triggers (device `d` uses `seed + d`).
    pub seed: u64,
    /// Rules `STAGE:ACTION[:TRIGGER]`, e.g. `"msm:corrupt:p=0.01"`, `"ntt:error:nth=3"`,
    /// `"msm:delay=5000:p=0.001"`.
    pub rules: Vec<String>,
    /// Devices whose backend is wrapped; empty: all.
    pub devices: Vec<u32>,
}

impl FaultsSection {
    /// The plan of device `d`, when faults are injected there.
    pub fn plan(&self, d: u32) -> Result<Option<cuzk_faults::FaultPlan>, ConfigError> {
        if !self.enabled || !(self.devices.is_empty() || self.devices.contains(&d)) {
            return Ok(None);
        }
        let plan =
            cuzk_faults::FaultPlan::parse(&self.rules, self.seed.wrapping_add(u64::from(d))).map_err(|e| ConfigError::Invalid(format!("faults.rules: {e}")))?;
        Ok(Some(plan))
    }
}

/// What to do with accepted work on SIGTERM/SIGINT.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ShutdownMode {
    /// Finish every accepted job (up to the timeout), then exit.
    Drain,
    /// Cancel every job not finished, then exit.
    Cancel,
}

/// `[journal]`: accepted jobs and their results on disk, so that a restart (after a crash,
/// a `kill -9` or an upgrade) takes the open jobs up again and still answers for ended ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JournalSection {
    /// Journal accepted jobs (each is written and synced before its caller hears it was
    /// accepted).
    pub enabled: bool,
    /// Where: default `<data_dir>/journal`. One daemon per journal (a lock is held).
    pub dir: Option<PathBuf>,
    /// Ended jobs' results are kept this long, s (and at most `server.keep_results` of them).
    pub retention_s: u64,
}

impl Default for JournalSection {
    fn default() -> Self {
        JournalSection { enabled: true, dir: None, retention_s: 86_400 }
    }
}

/// `[shutdown]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ShutdownSection {
    /// `drain` or `cancel`.
    pub mode: ShutdownMode,
    /// In drain mode, jobs still running after this many seconds are cancelled.
    pub timeout_s: u64,
    /// Once every job has ended, results are still served this long before the listeners
    /// close (for clients that submitted just before the shutdown).
    pub linger_ms: u64,
}

impl Default for ShutdownSection {
    fn default() -> Self {
        ShutdownSection { mode: ShutdownMode::Drain, timeout_s: 300, linger_ms: 1000 }
    }
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines (colours only when standard error is a terminal).
    Text,
    /// One JSON object per line.
    Json,
}

/// `[log]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogSection {
    /// `tracing` filter (e.g. `info`, `cuzk_daemon=debug`); `RUST_LOG` overrides.
    pub filter: String,
    /// `text` or `json`.
    pub format: LogFormat,
}

impl Default for LogSection {
    fn default() -> Self {
        LogSection { filter: "info".into(), format: LogFormat::Text }
    }
}

impl Config {
    /// Reads a TOML file: this daemon's schema, or a Curio `cuzk.toml` ([`curio::is_curio`]).
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = read_regular_file(path)?;
        let parse_err = |source| ConfigError::Parse { path: path.into(), source: Box::new(source) };
        let value: toml::Table = toml::from_str(&text).map_err(parse_err)?;
        if curio::is_curio(&value) {
            return curio::map(&text, path);
        }
        Config::parse(&text).map_err(parse_err)
    }

    /// Parses TOML text.
    pub fn parse(text: &str) -> Result<Config, toml::de::Error> {
        toml::from_str(text)
    }

    /// The bearer token, from `token` or `token_file`.
    pub fn token(&self) -> Result<Option<String>, ConfigError> {
        if let Some(t) = &self.server.token {
            return Ok(Some(t.clone()).filter(|t| !t.is_empty()));
        }
        if let Some(p) = &self.server.token_file {
            let text = read_regular_file(p)?;
            let t = text.lines().next().unwrap_or("").trim().to_string();
            return Ok(Some(t).filter(|t| !t.is_empty()));
        }
        Ok(None)
    }

    /// Checks consistency: TCP needs a token (or `tcp_insecure`), sizes are positive.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.server.socket_gid()?;
        let token = self.token()?;
        if self.server.tcp_insecure && token.is_some() {
            return Err(ConfigError::Invalid(
                "server.tcp_insecure and a token (server.token, server.token_file or --token) contradict each other: drop the token to let TCP clients in without one, or tcp_insecure to require it".into(),
            ));
        }
        if self.server.tcp.is_some() && !self.server.tcp_insecure && token.is_none() {
            return Err(ConfigError::Invalid(
                "server.tcp is set but no server.token or server.token_file: TCP needs a bearer token (or server.tcp_insecure = true for a trusted network, as Curio's client connects without credentials)".into(),
            ));
        }
        if self.server.max_request_bytes < 1024 {
            return Err(ConfigError::Invalid("server.max_request_bytes must be at least 1024".into()));
        }
        let one = crate::limits::charge(self.server.max_request_bytes);
        if self.server.request_budget_bytes > 0 && self.server.request_budget_bytes < one {
            return Err(ConfigError::Invalid(format!(
                "server.request_budget_bytes = {} cannot hold one message of server.max_request_bytes = {} (charged {one} bytes: three copies and its fields): raise it to at least {one}, or lower max_request_bytes",
                self.server.request_budget_bytes, self.server.max_request_bytes
            )));
        }
        if self.server.max_connections == 0 || self.server.http_max_connections == 0 {
            return Err(ConfigError::Invalid("server.max_connections and server.http_max_connections must be at least 1".into()));
        }
        if self.server.handshake_timeout_ms < 100 || self.server.idle_timeout_ms < 1_000 {
            return Err(ConfigError::Invalid("server.handshake_timeout_ms must be at least 100 and server.idle_timeout_ms at least 1000".into()));
        }
        if !["auto", "cpu", "cuda", "wgpu"].contains(&self.engine.backend.as_str()) {
            return Err(ConfigError::Invalid(format!("engine.backend {:?} is not one of auto, cpu, cuda, wgpu", self.engine.backend)));
        }
        if self.engine.gpu_workers == 0 || self.engine.kernel_lanes == 0 {
            return Err(ConfigError::Invalid("engine.gpu_workers and engine.kernel_lanes must be at least 1".into()));
        }
        if self.engine.cuda_device.is_some() && self.engine.devices != DeviceSelection::All {
            return Err(ConfigError::Invalid("engine.cuda_device and engine.devices are both set: keep engine.devices".into()));
        }
        if let DeviceSelection::List(l) = &self.engine.devices {
            if l.is_empty() {
                return Err(ConfigError::Invalid("engine.devices is an empty list: list at least one ordinal, or \"all\"".into()));
            }
            if self.engine.backend == "wgpu" && l.len() > 1 {
                return Err(ConfigError::Invalid("engine.backend = \"wgpu\" drives one adapter: list one device or \"all\"".into()));
            }
        }
        let limit = thread_limit();
        let e = &self.engine;
        for (key, n) in [
            ("engine.cpu_threads", e.cpu_threads),
            ("engine.synth_workers", e.synth_workers),
            ("engine.finalize_workers", e.finalize_workers),
            ("engine.gpu_workers", e.gpu_workers),
            ("engine.kernel_lanes", e.kernel_lanes),
        ] {
            if n > limit {
                return Err(ConfigError::Invalid(format!(
                    "{key} = {n} is more threads than this machine runs: at most {limit} (4 per logical CPU, at least 64)"
                )));
            }
        }
        let meminfo = e.meminfo();
        if let Some(total) = crate::meminfo::mem_total(&meminfo) {
            for (key, bytes) in [
                ("engine.host_memory_bytes", e.host_memory_bytes),
                ("engine.cpu_fallback_memory_bytes", e.cpu_fallback_memory_bytes),
                ("server.request_budget_bytes", self.server.request_budget_bytes),
            ] {
                if bytes > total {
                    return Err(ConfigError::Invalid(format!(
                        "{key} = {bytes} is more than this machine's memory: at most {total} (MemTotal of {})",
                        meminfo.display()
                    )));
                }
            }
        }
        if self.engine.queue_limit == 0 {
            return Err(ConfigError::Invalid("engine.queue_limit must be at least 1".into()));
        }
        self.faults.plan(0)?;
        for p in &self.params.preload {
            crate::circuits::CircuitShape::parse(p).map_err(|e| ConfigError::Invalid(format!("params.preload: {e}")))?;
        }
        Ok(())
    }

    /// The Filecoin parameter cache directory after defaults.
    pub fn filecoin_dir(&self) -> PathBuf {
        self.params.filecoin_dir.clone().unwrap_or_else(cuzk_circuits_filecoin::params::cache_dir)
    }

    /// The proofs checked before they are returned, after the older `verify_proofs` key.
    pub fn self_check(&self) -> SelfCheck {
        if self.engine.verify_proofs {
            SelfCheck::All
        } else {
            self.engine.self_check
        }
    }

    /// Synthesis workers after defaults.
    pub fn synth_workers(&self) -> u32 {
        if self.engine.synth_workers > 0 {
            return self.engine.synth_workers;
        }
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get() as u32);
        (cores / 2).max(1)
    }
}

/// The most threads a count in `[engine]` may ask for: 4 per logical CPU, at least 64.
pub fn thread_limit() -> u32 {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    cpus.saturating_mul(4).max(64)
}

/// A configuration or token file's text; anything but a regular file (a FIFO, a device, a
/// directory) is refused before it is opened, so reading it cannot block the start.
fn read_regular_file(path: &Path) -> Result<String, ConfigError> {
    let meta = std::fs::metadata(path).map_err(|source| ConfigError::Read { path: path.into(), source })?;
    if !meta.is_file() {
        return Err(ConfigError::Invalid(format!("{} is not a regular file", path.display())));
    }
    std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.into(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_are_sized_from_the_machine_unless_set() {
        let gib = 1u64 << 30;
        let mut e = EngineSection { host_memory_margin_bytes: gib, ..EngineSection::default() };
        assert_eq!(e.host_budget(Some(100 * gib)), 89 * gib, "90% of 100 GiB available, less the 1 GiB margin");
        assert_eq!(e.host_budget(Some(gib / 2)), gib, "at least 1 GiB");
        assert_eq!(e.host_budget(None), 16 * gib);
        assert_eq!(e.device_budget(Some(140 * gib), 89 * gib, 1), 124 * gib, "90% of the device's free memory, less 2 GiB");
        assert_eq!(e.device_budget(Some(140 * gib), 89 * gib, 2), 62 * gib, "two backends on one GPU share it");
        assert_eq!(e.device_budget(None, 89 * gib, 1), 16 * gib, "a device without memory of its own");
        assert_eq!(e.device_budget(None, 8 * gib, 1), 4 * gib, "at most half the host budget");
        assert_eq!(e.device_budget(None, 8 * gib, 2), 2 * gib, "CPU backends share the host's half");
        e.host_memory_bytes = 3 * gib;
        e.device_memory_bytes = 5 * gib;
        assert_eq!((e.host_budget(Some(100 * gib)), e.device_budget(Some(140 * gib), 3 * gib, 2)), (3 * gib, 5 * gib), "explicit values win");
    }

    #[test]
    fn devices_are_all_or_a_list_of_ordinals() {
        let parse = |t: &str| Config::parse(t).map(|c| c.engine.device_selection());
        assert_eq!(parse("").unwrap(), DeviceSelection::All);
        assert_eq!(parse("[engine]\ndevices = \"all\"").unwrap(), DeviceSelection::All);
        assert_eq!(parse("[engine]\ndevices = [1, 0]").unwrap(), DeviceSelection::List(vec![1, 0]));
        assert_eq!(parse("[engine]\ncuda_device = 2").unwrap(), DeviceSelection::List(vec![2]), "the older key");
        for bad in ["[engine]\ndevices = \"first\"", "[engine]\ndevices = [-1]", "[engine]\ndevices = 1"] {
            let e = parse(bad).expect_err(bad).to_string();
            assert!(e.contains("engine.devices"), "{bad}: {e}");
        }
        let invalid = |t: &str| Config::parse(t).unwrap().validate().expect_err(t).to_string();
        assert!(invalid("[engine]\ndevices = []").contains("empty list"));
        assert!(invalid("[engine]\ncuda_device = 0\ndevices = [1]").contains("both set"));
        assert!(invalid("[engine]\nbackend = \"wgpu\"\ndevices = [0, 1]").contains("one adapter"));
        assert_eq!("0,1".parse::<DeviceSelection>().unwrap(), DeviceSelection::List(vec![0, 1]));
        assert_eq!("all".parse::<DeviceSelection>().unwrap(), DeviceSelection::All);
        assert!("gpu0".parse::<DeviceSelection>().is_err());
    }

    #[test]
    fn self_checks_apply_by_setting_kind_and_witness() {
        use cuzk_core::circuit::WitnessCheck::{Enforce, Ignore, Trusted};
        // (setting, filecoin, witness) → checked, written out case by case.
        let table = [
            (SelfCheck::All, false, Trusted, true),
            (SelfCheck::All, true, Enforce, true),
            (SelfCheck::All, true, Ignore, false),
            (SelfCheck::Filecoin, true, Enforce, true),
            (SelfCheck::Filecoin, false, Trusted, false),
            (SelfCheck::Filecoin, true, Ignore, false),
            (SelfCheck::Off, true, Enforce, false),
            (SelfCheck::Off, false, Trusted, false),
        ];
        for (s, fil, w, want) in table {
            assert_eq!(s.applies(fil, w), want, "{s:?}, filecoin {fil}, {w:?}");
        }
    }
}
