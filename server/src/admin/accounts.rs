//! `/admin/v1/accounts…` and `/admin/v1/audit`: the customers' accounts (their licence and
//! how much they use, never their data) and the audit log, for the vendor's support and
//! reporting, on the use cases `account list` and `audit list` call.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, Uri};
use axum::Json;
use serde::Deserialize;
use tidemark_domain::paging::Keyset;
use tidemark_domain::time::parse_rfc3339;
use tidemark_domain::to_rfc3339;
use tidemark_domain::vendor::Permission;
use tidemark_services::account::{self, AccountRow};
use tidemark_services::audit::{self, AuditFilter};
use tidemark_services::ServiceError;
use tidemark_wire::admin::{AccountPage, AdminAccount, AdminAuditEvent, AuditEventPage};
use tidemark_wire::ids::AccountId;
use tidemark_wire::ErrorBody;

use super::caller::caller;
use crate::http::error::ApiError;
use crate::state::AppState;

const DEFAULT_LIMIT: i64 = 50;
const MAX_LIMIT: i64 = 200;

pub(super) fn invalid(text: impl Into<String>) -> ApiError {
    ApiError::InvalidRequest(text.into())
}

pub(super) fn limit_of(limit: Option<i64>) -> Result<i64, ApiError> {
    match limit {
        None => Ok(DEFAULT_LIMIT),
        Some(l) if (1..=MAX_LIMIT).contains(&l) => Ok(l),
        Some(_) => Err(invalid(format!("limit must be 1 to {MAX_LIMIT}"))),
    }
}

pub(super) fn cursor_of(cursor: Option<&str>, prefix: &str) -> Result<Option<Keyset>, ApiError> {
    cursor
        .map(|c| {
            Keyset::parse(c, prefix).ok_or_else(|| {
                invalid("cursor must be a next_cursor this API returned, as it was given")
            })
        })
        .transpose()
}

pub(super) fn query<T: serde::de::DeserializeOwned>(uri: &Uri) -> Result<T, ApiError> {
    axum::extract::Query::<T>::try_from_uri(uri)
        .map(|q| q.0)
        .map_err(|e| invalid(format!("the query is not one this endpoint reads ({e})")))
}

fn view(a: &AccountRow) -> AdminAccount {
    AdminAccount {
        id: a.id.to_string(),
        created_at: to_rfc3339(a.created_at),
        license_id: a.license_id.clone(),
        email: a.email.clone(),
        tier: a.tier.as_deref().and_then(tidemark_wire::Tier::parse),
        members: a.members,
        projects: a.projects,
        active_keys: a.active_keys,
        scans: a.scans,
    }
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    /// `next_cursor` of the previous page.
    #[param(max_length = 160)]
    cursor: Option<String>,
    /// 1 to 200; default 50.
    #[param(minimum = 1, maximum = 200)]
    limit: Option<i64>,
}

/// List accounts
///
/// Every customer account, oldest first, with its licence and counts (members, projects,
/// active API keys, scans): never its findings, scans' contents or reports.
#[utoipa::path(
    get,
    path = "/admin/v1/accounts",
    tag = "accounts",
    security(("vendor_token" = [])),
    params(PageQuery),
    responses(
        (status = 200, description = "A page of accounts", body = AccountPage),
        (status = 401, description = "`invalid_token`", body = ErrorBody),
        (status = 422, description = "`invalid_request`: an unknown parameter, a bad limit, or a cursor this API did not return", body = ErrorBody),
        (status = 429, description = "`rate_limit_exceeded`", body = ErrorBody),
    )
)]
pub async fn list_accounts(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<AccountPage>, ApiError> {
    let who = caller(&state, &headers, peer).await?;
    who.require(&[Permission::Read])?;
    let q: PageQuery = query(&uri)?;
    let limit = limit_of(q.limit)?;
    let after = cursor_of(q.cursor.as_deref(), "acct_")?;
    let after_id = after.as_ref().map(|k| AccountId::trusted(&k.id));
    let at = after.as_ref().map(|k| k.at).zip(after_id.as_ref());
    let (rows, more) = account::page(&state.db, at, limit).await?;
    let next_cursor = more
        .then(|| {
            rows.last().map(|a| {
                Keyset {
                    at: a.created_at,
                    id: a.id.to_string(),
                }
                .encode()
            })
        })
        .flatten();
    Ok(Json(AccountPage {
        accounts: rows.iter().map(view).collect(),
        next_cursor,
    }))
}

/// An account
#[utoipa::path(
    get,
    path = "/admin/v1/accounts/{account_id}",
    tag = "accounts",
    security(("vendor_token" = [])),
    params(("account_id" = String, Path, description = "`acct_…`")),
    responses(
        (status = 200, description = "The account", body = AdminAccount),
        (status = 401, description = "`invalid_token`", body = ErrorBody),
        (status = 404, description = "`not_found`", body = ErrorBody),
        (status = 429, description = "`rate_limit_exceeded`", body = ErrorBody),
    )
)]
pub async fn get_account(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Json<AdminAccount>, ApiError> {
    let who = caller(&state, &headers, peer).await?;
    who.require(&[Permission::Read])?;
    let missing = || ApiError::Missing(format!("No account {id:?}."));
    let account_id = AccountId::parse(&id).ok_or_else(missing)?;
    let found = account::summary(&state.db, &account_id)
        .await
        .map_err(|err| match err {
            ServiceError::NotFound => missing(),
            other => other.into(),
        })?;
    Ok(Json(view(&found)))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    /// Only this account's events (`acct_…`).
    #[param(max_length = 64)]
    account_id: Option<String>,
    /// The actor exactly as shown: an e-mail address, `operator:<user>`, `vendor:<name>`.
    #[param(max_length = 320)]
    actor: Option<String>,
    /// One action, `noun.verb` (`license.suspended`).
    #[param(max_length = 64)]
    action: Option<String>,
    /// Only events at or after this RFC 3339 time.
    since: Option<String>,
    /// `next_cursor` of the previous page.
    #[param(max_length = 160)]
    cursor: Option<String>,
    /// 1 to 200; default 50.
    #[param(minimum = 1, maximum = 200)]
    limit: Option<i64>,
}

/// The audit log
///
/// Newest first, every account's and those of no account (bundles, vendor tokens), a page at
/// a time; every filter given must match.
#[utoipa::path(
    get,
    path = "/admin/v1/audit",
    tag = "audit",
    security(("vendor_token" = [])),
    params(AuditQuery),
    responses(
        (status = 200, description = "A page of events", body = AuditEventPage),
        (status = 401, description = "`invalid_token`", body = ErrorBody),
        (status = 422, description = "`invalid_request`: an unknown parameter or action, a bad time or limit, or a cursor this API did not return", body = ErrorBody),
        (status = 429, description = "`rate_limit_exceeded`", body = ErrorBody),
    )
)]
pub async fn list_audit(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<AuditEventPage>, ApiError> {
    let who = caller(&state, &headers, peer).await?;
    who.require(&[Permission::Read])?;
    let q: AuditQuery = query(&uri)?;
    if q.actor.as_ref().is_some_and(|a| a.chars().count() > 320) {
        return Err(invalid("actor must be at most 320 characters"));
    }
    let limit = limit_of(q.limit)?;
    let before = cursor_of(q.cursor.as_deref(), "aud_")?;
    let account_id = q
        .account_id
        .as_deref()
        .map(|a| AccountId::parse(a).ok_or_else(|| invalid("account_id must be acct_…")))
        .transpose()?;
    let since = q
        .since
        .as_deref()
        .map(|t| parse_rfc3339("since", t))
        .transpose()
        .map_err(invalid)?;
    let filter = AuditFilter {
        account_id: account_id.as_ref(),
        since,
        actor: q.actor.as_deref(),
        action: q.action.as_deref(),
        before: before.as_ref().map(|k| (k.at, k.id.as_str())),
        limit: limit + 1,
    };
    let mut events = audit::list(&state.db, &filter).await?;
    let more = events.len() as i64 > limit;
    events.truncate(usize::try_from(limit).unwrap_or(0));
    let next_cursor = more
        .then(|| {
            events.last().map(|e| {
                Keyset {
                    at: e.at_ms,
                    id: e.id.clone(),
                }
                .encode()
            })
        })
        .flatten();
    Ok(Json(AuditEventPage {
        events: events
            .into_iter()
            .map(|e| AdminAuditEvent {
                id: e.id,
                at: e.at,
                account_id: e.account_id.map(|a| a.to_string()),
                actor_kind: e.actor_kind,
                actor: e.actor,
                client_ip: e.client_ip,
                action: e.action,
                target: e.target,
                before: e.before,
                after: e.after,
            })
            .collect(),
        next_cursor,
    }))
}
