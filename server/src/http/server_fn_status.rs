//! The HTTP status of the dashboard's server-function errors, set in one place: server_fn
//! answers every error with 500 and the error's JSON; this layer reads which
//! `DashboardError` it is and applies its status (401 signed out, 403 admin only, 404, 409,
//! 422, 503). A refused form posted without JavaScript is redirected back to its page with
//! the error in the address: that redirect gets the server's seal over the error
//! (`tidemark_domain::form_seal`), without which the page shows none.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use http_body_util::BodyExt as _;
use leptos::server_fn::error::SERVER_FN_ERROR_HEADER;

/// Error bodies are a short JSON value; anything larger is not ours to interpret.
const MAX_ERROR_BODY: usize = 64 * 1024;

pub async fn apply_error_status(
    State(seal): State<tidemark_services::crypto::FormSealKeys>,
    req: Request,
    next: Next,
) -> Response {
    let mut response = next.run(req).await;
    if !response.headers().contains_key(SERVER_FN_ERROR_HEADER) {
        return response;
    }
    if response.status().is_redirection() {
        let sealed = response
            .headers()
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|location| tidemark_domain::form_seal::seal_location(&seal.current, location))
            .and_then(|location| HeaderValue::try_from(location).ok());
        if let Some(location) = sealed {
            response.headers_mut().insert(header::LOCATION, location);
        }
        return response;
    }
    if response.status() != StatusCode::INTERNAL_SERVER_ERROR {
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
