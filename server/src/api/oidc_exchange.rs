//! `POST /v1/auth/oidc/exchange`: a CI job's OpenID Connect token in, a 15-minute push token
//! out, when a trusted publisher of some account accepts the job's identity.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use tidemark_domain::audit::{Actor, AuditContext};
use tidemark_domain::ci_identity::{
    check_registered, match_publisher, replayed, trusted_git, Issuer, Matched, ProjectScope,
    Refusal, LEEWAY_SECS, PUSH_TOKEN_SECS,
};
use tidemark_domain::rate::rate_subject;
use tidemark_domain::secrets::CiPushToken;
use tidemark_domain::{now_millis, to_rfc3339};
use tidemark_store::publishers::{self, Exchange, ExchangeOutcome, Publisher};
use tidemark_wire::{ErrorBody, OidcExchangeRequest, OidcExchangeResponse};

use super::extract::read_json;
use crate::auth::flood;
use crate::http::client_ip::client_ip;
use crate::http::error::ApiError;
use crate::http::metrics::ExchangeCounted;
use crate::keyless::token::{self, VerifyError, MAX_TOKEN_BYTES};
use crate::state::AppState;

/// Exchange a CI job's token for a push token
///
/// Keyless CI: a GitHub Actions or GitLab CI job (or any OpenID Connect issuer an admin
/// trusts) sends its own job token, requested with Tidemark's audience
/// (`TIDEMARK_OIDC_AUDIENCE`, by default the server's base URL). The token is verified
/// against the issuer's published keys (RS256 or ES256 only), must carry exactly one
/// audience, be within its `exp`/`nbf`/`iat` (60 s leeway), and is single-use: its `jti` is
/// remembered until it expires, on every replica. When a trusted publisher matches (the
/// repository by its numeric ids and name, the workflow file, and the environment and ref
/// pattern when it names them), the answer is a push token (`tmk_ci_…`, 15 minutes) for the
/// publisher's projects, accepted by `/v1/dashboard/push` and the exports as `X-API-Key` or
/// `Authorization: Bearer`. Every refusal names the claim, what was expected and what the
/// token said (never the token). GitHub gives pull requests from forks no token: such jobs
/// cannot push keyless (see docs/ci.md for the fallback). Limited per issuer and client
/// address like sign-in (`429`).
#[utoipa::path(
    post,
    path = "/v1/auth/oidc/exchange",
    tag = "keyless",
    request_body(content = OidcExchangeRequest, content_type = "application/json"),
    responses(
        (status = 201, description = "A push token for the matched identity", body = OidcExchangeResponse),
        (status = 400, description = "`invalid_json`", body = ErrorBody),
        (status = 401, description = "`invalid_oidc_token`: malformed, not RS256/ES256, unknown `kid`, bad signature, another issuer or audience, expired, not yet valid, or already exchanged (`jti`); the message names the claim", body = ErrorBody),
        (status = 403, description = "`no_trusted_publisher`: a valid token that no trusted publisher accepts; the message names the claim, what was expected and what the token said", body = ErrorBody),
        (status = 413, description = "`payload_too_large`", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`", body = ErrorBody),
        (status = 422, description = "`invalid_request`: no `token` field", body = ErrorBody),
        (status = 429, description = "`rate_limit_exceeded`: too many exchanges from this address for this issuer", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
        (status = 503, description = "`issuer_unavailable`: the issuer's discovery document or keys could not be fetched, or the token's key was not in the key set fetched less than a minute ago (a key the issuer just started using; `Retry-After` says when the set is fetched again)", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
    )
)]
pub async fn exchange_oidc_token(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let client = client_ip(peer.ip(), &headers, &state.config.http.trusted_proxies);
    match exchange(&state, &headers, body, client).await {
        Ok(answer) => (
            StatusCode::CREATED,
            Extension(ExchangeCounted {
                outcome: "issued",
                claim: "",
            }),
            Json(answer),
        )
            .into_response(),
        Err(Failed { error, claim }) => {
            let outcome = match &error {
                ApiError::InvalidOidcToken(_) | ApiError::NoTrustedPublisher(_) => "refused",
                ApiError::IssuerUnavailable(_) | ApiError::IssuerKeyPending { .. } => "unavailable",
                _ => "",
            };
            let mut res = error.into_response();
            if !outcome.is_empty() {
                res.extensions_mut()
                    .insert(ExchangeCounted { outcome, claim });
            }
            res
        }
    }
}

/// A refused exchange and, for the metrics, the claim that failed.
struct Failed {
    error: ApiError,
    claim: &'static str,
}

impl From<ApiError> for Failed {
    fn from(error: ApiError) -> Self {
        Failed { error, claim: "" }
    }
}

fn invalid(r: Refusal) -> Failed {
    Failed {
        claim: r.claim,
        error: ApiError::InvalidOidcToken(r.to_string()),
    }
}

/// Counts an exchange before any key is fetched or anything written, per issuer and
/// address.
async fn count_exchange(
    state: &AppState,
    issuer: &str,
    client: std::net::IpAddr,
) -> Result<(), Failed> {
    let bucket = format!(
        "oidc:{}:{}",
        tidemark_domain::secrets::sha256_hex(issuer.as_bytes()),
        rate_subject(client)
    );
    match flood::count(state, bucket).await {
        Ok(()) => {}
        Err(flood::Refused::Limited { retry_after_secs }) => {
            return Err(ApiError::RateLimited {
                limit: "oidc",
                message: format!(
                    "Too many token exchanges from this address for this issuer. Retry after \
                     {retry_after_secs} seconds."
                ),
                retry_after_secs,
            }
            .into())
        }
        Err(flood::Refused::Unavailable) => return Err(ApiError::DatabaseUnavailable.into()),
    }
    Ok(())
}

fn verify_failure(e: VerifyError, issuer: &Issuer) -> Failed {
    match e {
        VerifyError::Refused(r) => invalid(r),
        VerifyError::IssuerUnreachable(why) => {
            tracing::warn!(issuer = issuer.as_str(), %why, "CI token issuer unreachable");
            Failed {
                error: ApiError::IssuerUnavailable(why),
                claim: "",
            }
        }
        VerifyError::KeyNotYetFetched {
            kid,
            retry_after_secs,
        } => Failed {
            error: ApiError::IssuerKeyPending {
                kid,
                retry_after_secs,
            },
            claim: "",
        },
    }
}

async fn exchange(
    state: &AppState,
    headers: &HeaderMap,
    body: Body,
    client: std::net::IpAddr,
) -> Result<OidcExchangeResponse, Failed> {
    let request: OidcExchangeRequest = read_json(headers, body, MAX_TOKEN_BYTES + 1024).await?;
    let raw = request.token.trim();
    let head = token::peek(raw).map_err(invalid)?;
    count_exchange(state, &head.issuer, client).await?;
    let config = &state.config;
    let unknown_issuer = || {
        invalid(Refusal {
            claim: "iss",
            expected: "the issuer of a trusted publisher (Settings, Trusted publishers)".into(),
            found: format!("{:?}, which no account trusts", head.issuer),
        })
    };
    // Only issuers some publisher names are ever contacted: a token cannot choose the URL.
    let issuer = Issuer::parse(&head.issuer, config.keyless.allow_private_issuers)
        .map_err(|_| unknown_issuer())?;
    if issuer.as_str() != head.issuer
        || !publishers::is_trusted_issuer(&state.db, issuer.as_str())
            .await
            .map_err(ApiError::from)?
    {
        return Err(unknown_issuer());
    }
    let claims = token::verify(&state.ci_keys, raw, &head, &issuer)
        .await
        .map_err(|e| verify_failure(e, &issuer))?;
    let now = now_millis();
    let (jti, exp) = check_registered(
        &claims,
        issuer.as_str(),
        &config.keyless.audience,
        now / 1000,
    )
    .map_err(invalid)?;

    let candidates = publishers::publishers_for_issuer(&state.db, issuer.as_str())
        .await
        .map_err(ApiError::from)?;
    let (publisher, matched) = choose(&candidates, &claims, request.account.as_deref())?;
    let push_token = CiPushToken::generate();
    let expires_at = now + PUSH_TOKEN_SECS * 1000;
    let exchange = Exchange {
        account_id: publisher.account_id.clone(),
        publisher_id: publisher.id.clone(),
        pin: matched.pin.clone(),
        issuer: issuer.clone(),
        jti: jti.clone(),
        jti_expires_at: (exp + LEEWAY_SECS) * 1000,
        token_id: tidemark_domain::ids::new_ci_token_id(),
        token_hash: push_token.hash(),
        projects: publisher.spec.projects.clone(),
        identity: matched.identity.clone(),
        trusted_git: trusted_git(publisher.spec.provider, &claims),
        now,
        expires_at,
    };
    let audit = AuditContext {
        actor: Actor::System {
            name: "keyless-ci".into(),
        },
        client_ip: Some(client.to_string()),
        at: now,
    };
    let outcome = state
        .db
        .detached(|db| async move { publishers::record_exchange(&db, &exchange, &audit).await })
        .await
        .map_err(ApiError::from)?;
    if outcome == ExchangeOutcome::Replayed {
        return Err(invalid(replayed(&jti)));
    }
    tracing::info!(
        account = %publisher.account_id,
        publisher = publisher.id,
        repository = matched.identity.repository,
        "keyless CI push token issued"
    );
    Ok(OidcExchangeResponse {
        token: push_token.expose().to_owned(),
        account_id: publisher.account_id.to_string(),
        expires_at: to_rfc3339(expires_at),
        projects: match &publisher.spec.projects {
            ProjectScope::All => None,
            ProjectScope::One(label) => Some(vec![label.clone()]),
        },
        identity: matched.identity,
    })
}

/// The publisher that accepts the claims: of the account named, or of the one account whose
/// publishers accept them (when two accounts' do, the job must say which: otherwise anyone
/// could declare someone else's repository and receive its scans). With none, the refusal of
/// the candidate that came closest, so the message points at the claim to fix.
fn choose<'a>(
    candidates: &'a [Publisher],
    claims: &tidemark_domain::ci_identity::Claims,
    account: Option<&str>,
) -> Result<(&'a Publisher, Matched), Failed> {
    let mut refusals = Vec::new();
    let mut accepted: Vec<(&Publisher, Matched)> = Vec::new();
    for publisher in candidates
        .iter()
        .filter(|p| account.is_none_or(|a| p.account_id == a))
    {
        match match_publisher(&publisher.spec, claims) {
            Ok(matched) => accepted.push((publisher, matched)),
            Err(refusal) => refusals.push(refusal),
        }
    }
    let mut accounts: Vec<&str> = accepted
        .iter()
        .map(|(p, _)| p.account_id.as_str())
        .collect();
    accounts.dedup();
    if accounts.len() > 1 {
        return Err(Failed {
            claim: "account",
            error: ApiError::NoTrustedPublisher(format!(
                "Trusted publishers of {} accounts accept this CI job; name the account to push \
                 to (TIDEMARK_ACCOUNT, or `account` in the exchange: its id is in Settings).",
                accounts.len()
            )),
        });
    }
    if let Some(first) = accepted.into_iter().next() {
        return Ok(first);
    }
    // A refusal on the repository name is the least informative: prefer any other.
    let closest = refusals
        .iter()
        .find(|r| !matches!(r.claim, "repository" | "project_path" | "sub"))
        .or(refusals.first());
    let (claim, message) = match closest {
        Some(r) => (
            r.claim,
            format!(
                "No trusted publisher accepts this CI job: {r}. Check the publisher in \
                 Settings, Trusted publishers."
            ),
        ),
        None => (
            "account",
            "No trusted publisher of that account accepts this CI job.".to_owned(),
        ),
    };
    Err(Failed {
        claim,
        error: ApiError::NoTrustedPublisher(message),
    })
}
