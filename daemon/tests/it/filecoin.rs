//! Filecoin proof kinds through the daemon: 2 KiB WindowPoSt and WinningPoSt proofs made by
//! `cuzk serve` (CPU backend) pass Filecoin's own verifiers; tampered vanilla proofs and wrong
//! randomness are refused with INVALID_ARGUMENT; missing parameters with FAILED_PRECONDITION.
//! PoRep C2 and SnapDeals (2.7M and 1.7M constraints) run in the slow tier:
//! `CUZK_SLOW_TESTS=1 cargo test --release -p cuzk-daemon --test it filecoin::`.

use crate::common;

use std::path::PathBuf;
use std::sync::OnceLock;

use common::{config, stop, Daemon};
use cuzk_circuits_filecoin::{fixtures, params, verify, FilKind, FilRequest, FilShape};
use cuzk_daemon::client::curio::submission as filecoin_submission;
use cuzk_daemon::proto::{self, await_proof_response::Status as AwaitStatus};
use tonic::Code;

const KIB2: u64 = 2048;

/// The Filecoin parameter cache of this test build; `filecoin-proofs` reads it.
pub fn cache() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fil-params");
        std::fs::create_dir_all(&d).expect("cache dir");
        verify::use_cache_dir(&d);
        d
    })
    .clone()
}

fn requests() -> Vec<FilRequest> {
    static F: OnceLock<Vec<FilRequest>> = OnceLock::new();
    cache();
    F.get_or_init(|| fixtures::generate(&PathBuf::from(env!("CARGO_TARGET_TMPDIR")), KIB2, 11).expect("sealing a 2 KiB sector")).clone()
}

/// The fixture of `kind` as `fixtures::generate` makes it (raw C1 JSON for PoRep).
pub fn raw_request(kind: FilKind) -> FilRequest {
    requests().into_iter().find(|r| r.kind == kind).expect("fixture")
}

/// The fixture of `kind` in Curio's encodings (what `cuzk gen-vanilla` writes).
fn request(kind: FilKind) -> FilRequest {
    cuzk_daemon::client::curio::from_fixture(raw_request(kind)).expect("fixture")
}

pub fn ensure_params(kind: FilKind) {
    params::generate(&cache(), FilShape::new(kind, KIB2).expect("id"), false, &mut rand::rngs::OsRng).expect("parameters");
}

async fn daemon() -> Daemon {
    daemon_with_fil(|_| {}).await
}

/// A daemon over the Filecoin parameter cache of this test build, with `f` applied to its
/// configuration.
pub async fn daemon_with_fil(f: impl FnOnce(&mut cuzk_daemon::config::Config)) -> Daemon {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut cfg = config(tmp.path());
    cfg.params.filecoin_dir = Some(cache());
    // The 2 KiB PoRep parameters alone are 1.1 GB.
    cfg.engine.host_memory_bytes = 6 << 30;
    cfg.engine.device_memory_bytes = 6 << 30;
    f(&mut cfg);
    let socket = cfg.server.socket.clone().unwrap_or_default();
    let server = cuzk_daemon::server::start(cfg, common::params_dir()).await.expect("daemon starts");
    Daemon { server, tmp, socket }
}

async fn prove(d: &Daemon, req: &FilRequest) -> proto::AwaitProofResponse {
    prove_as(d, req, None).await
}

/// Proves `req` under `request_id` instead of Curio's (which would join an earlier job).
async fn prove_as(d: &Daemon, req: &FilRequest, request_id: Option<&str>) -> proto::AwaitProofResponse {
    let mut c = d.client().await;
    let mut sub = filecoin_submission(req);
    if let Some(id) = request_id {
        sub.request_id = id.into();
    }
    let s = c.submit_proof(sub).await.expect("accepted").into_inner();
    c.await_proof(proto::AwaitProofRequest { job_id: s.job_id, timeout_ms: 0 }).await.expect("await").into_inner()
}

async fn prove_and_verify(d: &Daemon, kind: FilKind) {
    let req = request(kind);
    let r = prove(d, &req).await;
    assert_eq!(r.status, AwaitStatus::Completed as i32, "{kind:?}: {}", r.error_message);
    assert_eq!(r.proof.len() % 192, 0);
    assert!(verify::verify(&req, &r.proof).expect("verifier runs"), "{kind:?}: Filecoin's verifier rejects the daemon's proof");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_kinds_end_to_end_and_bad_requests_are_refused() {
    for k in [FilKind::WindowPoSt, FilKind::WinningPoSt] {
        ensure_params(k);
    }
    let d = daemon().await;
    for k in [FilKind::WindowPoSt, FilKind::WinningPoSt] {
        prove_and_verify(&d, k).await;
    }
    // The same job again under another request id: through the constraint-matrix cache.
    let req = request(FilKind::WinningPoSt);
    let r = prove_as(&d, &req, Some("winning-again")).await;
    assert_eq!(r.status, AwaitStatus::Completed as i32, "{}", r.error_message);
    assert!(verify::verify(&req, &r.proof).expect("verifier runs"), "the second WinningPoSt proof does not verify");

    let mut c = d.client().await;
    for kind in [FilKind::WindowPoSt, FilKind::WinningPoSt] {
        // Wrong randomness.
        let mut r = request(kind);
        r.randomness[0] ^= 1;
        let e = c.submit_proof(filecoin_submission(&r)).await.expect_err("wrong randomness accepted");
        assert_eq!(e.code(), Code::InvalidArgument, "{}", e.message());
        assert!(e.message().contains("vanilla proof rejected"), "{}", e.message());
        // Another sector's commitment: comm_r follows the 8-byte sector id in the element.
        let mut r = request(kind);
        r.vanilla_proofs[0][9] ^= 1;
        let e = c.submit_proof(filecoin_submission(&r)).await.expect_err("wrong comm_r accepted");
        assert_eq!(e.code(), Code::InvalidArgument, "{}", e.message());
        // A tampered vanilla proof: one byte near the end (a Merkle path element) changed.
        let mut r = request(kind);
        let n = r.vanilla_proofs[0].len();
        r.vanilla_proofs[0][n - 40] ^= 1;
        let e = c.submit_proof(filecoin_submission(&r)).await.expect_err("tampered proof accepted");
        assert_eq!(e.code(), Code::InvalidArgument, "{}", e.message());
        assert!(e.message().contains("vanilla proof rejected"), "{}", e.message());
        // Garbage and a wrong registered proof.
        let mut r = request(kind);
        r.vanilla_proofs = vec![b"not bincode".to_vec()];
        let e = c.submit_proof(filecoin_submission(&r)).await.expect_err("garbage accepted");
        assert_eq!(e.code(), Code::InvalidArgument, "{}", e.message());
        let mut s = filecoin_submission(&request(kind));
        s.registered_proof = 99;
        let e = c.submit_proof(s).await.expect_err("bad registered proof accepted");
        assert_eq!(e.code(), Code::InvalidArgument, "{}", e.message());
    }
    // Default priorities: WinningPoSt CRITICAL, WindowPoSt HIGH.
    assert_eq!(cuzk_daemon::server::request::priority(0, proto::ProofKind::WinningPost).unwrap(), cuzk_core::engine::Priority::Critical);
    assert_eq!(cuzk_daemon::server::request::priority(0, proto::ProofKind::WindowPostPartition).unwrap(), cuzk_core::engine::Priority::High);
    assert_eq!(cuzk_daemon::server::request::priority(0, proto::ProofKind::PorepSealCommit).unwrap(), cuzk_core::engine::Priority::Normal);
    stop(d).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_filecoin_parameters_are_a_failed_precondition() {
    // Also with params.generate_missing: random Filecoin parameters would give proofs that
    // pass the self-check and that no chain accepts, so they are never generated.
    for generate in [false, true] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let cache = tmp.path().join("empty-cache");
        let mut cfg = config(tmp.path());
        cfg.params.filecoin_dir = Some(cache.clone());
        cfg.params.generate_missing = generate;
        let socket = cfg.server.socket.clone().unwrap_or_default();
        let server = cuzk_daemon::server::start(cfg, common::params_dir()).await.expect("daemon starts");
        let d = Daemon { server, tmp, socket };
        let mut c = d.client().await;
        let e = c.submit_proof(filecoin_submission(&request(FilKind::WinningPoSt))).await.expect_err("accepted without parameters");
        assert_eq!(e.code(), Code::FailedPrecondition, "generate_missing {generate}: {}", e.message());
        assert!(e.message().contains("cuzk setup --filecoin winning-2k"), "{}", e.message());
        let written = std::fs::read_dir(&cache).map(|d| d.count()).unwrap_or(0);
        assert_eq!(written, 0, "generate_missing {generate}: files written into the Filecoin cache");
        stop(d).await;
    }
}

pub fn slow() -> bool {
    std::env::var_os("CUZK_SLOW_TESTS").is_some_and(|v| v != "0")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn porep_and_snapdeals_end_to_end_slow_tier() {
    if !slow() {
        println!("SKIPPED: PoRep and SnapDeals (2 KiB) run with CUZK_SLOW_TESTS=1");
        return;
    }
    for k in [FilKind::PoRep, FilKind::SnapDeals] {
        let t = std::time::Instant::now();
        ensure_params(k);
        println!("{k:?}: parameters ready in {:.1} s", t.elapsed().as_secs_f64());
    }
    let d = daemon().await;
    for k in [FilKind::PoRep, FilKind::SnapDeals] {
        let t = std::time::Instant::now();
        prove_and_verify(&d, k).await;
        println!("{k:?}: proved and verified in {:.1} s", t.elapsed().as_secs_f64());
    }
    let mut c = d.client().await;
    // A PoRep request for another sector number (the replica id no longer matches).
    let mut r = request(FilKind::PoRep);
    r.sector_number += 1;
    let e = c.submit_proof(filecoin_submission(&r)).await.expect_err("wrong sector accepted");
    assert_eq!(e.code(), Code::InvalidArgument, "{}", e.message());
    // SnapDeals with another new sealed commitment.
    let mut r = request(FilKind::SnapDeals);
    r.comm_r_new[0] ^= 1;
    let e = c.submit_proof(filecoin_submission(&r)).await.expect_err("wrong commitment accepted");
    assert_eq!(e.code(), Code::InvalidArgument, "{}", e.message());
    stop(d).await;
}
