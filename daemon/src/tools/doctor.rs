//! `cuzk doctor`: checks a host before the first job and says, in words, what is wrong and
//! what to do about it.
//!
//! Each check is a function over inputs a test can fake (a `/proc/meminfo`-format file, a
//! resource limit, a parameter directory, a data directory, a uid, the result of opening the
//! devices); only [`Host::live`] and [`probe`] read the live host, and [`run`] calls them once at
//! the top. Nothing here panics on an odd host: a missing `/proc` file, an unreadable directory
//! or a failed device open is a finding, not a crash.
//!
//! The devices are opened exactly as `cuzk serve` opens them ([`crate::devices::open`]), so a
//! CUDA device's kernels are compiled by NVRTC (or taken from the kernel cache) here as they
//! would be at the daemon's start.

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use cuzk_backend_cuda::nvrtc::NvrtcError;
use cuzk_backend_cuda::CudaError;
use cuzk_circuits_filecoin::{FilKind, FilShape};
use cuzk_core::backend::Backend;

use crate::any_backend::AnyBackend;
use crate::circuits::{self, CircuitShape};
use crate::config::{Config, EngineSection};
use crate::devices::DeviceError;
use crate::CliError;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Nothing to do.
    Ok,
    /// The daemon runs, but worse than it could, or something will bite later.
    Warn,
    /// The daemon would not start, or jobs would fail.
    Fatal,
}

impl Severity {
    fn label(self) -> &'static str {
        match self {
            Severity::Ok => "ok",
            Severity::Warn => "WARN",
            Severity::Fatal => "FATAL",
        }
    }
}

/// What a finding is about (`--json` writes these names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Check {
    /// The configuration file.
    Config,
    /// The compute devices (`engine.backend`, `engine.devices`).
    Gpu,
    /// The NVIDIA driver (`libcuda`).
    CudaDriver,
    /// NVRTC, which compiles the CUDA kernels at a device's first open.
    Nvrtc,
    /// `RLIMIT_MEMLOCK` against the page-locked host memory the CUDA backend may hold.
    Memlock,
    /// `RLIMIT_NOFILE` against the connections the listeners may hold.
    OpenFiles,
    /// `MemTotal`/`MemAvailable` against the host budget and the preloaded circuits.
    HostMemory,
    /// The parameter files of the preloaded circuits.
    Params,
    /// The parameter files present in the Filecoin parameter cache and the data directory.
    ParamsCache,
    /// Validation records of the parameter files.
    Validation,
    /// The data directory.
    DataDir,
    /// The journal's directory.
    Journal,
    /// The recorded-matrices directory.
    Matrices,
    /// Free disk space where the daemon writes.
    Disk,
    /// The gRPC unix socket.
    Socket,
    /// The TCP addresses (gRPC `server.tcp`, HTTP `server.http`).
    Ports,
}

impl Check {
    /// The name `--json` and the text output use.
    pub fn name(self) -> &'static str {
        match self {
            Check::Config => "config",
            Check::Gpu => "gpu",
            Check::CudaDriver => "cuda-driver",
            Check::Nvrtc => "nvrtc",
            Check::Memlock => "memlock",
            Check::OpenFiles => "open-files",
            Check::HostMemory => "host-memory",
            Check::Params => "params",
            Check::ParamsCache => "params-cache",
            Check::Validation => "validation",
            Check::DataDir => "data-dir",
            Check::Journal => "journal",
            Check::Matrices => "matrices",
            Check::Disk => "disk",
            Check::Socket => "socket",
            Check::Ports => "ports",
        }
    }
}

/// One thing found: what it is about, how bad, what it is in plain words, and what to do
/// (empty when nothing is to be done).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// What it is about.
    pub check: Check,
    /// How bad it is.
    pub severity: Severity,
    /// One line, in plain words.
    pub message: String,
    /// What to do; empty for an `ok` finding with nothing to do.
    pub fix: String,
}

impl Finding {
    fn new(check: Check, severity: Severity, message: impl Into<String>, fix: impl Into<String>) -> Finding {
        Finding { check, severity, message: message.into(), fix: fix.into() }
    }

    fn ok(check: Check, message: impl Into<String>) -> Finding {
        Finding::new(check, Severity::Ok, message, "")
    }

    fn warn(check: Check, message: impl Into<String>, fix: impl Into<String>) -> Finding {
        Finding::new(check, Severity::Warn, message, fix)
    }

    fn fatal(check: Check, message: impl Into<String>, fix: impl Into<String>) -> Finding {
        Finding::new(check, Severity::Fatal, message, fix)
    }
}

/// Bytes as a person reads them: `47.2 GiB`, `8.0 MiB`, `512 B` (as the status page shows them).
pub fn size(bytes: u64) -> String {
    crate::server::status::human_bytes(bytes)
}

/// A resource limit (`getrlimit`); `None` is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rlimit {
    /// The soft limit, what the process gets now.
    pub soft: Option<u64>,
    /// The hard limit, what the process may raise its soft limit to.
    pub hard: Option<u64>,
}

fn limit_text(l: Option<u64>, unit: impl Fn(u64) -> String) -> String {
    l.map_or_else(|| "unlimited".to_string(), unit)
}

/// `getrlimit` of a resource (`libc::RLIMIT_*`); `None` when it fails.
macro_rules! read_rlimit {
    ($resource:expr) => {{
        let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit writes only the struct passed.
        if unsafe { libc::getrlimit($resource, &mut r) } != 0 {
            None
        } else {
            let v = |x: libc::rlim_t| (x != libc::RLIM_INFINITY).then_some(x as u64);
            Some(Rlimit { soft: v(r.rlim_cur), hard: v(r.rlim_max) })
        }
    }};
}

/// What [`run`] reads from the live host besides the devices; tests build their own.
#[derive(Debug, Clone)]
pub struct Host {
    /// A `/proc/meminfo`-format file.
    pub meminfo: PathBuf,
    /// A `/proc/driver/nvidia/version`-format file (the NVIDIA kernel module's version).
    pub nvidia_version: PathBuf,
    /// `RLIMIT_MEMLOCK`; `None` when it could not be read.
    pub memlock: Option<Rlimit>,
    /// `RLIMIT_NOFILE`; `None` when it could not be read.
    pub nofile: Option<Rlimit>,
    /// The user the daemon would run as (the effective uid of this process).
    pub uid: u32,
}

impl Host {
    /// This host: `/proc/meminfo` (or `engine`'s test setting), the limits of this process,
    /// its effective uid.
    pub fn live(engine: &EngineSection) -> Host {
        // SAFETY: geteuid cannot fail.
        let uid = unsafe { libc::geteuid() };
        Host {
            meminfo: engine.meminfo(),
            nvidia_version: "/proc/driver/nvidia/version".into(),
            memlock: read_rlimit!(libc::RLIMIT_MEMLOCK),
            nofile: read_rlimit!(libc::RLIMIT_NOFILE),
            uid,
        }
    }
}

/// A compute device as `cuzk serve` would open it.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceInfo {
    /// The ordinal it drives (a CUDA ordinal; 0 for the CPU and wgpu).
    pub ordinal: u32,
    /// The backend's name (`cuda:0 NVIDIA H200`, `cpu`, a wgpu adapter).
    pub name: String,
    /// Free device memory at the open; `None` for a backend with no memory of its own (CPU).
    pub free_bytes: Option<u64>,
    /// For a CUDA device: its kernels (compiled by NVRTC or taken from the cache).
    pub kernels: Option<KernelInfo>,
}

/// How a CUDA device's kernels were made ready at its open.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelInfo {
    /// Taken from the on-disk kernel cache (else compiled by NVRTC now).
    pub cached: bool,
    /// Seconds spent compiling or loading.
    pub seconds: f64,
    /// The `#define`s the kernels were built with.
    pub defines: Vec<String>,
}

/// What opening the configured devices gave.
#[derive(Debug)]
pub enum Opened {
    /// The devices, engine device `i` first. CPU backends when `auto` found no CUDA device.
    Devices(Vec<DeviceInfo>),
    /// Opening failed as `cuzk serve` would fail.
    Failed(DeviceError),
}

/// The GPU side of the host: the driver, NVRTC and the configured devices opened.
#[derive(Debug)]
pub struct DeviceProbe {
    /// Whether `libcuda` loads.
    pub driver: bool,
    /// The NVIDIA kernel module's version line, when there is one.
    pub driver_version: Option<String>,
    /// CUDA devices the driver reports.
    pub cuda_devices: usize,
    /// NVRTC: its version and path, or why it could not be loaded.
    pub nvrtc: Result<String, String>,
    /// The configured devices, opened.
    pub opened: Opened,
}

/// The first line of a `/proc/driver/nvidia/version`-format file, trimmed.
pub fn nvidia_version(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().next()?.trim();
    // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 ..."
    let short = line.split("Kernel Module").nth(1).and_then(|r| r.split_whitespace().next()).map(|v| format!("NVIDIA kernel module {v}"));
    Some(short.unwrap_or_else(|| line.to_string()))
}

/// The libraries tried, from an [`NvrtcError::NotFound`]'s text: after the first failed load
/// NVRTC reports the whole earlier message as what it tried.
fn tried(t: &str) -> &str {
    let mut t = t;
    while let Some(inner) = t.strip_prefix("NVRTC not found (tried ").and_then(|r| r.strip_suffix("); set CUZK_NVRTC_LIB to its path")) {
        t = inner;
    }
    t
}

/// Opens the configured devices as `cuzk serve` does (`engine.backend`, `engine.devices`) and
/// reads what is known about the driver and NVRTC. A CUDA device's kernels are compiled by
/// NVRTC at its open (or taken from the kernel cache), as at the daemon's start. The devices
/// are closed again before this returns.
pub fn probe(cfg: &Config, nvidia_version_file: &Path) -> DeviceProbe {
    let driver = cuzk_backend_cuda::device::driver_present();
    let cuda_devices = cuzk_backend_cuda::device::device_count();
    let nvrtc = cuzk_backend_cuda::nvrtc::version().map(|((major, minor), path)| format!("{major}.{minor} ({path})")).map_err(|e| match e {
        NvrtcError::NotFound(t) => NvrtcError::NotFound(tried(&t).to_string()).to_string(),
        e => e.to_string(),
    });
    let opened = match crate::devices::open(&cfg.engine.backend, &cfg.engine.device_selection()) {
        Err(e) => Opened::Failed(e),
        Ok(d) => Opened::Devices(
            d.backends
                .iter()
                .zip(&d.ordinals)
                .map(|(b, &ordinal)| DeviceInfo {
                    ordinal,
                    name: b.name(),
                    free_bytes: b.free_memory(),
                    kernels: match b {
                        AnyBackend::Cuda(c) => {
                            let (cached, seconds) = c.module_info();
                            Some(KernelInfo { cached, seconds, defines: c.kernel_defines().to_vec() })
                        }
                        _ => None,
                    },
                })
                .collect(),
        ),
    };
    DeviceProbe { driver, driver_version: nvidia_version(nvidia_version_file), cuda_devices, nvrtc, opened }
}

/// What `cuzk serve` would size from this host: the host budget and its parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budgets {
    /// `MemTotal`, when readable.
    pub total: Option<u64>,
    /// `MemAvailable`, when readable.
    pub available: Option<u64>,
    /// The whole host budget (`engine.host_memory_bytes`, or sized from `MemAvailable`).
    pub whole: u64,
    /// Its part for request bytes in flight (`server.request_budget_bytes`).
    pub requests: u64,
    /// What the engine gets: synthesized partitions, warm parameters, loads in flight. The
    /// CUDA backend's pinned pool serves these buffers, so this is also what it may hold.
    pub engine: u64,
}

/// The budgets as the daemon's start sizes them (`server::engine_config`: the request budget
/// out of the host budget, the engine keeping at least half).
pub fn budgets(cfg: &Config, meminfo: &Path) -> Budgets {
    let available = crate::meminfo::mem_available(meminfo);
    let total = crate::meminfo::mem_total(meminfo);
    let whole = cfg.engine.host_budget(available);
    let requests = cfg.server.request_budget(whole);
    let engine = whole.saturating_sub(requests).max(whole / 2);
    Budgets { total, available, whole, requests, engine }
}

/// The configuration: a file that cannot be read or parsed, or one `cuzk serve` would refuse.
pub fn config_findings(path: Option<&Path>, loaded: &Result<Config, String>) -> Vec<Finding> {
    let name = path.map_or_else(|| "no configuration file (--config): the defaults".to_string(), |p| p.display().to_string());
    match loaded {
        Err(e) => vec![Finding::fatal(
            Check::Config,
            format!("{e}; the other checks use the defaults"),
            "fix the file (docs/daemon.md, \"Configuration\", lists every key)",
        )],
        Ok(cfg) => {
            let mut out = vec![];
            match cfg.validate() {
                Ok(()) => out.push(Finding::ok(Check::Config, format!("{name}: valid"))),
                Err(e) => out.push(Finding::fatal(Check::Config, format!("{name}: cuzk serve would refuse it: {e}"), "change the setting the message names")),
            }
            for n in &cfg.notes {
                out.push(Finding::warn(Check::Config, n.clone(), "drop the key, or set its cuzk equivalent (docs/daemon.md, \"Running behind Curio\")"));
            }
            if cfg.bench.enabled {
                out.push(Finding::warn(
                    Check::Config,
                    "bench mode is on ([bench] enabled): Filecoin requests are not checked and their proofs are withheld",
                    "never point Curio at this daemon; set [bench] enabled = false for production",
                ));
            }
            if cfg.faults.enabled {
                out.push(Finding::warn(
                    Check::Config,
                    "fault injection is on ([faults] enabled): backend calls fail on purpose",
                    "set [faults] enabled = false for production",
                ));
            }
            out
        }
    }
}

const NVRTC_FIX: &str = "install NVRTC from a CUDA toolkit that knows this GPU (Debian/Ubuntu: libnvrtc11.2 for CUDA 11.8, or NVIDIA's cuda-nvrtc-12-x / -13-x packages), or set CUZK_NVRTC_LIB to the library's path";

/// The finding an error of opening the configured devices gives, by what it says about the
/// host: NVRTC missing or unable to compile, the driver refusing, a device absent.
pub fn open_error(e: &DeviceError) -> Finding {
    match e {
        DeviceError::Open { ordinal, source } => match source {
            CudaError::Nvrtc(NvrtcError::NotFound(t)) => Finding::fatal(
                Check::Nvrtc,
                format!(
                    "NVRTC is not installed, so the kernels of CUDA device {ordinal} cannot be compiled and cuzk serve cannot open it (tried {})",
                    tried(t)
                ),
                NVRTC_FIX,
            ),
            CudaError::Nvrtc(NvrtcError::Symbol(sym, why)) => Finding::fatal(
                Check::Nvrtc,
                format!("the NVRTC library found lacks {sym} ({why}): it is too old or not NVRTC, so the kernels of CUDA device {ordinal} cannot be compiled"),
                NVRTC_FIX,
            ),
            CudaError::Nvrtc(NvrtcError::Compile { arch, log }) => {
                let first = log.lines().find(|l| l.contains("error")).or_else(|| log.lines().next()).unwrap_or("").trim();
                Finding::fatal(
                    Check::Nvrtc,
                    format!("NVRTC cannot compile the kernels for CUDA device {ordinal} ({arch}): {first}"),
                    format!("use an NVRTC that supports {arch} (a CUDA toolkit as new as the GPU: CUDA 11.8 or later for sm_90): {NVRTC_FIX}"),
                )
            }
            CudaError::Nvrtc(other) => Finding::fatal(Check::Nvrtc, format!("NVRTC failed for CUDA device {ordinal}: {other}"), NVRTC_FIX),
            CudaError::OutOfMemory(what) => Finding::fatal(
                Check::Gpu,
                format!("CUDA device {ordinal} has no memory left to open it ({what})"),
                "another process holds the GPU's memory: find it with nvidia-smi and stop it",
            ),
            CudaError::Unavailable(why) => Finding::fatal(
                Check::Gpu,
                format!("CUDA device {ordinal} is unavailable: {why}"),
                "check the GPU with nvidia-smi; after a driver upgrade, reboot (or reload the nvidia kernel module)",
            ),
            other => Finding::fatal(
                Check::Gpu,
                format!("the CUDA driver refused to open device {ordinal}: {other}"),
                "check the GPU with nvidia-smi (a driver and kernel module of different versions after an upgrade need a reboot; a GPU in exclusive-process mode may be taken by another process)",
            ),
        },
        DeviceError::NoCuda(why) => Finding::fatal(
            Check::Gpu,
            format!("engine.backend = \"cuda\" but this host has no usable CUDA GPU ({why}): cuzk serve would refuse to start"),
            "install the NVIDIA driver and check the GPU with nvidia-smi, or set engine.backend = \"auto\" to prove on the CPU (slowly) without one",
        ),
        DeviceError::NoSuchDevice { .. } => Finding::fatal(Check::Gpu, e.to_string(), "list only ordinals nvidia-smi shows in engine.devices, or use devices = \"all\""),
        DeviceError::NoWgpu(_) => Finding::fatal(Check::Gpu, e.to_string(), "install the Vulkan driver of the GPU, or set engine.backend = \"auto\""),
        DeviceError::UnknownBackend(_) => Finding::fatal(Check::Gpu, e.to_string(), "set engine.backend to auto, cpu, cuda or wgpu"),
    }
}

/// The devices, the driver and NVRTC, from what opening the configured devices gave.
///
/// Without a GPU: a warning when the backend is `auto` or `cpu` (the CPU backend proves every
/// kind, slowly), fatal when it is `cuda` (the daemon would not start).
pub fn device_findings(backend: &str, probe: &DeviceProbe) -> Vec<Finding> {
    let mut out = Vec::new();
    let cuda_wanted = backend == "cuda" || backend == "auto";
    let gpus_used = matches!(&probe.opened, Opened::Devices(d) if d.iter().any(|d| d.kernels.is_some()));
    let driver_text = probe.driver_version.clone().unwrap_or_else(|| "libcuda loads".to_string());
    // The driver.
    if probe.driver {
        out.push(Finding::ok(Check::CudaDriver, format!("NVIDIA driver found ({driver_text}); it reports {} CUDA device(s)", probe.cuda_devices)));
    } else if backend == "cuda" {
        out.push(Finding::fatal(
            Check::CudaDriver,
            "the NVIDIA driver's libcuda.so.1 cannot be loaded, and engine.backend = \"cuda\" needs it",
            "install the NVIDIA driver (check with nvidia-smi); in a container, run it with the NVIDIA container toolkit (--gpus all)",
        ));
    } else {
        out.push(Finding::warn(
            Check::CudaDriver,
            "no NVIDIA driver: libcuda.so.1 cannot be loaded",
            "on a GPU host, install the NVIDIA driver (check with nvidia-smi); in a container, run it with the NVIDIA container toolkit (--gpus all)",
        ));
    }
    // The devices.
    match &probe.opened {
        Opened::Failed(e) => out.push(open_error(e)),
        Opened::Devices(devices) if gpus_used => {
            for d in devices {
                let free = d.free_bytes.map_or_else(|| "free memory unknown".to_string(), |f| format!("{} free", size(f)));
                let kernels = match &d.kernels {
                    Some(k) if k.cached => format!("kernels loaded from the kernel cache in {:.1} s", k.seconds),
                    Some(k) => format!("kernels compiled by NVRTC in {:.1} s (cached for the next start)", k.seconds),
                    None => String::new(),
                };
                let defines =
                    d.kernels.as_ref().filter(|k| !k.defines.is_empty()).map_or_else(String::new, |k| format!(", built with {}", k.defines.join(",")));
                out.push(Finding::ok(Check::Gpu, format!("CUDA device {}: {}, {free}; {kernels}{defines}", d.ordinal, d.name)));
            }
        }
        Opened::Devices(devices) => {
            let what = devices.iter().map(|d| d.name.clone()).collect::<Vec<_>>().join(", ");
            if backend == "cpu" && probe.cuda_devices > 0 {
                out.push(Finding::warn(
                    Check::Gpu,
                    format!("engine.backend = \"cpu\": the {} CUDA GPU(s) here stay idle and proofs run on the CPU ({what})", probe.cuda_devices),
                    "set engine.backend = \"auto\" (or \"cuda\") to prove on the GPUs",
                ));
            } else if backend == "wgpu" {
                out.push(Finding::ok(Check::Gpu, format!("wgpu adapter: {what}")));
            } else {
                let why = if probe.driver { "the driver reports none" } else { "no NVIDIA driver" };
                out.push(Finding::warn(
                    Check::Gpu,
                    format!("no CUDA GPU ({why}): cuzk serve would prove on the CPU backend ({what}), which proves every kind, correctly, but minutes per 32 GiB partition where a GPU takes seconds"),
                    "on a GPU host: install the NVIDIA driver and check the GPU with nvidia-smi; without one, the CPU backend only suits tests and small sectors",
                ));
            }
        }
    }
    // NVRTC (the open already reported a failure to compile).
    let reported = out.iter().any(|f| f.check == Check::Nvrtc);
    if !reported {
        match &probe.nvrtc {
            Ok(v) if gpus_used => out.push(Finding::ok(Check::Nvrtc, format!("NVRTC {v} compiled the kernels of every device above"))),
            Ok(v) => out.push(Finding::ok(
                Check::Nvrtc,
                format!("NVRTC {v} found; it compiles the kernels at a GPU's first open (nothing to compile for without one)"),
            )),
            Err(e) if probe.cuda_devices > 0 && cuda_wanted => {
                out.push(Finding::fatal(Check::Nvrtc, format!("{e}: the CUDA kernels cannot be compiled"), NVRTC_FIX))
            }
            Err(e) if cuda_wanted => {
                out.push(Finding::warn(Check::Nvrtc, format!("{e}: the CUDA kernels could not be compiled once a GPU is present"), NVRTC_FIX))
            }
            Err(e) => out.push(Finding::ok(Check::Nvrtc, format!("not needed by engine.backend = \"{backend}\" ({e})"))),
        }
    }
    out
}

/// `RLIMIT_MEMLOCK` against the page-locked host memory the CUDA backend's pinned pool may
/// hold (`pinned_pool`: the engine's host budget, whose buffers it serves; `None` when no CUDA
/// device is driven, and nothing is pinned). A warning, never fatal: whether the driver's
/// page-locked allocations are charged to this limit depends on the driver and the
/// environment, and raising it removes the doubt.
pub fn memlock(limit: Option<Rlimit>, pinned_pool: Option<u64>) -> Finding {
    const FIX: &str = "raise it for the daemon's user: LimitMEMLOCK=infinity in its systemd unit, or `memlock unlimited` in /etc/security/limits.conf (ulimit -l unlimited in a shell); in Docker, --ulimit memlock=-1";
    let Some(l) = limit else {
        return Finding::warn(Check::Memlock, "the locked-memory limit (RLIMIT_MEMLOCK) could not be read", FIX);
    };
    let now = limit_text(l.soft, size);
    let Some(pool) = pinned_pool else {
        return Finding::ok(Check::Memlock, format!("locked-memory limit {now}; no CUDA device is driven, so no page-locked pool is needed"));
    };
    match l.soft {
        Some(soft) if soft < pool => {
            let hard = match l.hard {
                Some(h) if h <= soft => String::new(),
                h => format!(" (the hard limit, {}, allows more)", limit_text(h, size)),
            };
            Finding::warn(
                Check::Memlock,
                format!(
                    "the locked-memory limit (RLIMIT_MEMLOCK) is {now}{hard}, below the {} of page-locked host memory the CUDA backend's pinned pool may hold (the engine's host budget): where the limit is enforced, pinned allocations fail and partitions are retried as device faults",
                    size(pool)
                ),
                FIX,
            )
        }
        _ => Finding::ok(Check::Memlock, format!("locked-memory limit {now}, enough for the pinned pool (up to {})", size(pool))),
    }
}

/// Descriptors the daemon keeps for its own files beside the listeners' connections (the
/// margin `cuzk serve` warns with).
const OWN_FILES: u64 = 256;

/// Connections the configured listeners may hold at once, plus the daemon's own files.
pub fn files_needed(cfg: &Config) -> u64 {
    let socket = !matches!(&cfg.server.socket, Some(p) if p.as_os_str().is_empty());
    let grpc = u64::from(socket) + u64::from(cfg.server.tcp.is_some());
    let http = u64::from(!cfg.server.http.trim().is_empty());
    grpc * cfg.server.max_connections as u64 + http * cfg.server.http_max_connections as u64 + OWN_FILES
}

/// `RLIMIT_NOFILE` against what the listeners may hold (`needed`, [`files_needed`]). The
/// daemon raises its soft limit to the hard one at start, so the hard limit counts.
pub fn open_files(limit: Option<Rlimit>, needed: u64) -> Finding {
    const FIX: &str = "raise it: LimitNOFILE=65536 in the daemon's systemd unit (nofile in /etc/security/limits.conf), or lower server.max_connections";
    let Some(l) = limit else {
        return Finding::warn(Check::OpenFiles, "the open-file limit (RLIMIT_NOFILE) could not be read", FIX);
    };
    match l.hard {
        Some(hard) if hard < needed => Finding::warn(
            Check::OpenFiles,
            format!(
                "the open-file limit is {hard} (hard; the daemon raises its soft limit to it), below the {needed} the listeners' connection caps and the daemon's own {OWN_FILES} files may take: under a flood, accepts back off"
            ),
            FIX,
        ),
        h => Finding::ok(Check::OpenFiles, format!("open-file limit {} (hard), enough for the listeners' {needed}", limit_text(h, |n| n.to_string()))),
    }
}

/// `MemTotal` and `MemAvailable` against the configured budgets.
pub fn host_memory(cfg: &Config, meminfo: &Path, b: &Budgets) -> Vec<Finding> {
    let e = &cfg.engine;
    let mut out = Vec::new();
    let (Some(total), Some(available)) = (b.total, b.available) else {
        let fix = if e.host_memory_bytes == 0 { "set engine.host_memory_bytes to what the daemon may use" } else { "" };
        out.push(Finding::warn(
            Check::HostMemory,
            format!(
                "MemTotal/MemAvailable cannot be read from {}: the host budget is {} ({}), and the low-memory hold of synthesis cannot work",
                meminfo.display(),
                size(b.whole),
                if e.host_memory_bytes > 0 { "engine.host_memory_bytes" } else { "the default when the memory is unknown" }
            ),
            fix,
        ));
        return out;
    };
    if e.host_memory_bytes > total {
        out.push(Finding::fatal(
            Check::HostMemory,
            format!("engine.host_memory_bytes = {} is more than this machine's {} of memory: cuzk serve refuses it", size(e.host_memory_bytes), size(total)),
            "lower engine.host_memory_bytes (0 sizes it from MemAvailable)",
        ));
        return out;
    }
    if e.host_memory_bytes > available {
        out.push(Finding::warn(
            Check::HostMemory,
            format!(
                "engine.host_memory_bytes = {} is more than the {} available now (of {}): once the budget fills, the kernel may kill the daemon or what runs beside it",
                size(e.host_memory_bytes),
                size(available),
                size(total)
            ),
            "lower engine.host_memory_bytes, or free memory before starting (sealing workers on the same host count)",
        ));
    }
    if e.host_memory_margin_bytes > 0 && available < e.host_memory_margin_bytes {
        out.push(Finding::warn(
            Check::HostMemory,
            format!(
                "only {} is available, below engine.host_memory_margin_bytes = {}: non-CRITICAL synthesis would wait from the start",
                size(available),
                size(e.host_memory_margin_bytes)
            ),
            "free memory on the host, or lower engine.host_memory_margin_bytes",
        ));
    }
    let how = if e.host_memory_bytes > 0 {
        "engine.host_memory_bytes".to_string()
    } else {
        format!("sized: 90% of MemAvailable less the {} margin", size(e.host_memory_margin_bytes))
    };
    out.push(Finding::ok(
        Check::HostMemory,
        format!(
            "MemTotal {}, MemAvailable {}; host budget {} ({how}): {} for requests in flight, {} for the engine",
            size(total),
            size(available),
            size(b.whole),
            size(b.requests),
            size(b.engine)
        ),
    ));
    out
}

/// The Filecoin circuit with the largest parameter file in the cache `fil_dir` (the one its
/// jobs would need the most host memory to load), by its id.
pub fn largest_in_cache(fil_dir: &Path) -> Option<String> {
    let names = filecoin_names();
    let files = params_files(fil_dir)?;
    files
        .iter()
        .filter_map(|(p, len)| {
            let file = p.file_name()?.to_string_lossy().into_owned();
            names.iter().find(|(n, _)| *n == file).map(|(_, s)| (*len, s.id()))
        })
        .max()
        .map(|(_, id)| id)
}

/// What the circuits need of the host budget, against `b.engine`: each preloaded circuit whose
/// file is present, and the Filecoin circuit with the largest file in the parameter cache
/// ([`largest_in_cache`]; its jobs load it when they come). `device_budget` is what a
/// circuit's parameters and one partition must fit on the largest device to stay resident
/// there (else they are streamed from page-locked host memory); `witness_only` when the
/// devices evaluate `a, b, c` themselves (CUDA).
pub fn preload_fit(cfg: &Config, data_dir: &Path, b: &Budgets, device_budget: u64, witness_only: bool) -> Vec<Finding> {
    let fil_dir = cfg.filecoin_dir();
    let mut out = Vec::new();
    let mut ids: Vec<String> = cfg.params.preload.clone();
    if let Some(largest) = largest_in_cache(&fil_dir).filter(|l| !ids.contains(l)) {
        ids.push(largest);
    }
    for name in &ids {
        let Ok(shape) = CircuitShape::parse(name) else { continue };
        let preloaded = cfg.params.preload.contains(name);
        let id = if preloaded { name.clone() } else { format!("{name} (the largest circuit in the parameter cache)") };
        let Some(path) = circuits::shape_params_path(data_dir, &fil_dir, shape) else { continue };
        let Ok(meta) = std::fs::metadata(&path) else { continue };
        let Some(layout) = circuits::params_layout(&path) else { continue };
        let log_size = match shape {
            CircuitShape::Generic(s) => s.log_size,
            CircuitShape::Filecoin(_) => match circuits::params_log_size(&layout) {
                Some(l) => l,
                None => continue,
            },
        };
        let file = meta.len();
        let p = circuits::profile(log_size, file, layout.largest_query_bytes(), witness_only, device_budget);
        let partition = p.witness_footprint.unwrap_or(p.footprint).host();
        let streamed = p.params_device_host_bytes > 0;
        if p.load_host_bytes > b.engine {
            out.push(Finding::fatal(
                Check::HostMemory,
                format!(
                    "{id} can never be loaded: a load holds its largest query ({}) in host memory, more than the engine's host budget ({})",
                    size(p.load_host_bytes),
                    size(b.engine)
                ),
                if preloaded {
                    "raise engine.host_memory_bytes (or free memory), or drop it from params.preload"
                } else {
                    "raise engine.host_memory_bytes (or free memory): its jobs fail until then"
                },
            ));
        } else if streamed && p.params_device_host_bytes.saturating_add(partition) > b.engine {
            out.push(Finding::fatal(
                Check::HostMemory,
                format!(
                    "{id}'s jobs would be refused: its parameters ({}) do not fit the device budget ({}) and are streamed from page-locked host memory, which with one partition ({}) is more than the engine's host budget ({})",
                    size(file),
                    size(device_budget),
                    size(partition),
                    size(b.engine)
                ),
                "raise engine.host_memory_bytes, or prove it on a GPU with more memory",
            ));
        } else if file.saturating_add(partition) > b.engine {
            out.push(Finding::warn(
                Check::HostMemory,
                format!(
                    "{id}: its parameters ({}) and one partition ({}) do not fit the engine's host budget ({}) together: no warm copy stays in host memory, so every load of it reads the file again",
                    size(file),
                    size(partition),
                    size(b.engine)
                ),
                "raise engine.host_memory_bytes if the host has the memory",
            ));
        } else {
            let how = if streamed { "streamed from page-locked host memory (too large for the device budget)" } else { "resident on the device" };
            out.push(Finding::ok(
                Check::HostMemory,
                format!(
                    "{id}: parameters {}, largest query {}, one partition about {} on the host: fit the engine's host budget ({}); {how}",
                    size(file),
                    size(p.load_host_bytes),
                    size(partition),
                    size(b.engine)
                ),
            ));
        }
    }
    out
}

/// What a parameter file's validation record says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// `params.trusted`: no validation, no record.
    Trusted,
    /// A record for this path and length (its checksum is compared at the load).
    Present,
    /// A record for another length: the file changed since it was validated.
    Stale,
    /// No record.
    Missing,
    /// The record or the file's canonical path could not be read.
    Unreadable(String),
}

/// The validation record of the parameter file at `path` in `records` (`<data_dir>/validated`,
/// named by [`cuzk_worker::params::record_path`]); only its path and length are compared (the
/// checksum over the whole file is the load's job: seconds to minutes for large files).
pub fn record(records: &Path, path: &Path, trusted: bool) -> Record {
    if trusted {
        return Record::Trusted;
    }
    let canonical = match std::fs::canonicalize(path) {
        Ok(c) => c,
        Err(e) => return Record::Unreadable(format!("{}: {e}", path.display())),
    };
    let len = match std::fs::metadata(&canonical) {
        Ok(m) => m.len(),
        Err(e) => return Record::Unreadable(format!("{}: {e}", path.display())),
    };
    let file = cuzk_worker::params::record_path(records, &canonical);
    match std::fs::read_to_string(&file) {
        Ok(text) => {
            let field = |key: &str| text.lines().find_map(|l| l.strip_prefix(key)).map(str::to_string);
            let same_path = field("path ").is_some_and(|p| Path::new(&p) == canonical);
            let same_len = field("len ").and_then(|l| l.parse::<u64>().ok()) == Some(len);
            if same_path && same_len {
                Record::Present
            } else {
                Record::Stale
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Record::Missing,
        Err(e) => Record::Unreadable(format!("{}: {e}", file.display())),
    }
}

fn record_word(r: &Record) -> &'static str {
    match r {
        Record::Trusted => "trusted",
        Record::Present => "validated",
        Record::Stale => "changed since validated",
        Record::Missing => "not validated yet",
        Record::Unreadable(_) => "record unreadable",
    }
}

/// Every Filecoin circuit this build knows, by the file name of its parameters.
fn filecoin_names() -> Vec<(String, FilShape)> {
    let mut out = Vec::new();
    for size in [1u64 << 11, 1 << 23, 1 << 29, 1 << 35, 1 << 36] {
        for kind in FilKind::ALL {
            let Ok(shape) = FilShape::new(kind, size) else { continue };
            if let Ok(f) = cuzk_circuits_filecoin::params::files(Path::new(""), shape) {
                if let Some(name) = f.params.file_name() {
                    out.push((name.to_string_lossy().into_owned(), shape));
                }
            }
        }
    }
    out
}

/// `*.params` files in `dir` with their sizes, sorted by name; `None` when `dir` cannot be read.
fn params_files(dir: &Path) -> Option<Vec<(PathBuf, u64)>> {
    let rd = std::fs::read_dir(dir).ok()?;
    let mut v: Vec<(PathBuf, u64)> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "params"))
        .filter_map(|p| std::fs::metadata(&p).ok().filter(|m| m.is_file()).map(|m| (p, m.len())))
        .collect();
    v.sort();
    Some(v)
}

/// The preloaded circuits' parameter files (present, valid, validated) and a list of what the
/// Filecoin parameter cache and the data directory hold.
pub fn params(cfg: &Config, data_dir: &Path) -> Vec<Finding> {
    let fil_dir = cfg.filecoin_dir();
    let records = crate::setup::validation_records(data_dir);
    let trusted = cfg.params.trusted;
    let mut out = Vec::new();
    // The preloaded circuits.
    if cfg.params.preload.is_empty() {
        out.push(Finding::ok(Check::Params, "no circuit is preloaded (params.preload = []): each circuit's parameters load at its first job"));
    }
    for id in &cfg.params.preload {
        let shape = match CircuitShape::parse(id) {
            Ok(s) => s,
            Err(e) => {
                out.push(Finding::fatal(
                    Check::Params,
                    format!("params.preload {id:?}: {e}"),
                    "use circuit ids such as wpost-32g, porep-32g, squaring-chain-2^10",
                ));
                continue;
            }
        };
        let Some(path) = circuits::shape_params_path(data_dir, &fil_dir, shape) else {
            out.push(Finding::fatal(Check::Params, format!("{id}: no parameter file name is known for it"), "drop it from params.preload"));
            continue;
        };
        let setup = match shape {
            CircuitShape::Generic(s) => format!("run `cuzk setup --circuit {} --log-size {}`", s.name(), s.log_size),
            CircuitShape::Filecoin(_) => format!(
                "put Filecoin's parameter files in {} (Curio fetches them with `curio fetch-params <sector size>`), or point params.filecoin_dir at the cache that holds them",
                fil_dir.display()
            ),
        };
        match std::fs::metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                match shape {
                    CircuitShape::Generic(_) if cfg.params.generate_missing => out.push(Finding::warn(
                        Check::Params,
                        format!("{id} is preloaded but its parameter file {} is missing: it is generated at its first job (slow)", path.display()),
                        setup,
                    )),
                    _ => out.push(Finding::fatal(
                        Check::Params,
                        format!(
                            "{id} is preloaded but its parameter file {} is missing: the preload fails and its jobs are refused (FAILED_PRECONDITION)",
                            path.display()
                        ),
                        setup,
                    )),
                }
                continue;
            }
            Err(e) => {
                out.push(Finding::fatal(Check::Params, format!("{id}: {} cannot be read: {e}", path.display()), "give the daemon's user read access to it"));
                continue;
            }
            Ok(m) if !m.is_file() => {
                out.push(Finding::fatal(Check::Params, format!("{id}: {} is not a regular file", path.display()), setup));
                continue;
            }
            Ok(m) => {
                if circuits::params_layout(&path).is_none() {
                    out.push(Finding::fatal(
                        Check::Params,
                        format!("{id}: {} ({}) is not a readable parameter file (truncated, or another format)", path.display(), size(m.len())),
                        format!("replace it: {setup}"),
                    ));
                    continue;
                }
                out.push(Finding::ok(Check::Params, format!("{id}: {} ({})", path.display(), size(m.len()))));
            }
        }
        match record(&records, &path, trusted) {
            Record::Trusted => out.push(Finding::ok(Check::Validation, format!("{id}: params.trusted: loaded without point checks"))),
            Record::Present => out.push(Finding::ok(Check::Validation, format!("{id}: validated in full before (record in {}): loads skip the point checks", records.display()))),
            Record::Missing => out.push(Finding::ok(
                Check::Validation,
                format!("{id}: not validated yet: the preload at start checks every point (minutes for a 32 GiB circuit), records it, and later loads skip the checks"),
            )),
            Record::Stale => out.push(Finding::warn(
                Check::Validation,
                format!("{id}: the file's length changed since it was validated: it is validated in full again at its load (minutes for a 32 GiB circuit)"),
                "if nobody replaced it on purpose, compare it with the checksums Filecoin publishes for its parameters (parameters.json) before trusting it",
            )),
            Record::Unreadable(why) => out.push(Finding::warn(
                Check::Validation,
                format!("{id}: the validation record cannot be read ({why}): the file is validated in full at each load"),
                format!("make {} readable and writable by the daemon's user", records.display()),
            )),
        }
    }
    // What is present.
    let names = filecoin_names();
    match params_files(&fil_dir) {
        None if !fil_dir.exists() => out.push(Finding::warn(
            Check::ParamsCache,
            format!("the Filecoin parameter cache {} does not exist: Filecoin jobs are refused until it holds their parameters", fil_dir.display()),
            "put Filecoin's parameter files there (Curio fetches them with `curio fetch-params <sector size>`), or set params.filecoin_dir (or FIL_PROOFS_PARAMETER_CACHE) to the cache that holds them",
        )),
        None => out.push(Finding::fatal(
            Check::ParamsCache,
            format!("the Filecoin parameter cache {} cannot be read (not a readable directory): cuzk serve refuses to start", fil_dir.display()),
            "give the daemon's user read access to it, or point params.filecoin_dir elsewhere",
        )),
        Some(files) if files.is_empty() => out.push(Finding::warn(
            Check::ParamsCache,
            format!("the Filecoin parameter cache {} holds no .params file: Filecoin jobs are refused until it does", fil_dir.display()),
            "put Filecoin's parameter files there (Curio fetches them with `curio fetch-params <sector size>`), or point params.filecoin_dir at the cache that holds them",
        )),
        Some(files) => {
            let list: Vec<String> = files
                .iter()
                .map(|(p, len)| {
                    let file = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                    let id = names.iter().find(|(n, _)| *n == file).map_or_else(|| file.clone(), |(_, s)| s.id());
                    format!("{id} {} ({})", size(*len), record_word(&record(&records, p, trusted)))
                })
                .collect();
            out.push(Finding::ok(Check::ParamsCache, format!("{} holds {} parameter file(s): {}", fil_dir.display(), files.len(), list.join(", "))));
        }
    }
    if let Some(files) = params_files(&data_dir.join("params")).filter(|f| !f.is_empty()) {
        let list: Vec<String> = files
            .iter()
            .map(|(p, len)| {
                let id = p.file_stem().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                format!("{id} {} ({})", size(*len), record_word(&record(&records, p, trusted)))
            })
            .collect();
        out.push(Finding::ok(
            Check::ParamsCache,
            format!("{} holds {} built-in circuit parameter file(s): {}", data_dir.join("params").display(), files.len(), list.join(", ")),
        ));
    }
    out
}

/// The nearest ancestor of `path` that exists (itself when it exists).
fn existing_ancestor(path: &Path) -> Option<&Path> {
    path.ancestors().find(|p| !p.as_os_str().is_empty() && std::fs::symlink_metadata(p).is_ok())
}

/// Whether this process may write into directory `dir` (and enter it).
fn writable(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else { return false };
    // SAFETY: a valid C string; access only reads it.
    unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
}

/// A directory the daemon writes its own files into (`what`, reported under `check`): exists
/// or can be created, is a directory it can read and write, owned by `uid`, and, when
/// `private` (files it trusts once checked: parameters it generated, validation records,
/// recorded matrices), writable by nobody else, as `cuzk serve` insists.
pub fn directory(check: Check, what: &str, path: &Path, uid: u32, private: bool) -> Vec<Finding> {
    let mut out = Vec::new();
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            match existing_ancestor(path) {
                Some(a) if std::fs::metadata(a).is_ok_and(|m| m.is_dir()) && writable(a) => out.push(Finding::ok(
                    check,
                    format!("{what} {} does not exist yet; the daemon creates it when first needed (this user may write {})", path.display(), a.display()),
                )),
                Some(a) => out.push(Finding::fatal(
                    check,
                    format!("{what} {} does not exist and cannot be created: {} is not a directory this user may write", path.display(), a.display()),
                    format!("create it for the daemon's user: mkdir -p {0} && chown <user> {0} && chmod 700 {0}", path.display()),
                )),
                None => out.push(Finding::fatal(check, format!("{what} {} cannot be created (no parent exists)", path.display()), "use an absolute path")),
            }
            return out;
        }
        Err(e) => {
            out.push(Finding::fatal(
                check,
                format!("{what} {} cannot be inspected: {e}", path.display()),
                "give the daemon's user access to it, or choose another directory",
            ));
            return out;
        }
    };
    if !meta.is_dir() {
        out.push(Finding::fatal(
            check,
            format!("{what} {} is not a directory: cuzk serve refuses to start", path.display()),
            "move the file away, or choose another directory",
        ));
        return out;
    }
    if let Err(e) = std::fs::read_dir(path) {
        out.push(Finding::fatal(check, format!("{what} {} cannot be read: {e}", path.display()), format!("chown <daemon user> {}", path.display())));
        return out;
    }
    let mode = meta.permissions().mode() & 0o7777;
    let mut fine = true;
    if private && mode & 0o022 != 0 {
        fine = false;
        out.push(Finding::fatal(
            check,
            format!(
                "{what} {} is writable by other users (mode {mode:o}): a file planted there would be trusted, so cuzk serve refuses to start",
                path.display()
            ),
            format!("chmod go-w {}", path.display()),
        ));
    } else if mode & 0o002 != 0 {
        fine = false;
        out.push(Finding::warn(check, format!("{what} {} is writable by every user (mode {mode:o})", path.display()), format!("chmod o-w {}", path.display())));
    }
    if meta.uid() != uid {
        fine = false;
        out.push(Finding::warn(
            check,
            format!("{what} {} belongs to uid {}, not to this user (uid {uid}), who would run the daemon", path.display(), meta.uid()),
            format!("chown -R <daemon user> {} (or run cuzk doctor as the daemon's user)", path.display()),
        ));
    }
    if !writable(path) {
        fine = false;
        out.push(Finding::fatal(check, format!("{what} {} is not writable by this user", path.display()), format!("chown <daemon user> {}", path.display())));
    }
    if fine {
        out.push(Finding::ok(check, format!("{what} {}: a directory owned by uid {uid}, mode {mode:o}", path.display())));
    }
    out
}

/// Free bytes for this user on the file system holding `path` (or its nearest existing
/// ancestor), by `statvfs`.
pub fn free_space(path: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let at = existing_ancestor(path).ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no existing ancestor"))?;
    let c = std::ffi::CString::new(at.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    // SAFETY: statvfs writes only the struct passed.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid C string and a struct to fill.
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((s.f_bavail as u64).saturating_mul(s.f_frsize as u64))
}

/// Below this the journal cannot record the requests of a few queued jobs: accepted jobs fail.
const DISK_FATAL: u64 = 256 << 20;
/// Below this the recorded matrices of a 32 GiB PoRep (about 9 GB) and a journal of queued
/// jobs (about 90 MB per 32 GiB PoRep request) do not both fit.
const DISK_WARN: u64 = 16 << 30;

/// Free disk space on the file system of `path`, which holds `what` (`free` bytes,
/// [`free_space`]).
pub fn disk(what: &str, path: &Path, free: std::io::Result<u64>) -> Finding {
    match free {
        Err(e) => Finding::warn(Check::Disk, format!("free space on the file system of {} ({what}) cannot be read: {e}", path.display()), ""),
        Ok(f) if f < DISK_FATAL => Finding::fatal(
            Check::Disk,
            format!(
                "only {} free on the file system of {} ({what}): the journal cannot record accepted jobs (they are refused with UNAVAILABLE)",
                size(f),
                path.display()
            ),
            "free disk space there, or move the data directory (--data-dir, params.data_dir) or journal.dir elsewhere",
        ),
        Ok(f) if f < DISK_WARN => Finding::warn(
            Check::Disk,
            format!(
                "{} free on the file system of {} ({what}): recorded constraint matrices take about 9 GB for a 32 GiB PoRep, the journal about 90 MB per queued 32 GiB PoRep",
                size(f),
                path.display()
            ),
            "free disk space there, or set params.matrices_dir = \"\" to keep no matrices (each start records them again)",
        ),
        Ok(f) => Finding::ok(Check::Disk, format!("{} free on the file system of {} ({what})", size(f), path.display())),
    }
}

/// One [`disk`] finding per file system the `(what, path)` places are on (the nearest existing
/// ancestor of each decides; places whose file system cannot be told stand alone).
pub fn disks(places: &[(&str, PathBuf)]) -> Vec<Finding> {
    let dev = |p: &Path| existing_ancestor(p).and_then(|a| std::fs::metadata(a).ok()).map(|m| m.dev());
    let mut groups: Vec<(Option<u64>, &Path, Vec<&str>)> = Vec::new();
    for (what, path) in places {
        let d = dev(path);
        match groups.iter_mut().find(|g| d.is_some() && g.0 == d) {
            Some(g) => g.2.push(what),
            None => groups.push((d, path, vec![what])),
        }
    }
    groups
        .into_iter()
        .map(|(_, path, whats)| {
            let what = match whats.split_last() {
                Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
                _ => whats.join(""),
            };
            disk(&what, path, free_space(path))
        })
        .collect()
}

/// The longest path a unix socket address holds (`sun_path` less its terminating NUL).
const SOCKET_PATH_MAX: usize = 107;

/// The gRPC unix socket at `path` (`None`: disabled): its directory exists or can be made and
/// is writable, the path fits a socket address, nothing else sits there, and whether a daemon
/// already answers on it. `uid` is the user the daemon would run as.
pub fn socket(path: Option<&Path>, uid: u32, group: Option<&str>) -> Vec<Finding> {
    use std::os::unix::ffi::OsStrExt;
    let mut out = Vec::new();
    let Some(path) = path else {
        out.push(Finding::ok(Check::Socket, "no unix socket (server.socket = \"\")"));
        return out;
    };
    // Who may connect to the socket the daemon makes.
    let who = match group {
        None => format!("mode 0600, so only uid {uid} (the daemon's user) can connect: run Curio as the same user, or set server.socket_group"),
        Some(g) => match crate::config::group_id(g) {
            Some(gid) => format!("mode 0660 in group {g} (gid {gid}): Curio's user connects as a member of it"),
            None => {
                out.push(Finding::fatal(
                    Check::Socket,
                    format!("server.socket_group names no group on this host: {g:?}"),
                    format!("groupadd {g} && usermod -aG {g} <daemon user> && usermod -aG {g} <Curio's user>, or unset server.socket_group"),
                ));
                return out;
            }
        },
    };
    let len = path.as_os_str().as_bytes().len();
    if len > SOCKET_PATH_MAX {
        out.push(Finding::fatal(
            Check::Socket,
            format!("the socket path {} is {len} bytes, longer than a unix socket address holds ({SOCKET_PATH_MAX}): binding it fails", path.display()),
            "set a shorter server.socket, e.g. /run/cuzk/cuzk.sock",
        ));
        return out;
    }
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    match std::fs::metadata(dir) {
        Ok(m) if !m.is_dir() => {
            out.push(Finding::fatal(
                Check::Socket,
                format!("the socket's directory {} is not a directory", dir.display()),
                "set server.socket to a path in a directory",
            ));
            return out;
        }
        Ok(_) if !writable(dir) => {
            out.push(Finding::fatal(
                Check::Socket,
                format!("the socket's directory {} is not writable by this user: the socket cannot be created", dir.display()),
                format!("create a directory for it owned by the daemon's user (e.g. RuntimeDirectory=cuzk in a systemd unit, for /run/cuzk), or chown <daemon user> {}", dir.display()),
            ));
            return out;
        }
        Ok(_) => {}
        Err(_) => match existing_ancestor(dir) {
            Some(a) if std::fs::metadata(a).is_ok_and(|m| m.is_dir()) && writable(a) => {}
            _ => {
                out.push(Finding::fatal(
                    Check::Socket,
                    format!("the socket's directory {} does not exist and cannot be created by this user", dir.display()),
                    format!("create it for the daemon's user: mkdir -p {0} && chown <user> {0}", dir.display()),
                ));
                return out;
            }
        },
    }
    match std::fs::symlink_metadata(path) {
        Err(_) => out.push(Finding::ok(Check::Socket, format!("{} is free; the daemon creates it with {who}", path.display()))),
        Ok(m) if !m.file_type().is_socket() => out.push(Finding::fatal(
            Check::Socket,
            format!("{} exists and is not a socket: cuzk serve refuses to replace it", path.display()),
            "move the file away, or set another server.socket",
        )),
        Ok(m) => match answers(path) {
            Some(true) => out.push(Finding::warn(
                Check::Socket,
                format!(
                    "a daemon already listens on {} (socket owned by uid {}, mode {:o}): a second cuzk serve on it would refuse to start",
                    path.display(),
                    m.uid(),
                    m.permissions().mode() & 0o777
                ),
                "nothing to do if that is the daemon you meant to run; else stop it first, or give this one another server.socket",
            )),
            Some(false) => {
                out.push(Finding::ok(Check::Socket, format!("{} is a stale socket (no daemon answers): cuzk serve replaces it, {who}", path.display())))
            }
            None => out.push(Finding::warn(
                Check::Socket,
                format!("{} is a socket this user cannot connect to (owned by uid {}, mode {:o})", path.display(), m.uid(), m.permissions().mode() & 0o777),
                "run cuzk doctor as the daemon's user",
            )),
        },
    }
    out
}

/// Whether a daemon answers on the socket at `path`: `Some(true)` when a connection is
/// accepted (or hangs for 2 s, as a daemon with a full backlog does), `Some(false)` when
/// refused (a stale socket), `None` when this user may not connect.
fn answers(path: &Path) -> Option<bool> {
    let (tx, rx) = std::sync::mpsc::channel();
    let p = path.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(std::os::unix::net::UnixStream::connect(&p).map(|_| ()));
    });
    match rx.recv_timeout(Duration::from_secs(2)) {
        Ok(Ok(())) | Err(_) => Some(true),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::PermissionDenied => None,
        Ok(Err(_)) => Some(false),
    }
}

/// The TCP addresses the daemon would listen on (`what`, `address`): each free to bind, or
/// held by something (perhaps a daemon already running), or not an address of this host.
pub fn ports(addresses: &[(&str, String)]) -> Vec<Finding> {
    let mut out = Vec::new();
    for (what, address) in addresses {
        let a: std::net::SocketAddr = match address.parse() {
            Ok(a) => a,
            Err(e) => {
                out.push(Finding::fatal(
                    Check::Ports,
                    format!("{what} {address:?} is not an address: {e}"),
                    format!("set {what} to HOST:PORT, e.g. 127.0.0.1:9821"),
                ));
                continue;
            }
        };
        match std::net::TcpListener::bind(a) {
            Ok(_) => out.push(Finding::ok(Check::Ports, format!("{what} {a} is free to listen on"))),
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => out.push(Finding::warn(
                Check::Ports,
                format!("{what} {a} is already taken: cuzk serve cannot listen there unless the holder is the cuzk daemon you meant to run"),
                format!("find the holder with `ss -ltnp 'sport = :{}'`; stop it, or set another {what}", a.port()),
            )),
            Err(e) => out.push(Finding::fatal(
                Check::Ports,
                format!("{what} {a} cannot be listened on: {e}"),
                format!("set {what} to an address of this host (127.0.0.1 for local clients)"),
            )),
        }
    }
    out
}

/// The data directory the daemon would use: `params.data_dir`, else the command line's.
pub fn daemon_data_dir(cfg: &Config, cli_data_dir: &Path) -> PathBuf {
    cfg.params.data_dir.clone().unwrap_or_else(|| cli_data_dir.to_path_buf())
}

/// The socket the daemon would listen on: `server.socket` (`""`: none), else the default in
/// the data directory.
pub fn socket_path(cfg: &Config, data_dir: &Path) -> Option<PathBuf> {
    match &cfg.server.socket {
        Some(p) if p.as_os_str().is_empty() => None,
        Some(p) => Some(p.clone()),
        None => Some(crate::server::default_socket(data_dir)),
    }
}

/// Every check, over the given host and device probe. `loaded` is the configuration (or why
/// it could not be read: the checks then use the defaults); `cli_data_dir` the command line's
/// data directory.
pub fn examine(config_path: Option<&Path>, loaded: &Result<Config, String>, cli_data_dir: &Path, host: &Host, probe: &DeviceProbe) -> Vec<Finding> {
    let default = Config::default();
    let cfg = loaded.as_ref().unwrap_or(&default);
    let data_dir = daemon_data_dir(cfg, cli_data_dir);
    let mut out = config_findings(config_path, loaded);
    out.extend(device_findings(&cfg.engine.backend, probe));

    let b = budgets(cfg, &host.meminfo);
    let devices: &[DeviceInfo] = match &probe.opened {
        Opened::Devices(d) => d,
        Opened::Failed(_) => &[],
    };
    let cuda = devices.iter().any(|d| d.kernels.is_some());
    out.push(memlock(host.memlock, cuda.then_some(b.engine)));
    out.push(open_files(host.nofile, files_needed(cfg)));
    out.extend(host_memory(cfg, &host.meminfo, &b));

    // The device budget parameters must fit to stay resident (circuits::stream_budget).
    let ordinals: Vec<u32> = devices.iter().map(|d| d.ordinal).collect();
    let reports: Vec<bool> = devices.iter().map(|d| d.free_bytes.is_some()).collect();
    let sharing = crate::devices::sharing(&ordinals, &reports);
    let budgets: Vec<u64> = devices.iter().zip(&sharing).map(|(d, &s)| cfg.engine.device_budget(d.free_bytes, b.engine, s)).collect();
    let smallest = budgets.iter().copied().min().unwrap_or(0);
    let reserve = cfg.engine.critical_device_reserve.unwrap_or_else(|| EngineSection::critical_reserve(smallest));
    let device_budget = budgets.iter().map(|d| d.saturating_sub(reserve)).max().unwrap_or(0);
    out.extend(params(cfg, &data_dir));
    out.extend(preload_fit(cfg, &data_dir, &b, device_budget, cuda));

    out.extend(directory(Check::DataDir, "the data directory", &data_dir, host.uid, true));
    // Where the daemon writes: the data directory, the recorded matrices, the journal.
    let mut written: Vec<(&str, PathBuf)> = vec![("the data directory", data_dir.clone())];
    match cfg.params.matrices_dir.as_deref() {
        Some(m) if m.as_os_str().is_empty() => {
            out.push(Finding::ok(Check::Matrices, "no recorded matrices are kept (params.matrices_dir = \"\"): each start records them again"))
        }
        Some(m) => {
            // `cuzk serve` refuses one others may write, as it does the data directory.
            out.extend(directory(Check::Matrices, "the matrices directory (params.matrices_dir)", m, host.uid, true));
            written.push(("the recorded matrices", m.to_path_buf()));
        }
        None => {
            let m = data_dir.join("matrices");
            out.extend(directory(Check::Matrices, "the matrices directory (<data dir>/matrices)", &m, host.uid, false));
            written.push(("the recorded matrices", m));
        }
    }
    if cfg.journal.enabled {
        let (what, j) = match &cfg.journal.dir {
            Some(j) => ("the journal (journal.dir)", j.clone()),
            None => ("the journal (<data dir>/journal)", data_dir.join("journal")),
        };
        out.extend(directory(Check::Journal, what, &j, host.uid, false));
        written.push(("the journal", j));
    } else {
        out.push(Finding::warn(
            Check::Journal,
            "the journal is off ([journal] enabled = false): accepted jobs are lost if the daemon stops before they end",
            "set [journal] enabled = true",
        ));
    }
    out.extend(disks(&written));
    out.extend(socket(socket_path(cfg, &data_dir).as_deref(), host.uid, cfg.server.socket_group.as_deref()));
    let mut addresses = Vec::new();
    if let Some(t) = cfg.server.tcp {
        addresses.push(("server.tcp", t.to_string()));
    }
    if !cfg.server.http.trim().is_empty() {
        addresses.push(("server.http", cfg.server.http.trim().to_string()));
    }
    out.extend(ports(&addresses));
    out
}

/// The findings as lines: severity, check, message, and the fix under it.
pub fn render(findings: &[Finding]) -> String {
    let width = findings.iter().map(|f| f.check.name().len()).max().unwrap_or(0);
    let mut s = String::new();
    for f in findings {
        s.push_str(&format!("{:<5}  {:<width$}  {}\n", f.severity.label(), f.check.name(), f.message));
        if !f.fix.is_empty() && f.severity != Severity::Ok {
            s.push_str(&format!("{:<5}  {:<width$}  fix: {}\n", "", "", f.fix));
        }
    }
    let count = |sev| findings.iter().filter(|f| f.severity == sev).count();
    let (warn, fatal) = (count(Severity::Warn), count(Severity::Fatal));
    s.push_str(&format!("\n{} ok, {warn} warning(s), {fatal} fatal", count(Severity::Ok)));
    if fatal > 0 {
        s.push_str(": cuzk serve would not start, or jobs would fail, until the fatal findings are fixed\n");
    } else {
        s.push('\n');
    }
    s
}

/// `cuzk doctor`: runs every check on this host with the configuration at `config` (or the
/// defaults) and prints the findings, as lines or (`json`) a JSON array of
/// `{check, severity, message, fix}`. Returns whether any finding is fatal.
pub fn run(config: Option<&Path>, cli_data_dir: &Path, json: bool) -> Result<bool, CliError> {
    use std::io::Write;
    let loaded = match config {
        Some(p) => Config::load(p).map_err(|e| e.to_string()),
        None => Ok(Config::default()),
    };
    let default = Config::default();
    let cfg = loaded.as_ref().unwrap_or(&default);
    let host = Host::live(&cfg.engine);
    let probe = probe(cfg, &host.nvidia_version);
    let findings = examine(config, &loaded, cli_data_dir, &host, &probe);
    let out = if json {
        serde_json::to_string_pretty(&findings).map_err(|e| CliError::Io { path: "standard output".into(), source: std::io::Error::other(e) })? + "\n"
    } else {
        render(&findings)
    };
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(out.as_bytes()).and_then(|_| stdout.flush()).map_err(|source| CliError::Io { path: "standard output".into(), source })?;
    Ok(findings.iter().any(|f| f.severity == Severity::Fatal))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_read_them() {
        assert_eq!(size(512), "512 B");
        assert_eq!(size(8 << 20), "8.0 MiB");
        assert_eq!(size(47 * (1 << 30) + (1 << 29)), "47.5 GiB");
    }

    #[test]
    fn the_nvidia_version_line_is_shortened() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("version");
        std::fs::write(&f, "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu Jan 1 00:00:00 UTC 2026\nGCC version: gcc\n").unwrap();
        assert_eq!(nvidia_version(&f).as_deref(), Some("NVIDIA kernel module 580.159.04"));
        assert_eq!(nvidia_version(&tmp.path().join("absent")), None);
    }

    #[test]
    fn nvrtc_not_found_names_the_libraries_once() {
        let once = NvrtcError::NotFound("libnvrtc.so, libnvrtc.so.13".into()).to_string();
        let twice = NvrtcError::NotFound(once.clone()).to_string();
        assert_eq!(tried(&once), "libnvrtc.so, libnvrtc.so.13");
        assert_eq!(tried(&twice), "libnvrtc.so, libnvrtc.so.13");
        let f = open_error(&DeviceError::Open { ordinal: 0, source: CudaError::Nvrtc(NvrtcError::NotFound(once)) });
        assert_eq!(f.message.matches("NVRTC not found").count(), 0, "{f:?}");
        assert!(f.message.ends_with("(tried libnvrtc.so, libnvrtc.so.13)"), "{f:?}");
    }

    #[test]
    fn open_files_counts_the_listeners() {
        let cfg = Config::default();
        // The default socket (512) and HTTP (64), plus the daemon's own files.
        assert_eq!(files_needed(&cfg), 512 + 64 + OWN_FILES);
        let low = Rlimit { soft: Some(1024), hard: Some(512) };
        let f = open_files(Some(low), files_needed(&cfg));
        assert_eq!((f.check, f.severity), (Check::OpenFiles, Severity::Warn), "{f:?}");
        assert_eq!(open_files(Some(Rlimit { soft: Some(1024), hard: None }), 832).severity, Severity::Ok);
    }
}
