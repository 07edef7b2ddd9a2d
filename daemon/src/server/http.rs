//! The HTTP listener: `GET /` (status page), `/status` (JSON), `/metrics` (Prometheus text),
//! `/trace` (Chrome trace-event JSON of the timeline). HTTP/1.1 only; a request's headers must
//! come within the handshake timeout.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::server::driver::DriverHandle;
use crate::server::listen::Guarded;
use crate::server::status::Outside;

/// The status page.
pub const STATUS_PAGE: &str = include_str!("status.html");

#[derive(Clone)]
struct AppState {
    handle: DriverHandle,
    /// When set, every request must carry it (`Authorization: Bearer`, or `?token=`).
    token: Option<Arc<str>>,
    /// What the listeners, the request budget and the journal add to the status.
    outside: Outside,
}

/// The router; `token` is required on every request when set.
pub fn router(handle: DriverHandle, token: Option<String>, outside: Outside) -> Router {
    let state = AppState { handle, token: token.map(Into::into), outside };
    Router::new().route("/", get(page)).route("/status", get(status)).route("/metrics", get(metrics)).route("/trace", get(trace)).with_state(state)
}

fn authorized(st: &AppState, headers: &HeaderMap, q: &HashMap<String, String>) -> bool {
    let Some(want) = &st.token else { return true };
    let bearer = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    let given = bearer.or(q.get("token").map(String::as_str));
    given.is_some_and(|g| crate::auth::constant_time_eq(g.as_bytes(), want.as_bytes()))
}

fn unauthorized() -> Response {
    (StatusCode::UNAUTHORIZED, "missing or wrong bearer token\n").into_response()
}

fn unavailable(e: crate::server::driver::DriverError) -> Response {
    (StatusCode::SERVICE_UNAVAILABLE, format!("{e}\n")).into_response()
}

async fn page(State(st): State<AppState>, headers: HeaderMap, Query(q): Query<HashMap<String, String>>) -> Response {
    if !authorized(&st, &headers, &q) {
        return unauthorized();
    }
    Html(STATUS_PAGE).into_response()
}

async fn status(State(st): State<AppState>, headers: HeaderMap, Query(q): Query<HashMap<String, String>>) -> Response {
    if !authorized(&st, &headers, &q) {
        return unauthorized();
    }
    match st.handle.snapshot().await {
        Ok(mut s) => {
            st.outside.fill(&mut s);
            axum::Json(s).into_response()
        }
        Err(e) => unavailable(e),
    }
}

async fn metrics(State(st): State<AppState>, headers: HeaderMap, Query(q): Query<HashMap<String, String>>) -> Response {
    if !authorized(&st, &headers, &q) {
        return unauthorized();
    }
    match st.handle.snapshot().await {
        Ok(mut s) => {
            st.outside.fill(&mut s);
            ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], crate::server::metrics::render(&s)).into_response()
        }
        Err(e) => unavailable(e),
    }
}

async fn trace(State(st): State<AppState>, headers: HeaderMap, Query(q): Query<HashMap<String, String>>) -> Response {
    if !authorized(&st, &headers, &q) {
        return unauthorized();
    }
    match st.handle.trace().await {
        Ok(t) => ([(header::CONTENT_TYPE, "application/json")], t).into_response(),
        Err(e) => unavailable(e),
    }
}

/// Serves `router` on the connections of `incoming` (HTTP/1.1; headers within
/// `header_timeout`) until `stop` turns true, then lets each connection finish its request.
pub async fn serve(
    mut incoming: tokio_stream::wrappers::ReceiverStream<std::io::Result<Guarded<tokio::net::TcpStream>>>,
    router: Router,
    header_timeout: std::time::Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Result<(), crate::server::ServeError> {
    use tokio_stream::StreamExt;
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let io = tokio::select! {
            _ = stop.wait_for(|s| *s) => break,
            io = incoming.next() => match io {
                Some(Ok(io)) => io,
                Some(Err(_)) => continue,
                None => break,
            },
        };
        let service = hyper_util::service::TowerToHyperService::new(router.clone());
        let mut stop = stop.clone();
        connections.spawn(async move {
            let mut http1 = hyper::server::conn::http1::Builder::new();
            http1.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(header_timeout);
            let conn = http1.serve_connection(hyper_util::rt::TokioIo::new(io), service);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = async { stop.wait_for(|s| *s).await.map(|_| ()) } => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
        });
        while connections.try_join_next().is_some() {}
    }
    while connections.join_next().await.is_some() {}
    Ok(())
}
