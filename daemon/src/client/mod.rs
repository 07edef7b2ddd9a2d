//! The client side: connecting to a daemon (unix socket or TCP with a token), a minimal HTTP
//! GET for the status endpoints and proof verification of results; the `cuzk` client
//! commands ([`commands`]), the load generator ([`loadgen`]) and requests built as Curio's Go
//! client builds them ([`curio`]). Nothing on the server side imports this module.

pub mod commands;
pub mod curio;
pub mod hostile;
pub mod loadgen;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use blstrs::Scalar;
use cuzk_core::params::VerifyingKey;
use cuzk_core::proof::{verify, Proof};
use ff::PrimeField;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint, Uri};

use crate::auth::AddToken;
use crate::proto::proving_engine_client::ProvingEngineClient;
use crate::proto::AwaitProofResponse;

/// A connected client.
pub type Client = ProvingEngineClient<InterceptedService<Channel, AddToken>>;

/// Why a client operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The address is not understood.
    #[error("bad address {0:?}: use unix:/path/to/socket, /path/to/socket or http://host:port")]
    BadAddress(String),
    /// Connecting failed.
    #[error("connecting to {addr}: {source}")]
    Connect {
        /// The address.
        addr: String,
        /// The error.
        #[source]
        source: tonic::transport::Error,
    },
    /// A call failed.
    #[error("{:?}: {}", .0.code(), .0.message())]
    Rpc(Box<tonic::Status>),
    /// HTTP trouble.
    #[error("HTTP {0}")]
    Http(String),
    /// I/O trouble.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl From<tonic::Status> for ClientError {
    fn from(s: tonic::Status) -> Self {
        ClientError::Rpc(Box::new(s))
    }
}

/// Where a daemon listens, as the user wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    /// A unix socket path.
    Unix(PathBuf),
    /// `http://host:port`.
    Tcp(String),
}

impl Address {
    /// Parses `unix:/path`, `/path`, `http://host:port` or `host:port`.
    pub fn parse(s: &str) -> Result<Address, ClientError> {
        if let Some(p) = s.strip_prefix("unix://").or_else(|| s.strip_prefix("unix:")) {
            return Ok(Address::Unix(p.into()));
        }
        if s.starts_with('/') || s.starts_with('.') {
            return Ok(Address::Unix(s.into()));
        }
        if s.starts_with("http://") {
            return Ok(Address::Tcp(s.into()));
        }
        if s.parse::<SocketAddr>().is_ok() || s.contains(':') {
            return Ok(Address::Tcp(format!("http://{s}")));
        }
        Err(ClientError::BadAddress(s.into()))
    }
}

/// Connects to a daemon; `token` is sent as a bearer token when given.
pub async fn connect(addr: &str, token: Option<String>) -> Result<Client, ClientError> {
    let channel = channel(addr).await?;
    let interceptor = AddToken(token.map(Arc::from));
    Ok(ProvingEngineClient::with_interceptor(channel, interceptor).max_decoding_message_size(256 << 20))
}

/// A raw gRPC channel to a daemon.
pub async fn channel(addr: &str) -> Result<Channel, ClientError> {
    let conn = |source| ClientError::Connect { addr: addr.into(), source };
    let channel = match Address::parse(addr)? {
        Address::Unix(path) => {
            // The URI is required by the API but unused: the connector dials the socket.
            Endpoint::from_static("http://localhost")
                .connect_with_connector(tower::service_fn(move |_: Uri| {
                    let path = path.clone();
                    async move { Ok::<_, std::io::Error>(TokioIo::new(tokio::net::UnixStream::connect(path).await?)) }
                }))
                .await
                .map_err(conn)?
        }
        Address::Tcp(uri) => Endpoint::from_shared(uri.clone()).map_err(conn)?.connect().await.map_err(conn)?,
    };
    Ok(channel)
}

/// `GET path` over HTTP/1.1; returns the status code and body.
pub async fn http_get(addr: SocketAddr, path: &str, token: Option<&str>) -> Result<(u16, String), ClientError> {
    let mut s = tokio::net::TcpStream::connect(addr).await?;
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").ok_or_else(|| ClientError::Http("no header end".into()))?;
    let code = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).ok_or_else(|| ClientError::Http("no status".into()))?;
    let chunked = head.lines().any(|l| l.to_ascii_lowercase().starts_with("transfer-encoding:") && l.to_ascii_lowercase().contains("chunked"));
    let body = if chunked { dechunk(body)? } else { body.to_string() };
    Ok((code, body))
}

fn dechunk(mut s: &str) -> Result<String, ClientError> {
    let mut out = String::new();
    loop {
        let (size, rest) = s.split_once("\r\n").ok_or_else(|| ClientError::Http("bad chunk".into()))?;
        let n = usize::from_str_radix(size.trim(), 16).map_err(|_| ClientError::Http("bad chunk size".into()))?;
        if n == 0 {
            return Ok(out);
        }
        let chunk = rest.get(..n).ok_or_else(|| ClientError::Http("short chunk".into()))?;
        out.push_str(chunk);
        s = rest.get(n + 2..).unwrap_or("");
    }
}

/// Checks every partition proof of a completed result against `vk` and the public inputs the
/// daemon returned. Returns the number of proofs checked, or why they are not valid.
pub fn verify_result(vk: &VerifyingKey, r: &AwaitProofResponse) -> Result<usize, String> {
    let proofs = Proof::many_from_bytes(&r.proof).map_err(|e| format!("proof bytes: {e}"))?;
    if proofs.len() != r.public_inputs.len() {
        return Err(format!("{} proofs but {} public input sets", proofs.len(), r.public_inputs.len()));
    }
    for (i, (p, inputs)) in proofs.iter().zip(&r.public_inputs).enumerate() {
        let scalars = decode_scalars(inputs).ok_or_else(|| format!("partition {i}: bad public input bytes"))?;
        if !verify(vk, p, &scalars).map_err(|e| e.to_string())? {
            return Err(format!("partition {i}: proof does not verify"));
        }
    }
    Ok(proofs.len())
}

/// Decodes concatenated 32-byte little-endian scalars.
pub fn decode_scalars(b: &[u8]) -> Option<Vec<Scalar>> {
    if !b.len().is_multiple_of(32) {
        return None;
    }
    b.chunks(32)
        .map(|c| {
            let mut repr = <Scalar as PrimeField>::Repr::default();
            repr.as_mut().copy_from_slice(c);
            Option::from(Scalar::from_repr(repr))
        })
        .collect()
}
