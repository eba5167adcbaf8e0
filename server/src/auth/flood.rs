//! Limits on the sign-in paths anyone can reach without an account (`POST /auth/signin`, the
//! SAML ACS): each writes (a login attempt, an assertion id), and on SQLite every write
//! shares one writer with the pushes. Counted per client address (IPv6: per /64) in the
//! database, so every replica shares one budget, like resend.

use std::net::IpAddr;

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use tidemark_domain::now_millis;
use tidemark_domain::rate::{rate_subject, RollingLimit};
use tidemark_store::rate::{self, BanDecision};

use crate::http::client_ip::client_ip;
use crate::state::AppState;

/// How long an address that went over the limit is refused.
pub const BAN_MS: i64 = 60_000;

/// Counts one sign-in step from the request's client; `Err` is the `429` to answer.
///
/// During a ban the answer comes from one read: a flood never reaches the writer, so pushes
/// beside it keep their speed.
pub async fn admit(state: &AppState, peer: IpAddr, headers: &HeaderMap) -> Result<(), Response> {
    let ip = client_ip(peer, headers, &state.config.http.trusted_proxies);
    let bucket = format!("signin:{}", rate_subject(ip));
    match count(state, bucket).await {
        Ok(()) => Ok(()),
        Err(Refused::Limited { retry_after_secs }) => {
            tracing::warn!(client = %ip, "sign-in limit reached; address refused for a while");
            Err(too_many(retry_after_secs))
        }
        Err(Refused::Unavailable) => Err(StatusCode::SERVICE_UNAVAILABLE.into_response()),
    }
}

/// Why [`count`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    Limited {
        retry_after_secs: u64,
    },
    /// The count could not be read or written.
    Unavailable,
}

/// Counts one step in `bucket` against the sign-in limit (`TIDEMARK_SIGNIN_PER_MINUTE`), with
/// a minute's ban past it. Shared by every unauthenticated path that writes.
pub async fn count(state: &AppState, bucket: String) -> Result<(), Refused> {
    let now = now_millis();
    match rate::ban_remaining(&state.db, &bucket, now).await {
        Ok(Some(secs)) => {
            return Err(Refused::Limited {
                retry_after_secs: secs,
            })
        }
        Ok(None) => {}
        Err(err) => {
            tracing::error!(%err, "could not read a flood limit");
            return Err(Refused::Unavailable);
        }
    }
    let limit = RollingLimit::per_minute(state.config.limits.signin_per_minute);
    let decision = state
        .db
        .detached(
            move |db| async move { rate::hit_with_ban(&db, &bucket, &limit, BAN_MS, now).await },
        )
        .await;
    match decision {
        Ok(BanDecision::Allow) => Ok(()),
        Ok(BanDecision::Refuse { retry_after_secs }) => Err(Refused::Limited { retry_after_secs }),
        Err(err) => {
            tracing::error!(%err, "could not count against a flood limit");
            Err(Refused::Unavailable)
        }
    }
}

/// A page, since a browser is on the other end.
fn too_many(retry_after_secs: u64) -> Response {
    let page = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>Too many sign-in attempts</title></head><body>\
         <h1>Too many sign-in attempts</h1>\
         <p>Too many sign-in attempts came from your network. Try again in \
         {retry_after_secs} seconds.</p><p><a href=\"/signin\">Back to sign-in</a></p>\
         </body></html>"
    );
    (
        StatusCode::TOO_MANY_REQUESTS,
        [(header::RETRY_AFTER, retry_after_secs.to_string())],
        axum::Extension(crate::http::metrics::LimitReached("signin")),
        Html(page),
    )
        .into_response()
}
