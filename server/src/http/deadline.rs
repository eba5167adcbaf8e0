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
