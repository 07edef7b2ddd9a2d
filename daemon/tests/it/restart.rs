//! Start-up hygiene and restarts: a stale socket left by a killed daemon is replaced, a live
//! daemon's socket and a file that is not a socket are refused, configured paths are checked;
//! and `kill -9` of `cuzk serve` in the middle of a proof, then a restart on the same socket:
//! the request sent again as Curio's client sends it (same request id) is proved, and
//! Filecoin's verifier accepts the proof.

use crate::common;
use crate::filecoin::{cache, ensure_params, raw_request};

use std::os::unix::fs::FileTypeExt;
use std::process::Command;
use std::time::Duration;

use common::*;
use cuzk_circuits_filecoin::{verify, FilKind};
use cuzk_daemon::client::{connect, http_get};
use cuzk_daemon::proto::{self, await_proof_response::Status as AwaitStatus, Priority as P};
use cuzk_daemon::server::status::Snapshot;
use cuzk_daemon::server::{start, ServeError};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_socket_is_replaced_a_live_one_and_other_files_are_refused() {
    ensure(4);
    let tmp = tempfile::tempdir().unwrap();
    let socket = tmp.path().join("cuzk.sock");
    // What a killed daemon leaves: a socket file nobody listens on.
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    assert!(std::fs::symlink_metadata(&socket).unwrap().file_type().is_socket());
    let mut cfg = config(tmp.path());
    cfg.server.socket = Some(socket.clone());
    let first = start(cfg.clone(), params_dir()).await.expect("a stale socket does not block the start");
    let mut c = connect(&format!("unix:{}", socket.display()), None).await.unwrap();
    let r = c.prove(proto::ProveRequest { submit: Some(job(4, 1, 1, P::Normal)), timeout_ms: 60_000 }).await.unwrap().into_inner();
    check_completed(&r.result.unwrap(), 4, 1, 1);

    // A second daemon on the same socket is refused while the first answers.
    let mut second = cfg.clone();
    second.server.http = String::new();
    match start(second, params_dir()).await {
        Err(ServeError::SocketInUse(p)) => assert_eq!(p, socket),
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("two daemons on one socket"),
    }
    first.shutdown_with(cuzk_daemon::config::ShutdownMode::Cancel);
    first.wait().await.unwrap();

    // A regular file where the socket goes is left alone.
    let file = tmp.path().join("not-a-socket");
    std::fs::write(&file, b"keep me").unwrap();
    let mut cfg = config(tmp.path());
    cfg.server.socket = Some(file.clone());
    match start(cfg, params_dir()).await {
        Err(ServeError::NotASocket(p)) => assert_eq!(p, file),
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("a regular file was replaced by the socket"),
    }
    assert_eq!(std::fs::read(&file).unwrap(), b"keep me");

    // A configured directory that is a file is an error at start.
    let mut cfg = config(tmp.path());
    cfg.params.filecoin_dir = Some(file.clone());
    match start(cfg, params_dir()).await {
        Err(e @ ServeError::BadPath { .. }) => assert!(e.to_string().contains("not a directory"), "{e}"),
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("a file accepted as the Filecoin parameter cache"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_proof_then_a_restart_proves_the_same_request_id() {
    ensure_params(FilKind::WinningPoSt);
    let tmp = tempfile::tempdir().unwrap();
    let socket = tmp.path().join("cuzk.sock");
    let base = format!(
        "[server]\nsocket = {:?}\nhttp = \"127.0.0.1:0\"\n\n[engine]\nbackend = \"cpu\"\nsynth_workers = 1\nhost_memory_bytes = 6442450944\ndevice_memory_bytes = 6442450944\n\n[params]\ntrusted = true\nfilecoin_dir = {:?}\n\n[log]\nfilter = \"info\"\n\n[journal]\ndir = {:?}\n",
        socket.display().to_string(),
        cache().display().to_string(),
        tmp.path().join("journal").display().to_string()
    );
    // The first daemon's MSM hangs, so the kill lands in the middle of the proof.
    let stuck = tmp.path().join("stuck.toml");
    std::fs::write(&stuck, format!("{base}\n[faults]\nenabled = true\nrules = [\"msm:delay=600000:nth=1\"]\n")).unwrap();
    let plain = tmp.path().join("plain.toml");
    std::fs::write(&plain, &base).unwrap();

    let req = cuzk_daemon::client::curio::from_fixture(raw_request(FilKind::WinningPoSt)).expect("fixture");
    let sub = cuzk_daemon::client::curio::submission(&req);
    let mut first = serve_process(tmp.path(), &stuck, "first.log");
    let http = http_of_log(tmp.path(), "first.log").await;
    let mut c = connect(&format!("unix:{}", socket.display()), None).await.expect("connect");
    let s = c.submit_proof(sub.clone()).await.expect("accepted").into_inner();
    assert_eq!(s.job_id, sub.request_id);
    let in_msm = wait_until(Duration::from_secs(60), || async {
        let Ok((200, body)) = http_get(http, "/status", None).await else { return false };
        let s: Snapshot = serde_json::from_str(&body).unwrap();
        s.devices[0].spans.iter().any(|x| x.stage == "msm" && x.end_ms.is_none())
    })
    .await;
    assert!(in_msm, "the proof never reached its MSM");
    first.kill().expect("kill -9");
    first.wait().unwrap();
    assert!(std::fs::symlink_metadata(&socket).unwrap().file_type().is_socket(), "SIGKILL leaves the socket file behind");

    // Curio's client gets a transport error, waits, and submits the same request again.
    let mut second = serve_process(tmp.path(), &plain, "second.log");
    let mut c = None;
    wait_until(Duration::from_secs(30), || {
        let ok = std::fs::read_to_string(tmp.path().join("second.log")).unwrap_or_default().contains("cuzk daemon listening");
        std::future::ready(ok)
    })
    .await;
    for _ in 0..100 {
        if let Ok(cl) = connect(&format!("unix:{}", socket.display()), None).await {
            c = Some(cl);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut c = c.expect("the restarted daemon answers on the same socket");
    let r = c.prove(proto::ProveRequest { submit: Some(sub.clone()), timeout_ms: 120_000 }).await.expect("Prove").into_inner().result.expect("result");
    assert_eq!(r.status, AwaitStatus::Completed as i32, "{}", r.error_message);
    assert_eq!(r.job_id, sub.request_id);
    assert!(verify::verify(&req, &r.proof).expect("verifier runs"), "Filecoin's verifier rejects the proof");
    let _ = Command::new("kill").args(["-TERM", &second.id().to_string()]).status();
    let status = second.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(!socket.exists(), "a clean stop removes the socket");
}

/// Recorded constraint matrices outlive the daemon: the first daemon records them and writes
/// `<matrices_dir>/<circuit>.matrices`; a restarted daemon proves with that file (it neither
/// records nor rewrites it), and replaces a corrupted one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_matrices_survive_a_restart_and_a_corrupt_file_is_rebuilt() {
    let store = tempfile::tempdir().expect("tempdir");
    let dir = store.path().to_path_buf();
    let file = dir.join("squaring-chain-2^5.matrices");
    let prove_once = |seed: u64| {
        let dir = dir.clone();
        async move {
            let d = daemon_with(&[5], |c| c.params.matrices_dir = Some(dir)).await;
            let mut c = d.client().await;
            let r = c.prove(proto::ProveRequest { submit: Some(job(5, seed, 1, proto::Priority::Normal)), timeout_ms: 0 }).await.expect("prove").into_inner();
            check_completed(&r.result.expect("result"), 5, seed, 1);
            // The status reports the matrices, as many entries as a recording of the circuit.
            let want = cuzk_core::matrices::ConstraintMatrices::record(cuzk_circuits::CircuitKind::SquaringChain.instance(5, 0).unwrap()).unwrap();
            let s = d.server.handle().snapshot().await.expect("snapshot");
            let m = s.matrices.iter().find(|m| m.circuit == "squaring-chain-2^5").expect("matrices in the status");
            assert_eq!((m.entries, m.host_bytes), (want.num_entries() as u64, want.heap_bytes() as u64));
            assert_eq!(m.device_bytes, vec![0], "the CPU backend keeps no device copy");
            stop(d).await;
        }
    };
    prove_once(1).await;
    let written = std::fs::read(&file).expect("the first daemon wrote the matrices");
    let modified = std::fs::metadata(&file).unwrap().modified().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    prove_once(2).await;
    assert_eq!(std::fs::read(&file).unwrap(), written);
    assert_eq!(std::fs::metadata(&file).unwrap().modified().unwrap(), modified, "the restarted daemon recorded the matrices again");

    let mut bad = written.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0x40;
    std::fs::write(&file, &bad).unwrap();
    prove_once(3).await;
    assert_eq!(std::fs::read(&file).unwrap(), written, "the corrupt file was not rebuilt");
}
