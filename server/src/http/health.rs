//! Liveness and readiness probes for load balancers and orchestrators.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};
use tidemark_store::Db;

/// The process is up and serving.
pub async fn get_healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// The database answers and every migration is applied; otherwise 503 so traffic goes elsewhere.
pub async fn get_readyz(State(db): State<Db>) -> (StatusCode, Json<Value>) {
    let backend = db.backend().as_str();
    match db.is_ready().await {
        Ok(true) => (
            StatusCode::OK,
            Json(json!({ "status": "ready", "database": backend })),
        ),
        Ok(false) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "status": "migrations_pending", "database": backend })),
        ),
        Err(err) => {
            tracing::warn!(error = %err, "readiness check failed");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({ "status": "database_unreachable", "database": backend })),
            )
        }
    }
}
