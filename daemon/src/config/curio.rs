//! A Curio `cuzk.toml` (the configuration of the cuzk daemon inside Curio, `extern/cuzk`) mapped
//! onto this daemon's [`Config`]. Every key of Curio's schema is known: those with a meaning
//! here are mapped, those whose job is done differently here are accepted with a note saying so
//! (as Curio itself accepts its deprecated keys), and any other key is refused with its name.
//! The mapping is listed in `docs/daemon.md` ("Running behind Curio").

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{Config, ConfigError, DeviceSelection, LogFormat};

/// The top-level tables of Curio's schema.
pub const SECTIONS: [&str; 8] = ["daemon", "srs", "memory", "gpus", "scheduler", "synthesis", "pipeline", "logging"];

/// Whether a parsed TOML file is in Curio's schema: it has one of Curio's tables and none of
/// this daemon's (`server`, `engine`, `params`, `shutdown`, `log`). A file mixing both is read
/// as this daemon's, and its Curio tables are then refused by name.
pub fn is_curio(t: &toml::Table) -> bool {
    let ours = ["server", "engine", "params", "shutdown", "log"];
    t.keys().any(|k| SECTIONS.contains(&k.as_str())) && !t.keys().any(|k| ours.contains(&k.as_str()))
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct CurioConfig {
    daemon: Daemon,
    srs: Srs,
    memory: Memory,
    gpus: Gpus,
    scheduler: Scheduler,
    synthesis: Synthesis,
    pipeline: Pipeline,
    logging: Logging,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Daemon {
    listen: Option<String>,
    status_listen: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Srs {
    param_cache: Option<PathBuf>,
    preload: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Memory {
    total_budget: Option<String>,
    safety_margin: Option<String>,
    eviction_min_idle: Option<String>,
    pinned_budget: Option<String>,
    working_memory_budget: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Gpus {
    devices: Option<Vec<u32>>,
    gpu_threads: Option<u32>,
    gpu_workers_per_device: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Scheduler {
    max_batch_size: Option<u32>,
    max_batch_wait_ms: Option<u64>,
    sort_by_type: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Synthesis {
    threads: Option<u32>,
    partition_workers: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Pipeline {
    enabled: Option<bool>,
    synthesis_lookahead: Option<u32>,
    synthesis_concurrency: Option<u32>,
    max_parallel_synthesis: Option<u32>,
    slot_size: Option<u32>,
    max_gpu_queue_depth: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Logging {
    level: Option<String>,
    format: Option<String>,
}

/// Parses a size as Curio writes them: `5GiB`, `512MiB`, `256GB`, `1024` (bytes).
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let digits = s.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(s.len());
    let (num, unit) = s.split_at(digits);
    let num: f64 = num.parse().ok()?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ => return None,
    };
    (num >= 0.0).then_some((num * mult as f64) as u64)
}

/// Total host memory (`MemTotal` of `/proc/meminfo`), bytes.
fn mem_total() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Maps the text of a Curio `cuzk.toml` at `path` onto a [`Config`].
pub fn map(text: &str, path: &Path) -> Result<Config, ConfigError> {
    let c: CurioConfig = toml::from_str(text).map_err(|source| ConfigError::Parse { path: path.into(), source: Box::new(source) })?;
    let refuse = |key: &str, reason: String| ConfigError::CurioKey { path: path.into(), key: key.into(), reason };
    let mut cfg = Config::default();
    let mut notes = Vec::new();
    let mut ignored = |key: &str, why: &str| notes.push(format!("{}: {key} has no effect here: {why}", path.display()));

    // [daemon]: Curio's one gRPC listener (default unix:///run/curio/cuzk.sock), plaintext.
    let listen = c.daemon.listen.unwrap_or_else(|| "unix:///run/curio/cuzk.sock".into());
    if let Some(p) = listen.strip_prefix("unix://").or_else(|| listen.strip_prefix("unix:")) {
        cfg.server.socket = Some(PathBuf::from(p));
    } else {
        let a: SocketAddr = listen.parse().map_err(|e| refuse("daemon.listen", format!("{listen:?} is neither unix://PATH nor HOST:PORT ({e})")))?;
        cfg.server.socket = Some(PathBuf::new());
        cfg.server.tcp = Some(a);
        cfg.server.tcp_insecure = true;
    }
    cfg.server.http = match c.daemon.status_listen.as_deref().map(str::trim) {
        None | Some("") => String::new(),
        Some(a) => {
            let addr: SocketAddr = a.parse().map_err(|e| refuse("daemon.status_listen", format!("{a:?} is not HOST:PORT ({e})")))?;
            if !addr.ip().is_loopback() {
                return Err(refuse(
                    "daemon.status_listen",
                    format!("{addr} is not a loopback address; this daemon's status page also serves the job timeline, so beyond loopback it needs a token: use 127.0.0.1, or cuzk's own [server] http and token"),
                ));
            }
            a.to_string()
        }
    };

    // [srs]
    if let Some(p) = c.srs.param_cache {
        cfg.params.filecoin_dir = Some(p);
    } else {
        cfg.params.filecoin_dir = Some(PathBuf::from("/data/zk/params"));
    }
    if c.srs.preload.is_some() {
        ignored("srs.preload", "parameters are loaded when the first job of a circuit arrives (deprecated in Curio too)");
    }

    // [memory]: one host budget.
    let margin = match c.memory.safety_margin.as_deref() {
        Some(m) => parse_size(m).ok_or_else(|| refuse("memory.safety_margin", format!("{m:?} is not a size like 5GiB")))?,
        None => 5 << 30,
    };
    cfg.engine.host_memory_bytes = match c.memory.total_budget.as_deref().map(str::trim) {
        None | Some("auto") => {
            let total = mem_total().ok_or_else(|| refuse("memory.total_budget", "\"auto\" needs /proc/meminfo, which is unreadable here".into()))?;
            total
                .checked_sub(margin)
                .filter(|b| *b > 0)
                .ok_or_else(|| refuse("memory.safety_margin", format!("{margin} bytes is not below the host's {total} bytes")))?
        }
        Some(b) => parse_size(b).ok_or_else(|| refuse("memory.total_budget", format!("{b:?} is neither \"auto\" nor a size like 256GiB")))?,
    };
    if c.memory.eviction_min_idle.is_some() {
        ignored("memory.eviction_min_idle", "parameters are evicted when another circuit needs their memory, least recently used first");
    }
    for k in [("memory.pinned_budget", c.memory.pinned_budget.is_some()), ("memory.working_memory_budget", c.memory.working_memory_budget.is_some())] {
        if k.1 {
            ignored(k.0, "one host budget (memory.total_budget) covers everything (deprecated in Curio too)");
        }
    }

    // [gpus]
    match c.gpus.devices.as_deref() {
        None | Some([]) => {}
        Some(list) => {
            cfg.engine.backend = "cuda".into();
            cfg.engine.devices = DeviceSelection::List(list.to_vec());
        }
    }
    if c.gpus.gpu_threads.is_some() {
        ignored("gpus.gpu_threads", "the G2 MSM and the other GPU-side work run on the GPU, not on CPU threads");
    }
    if let Some(n) = c.gpus.gpu_workers_per_device {
        if n == 0 {
            return Err(refuse("gpus.gpu_workers_per_device", "must be at least 1".into()));
        }
        cfg.engine.gpu_workers = n;
    }

    // [scheduler]: no cross-sector batching; partitions of many jobs share the pipeline.
    if c.scheduler.max_batch_size.is_some_and(|n| n > 1) {
        ignored(
            "scheduler.max_batch_size",
            "jobs are not batched into one GPU invocation; the partitions of several jobs are pipelined through the GPU instead",
        );
    }
    if c.scheduler.max_batch_wait_ms.is_some() {
        ignored("scheduler.max_batch_wait_ms", "there is no batching to wait for");
    }
    if c.scheduler.sort_by_type.is_some() {
        ignored("scheduler.sort_by_type", "jobs run by priority, then in arrival order, and parameters stay resident while they fit");
    }

    // [synthesis]
    if let Some(n) = c.synthesis.threads {
        cfg.engine.cpu_threads = n;
    }
    if c.synthesis.partition_workers.is_some() {
        ignored("synthesis.partition_workers", "concurrency follows the memory budget (deprecated in Curio too)");
    }

    // [pipeline]
    if c.pipeline.enabled == Some(false) {
        ignored("pipeline.enabled", "synthesis and the GPU stages are always pipelined");
    }
    if let Some(n) = c.pipeline.synthesis_lookahead {
        cfg.engine.synth_lookahead = n;
    }
    if let Some(n) = c.pipeline.synthesis_concurrency {
        if n == 0 {
            return Err(refuse("pipeline.synthesis_concurrency", "must be at least 1".into()));
        }
        cfg.engine.synth_workers = n;
    }
    for (k, set) in [
        ("pipeline.max_parallel_synthesis", c.pipeline.max_parallel_synthesis.is_some()),
        ("pipeline.slot_size", c.pipeline.slot_size.is_some()),
        ("pipeline.max_gpu_queue_depth", c.pipeline.max_gpu_queue_depth.is_some()),
    ] {
        if set {
            ignored(k, "the engine sizes synthesis and the GPU queue from the memory budgets");
        }
    }

    // [logging]
    if let Some(l) = c.logging.level {
        cfg.log.filter = l;
    }
    cfg.log.format = match c.logging.format.as_deref().map(str::trim) {
        None | Some("") | Some("text") => LogFormat::Text,
        Some("json") => LogFormat::Json,
        Some(f) => return Err(refuse("logging.format", format!("{f:?} is neither \"json\" nor \"text\""))),
    };
    cfg.notes = notes;
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_as_curio_writes_them() {
        assert_eq!(parse_size("5GiB"), Some(5 << 30));
        assert_eq!(parse_size("512MiB"), Some(512 << 20));
        assert_eq!(parse_size("256GB"), Some(256_000_000_000));
        assert_eq!(parse_size("1024"), Some(1024));
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size("5 parsecs"), None);
    }

    #[test]
    fn a_curio_file_is_told_apart_from_ours() {
        let t = |s: &str| toml::from_str::<toml::Table>(s).unwrap();
        assert!(is_curio(&t("[daemon]\nlisten = \"unix:///x\"\n")));
        assert!(!is_curio(&t("[server]\ntcp = \"127.0.0.1:1\"\n")));
        assert!(!is_curio(&t("[server]\n[daemon]\n")));
        assert!(!is_curio(&t("")));
    }
}
