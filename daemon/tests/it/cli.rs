//! The `cuzk` binary end to end: `serve` in a child process, the client commands and
//! `cuzk load` against it, then SIGTERM with jobs in flight: every one gets a final status.

use crate::common;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;
use cuzk_daemon::client::connect;
use cuzk_daemon::proto::{self, Priority as P};

const BIN: &str = env!("CARGO_BIN_EXE_cuzk");

fn cuzk(socket: &Path, args: &[&str]) -> Output {
    let out = Command::new(BIN)
        .arg("--data-dir")
        .arg(params_dir())
        .arg("--addr")
        .arg(format!("unix:{}", socket.display()))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("cuzk runs");
    out
}

fn wait_exit(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let end = Instant::now() + limit;
    loop {
        if let Some(s) = child.try_wait().expect("wait") {
            return s;
        }
        if Instant::now() > end {
            let _ = child.kill();
            panic!("cuzk serve did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_load_and_sigterm() {
    ensure(4);
    ensure(6);
    let tmp = tempfile::tempdir().unwrap();
    let socket = tmp.path().join("d.sock");
    let config = tmp.path().join("cuzk.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nsocket = {:?}\nhttp = \"\"\n\n[engine]\nsynth_workers = 1\nhost_memory_bytes = 1073741824\ndevice_memory_bytes = 1073741824\n\n[params]\ntrusted = true\npreload = [\"squaring-chain-2^4\"]\n\n[shutdown]\nmode = \"drain\"\ntimeout_s = 60\nlinger_ms = 300\n\n[log]\nfilter = \"info\"\n\n[journal]\ndir = {:?}\n",
            socket.display().to_string(),
            tmp.path().join("journal").display().to_string()
        ),
    )
    .unwrap();
    let log = tmp.path().join("serve.log");
    let mut server = Command::new(BIN)
        .arg("--data-dir")
        .arg(params_dir())
        .args(["serve", "--config"])
        .arg(&config)
        .stdin(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log file"))
        .spawn()
        .expect("serve starts");
    let up = wait_until(Duration::from_secs(30), || async { connect(&format!("unix:{}", socket.display()), None).await.is_ok() }).await;
    assert!(up, "daemon socket did not come up");

    // Client commands.
    let out = cuzk(&socket, &["submit", "--circuit", "squaring-chain", "--log-size", "4", "--partitions", "2", "--wait"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("COMPLETED") && text.contains("2 partitions"), "{text}");
    let out = cuzk(&socket, &["status"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("proofs completed 1"), "{text}");
    let out = cuzk(&socket, &["await", "0"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = cuzk(&socket, &["cancel", "0"]);
    assert!(!out.status.success(), "cancelling a finished job is an error");

    // The load generator.
    let out =
        cuzk(&socket, &["load", "--jobs", "8", "--concurrency", "4", "--mix", "squaring-chain:4:normal*3,squaring-chain:6:critical", "--verify", "--quiet"]);
    let text = String::from_utf8_lossy(&out.stdout);
    println!("{text}");
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("throughput") && text.contains("completed 8, failed 0"), "{text}");
    assert!(text.contains("| squaring-chain-2^4/normal | 6 | 0 |") && text.contains("| squaring-chain-2^6/critical | 2 | 0 |"), "{text}");
    assert!(text.contains("device 0") && text.contains("busy"), "{text}");

    // SIGTERM with jobs queued: drain mode finishes them, and every waiter gets its status.
    let mut c = connect(&format!("unix:{}", socket.display()), None).await.unwrap();
    let mut waits = Vec::new();
    for i in 0..3 {
        let mut c = c.clone();
        waits.push(tokio::spawn(async move { c.prove(proto::ProveRequest { submit: Some(job(6, 50 + i, 2, P::Normal)), timeout_ms: 0 }).await }));
    }
    assert!(
        wait_until(Duration::from_secs(30), || {
            let mut c = c.clone();
            async move {
                match c.get_status(proto::GetStatusRequest {}).await {
                    Ok(s) => s.get_ref().queues.iter().map(|q| q.pending + q.in_progress).sum::<u32>() >= 3,
                    Err(_) => false,
                }
            }
        })
        .await
    );
    let kill = Command::new("kill").args(["-TERM", &server.id().to_string()]).status().expect("kill");
    assert!(kill.success());
    for (i, w) in waits.into_iter().enumerate() {
        let r = tokio::time::timeout(Duration::from_secs(60), w).await.expect("in time").unwrap().expect("final status");
        check_completed(&r.into_inner().result.unwrap(), 6, 50 + i as u64, 2);
    }
    let status = wait_exit(&mut server, Duration::from_secs(60));
    assert!(status.success(), "serve exited with {status}");
    assert!(!socket.exists(), "socket removed");
    // Logged to a file, not a terminal: plain text, no colour escape codes.
    let text = std::fs::read_to_string(&log).expect("log");
    assert!(text.contains("cuzk daemon listening") && text.contains("job ended"), "{text}");
    assert!(!text.contains('\x1b'), "escape codes in a log file:\n{text}");
    let _ = c.get_status(proto::GetStatusRequest {}).await.expect_err("daemon is gone");
}

/// The proof lines of `cuzk prove`: `proof` (one partition) or `proof i` (several).
fn proofs(stdout: &str) -> Vec<String> {
    stdout.lines().filter(|l| l.starts_with("proof ")).map(|l| l.split_whitespace().last().unwrap_or_default().to_string()).collect()
}

#[test]
fn prove_over_two_devices_matches_single_device_proofs() {
    ensure(6);
    let none = Path::new("/nonexistent.sock");
    let base = ["prove", "--circuit", "squaring-chain", "--log-size", "6", "--backend", "cpu", "--trust-params"];
    let out = cuzk(none, &[&base[..], &["--devices", "0,1", "--partitions", "3", "--seed", "7"]].concat());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("verified  yes"), "{stdout}");
    let per_device: usize = stdout
        .lines()
        .filter(|l| l.starts_with("device ") && l.ends_with(" partitions"))
        .map(|l| l.split_whitespace().nth(2).unwrap().parse::<usize>().unwrap())
        .sum();
    assert_eq!(per_device, 3, "every partition ran on one of the two devices:\n{stdout}");
    let spread = proofs(&stdout);
    assert_eq!(spread.len(), 3);
    // Partition i is the proof of seed 7 + i: the same bytes as one partition on one device
    // (which records no constraint matrices, so the two paths are independent).
    for (i, want) in spread.iter().enumerate() {
        let seed = (7 + i).to_string();
        let one = cuzk(none, &[&base[..], &["--seed", &seed]].concat());
        assert!(one.status.success(), "{}", String::from_utf8_lossy(&one.stderr));
        assert_eq!(proofs(&String::from_utf8_lossy(&one.stdout)), vec![want.clone()], "partition {i}");
    }
    let absent = cuzk(none, &["prove", "--circuit", "squaring-chain", "--log-size", "6", "--devices", "9"]);
    assert!(!absent.status.success());
    assert!(String::from_utf8_lossy(&absent.stderr).contains("CUDA device 9"), "{}", String::from_utf8_lossy(&absent.stderr));
}

/// `cuzk prove` validates a parameter file in full once and keeps a validation record in the
/// data directory (the daemon's own `validated` folder): the next run trusts the unchanged file,
/// and a changed file is validated in full again.
#[test]
fn prove_validates_a_file_once_and_then_trusts_its_record() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let src = ensure(6);
    let params = tmp.path().join("params");
    std::fs::create_dir_all(&params).unwrap();
    let file = params.join(src.file_name().unwrap());
    std::fs::copy(&src, &file).unwrap();
    let run = || {
        let out = Command::new(BIN)
            .args(["--data-dir", tmp.path().to_str().unwrap(), "prove", "--circuit", "squaring-chain", "--log-size", "6", "--backend", "cpu"])
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .output()
            .expect("cuzk runs");
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
        assert!(out.status.success() && stdout.contains("verified  yes"), "{stdout}\n{stderr}");
        stderr.contains("matches its validation record")
    };
    let records = || std::fs::read_dir(tmp.path().join("validated")).map(|d| d.count()).unwrap_or(0);
    assert!(!run(), "the first run had no record to trust");
    assert_eq!(records(), 1, "a record after the full validation");
    assert!(run(), "the second run trusts the record");
    // The same length, other bytes: the record no longer matches, so a full validation again.
    let mut bytes = std::fs::read(&file).unwrap();
    let last = bytes.len() - 1;
    bytes.swap(last - 96, last); // inside the last points: a wrong point fails the full check
    std::fs::write(&file, &bytes).unwrap();
    let out = Command::new(BIN)
        .args(["--data-dir", tmp.path().to_str().unwrap(), "prove", "--circuit", "squaring-chain", "--log-size", "6", "--backend", "cpu"])
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .output()
        .expect("cuzk runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("matches its validation record"), "a changed file trusted: {stderr}");
}
