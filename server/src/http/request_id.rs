//! Every response carries an `X-Request-Id`: a caller's own id is echoed when it is safe to
//! log, otherwise the server makes one. Logs and 500 responses quote the same id.

use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;

pub static X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The request's id, available to handlers as an extension.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

/// An incoming id is kept only if it is short and made of characters that cannot forge a log
/// line or a header: letters, digits, `-`, `_`, `.`.
pub fn is_acceptable(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

pub async fn assign_request_id(mut req: Request, next: Next) -> Response {
    let id = req
        .headers()
        .get(&X_REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| is_acceptable(v))
        .map(str::to_owned)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let value = HeaderValue::from_str(&id).unwrap_or_else(|_| HeaderValue::from_static("invalid"));
    req.headers_mut()
        .insert(X_REQUEST_ID.clone(), value.clone());
    req.extensions_mut().insert(RequestId(id));
    let mut res = next.run(req).await;
    res.headers_mut().insert(X_REQUEST_ID.clone(), value);
    res
}

#[cfg(test)]
mod tests {
    use super::is_acceptable;

    #[test]
    fn accepts_ordinary_ids_and_refuses_log_forgery() {
        assert!(is_acceptable("3f2c9a1e-0b7d-4d59-9a51-1f0e2b7c8d90"));
        assert!(is_acceptable("ci.job_42"));
        assert!(!is_acceptable(""));
        assert!(!is_acceptable("a b"));
        assert!(!is_acceptable("id\nforged=1"));
        assert!(!is_acceptable(&"x".repeat(129)));
    }
}
