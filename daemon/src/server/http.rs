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
use crate::server::status::{human_bytes, Outside, Snapshot};

/// The status page.
pub const STATUS_PAGE: &str = include_str!("status.html");

/// Text for HTML element content and attribute values.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The name serde gives a unit variant (`hot`, `resident`, `backing_off`).
fn serde_name<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

/// A table cell of a size: human units, the byte figure on hover (as the page's `sized`).
fn sized(bytes: u64) -> String {
    format!("<td title=\"{bytes} bytes\">{}</td>", human_bytes(bytes))
}

fn cell(text: &str) -> String {
    format!("<td>{}</td>", esc(text))
}

/// The status page with what `s` says filled in where the page's script shows sizes and
/// states (the memory budgets, the parameters, the listeners, the RSS), so that it reads
/// right before its script runs, and without it; the script refreshes them every second, in
/// the same form.
pub fn render_page(s: &Snapshot) -> String {
    let budgets = std::iter::once(("host".to_string(), &s.memory.host)).chain(s.memory.devices.iter().enumerate().map(|(i, b)| (format!("device {i}"), b)));
    let memory: String = budgets
        .map(|(name, b)| {
            let frac = if b.capacity > 0 { (b.used as f64 / b.capacity as f64).min(1.0) } else { 0.0 };
            format!(
                "<tr>{}{}{}<td><span class=\"bar\"><div style=\"width: {:.1}%;\"></div></span></td></tr>",
                cell(&name),
                sized(b.used),
                sized(b.capacity),
                100.0 * frac
            )
        })
        .collect();
    let params: String = s
        .params
        .iter()
        .map(|p| {
            let devices = p.devices.iter().map(serde_name).collect::<Vec<_>>().join(", ");
            format!(
                "<tr>{}{}{}{}{}{}</tr>",
                cell(&p.circuit),
                cell(&serde_name(&p.tier)),
                cell(&serde_name(&p.host)),
                cell(&devices),
                sized(p.bytes),
                cell(&p.ref_count.to_string())
            )
        })
        .collect();
    let listeners: String = s
        .listeners
        .iter()
        .map(|l| {
            let state = serde_name(&l.state);
            format!(
                "<tr>{}{}<td data-state=\"{}\">{}</td>{}{}{}{}{}</tr>",
                cell(&l.name),
                cell(&l.address),
                esc(&state),
                esc(&state.replace('_', " ")),
                cell(&format!("{} / {}", l.open, l.max_connections)),
                cell(&l.accepted.to_string()),
                cell(&l.refused.to_string()),
                cell(&l.accept_errors.to_string()),
                cell(&l.timed_out.to_string())
            )
        })
        .collect();
    let rss = match s.rss_bytes {
        Some(b) => format!("<span id=\"rss\" class=\"num\" title=\"{b} bytes\">{}</span>", human_bytes(b)),
        None => "<span id=\"rss\" class=\"num\">unknown</span>".to_string(),
    };
    STATUS_PAGE.replacen("<!--memory-->", &memory, 1).replacen("<!--params-->", &params, 1).replacen("<!--listeners-->", &listeners, 1).replacen(
        "<span id=\"rss\" class=\"num\"></span>",
        &rss,
        1,
    )
}

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
    match st.handle.snapshot().await {
        Ok(mut s) => {
            st.outside.fill(&mut s);
            Html(render_page(&s)).into_response()
        }
        // The page's script says the status is unavailable.
        Err(_) => Html(STATUS_PAGE).into_response(),
    }
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
