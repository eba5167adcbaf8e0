//! `/scim/v2`: SCIM 2.0 provisioning (RFC 7643/7644) for enterprise accounts with a verified
//! SSO domain. An identity provider (Okta, Microsoft Entra, …) authenticates with the
//! account's bearer token and provisions people and groups; the rules live in
//! `domain::scim` and `store::scim`, and these handlers only translate HTTP.
//!
//! Every answer is `application/scim+json`; every refusal is a SCIM Error body with the
//! status as a string and, where RFC 7644 §3.12 has one, a `scimType`.

use tidemark_wire::ids::AccountId;
mod discovery;
mod groups;
mod resource;
pub mod settings;
mod users;

use groups::Groups;
use users::Users;

use std::net::SocketAddr;

use axum::body::Bytes;
use axum::extract::{ConnectInfo, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};
use tidemark_domain::audit::{Actor, AuditContext};
use tidemark_domain::rate::RollingLimit;
use tidemark_domain::scim::{ScimError, ScimType, ERROR_SCHEMA};
use tidemark_domain::secrets::ScimToken;
use tidemark_domain::tier::allows_sso;
use tidemark_domain::{now_millis, Millis};
use tidemark_store::rate::{self, BanDecision};
use tidemark_store::scim::Refusal;
use tidemark_store::StoreError;

use crate::http::metrics::ScimCounted;
use crate::state::AppState;

const SCIM_JSON: &str = "application/scim+json";
/// Largest request body: a group PATCH naming a few thousand members fits.
const MAX_BODY: usize = 1024 * 1024;
/// A token over its budget is refused this long (and keeps being while the window is full).
const BAN_MS: Millis = 10_000;
/// `last_used_at` is rewritten at most this often per token.
const TOUCH_EVERY_MS: Millis = 60_000;

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/scim/v2/ServiceProviderConfig",
            get(discovery::service_provider_config),
        )
        .route("/scim/v2/ResourceTypes", get(discovery::resource_types))
        .route("/scim/v2/ResourceTypes/{id}", get(discovery::resource_type))
        .route("/scim/v2/Schemas", get(discovery::schemas))
        .route("/scim/v2/Schemas/{id}", get(discovery::schema))
        .route(
            "/scim/v2/Users",
            get(|s, c, u| list(&[Kind::Users], s, c, u)).post(resource::create::<Users>),
        )
        .route(
            "/scim/v2/Users/.search",
            post(|s, c, b| search(&[Kind::Users], s, c, b)),
        )
        .route(
            "/scim/v2/Groups/.search",
            post(|s, c, b| search(&[Kind::Groups], s, c, b)),
        )
        .route(
            "/scim/v2/.search",
            post(|s, c, b| search(&[Kind::Users, Kind::Groups], s, c, b)),
        )
        .route(
            "/scim/v2/Users/{id}",
            get(resource::show::<Users>)
                .put(resource::replace::<Users>)
                .patch(resource::patch::<Users>)
                .delete(resource::delete::<Users>),
        )
        .route(
            "/scim/v2/Groups",
            get(|s, c, u| list(&[Kind::Groups], s, c, u)).post(resource::create::<Groups>),
        )
        .route(
            "/scim/v2/Groups/{id}",
            get(resource::show::<Groups>)
                .put(resource::replace::<Groups>)
                .patch(resource::patch::<Groups>)
                .delete(resource::delete::<Groups>),
        )
        .route(
            "/scim/v2",
            axum::routing::any(|| async { ScimFailure::not_found("no such SCIM endpoint") }),
        )
        .route(
            "/scim/v2/{*rest}",
            axum::routing::any(|| async { ScimFailure::not_found("no such SCIM endpoint") }),
        )
        .method_not_allowed_fallback(|| async {
            ScimFailure::new(
                StatusCode::METHOD_NOT_ALLOWED,
                None,
                "method not allowed here",
            )
        })
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
        .layer(axum::middleware::from_fn(count_outcome))
}

/// A collection: `Users` or `Groups`.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Users,
    Groups,
}

/// The resources of `kinds`, in that order, as SCIM JSON.
async fn resources_of(
    kinds: &[Kind],
    state: &AppState,
    client: &ScimClient,
) -> Result<Vec<Value>, ScimFailure> {
    let mut all = Vec::new();
    for kind in kinds {
        all.extend(match kind {
            Kind::Users => resource::resources::<Users>(state, client).await?,
            Kind::Groups => resource::resources::<Groups>(state, client).await?,
        });
    }
    Ok(all)
}

/// `GET /Users`, `GET /Groups`.
async fn list(
    kinds: &'static [Kind],
    State(state): State<AppState>,
    client: ScimClient,
    uri: axum::http::Uri,
) -> Result<Response, ScimFailure> {
    let query = list_query(&uri)?;
    list_answer(&query, resources_of(kinds, &state, &client).await?)
}

/// `POST …/.search`: a list with its parameters in the body; at the root, Users and Groups
/// together (RFC 7644 §3.4.3), people first.
async fn search(
    kinds: &'static [Kind],
    State(state): State<AppState>,
    client: ScimClient,
    body: Bytes,
) -> Result<Response, ScimFailure> {
    let query = search_query(&body)?;
    list_answer(&query, resources_of(kinds, &state, &client).await?)
}

/// Notes each answer's outcome for `/metrics` (`tidemark_scim_requests`).
async fn count_outcome(req: Request, next: Next) -> Response {
    let path = req.uri().path();
    let resource = if path.starts_with("/scim/v2/Users") {
        "Users"
    } else if path.starts_with("/scim/v2/Groups") {
        "Groups"
    } else {
        "discovery"
    };
    let mut res = next.run(req).await;
    let outcome = match res.status().as_u16() {
        200..=299 => "ok",
        401 | 403 => "unauthorized",
        404 | 405 => "not_found",
        409 => "conflict",
        429 => "limited",
        500..=599 => "unavailable",
        _ => "invalid",
    };
    res.extensions_mut()
        .insert(ScimCounted { resource, outcome });
    res
}

/// A SCIM answer: the resource (or list) as `application/scim+json`.
pub(crate) fn scim_json(status: StatusCode, body: &Value) -> Response {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    (
        status,
        [(header::CONTENT_TYPE, HeaderValue::from_static(SCIM_JSON))],
        bytes,
    )
        .into_response()
}

/// A resource with its `Location` and `ETag` (from its `meta`), cut to what `query` asks.
pub(crate) fn resource_response(
    status: StatusCode,
    mut resource: Value,
    query: &ListQuery,
) -> Response {
    query.shape(&mut resource);
    let mut res = scim_json(status, &resource);
    let meta = &resource["meta"];
    for (name, value) in [
        (header::LOCATION, meta["location"].as_str()),
        (header::ETAG, meta["version"].as_str()),
    ] {
        if let Some(v) = value.and_then(|v| HeaderValue::from_str(v).ok()) {
            res.headers_mut().insert(name, v);
        }
    }
    res
}

/// A refusal in SCIM's Error shape.
#[derive(Debug)]
pub(crate) struct ScimFailure {
    status: StatusCode,
    scim_type: Option<ScimType>,
    detail: String,
    retry_after_secs: Option<u64>,
}

impl ScimFailure {
    fn new(status: StatusCode, scim_type: Option<ScimType>, detail: impl Into<String>) -> Self {
        Self {
            status,
            scim_type,
            detail: detail.into(),
            retry_after_secs: None,
        }
    }

    pub(crate) fn not_found(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, None, detail)
    }

    fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            None,
            "send the account's SCIM token as Authorization: Bearer tmk_scim_… (Settings → \
             Provisioning)",
        )
    }

    /// A failure of ours: the database's state answered honestly (503/507 with
    /// `Retry-After`), anything else logged and answered 500 without details.
    fn store(err: StoreError) -> Self {
        // Only a race the account lock should have prevented gets here.
        if err.is_unique_violation() {
            return Self::new(
                StatusCode::CONFLICT,
                Some(ScimType::Uniqueness),
                "a resource with these unique attributes exists",
            );
        }
        match err.fault() {
            Some(fault) => {
                tidemark_store::fault::log_fault(fault, &err);
                let (status, secs) = match fault {
                    tidemark_store::Fault::Unavailable => (
                        StatusCode::SERVICE_UNAVAILABLE,
                        crate::http::error::ApiError::DatabaseUnavailable.retry_after_secs(),
                    ),
                    tidemark_store::Fault::StorageFull => (
                        StatusCode::INSUFFICIENT_STORAGE,
                        crate::http::error::ApiError::StorageFull.retry_after_secs(),
                    ),
                };
                let mut failure =
                    Self::new(status, None, "the database is not available; retry shortly");
                failure.retry_after_secs = secs;
                failure
            }
            None => {
                tracing::error!(error = %err, "SCIM request failed");
                Self::new(StatusCode::INTERNAL_SERVER_ERROR, None, "internal error")
            }
        }
    }
}

impl From<ScimError> for ScimFailure {
    fn from(e: ScimError) -> Self {
        let status = e.scim_type.map_or(StatusCode::BAD_REQUEST, |t| {
            StatusCode::from_u16(t.status()).unwrap_or(StatusCode::BAD_REQUEST)
        });
        Self::new(status, e.scim_type, e.detail)
    }
}

impl From<Refusal> for ScimFailure {
    fn from(r: Refusal) -> Self {
        match r {
            Refusal::NotFound => Self::not_found("no such resource"),
            Refusal::Scim(e) => e.into(),
            Refusal::LastAdmin(reason) => Self::new(StatusCode::CONFLICT, None, reason),
        }
    }
}

impl From<StoreError> for ScimFailure {
    fn from(e: StoreError) -> Self {
        Self::store(e)
    }
}

impl IntoResponse for ScimFailure {
    fn into_response(self) -> Response {
        let mut body = json!({
            "schemas": [ERROR_SCHEMA],
            "status": self.status.as_u16().to_string(),
            "detail": self.detail,
        });
        if let Some(t) = self.scim_type {
            body["scimType"] = json!(t.as_str());
        }
        let mut res = scim_json(self.status, &body);
        if self.status == StatusCode::UNAUTHORIZED {
            res.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"scim\""),
            );
        }
        if let Some(secs) = self.retry_after_secs {
            res.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if self.status == StatusCode::TOO_MANY_REQUESTS {
            res.extensions_mut()
                .insert(crate::http::metrics::LimitReached("scim"));
        }
        res
    }
}

/// The identity provider calling: the account its token belongs to, and how its changes are
/// audited.
pub(crate) struct ScimClient {
    pub account_id: AccountId,
    pub audit: AuditContext,
    /// `…/scim/v2` as the client reaches it, for `meta.location`.
    pub base_url: String,
}

impl FromRequestParts<AppState> for ScimClient {
    type Rejection = ScimFailure;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let header = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let token = ScimToken::parse(header).ok_or_else(ScimFailure::unauthorized)?;
        let (account_id, info) = tidemark_store::scim::find_token(&state.db, &token.hash())
            .await?
            .ok_or_else(ScimFailure::unauthorized)?;
        admit(state, &account_id).await?;
        let now = now_millis();
        if info.last_used_at.is_none_or(|at| now - at > TOUCH_EVERY_MS) {
            let account = account_id.clone();
            // Bookkeeping: a failure here must not fail the provisioning call.
            if let Err(err) = state
                .db
                .detached(move |db| async move {
                    tidemark_store::scim::note_token_used(&db, &account, now).await
                })
                .await
            {
                tracing::warn!(%err, "could not note a SCIM token's use");
            }
        }
        let client_ip =
            parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|ConnectInfo(peer)| {
                    crate::http::client_ip::client_ip(
                        peer.ip(),
                        &parts.headers,
                        &state.config.http.trusted_proxies,
                    )
                    .to_string()
                });
        Ok(ScimClient {
            account_id,
            audit: AuditContext {
                actor: Actor::Scim {
                    token_prefix: info.prefix,
                },
                client_ip,
                at: now,
            },
            base_url: format!(
                "{}/scim/v2",
                state.config.http.base_url.trim_end_matches('/')
            ),
        })
    }
}

/// SCIM is for enterprise accounts that proved their domain (the people it provisions sign
/// in through that domain's IdP), within the token's request budget.
async fn admit(state: &AppState, account_id: &AccountId) -> Result<(), ScimFailure> {
    let license = tidemark_store::licenses::find_license_for_account(&state.db, account_id).await?;
    let verified = tidemark_store::sso::has_verified_domain(&state.db, account_id).await?;
    if !license.is_some_and(|l| allows_sso(l.tier)) || !verified {
        return Err(ScimFailure::new(
            StatusCode::FORBIDDEN,
            None,
            "SCIM provisioning needs an enterprise licence with a verified SSO domain",
        ));
    }
    let now = now_millis();
    let bucket = format!("scim:{account_id}");
    if let Some(secs) = rate::ban_remaining(&state.db, &bucket, now).await? {
        return Err(too_many(secs));
    }
    let limit = RollingLimit::per_minute(state.config.limits.scim_per_minute);
    let decision = state
        .db
        .detached(
            move |db| async move { rate::hit_with_ban(&db, &bucket, &limit, BAN_MS, now).await },
        )
        .await?;
    match decision {
        BanDecision::Allow => Ok(()),
        BanDecision::Refuse { retry_after_secs } => Err(too_many(retry_after_secs)),
    }
}

fn too_many(retry_after_secs: u64) -> ScimFailure {
    let mut failure = ScimFailure::new(
        StatusCode::TOO_MANY_REQUESTS,
        Some(ScimType::TooMany),
        format!("too many SCIM requests for this token; retry in {retry_after_secs} s"),
    );
    failure.retry_after_secs = Some(retry_after_secs);
    failure
}

/// A request body as JSON; anything else is `400 invalidSyntax`.
pub(crate) fn body_json(body: &Bytes) -> Result<Value, ScimFailure> {
    serde_json::from_slice(body).map_err(|e| {
        ScimFailure::new(
            StatusCode::BAD_REQUEST,
            Some(ScimType::InvalidSyntax),
            format!("the body is not JSON: {e}"),
        )
    })
}

/// The list parameters every collection takes (in the query string, or in a `.search`
/// body), and the `attributes`/`excludedAttributes` every answer honours.
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct ListQuery {
    filter: Option<String>,
    #[serde(rename = "startIndex")]
    start_index: Option<String>,
    count: Option<String>,
    #[serde(rename = "excludedAttributes")]
    excluded_attributes: Option<String>,
    attributes: Option<String>,
}

impl ListQuery {
    /// Cuts `resource` to what the client asked for.
    pub(crate) fn shape(&self, resource: &mut Value) {
        let names = |raw: &Option<String>| {
            raw.as_deref()
                .map(tidemark_domain::scim::attribute_names)
                .unwrap_or_default()
        };
        tidemark_domain::scim::project(
            resource,
            &names(&self.attributes),
            &names(&self.excluded_attributes),
        );
    }

    /// A `SearchRequest` body (`POST …/.search`).
    fn from_search(body: &Value) -> Result<ListQuery, ScimFailure> {
        let syntax = |what: &str| {
            ScimFailure::new(
                StatusCode::BAD_REQUEST,
                Some(ScimType::InvalidValue),
                format!("{what} in a SearchRequest has the wrong type"),
            )
        };
        let field = |name: &str| {
            body.as_object()
                .and_then(|o| o.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)))
                .map(|(_, v)| v)
        };
        let text = |name: &str| -> Result<Option<String>, ScimFailure> {
            match field(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(Value::Number(n)) => Ok(Some(n.to_string())),
                Some(_) => Err(syntax(name)),
            }
        };
        let list = |name: &str| -> Result<Option<String>, ScimFailure> {
            match field(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|i| i.as_str().map(str::to_owned).ok_or_else(|| syntax(name)))
                    .collect::<Result<Vec<_>, _>>()
                    .map(|v| Some(v.join(","))),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(syntax(name)),
            }
        };
        if !body.is_object() {
            return Err(syntax("the body"));
        }
        Ok(ListQuery {
            filter: text("filter")?,
            start_index: text("startIndex")?,
            count: text("count")?,
            excluded_attributes: list("excludedAttributes")?,
            attributes: list("attributes")?,
        })
    }
}

/// The query string, read by hand so that a malformed one is a SCIM error, not axum's text.
pub(crate) fn list_query(uri: &axum::http::Uri) -> Result<ListQuery, ScimFailure> {
    axum::extract::Query::<ListQuery>::try_from_uri(uri)
        .map(|q| q.0)
        .map_err(|e| {
            ScimFailure::new(
                StatusCode::BAD_REQUEST,
                Some(ScimType::InvalidValue),
                format!("the query is not readable: {e}"),
            )
        })
}

/// The parameters of a `POST …/.search`.
fn search_query(body: &Bytes) -> Result<ListQuery, ScimFailure> {
    ListQuery::from_search(&body_json(body)?)
}

/// A list answer: `resources` filtered, paged, then cut to the attributes asked for.
fn list_answer(query: &ListQuery, resources: Vec<Value>) -> Result<Response, ScimFailure> {
    let page =
        tidemark_domain::scim::Page::parse(query.start_index.as_deref(), query.count.as_deref())?;
    let matching: Vec<Value> = match query.filter.as_deref() {
        Some(raw) => {
            let filter = tidemark_domain::scim::filter::parse_filter(raw)?;
            resources
                .into_iter()
                .filter(|r| tidemark_domain::scim::filter::matches(&filter, r))
                .collect()
        }
        None => resources,
    };
    let total = matching.len();
    let mut shown = matching[page.slice(&matching)].to_vec();
    for resource in &mut shown {
        query.shape(resource);
    }
    Ok(scim_json(
        StatusCode::OK,
        &tidemark_domain::scim::list_response(total, &page, shown),
    ))
}

/// Runs a provisioning write for the client's account in a task of its own (`write` gets the
/// writer, the account id and the audit context); a database error or a refusal becomes its
/// SCIM failure.
pub(crate) async fn provision<T, F, Fut>(
    state: &AppState,
    client: &ScimClient,
    write: F,
) -> Result<T, ScimFailure>
where
    F: FnOnce(tidemark_store::Writer, AccountId, AuditContext) -> Fut,
    Fut: std::future::Future<Output = tidemark_store::scim::Outcome<T>> + Send + 'static,
    T: Send + 'static,
{
    let (account, audit) = (client.account_id.clone(), client.audit.clone());
    Ok(state
        .db
        .detached(move |db| write(db, account, audit))
        .await??)
}
