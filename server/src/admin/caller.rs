//! Who is calling the admin API: the vendor token in `Authorization`, its role, its share of
//! the rate limit, and the audit context every change it makes is recorded under.

use std::net::SocketAddr;

use axum::http::{header, HeaderMap};
use tidemark_domain::audit::{Actor, AuditContext};
use tidemark_domain::now_millis;
use tidemark_domain::rate::RollingLimit;
use tidemark_domain::vendor::{missing_permission, Permission};
use tidemark_services::vendor::{self, VendorTokenRow};
use tidemark_store::rate::BanDecision;

use crate::http::client_ip::client_ip;
use crate::http::error::ApiError;
use crate::state::AppState;

/// A token over its limit waits this long.
const BAN_SECONDS: i64 = 60;

/// Set by [`note_call`] on every request (whatever the client sent): `<METHOD> <path?query>`.
const CALL_HEADER: &str = "x-tidemark-admin-call";

/// Names the call for [`caller`], which records reads in the audit log (changes are
/// recorded with what they changed). A client's own header of that name is replaced.
pub async fn note_call(
    mut req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let line = format!(
        "{} {}",
        req.method(),
        req.uri().path_and_query().map_or("", |p| p.as_str())
    );
    match axum::http::HeaderValue::from_str(&line) {
        Ok(v) => {
            req.headers_mut().insert(CALL_HEADER, v);
        }
        Err(_) => {
            req.headers_mut().remove(CALL_HEADER);
        }
    }
    next.run(req).await
}

/// An authenticated vendor token, and the context its changes are audited under.
pub struct Caller {
    pub token: VendorTokenRow,
    pub audit: AuditContext,
}

impl Caller {
    /// `403 insufficient_role` unless the token's role has every permission in `needed`.
    pub fn require(&self, needed: &[Permission]) -> Result<(), ApiError> {
        match missing_permission(self.token.role, needed) {
            None => Ok(()),
            Some(p) => Err(ApiError::InsufficientRole {
                needed: p.roles_in_words(),
                token: self.token.name.clone(),
                role: self.token.role.as_str(),
            }),
        }
    }
}

/// The caller of this request: `401 invalid_token` without a live token, `429` over its
/// limit (counted in the database, so every replica shares it).
pub async fn caller(
    state: &AppState,
    headers: &HeaderMap,
    peer: SocketAddr,
) -> Result<Caller, ApiError> {
    let now = now_millis();
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let token = vendor::caller(&state.db, authorization, now)
        .await?
        .ok_or(ApiError::InvalidVendorToken)?;
    let bucket = format!("admin:{}", token.id);
    // Far above what a billing integration or a support desk sends (default 600), low
    // enough that a leaked token cannot read the whole customer base in a burst.
    let per_minute = state.config.limits.admin_per_minute;
    let limit = RollingLimit::per_minute(per_minute);
    let decision = state
        .db
        .detached(move |db| async move {
            tidemark_store::rate::hit_with_ban(&db, &bucket, &limit, BAN_SECONDS * 1000, now).await
        })
        .await?;
    if let BanDecision::Refuse { retry_after_secs } = decision {
        return Err(ApiError::RateLimited {
            limit: "admin",
            message: format!(
                "This token made more than {per_minute} calls in a minute; retry after \
                 {retry_after_secs} seconds."
            ),
            retry_after_secs,
        });
    }
    let audit = AuditContext {
        actor: Actor::Vendor {
            token_name: token.name.clone(),
        },
        client_ip: Some(
            client_ip(peer.ip(), headers, &state.config.http.trusted_proxies).to_string(),
        ),
        at: now,
    };
    let read = headers
        .get(CALL_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|line| line.strip_prefix("GET "))
        .map(|target| target.chars().take(500).collect::<String>());
    if let Some(target) = read {
        let ctx = audit.clone();
        state
            .db
            .detached(move |db| async move {
                tidemark_store::vendor_tokens::record_read(&db, &ctx, target).await
            })
            .await?;
    }
    Ok(Caller { token, audit })
}
