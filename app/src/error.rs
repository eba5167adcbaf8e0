//! The one error type of the dashboard's server functions. Its variant decides the HTTP
//! status, set by the server on every error response (`status_of_error_body`); the browser
//! shows the message.

use leptos::server_fn::codec::JsonEncoding;
use leptos::server_fn::error::{FromServerFnError, ServerFnErrorErr};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum DashboardError {
    #[error("Your session has ended. Sign in again.")]
    SignedOut,
    #[error("Only an admin of this account can do that.")]
    AdminOnly,
    #[error("Not found in this account.")]
    NotFound,
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Conflict(String),
    /// The licence's tier does not have what was asked; the message names the tier that has.
    #[error("{0}")]
    NotInTier(String),
    /// What was here is gone for good (a thinned scan's findings).
    #[error("{0}")]
    Gone(String),
    #[error("The database is unavailable right now (restarting or failing over). This page will retry by itself.")]
    Unavailable,
    #[error("Request failed: {0}")]
    ServerFn(ServerFnErrorErr),
}

impl DashboardError {
    pub fn status(&self) -> u16 {
        match self {
            DashboardError::SignedOut => 401,
            DashboardError::AdminOnly | DashboardError::NotInTier(_) => 403,
            DashboardError::NotFound => 404,
            DashboardError::Invalid(_) => 422,
            DashboardError::Conflict(_) => 409,
            DashboardError::Gone(_) => 410,
            DashboardError::Unavailable | DashboardError::ServerFn(_) => 503,
        }
    }
}

impl FromServerFnError for DashboardError {
    type Encoder = JsonEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        match value {
            // On the server: the request's fields did not parse (a tampered or hand-made
            // form). The client's mistake, said without echoing what was sent. (In the
            // browser these mean the answer could not be read: left as they are.)
            ServerFnErrorErr::Args(_)
            | ServerFnErrorErr::MissingArg(_)
            | ServerFnErrorErr::Deserialization(_)
                if cfg!(feature = "ssr") =>
            {
                DashboardError::Invalid("The form's fields could not be read.".to_owned())
            }
            other => DashboardError::ServerFn(other),
        }
    }
}

/// How often a page that found the database unavailable asks again (also its
/// `Retry-After`), and what it tells the person looking: shared by the dashboard's own error
/// view and the server's page for a session it cannot read.
pub const UNAVAILABLE_RETRY_SECS: &str = "10";
pub const UNAVAILABLE_TITLE: &str = "The database is unavailable";
pub const UNAVAILABLE_EXPLANATION: &str = "Tidemark cannot reach its database right now (a \
    restart or a failover usually takes under two minutes). This page will retry every 10 \
    seconds by itself; scans pushed meanwhile are retried by the scanner.";

/// On the server: a storage failure, logged and shown as "unavailable". The database being
/// away (restart, failover, full disk) is logged as the outage it is, summarised across
/// requests; anything else in full, once per request.
#[cfg(feature = "ssr")]
pub fn unavailable<T, E: std::fmt::Display + 'static>(err: E) -> Result<T, DashboardError> {
    tidemark_services::log_unavailable(&err);
    Err(DashboardError::Unavailable)
}

/// On the server: a use case's refusal as the dashboard shows it (a database failure is
/// logged and shown as "unavailable").
#[cfg(feature = "ssr")]
pub fn refused<T>(err: tidemark_services::ServiceError) -> Result<T, DashboardError> {
    use tidemark_services::ServiceError;
    match err {
        ServiceError::Invalid(text) => Err(DashboardError::Invalid(text)),
        ServiceError::NotFound => Err(DashboardError::NotFound),
        ServiceError::Conflict(text) => Err(DashboardError::Conflict(text)),
        ServiceError::Store(err) => unavailable(err),
        ServiceError::Internal(err) => unavailable(err),
    }
}

/// The HTTP status of a server function's error response, from its JSON body. The server
/// applies it to every such response in one place, so no server function has to remember to.
pub fn status_of_error_body(body: &[u8]) -> Option<u16> {
    serde_json::from_slice::<DashboardError>(body)
        .ok()
        .map(|e| e.status())
}
