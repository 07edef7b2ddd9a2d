//! Hostile clients for `cuzk load --hostile`: beside the honest load, bytes that are not a
//! message, messages too large for the request budget, messages of millions of fields, fields
//! a kind does not read, and connections that stay silent or stall in their handshake. Every
//! hostile call must be refused; one that is accepted is counted, and fails the run.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Buf, BufMut};
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::Status;

use crate::client::{channel, Address};
use crate::proto;

/// Sends a message's bytes as they are; the answer's bytes come back as they are.
#[derive(Debug, Default, Clone, Copy)]
pub struct RawCodec;

impl Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawCodec;
    type Decoder = RawCodec;
    fn encoder(&mut self) -> RawCodec {
        RawCodec
    }
    fn decoder(&mut self) -> RawCodec {
        RawCodec
    }
}

impl Encoder for RawCodec {
    type Item = Vec<u8>;
    type Error = Status;
    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for RawCodec {
    type Item = Vec<u8>;
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        let mut v = vec![0; src.remaining()];
        src.copy_to_slice(&mut v);
        Ok(Some(v))
    }
}

/// Calls `method` of the daemon at `addr` with `body` as the message's bytes.
pub async fn raw_call(addr: &str, method: &str, body: Vec<u8>) -> Result<Vec<u8>, Status> {
    let ch = channel(addr).await.map_err(|e| Status::unavailable(e.to_string()))?;
    let mut g = tonic::client::Grpc::new(ch).max_encoding_message_size(usize::MAX).max_decoding_message_size(usize::MAX);
    g.ready().await.map_err(|e| Status::unavailable(e.to_string()))?;
    let path = format!("/cuzk.v1.ProvingEngine/{method}").parse().map_err(|_| Status::internal("bad method"))?;
    g.unary(tonic::Request::new(body), path, RawCodec).await.map(|r| r.into_inner())
}

/// What the hostile clients did and what they got.
#[derive(Debug, Default, Clone)]
pub struct HostileReport {
    /// Per attack, per answer (a gRPC code, or "accepted"), how many.
    pub answers: BTreeMap<&'static str, BTreeMap<String, u64>>,
    /// Hostile calls the daemon accepted (each a defect).
    pub accepted: u64,
    /// Silent and stalled connections opened.
    pub silent_connections: u64,
}

type Shared = Arc<Mutex<HostileReport>>;

fn note(r: &Shared, attack: &'static str, answer: Result<Vec<u8>, Status>) {
    let mut r = r.lock().unwrap_or_else(|e| e.into_inner());
    let key = match answer {
        Ok(_) => {
            r.accepted += 1;
            "accepted".to_string()
        }
        Err(s) => format!("{:?}", s.code()),
    };
    *r.answers.entry(attack).or_default().entry(key).or_default() += 1;
}

/// A GENERIC submission carrying `len` bytes in a field GENERIC does not read.
fn oversized(len: usize) -> Vec<u8> {
    use prost::Message;
    proto::SubmitProofRequest {
        proof_kind: proto::ProofKind::Generic as i32,
        vanilla_proof: vec![0x5a; len],
        generic: Some(proto::GenericJob { circuit: "squaring-chain".into(), log_size: 4, seed: 1, partitions: 1 }),
        ..Default::default()
    }
    .encode_to_vec()
}

/// A WindowPoSt submission of `n` empty `vanilla_proofs` (2 bytes each on the wire).
fn many_fields(n: usize) -> Vec<u8> {
    let mut v = vec![0x10, proto::ProofKind::WindowPostPartition as u8];
    for _ in 0..n {
        v.extend_from_slice(&[0x5a, 0]);
    }
    v
}

/// Runs the hostile clients against the daemon at `addr` until `stop` turns true.
pub async fn run(addr: String, mut stop: watch::Receiver<bool>) -> HostileReport {
    let report: Shared = Arc::default();
    let mut set = JoinSet::new();
    let every = |ms| Duration::from_millis(ms);
    // (attack, pause between calls, the i-th call's body)
    type Body = fn(u64) -> Vec<u8>;
    let attacks: [(&'static str, Duration, Body); 4] = [
        ("junk bytes", every(500), |i| (0..(64 + i % 4096)).map(|b| ((b * 2654435761) ^ i) as u8).collect()),
        ("100 MiB in an unused field", every(4_000), |_| oversized(100 << 20)),
        ("2 M empty vanilla_proofs", every(3_000), |_| many_fields(2_000_000)),
        ("vanilla_proofs on GENERIC", every(1_000), |_| {
            use prost::Message;
            proto::SubmitProofRequest {
                proof_kind: proto::ProofKind::Generic as i32,
                vanilla_proofs: vec![vec![1; 32]; 4],
                generic: Some(proto::GenericJob { circuit: "squaring-chain".into(), log_size: 4, seed: 1, partitions: 1 }),
                ..Default::default()
            }
            .encode_to_vec()
        }),
    ];
    for (attack, pause, body) in attacks {
        // Three clients of each attack at once.
        for lane in 0..3u64 {
            let (addr, report, mut stop) = (addr.clone(), report.clone(), stop.clone());
            set.spawn(async move {
                let mut i = lane;
                while !*stop.borrow() {
                    let b = body(i);
                    let answer = raw_call(&addr, "SubmitProof", b).await;
                    note(&report, attack, answer);
                    i += 3;
                    tokio::select! {
                        _ = tokio::time::sleep(pause) => {}
                        _ = stop.changed() => {}
                    }
                }
            });
        }
    }
    // Connections that stay silent, or stall after half an HTTP/2 preface; reopened as the
    // daemon closes them.
    for stall in [false, true] {
        let (addr, report, mut stop) = (addr.clone(), report.clone(), stop.clone());
        set.spawn(async move {
            let mut held = Vec::new();
            while !*stop.borrow() {
                held.retain(|c: &Conn| !c.is_closed());
                while held.len() < 32 {
                    match Conn::open(&addr).await {
                        Some(mut c) => {
                            if stall {
                                c.write(b"PRI * HTTP/2.0\r\n").await;
                            }
                            held.push(c);
                            report.lock().unwrap_or_else(|e| e.into_inner()).silent_connections += 1;
                        }
                        None => break,
                    }
                }
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                    _ = stop.changed() => {}
                }
            }
        });
    }
    let _ = stop.wait_for(|s| *s).await;
    while set.join_next().await.is_some() {}
    let r = report.lock().unwrap_or_else(|e| e.into_inner()).clone();
    r
}

/// A raw connection to the daemon.
enum Conn {
    Unix(tokio::net::UnixStream),
    Tcp(tokio::net::TcpStream),
}

impl Conn {
    async fn open(addr: &str) -> Option<Conn> {
        match Address::parse(addr).ok()? {
            Address::Unix(p) => tokio::net::UnixStream::connect(p).await.ok().map(Conn::Unix),
            Address::Tcp(a) => tokio::net::TcpStream::connect(a.trim_start_matches("http://")).await.ok().map(Conn::Tcp),
        }
    }

    async fn write(&mut self, b: &[u8]) {
        let _ = match self {
            Conn::Unix(s) => s.write_all(b).await,
            Conn::Tcp(s) => s.write_all(b).await,
        };
    }

    /// Whether the daemon closed it (a read would return end of file).
    fn is_closed(&self) -> bool {
        let mut buf = [0u8; 1];
        let r = match self {
            Conn::Unix(s) => s.try_read(&mut buf),
            Conn::Tcp(s) => s.try_read(&mut buf),
        };
        matches!(r, Ok(0)) || matches!(r, Err(ref e) if e.kind() != std::io::ErrorKind::WouldBlock)
    }
}

impl HostileReport {
    /// The report as lines for the load summary.
    pub fn lines(&self) -> Vec<String> {
        let mut out =
            vec![format!("hostile clients: {} calls accepted (must be 0); {} silent or stalled connections opened", self.accepted, self.silent_connections)];
        for (attack, answers) in &self.answers {
            let a: Vec<String> = answers.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
            out.push(format!("  {attack}: {}", a.join(", ")));
        }
        out
    }
}
