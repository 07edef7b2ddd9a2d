//! The budget for request bytes in flight: a message over it is refused with
//! RESOURCE_EXHAUSTED from its frame header, before it is read; GetStatus answers while large
//! messages are received; many large requests at once keep the daemon's peak memory within its
//! budget; fields a kind does not use and messages of too many fields are refused.

use std::time::Duration;

use crate::common::*;
use cuzk_daemon::proto::{self, Priority as P};
use cuzk_daemon::server::intake::charge;
use tonic::Code;

/// A GENERIC submission carrying `len` bytes in a field GENERIC does not use.
fn junk(len: usize) -> proto::SubmitProofRequest {
    proto::SubmitProofRequest { vanilla_proof: vec![0x5a; len], ..job(4, 1, 1, P::Normal) }
}

/// Bytes charged to requests in flight, from the status.
async fn in_flight(d: &Daemon) -> u64 {
    let (_, body) = cuzk_daemon::client::http_get(d.http(), "/status", None).await.expect("status");
    let s: cuzk_daemon::server::status::Snapshot = serde_json::from_str(&body).expect("json");
    s.requests.in_flight_bytes
}

/// One client holds a 100 MiB message half sent (its frame header and 1 KiB), which takes the
/// whole budget: a second large request is refused at once naming the setting, small calls
/// go on; once the first is dropped its share returns, and the same request is decoded and
/// refused for its content.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_over_the_budget_is_refused_at_once_and_small_calls_go_on() {
    ensure(4);
    const LEN: usize = 100 << 20;
    let d = daemon_with(&[4], |c| {
        c.server.max_request_bytes = LEN + (1 << 20);
        c.server.request_budget_bytes = charge(LEN + (1 << 20));
    })
    .await;

    // The first request, by hand over HTTP/2: headers, the gRPC frame header, 1 KiB.
    let io = tokio::net::UnixStream::connect(&d.socket).await.expect("connect");
    let (h2, conn) = h2::client::handshake(io).await.expect("HTTP/2 handshake");
    tokio::spawn(conn);
    let mut h2 = h2.ready().await.expect("ready");
    let req = http::Request::post("http://localhost/cuzk.v1.ProvingEngine/SubmitProof")
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .unwrap();
    let (first, mut send) = h2.send_request(req, false).expect("send");
    let mut head = vec![0u8];
    head.extend_from_slice(&(LEN as u32).to_be_bytes());
    head.extend_from_slice(&[0; 1024]);
    send.send_data(head.into(), false).expect("data");
    assert!(wait_until(Duration::from_secs(10), || async { in_flight(&d).await >= charge(LEN) }).await, "the first message was never charged");

    let mut c = d.client().await;
    let e = c.submit_proof(junk(LEN)).await.expect_err("a second 100 MiB request fits no budget");
    assert_eq!(e.code(), Code::ResourceExhausted, "{e}");
    assert!(e.message().contains("request_budget_bytes"), "{}", e.message());
    c.get_status(proto::GetStatusRequest {}).await.expect("GetStatus answers");
    let r = c.prove(proto::ProveRequest { submit: Some(job(4, 7, 1, P::Normal)), timeout_ms: 60_000 }).await.expect("a small job").into_inner();
    check_completed(&r.result.expect("result"), 4, 7, 1);

    // The first client goes away: its share comes back.
    send.send_reset(h2::Reason::CANCEL);
    drop(first);
    assert!(wait_until(Duration::from_secs(10), || async { in_flight(&d).await == 0 }).await, "the share of a dropped call was not released");
    let e = c.submit_proof(junk(LEN)).await.expect_err("GENERIC does not use vanilla_proof");
    assert_eq!(e.code(), Code::InvalidArgument, "{e}");
    assert!(e.message().contains("does not use vanilla_proof"), "{}", e.message());
    let s = c.get_metrics(proto::GetMetricsRequest {}).await.expect("metrics").into_inner().prometheus_text;
    assert!(s.lines().any(|l| l == "cuzk_requests_over_budget_total 1"), "{s}");
    stop(d).await;
}

/// Each proof kind refuses the fields it does not read, naming the field; Curio's own
/// requests set only fields their kind reads (`curio.rs` sends them).
#[test]
fn fields_a_kind_does_not_use_are_refused() {
    use cuzk_daemon::server::request::validate;
    type Set = fn(&mut proto::SubmitProofRequest);
    let cases: [(proto::ProofKind, Set, &str); 5] = [
        (proto::ProofKind::Generic, |r| r.vanilla_proofs = vec![Vec::new(); 3], "vanilla_proofs (set to 3 entries)"),
        (proto::ProofKind::PorepSealCommit, |r| r.randomness = vec![1; 32], "randomness (set to 32 bytes)"),
        (proto::ProofKind::WinningPost, |r| r.partition_index = 2, "partition_index (set to 2)"),
        (proto::ProofKind::WindowPostPartition, |r| r.comm_r_old = vec![1; 32], "comm_r_old"),
        (proto::ProofKind::SnapDealsUpdate, |r| r.generic = Some(Default::default()), "generic (set to set)"),
    ];
    for (kind, set, want) in cases {
        let mut r = proto::SubmitProofRequest { proof_kind: kind as i32, ..Default::default() };
        if kind == proto::ProofKind::Generic {
            r.generic = job(4, 1, 1, P::Normal).generic;
        }
        set(&mut r);
        let e = validate(r).expect_err("refused").to_string();
        assert!(e.contains(kind.as_str_name()) && e.contains(want), "{kind:?}: {e}");
    }
}

/// Peak resident memory of a process, bytes (`VmHWM`).
fn peak_rss(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let kb: u64 = s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse().ok()).expect("VmHWM");
    kb * 1024
}

/// Eight 100 MiB submissions and two of 30 M empty entries at once, against a daemon whose
/// budget holds two 100 MiB messages (each used to take 25 times its size): every one is
/// refused (RESOURCE_EXHAUSTED, or INVALID_ARGUMENT once decoded), the daemon's peak
/// resident memory grows by no more than its budget and 128 MiB, and it proves after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_large_requests_at_once_stay_within_the_request_budget() {
    ensure(4);
    const LEN: usize = 100 << 20;
    let budget = 2 * charge(LEN) + (1 << 20);
    let tmp = tempfile::tempdir().unwrap();
    let socket = tmp.path().join("cuzk.sock");
    let config = tmp.path().join("cuzk.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nsocket = {:?}\nhttp = \"127.0.0.1:0\"\nmax_request_bytes = {}\nrequest_budget_bytes = {budget}\n\n[engine]\nbackend = \"cpu\"\nsynth_workers = 1\nhost_memory_bytes = 4294967296\ndevice_memory_bytes = 1073741824\n\n[params]\ntrusted = true\n\n[journal]\ndir = {:?}\n",
            socket.display().to_string(),
            128 << 20,
            tmp.path().join("journal").display().to_string()
        ),
    )
    .unwrap();
    let mut daemon = serve_process(tmp.path(), &config, "serve.log");
    http_of_log(tmp.path(), "serve.log").await;
    let addr = format!("unix:{}", socket.display());
    let mut c = cuzk_daemon::client::connect(&addr, None).await.expect("connect");
    let r = c.prove(proto::ProveRequest { submit: Some(job(4, 1, 1, P::Normal)), timeout_ms: 60_000 }).await.expect("warm-up").into_inner();
    check_completed(&r.result.expect("result"), 4, 1, 1);
    let before = peak_rss(daemon.id());

    let mut calls = Vec::new();
    for i in 0..10 {
        let addr = addr.clone();
        calls.push(tokio::spawn(async move {
            let req = if i < 8 { junk(LEN) } else { proto::SubmitProofRequest { vanilla_proofs: vec![Vec::new(); 30_000_000], ..job(4, 1, 1, P::Normal) } };
            let mut c = cuzk_daemon::client::connect(&addr, None).await.expect("connect");
            c.submit_proof(req).await.expect_err("refused").code()
        }));
    }
    for call in calls {
        let code = call.await.unwrap();
        assert!(matches!(code, Code::ResourceExhausted | Code::InvalidArgument), "{code:?}");
    }
    let peak = peak_rss(daemon.id());
    assert!(peak <= before + budget + (128 << 20), "peak RSS {peak} bytes, {before} before: more than the {budget}-byte budget and 128 MiB");

    let r = c.prove(proto::ProveRequest { submit: Some(job(4, 2, 1, P::Normal)), timeout_ms: 60_000 }).await.expect("after").into_inner();
    check_completed(&r.result.expect("result"), 4, 2, 1);
    let _ = std::process::Command::new("kill").args(["-TERM", &daemon.id().to_string()]).status();
    assert!(daemon.wait().unwrap().success());
}
