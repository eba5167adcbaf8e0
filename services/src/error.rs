//! Why a use case did not do what it was asked, in the words its adapter shows.

use tidemark_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The input cannot be acted on; the text says why, for the person who sent it.
    #[error("{0}")]
    Invalid(String),
    /// Nothing of that id in the caller's account (another account's ids find nothing too).
    #[error("not found")]
    NotFound,
    /// The action clashes with what is there (a limit, the last admin); the text says how.
    #[error("{0}")]
    Conflict(String),
    /// The database failed; adapters log it and answer "unavailable".
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Something else the caller cannot fix failed (signing, serialising); logged in full,
    /// answered as an internal error.
    #[error(transparent)]
    Internal(anyhow::Error),
}

/// Logs a failure that the person asking sees only as "unavailable": the database being away
/// (restart, failover, full disk) as the outage it is, summarised across requests; anything
/// else in full, once.
pub fn log_unavailable<E: std::fmt::Display + 'static>(err: &E) {
    let fault = (err as &dyn std::any::Any)
        .downcast_ref::<StoreError>()
        .and_then(StoreError::fault)
        .or_else(
            || match (err as &dyn std::any::Any).downcast_ref::<ServiceError>() {
                Some(ServiceError::Store(store)) => store.fault(),
                _ => None,
            },
        );
    match fault {
        Some(fault) => tidemark_store::fault::log_fault(fault, err),
        None => tracing::error!(%err, "dashboard storage call failed"),
    }
}

impl ServiceError {
    pub fn invalid(text: impl std::fmt::Display) -> Self {
        ServiceError::Invalid(text.to_string())
    }

    pub fn internal(err: impl Into<anyhow::Error>) -> Self {
        ServiceError::Internal(err.into())
    }
}
