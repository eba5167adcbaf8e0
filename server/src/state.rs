use std::sync::Arc;

use axum::extract::FromRef;
use leptos::config::LeptosOptions;
use tidemark_store::Db;

use crate::config::Config;
use crate::http::metrics::Metrics;

/// Everything a handler may need, cloned cheaply into each request.
#[derive(Clone, FromRef)]
pub struct AppState {
    pub leptos_options: LeptosOptions,
    pub db: Db,
    pub config: Arc<Config>,
    pub metrics: Arc<Metrics>,
}
