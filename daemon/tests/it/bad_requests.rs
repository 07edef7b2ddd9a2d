//! Malformed and refused requests get clear status codes, and the daemon keeps serving.

use crate::common;

use std::os::unix::fs::PermissionsExt;

use common::*;
use cuzk_daemon::client::connect;
use cuzk_daemon::proto::{self, Priority as P};
use prost::Message;
use tonic::Code;

use cuzk_daemon::client::hostile::raw_call as raw;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_clear_codes_and_the_daemon_keeps_serving() {
    let d = daemon_with(&[4], |c| c.server.max_request_bytes = 64 << 10).await;
    let addr = d.addr();
    // Garbage bytes.
    let e = raw(&addr, "SubmitProof", vec![0xff; 16]).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{}", e.message());
    // Wrong field type: proof_kind (field 2, a varint) sent as a length-delimited field.
    let e = raw(&addr, "SubmitProof", vec![0x12, 0x01, 0x00]).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{}", e.message());
    // Truncated message.
    let mut body = job(4, 1, 1, P::Normal).encode_to_vec();
    body.truncate(body.len() - 3);
    let e = raw(&addr, "SubmitProof", body).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{}", e.message());
    // Unknown method.
    let e = raw(&addr, "Frobnicate", vec![]).await.unwrap_err();
    assert_eq!(e.code(), Code::Unimplemented);

    let mut c = d.client().await;
    let submit = |r: proto::SubmitProofRequest| {
        let mut c = c.clone();
        async move { c.submit_proof(r).await.unwrap_err() }
    };
    // Unknown proof kind.
    let mut r = job(4, 1, 1, P::Normal);
    r.proof_kind = 77;
    let e = submit(r).await;
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("unknown proof kind 77"), "{}", e.message());
    // Filecoin kinds with vanilla proofs that do not decode (or a registered proof of
    // another kind).
    for k in [proto::ProofKind::PorepSealCommit, proto::ProofKind::SnapDealsUpdate, proto::ProofKind::WindowPostPartition, proto::ProofKind::WinningPost] {
        let r = proto::SubmitProofRequest { proof_kind: k as i32, vanilla_proof: vec![1, 2, 3], ..Default::default() };
        let e = submit(r).await;
        assert_eq!(e.code(), Code::InvalidArgument, "{k:?}");
    }
    // Missing kind, missing generic description, unknown circuit, bad size, bad priority.
    let e = submit(proto::SubmitProofRequest::default()).await;
    assert_eq!(e.code(), Code::InvalidArgument);
    let e = submit(proto::SubmitProofRequest { proof_kind: proto::ProofKind::Generic as i32, ..Default::default() }).await;
    assert_eq!(e.code(), Code::InvalidArgument);
    let mut r = job(4, 1, 1, P::Normal);
    r.generic.as_mut().unwrap().circuit = "no-such-circuit".into();
    assert_eq!(submit(r).await.code(), Code::InvalidArgument);
    let mut r = job(4, 1, 1, P::Normal);
    r.generic.as_mut().unwrap().log_size = 1;
    assert_eq!(submit(r).await.code(), Code::InvalidArgument);
    let mut r = job(4, 1, 1, P::Normal);
    r.priority = 9;
    assert_eq!(submit(r).await.code(), Code::InvalidArgument);
    let mut r = job(4, 1, 1, P::Normal);
    r.generic.as_mut().unwrap().partitions = 10_000;
    assert_eq!(submit(r).await.code(), Code::InvalidArgument);
    // Missing parameter file (never generated in these tests).
    let e = submit(job(3, 1, 1, P::Normal)).await;
    assert_eq!(e.code(), Code::FailedPrecondition);
    assert!(e.message().contains("cuzk setup"), "{}", e.message());
    // Oversize payload: tonic refuses it before decoding (OUT_OF_RANGE, with the sizes).
    let mut r = job(4, 1, 1, P::Normal);
    r.vanilla_proof = vec![7; 128 << 10];
    let e = submit(r).await;
    assert!(matches!(e.code(), Code::OutOfRange | Code::ResourceExhausted), "{:?} {}", e.code(), e.message());
    // Bad ids.
    let e = c.await_proof(proto::AwaitProofRequest { job_id: "".into(), timeout_ms: 0 }).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    let e = c.await_proof(proto::AwaitProofRequest { job_id: "no-such-request".into(), timeout_ms: 0 }).await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    let e = c.await_proof(proto::AwaitProofRequest { job_id: "424242".into(), timeout_ms: 0 }).await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    let e = c.preload_srs(proto::PreloadSrsRequest { circuit_id: "nonsense".into() }).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    let e = c.prove(proto::ProveRequest { submit: None, timeout_ms: 0 }).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);

    // Still serving: a valid job completes, raw-encoded too.
    let body = proto::ProveRequest { submit: Some(job(4, 5, 1, P::Normal)), timeout_ms: 60_000 }.encode_to_vec();
    let out = raw(&addr, "Prove", body).await.expect("valid request succeeds");
    let r = proto::ProveResponse::decode(&out[..]).expect("response decodes");
    check_completed(&r.result.unwrap(), 4, 5, 1);
    stop(d).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn socket_is_owner_only() {
    let d = daemon_with(&[], |_| {}).await;
    let mode = std::fs::metadata(&d.socket).expect("socket exists").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "socket mode {mode:o}");
    stop(d).await;
}

/// `server.socket_group`: the socket (and the directory made for it) belong to that group,
/// mode 0660 (0750), so Curio's user connects as a member; a group that does not exist stops
/// the start with a clear error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn socket_group_lets_its_members_connect() {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: getgid has no preconditions.
    let gid = unsafe { libc::getgid() };
    let d = daemon_with(&[], |cfg| {
        let dir = cfg.server.socket.as_ref().unwrap().parent().unwrap().join("run-curio");
        cfg.server.socket = Some(dir.join("cuzk.sock"));
        cfg.server.socket_group = Some(gid.to_string());
    })
    .await;
    let m = std::fs::metadata(&d.socket).expect("socket exists");
    assert_eq!((m.permissions().mode() & 0o777, m.gid()), (0o660, gid), "socket mode {:o}", m.permissions().mode());
    let dir = std::fs::metadata(d.socket.parent().unwrap()).unwrap();
    assert_eq!((dir.permissions().mode() & 0o777, dir.gid()), (0o750, gid), "directory mode {:o}", dir.permissions().mode());
    let mut c = d.client().await;
    c.get_status(proto::GetStatusRequest {}).await.expect("a client connects");
    stop(d).await;

    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(tmp.path());
    cfg.server.socket_group = Some("no-such-group-cuzk".into());
    let e = cuzk_daemon::server::start(cfg, params_dir()).await.err().expect("started with a group that does not exist");
    assert!(e.to_string().contains("socket_group") && e.to_string().contains("no-such-group-cuzk"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_needs_the_token() {
    // Configured without a token: refuses to start.
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(tmp.path());
    cfg.server.tcp = Some("127.0.0.1:0".parse().unwrap());
    let e = cuzk_daemon::server::start(cfg, params_dir()).await.err().expect("refused");
    assert!(e.to_string().contains("token"), "{e}");

    let d = daemon_with(&[4], |c| {
        c.server.tcp = Some("127.0.0.1:0".parse().unwrap());
        c.server.token = Some("s3cret-token".into());
    })
    .await;
    let addr = format!("http://{}", d.server.listening.tcp.expect("tcp"));
    let mut c = connect(&addr, None).await.unwrap();
    let e = c.get_status(proto::GetStatusRequest {}).await.unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated);
    let e = c.submit_proof(job(4, 1, 1, P::Normal)).await.unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated);
    let mut c = connect(&addr, Some("wrong".into())).await.unwrap();
    assert_eq!(c.get_status(proto::GetStatusRequest {}).await.unwrap_err().code(), Code::Unauthenticated);
    let mut c = connect(&addr, Some("s3cret-token".into())).await.unwrap();
    let r = c.prove(proto::ProveRequest { submit: Some(job(4, 2, 1, P::Normal)), timeout_ms: 60_000 }).await.unwrap().into_inner();
    check_completed(&r.result.unwrap(), 4, 2, 1);
    stop(d).await;
}

#[test]
fn decode_request_never_panics_on_samples() {
    use cuzk_daemon::server::request::decode_request;
    for m in ["SubmitProof", "Prove", "AwaitProof", "CancelProof", "PreloadSRS", "EvictSRS", "GetStatus", "GetMetrics", "x"] {
        for body in [&[][..], &[0xff; 9][..], &[0x12, 0x01, 0x00][..], &[0x10, 0x64, 0x82, 0x06, 0x00][..]] {
            let _ = decode_request(m, body);
        }
    }
    let ok = job(4, 1, 1, P::Normal).encode_to_vec();
    assert!(decode_request("SubmitProof", &ok).is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_circuit_whose_load_outgrows_the_host_budget_is_refused_every_time() {
    // A host budget one byte short of the 2^4 squaring chain's largest query.
    let q = largest_query(4);
    let d = daemon_with(&[4], |c| c.engine.host_memory_bytes = q - 1).await;
    let mut c = d.client().await;
    for _ in 0..2 {
        let e = c.submit_proof(job(4, 1, 1, P::Normal)).await.unwrap_err();
        assert_eq!(e.code(), Code::ResourceExhausted, "{}", e.message());
        assert!(e.message().contains("device load") && e.message().contains(&format!("holds {q} host bytes")), "{}", e.message());
    }
    c.get_status(proto::GetStatusRequest::default()).await.expect("still serving");
    stop(d).await;
}
