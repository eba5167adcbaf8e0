//! One sign-in round trip in progress: created when the browser leaves for the identity
//! provider, taken (and so destroyed) when it comes back.

use axum::http::{header, HeaderMap, HeaderValue};
use serde::de::DeserializeOwned;
use serde::Serialize;
use sha2::{Digest as _, Sha256};
use tidemark_domain::{ids, now_millis};
use tidemark_store::sessions;
use tower_sessions::cookie::{Cookie, SameSite};

use app::auth::SignInRefusal;

use crate::state::AppState;

/// Carries only an opaque id; everything else stays on the server, encrypted.
pub const ATTEMPT_COOKIE: &str = "__Host-tidemark_login";
/// How long a browser may spend at the identity provider.
const ATTEMPT_TTL_SECONDS: i64 = 600;

fn hash(id: &str) -> String {
    hex::encode(Sha256::digest(id.as_bytes()))
}

/// Records the attempt and returns the `Set-Cookie` header that ties it to this browser.
/// OIDC returns with a top-level GET, which `Lax` allows; the SAML IdP POSTs back
/// cross-site, which only `None` allows.
pub async fn begin(
    state: &AppState,
    method: &str,
    payload: &impl Serialize,
    same_site: SameSite,
) -> Result<HeaderMap, tidemark_store::StoreError> {
    let id = ids::new_opaque_token();
    let json = serde_json::to_vec(payload).unwrap_or_default();
    let sealed = state.login_attempts.seal(&json);
    let (id_hash, method_owned) = (hash(&id), method.to_owned());
    let expires_at = now_millis() + ATTEMPT_TTL_SECONDS * 1000;
    state
        .db
        .detached(|db| async move {
            sessions::insert_login_attempt(&db, &id_hash, &method_owned, &sealed, expires_at).await
        })
        .await?;
    let cookie = Cookie::build((ATTEMPT_COOKIE, id))
        .path("/")
        .http_only(true)
        .secure(true)
        .same_site(same_site)
        .max_age(time::Duration::seconds(ATTEMPT_TTL_SECONDS))
        .build();
    Ok(set_cookie(&cookie))
}

/// Takes the attempt this browser started with `method`, or says why there is none.
pub async fn take<T: DeserializeOwned>(
    state: &AppState,
    headers: &HeaderMap,
    method: &str,
) -> Result<T, SignInRefusal> {
    let id = attempt_cookie(headers).ok_or(SignInRefusal::SignInExpired)?;
    let (id_hash, method) = (hash(&id), method.to_owned());
    let sealed = state
        .db
        .detached(|db| async move {
            sessions::take_login_attempt(&db, &id_hash, &method, now_millis()).await
        })
        .await
        .map_err(|err| {
            tracing::error!(%err, "could not read a sign-in attempt");
            SignInRefusal::Unavailable
        })?
        .ok_or(SignInRefusal::SignInExpired)?;
    let json = state
        .login_attempts
        .open(&sealed)
        .map_err(|_| SignInRefusal::SignInExpired)?;
    serde_json::from_slice(&json).map_err(|_| SignInRefusal::SignInExpired)
}

/// The `Set-Cookie` header that removes the attempt cookie.
pub fn clear_cookie() -> HeaderMap {
    let cookie = Cookie::build((ATTEMPT_COOKIE, ""))
        .path("/")
        .http_only(true)
        .secure(true)
        .same_site(SameSite::Lax)
        .max_age(time::Duration::ZERO)
        .build();
    set_cookie(&cookie)
}

/// A refusal at the end of a round trip: the response, with the attempt cookie removed.
pub fn refused(mut response: axum::response::Response) -> axum::response::Response {
    response.headers_mut().extend(clear_cookie());
    response
}

fn set_cookie(cookie: &Cookie<'_>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Ok(value) = HeaderValue::from_str(&cookie.to_string()) {
        headers.insert(header::SET_COOKIE, value);
    }
    headers
}

fn attempt_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == ATTEMPT_COOKIE)
        .map(|c| c.value().to_owned())
        .filter(|v| !v.is_empty())
}
