//! Several devices in one daemon, from the configuration (`engine.devices`), on CPU backends
//! standing in for GPUs: a backlog and the partitions of one job spread over both, each
//! device shows in GetStatus, /status and /metrics with its ordinal; a device that keeps
//! failing hands its work to the other and every job ends once with a proof that verifies;
//! an ordinal the host does not have is a configuration error naming it.

use crate::common;

use common::*;
use cuzk_daemon::client::http_get;
use cuzk_daemon::config::DeviceSelection;
use cuzk_daemon::proto::{self, Priority as P};
use cuzk_daemon::server::status::{DeviceStatus, Snapshot};
use cuzk_daemon::server::{start, ServeError};

const K: u32 = 6;

fn two_cpu_devices(c: &mut cuzk_daemon::config::Config) {
    c.engine.backend = "cpu".into();
    c.engine.devices = DeviceSelection::List(vec![0, 1]);
    c.engine.synth_workers = 2;
}

/// Submits `n` jobs of `partitions` partitions at once (seeds `seed0..`), awaits them all
/// and checks each proof with the verifying key.
async fn backlog(d: &Daemon, seed0: u64, n: u64, partitions: u32) -> Vec<String> {
    let mut c = d.client().await;
    let mut ids = Vec::new();
    for i in 0..n {
        ids.push(c.submit_proof(job(K, seed0 + i, partitions, P::Normal)).await.expect("submit").into_inner().job_id);
    }
    for (i, id) in ids.iter().enumerate() {
        let r = c.await_proof(proto::AwaitProofRequest { job_id: id.clone(), timeout_ms: 120_000 }).await.expect("await").into_inner();
        check_completed(&r, K, seed0 + i as u64, partitions);
    }
    ids
}

/// Backlogs of six two-partition jobs (seeds from `seed0`) until `done` says so of the daemon's
/// snapshot or `max` have run: on a busy host one device can prove a whole backlog before the
/// other's parameter load ends. The last snapshot and the backlogs run.
async fn backlogs_until(d: &Daemon, seed0: u64, max: u64, done: impl Fn(&Snapshot) -> bool) -> (Snapshot, u64) {
    let h = d.server.handle();
    let mut rounds = 0;
    loop {
        backlog(d, seed0 + 6 * rounds, 6, 2).await;
        rounds += 1;
        let s = h.snapshot().await.unwrap();
        if done(&s) || rounds == max {
            return (s, rounds);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_and_one_jobs_partitions_spread_over_two_devices() {
    let d = daemon_with(&[K], two_cpu_devices).await;
    let mut c = d.client().await;
    let first = c.submit_proof(job(K, 1, 1, P::Normal)).await.expect("submit").into_inner();
    assert_eq!(first.assigned_gpu, "", "two devices: the device is chosen per partition, later");
    let ran_msm = |dev: &DeviceStatus| dev.spans.iter().any(|x| x.stage == "msm" && !x.failed);
    let (s, rounds) = backlogs_until(&d, 100, 5, |s| s.devices.iter().all(ran_msm)).await;
    assert_eq!(s.devices.len(), 2);
    assert_eq!(s.devices.iter().map(|x| x.ordinal).collect::<Vec<_>>(), vec![0, 1]);
    for dev in &s.devices {
        assert!(ran_msm(dev), "device {} ran no MSM of {rounds} backlogs", dev.id);
        assert!(dev.busy_s > 0.0, "device {} never busy", dev.id);
    }

    // One job alone on the idle daemon: its partitions go to both devices.
    let ids = backlog(&d, 200, 1, 6).await;
    let api: u64 = ids[0].parse().expect("numeric job id");
    let s = d.server.handle().snapshot().await.unwrap();
    for dev in &s.devices {
        let mine = dev.spans.iter().filter(|x| x.job == api && x.stage == "msm").count();
        assert!(mine >= 1, "no partition of the six-partition job ran on device {}", dev.id);
    }

    let st = c.get_status(proto::GetStatusRequest {}).await.expect("GetStatus").into_inner();
    assert_eq!(st.gpus.iter().map(|g| g.ordinal).collect::<Vec<_>>(), vec![0, 1]);
    assert!(st.gpus.iter().all(|g| g.vram_total_bytes > 0 && !g.name.is_empty()), "{:?}", st.gpus);
    let (code, m) = http_get(d.http(), "/metrics", None).await.expect("metrics");
    assert_eq!(code, 200);
    for dev in 0..2 {
        let busy = cuzk_daemon::client::loadgen::metric(&m, "cuzk_device_busy_seconds_total", Some(&format!("device=\"{dev}\",ordinal=\"{dev}\"")));
        assert!(busy.is_some_and(|b| b > 0.0), "device {dev} busy metric: {busy:?}");
    }
    stop(d).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_device_has_its_ordinal_as_assigned_gpu() {
    let d = daemon_with(&[K], |c| {
        c.engine.backend = "cpu".into();
        c.engine.devices = DeviceSelection::List(vec![0]);
    })
    .await;
    let mut c = d.client().await;
    let r = c.submit_proof(job(K, 1, 1, P::Normal)).await.expect("submit").into_inner();
    assert_eq!(r.assigned_gpu, "0");
    stop(d).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_device_hands_its_work_to_the_other_and_every_job_ends_once() {
    let d = daemon_with(&[K], |c| {
        two_cpu_devices(c);
        c.faults.enabled = true;
        c.faults.rules = vec!["msm:error".into()];
        c.faults.devices = vec![1];
        c.engine.device_fault_limit = 2;
        c.engine.fault_retries = 3;
    })
    .await;
    // Until device 1 has failed its way out of service.
    let (s, rounds) = backlogs_until(&d, 300, 10, |s| !s.devices[1].in_service).await;
    assert!(s.devices[0].in_service, "the healthy device stays in service");
    assert!(!s.devices[1].in_service, "device 1 failed every MSM and left service ({rounds} backlogs): {:?}", s.devices[1]);
    assert!(s.devices[1].faults.iter().any(|(c, n)| c == "device-error" && *n >= 2), "{:?}", s.devices[1].faults);
    assert_eq!(s.jobs.submitted, 6 * rounds);
    assert_eq!(s.jobs.completed, 6 * rounds, "every job completed once: {:?}", s.jobs);
    assert_eq!(s.jobs.failed + s.jobs.cancelled, 0);
    let retried: u64 = s.recovery.retried.iter().map(|(_, n)| n).sum();
    assert!(retried >= 1, "the failed partitions were proved again: {:?}", s.recovery);
    let st = d.client().await.get_status(proto::GetStatusRequest {}).await.expect("GetStatus").into_inner();
    assert_eq!(st.gpus.len(), 2, "a device out of service is still listed");
    stop(d).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ordinal_the_host_lacks_is_a_configuration_error() {
    ensure(K);
    let absent = cuzk_backend_cuda::device::device_count() as u32 + 5;
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(tmp.path());
    cfg.engine.devices = DeviceSelection::List(vec![absent]);
    let e = match start(cfg, params_dir()).await {
        Ok(_) => panic!("a daemon started on absent device {absent}"),
        Err(e) => e,
    };
    assert!(matches!(e, ServeError::Devices(_)), "{e}");
    assert!(e.to_string().contains(&format!("CUDA device {absent}")), "{e}");
}
