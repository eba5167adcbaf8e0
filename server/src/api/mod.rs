//! The `/v1` scanner API. Every response under `/v1`, including unknown routes and wrong
//! methods, is JSON; every error is one [`ApiError`] variant rendered as `{error, message}`.

mod error;

pub use error::ApiError;

use axum::Router;

use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .fallback(|| async { ApiError::NotFound })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
}
