//! Nothing accepted is lost: `kill -9` of `cuzk serve` with jobs queued and running, then a
//! restart on the same journal: every accepted job completes under the id it was given and
//! verifies, a job that ended before the kill still answers AwaitProof with its proof, and a
//! client's retry of it is answered from the journal without proving again, and another
//! payload under its request id is a job of its own.

use std::collections::HashMap;
use std::time::Duration;

use crate::common::*;
use cuzk_daemon::client::{connect, http_get};
use cuzk_daemon::proto::{self, Priority as P};
use cuzk_daemon::server::status::Snapshot;

fn config(dir: &std::path::Path, faults: &str) -> String {
    format!(
        "[server]\nsocket = {:?}\nhttp = \"127.0.0.1:0\"\n\n[engine]\nbackend = \"cpu\"\nsynth_workers = 1\nhost_memory_bytes = 2147483648\ndevice_memory_bytes = 1073741824\n\n[params]\ntrusted = true\n\n[journal]\ndir = {:?}\n{faults}",
        dir.join("cuzk.sock").display().to_string(),
        dir.join("journal").display().to_string()
    )
}

async fn snapshot(http: std::net::SocketAddr) -> Option<Snapshot> {
    let (200, body) = http_get(http, "/status", None).await.ok()? else { return None };
    serde_json::from_str(&body).ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_with_jobs_queued_and_running_loses_none_of_them() {
    ensure(4);
    let tmp = tempfile::tempdir().unwrap();
    let socket = tmp.path().join("cuzk.sock");
    // The second daemon's first MSM hangs: its first job stays in its MSM, the others wait
    // in the queue.
    let stuck = tmp.path().join("stuck.toml");
    std::fs::write(&stuck, config(tmp.path(), "\n[faults]\nenabled = true\nrules = [\"msm:delay=600000:nth=1\"]\n")).unwrap();
    let plain = tmp.path().join("plain.toml");
    std::fs::write(&plain, config(tmp.path(), "")).unwrap();
    let addr = format!("unix:{}", socket.display());

    // A job proved and ended by a daemon that then stops cleanly.
    let mut zeroth = serve_process(tmp.path(), &plain, "zeroth.log");
    http_of_log(tmp.path(), "zeroth.log").await;
    let mut c = connect(&addr, None).await.expect("connect");
    let ended = proto::SubmitProofRequest { request_id: "ended-before".into(), ..job(4, 1, 1, P::Normal) };
    let done = c.prove(proto::ProveRequest { submit: Some(ended.clone()), timeout_ms: 60_000 }).await.expect("Prove").into_inner().result.unwrap();
    check_completed(&done, 4, 1, 1);
    let _ = std::process::Command::new("kill").args(["-TERM", &zeroth.id().to_string()]).status();
    assert!(zeroth.wait().unwrap().success());

    let mut first = serve_process(tmp.path(), &stuck, "first.log");
    let http = http_of_log(tmp.path(), "first.log").await;
    let mut c = connect(&addr, None).await.expect("connect");

    // job id -> (seed, partitions)
    let mut accepted: HashMap<String, (u64, u32)> = HashMap::new();
    let jobs = [("running", 10, 1, P::Normal), ("", 11, 2, P::Normal), ("queued-high", 12, 1, P::High), ("", 13, 1, P::Low), ("queued", 14, 3, P::Normal)];
    for (id, seed, parts, prio) in jobs {
        let req = proto::SubmitProofRequest { request_id: id.into(), ..job(4, seed, parts, prio) };
        let s = c.submit_proof(req).await.expect("accepted").into_inner();
        accepted.insert(s.job_id, (seed, parts));
        if id == "running" {
            let in_msm = wait_until(Duration::from_secs(60), || async {
                snapshot(http).await.is_some_and(|s| s.devices[0].spans.iter().any(|x| x.stage == "msm" && x.end_ms.is_none()))
            })
            .await;
            assert!(in_msm, "the first job never reached its MSM");
        }
    }
    assert!(accepted.contains_key("running") && accepted.contains_key("queued"));
    let s = snapshot(http).await.expect("status");
    assert_eq!(s.journal.map(|j| (j.open, j.ended)), Some((5, 1)), "the journal's count before the kill");
    first.kill().expect("kill -9");
    first.wait().unwrap();

    let mut second = serve_process(tmp.path(), &plain, "second.log");
    let http = http_of_log(tmp.path(), "second.log").await;
    let mut c = connect(&addr, None).await.expect("the restarted daemon answers");
    for (id, (seed, parts)) in &accepted {
        let r = c.await_proof(proto::AwaitProofRequest { job_id: id.clone(), timeout_ms: 120_000 }).await.expect("AwaitProof").into_inner();
        assert_eq!(&r.job_id, id);
        check_completed(&r, 4, *seed, *parts);
    }
    // The job that ended before the kill: its result, from the journal.
    let r = c.await_proof(proto::AwaitProofRequest { job_id: "ended-before".into(), timeout_ms: 1_000 }).await.expect("AwaitProof").into_inner();
    assert_eq!((r.status, &r.proof), (done.status, &done.proof));
    // A client's retry of it is answered from the journal: no new job.
    let submitted = snapshot(http).await.expect("status").jobs.submitted;
    let again = c.prove(proto::ProveRequest { submit: Some(ended), timeout_ms: 1_000 }).await.expect("retry").into_inner().result.unwrap();
    assert_eq!(again.proof, done.proof);
    let s = snapshot(http).await.expect("status");
    assert_eq!(s.jobs.submitted, submitted, "the retry was proved again");
    assert_eq!(s.jobs.submitted, 5, "the five open jobs were taken up");
    let recorded = wait_until(Duration::from_secs(10), || async { snapshot(http).await.and_then(|s| s.journal).is_some_and(|j| (j.open, j.ended) == (0, 6)) });
    assert!(recorded.await, "the journal's count after: {:?}", snapshot(http).await.and_then(|s| s.journal));

    // Another payload under the ended request id is a job of its own, `<id>#2`: the id an
    // earlier run ended keeps its proof.
    let other = proto::SubmitProofRequest { request_id: "ended-before".into(), ..job(4, 2, 1, P::Normal) };
    let r = c.prove(proto::ProveRequest { submit: Some(other), timeout_ms: 60_000 }).await.expect("Prove").into_inner().result.unwrap();
    assert_eq!(r.job_id, "ended-before#2");
    check_completed(&r, 4, 2, 1);
    let first = c.await_proof(proto::AwaitProofRequest { job_id: "ended-before".into(), timeout_ms: 1_000 }).await.expect("AwaitProof").into_inner();
    assert_eq!(first.proof, done.proof, "the first payload's id was taken over");
    // A new job without a request id does not take a number the first daemon gave out.
    let fresh = c.submit_proof(job(4, 20, 1, P::Normal)).await.expect("accepted").into_inner();
    assert!(!accepted.contains_key(&fresh.job_id), "job id {} given out twice", fresh.job_id);
    let _ = std::process::Command::new("kill").args(["-TERM", &second.id().to_string()]).status();
    assert!(second.wait().unwrap().success());
}

/// A job the journal holds whose circuit can no longer be proved after the restart (its
/// request names a size whose parameters are gone) ends FAILED with the reason, and AwaitProof
/// says so instead of NOT_FOUND.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journaled_job_refused_after_the_restart_fails_with_the_reason() {
    use cuzk_daemon::server::journal::Journal;
    use prost::Message;
    let tmp = tempfile::tempdir().unwrap();
    {
        let (j, _) = Journal::open(&tmp.path().join("journal"), Duration::from_secs(60), 10).unwrap();
        // squaring-chain at 2^27 has no parameter file here.
        let req = proto::SubmitProofRequest { request_id: "gone".into(), ..job(27, 1, 1, P::Normal) };
        j.accepted("gone", cuzk_daemon::server::request::payload_digest(&req), &req.encode_to_vec()).unwrap();
    }
    let d = daemon_with(&[4], |c| c.journal.dir = Some(tmp.path().join("journal"))).await;
    let mut c = d.client().await;
    let r = c.await_proof(proto::AwaitProofRequest { job_id: "gone".into(), timeout_ms: 30_000 }).await.expect("AwaitProof").into_inner();
    assert_eq!(r.status, proto::await_proof_response::Status::Failed as i32);
    assert!(r.error_message.contains("refused when taken up again"), "{}", r.error_message);
    stop(d).await;
}
