//! Bearer-token authentication for the TCP gRPC listener.

use std::sync::Arc;

use tonic::service::Interceptor;
use tonic::{Request, Status};

/// Compares without an early exit, so the time taken does not reveal a matching prefix.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Server side: refuses calls without `authorization: Bearer <token>`.
#[derive(Clone)]
pub struct RequireToken(pub Arc<str>);

impl Interceptor for RequireToken {
    fn call(&mut self, req: Request<()>) -> Result<Request<()>, Status> {
        let given = req.metadata().get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
        match given {
            Some(t) if constant_time_eq(t.as_bytes(), self.0.as_bytes()) => Ok(req),
            Some(_) => Err(Status::unauthenticated("wrong bearer token")),
            None => Err(Status::unauthenticated("this listener needs `authorization: Bearer <token>`")),
        }
    }
}

/// Client side: adds the token, when there is one.
#[derive(Clone, Default)]
pub struct AddToken(pub Option<Arc<str>>);

impl Interceptor for AddToken {
    fn call(&mut self, mut req: Request<()>) -> Result<Request<()>, Status> {
        if let Some(t) = &self.0 {
            let v = format!("Bearer {t}").parse().map_err(|_| Status::invalid_argument("the token is not a valid header value"))?;
            req.metadata_mut().insert("authorization", v);
        }
        Ok(req)
    }
}
