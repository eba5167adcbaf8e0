use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use tidemark_store::Fault;
use tidemark_wire::{ErrorBody, Feature, Tier};

/// The one error type of the `/v1` API. Each variant is one row of the contract's error
/// table: its status, its machine-readable code and its human message.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error(
        "X-License-Key-Hash must be the SHA-256 hash of the license key as 64 hex characters."
    )]
    InvalidLicenseHash,
    #[error("No license matches this key. Check the key, or run `tidemark activate` with the key from your license e-mail.")]
    LicenseNotFound,
    #[error("{0}")]
    LicenseInactive(String),
    #[error("The X-API-Key header is missing. Run `tidemark activate`, or set TIDEMARK_API_KEY from your CI secret store.")]
    MissingApiKey,
    #[error("The API key is malformed: every key starts with svc_api_. Run `tidemark activate` again to get a valid key.")]
    MalformedApiKey,
    #[error("The API key is not valid: it is unknown or has been revoked (keys are revoked when they are rotated in Settings). Run `tidemark activate` again. (A keyless CI push token stops working 15 minutes after its exchange, or when its trusted publisher is removed: exchange the job's token again.)")]
    InvalidApiKey,
    /// A named key past its expiry: refused as a revoked key is, saying when.
    #[error("{}", .0.message())]
    ExpiredApiKey(tidemark_domain::api_keys::Expired),
    #[error("The hosted dashboard requires the Team tier or above; this license is on the {} tier. Upgrade to push scans.", .0.as_str())]
    InsufficientTier(Tier),
    /// A licence without the feature an endpoint needs (other than the hosted dashboard).
    #[error("{} require the {} tier or above; this license is on the {} tier.", .feature.label(), tier_name(tidemark_domain::tier::lowest_tier_with(*.feature)), .tier.as_str())]
    FeatureNotInTier { feature: Feature, tier: Tier },
    #[error("{0}")]
    ProjectLimitReached(String),
    #[error("The project {0} is archived. Unarchive it in the dashboard (Settings, Projects) to push to it again.")]
    ProjectArchived(String),
    #[error("{message}")]
    RateLimited {
        /// Which limit, for the metrics: `writes` or `resend`.
        limit: &'static str,
        message: String,
        retry_after_secs: u64,
    },
    #[error("{0}")]
    InvalidJson(String),
    /// A payment provider's event whose signature does not verify.
    #[error("{0}")]
    InvalidSignature(String),
    #[error("{0}")]
    InvalidRequest(String),
    #[error("Content-Type must be application/json.")]
    UnsupportedMediaType,
    #[error("{0}")]
    PayloadTooLarge(String),
    /// A path the API does not have (a project, scan or finding that does not exist is
    /// [`ApiError::Missing`], which names it).
    #[error("No such endpoint. See /v1/openapi.json for the API.")]
    NoSuchEndpoint,
    /// What the request named does not exist in the caller's account (another account's is
    /// answered the same); the message names it.
    #[error("{0}")]
    Missing(String),
    #[error("{}", tidemark_domain::housekeeping::THINNED_MESSAGE)]
    ScanThinned,
    /// Too slow: the body stalled, or the whole request outlasted the API's time limit.
    #[error("{0}")]
    RequestTimeout(String),
    /// The replica holds as many push bodies as its memory budget allows.
    #[error("{message}")]
    ServerBusy {
        message: String,
        retry_after_secs: u64,
    },
    #[error("This endpoint does not accept that HTTP method.")]
    MethodNotAllowed,
    /// A CI job token that is not a valid token for Tidemark: malformed, wrongly signed,
    /// expired, for another audience, or already used. The message names the claim.
    #[error("The CI job's OpenID Connect token was refused: {0}.")]
    InvalidOidcToken(String),
    /// A valid CI job token that no trusted publisher accepts. The message names the claim.
    #[error("{0}")]
    NoTrustedPublisher(String),
    /// A keyless CI push token used for a project outside its publisher's scope.
    #[error("{0}")]
    ProjectNotAllowed(String),
    /// A change (triage, a gate) asked with a keyless CI push token, which only pushes and reads.
    #[error("This change needs the account's API key (X-API-Key): a CI push token only pushes scans and reads.")]
    ApiKeyRequired,
    /// The CI token issuer's keys could not be fetched.
    #[error("The CI token issuer's signing keys could not be fetched ({0}). Retry after {secs} seconds.", secs = ISSUER_RETRY_SECS)]
    IssuerUnavailable(String),
    /// The token names a key the issuer's key set did not hold when it was fetched, less than
    /// a minute ago: a key the issuer has just started using shows once it is fetched again.
    #[error("The CI token is signed with key {kid:?}, which the issuer's key set did not hold when Tidemark fetched it, less than a minute ago (a key the issuer has just started using). Retry after {retry_after_secs} seconds: the set is fetched again then.")]
    IssuerKeyPending { kid: String, retry_after_secs: u64 },
    /// The database cannot be reached or does not answer (a restart, a failover, a stall).
    /// Nothing was changed, or a write that had begun finishes behind this answer and its
    /// retry is answered as a replay.
    #[error("The database is unavailable right now (restarting or failing over). Retry after {} seconds; a repeated push is answered like the first and costs nothing.", DATABASE_RETRY_SECS)]
    DatabaseUnavailable,
    /// The database has no room left to write. Reads still work.
    #[error("The server's storage is full, so nothing can be written right now (reads still work). Retry after {} seconds; the operator has been alerted.", STORAGE_RETRY_SECS)]
    StorageFull,
    /// Details go to the server log (with the request id), never to the caller.
    /// Every seat of the licence is held by another machine.
    #[error("{0}")]
    SeatLimitReached(String),
    /// The admin API's caller sent no live vendor token.
    #[error("Send a live vendor token as Authorization: Bearer tmk_vendor_… (an unknown, revoked or expired token is refused). An admin token makes others (POST /admin/v1/tokens); the first comes from `tidemark-server vendor-token create` on the server's host.")]
    InvalidVendorToken,
    /// The vendor token's role may not make this call.
    #[error("This call needs the {needed} role; this token ({token}) has the {role} role.")]
    InsufficientRole {
        needed: String,
        token: String,
        role: &'static str,
    },
    /// `If-Match` named a version that is no longer current.
    #[error("{0}")]
    PreconditionFailed(String),
    /// The thing changed between reading and writing it (no `If-Match` was sent): try again.
    #[error("{0}")]
    Conflict(String),
    #[error(
        "Something went wrong on our side. Quote the X-Request-Id header if you contact support."
    )]
    Internal(#[source] anyhow::Error),
}

/// A name from the request as a message shows it: quoted, escaped, at most 80 characters.
fn named(text: &str) -> String {
    let mut shown: String = text.chars().take(80).collect();
    if shown.len() < text.len() {
        shown.push('…');
    }
    format!("{shown:?}")
}

impl ApiError {
    pub fn no_project(project: &str) -> Self {
        Self::Missing(format!("No project {} in this account.", named(project)))
    }

    pub fn no_scan(project: &str, scan: &str) -> Self {
        Self::Missing(format!(
            "No scan {} in project {}.",
            named(scan),
            named(project)
        ))
    }

    pub fn no_finding(project: &str, finding: &str) -> Self {
        Self::Missing(format!(
            "No finding {} in project {}.",
            named(finding),
            named(project)
        ))
    }

    /// `branch` `None`: the project's default branch, which exists once a scan is pushed.
    pub fn no_branch(project: &str, branch: Option<&str>) -> Self {
        Self::Missing(match branch {
            Some(b) => format!("Project {} has no branch {}.", named(project), named(b)),
            None => format!("Project {} has no scans yet.", named(project)),
        })
    }

    pub fn no_bundle(bundle: &str) -> Self {
        Self::Missing(format!("No bundle {}.", named(bundle)))
    }

    pub fn status(&self) -> StatusCode {
        use ApiError::*;
        match self {
            InvalidLicenseHash | InvalidJson(_) | InvalidSignature(_) => StatusCode::BAD_REQUEST,
            MissingApiKey | MalformedApiKey | InvalidApiKey | ExpiredApiKey(_)
            | InvalidVendorToken => StatusCode::UNAUTHORIZED,
            InsufficientRole { .. } | SeatLimitReached(_) => StatusCode::FORBIDDEN,
            PreconditionFailed(_) => StatusCode::PRECONDITION_FAILED,
            Conflict(_) => StatusCode::CONFLICT,
            InvalidOidcToken(_) => StatusCode::UNAUTHORIZED,
            LicenseInactive(_)
            | InsufficientTier(_)
            | FeatureNotInTier { .. }
            | NoTrustedPublisher(_)
            | ProjectNotAllowed(_)
            | ApiKeyRequired => StatusCode::FORBIDDEN,
            LicenseNotFound | NoSuchEndpoint | Missing(_) => StatusCode::NOT_FOUND,
            ScanThinned => StatusCode::GONE,
            MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            RequestTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            ProjectLimitReached(_) | ProjectArchived(_) => StatusCode::CONFLICT,
            PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            InvalidRequest(_) => StatusCode::UNPROCESSABLE_ENTITY,
            RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            ServerBusy { .. }
            | DatabaseUnavailable
            | IssuerUnavailable(_)
            | IssuerKeyPending { .. } => StatusCode::SERVICE_UNAVAILABLE,
            StorageFull => StatusCode::INSUFFICIENT_STORAGE,
            Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn code(&self) -> &'static str {
        use ApiError::*;
        match self {
            InvalidLicenseHash => "invalid_license_hash",
            LicenseNotFound => "license_not_found",
            LicenseInactive(_) => "license_inactive",
            MissingApiKey => "missing_api_key",
            MalformedApiKey => "malformed_api_key",
            InvalidApiKey | ExpiredApiKey(_) => "invalid_api_key",
            InsufficientTier(_) | FeatureNotInTier { .. } => "insufficient_tier",
            ProjectLimitReached(_) => "project_limit_reached",
            ProjectArchived(_) => "project_archived",
            RateLimited { .. } => "rate_limit_exceeded",
            InvalidJson(_) => "invalid_json",
            InvalidSignature(_) => "invalid_signature",
            InvalidRequest(_) => "invalid_request",
            UnsupportedMediaType => "unsupported_media_type",
            PayloadTooLarge(_) => "payload_too_large",
            NoSuchEndpoint | Missing(_) => "not_found",
            ScanThinned => "scan_thinned",
            MethodNotAllowed => "method_not_allowed",
            RequestTimeout(_) => "request_timeout",
            ServerBusy { .. } => "server_busy",
            DatabaseUnavailable => "database_unavailable",
            StorageFull => "storage_full",
            InvalidOidcToken(_) => "invalid_oidc_token",
            NoTrustedPublisher(_) => "no_trusted_publisher",
            ProjectNotAllowed(_) => "project_not_allowed",
            ApiKeyRequired => "api_key_required",
            IssuerUnavailable(_) | IssuerKeyPending { .. } => "issuer_unavailable",
            InvalidVendorToken => "invalid_token",
            SeatLimitReached(_) => "seat_limit_reached",
            InsufficientRole { .. } => "insufficient_role",
            PreconditionFailed(_) => "precondition_failed",
            Conflict(_) => "conflict",
            Internal(_) => "internal_error",
        }
    }

    /// An unexpected failure, unless its cause is the database's state ([`Fault`]): then the
    /// honest `503`/`507` the caller can retry.
    pub fn internal(err: impl Into<anyhow::Error>) -> Self {
        let err = err.into();
        match crate::telemetry::fault_in(&err) {
            Some(fault) => Self::from_fault(fault, &err),
            None => ApiError::Internal(err),
        }
    }

    fn from_fault(fault: Fault, cause: &dyn std::fmt::Display) -> Self {
        tidemark_store::fault::log_fault(fault, cause);
        match fault {
            Fault::Unavailable => ApiError::DatabaseUnavailable,
            Fault::StorageFull => ApiError::StorageFull,
        }
    }

    /// Seconds a refusal asks the caller to wait, sent as `Retry-After`.
    pub fn retry_after_secs(&self) -> Option<u64> {
        match self {
            ApiError::RateLimited {
                retry_after_secs, ..
            }
            | ApiError::ServerBusy {
                retry_after_secs, ..
            }
            | ApiError::IssuerKeyPending {
                retry_after_secs, ..
            } => Some(*retry_after_secs),
            ApiError::DatabaseUnavailable => Some(DATABASE_RETRY_SECS),
            ApiError::StorageFull => Some(STORAGE_RETRY_SECS),
            ApiError::IssuerUnavailable(_) => Some(ISSUER_RETRY_SECS),
            _ => None,
        }
    }
}

/// A restart or a failover takes seconds to a minute or two: ask again soon, often.
pub const DATABASE_RETRY_SECS: u64 = 5;
/// An issuer's key endpoint that failed once is asked again after this long.
pub const ISSUER_RETRY_SECS: u64 = 10;
/// Space comes back when someone frees it: ask again less often.
pub const STORAGE_RETRY_SECS: u64 = 30;

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let ApiError::Internal(err) = &self {
            // Runs inside the request's span, so the log line carries the request id. One
            // line with the cause chain (`{:#}`), never a backtrace (`{:?}` would print one
            // under RUST_BACKTRACE=1, which containers often set).
            tracing::error!(error = format!("{err:#}"), "internal error");
        }
        let body = ErrorBody {
            error: self.code().to_owned(),
            message: self.to_string(),
        };
        let mut res = (self.status(), Json(body)).into_response();
        if let ApiError::RateLimited { limit, .. } = &self {
            res.extensions_mut()
                .insert(crate::http::metrics::LimitReached(limit));
        }
        if let Some(secs) = self.retry_after_secs() {
            res.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if let ApiError::InvalidVendorToken = &self {
            res.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"tidemark-admin\""),
            );
        }
        match self {
            ApiError::DatabaseUnavailable => {
                res.extensions_mut()
                    .insert(crate::http::metrics::DatabaseFault(Fault::Unavailable));
            }
            ApiError::StorageFull => {
                res.extensions_mut()
                    .insert(crate::http::metrics::DatabaseFault(Fault::StorageFull));
            }
            _ => {}
        }
        res
    }
}

impl From<tidemark_store::StoreError> for ApiError {
    fn from(err: tidemark_store::StoreError) -> Self {
        match err.fault() {
            Some(fault) => Self::from_fault(fault, &err),
            None => ApiError::Internal(err.into()),
        }
    }
}

/// A use case's refusal under `/v1`: its words as `invalid_request`, an id that finds
/// nothing as `not_found` (`Missing`), a database failure as the store's.
impl From<tidemark_services::ServiceError> for ApiError {
    fn from(err: tidemark_services::ServiceError) -> Self {
        use tidemark_services::ServiceError;
        match err {
            ServiceError::Invalid(text) | ServiceError::Conflict(text) => {
                ApiError::InvalidRequest(text)
            }
            ServiceError::NotFound => ApiError::Missing("Nothing was found with that id.".into()),
            ServiceError::Store(err) => err.into(),
            ServiceError::Internal(err) => ApiError::internal(err),
        }
    }
}

/// A tier as the contract's messages name it ("Agency").
pub fn tier_name(tier: Tier) -> &'static str {
    match tier {
        Tier::Individual => "Individual",
        Tier::Team => "Team",
        Tier::Agency => "Agency",
        Tier::Enterprise => "Enterprise",
    }
}
