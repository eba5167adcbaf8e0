//! Dashboard sign-in: OpenID Connect, sessions, the signed-in viewer and CSRF protection.
//!
//! The round trip to an identity provider is cross-site, so it cannot carry the `Strict`
//! session cookie. Its state lives server-side in a single-use `login_attempts` row found
//! through a short-lived `__Host-tidemark_login` cookie; the session cookie is set only when
//! the callback succeeds, and the browser then reaches the dashboard by a same-site
//! navigation from our own page.

use tidemark_wire::ids::AccountId;
pub mod attempt;
pub mod cookie_keys;
pub mod flood;
pub mod oidc;
pub mod saml;
pub mod session_store;

use axum::extract::{ConnectInfo, Form, Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Redirect, Response};
use serde::Deserialize;
use tidemark_domain::access::{is_same_origin_request, safe_return_path, Role, SessionPolicy};
use tidemark_domain::text::Email;
use tidemark_store::access;
use tower_sessions::cookie::SameSite;
use tower_sessions::{Expiry, Session, SessionManagerLayer};

use app::auth::SignInRefusal;
use app::links::query_value;

use crate::state::AppState;
use session_store::{DbSessionStore, ACCOUNT_ID, SIGNED_IN_VIA, USER_ID};

pub const SESSION_COOKIE: &str = "__Host-tidemark_session";

pub fn session_policy(config: &crate::config::Config) -> SessionPolicy {
    SessionPolicy {
        idle_ms: i64::from(config.signin.session_idle_seconds) * 1000,
        absolute_ms: i64::from(config.signin.session_max_seconds) * 1000,
    }
}

/// The session layer: an encrypted `__Host-` cookie holding only the session id, the record
/// in the database, 24 h sliding expiry (every request with a session counts as activity).
pub fn session_layer(
    state: &AppState,
) -> SessionManagerLayer<DbSessionStore, tower_sessions::service::PrivateCookie> {
    let policy = session_policy(&state.config);
    SessionManagerLayer::new(DbSessionStore::new(state.db.clone(), policy))
        .with_name(SESSION_COOKIE)
        .with_http_only(true)
        .with_secure(true)
        .with_same_site(SameSite::Strict)
        .with_path("/")
        .with_always_save(true)
        .with_expiry(Expiry::OnInactivity(time::Duration::seconds(i64::from(
            state.config.signin.session_idle_seconds,
        ))))
        .with_private(cookie_keys::cookie_key(&state.config.keys.master_key))
}

/// Attaches the signed-in [`app::auth::Viewer`] to the request when the session names a
/// current member. A session whose membership has ended is deleted.
pub async fn resolve_viewer(
    State(state): State<AppState>,
    session: Session,
    mut req: Request,
    next: Next,
) -> Response {
    // A session that cannot be read because the database is away is no sign-out: say what
    // is wrong instead of sending a signed-in person to the sign-in page. At the first
    // failure: each read of an unloaded session loads it again, so reading the second value
    // would wait for the database a second time (a page took 6 s to say so, not 3).
    let unreadable = |err: tower_sessions::session::Error, method: &Method| {
        tidemark_store::fault::log_fault(tidemark_store::Fault::Unavailable, &err);
        database_unavailable(method)
    };
    let user = match session.get::<String>(USER_ID).await {
        Ok(user) => user,
        Err(err) => return unreadable(err, req.method()),
    };
    let account = match session.get::<AccountId>(ACCOUNT_ID).await {
        Ok(account) => account,
        Err(err) => return unreadable(err, req.method()),
    };
    let client_ip = req
        .extensions()
        .get::<ConnectInfo<std::net::SocketAddr>>()
        .map(|ConnectInfo(peer)| {
            crate::http::client_ip::client_ip(
                peer.ip(),
                req.headers(),
                &state.config.http.trusted_proxies,
            )
            .to_string()
        });
    let via = session.get::<String>(SIGNED_IN_VIA).await.ok().flatten();
    if let (Some(user), Some(account)) = (user, account) {
        match access::find_member(&state.db, &account, &user).await {
            Ok(Some(member)) => {
                req.extensions_mut().insert(app::auth::Viewer {
                    user_id: member.user_id,
                    email: member.email,
                    account_id: account,
                    is_admin: member.role == Role::Admin,
                    via_saml: via.as_deref() == Some("saml"),
                    client_ip,
                });
            }
            Ok(None) => {
                let _ = session.flush().await;
            }
            Err(err) => match err.fault() {
                Some(fault) => {
                    tidemark_store::fault::log_fault(fault, &err);
                    return database_unavailable(req.method());
                }
                None => tracing::error!(%err, "could not look up the session's member"),
            },
        }
    }
    next.run(req).await
}

/// `503` while the database cannot be reached: for a page, one that retries by itself; for
/// a server function, its error as the dashboard reads it.
fn database_unavailable(method: &Method) -> Response {
    use app::error::{UNAVAILABLE_EXPLANATION, UNAVAILABLE_RETRY_SECS, UNAVAILABLE_TITLE};
    let retry = [(header::RETRY_AFTER, UNAVAILABLE_RETRY_SECS)];
    if method == Method::GET {
        // Without a viewer the app cannot render its shell; the same words, on a plain page.
        let page = format!(
            "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <meta http-equiv=\"refresh\" content=\"{UNAVAILABLE_RETRY_SECS}\">\
             <title>{UNAVAILABLE_TITLE} - Tidemark</title>\
             <link rel=\"stylesheet\" href=\"/pkg/tidemark.css\"></head><body><main>\
             <section class=\"card\" role=\"alert\"><h1>{UNAVAILABLE_TITLE}</h1>\
             <p>{UNAVAILABLE_EXPLANATION}</p></section></main></body></html>"
        );
        return (StatusCode::SERVICE_UNAVAILABLE, retry, Html(page)).into_response();
    }
    let body = serde_json::to_string(&app::error::DashboardError::Unavailable).unwrap_or_default();
    (
        StatusCode::SERVICE_UNAVAILABLE,
        retry,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::HeaderName::from_static("serverfnerror"), "1"),
        ],
        body,
    )
        .into_response()
}

/// Pages that need a signed-in member send everyone else to the sign-in page, keeping the
/// path to come back to.
pub async fn require_viewer_for_pages(req: Request, next: Next) -> Response {
    let path = req.uri().path();
    // Signed in, the landing page has nothing to offer: straight to the projects.
    if path == "/"
        && req.method() == Method::GET
        && req.extensions().get::<app::auth::Viewer>().is_some()
    {
        return Redirect::to("/projects").into_response();
    }
    let protected = ["/projects", "/settings"]
        .iter()
        .any(|p| path == *p || path.starts_with(&format!("{p}/")));
    if protected
        && req.method() == Method::GET
        && req.extensions().get::<app::auth::Viewer>().is_none()
    {
        let back = req
            .uri()
            .path_and_query()
            .map(|pq| pq.as_str())
            .unwrap_or("/");
        let target = format!("/signin?next={}", query_value(back));
        return Redirect::to(&target).into_response();
    }
    next.run(req).await
}

/// Refuses state-changing requests that do not come from our own pages (`Origin`, or
/// `Sec-Fetch-Site` when a browser sends no `Origin`). The SAML ACS is exempt: the IdP posts
/// to it cross-site by design, and it is protected by the single-use sign-in attempt.
pub async fn require_same_origin(
    State(state): State<AppState>,
    req: Request,
    next: Next,
) -> Response {
    if req.uri().path() != "/saml/acs" {
        let from = "this action must come from the Tidemark dashboard itself";
        if let Some(refused) = refuse_cross_origin(&state, &req, from) {
            return refused;
        }
    }
    next.run(req).await
}

/// The 403 for a state-changing request from another site, saying where it must come from;
/// `None` for a safe method or a request from our own pages.
pub fn refuse_cross_origin(state: &AppState, req: &Request, from: &str) -> Option<Response> {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return None;
    }
    let headers = req.headers();
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if is_same_origin_request(
        text("origin"),
        text("sec-fetch-site"),
        &state.config.http.dashboard_url,
    ) {
        return None;
    }
    tracing::warn!(path = %req.uri().path(), "cross-origin state-changing request refused");
    Some(
        (
            StatusCode::FORBIDDEN,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("Cross-origin request refused: {from}."),
        )
            .into_response(),
    )
}

#[derive(Debug, Deserialize)]
pub struct SignInForm {
    #[serde(default)]
    email: String,
    #[serde(default)]
    next: Option<String>,
}

/// `POST /auth/signin`: routes the address to its domain's SAML IdP, or to OpenID Connect.
pub async fn start_sign_in(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<std::net::SocketAddr>,
    headers: HeaderMap,
    Form(form): Form<SignInForm>,
) -> Response {
    if let Err(refused) = flood::admit(&state, peer.ip(), &headers).await {
        return refused;
    }
    // No destination means the dashboard; an unsafe one means the site's root.
    let next = match form.next.as_deref().filter(|n| !n.is_empty()) {
        None => "/projects".to_owned(),
        Some(raw) => safe_return_path(Some(raw)),
    };
    let Ok(email) = Email::parse(&form.email) else {
        return sign_in_failed(SignInRefusal::EmailInvalid, &next);
    };
    // A domain whose owner proved it and configured SAML goes to its IdP; everyone else
    // (pending claims included) to OpenID Connect.
    let sso = match tidemark_store::sso::find_verified(&state.db, email.domain()).await {
        Ok(sso) => sso,
        Err(err) => {
            tracing::error!(%err, "could not look up SSO for a domain");
            return sign_in_failed(SignInRefusal::Unavailable, &next);
        }
    };
    let started = match &sso {
        Some(sso) => saml::start(&state, sso, &next).await,
        None => oidc::start(&state, &email, &next).await,
    };
    match started {
        Ok(response) => response,
        Err(code) => sign_in_failed(code, &next),
    }
}

/// `POST /auth/logout`: deletes the session record; the cookie goes with it.
pub async fn logout(session: Session) -> Response {
    if let Err(err) = session.flush().await {
        tracing::error!(%err, "could not delete a session at logout");
    }
    Redirect::to("/signin?signed_out=1").into_response()
}

/// Sends the browser back to the sign-in page with an explanation.
pub fn sign_in_failed(refusal: SignInRefusal, next: &str) -> Response {
    let mut target = format!("/signin?error={}", refusal.code());
    if next != "/" {
        target.push_str("&next=");
        target.push_str(&query_value(next));
    }
    Redirect::to(&target).into_response()
}

/// Which account a sign-in opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Landing<'a> {
    /// OpenID Connect: the account the member used last (else their oldest).
    LastUsed,
    /// SAML: only the account whose verified connection signed the person in. Not a member
    /// of it means no access, never another membership.
    Only(&'a AccountId),
}

/// Starts the session for a member who has just proved who they are, then leaves the
/// cross-site context: the page answers the callback itself and navigates, same-site, to
/// where the member was going, so the `Strict` cookie goes with that navigation.
pub async fn complete_sign_in(
    state: &AppState,
    session: &Session,
    user_id: &str,
    via: &str,
    next: &str,
    landing: Landing<'_>,
    clear_attempt_cookie: HeaderMap,
) -> Response {
    let accounts = match access::memberships_of(&state.db, user_id).await {
        Ok(accounts) => accounts,
        Err(err) => {
            tracing::error!(%err, "could not read memberships at sign-in");
            return sign_in_failed(SignInRefusal::Unavailable, next);
        }
    };
    let account_id = match landing {
        Landing::LastUsed => accounts.into_iter().next().map(|(account, _)| account),
        Landing::Only(only) => accounts
            .into_iter()
            .find(|(account, _)| account == only)
            .map(|(account, _)| account),
    };
    let Some(account_id) = account_id else {
        return sign_in_failed(SignInRefusal::NoAccess, next);
    };
    if let Err(err) = enter_account(state, session, user_id, &account_id, via).await {
        tracing::error!(%err, "could not start a session");
        return sign_in_failed(SignInRefusal::Unavailable, next);
    }
    tracing::info!(user_id, %account_id, via, "signed in");
    let mut response = hand_off(next, "Continue to Tidemark");
    response.headers_mut().extend(clear_attempt_cookie);
    response
}

/// The page a sign-in ends on. Session cookies are `Strict`: they ride only on a navigation
/// that starts on our own site, so the browser goes on from this page, not from the
/// provider's redirect.
pub fn hand_off(next: &str, continue_to: &str) -> Response {
    let next_attr = html_escape::encode_double_quoted_attribute(next);
    let label = html_escape::encode_text(continue_to);
    let page = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"refresh\" content=\"0;url={next_attr}\">\
         <title>Signing you in…</title></head><body>\
         <p>Signed in. <a href=\"{next_attr}\">{label}</a></p></body></html>"
    );
    let mut response = Html(page).into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    response
}

/// Points the session at `account_id` under a fresh id (an id known before is worthless
/// afterwards) and remembers the account as the member's last used.
async fn enter_account(
    state: &AppState,
    session: &Session,
    user_id: &str,
    account_id: &AccountId,
    via: &str,
) -> anyhow::Result<()> {
    session.cycle_id().await?;
    session.insert(USER_ID, user_id).await?;
    session.insert(ACCOUNT_ID, account_id).await?;
    session.insert(SIGNED_IN_VIA, via).await?;
    let (account, user) = (account_id.to_owned(), user_id.to_owned());
    state
        .db
        .detached(|db| async move {
            access::mark_account_used(&db, &account, &user, tidemark_domain::now_millis()).await
        })
        .await?;
    Ok(())
}

#[derive(Debug, Deserialize)]
pub struct SwitchForm {
    #[serde(default)]
    account_id: AccountId,
}

/// `POST /auth/switch`: the header's account switcher. Opens another account the signed-in
/// person is a member of, under a new session id, with that account's role. A SAML session
/// stays in the account whose IdP vouched for it: reaching another needs another sign-in.
pub async fn switch_account(
    State(state): State<AppState>,
    session: Session,
    Form(form): Form<SwitchForm>,
) -> Response {
    let user = session.get::<String>(USER_ID).await.ok().flatten();
    let via = session.get::<String>(SIGNED_IN_VIA).await.ok().flatten();
    let Some(user) = user else {
        return Redirect::to("/signin?next=/projects").into_response();
    };
    if via.as_deref() == Some("saml") {
        return Redirect::to("/projects?switch=saml_bound").into_response();
    }
    match access::find_member(&state.db, &form.account_id, &user).await {
        Ok(Some(_)) => {}
        Ok(None) => return Redirect::to("/projects?switch=not_member").into_response(),
        Err(err) => {
            tracing::error!(%err, "could not look up a membership to switch to");
            return Redirect::to("/projects?switch=unavailable").into_response();
        }
    }
    let via = via.unwrap_or_else(|| "oidc".into());
    if let Err(err) = enter_account(&state, &session, &user, &form.account_id, &via).await {
        tracing::error!(%err, "could not switch accounts");
        return Redirect::to("/projects?switch=unavailable").into_response();
    }
    tracing::info!(user_id = %user, account_id = %form.account_id, "switched account");
    Redirect::to("/projects").into_response()
}
