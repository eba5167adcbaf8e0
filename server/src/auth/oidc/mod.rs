//! OpenID Connect: authorization code flow with PKCE (S256), `state` and `nonce`, against the
//! provider named by `TIDEMARK_OIDC_ISSUER` (found by discovery). ID tokens are verified by
//! the `openidconnect` crate: issuer, audience, expiry, nonce, and an asymmetric signature
//! checked against the provider's JWKS (`alg=none` and HMAC are refused).

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use openidconnect::core::{CoreAuthenticationFlow, CoreJwsSigningAlgorithm};
use openidconnect::{
    AccessTokenHash, AuthorizationCode, CsrfToken, Nonce, OAuth2TokenResponse as _,
    PkceCodeChallenge, PkceCodeVerifier, Scope, TokenResponse as _,
};
use serde::{Deserialize, Serialize};
use tidemark_domain::now_millis;
use tidemark_domain::text::Email;
use tidemark_store::access::{self, IdentityOutcome, IdentityProvider, Subject};
use tower_sessions::cookie::SameSite;
use tower_sessions::Session;

use super::{attempt, complete_sign_in, sign_in_failed, Landing};
use app::auth::SignInRefusal;

use crate::state::AppState;

pub mod provider;

/// What the server remembers between the redirect and the callback. Unknown fields are
/// refused: a console sign-in's attempt (`console::signin`) is kept under the same method and
/// carries one more, so the dashboard's callback cannot take it.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct OidcAttempt {
    state: String,
    nonce: String,
    pkce_verifier: String,
    next: String,
}

/// Sends the browser to the provider with a fresh `state`, `nonce` and PKCE challenge.
pub async fn start(state: &AppState, email: &Email, next: &str) -> Result<Response, SignInRefusal> {
    let provider = state.oidc.as_ref().ok_or(SignInRefusal::OidcUnconfigured)?;
    let client = provider.client(provider.metadata(false).await?);
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, csrf, nonce) = client
        .authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        )
        .add_scope(Scope::new("email".into()))
        .add_extra_param("login_hint", email.as_str())
        .set_pkce_challenge(challenge)
        .url();
    let record = OidcAttempt {
        state: csrf.secret().clone(),
        nonce: nonce.secret().clone(),
        pkce_verifier: verifier.secret().clone(),
        next: next.to_owned(),
    };
    let cookie = attempt::begin(state, "oidc", &record, SameSite::Lax)
        .await
        .map_err(|err| {
            tracing::error!(%err, "could not record a sign-in attempt");
            SignInRefusal::Unavailable
        })?;
    Ok((cookie, Redirect::to(url.as_str())).into_response())
}

#[derive(Debug, Deserialize)]
pub struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

/// `GET /auth/oidc/callback`.
pub async fn callback(
    State(state): State<AppState>,
    session: Session,
    headers: HeaderMap,
    Query(query): Query<CallbackQuery>,
) -> Response {
    // The attempt is consumed whatever happens next: a callback can be tried only once.
    let attempt: OidcAttempt = match attempt::take(&state, &headers, "oidc").await {
        Ok(attempt) => attempt,
        Err(code) => return attempt::refused(sign_in_failed(code, "/")),
    };
    let next = attempt.next.clone();
    let outcome = finish(&state, attempt, query).await;
    match outcome {
        Ok(user_id) => {
            complete_sign_in(
                &state,
                &session,
                &user_id,
                "oidc",
                &next,
                Landing::LastUsed,
                attempt::clear_cookie(),
            )
            .await
        }
        Err(code) => attempt::refused(sign_in_failed(code, &next)),
    }
}

/// The signatures an ID token may carry: asymmetric ones, checked with the provider's
/// published keys (no HMAC keyed with the client secret).
const ALLOWED_ALGS: [CoreJwsSigningAlgorithm; 9] = [
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha384,
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha512,
    CoreJwsSigningAlgorithm::RsaSsaPssSha256,
    CoreJwsSigningAlgorithm::RsaSsaPssSha384,
    CoreJwsSigningAlgorithm::RsaSsaPssSha512,
    CoreJwsSigningAlgorithm::EcdsaP256Sha256,
    CoreJwsSigningAlgorithm::EcdsaP384Sha384,
    CoreJwsSigningAlgorithm::EdDsa,
];

/// A domain whose verified owner enforces SAML may not come in through OpenID Connect. A
/// pending claim enforces nothing: anyone can make one.
async fn refuse_if_saml_enforced(state: &AppState, user_id: &str) -> Result<(), SignInRefusal> {
    let email = access::user_email(&state.db, user_id)
        .await
        .map_err(|_| SignInRefusal::Unavailable)?;
    let domain = email
        .as_deref()
        .and_then(|e| e.rsplit_once('@'))
        .map(|(_, d)| d.to_owned());
    if let Some(domain) = domain {
        let sso = tidemark_store::sso::find_verified(&state.db, &domain)
            .await
            .map_err(|_| SignInRefusal::Unavailable)?;
        if sso.is_some_and(|sso| sso.enforce) {
            return Err(SignInRefusal::SamlRequired);
        }
    }
    Ok(())
}

/// What a round trip must come back with: the `state` and `nonce` sent, and the PKCE verifier.
pub(crate) struct Expected {
    pub state: String,
    pub nonce: String,
    pub pkce_verifier: String,
}

/// What the provider's answer said, once checked.
pub(crate) struct Checked {
    pub issuer: String,
    pub subject: String,
    pub email: Option<String>,
    pub email_verified: Option<bool>,
    pub access_token: openidconnect::AccessToken,
}

/// Checks a provider's answer, for the dashboard and the console alike: the `state` echoed,
/// the code exchanged with PKCE (no redirect followed), the ID token's signature, issuer,
/// audience, expiry and nonce, and the access token it commits to.
pub(crate) async fn check_answer(
    provider: &provider::OidcProvider,
    expected: Expected,
    state: Option<&str>,
    code: Option<String>,
    error: Option<&str>,
) -> Result<Checked, SignInRefusal> {
    let returned_state = state.ok_or(SignInRefusal::StateMismatch)?;
    if !constant_time_eq(returned_state.as_bytes(), expected.state.as_bytes()) {
        return Err(SignInRefusal::StateMismatch);
    }
    if let Some(error) = error {
        tracing::info!(error = %error, "identity provider refused the sign-in");
        return Err(SignInRefusal::ProviderRefused);
    }
    let code = code.ok_or(SignInRefusal::ProviderRefused)?;
    let client = provider.client(provider.metadata(false).await?);
    let token = client
        .exchange_code(AuthorizationCode::new(code))
        .map_err(|_| SignInRefusal::OidcUnconfigured)?
        .set_pkce_verifier(PkceCodeVerifier::new(expected.pkce_verifier))
        .request_async(&provider.http)
        .await
        .map_err(|err| {
            tracing::warn!(err = %err, "OpenID Connect token exchange failed");
            SignInRefusal::ProviderRefused
        })?;
    let id_token = token.id_token().ok_or(SignInRefusal::TokenInvalid)?;
    let verifier = client.id_token_verifier().set_allowed_algs(ALLOWED_ALGS);
    let claims = id_token
        .claims(&verifier, &Nonce::new(expected.nonce))
        .map_err(|err| {
            tracing::warn!(err = %err, "ID token refused");
            SignInRefusal::TokenInvalid
        })?;
    // The access token, when the ID token commits to it, must be the one we were given.
    if let Some(committed) = claims.access_token_hash() {
        let alg = id_token
            .signing_alg()
            .map_err(|_| SignInRefusal::TokenInvalid)?;
        let key = id_token
            .signing_key(&verifier)
            .map_err(|_| SignInRefusal::TokenInvalid)?;
        let actual = AccessTokenHash::from_token(token.access_token(), alg, key)
            .map_err(|_| SignInRefusal::TokenInvalid)?;
        if actual != *committed {
            return Err(SignInRefusal::TokenInvalid);
        }
    }
    Ok(Checked {
        issuer: claims.issuer().as_str().to_owned(),
        subject: claims.subject().as_str().to_owned(),
        email: claims.email().map(|e| e.as_str().to_owned()),
        email_verified: claims.email_verified(),
        access_token: token.access_token().clone(),
    })
}

/// Verifies the provider's answer and returns the member's user id.
async fn finish(
    state: &AppState,
    attempt: OidcAttempt,
    query: CallbackQuery,
) -> Result<String, SignInRefusal> {
    let provider = state.oidc.as_ref().ok_or(SignInRefusal::OidcUnconfigured)?;
    let expected = Expected {
        state: attempt.state,
        nonce: attempt.nonce,
        pkce_verifier: attempt.pkce_verifier,
    };
    let checked = check_answer(
        provider,
        expected,
        query.state.as_deref(),
        query.code,
        query.error.as_deref(),
    )
    .await?;
    let Checked {
        issuer,
        subject,
        email,
        email_verified,
        access_token,
    } = checked;

    // Many providers keep e-mail claims out of the ID token; ask the userinfo endpoint then.
    let (email, verified) = match email {
        Some(email) => (Some(email), email_verified),
        None => {
            let client = provider.client(provider.metadata(false).await?);
            user_info_email(
                &client,
                &provider.http,
                access_token,
                openidconnect::SubjectIdentifier::new(subject.clone()),
            )
            .await
        }
    };
    let verified_email = match (email, verified) {
        (Some(email), Some(true)) => Email::parse(&email).ok(),
        _ => None,
    };

    // Binding an identity writes: run it to completion even if the browser goes away.
    let outcome = state
        .db
        .detached(|db| async move {
            access::resolve_identity(
                &db,
                IdentityProvider::Oidc { issuer: &issuer },
                Subject::Stable(&subject),
                verified_email.as_ref(),
                now_millis(),
            )
            .await
        })
        .await
        .map_err(|err| {
            tracing::error!(%err, "could not resolve a sign-in identity");
            SignInRefusal::Unavailable
        })?;
    let user_id = match outcome {
        IdentityOutcome::User(user_id) => user_id,
        IdentityOutcome::EmailUnverified => return Err(SignInRefusal::EmailUnverified),
        IdentityOutcome::UnknownEmail => return Err(SignInRefusal::NoAccess),
        IdentityOutcome::BoundElsewhere => return Err(SignInRefusal::BoundElsewhere),
    };
    refuse_if_saml_enforced(state, &user_id).await?;
    Ok(user_id)
}

async fn user_info_email(
    client: &openidconnect::core::CoreClient<
        openidconnect::EndpointSet,
        openidconnect::EndpointNotSet,
        openidconnect::EndpointNotSet,
        openidconnect::EndpointNotSet,
        openidconnect::EndpointMaybeSet,
        openidconnect::EndpointMaybeSet,
    >,
    http: &reqwest::Client,
    access_token: openidconnect::AccessToken,
    subject: openidconnect::SubjectIdentifier,
) -> (Option<String>, Option<bool>) {
    let Ok(request) = client.user_info(access_token, Some(subject)) else {
        return (None, None);
    };
    match request.request_async::<openidconnect::EmptyAdditionalClaims, _, openidconnect::core::CoreGenderClaim>(http).await {
        Ok(info) => (info.email().map(|e| e.as_str().to_owned()), info.email_verified()),
        Err(err) => {
            tracing::warn!(err = %err, "userinfo request failed");
            (None, None)
        }
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
