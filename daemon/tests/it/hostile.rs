//! What a hostile or careless local user can put in the daemon's way through its
//! configuration: each is refused at start with the setting and the limit named, before the
//! daemon spawns a thread or blocks on a file.

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use cuzk_daemon::config::{thread_limit, Config, ConfigError};

fn refused(cfg: &Config) -> String {
    match cfg.validate() {
        Err(ConfigError::Invalid(why)) => why,
        other => panic!("expected the configuration to be refused, got {other:?}"),
    }
}

/// A token and `tcp_insecure` together: the token would silently not be asked for.
#[test]
fn tcp_insecure_with_a_token_is_refused_as_contradictory() {
    let mut cfg = Config::default();
    cfg.server.tcp = Some("127.0.0.1:0".parse().unwrap());
    cfg.server.tcp_insecure = true;
    cfg.validate().expect("tcp_insecure alone is a choice");
    cfg.server.token = Some("s3cret".into());
    let why = refused(&cfg);
    assert!(why.contains("tcp_insecure") && why.contains("contradict"), "{why}");
}

/// Thread counts of a million are refused naming the key and the limit, not spawned.
#[test]
fn thread_counts_beyond_the_machine_are_refused_with_the_limit() {
    let limit = thread_limit();
    assert!(limit >= 64);
    type Set = fn(&mut Config, u32);
    let keys: [(&str, Set); 5] = [
        ("engine.cpu_threads", |c, n| c.engine.cpu_threads = n),
        ("engine.synth_workers", |c, n| c.engine.synth_workers = n),
        ("engine.finalize_workers", |c, n| c.engine.finalize_workers = n),
        ("engine.gpu_workers", |c, n| c.engine.gpu_workers = n),
        ("engine.kernel_lanes", |c, n| c.engine.kernel_lanes = n),
    ];
    for (key, set) in keys {
        let mut cfg = Config::default();
        set(&mut cfg, limit);
        cfg.validate().unwrap_or_else(|e| panic!("{key} = {limit} (the limit) refused: {e}"));
        set(&mut cfg, 1_000_000);
        let why = refused(&cfg);
        assert!(why.contains(key) && why.contains(&format!("at most {limit}")), "{why}");
    }
}

/// A host budget beyond the machine's memory (`MemTotal`, here of a 4 GiB machine).
#[test]
fn budgets_beyond_the_machines_memory_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let meminfo = tmp.path().join("meminfo");
    std::fs::write(&meminfo, "MemTotal:        4194304 kB\nMemFree:  100 kB\nMemAvailable:    2097152 kB\n").unwrap();
    let mut cfg = Config::default();
    cfg.engine.meminfo_path = Some(meminfo);
    cfg.engine.host_memory_bytes = 4 << 30;
    cfg.validate().expect("all of the memory is allowed");
    cfg.engine.host_memory_bytes = 1 << 50;
    let why = refused(&cfg);
    assert!(why.contains("engine.host_memory_bytes") && why.contains(&format!("at most {}", 4u64 << 30)), "{why}");
    cfg.engine.host_memory_bytes = 0;
    cfg.engine.cpu_fallback_memory_bytes = 1 << 50;
    assert!(refused(&cfg).contains("engine.cpu_fallback_memory_bytes"));
}

/// `f` on another thread, which must end within 10 s (a FIFO would block a plain read).
fn within_10_s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(f()));
    rx.recv_timeout(Duration::from_secs(10)).expect("blocked on the file")
}

fn mkfifo(path: &Path) {
    let ok = std::process::Command::new("mkfifo").arg(path).status().expect("mkfifo runs").success();
    assert!(ok, "mkfifo {}", path.display());
}

/// A configuration or token file that is a FIFO (or a directory) is refused without opening
/// it, so the start cannot hang on it.
#[test]
fn config_and_token_paths_must_be_regular_files() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("cuzk.toml");
    mkfifo(&fifo);
    let f = fifo.clone();
    let r = within_10_s(move || Config::load(&f).map(|_| ()).map_err(|e| e.to_string()));
    assert!(r.as_ref().is_err_and(|e| e.contains("not a regular file")), "{r:?}");
    let dir = tmp.path().to_path_buf();
    let r = within_10_s(move || Config::load(&dir).map(|_| ()).map_err(|e| e.to_string()));
    assert!(r.as_ref().is_err_and(|e| e.contains("not a regular file")), "{r:?}");

    let token = tmp.path().join("token");
    mkfifo(&token);
    let r = within_10_s(move || {
        let mut cfg = Config::default();
        cfg.server.token_file = Some(token);
        cfg.token().map_err(|e| e.to_string())
    });
    assert!(r.as_ref().is_err_and(|e| e.contains("not a regular file")), "{r:?}");
}

/// A request id with a newline would forge lines in the text log (`job ended`, `joined the job
/// of the same request id`): refused as INVALID_ARGUMENT, naming the id escaped; printable ids,
/// Curio's included, pass.
#[test]
fn request_ids_with_control_characters_are_refused() {
    use cuzk_daemon::proto::Priority;
    use cuzk_daemon::server::request::validate;
    let mut req = crate::common::job(4, 1, 1, Priority::Normal);
    for id in ["porep-1000-7", "wdpost-f01234-17-3", "ünïcode id"] {
        req.request_id = id.into();
        validate(req.clone()).unwrap_or_else(|e| panic!("{id:?} refused: {e}"));
    }
    for id in ["a\n2026-12-03T00:00:00Z  INFO cuzk_daemon: forged", "a\rb", "a\u{1b}[2Jb", "a\0b"] {
        req.request_id = id.into();
        let e = validate(req.clone()).err().unwrap_or_else(|| panic!("{id:?} accepted"));
        let status = e.status();
        assert_eq!(status.code(), tonic::Code::InvalidArgument, "{id:?}");
        assert!(status.message().contains("control characters") && !status.message().contains('\n'), "{}", status.message());
    }
}

/// A data or matrices directory others may write to is refused at start, naming it: a
/// parameter file, validation record or matrices file planted there would be trusted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn directories_others_may_write_are_refused() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let open = tmp.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    for matrices in [false, true] {
        let mut cfg = crate::common::config(tmp.path());
        cfg.engine.backend = "cpu".into();
        if matrices {
            cfg.params.matrices_dir = Some(open.clone());
        } else {
            cfg.params.data_dir = Some(open.clone());
        }
        let e = cuzk_daemon::server::start(cfg, tmp.path().into()).await.err().expect("started over a directory others may write");
        let msg = e.to_string();
        assert!(msg.contains("writable by other users") && msg.contains(&open.display().to_string()), "{msg}");
    }
}

/// Concurrent first jobs of a circuit whose parameters are missing (`params.generate_missing`):
/// the parameters are generated once, the other jobs wait for that file, and every returned
/// proof verifies against the verifying key of the one file left (no partial file beside it).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_first_jobs_generate_the_parameters_once_and_every_proof_verifies() {
    use cuzk_core::params::Validation;
    use cuzk_daemon::proto::{self, Priority};
    const K: u32 = 5;
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let mut cfg = crate::common::config(tmp.path());
    cfg.engine.backend = "cpu".into();
    cfg.params.data_dir = Some(data.clone());
    cfg.params.generate_missing = true;
    cfg.params.trusted = false;
    let socket = cfg.server.socket.clone().unwrap();
    let server = cuzk_daemon::server::start(cfg, data.clone()).await.expect("daemon starts");
    let d = crate::common::Daemon { server, tmp, socket };
    let proofs = futures_join(&d, (0..4).map(|i| crate::common::job(K, 10 + i, 1, Priority::Normal)).collect()).await;
    let path = cuzk_daemon::setup::params_path(&data, cuzk_daemon::families::GenericShape::new("squaring-chain", K).unwrap());
    let vk = cuzk_worker::read_params(&path, Validation::Full).expect("the generated file reads and validates").vk;
    for r in &proofs {
        assert_eq!(r.status, proto::await_proof_response::Status::Completed as i32, "{}", r.error_message);
        assert_eq!(cuzk_daemon::client::verify_result(&vk, r).expect("the proof verifies with the file's key"), 1);
    }
    let left: Vec<String> = std::fs::read_dir(path.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(!left.iter().any(|n| n.contains("partial")), "a partial file is left: {left:?}");
    crate::common::stop(d).await;
}

/// Proves every request at once (one connection each) and returns the results in order.
async fn futures_join(d: &crate::common::Daemon, reqs: Vec<cuzk_daemon::proto::SubmitProofRequest>) -> Vec<cuzk_daemon::proto::AwaitProofResponse> {
    let mut tasks = Vec::new();
    for req in reqs {
        let mut c = d.client().await;
        tasks.push(tokio::spawn(async move {
            c.prove(cuzk_daemon::proto::ProveRequest { submit: Some(req), timeout_ms: 120_000 }).await.expect("Prove").into_inner().result.expect("result")
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.expect("prove task"));
    }
    out
}

/// The same request id with another payload while the first payload's job is still running
/// (the case: the first caller's AwaitProof was handed the second payload's proof):
/// the second payload becomes job `<id>#2`; awaiting `<id>` gives the first payload's own
/// proof, `<id>#2` the second's, each verified against its own statement; retries of either
/// payload join their own job; and a request id with `#` in it is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_payload_under_a_live_request_id_never_gets_the_first_ones_proof() {
    use crate::common::{check_completed, daemon_with, job, stop};
    use cuzk_daemon::proto::{self, Priority};
    let d = daemon_with(&[8], |_| {}).await;
    let mut c = d.client().await;
    let mut first = job(8, 21, 16, Priority::Normal);
    first.request_id = "porep-1000-7".into();
    let mut second = job(8, 121, 16, Priority::Normal);
    second.request_id = first.request_id.clone();
    let a = c.submit_proof(first.clone()).await.unwrap().into_inner();
    let b = c.submit_proof(second.clone()).await.unwrap().into_inner();
    assert_eq!((a.job_id.as_str(), b.job_id.as_str()), ("porep-1000-7", "porep-1000-7#2"));
    let waiter = |id: String| {
        let mut c = c.clone();
        async move { c.await_proof(proto::AwaitProofRequest { job_id: id, timeout_ms: 120_000 }).await.unwrap().into_inner() }
    };
    let (ra, rb) = tokio::join!(waiter(a.job_id.clone()), waiter(b.job_id.clone()));
    check_completed(&ra, 8, 21, 16);
    check_completed(&rb, 8, 121, 16);
    assert_ne!(ra.proof, rb.proof);
    // Retries join their own payload's job, whichever order they come in.
    assert_eq!(c.submit_proof(second).await.unwrap().into_inner().job_id, "porep-1000-7#2");
    assert_eq!(c.submit_proof(first).await.unwrap().into_inner().job_id, "porep-1000-7");
    assert_eq!(d.server.handle().snapshot().await.unwrap().jobs.submitted, 2);
    let mut hashed = job(8, 23, 1, Priority::Normal);
    hashed.request_id = "porep-1000-7#3".into();
    let e = c.submit_proof(hashed).await.expect_err("a request id with '#'");
    assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e}");
    stop(d).await;
}

/// A recorded matrices file changed in place and truncated under a running daemon (a map of
/// it faulted the daemon with SIGBUS, and a byte changed in place changed its proofs): the
/// matrices in use are the daemon's own copy, so the next proofs verify and the daemon lives;
/// a daemon started on the damaged file records the matrices again and proves right.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_matrices_file_changed_and_truncated_under_the_daemon_changes_nothing() {
    use crate::common::{check_completed, daemon_with, job, stop};
    use cuzk_daemon::proto::{self, Priority};
    use std::io::{Seek, SeekFrom, Write};
    let store = tempfile::tempdir().unwrap();
    let dir = store.path().join("matrices");
    async fn prove(d: &crate::common::Daemon, seed: u64) -> proto::AwaitProofResponse {
        let mut c = d.client().await;
        let r = c.prove(proto::ProveRequest { submit: Some(job(8, seed, 4, Priority::Normal)), timeout_ms: 120_000 }).await.expect("Prove");
        r.into_inner().result.expect("result")
    }
    let m = dir.clone();
    let d = daemon_with(&[8], move |c| c.params.matrices_dir = Some(m)).await;
    check_completed(&prove(&d, 1).await, 8, 1, 4);
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "matrices")).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let len = std::fs::metadata(&files[0]).unwrap().len();
    let mut f = std::fs::OpenOptions::new().write(true).open(&files[0]).unwrap();
    f.seek(SeekFrom::Start(len / 4)).unwrap();
    f.write_all(&[0xa5; 8]).unwrap();
    f.set_len(len / 2).unwrap();
    drop(f);
    check_completed(&prove(&d, 2).await, 8, 2, 4);
    stop(d).await;

    let m = dir.clone();
    let again = daemon_with(&[8], move |c| c.params.matrices_dir = Some(m)).await;
    check_completed(&prove(&again, 3).await, 8, 3, 4);
    assert_eq!(std::fs::metadata(&files[0]).unwrap().len(), len, "the damaged file was not recorded again");
    stop(again).await;
}
