//! Every request's database calls are bounded (`tidemark_store::fault::within_deadline`), so
//! a database that stops answering (a paused VM, a storage stall, a network black hole) is
//! answered `503 database_unavailable` within `TIDEMARK_DB_STATEMENT_TIMEOUT_SECONDS`,
//! instead of holding the caller until its own time-out.

use std::time::Duration;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

pub async fn bound_database_calls(
    State(limit): State<Duration>,
    req: Request,
    next: Next,
) -> Response {
    tidemark_store::fault::within_deadline(limit, next.run(req)).await
}

/// Stops a request that outlasts `limit` (`TIDEMARK_API_TIMEOUT_SECONDS`) with `408
/// request_timeout`: what `/v1` and `/admin/v1` promise their callers.
pub async fn answer_within(State(limit): State<Duration>, req: Request, next: Next) -> Response {
    use axum::response::IntoResponse as _;
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(res) => res,
        Err(_) => crate::http::error::ApiError::RequestTimeout(format!(
            "The request took longer than {} seconds and was stopped; send it again (a \
             repeated push is answered like the first and costs nothing).",
            limit.as_secs()
        ))
        .into_response(),
    }
}
