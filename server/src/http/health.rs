//! Liveness and readiness probes for load balancers and orchestrators.

use std::time::Duration;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use tidemark_store::{Db, Fault};

/// Probes time out after 1-2 s: readiness answers within this, whatever the database does.
pub const READINESS_DEADLINE: Duration = Duration::from_millis(800);

/// The process is up and serving. Never touches the database: a database outage must not
/// make an orchestrator restart healthy replicas.
pub async fn get_healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// The database answers and every migration is applied; otherwise 503 (with why) so traffic
/// goes elsewhere. Answers within [`READINESS_DEADLINE`].
pub async fn get_readyz(State(db): State<Db>) -> Response {
    let backend = db.backend().as_str();
    let (status, reason) = match tokio::time::timeout(READINESS_DEADLINE, db.is_ready()).await {
        Ok(Ok(true)) => {
            return Json(json!({ "status": "ready", "database": backend })).into_response()
        }
        Ok(Ok(false)) => (
            "migrations_pending",
            "migrations are pending: run `tidemark-server migrate`".to_owned(),
        ),
        Err(_) => (
            "database_unreachable",
            format!(
                "the database did not answer within {} ms",
                READINESS_DEADLINE.as_millis()
            ),
        ),
        Ok(Err(err)) => {
            let fault = err.fault();
            tidemark_store::fault::log_fault(fault.unwrap_or(Fault::Unavailable), &err);
            let reason = match fault {
                Some(Fault::Unavailable) => "the database cannot be reached",
                Some(Fault::StorageFull) => "the database's storage is full",
                None => "the database answered with an error (see the server log)",
            };
            ("database_unreachable", reason.to_owned())
        }
    };
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(
            header::RETRY_AFTER,
            crate::http::error::ApiError::DatabaseUnavailable
                .retry_after_secs()
                .unwrap_or_default(),
        )],
        Json(json!({ "status": status, "database": backend, "reason": reason })),
    )
        .into_response()
}
