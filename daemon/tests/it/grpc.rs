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
    // The first NORMAL job's first MSM is held for 3 s on the only GPU worker, so the backlog
    // is still queued when the CRITICAL job arrives however slowly submissions go (each one
    // waits for the journal's fsync). With one synthesis worker and one partition of
    // look-ahead, at most the held job and one synthesized behind it have started by then.
    let d = daemon_with(&[6], |c| {
        c.engine.synth_workers = 1;
        c.engine.gpu_workers = 1;
        c.engine.synth_lookahead = 1;
        c.faults.enabled = true;
        c.faults.rules = vec!["msm:delay=3000:nth=1".into()];
    })
    .await;
    let mut c = d.client().await;
    let t0 = Instant::now();
    let mut ids = Vec::new();
    for i in 0..8 {
        ids.push(c.submit_proof(job(6, i, 1, P::Normal)).await.unwrap().into_inner().job_id);
    }
    let crit = c.submit_proof(job(6, 99, 1, P::Critical)).await.unwrap().into_inner();
    let submitted = t0.elapsed();
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
    let mut after = 0;
    for (i, (r, t)) in ends.iter().enumerate() {
        check_completed(r, 6, i as u64, 1);
        after += usize::from(*t > crit_end);
    }
    assert!(submitted < Duration::from_millis(2_500), "submissions took {submitted:?}: the held MSM no longer covers them");
    assert!(after >= 6, "only {after} of 8 NORMAL jobs finished after the CRITICAL one");
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

/// Request ids with Curio's semantics (it reuses `porep-<miner>-<sector>` and the like on every
/// retry): the same payload joins a live or completed job; after a failure or a cancellation,
/// or with another payload, the id is proved again. Job ids are the request ids.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_ids_join_live_and_completed_jobs_and_retry_ended_ones() {
    let d = daemon_with(&[4, 8], |_| {}).await;
    let handle = d.server.handle();
    let submitted = || async { handle.snapshot().await.unwrap().jobs.submitted };
    let mut c = d.client().await;
    let waiter = c.clone();
    let await_id = move |id: &str| {
        let mut c = waiter.clone();
        let id = id.to_string();
        async move { c.await_proof(proto::AwaitProofRequest { job_id: id, timeout_ms: 120_000 }).await.unwrap().into_inner() }
    };

    // A duplicate of a running job joins it.
    let mut r = job(8, 7, 16, P::Normal);
    r.request_id = "abc-1".into();
    let a = c.submit_proof(r.clone()).await.unwrap().into_inner();
    let live = handle.snapshot().await.unwrap().jobs.live;
    let b = c.submit_proof(r.clone()).await.unwrap().into_inner();
    assert_eq!((a.job_id.as_str(), b.job_id.as_str()), ("abc-1", "abc-1"));
    assert_eq!((live, submitted().await), (1, 1), "the duplicate joined the running job");
    let first = await_id("abc-1").await;
    check_completed(&first, 8, 7, 16);
    // Completed, same payload (another priority does not count): the same proof, no new job.
    r.priority = P::High as i32;
    let again = c.prove(proto::ProveRequest { submit: Some(r.clone()), timeout_ms: 0 }).await.unwrap().into_inner().result.unwrap();
    assert_eq!(again.proof, first.proof);
    assert_eq!(submitted().await, 1);
    // Another payload under the used id: proved anew, for its own witness, as a job of its own
    // (`abc-1#2`); `abc-1` still names the first payload's job.
    let mut other = job(8, 8, 16, P::Normal);
    other.request_id = "abc-1".into();
    let res = c.prove(proto::ProveRequest { submit: Some(other), timeout_ms: 0 }).await.unwrap().into_inner().result.unwrap();
    check_completed(&res, 8, 8, 16);
    assert_eq!(res.job_id, "abc-1#2");
    assert_ne!(res.proof, first.proof);
    assert_eq!(submitted().await, 2);
    assert_eq!(await_id("abc-1").await.proof, first.proof);

    // Failed (deadline), then retried with the same payload: proved again.
    let mut r = job(4, 9, 8, P::Low);
    r.request_id = "abc-2".into();
    r.deadline_ms = 1;
    c.submit_proof(r.clone()).await.unwrap();
    let res = await_id("abc-2").await;
    assert_eq!(res.status, S::Failed as i32);
    assert!(res.error_message.contains("deadline"), "{}", res.error_message);
    r.deadline_ms = 0;
    let res = c.prove(proto::ProveRequest { submit: Some(r), timeout_ms: 0 }).await.unwrap().into_inner().result.unwrap();
    check_completed(&res, 4, 9, 8);
    assert_eq!(res.job_id, "abc-2");

    // Cancelled through its request id, then retried: proved again.
    let mut r = job(8, 10, 16, P::Low);
    r.request_id = "abc-3".into();
    c.submit_proof(r.clone()).await.unwrap();
    c.cancel_proof(proto::CancelProofRequest { job_id: "abc-3".into() }).await.unwrap();
    assert_eq!(await_id("abc-3").await.status, S::Cancelled as i32);
    let res = c.prove(proto::ProveRequest { submit: Some(r), timeout_ms: 0 }).await.unwrap().into_inner().result.unwrap();
    check_completed(&res, 8, 10, 16);

    // Jobs without a request id get the daemon's numbers, which request ids may not look like.
    let id = c.submit_proof(job(4, 11, 1, P::Normal)).await.unwrap().into_inner().job_id;
    assert!(id.parse::<u64>().is_ok(), "{id}");
    check_completed(&await_id(&id).await, 4, 11, 1);
    let mut r = job(4, 12, 1, P::Normal);
    r.request_id = "12345".into();
    let e = c.submit_proof(r).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(e.message().contains("bare number"), "{}", e.message());
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

/// GetStatus as Curio reads it: summing `pending + in_progress` over `queues` (one row per
/// proof kind) counts every live job once; the busy device names its job and kind; GetMetrics
/// carries Curio's metric names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_counts_each_job_once_and_names_the_running_kind() {
    let d = daemon_with(&[8], |_| {}).await;
    let mut c = d.client().await;
    let mut waits = Vec::new();
    for i in 0..3 {
        let mut r = job(8, 100 + i, 24, P::Normal);
        r.request_id = format!("status-{i}");
        let sub = c.submit_proof(r).await.unwrap().into_inner();
        assert_eq!(sub.assigned_gpu, "0", "one device: every job runs there");
        let mut c = c.clone();
        waits.push(tokio::spawn(async move { c.await_proof(proto::AwaitProofRequest { job_id: format!("status-{i}"), timeout_ms: 0 }).await }));
    }
    let s = c.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner();
    let live = d.server.handle().snapshot().await.unwrap().jobs.live as u32;
    let sum = |q: &[proto::QueueStatus]| q.iter().map(|q| q.pending + q.in_progress).sum::<u32>();
    assert_eq!(sum(&s.queues), live, "{:?}", s.queues);
    assert_eq!(sum(&s.priority_queues), live, "{:?}", s.priority_queues);
    assert!(live >= 1);
    let kinds: Vec<&str> = s.queues.iter().map(|q| q.proof_kind.as_str()).collect();
    assert_eq!(kinds, ["porep-c2", "snap-update", "window-post", "winning-post", "generic"]);
    let named = wait_until(Duration::from_secs(60), || {
        let mut c = c.clone();
        async move {
            let s = c.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner();
            s.gpus.iter().any(|g| g.current_job_id.starts_with("status-") && g.current_proof_kind == "generic")
        }
    })
    .await;
    assert!(named, "a device names the running job and its kind");
    for w in waits {
        assert_eq!(w.await.unwrap().unwrap().into_inner().status, S::Completed as i32);
    }
    let text = c.get_metrics(proto::GetMetricsRequest {}).await.unwrap().into_inner().prometheus_text;
    for line in [
        "cuzk_proofs_completed_total 3",
        "cuzk_proofs_failed_total 0",
        "cuzk_queue_depth 0",
        "cuzk_proofs_completed{proof_kind=\"generic\"} 3",
        "cuzk_proofs_completed{proof_kind=\"window_post\"} 0",
        "cuzk_proof_duration_seconds_count{proof_kind=\"generic\"} 3",
        "cuzk_running_jobs 0",
        "cuzk_gpu_workers 1",
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
    }
    stop(d).await;
}
