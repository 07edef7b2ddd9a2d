//! The gRPC API over a real unix socket with a real tonic client.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use cuzk_daemon::proto::{self, await_proof_response::Status as S, Priority as P};
use tonic::Code;

const T: Duration = Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_priorities_complete_with_valid_proofs() {
    let d = daemon_with(&[4, 6], |c| c.engine.synth_workers = 2).await;
    let c = d.client().await;
    let prios = [P::Low, P::Normal, P::High, P::Critical, P::Unspecified];
    let mut tasks = Vec::new();
    for i in 0..12u64 {
        let (k, parts) = if i % 3 == 0 { (6, 2) } else { (4, 1) };
        let req = job(k, 100 * i, parts, prios[i as usize % prios.len()]);
        let mut c = c.clone();
        tasks.push(tokio::spawn(async move {
            let r = c.prove(proto::ProveRequest { submit: Some(req), timeout_ms: 0 }).await.expect("prove").into_inner();
            (k, 100 * i, parts, r.result.expect("result"))
        }));
    }
    for t in tasks {
        let (k, seed, parts, r) = tokio::time::timeout(T, t).await.expect("in time").expect("task");
        check_completed(&r, k, seed, parts);
        assert!(r.total_ms >= r.queue_wait_ms);
    }
    let s = d.server.handle().snapshot().await.unwrap();
    assert_eq!(s.jobs.completed, 12);
    assert_eq!(s.jobs.live, 0);
    stop(d).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn critical_overtakes_normal_backlog() {
    let d = daemon_with(&[6], |_| {}).await;
    let mut c = d.client().await;
    let mut ids = Vec::new();
    for i in 0..8 {
        ids.push(c.submit_proof(job(6, i, 1, P::Normal)).await.unwrap().into_inner().job_id);
    }
    let crit = c.submit_proof(job(6, 99, 1, P::Critical)).await.unwrap().into_inner();
    let mut waits = Vec::new();
    for id in ids.iter().chain([&crit.job_id]) {
        let mut c = c.clone();
        let id = id.clone();
        waits.push(tokio::spawn(async move {
            let r = c.await_proof(proto::AwaitProofRequest { job_id: id, timeout_ms: 0 }).await.unwrap().into_inner();
            (r, Instant::now())
        }));
    }
    let mut ends = Vec::new();
    for w in waits {
        ends.push(tokio::time::timeout(T, w).await.expect("in time").unwrap());
    }
    let (crit_r, crit_end) = ends.pop().unwrap();
    check_completed(&crit_r, 6, 99, 1);
    let after = ends.iter().filter(|(r, t)| {
        assert_eq!(r.status, S::Completed as i32);
        *t > crit_end
    });
    // With one synthesis worker the backlog has at most a few jobs started when the CRITICAL
    // job arrives; it must pass all the others.
    let n = after.count();
    assert!(n >= 4, "only {n} of 8 NORMAL jobs finished after the CRITICAL one");
    stop(d).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_queued_and_running_jobs() {
    // One synthesis worker, one GPU worker and one partition of look-ahead: the third queued
    // job cannot start until two others have passed the device, so it is still queued when
    // it is cancelled (with the defaults and fast cached synthesis it could already be running).
    let d = daemon_with(&[6], |cfg| {
        cfg.engine.synth_workers = 1;
        cfg.engine.gpu_workers = 1;
        cfg.engine.synth_lookahead = 1;
    })
    .await;
    let mut c = d.client().await;
    let running = c.submit_proof(job(6, 1, 6, P::Normal)).await.unwrap().into_inner().job_id;
    let queued: Vec<String> = {
        let mut v = Vec::new();
        for i in 0..3 {
            v.push(c.submit_proof(job(6, 10 + i, 1, P::Normal)).await.unwrap().into_inner().job_id);
        }
        v
    };
    // Wait until the first job has a stage running.
    let h = d.server.handle();
    assert!(wait_until(T, || async { h.snapshot().await.map(|s| s.queues.iter().any(|q| q.running > 0)).unwrap_or(false) }).await);
    let r = c.cancel_proof(proto::CancelProofRequest { job_id: running.clone() }).await.unwrap().into_inner();
    assert!(r.was_running);
    let r = c.cancel_proof(proto::CancelProofRequest { job_id: queued[2].clone() }).await.unwrap().into_inner();
    assert!(!r.was_running);
    for (id, want) in [(&running, S::Cancelled), (&queued[2], S::Cancelled), (&queued[0], S::Completed), (&queued[1], S::Completed)] {
        let r = c.await_proof(proto::AwaitProofRequest { job_id: id.clone(), timeout_ms: 60_000 }).await.unwrap().into_inner();
        assert_eq!(r.status, want as i32, "job {id}: {}", r.error_message);
    }
    // Cancelling an ended job or an unknown one is refused clearly.
    let e = c.cancel_proof(proto::CancelProofRequest { job_id: running.clone() }).await.unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    let e = c.cancel_proof(proto::CancelProofRequest { job_id: "987654".into() }).await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    // The daemon keeps proving after cancelling running work.
    let r = c.prove(proto::ProveRequest { submit: Some(job(6, 5, 1, P::High)), timeout_ms: 60_000 }).await.unwrap().into_inner();
    check_completed(&r.result.unwrap(), 6, 5, 1);
    stop(d).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn await_timeout_returns_timeout() {
    let d = daemon_with(&[6], |_| {}).await;
    let mut c = d.client().await;
    let id = c.submit_proof(job(6, 3, 4, P::Normal)).await.unwrap().into_inner().job_id;
    let t = Instant::now();
    let r = c.await_proof(proto::AwaitProofRequest { job_id: id.clone(), timeout_ms: 20 }).await.unwrap().into_inner();
    assert_eq!(r.status, S::Timeout as i32);
    assert!(t.elapsed() < Duration::from_secs(10));
    let r = c.await_proof(proto::AwaitProofRequest { job_id: id, timeout_ms: 0 }).await.unwrap().into_inner();
    check_completed(&r, 6, 3, 4);
    // Prove with a timeout too.
    let r = c.prove(proto::ProveRequest { submit: Some(job(6, 4, 4, P::Low)), timeout_ms: 1 }).await.unwrap().into_inner();
    assert_eq!(r.result.unwrap().status, S::Timeout as i32);
    stop(d).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_id_is_idempotent_and_deadline_fails_job() {
    let d = daemon_with(&[4], |_| {}).await;
    let mut c = d.client().await;
    let mut r = job(4, 7, 1, P::Normal);
    r.request_id = "abc-1".into();
    let a = c.submit_proof(r.clone()).await.unwrap().into_inner().job_id;
    let b = c.submit_proof(r).await.unwrap().into_inner().job_id;
    assert_eq!(a, b);
    let mut r = job(4, 8, 8, P::Low);
    r.deadline_ms = 1;
    let id = c.submit_proof(r).await.unwrap().into_inner().job_id;
    let res = c.await_proof(proto::AwaitProofRequest { job_id: id, timeout_ms: 60_000 }).await.unwrap().into_inner();
    assert_eq!(res.status, S::Failed as i32);
    assert!(res.error_message.contains("deadline"), "{}", res.error_message);
    stop(d).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preload_evict_and_status() {
    let d = daemon_with(&[4], |_| {}).await;
    let mut c = d.client().await;
    let p = c.preload_srs(proto::PreloadSrsRequest { circuit_id: "squaring-chain-2^4".into() }).await.unwrap().into_inner();
    assert!(!p.already_loaded);
    let p = c.preload_srs(proto::PreloadSrsRequest { circuit_id: "squaring-chain-2^4".into() }).await.unwrap().into_inner();
    assert!(p.already_loaded);
    let s = c.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner();
    assert_eq!(s.gpus.len(), 1);
    assert!(s.loaded_srs.iter().any(|x| x.circuit_id == "squaring-chain-2^4" && x.tier == proto::srs_status::Tier::Hot as i32));
    let e = c.evict_srs(proto::EvictSrsRequest { circuit_id: "squaring-chain-2^4".into() }).await.unwrap().into_inner();
    assert!(e.was_loaded && e.freed_bytes > 0);
    let s = c.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner();
    assert!(!s.loaded_srs.iter().any(|x| x.circuit_id == "squaring-chain-2^4"));
    let e = c.preload_srs(proto::PreloadSrsRequest { circuit_id: "squaring-chain-2^3".into() }).await.unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition, "{}", e.message());
    stop(d).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_shutdown_finishes_accepted_jobs_and_refuses_new_ones() {
    let d = daemon_with(&[4], |c| c.shutdown.mode = cuzk_daemon::config::ShutdownMode::Drain).await;
    let mut c = d.client().await;
    let mut waits = Vec::new();
    for i in 0..3 {
        let id = c.submit_proof(job(4, i, 2, P::Normal)).await.unwrap().into_inner().job_id;
        let mut c = c.clone();
        waits.push(tokio::spawn(async move { c.await_proof(proto::AwaitProofRequest { job_id: id, timeout_ms: 0 }).await }));
    }
    d.server.shutdown();
    let e = c.submit_proof(job(4, 9, 1, P::Normal)).await.unwrap_err();
    assert_eq!(e.code(), Code::Unavailable);
    for (i, w) in waits.into_iter().enumerate() {
        let r = tokio::time::timeout(T, w).await.expect("in time").unwrap().expect("final status").into_inner();
        check_completed(&r, 4, i as u64, 2);
    }
    let socket = d.socket.clone();
    tokio::time::timeout(T, d.server.wait()).await.expect("stops").expect("clean");
    assert!(!socket.exists(), "socket removed at exit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_shutdown_gives_every_job_a_final_status() {
    let d = daemon_with(&[6], |_| {}).await;
    let mut c = d.client().await;
    let mut waits = Vec::new();
    for i in 0..4 {
        let id = c.submit_proof(job(6, i, 2, P::Normal)).await.unwrap().into_inner().job_id;
        let mut c = c.clone();
        waits.push(tokio::spawn(async move { c.await_proof(proto::AwaitProofRequest { job_id: id, timeout_ms: 0 }).await }));
    }
    let h = d.server.handle();
    assert!(wait_until(T, || async { h.snapshot().await.map(|s| s.jobs.submitted == 4).unwrap_or(false) }).await);
    d.server.shutdown_with(cuzk_daemon::config::ShutdownMode::Cancel);
    let mut cancelled = 0;
    for w in waits {
        let r = tokio::time::timeout(T, w).await.expect("in time").unwrap().expect("final status").into_inner();
        assert!(r.status == S::Cancelled as i32 || r.status == S::Completed as i32, "status {}", r.status);
        cancelled += usize::from(r.status == S::Cancelled as i32);
    }
    assert!(cancelled >= 1);
    tokio::time::timeout(T, d.server.wait()).await.expect("stops").expect("clean");
}
