//! `GET /badge/<token>.svg`: a project's status badge for a README. No session and no API
//! key: the unguessable token is the only credential, and it reveals only the latest score
//! and gate verdict. Answers carry an `ETag`, and `Cache-Control: no-cache` so that image
//! proxies (GitHub's camo) revalidate cheaply instead of showing yesterday's score.
//! `?branch=<name>` shows that branch's latest scan instead of the default branch's.

use axum::extract::{Path, Query, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use tidemark_domain::badge::{render, BadgeState, BadgeToken};
use tidemark_domain::secrets::sha256_hex;
use tidemark_store::Db;

#[derive(serde::Deserialize)]
pub struct BadgeQuery {
    branch: Option<String>,
}

pub async fn get_badge(
    State(db): State<Db>,
    Path(file): Path<String>,
    Query(query): Query<BadgeQuery>,
    headers: HeaderMap,
) -> Response {
    // A branch name that cannot exist reads as an unknown badge, like a wrong token.
    let branch = match query.branch.as_deref().filter(|b| !b.is_empty()) {
        None => Ok(None),
        Some(b) => tidemark_domain::git::BranchName::parse("branch", b).map(Some),
    };
    let state = match (BadgeToken::from_file_name(&file), branch) {
        (None, _) | (_, Err(_)) => None,
        (Some(token), Ok(branch)) => {
            match tidemark_store::badges::badge_state(&db, &token, branch.as_ref()).await {
                Ok(state) => state,
                Err(err) => {
                    tracing::warn!(error = %err, "badge lookup failed");
                    return StatusCode::SERVICE_UNAVAILABLE.into_response();
                }
            }
        }
    };
    // An unknown or revoked token still draws a badge, so a README shows why, not a broken image.
    let (status, state) = match state {
        Some(state) => (StatusCode::OK, state),
        None => (StatusCode::NOT_FOUND, BadgeState::Unknown),
    };
    let svg = render(state);
    let etag = format!("\"{}\"", &sha256_hex(svg.as_bytes())[..32]);
    let fresh = headers
        .get_all(IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|tag| tag.trim().trim_start_matches("W/"))
        .any(|tag| tag == etag || tag == "*");
    let cache = [(ETAG, etag.clone()), (CACHE_CONTROL, "no-cache".to_owned())];
    if fresh && status == StatusCode::OK {
        return (StatusCode::NOT_MODIFIED, cache).into_response();
    }
    (
        status,
        cache,
        [(CONTENT_TYPE, "image/svg+xml; charset=utf-8")],
        svg,
    )
        .into_response()
}
