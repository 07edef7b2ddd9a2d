//! Accept loops that keep listening. Each listener (the gRPC unix socket, gRPC TCP, HTTP) runs
//! its own loop: a failed accept is never the end of it (out of file descriptors, `EMFILE` or
//! `ENFILE`: logged, backed off, retried; an aborted handshake: skipped); it holds at most
//! [`Limits::max_connections`] connections at once (one past that is closed at once, so one
//! listener's clients cannot take the descriptors another needs); and a connection that sends
//! nothing is closed: its first bytes must come within [`Limits::handshake`], and after that
//! some byte within every [`Limits::idle`] (the gRPC listeners ping their clients more often
//! than that, so a live client, one waiting for a long proof included, always has bytes to
//! send).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::{mpsc, watch, OwnedSemaphorePermit, Semaphore};
use tokio::time::Sleep;
use tokio_stream::wrappers::ReceiverStream;

use serde::{Deserialize, Serialize};

/// How many connections a listener holds and how long a silent one is kept.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Connections open at once; one more is closed as soon as it is accepted.
    pub max_connections: usize,
    /// Time from the accept to the connection's first bytes.
    pub handshake: Duration,
    /// Longest time without a byte from the client once it has spoken.
    pub idle: Duration,
}

fn state_of(v: u8) -> ListenerState {
    match v {
        0 => ListenerState::Serving,
        1 => ListenerState::BackingOff,
        _ => ListenerState::Stopped,
    }
}

/// One listener's counters, shared between its accept loop and the status report.
#[derive(Debug)]
pub struct ListenerStats {
    name: &'static str,
    address: String,
    limits: Limits,
    state: AtomicU8,
    open: AtomicUsize,
    accepted: AtomicU64,
    refused: AtomicU64,
    accept_errors: AtomicU64,
    timed_out: AtomicU64,
}

impl ListenerStats {
    /// Counters for the listener `name` at `address`.
    pub fn new(name: &'static str, address: String, limits: Limits) -> Arc<Self> {
        Arc::new(ListenerStats {
            name,
            address,
            limits,
            state: AtomicU8::new(0),
            open: AtomicUsize::new(0),
            accepted: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            accept_errors: AtomicU64::new(0),
            timed_out: AtomicU64::new(0),
        })
    }

    fn set(&self, s: ListenerState) {
        self.state.store(s as u8, Ordering::Relaxed);
    }

    /// The report.
    pub fn status(&self) -> ListenerStatus {
        ListenerStatus {
            name: self.name.into(),
            address: self.address.clone(),
            state: state_of(self.state.load(Ordering::Relaxed)),
            open: self.open.load(Ordering::Relaxed),
            max_connections: self.limits.max_connections,
            accepted: self.accepted.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            accept_errors: self.accept_errors.load(Ordering::Relaxed),
            timed_out: self.timed_out.load(Ordering::Relaxed),
        }
    }
}

/// Every listener of a daemon.
#[derive(Clone, Debug, Default)]
pub struct Listeners(Vec<Arc<ListenerStats>>);

impl Listeners {
    /// Adds one.
    pub fn push(&mut self, s: Arc<ListenerStats>) {
        self.0.push(s);
    }

    /// Their reports, in the order they were added.
    pub fn status(&self) -> Vec<ListenerStatus> {
        self.0.iter().map(|s| s.status()).collect()
    }
}

/// A listening socket the loop accepts from.
pub trait Accept: Send + Sync + 'static {
    /// The connection.
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    /// The next connection.
    fn accept(&self) -> impl Future<Output = io::Result<Self::Io>> + Send;
}

impl Accept for TcpListener {
    type Io = TcpStream;
    async fn accept(&self) -> io::Result<TcpStream> {
        let (s, _) = TcpListener::accept(self).await?;
        let _ = s.set_nodelay(true);
        Ok(s)
    }
}

impl Accept for UnixListener {
    type Io = UnixStream;
    async fn accept(&self) -> io::Result<UnixStream> {
        UnixListener::accept(self).await.map(|(s, _)| s)
    }
}

/// Whether an accept failed for want of a resource that frees up when connections close.
fn exhausted(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM))
}

/// Runs `listener`'s accept loop until `stop` turns true; its connections come out of the
/// stream, each holding one of the listener's `max_connections` places until it is dropped.
pub fn incoming<A: Accept>(listener: A, stats: Arc<ListenerStats>, mut stop: watch::Receiver<bool>) -> ReceiverStream<io::Result<Guarded<A::Io>>> {
    let (tx, rx) = mpsc::channel(1);
    let places = Arc::new(Semaphore::new(stats.limits.max_connections));
    tokio::spawn(async move {
        let mut backoff = Duration::from_millis(10);
        let mut last_warning: Option<Instant> = None;
        let mut warn = |stats: &ListenerStats, what: String| {
            // At most one warning in 10 s per listener: a flood must not flood the log.
            if last_warning.is_none_or(|t| t.elapsed() >= Duration::from_secs(10)) {
                tracing::warn!(listener = stats.name, address = %stats.address, "{what}");
                last_warning = Some(Instant::now());
            }
        };
        loop {
            let accepted = tokio::select! {
                _ = stop.wait_for(|s| *s) => break,
                r = listener.accept() => r,
            };
            let io = match accepted {
                Ok(io) => {
                    stats.set(ListenerState::Serving);
                    backoff = Duration::from_millis(10);
                    io
                }
                Err(e) if exhausted(&e) => {
                    stats.accept_errors.fetch_add(1, Ordering::Relaxed);
                    stats.set(ListenerState::BackingOff);
                    warn(
                        &stats,
                        format!(
                            "accept failed ({e}); retrying in {} ms (raise the file limit, `LimitNOFILE`, or lower server.max_connections)",
                            backoff.as_millis()
                        ),
                    );
                    tokio::select! {
                        _ = stop.wait_for(|s| *s) => break,
                        _ = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                    continue;
                }
                Err(e) => {
                    // An aborted or reset handshake, or a signal: the listener itself is fine.
                    stats.accept_errors.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(listener = stats.name, error = %e, "accept failed");
                    continue;
                }
            };
            stats.accepted.fetch_add(1, Ordering::Relaxed);
            let Ok(place) = places.clone().try_acquire_owned() else {
                stats.refused.fetch_add(1, Ordering::Relaxed);
                warn(&stats, format!("{} connections open, the most server.max_connections allows: closing new ones", stats.limits.max_connections));
                drop(io);
                continue;
            };
            if tx.send(Ok(Guarded::new(io, place, stats.clone()))).await.is_err() {
                break;
            }
        }
        stats.set(ListenerState::Stopped);
    });
    ReceiverStream::new(rx)
}

/// A connection holding its place in the listener; reads fail with `TimedOut` once the client
/// has been silent too long (the server then closes it).
pub struct Guarded<Io> {
    io: Io,
    _place: OwnedSemaphorePermit,
    stats: Arc<ListenerStats>,
    /// Fires at the deadline last set; moved on lazily when bytes came since.
    timer: Pin<Box<Sleep>>,
    /// When the last bytes came, once any have.
    last_read: Option<Instant>,
}

impl<Io> Guarded<Io> {
    fn new(io: Io, place: OwnedSemaphorePermit, stats: Arc<ListenerStats>) -> Self {
        stats.open.fetch_add(1, Ordering::Relaxed);
        let timer = Box::pin(tokio::time::sleep(stats.limits.handshake));
        Guarded { io, _place: place, stats, timer, last_read: None }
    }
}

impl<Io> Drop for Guarded<Io> {
    fn drop(&mut self) {
        self.stats.open.fetch_sub(1, Ordering::Relaxed);
    }
}

impl<Io: AsyncRead + Unpin> AsyncRead for Guarded<Io> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    this.last_read = Some(Instant::now());
                }
                Poll::Ready(Ok(()))
            }
            Poll::Pending => loop {
                if this.timer.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                match this.last_read {
                    Some(t) if t.elapsed() < this.stats.limits.idle => {
                        let at = tokio::time::Instant::from_std(t + this.stats.limits.idle);
                        this.timer.as_mut().reset(at);
                    }
                    _ => {
                        this.stats.timed_out.fetch_add(1, Ordering::Relaxed);
                        let what = if this.last_read.is_some() { "idle" } else { "silent since it connected" };
                        return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, format!("connection {what} past the limit"))));
                    }
                }
            },
            other => other,
        }
    }
}

impl<Io: AsyncWrite + Unpin> AsyncWrite for Guarded<Io> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }
    fn poll_write_vectored(self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

impl<Io: tonic::transport::server::Connected> tonic::transport::server::Connected for Guarded<Io> {
    type ConnectInfo = Io::ConnectInfo;
    fn connect_info(&self) -> Self::ConnectInfo {
        self.io.connect_info()
    }
}

/// Raises the soft limit on open files to the hard limit and returns the limit now in force
/// (`None` where it cannot be read).
pub fn raise_file_limit() -> Option<u64> {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit write or read only the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return None;
        }
        if r.rlim_cur < r.rlim_max {
            let raised = libc::rlimit { rlim_cur: r.rlim_max, rlim_max: r.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                r = raised;
            }
        }
    }
    Some(r.rlim_cur)
}

/// A listener's state, as the status page and `/metrics` report it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ListenerState {
    /// Accepting connections.
    Serving,
    /// Its last accept failed for want of a resource (file descriptors, memory); retrying.
    BackingOff,
    /// Its loop has ended (the daemon is stopping).
    Stopped,
}

/// A listener's report on the status page (`listeners` in `/status`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListenerStatus {
    /// `grpc-unix`, `grpc-tcp` or `http`.
    pub name: String,
    /// The socket path or address.
    pub address: String,
    /// Whether it accepts connections.
    pub state: ListenerState,
    /// Connections open now.
    pub open: usize,
    /// The most it holds at once.
    pub max_connections: usize,
    /// Connections accepted since the start.
    pub accepted: u64,
    /// Connections closed on accept because the listener was full.
    pub refused: u64,
    /// Accepts that failed (descriptors or memory exhausted, handshakes aborted).
    pub accept_errors: u64,
    /// Connections closed because they sent nothing in time.
    pub timed_out: u64,
}
