//! Bench mode (`[bench] enabled`): synthetic requests (`gen-vanilla --synthetic`), refused
//! by a normal daemon, are proved with timing-only parameters and no parameter file, and the
//! proofs are withheld. 2 KiB WinningPoSt and WindowPoSt on the CPU backend.

use crate::common;

use common::{config, stop, Daemon};
use cuzk_circuits_filecoin::{synthetic_request, FilKind, FilRequest};
use cuzk_daemon::client::curio::{from_fixture, submission};
use cuzk_daemon::proto::{self, await_proof_response::Status as AwaitStatus};
use cuzk_daemon::server::driver::WITHHELD_NOTE;
use tonic::Code;

/// A daemon whose Filecoin parameter cache is empty.
async fn daemon(bench: bool) -> Daemon {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut cfg = config(tmp.path());
    cfg.params.filecoin_dir = Some(tmp.path().join("no-filecoin-params"));
    cfg.engine.host_memory_bytes = 6 << 30;
    cfg.engine.device_memory_bytes = 6 << 30;
    cfg.bench.enabled = bench;
    let socket = cfg.server.socket.clone().unwrap_or_default();
    let server = cuzk_daemon::server::start(cfg, common::params_dir()).await.expect("daemon starts");
    Daemon { server, tmp, socket }
}

fn request(kind: FilKind) -> FilRequest {
    from_fixture(synthetic_request(kind, 2048, 5).expect("synthetic request")).expect("C1 output")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn synthetic_requests_are_refused_outside_bench_mode_and_proved_but_withheld_in_it() {
    let kinds = [FilKind::WinningPoSt, FilKind::WindowPoSt];
    let d = daemon(false).await;
    let mut c = d.client().await;
    for k in kinds {
        let e = c.submit_proof(submission(&request(k))).await.expect_err("a synthetic request accepted outside bench mode");
        assert_eq!(e.code(), Code::InvalidArgument, "{k:?}: {}", e.message());
        assert!(e.message().contains("vanilla proof rejected"), "{k:?}: {}", e.message());
    }
    stop(d).await;

    let d = daemon(true).await;
    let mut c = d.client().await;
    for k in kinds {
        for round in 0..2 {
            let mut sub = submission(&request(k));
            sub.request_id = format!("{}-{round}", sub.request_id);
            let s = c.submit_proof(sub).await.expect("accepted in bench mode").into_inner();
            let r = c.await_proof(proto::AwaitProofRequest { job_id: s.job_id, timeout_ms: 0 }).await.expect("await").into_inner();
            assert_eq!(r.status, AwaitStatus::Completed as i32, "{k:?}: {}", r.error_message);
            assert!(r.proof.is_empty(), "{k:?}: a bench-mode proof was returned");
            assert!(r.error_message.starts_with(WITHHELD_NOTE), "{k:?}: {}", r.error_message);
            assert!(r.gpu_compute_ms > 0 || r.synthesis_ms > 0 || r.total_ms > 0, "{k:?}: no timings");
        }
    }
    // Garbage is still refused: bench mode checks the form.
    let mut r = request(FilKind::WinningPoSt);
    r.vanilla_proofs = vec![b"not bincode".to_vec()];
    let e = c.submit_proof(submission(&r)).await.expect_err("garbage accepted in bench mode");
    assert_eq!(e.code(), Code::InvalidArgument, "{}", e.message());
    // No parameter file was needed, and none was written.
    let cache = d.tmp.path().join("no-filecoin-params");
    assert!(!cache.exists() || std::fs::read_dir(&cache).unwrap().next().is_none(), "bench mode wrote parameter files");
    stop(d).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_mode_can_take_the_files_in_the_filecoin_cache() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let cache = tmp.path().join("filecoin-params");
    let mut cfg = config(tmp.path());
    cfg.params.filecoin_dir = Some(cache.clone());
    cfg.params.generate_missing = false;
    cfg.engine.host_memory_bytes = 6 << 30;
    cfg.engine.device_memory_bytes = 6 << 30;
    cfg.bench.enabled = true;
    cfg.bench.parameters = cuzk_daemon::config::BenchParameters::FilecoinCache;
    // Validated in full, as in production, with the records in a data directory of its own.
    cfg.params.trusted = false;
    let data_dir = tmp.path().join("data");
    cfg.params.data_dir = Some(data_dir.clone());
    let socket = cfg.server.socket.clone().unwrap_or_default();
    let server = cuzk_daemon::server::start(cfg, data_dir.clone()).await.expect("daemon starts");
    let d = Daemon { server, tmp, socket };
    let mut c = d.client().await;
    let kind = FilKind::WinningPoSt;
    let prove = |round: u32| {
        let mut sub = submission(&request(kind));
        sub.request_id = format!("{}-{round}", sub.request_id);
        sub
    };
    // No file in the cache: the job does not complete.
    let missing = match c.submit_proof(prove(0)).await {
        Err(e) => e.message().to_string(),
        Ok(s) => {
            let r = c.await_proof(proto::AwaitProofRequest { job_id: s.into_inner().job_id, timeout_ms: 0 }).await.expect("await").into_inner();
            assert_ne!(r.status, AwaitStatus::Completed as i32, "completed without a parameter file");
            r.error_message
        }
    };
    assert!(missing.contains(".params") || missing.contains("parameter"), "{missing}");
    // The timing-only file of the real layout: loaded, validated in full and recorded, and the proof withheld.
    let id = cuzk_circuits_filecoin::FilShape::new(kind, 2048).expect("shape");
    cuzk_circuits_filecoin::params::write_timing_only(&cache, id, false, |blank| {
        let m = cuzk_core::matrices::ConstraintMatrices::record(blank).map_err(|e| e.to_string())?;
        cuzk_setup::timing::TimingQueries::of(&m).map_err(|e| e.to_string())
    })
    .expect("timing-only parameters");
    let s = c.submit_proof(prove(1)).await.expect("accepted").into_inner();
    let r = c.await_proof(proto::AwaitProofRequest { job_id: s.job_id, timeout_ms: 0 }).await.expect("await").into_inner();
    assert_eq!(r.status, AwaitStatus::Completed as i32, "{}", r.error_message);
    assert!(r.proof.is_empty() && r.error_message.starts_with(WITHHELD_NOTE), "{}", r.error_message);
    let records = std::fs::read_dir(data_dir.join("validated")).map(|d| d.count()).unwrap_or(0);
    assert_eq!(records, 1, "the cache's file was validated in full and recorded");
    stop(d).await;
}
