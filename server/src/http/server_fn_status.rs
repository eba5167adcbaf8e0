//! The HTTP status of the dashboard's server-function errors, set in one place: server_fn
//! answers every error with 500 and the error's JSON; this layer reads which
//! `DashboardError` it is and applies its status (401 signed out, 403 admin only, 404, 409,
//! 422, 503). Redirects (a form posted without JavaScript) are left as they are.

use axum::body::Body;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use http_body_util::BodyExt as _;

/// Error bodies are a short JSON value; anything larger is not ours to interpret.
const MAX_ERROR_BODY: usize = 64 * 1024;

pub async fn apply_error_status(req: Request, next: Next) -> Response {
    let response = next.run(req).await;
    let is_error = response.status() == StatusCode::INTERNAL_SERVER_ERROR
        && response.headers().contains_key("serverfnerror");
    if !is_error {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let bytes = match http_body_util::Limited::new(body, MAX_ERROR_BODY)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return Response::from_parts(parts, Body::empty()),
    };
    if let Some(status) =
        app::error::status_of_error_body(&bytes).and_then(|code| StatusCode::from_u16(code).ok())
    {
        parts.status = status;
    }
    Response::from_parts(parts, Body::from(bytes))
}
