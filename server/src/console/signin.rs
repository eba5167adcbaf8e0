//! Staff sign-in to the console: OpenID Connect (code flow, PKCE, `state`, `nonce`) against
//! the staff's own provider, then a session of the console's own (`__Host-tidemark_console`)
//! that a customer's dashboard never reads, nor this console a customer's.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Form, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use openidconnect::core::CoreAuthenticationFlow;
use openidconnect::{CsrfToken, Nonce, PkceCodeChallenge, Scope};
use serde::{Deserialize, Serialize};
use tidemark_domain::access::safe_return_path;
use tidemark_domain::audit::{Action, Actor, AuditContext};
use tidemark_domain::now_millis;
use tidemark_store::audit::Change;
use tower_sessions::cookie::SameSite;
use tower_sessions::Session;

use crate::auth::attempt;
use crate::auth::oidc::{check_answer, Expected};
use crate::http::client_ip::client_ip;
use crate::state::AppState;
use app::auth::SignInRefusal;

use super::provider::GroupsRefusal;
use super::render::{self, Refusal};
use super::staff::{Staff, EMAIL, SUBJECT, TOKEN};

pub const CALLBACK_PATH: &str = "/console/auth/callback";
/// Kept in the attempts table as an OpenID Connect attempt (its method's CHECK predates the
/// console, and rebuilding the table would break the previous release mid-upgrade); the
/// sealed payload says whose it is. The dashboard's attempt refuses unknown fields, and this
/// one requires [`ConsoleAttempt::console`], so neither callback can take the other's.
const ATTEMPT_KIND: &str = "oidc";

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConsoleAttempt {
    /// Always `true`: what makes this payload a console attempt.
    console: bool,
    state: String,
    nonce: String,
    pkce_verifier: String,
    next: String,
}

#[derive(Debug, Deserialize)]
pub struct NextQuery {
    next: Option<String>,
}

/// Where to go after signing in: a console path, never anywhere else.
fn console_path(next: Option<&str>) -> String {
    let next = safe_return_path(Some(next.unwrap_or("/console")));
    if next == "/console" || next.starts_with("/console/") || next.starts_with("/console?") {
        next
    } else {
        "/console".to_owned()
    }
}

/// `GET /console/sign-in`: one button, to the staff's provider.
pub async fn show_sign_in(
    staff: Option<axum::Extension<Staff>>,
    Query(query): Query<NextQuery>,
) -> Response {
    let next = console_path(query.next.as_deref());
    if staff.is_some() {
        return Redirect::to(&next).into_response();
    }
    render::sign_in_page(&next, None)
}

#[derive(Debug, Deserialize)]
pub struct StartForm {
    next: Option<String>,
}

/// `POST /console/sign-in`: off to the provider with a fresh `state`, `nonce` and PKCE.
pub async fn start_sign_in(State(state): State<AppState>, Form(form): Form<StartForm>) -> Response {
    let Some(console) = state.console.clone() else {
        return render::not_found();
    };
    let next = console_path(form.next.as_deref());
    let metadata = match console.provider.metadata(false).await {
        Ok(metadata) => metadata,
        Err(_) => return render::sign_in_page(&next, Some(Refusal::ProviderUnreachable)),
    };
    let client = console.provider.client(metadata);
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let mut request = client
        .authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        )
        .add_scope(Scope::new("email".into()))
        .set_pkce_challenge(challenge);
    for scope in &console.scopes {
        request = request.add_scope(Scope::new(scope.clone()));
    }
    let (url, csrf, nonce) = request.url();
    let record = ConsoleAttempt {
        console: true,
        state: csrf.secret().clone(),
        nonce: nonce.secret().clone(),
        pkce_verifier: verifier.secret().clone(),
        next,
    };
    match attempt::begin(&state, ATTEMPT_KIND, &record, SameSite::Lax).await {
        Ok(cookie) => (cookie, Redirect::to(url.as_str())).into_response(),
        Err(err) => {
            tracing::error!(%err, "could not record a console sign-in attempt");
            render::unavailable()
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

/// Who the provider says signed in, with their access token.
struct Verified {
    subject: String,
    email: String,
    access_token: String,
}

/// `GET /console/auth/callback`.
pub async fn callback(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    session: Session,
    headers: HeaderMap,
    Query(query): Query<CallbackQuery>,
) -> Response {
    let Some(console) = state.console.clone() else {
        return render::not_found();
    };
    // Taken whatever happens next: a callback can be tried once.
    let taken = attempt::take::<ConsoleAttempt>(&state, &headers, ATTEMPT_KIND).await;
    let attempt = match taken {
        Ok(attempt) if attempt.console => attempt,
        _ => return attempt::refused(render::sign_in_page("/console", Some(Refusal::Expired))),
    };
    let next = attempt.next.clone();
    let verified = match verify(&state, attempt, query).await {
        Ok(verified) => verified,
        Err(refusal) => return attempt::refused(render::sign_in_page(&next, Some(refusal))),
    };
    let roles = match console
        .current_groups(&verified.access_token, &verified.subject)
        .await
    {
        Ok(groups) => console.roles.roles_of(groups.iter().map(String::as_str)),
        Err(GroupsRefusal::ProviderUnreachable) => {
            return attempt::refused(render::sign_in_page(
                &next,
                Some(Refusal::ProviderUnreachable),
            ))
        }
        Err(GroupsRefusal::TokenEnded | GroupsRefusal::NoUserinfo) => {
            return attempt::refused(render::sign_in_page(&next, Some(Refusal::NoUserinfo)))
        }
    };
    let audit = AuditContext {
        actor: Actor::Staff {
            email: verified.email.clone(),
        },
        client_ip: Some(
            client_ip(peer.ip(), &headers, &state.config.http.trusted_proxies).to_string(),
        ),
        at: now_millis(),
    };
    if roles.is_empty() {
        record(
            &state,
            &audit,
            Action::StaffRefused,
            "no staff group".into(),
        )
        .await;
        return attempt::refused(render::sign_in_page(&next, Some(Refusal::NoGroup)));
    }
    let sealed = console.tokens.seal(verified.access_token.as_bytes());
    let started = async {
        session.cycle_id().await?;
        session.insert(SUBJECT, &verified.subject).await?;
        session.insert(EMAIL, &verified.email).await?;
        session.insert(TOKEN, &sealed).await?;
        session.save().await
    };
    if let Err(err) = started.await {
        tracing::error!(%err, "could not start a console session");
        return attempt::refused(render::unavailable());
    }
    record(&state, &audit, Action::StaffSignedIn, roles.in_words()).await;
    tracing::info!(roles = %roles.in_words(), "a staff member signed in to the console");
    let mut response = crate::auth::hand_off(&next, "Continue to the console");
    response.headers_mut().extend(attempt::clear_cookie());
    response
}

/// Checks the provider's answer as the dashboard's sign-in does (`auth::oidc::check_answer`).
async fn verify(
    state: &AppState,
    attempt: ConsoleAttempt,
    query: CallbackQuery,
) -> Result<Verified, Refusal> {
    let console = state.console.as_ref().ok_or(Refusal::Expired)?;
    let expected = Expected {
        state: attempt.state,
        nonce: attempt.nonce,
        pkce_verifier: attempt.pkce_verifier,
    };
    let checked = check_answer(
        &console.provider,
        expected,
        query.state.as_deref(),
        query.code,
        query.error.as_deref(),
    )
    .await
    .map_err(|refusal| match refusal {
        SignInRefusal::ProviderUnreachable => Refusal::ProviderUnreachable,
        SignInRefusal::TokenInvalid => Refusal::TokenInvalid,
        SignInRefusal::ProviderRefused | SignInRefusal::OidcUnconfigured => {
            Refusal::ProviderRefused
        }
        _ => Refusal::Expired,
    })?;
    // The audit log names staff by address; a provider that gives none is named by subject.
    let email = checked
        .email
        .map(|e| e.to_lowercase())
        .unwrap_or_else(|| format!("subject:{}", checked.subject));
    Ok(Verified {
        subject: checked.subject,
        email,
        access_token: checked.access_token.secret().clone(),
    })
}

/// `POST /console/sign-out`: the record goes (on every replica), then back to sign-in.
pub async fn sign_out(
    State(state): State<AppState>,
    staff: Option<axum::Extension<Staff>>,
    session: Session,
) -> Response {
    if let Some(axum::Extension(staff)) = staff {
        record(&state, &staff.audit, Action::StaffSignedOut, String::new()).await;
    }
    if let Err(err) = session.flush().await {
        tracing::error!(%err, "could not end a console session");
        return render::unavailable();
    }
    Redirect::to("/console/sign-in").into_response()
}

/// Writes one audit event; a failure is logged, never the sign-in's failure.
async fn record(state: &AppState, audit: &AuditContext, action: Action, after: String) {
    let (ctx, target) = (audit.clone(), audit.actor.name());
    let written = state
        .db
        .detached(move |db| async move {
            let change = Change {
                account_id: None,
                action,
                target,
                before: None,
                after: (!after.is_empty()).then_some(after),
            };
            tidemark_store::audit::record(&db, &ctx, change).await
        })
        .await;
    if let Err(err) = written {
        tracing::error!(%err, "could not record a console sign-in event");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_console_paths_are_gone_back_to() {
        use super::console_path;
        assert_eq!(console_path(None), "/console");
        assert_eq!(
            console_path(Some("/console/licenses/lcn_A")),
            "/console/licenses/lcn_A"
        );
        assert_eq!(console_path(Some("/console?q=a%40b")), "/console?q=a%40b");
        assert_eq!(console_path(Some("/projects")), "/console");
        assert_eq!(console_path(Some("/consoled")), "/console");
        assert_eq!(
            console_path(Some("https://evil.example/console")),
            "/console"
        );
        assert_eq!(console_path(Some("//evil.example/console")), "/console");
    }
}
