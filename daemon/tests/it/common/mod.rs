//! Shared test helpers: parameter files generated once per test run, an in-process daemon
//! on a private unix socket, and result verification.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use cuzk_circuits::CircuitKind;
use cuzk_core::params::{Validation, VerifyingKey};
use cuzk_daemon::client::{connect, verify_result, Client};
use cuzk_daemon::config::Config;
use cuzk_daemon::proto;
use cuzk_daemon::server::{start, Server};
use tempfile::TempDir;

/// Parameter files live here for all tests of this workspace build.
pub fn params_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cuzk-daemon-test-data")
}

/// Ensures the squaring-chain parameters at `log_size` exist (generated once: `ensure_params`
/// locks the file against other generators).
pub fn ensure(log_size: u32) -> PathBuf {
    cuzk_daemon::setup::ensure_params(&params_dir(), cuzk_daemon::families::GenericShape::new("squaring-chain", log_size).expect("shape"), false)
        .expect("setup")
}

/// The verifying key of squaring-chain at `log_size`.
pub fn vk(log_size: u32) -> Arc<VerifyingKey> {
    static CACHE: OnceLock<Mutex<std::collections::HashMap<u32, Arc<VerifyingKey>>>> = OnceLock::new();
    let m = CACHE.get_or_init(Default::default);
    let path = ensure(log_size);
    let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
    g.entry(log_size).or_insert_with(|| Arc::new(cuzk_worker::read_params(&path, Validation::Trusted).expect("params").vk)).clone()
}

/// Bytes of the largest query of the squaring-chain parameters at `log_size`, decoded (what a
/// device load holds on the host in flight).
pub fn largest_query(log_size: u32) -> u64 {
    let p = cuzk_worker::read_params(&ensure(log_size), Validation::Trusted).expect("params");
    let sizes = [
        std::mem::size_of_val(&p.h[..]),
        std::mem::size_of_val(&p.l[..]),
        std::mem::size_of_val(&p.a[..]),
        std::mem::size_of_val(&p.b_g1[..]),
        std::mem::size_of_val(&p.b_g2[..]),
    ];
    sizes.into_iter().max().unwrap_or(0) as u64
}

/// A daemon on a private socket, HTTP on an ephemeral loopback port.
pub struct Daemon {
    pub server: Server,
    pub tmp: TempDir,
    pub socket: PathBuf,
}

impl Daemon {
    pub fn addr(&self) -> String {
        format!("unix:{}", self.socket.display())
    }

    pub async fn client(&self) -> Client {
        connect(&self.addr(), None).await.expect("connect")
    }

    pub fn http(&self) -> std::net::SocketAddr {
        self.server.listening.http.expect("http listener")
    }
}

/// A test configuration: one synthesis worker, one GPU worker, given parameter sizes ready.
pub fn config(tmp: &Path) -> Config {
    let mut cfg = Config::default();
    cfg.server.socket = Some(tmp.join("cuzk.sock"));
    cfg.server.http = "127.0.0.1:0".into();
    cfg.engine.synth_workers = 1;
    cfg.engine.finalize_workers = 1;
    cfg.engine.gpu_workers = 1;
    cfg.engine.host_memory_bytes = 1 << 30;
    cfg.engine.device_memory_bytes = 1 << 30;
    cfg.params.trusted = true;
    cfg.shutdown.linger_ms = 300;
    cfg.params.data_dir = Some(params_dir());
    cfg.journal.dir = Some(tmp.join("journal"));
    cfg
}

/// Starts a daemon with `cfg` modified by `f`.
pub async fn daemon_with(sizes: &[u32], f: impl FnOnce(&mut Config)) -> Daemon {
    for &k in sizes {
        ensure(k);
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut cfg = config(tmp.path());
    f(&mut cfg);
    let socket = cfg.server.socket.clone().unwrap_or_default();
    let server = start(cfg, params_dir()).await.expect("daemon starts");
    Daemon { server, tmp, socket }
}

/// A generic squaring-chain job.
pub fn job(log_size: u32, seed: u64, partitions: u32, priority: proto::Priority) -> proto::SubmitProofRequest {
    proto::SubmitProofRequest {
        proof_kind: proto::ProofKind::Generic as i32,
        priority: priority as i32,
        generic: Some(proto::GenericJob { circuit: "squaring-chain".into(), log_size, seed, partitions }),
        ..Default::default()
    }
}

/// Checks a completed result: proofs verify and the public inputs are the circuit's.
pub fn check_completed(r: &proto::AwaitProofResponse, log_size: u32, seed: u64, partitions: u32) {
    assert_eq!(r.status, proto::await_proof_response::Status::Completed as i32, "job {} status {} error {:?}", r.job_id, r.status, r.error_message);
    assert_eq!(r.proof.len(), 192 * partitions as usize);
    let n = verify_result(&vk(log_size), r).expect("proofs verify");
    assert_eq!(n, partitions as usize);
    for (i, bytes) in r.public_inputs.iter().enumerate() {
        let want = CircuitKind::SquaringChain.instance(log_size, seed + i as u64).expect("instance").public_inputs();
        let got = cuzk_daemon::client::decode_scalars(bytes).expect("scalars");
        assert_eq!(got, want, "public inputs of partition {i}");
    }
}

/// Polls `f` every 10 ms for at most `limit`.
pub async fn wait_until<F, Fut>(limit: Duration, mut f: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let end = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < end {
        if f().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

/// Shuts the daemon down (cancelling leftovers) and waits, bounded.
pub async fn stop(d: Daemon) {
    d.server.shutdown_with(cuzk_daemon::config::ShutdownMode::Cancel);
    tokio::time::timeout(Duration::from_secs(60), d.server.wait()).await.expect("daemon stops in time").expect("clean stop");
}

/// The `cuzk` binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_cuzk");

/// `cuzk serve --config <config>` as a process of its own (for `kill -9` and its own memory
/// figures), logging to `dir/log`.
pub fn serve_process(dir: &Path, config: &Path, log: &str) -> std::process::Child {
    use std::process::{Command, Stdio};
    let log = std::fs::File::create(dir.join(log)).unwrap();
    Command::new(BIN)
        .arg("--data-dir")
        .arg(params_dir())
        .arg("serve")
        .arg("--config")
        .arg(config)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("cuzk serve starts")
}

/// The HTTP address from the daemon's start line in `dir/log`, once it is there.
pub async fn http_of_log(dir: &Path, log: &str) -> std::net::SocketAddr {
    let path = dir.join(log);
    let mut addr = None;
    wait_until(Duration::from_secs(30), || {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        addr = text
            .lines()
            .find(|l| l.contains("cuzk daemon listening"))
            .and_then(|l| l.split("http=Some(").nth(1))
            .and_then(|r| r.split(')').next())
            .and_then(|a| a.parse().ok());
        std::future::ready(addr.is_some())
    })
    .await;
    addr.unwrap_or_else(|| panic!("no HTTP address in {}", std::fs::read_to_string(&path).unwrap_or_default()))
}
