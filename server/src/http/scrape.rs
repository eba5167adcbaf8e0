//! `GET /metrics`: the scrape. The figures and their registry are `http::metrics`'s; this
//! handler only reads them from the server's state (so the registry never imports the state).

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;

use crate::state::AppState;

pub async fn get_metrics(State(state): State<AppState>) -> impl IntoResponse {
    let metrics = &state.metrics;
    metrics
        .sample(
            &state.db,
            state.push_budget.in_flight(),
            &state.config.data_dir,
        )
        .await;
    (
        [(
            CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        metrics.render(),
    )
}
