//! The HTTP listener: `GET /` (status page), `/status` (JSON), `/metrics` (Prometheus text),
//! `/trace` (Chrome trace-event JSON of the timeline).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::driver::DriverHandle;

/// The status page.
pub const STATUS_PAGE: &str = include_str!("status.html");

#[derive(Clone)]
struct AppState {
    handle: DriverHandle,
    /// When set, every request must carry it (`Authorization: Bearer`, or `?token=`).
    token: Option<Arc<str>>,
}

/// The router; `token` is required on every request when set.
pub fn router(handle: DriverHandle, token: Option<String>) -> Router {
    let state = AppState { handle, token: token.map(Into::into) };
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

fn unavailable(e: crate::driver::DriverError) -> Response {
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
        Ok(s) => axum::Json(s).into_response(),
        Err(e) => unavailable(e),
    }
}

async fn metrics(State(st): State<AppState>, headers: HeaderMap, Query(q): Query<HashMap<String, String>>) -> Response {
    if !authorized(&st, &headers, &q) {
        return unauthorized();
    }
    match st.handle.snapshot().await {
        Ok(s) => ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], crate::metrics::render(&s)).into_response(),
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
