//! A daemon that stays reachable: connections that say nothing, or their headers a byte at a
//! time, are closed by their timeouts while a live client waiting for a long proof is kept;
//! a flood of connections to the HTTP port, past the file limit, neither kills the gRPC
//! listener (it answers once the flood is gone) nor, with the default connection cap, keeps
//! it from answering during the flood.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::{self, *};
use cuzk_daemon::client::{connect, http_get};
use cuzk_daemon::proto::{self, Priority as P};
use cuzk_daemon::server::listen::ListenerState;
use cuzk_daemon::server::status::Snapshot;

/// Reads from `s` until the daemon closes it (EOF or reset) and returns how long that took;
/// panics past `limit`.
async fn closed_within<S: tokio::io::AsyncRead + Unpin>(s: &mut S, limit: Duration) -> Duration {
    let t = Instant::now();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(limit.saturating_sub(t.elapsed()), s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return t.elapsed(),
            Ok(Ok(_)) => continue,
            Err(_) => panic!("the connection is still open after {limit:?}"),
        }
    }
}

async fn snapshot(http: std::net::SocketAddr) -> Snapshot {
    let (code, body) = http_get(http, "/status", None).await.expect("GET /status");
    assert_eq!(code, 200, "{body}");
    serde_json::from_str(&body).expect("status JSON")
}

/// A connection that sends nothing, and one that sends its headers a byte every 100 ms, are
/// closed by the handshake timeout on the HTTP port; on the gRPC socket, one that sends nothing
/// and one that sends the HTTP/2 preface and then falls silent are closed too; a client waiting
/// on a proof that takes 3 s (past the 1 s idle timeout) gets it, because it answers the
/// daemon's pings. The status page counts the closed ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_and_slow_connections_are_closed_and_live_clients_kept() {
    let d = daemon_with(&[4], |c| {
        c.server.handshake_timeout_ms = 300;
        c.server.idle_timeout_ms = 1_000;
        c.faults.enabled = true;
        c.faults.rules = vec!["msm:delay=3000:nth=1".into()];
    })
    .await;
    let limit = Duration::from_secs(5);

    let mut silent = tokio::net::TcpStream::connect(d.http()).await.unwrap();
    let took = closed_within(&mut silent, limit).await;
    assert!(took >= Duration::from_millis(250), "closed before its timeout: {took:?}");

    let mut slow = tokio::net::TcpStream::connect(d.http()).await.unwrap();
    let header = b"GET /status HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
    let t = Instant::now();
    let mut sent = 0;
    for b in header {
        if slow.write_all(&[*b]).await.is_err() {
            break;
        }
        sent += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
        if t.elapsed() > limit {
            panic!("a header sent a byte at a time was read for {:?}", t.elapsed());
        }
    }
    assert!(sent < header.len(), "the whole header went through a byte every 100 ms");
    closed_within(&mut slow, limit).await;

    let mut silent = tokio::net::UnixStream::connect(&d.socket).await.unwrap();
    closed_within(&mut silent, limit).await;
    let mut preface_only = tokio::net::UnixStream::connect(&d.socket).await.unwrap();
    preface_only.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").await.unwrap();
    closed_within(&mut preface_only, limit).await;

    let mut c = d.client().await;
    let t = Instant::now();
    let r = c.prove(proto::ProveRequest { submit: Some(job(4, 1, 1, P::Normal)), timeout_ms: 60_000 }).await.expect("Prove").into_inner();
    check_completed(&r.result.expect("result"), 4, 1, 1);
    assert!(t.elapsed() > Duration::from_millis(2_500), "the delayed MSM did not delay the proof: {:?}", t.elapsed());

    let s = snapshot(d.http()).await;
    let by_name = |n: &str| s.listeners.iter().find(|l| l.name == n).unwrap_or_else(|| panic!("no {n} listener in {:?}", s.listeners)).clone();
    let (http, grpc) = (by_name("http"), by_name("grpc-unix"));
    assert!(http.timed_out >= 1 && grpc.timed_out >= 1, "{http:?} {grpc:?}");
    assert_eq!((http.state, grpc.state), (ListenerState::Serving, ListenerState::Serving));
    common::stop(d).await;
}

/// `cuzk serve` with at most `files` open files (soft and hard), logging to `dir/log`.
fn serve_limited(dir: &Path, config: &Path, log: &str, files: u64) -> Child {
    let log = std::fs::File::create(dir.join(log)).unwrap();
    let mut cmd = Command::new(BIN);
    cmd.arg("--data-dir").arg(params_dir()).arg("serve").arg("--config").arg(config).stdin(Stdio::null()).stdout(log.try_clone().unwrap()).stderr(log);
    // SAFETY: setrlimit is async-signal-safe and touches only the child's limits.
    unsafe {
        cmd.pre_exec(move || {
            let r = libc::rlimit { rlim_cur: files, rlim_max: files };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &r) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    cmd.spawn().expect("cuzk serve starts")
}

/// Raises this process's soft open-file limit to its hard limit (the flood needs ~700).
fn raise_own_file_limit() {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: plain calls on a struct of ours.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut r), 0);
        r.rlim_cur = r.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
    }
    assert!(r.rlim_cur >= 1024, "this test needs 1024 open files, the limit is {}", r.rlim_cur);
}

/// Opens up to `n` connections to `addr` (those the daemon closes at once included), until
/// one takes longer than 500 ms (the listen backlog is full: the daemon has stopped accepting).
async fn flood(addr: std::net::SocketAddr, n: usize) -> Vec<tokio::net::TcpStream> {
    let mut held = Vec::new();
    for _ in 0..n {
        match tokio::time::timeout(Duration::from_millis(500), tokio::net::TcpStream::connect(addr)).await {
            Ok(Ok(s)) => held.push(s),
            Ok(Err(_)) => {}
            Err(_) => break,
        }
    }
    held
}

async fn answers(socket: &Path) -> bool {
    let Ok(Ok(mut c)) = tokio::time::timeout(Duration::from_secs(2), connect(&format!("unix:{}", socket.display()), None)).await else { return false };
    matches!(tokio::time::timeout(Duration::from_secs(2), c.get_status(proto::GetStatusRequest {})).await, Ok(Ok(_)))
}

/// A daemon limited to 256 open files. With an HTTP connection cap above that, 600 idle
/// connections to the HTTP port run the daemon out of descriptors: its accept loops back off
/// and, once the connections are gone, the gRPC socket answers again and the daemon reports
/// the failed accepts. With the default cap (64) the same flood is closed on accept and the
/// gRPC socket answers all through it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_flood_on_the_http_port_never_silences_grpc() {
    ensure(4);
    raise_own_file_limit();
    let tmp = tempfile::tempdir().unwrap();
    for (cap, during) in [(1000usize, false), (64, true)] {
        let socket = tmp.path().join(format!("cap{cap}.sock"));
        let config = tmp.path().join(format!("cap{cap}.toml"));
        std::fs::write(
            &config,
            format!(
                "[server]\nsocket = {:?}\nhttp = \"127.0.0.1:0\"\nhttp_max_connections = {cap}\nmax_connections = 64\nidle_timeout_ms = 600000\nhandshake_timeout_ms = 600000\n\n[engine]\nbackend = \"cpu\"\nsynth_workers = 1\nhost_memory_bytes = 1073741824\ndevice_memory_bytes = 1073741824\n\n[params]\ntrusted = true\n\n[journal]\ndir = {:?}\n",
                socket.display().to_string(),
                tmp.path().join(format!("journal{cap}")).display().to_string()
            ),
        )
        .unwrap();
        let log = format!("cap{cap}.log");
        let mut daemon = serve_limited(tmp.path(), &config, &log, 256);
        let http = http_of_log(tmp.path(), &log).await;
        assert!(answers(&socket).await, "the daemon does not answer before the flood");

        let mut held = flood(http, 600).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        if during {
            assert!(answers(&socket).await, "gRPC silenced while the HTTP port is flooded (cap {cap})");
        } else {
            // On a loaded host the flood's connects can time out before the daemon has taken
            // enough of them to run out of descriptors: more, until its log says it has.
            let log_path = tmp.path().join(&log);
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            while !std::fs::read_to_string(&log_path).unwrap_or_default().contains("accept failed") && std::time::Instant::now() < deadline {
                held.extend(flood(http, 50).await);
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            // Out of descriptors: the gRPC listener's accept fails too (tonic's own accept loop
            // ended there, for good).
            let _ = answers(&socket).await;
        }
        drop(held);
        let back = wait_until(Duration::from_secs(10), || answers(&socket)).await;
        let text = std::fs::read_to_string(tmp.path().join(&log)).unwrap();
        assert!(back, "gRPC does not answer after the flood (cap {cap}); log:\n{text}");
        let s = snapshot(http).await;
        let web = s.listeners.iter().find(|l| l.name == "http").expect("http listener").clone();
        if during {
            assert!(web.refused > 0, "the flood was not capped: {web:?}");
        } else {
            let grpc = s.listeners.iter().find(|l| l.name == "grpc-unix").expect("gRPC listener").clone();
            assert!(
                web.accept_errors > 0 && grpc.accept_errors > 0 && text.contains("accept failed"),
                "the daemon never ran out of descriptors: {web:?} {grpc:?}\n{text}"
            );
        }
        assert!(s.listeners.iter().all(|l| l.state == ListenerState::Serving), "{:?}", s.listeners);
        daemon.kill().unwrap();
        daemon.wait().unwrap();
    }
}
