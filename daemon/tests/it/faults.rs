//! Faults and load, with `cuzk_faults::FaultyBackend` over the CPU backend: a corrupted MSM
//! is caught by the self-check and proved again; device errors are retried; a stage past the
//! watchdog fails over to the other device; a device that keeps failing leaves service; every
//! job ends once and the engine's reservations return to zero; a flood is refused with
//! RESOURCE_EXHAUSTED while CRITICAL work gets through; low host memory pauses synthesis.
//! Proofs are checked with the verifying key of the parameter file (and Filecoin's verifier),
//! never against stored bytes.

use crate::common;
use crate::filecoin::{cache, ensure_params, raw_request};

use std::time::{Duration, Instant};

use common::*;
use cuzk_backend_cpu::CpuBackend;
use cuzk_circuits_filecoin::{verify, FilKind};
use cuzk_daemon::any_backend::AnyBackend;
use cuzk_daemon::circuits::{CircuitShape, GenericShape};
use cuzk_daemon::client::{http_get, verify_result};
use cuzk_daemon::config::{Config, SelfCheck};
use cuzk_daemon::proto::{self, await_proof_response::Status as AwaitStatus, Priority as P};
use cuzk_daemon::server::start_with;
use cuzk_daemon::server::status::CopyState;
use cuzk_faults::{FaultPlan, FaultProbe, FaultyBackend};
use tonic::Code;

const K: u32 = 6;

fn plan(rules: &[&str]) -> FaultPlan {
    FaultPlan::parse(rules, 5).expect("rules")
}

/// A daemon over one CPU backend per plan, each behind a fault injector; the probes count
/// what was injected.
async fn faulty(plans: Vec<FaultPlan>, f: impl FnOnce(&mut Config)) -> (Daemon, Vec<FaultProbe>) {
    ensure(K);
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut cfg = config(tmp.path());
    cfg.params.filecoin_dir = Some(cache());
    cfg.engine.host_memory_bytes = 6 << 30;
    cfg.engine.device_memory_bytes = 6 << 30;
    f(&mut cfg);
    let faulty: Vec<_> = plans.into_iter().map(|p| FaultyBackend::new(AnyBackend::Cpu(CpuBackend::new()), p)).collect();
    let probes = faulty.iter().map(FaultyBackend::probe).collect();
    let backends = faulty.into_iter().map(|f| AnyBackend::Faulty(Box::new(f))).collect();
    let socket = cfg.server.socket.clone().unwrap_or_default();
    let server = start_with(cfg, params_dir(), backends).await.expect("daemon starts");
    (Daemon { server, tmp, socket }, probes)
}

async fn prove(d: &Daemon, req: proto::SubmitProofRequest) -> proto::AwaitProofResponse {
    let mut c = d.client().await;
    c.prove(proto::ProveRequest { submit: Some(req), timeout_ms: 120_000 }).await.expect("Prove").into_inner().result.expect("result")
}

async fn metrics(d: &Daemon) -> String {
    let (code, body) = http_get(d.http(), "/metrics", None).await.expect("GET /metrics");
    assert_eq!(code, 200);
    body
}

fn metric(text: &str, name: &str, label: Option<&str>) -> f64 {
    cuzk_daemon::client::loadgen::metric(text, name, label).unwrap_or_else(|| panic!("no metric {name} {label:?}"))
}

/// Every job has ended once (the counters add up) and, with the parameters evicted, no
/// host or device memory stays reserved.
async fn assert_settled(d: &Daemon) {
    let h = d.server.handle();
    let settled = wait_until(Duration::from_secs(30), || async {
        let s = h.snapshot().await.unwrap();
        // Loads end too: one refused by a device out of service holds its reservation until
        // the refusal arrives.
        let loading = s.params.iter().any(|p| p.host == CopyState::Loading || p.devices.contains(&CopyState::Loading));
        s.jobs.live == 0 && s.devices.iter().all(|d| d.active == 0) && s.host.spans.iter().all(|x| x.end_ms.is_some()) && !loading
    })
    .await;
    assert!(settled, "jobs or stages still running: {:?}", h.snapshot().await.unwrap().jobs);
    let s = h.snapshot().await.unwrap();
    assert_eq!(s.jobs.submitted, s.jobs.completed + s.jobs.failed + s.jobs.cancelled, "every job ends exactly once: {:?}", s.jobs);
    for p in &s.params {
        h.evict(CircuitShape::parse(&p.circuit).unwrap()).await.expect("evict");
    }
    let s = h.snapshot().await.unwrap();
    assert_eq!(s.memory.host.used, 0, "host reservations leaked: {:?}", s.memory);
    for (i, m) in s.memory.devices.iter().enumerate() {
        assert_eq!(m.used, 0, "device {i} reservations leaked: {:?}", s.memory);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupted_msm_is_caught_by_the_self_check_and_proved_again() {
    let (d, probes) = faulty(vec![plan(&["msm:corrupt:nth=1"])], |_| {}).await;
    let r = prove(&d, job(K, 3, 2, P::Normal)).await;
    check_completed(&r, K, 3, 2);
    assert_eq!(probes[0].injected().corrupted, 1);
    let m = metrics(&d).await;
    assert_eq!(metric(&m, "cuzk_self_check_failures_total", None), 1.0);
    assert_eq!(metric(&m, "cuzk_partition_retries_total", Some("cause=\"self-check\"")), 1.0);
    assert_settled(&d).await;
    stop(d).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_self_check_the_corrupted_proof_would_have_been_returned() {
    // The control of the test above: the same fault with the check off yields a proof that
    // the verifying key rejects.
    let (d, _) = faulty(vec![plan(&["msm:corrupt:nth=1"])], |c| c.engine.self_check = SelfCheck::Off).await;
    let r = prove(&d, job(K, 3, 1, P::Normal)).await;
    assert_eq!(r.status, AwaitStatus::Completed as i32, "{}", r.error_message);
    assert!(verify_result(&vk(K), &r).is_err(), "a corrupted MSM gave a valid proof: the fault did not bite");
    stop(d).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proof_that_fails_its_check_twice_fails_the_job_with_no_proof() {
    let (d, probes) = faulty(vec![plan(&["msm:corrupt"])], |_| {}).await;
    let r = prove(&d, job(K, 1, 1, P::Normal)).await;
    assert_eq!(r.status, AwaitStatus::Failed as i32);
    assert!(r.proof.is_empty());
    assert!(r.error_message.contains("failed its check with the verifying key 2 times"), "{}", r.error_message);
    assert!(probes[0].injected().corrupted >= 2);
    assert_eq!(metric(&metrics(&d).await, "cuzk_self_check_failures_total", None), 2.0);
    assert_settled(&d).await;
    stop(d).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filecoin_proofs_are_checked_by_default_and_a_corrupted_one_is_proved_again() {
    ensure_params(FilKind::WinningPoSt);
    let (d, probes) = faulty(vec![plan(&["msm:corrupt:nth=2"])], |c| c.engine.self_check = Config::default().engine.self_check).await;
    let req = cuzk_daemon::client::curio::from_fixture(raw_request(FilKind::WinningPoSt)).expect("fixture");
    let mut sub = cuzk_daemon::client::curio::submission(&req);
    sub.request_id = "winning-corrupted".into();
    let r = prove(&d, sub).await;
    assert_eq!(r.status, AwaitStatus::Completed as i32, "{}", r.error_message);
    assert!(verify::verify(&req, &r.proof).expect("verifier runs"), "Filecoin's verifier rejects the returned proof");
    assert_eq!(probes[0].injected().corrupted, 1);
    assert_eq!(metric(&metrics(&d).await, "cuzk_self_check_failures_total", None), 1.0);
    stop(d).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_errors_and_out_of_memory_are_retried_within_the_bound() {
    let (d, probes) = faulty(vec![plan(&["msm:error:nth=1", "upload:oom:nth=3"])], |_| {}).await;
    let r = prove(&d, job(K, 9, 2, P::High)).await;
    check_completed(&r, K, 9, 2);
    let inj = probes[0].injected();
    assert_eq!((inj.errors, inj.oom), (1, 1));
    let m = metrics(&d).await;
    assert_eq!(metric(&m, "cuzk_partition_retries_total", Some("cause=\"device-error\"")), 1.0);
    assert_eq!(metric(&m, "cuzk_partition_retries_total", Some("cause=\"out-of-memory\"")), 1.0);
    assert_eq!(metric(&m, "cuzk_device_faults_total", Some("cause=\"device-error\"")), 1.0);
    assert_settled(&d).await;
    stop(d).await;

    // Past the bound the job fails, naming the cause.
    let (d, _) = faulty(vec![plan(&["msm:error"])], |c| {
        c.engine.fault_retries = 2;
        c.engine.device_fault_limit = 0;
    })
    .await;
    let r = prove(&d, job(K, 1, 1, P::Normal)).await;
    assert_eq!(r.status, AwaitStatus::Failed as i32);
    assert!(r.error_message.contains("device error") && r.error_message.contains("after 2 retries"), "{}", r.error_message);
    assert_eq!(metric(&metrics(&d).await, "cuzk_partition_retries_total", Some("cause=\"device-error\"")), 2.0);
    assert_settled(&d).await;
    stop(d).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stage_past_the_watchdog_fails_over_to_the_other_device() {
    // The parameters are preloaded onto device 1 only (the preload picks the device with the
    // most free memory, the last on a tie), so the first attempt runs there.
    let (d, probes) = faulty(vec![FaultPlan::default(), plan(&["msm:delay=4000:nth=1"])], |c| {
        c.engine.stage_timeout_ms = 400;
        c.params.preload = vec![format!("squaring-chain-2^{K}")];
    })
    .await;
    let h = d.server.handle();
    let on_1 = wait_until(Duration::from_secs(10), || async {
        h.snapshot().await.unwrap().params.first().is_some_and(|p| p.devices == [CopyState::Absent, CopyState::Resident])
    })
    .await;
    assert!(on_1, "preloaded elsewhere: {:?}", h.snapshot().await.unwrap().params);
    let t = Instant::now();
    let r = prove(&d, job(K, 4, 1, P::Normal)).await;
    let took = t.elapsed();
    check_completed(&r, K, 4, 1);
    assert_eq!(probes[1].injected().delayed, 1, "the first MSM ran on device 1 and was delayed");
    assert!(took < Duration::from_millis(3500), "the job waited for the stuck stage ({took:?}) instead of failing over");
    let s = h.snapshot().await.unwrap();
    assert!(s.devices[1].faults.contains(&("watchdog".to_string(), 1)), "{:?}", s.devices[1].faults);
    assert!(s.devices[0].spans.iter().any(|x| x.stage == "msm" && !x.failed), "the retry ran on device 0");
    assert_eq!(metric(&metrics(&d).await, "cuzk_partition_retries_total", Some("cause=\"watchdog\"")), 1.0);
    // The stuck stage still reports when it returns, and its reservation is released then.
    assert_settled(&d).await;
    stop(d).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proof_failing_its_check_is_proved_again_on_the_other_device() {
    // Parameters resident on device 1 only, which corrupts its first MSM: without the
    // retry's preference the re-proof would go back to device 1, where the parameters are.
    let (d, probes) = faulty(vec![FaultPlan::default(), plan(&["msm:corrupt:nth=1"])], |c| c.params.preload = vec![format!("squaring-chain-2^{K}")]).await;
    let h = d.server.handle();
    let on_1 = wait_until(Duration::from_secs(10), || async {
        h.snapshot().await.unwrap().params.first().is_some_and(|p| p.devices == [CopyState::Absent, CopyState::Resident])
    })
    .await;
    assert!(on_1, "preloaded elsewhere: {:?}", h.snapshot().await.unwrap().params);
    let r = prove(&d, job(K, 6, 1, P::Normal)).await;
    check_completed(&r, K, 6, 1);
    assert_eq!(probes[1].injected().corrupted, 1, "the first MSM ran on device 1");
    let s = h.snapshot().await.unwrap();
    let msms = |dev: usize| s.devices[dev].spans.iter().filter(|x| x.stage == "msm").count();
    assert_eq!((msms(0), msms(1)), (1, 1), "one MSM on each device: the re-proof ran on device 0");
    assert_settled(&d).await;
    stop(d).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_that_keeps_failing_leaves_service_and_the_other_serves() {
    let (d, probes) = faulty(vec![plan(&["msm:error"]), FaultPlan::default()], |c| c.engine.device_fault_limit = 2).await;
    for seed in 0..3 {
        let r = prove(&d, job(K, seed, 1, P::Normal)).await;
        check_completed(&r, K, seed, 1);
    }
    assert_eq!(probes[0].injected().errors, 2, "device 0 got no work after its second fault");
    let s = d.server.handle().snapshot().await.unwrap();
    assert!(!s.devices[0].in_service && s.devices[1].in_service);
    assert!(s.devices[0].retired_because.contains("2 consecutive faults"), "{}", s.devices[0].retired_because);
    let m = metrics(&d).await;
    assert_eq!(metric(&m, "cuzk_device_in_service", Some("device=\"0\"")), 0.0);
    assert_eq!(metric(&m, "cuzk_device_in_service", Some("device=\"1\"")), 1.0);
    let mut c = d.client().await;
    let st = c.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner();
    assert_eq!(st.gpus.len(), 2);
    assert_settled(&d).await;
    stop(d).await;

    // With one device, its retirement fails the job and later submissions are UNAVAILABLE.
    let (d, _) = faulty(vec![plan(&["msm:error"])], |c| c.engine.device_fault_limit = 2).await;
    let r = prove(&d, job(K, 1, 1, P::Normal)).await;
    assert_eq!(r.status, AwaitStatus::Failed as i32);
    assert!(r.error_message.contains("no device in service"), "{}", r.error_message);
    let e = d.client().await.submit_proof(job(K, 2, 1, P::Critical)).await.expect_err("accepted with no device");
    assert_eq!(e.code(), Code::Unavailable, "{}", e.message());
    stop(d).await;
}

/// A daemon over one "GPU" (the CPU backend behind a fault injector) with the CPU fallback
/// device beside it (`engine.cpu_fallback`).
async fn with_fallback(gpu: FaultPlan, f: impl FnOnce(&mut Config)) -> (Daemon, FaultProbe) {
    ensure(K);
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut cfg = config(tmp.path());
    cfg.engine.host_memory_bytes = 6 << 30;
    cfg.engine.device_memory_bytes = 6 << 30;
    cfg.engine.cpu_fallback = true;
    f(&mut cfg);
    let gpu = FaultyBackend::new(AnyBackend::Cpu(CpuBackend::new()), gpu);
    let probe = gpu.probe();
    let backends = vec![AnyBackend::Faulty(Box::new(gpu)), AnyBackend::CpuFallback(CpuBackend::new())];
    let socket = cfg.server.socket.clone().unwrap_or_default();
    let server = start_with(cfg, params_dir(), backends).await.expect("daemon starts");
    (Daemon { server, tmp, socket }, probe)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_cpu_fallback_a_gpu_fault_is_retried_on_the_cpu_and_other_work_stays_on_the_gpu() {
    let (d, probe) = with_fallback(plan(&["msm:error:nth=1"]), |_| {}).await;
    let r = prove(&d, job(K, 3, 1, P::Normal)).await;
    check_completed(&r, K, 3, 1);
    assert_eq!(probe.injected().errors, 1);
    let h = d.server.handle();
    let s = h.snapshot().await.unwrap();
    assert!(!s.devices[0].fallback && s.devices[1].fallback, "{:?}", s.devices.iter().map(|x| x.fallback).collect::<Vec<_>>());
    assert!(s.devices[1].name.ends_with("(fallback)"), "{}", s.devices[1].name);
    let msms =
        |s: &cuzk_daemon::server::status::Snapshot, dev: usize| s.devices[dev].spans.iter().filter(|x| x.stage == "msm").map(|x| x.failed).collect::<Vec<_>>();
    assert_eq!(msms(&s, 0), [true], "the first MSM failed on the GPU");
    assert_eq!(msms(&s, 1), [false], "the retry ran on the CPU fallback");
    // Work that no fault sent away stays on the GPU.
    for seed in 4..6 {
        let r = prove(&d, job(K, seed, 2, P::Normal)).await;
        check_completed(&r, K, seed, 2);
    }
    let s = h.snapshot().await.unwrap();
    assert_eq!(msms(&s, 1).len(), 1, "the fallback took work a GPU could take");
    assert_eq!(msms(&s, 0).iter().filter(|f| !**f).count(), 4);
    // Curio's client reads the one GPU's ordinal; the fallback is not a GPU.
    let st = d.client().await.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner();
    assert_eq!(st.gpus.len(), 2);
    let sub = d.client().await.submit_proof(job(K, 7, 1, P::Normal)).await.unwrap().into_inner();
    assert_eq!(sub.assigned_gpu, "0");
    assert_settled(&d).await;
    stop(d).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_cpu_fallback_the_daemon_keeps_serving_once_its_only_gpu_leaves_service() {
    // The same as the one-device case of the test above, where the job fails with "no
    // device in service": here the CPU takes over.
    let (d, probe) = with_fallback(plan(&["msm:error"]), |c| {
        c.engine.device_fault_limit = 2;
        c.engine.cpu_fallback_memory_bytes = 2 << 30;
    })
    .await;
    for seed in 0..3 {
        let r = prove(&d, job(K, seed, 1, P::Normal)).await;
        check_completed(&r, K, seed, 1);
    }
    assert_eq!(probe.injected().errors, 2, "the GPU got work after leaving service");
    let s = d.server.handle().snapshot().await.unwrap();
    assert!(!s.devices[0].in_service && s.devices[1].in_service);
    assert_eq!(s.devices[1].memory.capacity, 2 << 30, "engine.cpu_fallback_memory_bytes sizes the fallback");
    let r = prove(&d, job(K, 9, 1, P::Critical)).await;
    check_completed(&r, K, 9, 1);
    assert_settled(&d).await;
    stop(d).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_random_faults_every_job_ends_once_and_no_reservation_leaks() {
    let rules = ["msm:corrupt:p=0.01", "msm:error:p=0.01", "ntt:error:p=0.04", "upload:oom:p=0.02"];
    let (d, probes) = faulty(vec![plan(&rules), plan(&rules)], |c| {
        c.engine.device_fault_limit = 0;
        c.engine.gpu_workers = 2;
    })
    .await;
    let c = d.client().await;
    let mut tasks = Vec::new();
    for i in 0..16u64 {
        let mut c = c.clone();
        let parts = 1 + (i % 3) as u32;
        let prio = [P::Low, P::Normal, P::High, P::Critical][i as usize % 4];
        tasks.push(tokio::spawn(async move {
            let r = c.prove(proto::ProveRequest { submit: Some(job(K, 100 * i, parts, prio)), timeout_ms: 0 }).await.expect("Prove");
            (i, parts, r.into_inner().result.expect("result"))
        }));
    }
    // One more, cancelled while it may be running.
    let s = c.clone().submit_proof(job(K, 7777, 3, P::Low)).await.unwrap().into_inner();
    let _ = c.clone().cancel_proof(proto::CancelProofRequest { job_id: s.job_id.clone() }).await;
    let (mut completed, mut failed) = (0, 0);
    for t in tasks {
        let (i, parts, r) = t.await.unwrap();
        match AwaitStatus::try_from(r.status).unwrap() {
            AwaitStatus::Completed => {
                check_completed(&r, K, 100 * i, parts);
                completed += 1;
            }
            AwaitStatus::Failed => {
                assert!(r.proof.is_empty() && !r.error_message.is_empty());
                failed += 1;
            }
            other => panic!("job {i} ended {other:?}"),
        }
        // The result is final: asking again gives the same answer.
        let again = c.clone().await_proof(proto::AwaitProofRequest { job_id: r.job_id.clone(), timeout_ms: 0 }).await.unwrap().into_inner();
        assert_eq!((again.status, again.proof), (r.status, r.proof));
    }
    assert!(completed >= 8, "{completed} completed, {failed} failed");
    assert!(probes.iter().map(|p| p.injected().total()).sum::<u64>() > 0, "no fault was injected");
    let s = d.server.handle().snapshot().await.unwrap();
    assert_eq!(s.jobs.submitted, 17);
    assert_settled(&d).await;
    stop(d).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_is_refused_with_resource_exhausted_and_critical_gets_through() {
    ensure(10);
    let (d, _) = faulty(vec![FaultPlan::default()], |c| c.engine.queue_limit = 2).await;
    let mut c = d.client().await;
    let mut accepted = Vec::new();
    let mut refused = Vec::new();
    for i in 0..24 {
        match c.submit_proof(job(10, i, 1, P::Normal)).await {
            Ok(r) => accepted.push((i, r.into_inner().job_id)),
            Err(e) => refused.push(e),
        }
    }
    assert!(!refused.is_empty(), "no submission was refused");
    assert!(accepted.len() <= 8, "{} accepted with a queue of 2", accepted.len());
    for e in &refused {
        assert_eq!(e.code(), Code::ResourceExhausted, "{}", e.message());
        assert!(e.message().contains("normal queue is full") && e.message().contains("2 jobs waiting"), "{}", e.message());
    }
    let s = d.server.handle().snapshot().await.unwrap();
    assert!(s.memory.host.used <= s.memory.host.capacity && s.memory.devices[0].used <= s.memory.devices[0].capacity);
    let r = prove(&d, job(10, 99, 1, P::Critical)).await;
    check_completed(&r, 10, 99, 1);
    for (i, id) in accepted {
        let r = c.await_proof(proto::AwaitProofRequest { job_id: id, timeout_ms: 0 }).await.unwrap().into_inner();
        check_completed(&r, 10, i, 1);
    }
    assert_eq!(metric(&metrics(&d).await, "cuzk_submissions_refused_total", None), refused.len() as f64);
    stop(d).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn low_host_memory_pauses_synthesis_until_memory_returns() {
    let tmp = tempfile::tempdir().unwrap();
    let meminfo = tmp.path().join("meminfo");
    std::fs::write(&meminfo, "MemTotal: 24000000 kB\nMemAvailable: 1000 kB\n").unwrap();
    let path = meminfo.clone();
    let (d, _) = faulty(vec![FaultPlan::default()], move |c| {
        c.engine.meminfo_path = Some(path);
        c.engine.host_memory_margin_bytes = 1 << 30;
    })
    .await;
    let mut c = d.client().await;
    let s = c.submit_proof(job(K, 5, 1, P::Normal)).await.unwrap().into_inner();
    let h = d.server.handle();
    assert!(wait_until(Duration::from_secs(10), || async { h.snapshot().await.unwrap().admission.paused }).await, "synthesis was not held back");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let snap = h.snapshot().await.unwrap();
    assert_eq!((snap.jobs.completed, snap.admission.waiting_synthesis), (0, 1), "the NORMAL job ran with memory low");
    assert_eq!(metric(&metrics(&d).await, "cuzk_synthesis_paused", None), 1.0);
    // CRITICAL work is not held back.
    let r = prove(&d, job(K, 6, 1, P::Critical)).await;
    check_completed(&r, K, 6, 1);
    std::fs::write(&meminfo, "MemTotal: 24000000 kB\nMemAvailable: 20000000 kB\n").unwrap();
    let r = c.await_proof(proto::AwaitProofRequest { job_id: s.job_id, timeout_ms: 30_000 }).await.unwrap().into_inner();
    check_completed(&r, K, 5, 1);
    assert!(!h.snapshot().await.unwrap().admission.paused);
    stop(d).await;
}

#[test]
fn circuit_ids_never_name_files() {
    for bad in ["../../etc/passwd", "/etc/passwd", "squaring-chain/../x", "squaring-chain-2^10/../../x"] {
        assert!(CircuitShape::parse(bad).is_err(), "{bad:?} parsed as a circuit");
    }
    assert!(GenericShape::new("squaring-chain", 10).is_ok());
}
