//! The budget for request bytes in flight. A gRPC call's message length is read from its
//! frame header before any of it is buffered; a message that would take the daemon past the
//! budget is refused with `RESOURCE_EXHAUSTED` at once, and an accepted one holds its share
//! until its job is accepted or refused. Each call carries one message: bytes after it are not
//! read.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::body::BoxBody;
use tonic::server::NamedService;
use tonic::Status;
use tower::Service;

pub use crate::limits::charge;

/// Messages up to this size pass without a charge (every call but a submission is far
/// smaller), bytes.
pub const FREE_BYTES: usize = 64 << 10;

/// The least rate a charged message must arrive at, bytes per second, after a grace of
/// [`GRACE`]: a client cannot hold a share of the budget by trickling its message.
pub const MIN_RATE: u64 = 1 << 20;

/// Time every charged message has on top of its length at [`MIN_RATE`].
pub const GRACE: Duration = Duration::from_secs(10);

/// The budget for request bytes in flight, shared by every gRPC listener.
#[derive(Debug, Clone)]
pub struct RequestBudget {
    permits: Arc<Semaphore>,
    total_kib: u32,
    refused: Arc<AtomicU64>,
    charged: Arc<AtomicU64>,
}

/// The budget's state for the status page and `/metrics`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RequestBudgetStatus {
    /// The budget, bytes.
    pub budget_bytes: u64,
    /// Charged to messages in flight now, bytes.
    pub in_flight_bytes: u64,
    /// Messages refused because the budget was spent.
    pub refused: u64,
    /// Messages charged since the start.
    pub charged: u64,
}

/// A message's share of the budget: released by [`Held::release`] once its job is accepted or
/// refused, and in any case when its call ends.
#[derive(Debug, Clone, Default)]
pub struct Held(Arc<Mutex<Option<OwnedSemaphorePermit>>>);

impl Held {
    /// Gives the share back.
    pub fn release(&self) {
        if let Ok(mut p) = self.0.lock() {
            p.take();
        }
    }
}

fn kib(bytes: u64) -> u32 {
    bytes.div_ceil(1024).min(u64::from(u32::MAX)) as u32
}

impl RequestBudget {
    /// A budget of `bytes`.
    pub fn new(bytes: u64) -> RequestBudget {
        let total_kib = kib(bytes).min(Semaphore::MAX_PERMITS as u32);
        RequestBudget {
            permits: Arc::new(Semaphore::new(total_kib as usize)),
            total_kib,
            refused: Arc::new(AtomicU64::new(0)),
            charged: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Takes the charge of a `len`-byte message, or says why not.
    pub fn take(&self, len: usize) -> Result<Held, Status> {
        let want = kib(charge(len));
        let refuse = |why: String| {
            self.refused.fetch_add(1, Ordering::Relaxed);
            Err(Status::resource_exhausted(why))
        };
        if want > self.total_kib {
            return refuse(format!(
                "a message of {len} bytes needs {} bytes in flight, more than this daemon's whole budget for requests ({} bytes, [server] request_budget_bytes)",
                charge(len),
                self.budget_bytes()
            ));
        }
        match self.permits.clone().try_acquire_many_owned(want) {
            Ok(p) => {
                self.charged.fetch_add(1, Ordering::Relaxed);
                Ok(Held(Arc::new(Mutex::new(Some(p)))))
            }
            Err(_) => refuse(format!(
                "a message of {len} bytes: {} of this daemon's {} bytes for requests in flight are taken ([server] request_budget_bytes); retry shortly",
                self.in_flight_bytes(),
                self.budget_bytes()
            )),
        }
    }

    /// The budget, bytes.
    pub fn budget_bytes(&self) -> u64 {
        u64::from(self.total_kib) * 1024
    }

    /// Charged now, bytes.
    pub fn in_flight_bytes(&self) -> u64 {
        (u64::from(self.total_kib) - self.permits.available_permits() as u64) * 1024
    }

    /// The state, for the status page.
    pub fn status(&self) -> RequestBudgetStatus {
        RequestBudgetStatus {
            budget_bytes: self.budget_bytes(),
            in_flight_bytes: self.in_flight_bytes(),
            refused: self.refused.load(Ordering::Relaxed),
            charged: self.charged.load(Ordering::Relaxed),
        }
    }
}

/// A gRPC service behind the request budget (wraps the generated server).
#[derive(Debug, Clone)]
pub struct Budgeted<S> {
    inner: S,
    budget: RequestBudget,
    max_message: usize,
}

impl<S> Budgeted<S> {
    /// `inner` behind `budget`; messages over `max_message` are left to the inner service to
    /// refuse (tonic does so from the header, reading nothing more).
    pub fn new(inner: S, budget: RequestBudget, max_message: usize) -> Budgeted<S> {
        Budgeted { inner, budget, max_message }
    }
}

impl<S: NamedService> NamedService for Budgeted<S> {
    const NAME: &'static str = S::NAME;
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S> Service<http::Request<BoxBody>> for Budgeted<S>
where
    S: Service<http::Request<BoxBody>, Response = http::Response<BoxBody>, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = http::Response<BoxBody>;
    type Error = Infallible;
    type Future = BoxFuture<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<BoxBody>) -> Self::Future {
        // The clone that was made ready serves this call; a fresh one waits for the next.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let (budget, max_message) = (self.budget.clone(), self.max_message);
        Box::pin(async move {
            let (mut parts, mut body) = req.into_parts();
            let mut head = BytesMut::new();
            let mut ended = false;
            while head.len() < 5 {
                match body.frame().await {
                    Some(Ok(f)) => match f.into_data() {
                        Ok(d) => head.extend_from_slice(&d),
                        Err(_) => break,
                    },
                    Some(Err(s)) => return Ok(s.into_http()),
                    None => {
                        ended = true;
                        break;
                    }
                }
            }
            let len = (head.len() >= 5).then(|| u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize);
            let mut deadline = None;
            if let Some(len) = len.filter(|&l| l > FREE_BYTES && l <= max_message) {
                let held = match budget.take(len) {
                    Ok(h) => h,
                    Err(s) => return Ok(s.into_http()),
                };
                parts.extensions.insert(held.clone());
                deadline = Some(tokio::time::Instant::now() + GRACE + Duration::from_secs(len as u64 / MIN_RATE));
                let body = OneMessage::new(head.freeze(), body, ended, 5 + len, deadline);
                let resp = inner.call(http::Request::from_parts(parts, tonic::body::boxed(body))).await;
                held.release();
                return resp;
            }
            let left = len.map_or(usize::MAX, |l| 5 + l);
            let body = OneMessage::new(head.freeze(), body, ended, left, deadline);
            inner.call(http::Request::from_parts(parts, tonic::body::boxed(body))).await
        })
    }
}

/// A request body cut after its first message, with the bytes already read put back in front,
/// and an optional deadline for the whole message.
struct OneMessage {
    head: Bytes,
    inner: BoxBody,
    ended: bool,
    /// Bytes still to pass on.
    left: usize,
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl OneMessage {
    fn new(head: Bytes, inner: BoxBody, ended: bool, left: usize, deadline: Option<tokio::time::Instant>) -> OneMessage {
        OneMessage { head, inner, ended, left, deadline: deadline.map(|d| Box::pin(tokio::time::sleep_until(d))) }
    }

    fn cut(&mut self, mut d: Bytes) -> Bytes {
        if d.len() > self.left {
            d.truncate(self.left);
        }
        self.left -= d.len();
        d
    }
}

impl Body for OneMessage {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = &mut *self;
        if this.head.has_remaining() {
            let head = std::mem::take(&mut this.head);
            return Poll::Ready(Some(Ok(Frame::data(this.cut(head)))));
        }
        if this.left == 0 || this.ended {
            return Poll::Ready(None);
        }
        if let Some(d) = this.deadline.as_mut() {
            if d.as_mut().poll(cx).is_ready() {
                this.left = 0;
                return Poll::Ready(Some(Err(Status::deadline_exceeded(format!(
                    "the request's message did not arrive in time (at least {} KiB/s after {} s)",
                    MIN_RATE / 1024,
                    GRACE.as_secs()
                )))));
            }
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(f))) => match f.into_data() {
                Ok(d) => Poll::Ready(Some(Ok(Frame::data(this.cut(d))))),
                // Trailers end the message.
                Err(_) => {
                    this.ended = true;
                    Poll::Ready(None)
                }
            },
            Poll::Ready(None) => {
                this.ended = true;
                Poll::Ready(None)
            }
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        !self.head.has_remaining() && (self.left == 0 || self.ended)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_taken_and_given_back() {
        let b = RequestBudget::new(3 * charge(100 << 20));
        let one = b.take(100 << 20).unwrap();
        let two = b.take(100 << 20).unwrap();
        assert_eq!(b.in_flight_bytes(), 2 * charge(100 << 20));
        // The third fits, a fourth does not.
        let three = b.take(100 << 20).unwrap();
        let e = b.take(100 << 20).unwrap_err();
        assert_eq!(e.code(), tonic::Code::ResourceExhausted);
        assert!(e.message().contains("request_budget_bytes"), "{}", e.message());
        one.release();
        // Released twice (by the handler, then at the call's end) counts once.
        one.release();
        let four = b.take(100 << 20).unwrap();
        drop((two, three, four));
        assert_eq!(b.in_flight_bytes(), 0);
        assert_eq!(b.status().refused, 1);
        assert_eq!(b.status().charged, 4);
    }

    #[test]
    fn a_message_larger_than_the_whole_budget_says_so() {
        let b = RequestBudget::new(charge(1 << 20));
        let e = b.take(2 << 20).unwrap_err();
        assert!(e.message().contains("more than this daemon's whole budget"), "{}", e.message());
    }
}
