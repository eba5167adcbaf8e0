use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;

/// The one error type of the `/v1` API. Each variant is one documented row of the contract's
/// error table: its status, its machine-readable code and its human message.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("No such endpoint. See /v1/openapi.json for the API.")]
    NotFound,
    #[error("This endpoint does not accept that HTTP method.")]
    MethodNotAllowed,
    /// Details go to the server log (with the request id), never to the caller.
    #[error(
        "Something went wrong on our side. Quote the X-Request-Id header if you contact support."
    )]
    Internal(#[source] anyhow::Error),
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: &'a str,
    message: String,
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::NotFound => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            ApiError::NotFound => "not_found",
            ApiError::MethodNotAllowed => "method_not_allowed",
            ApiError::Internal(_) => "internal_error",
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let ApiError::Internal(err) = &self {
            // Runs inside the request's span, so the log line carries the request id.
            tracing::error!(error = ?err, "internal error");
        }
        let body = ErrorBody {
            error: self.code(),
            message: self.to_string(),
        };
        (self.status(), Json(body)).into_response()
    }
}

impl From<tidemark_store::StoreError> for ApiError {
    fn from(err: tidemark_store::StoreError) -> Self {
        ApiError::Internal(err.into())
    }
}
