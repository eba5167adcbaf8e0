//! A handler that panics is answered, not dropped: without this, the panic unwinds the
//! connection's task and hyper resets the connection, so the caller sees no answer at all
//! (and cannot tell a bug from a network fault). The panic itself is logged by the hook
//! `telemetry::init` installs, once, without a backtrace.

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::FutureExt as _;
use tidemark_wire::ErrorBody;

use super::request_id::RequestId;

/// On the `500` that answered a panic, for `tidemark_panics_total`.
#[derive(Clone, Copy, Debug)]
pub struct Panicked;

pub async fn answer_panics(req: Request, next: Next) -> Response {
    let id = req
        .extensions()
        .get::<RequestId>()
        .map(|id| id.0.clone())
        .unwrap_or_default();
    // The request's state is dropped with the unwound future; nothing of it is reused.
    match std::panic::AssertUnwindSafe(next.run(req))
        .catch_unwind()
        .await
    {
        Ok(res) => res,
        Err(_) => {
            let body = ErrorBody {
                error: "internal_error".to_owned(),
                message: format!(
                    "Something went wrong on our side. Quote the request id {id} (also in the \
                     X-Request-Id header) if you contact support."
                ),
            };
            let mut res = (StatusCode::INTERNAL_SERVER_ERROR, Json(body)).into_response();
            res.extensions_mut().insert(Panicked);
            res
        }
    }
}
