//! Who is at the console: the staff member a console session names, with the roles their
//! provider's groups give them *now*. Every request asks the provider's userinfo endpoint
//! again with the person's access token, so someone taken out of a group, or signed out at
//! the provider, loses the console at their next request, on every replica.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use tidemark_domain::audit::{Actor, AuditContext};
use tidemark_domain::console::StaffRoles;
use tidemark_domain::now_millis;
use tower_sessions::Session;

use app::links::query_value;

use crate::http::client_ip::client_ip;
use crate::state::AppState;

use super::provider::GroupsRefusal;
use super::render;

/// Session record keys. `user_id` is the name the session table's owner column is filled
/// from (`auth::session_store`): the staff member's subject at the provider.
pub const SUBJECT: &str = crate::auth::session_store::USER_ID;
pub const EMAIL: &str = "email";
/// The person's provider access token, sealed with the master key: a database dump holds no
/// token that could be replayed at the provider.
pub const TOKEN: &str = "token";

/// A staff member at the console, as of this request.
#[derive(Debug, Clone)]
pub struct Staff {
    pub subject: String,
    pub email: String,
    pub roles: StaffRoles,
    pub audit: AuditContext,
}

/// Attaches the [`Staff`] a console session names, after asking the provider for their
/// groups. A session whose token or groups no longer open the console is ended.
pub async fn resolve_staff(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    session: Session,
    mut req: Request,
    next: Next,
) -> Response {
    let Some(console) = state.console.clone() else {
        return render::not_found();
    };
    let subject = match session.get::<String>(SUBJECT).await {
        Ok(subject) => subject,
        Err(err) => {
            tidemark_store::fault::log_fault(tidemark_store::Fault::Unavailable, &err);
            return render::unavailable();
        }
    };
    let Some(subject) = subject else {
        return next.run(req).await;
    };
    let email: String = session.get(EMAIL).await.ok().flatten().unwrap_or_default();
    let sealed: String = session.get(TOKEN).await.ok().flatten().unwrap_or_default();
    let token = console
        .tokens
        .open(&sealed)
        .ok()
        .and_then(|t| String::from_utf8(t).ok());
    let groups = match token {
        Some(token) => console.current_groups(&token, &subject).await,
        None => Err(GroupsRefusal::TokenEnded),
    };
    let roles = match groups {
        Ok(groups) => console.roles.roles_of(groups.iter().map(String::as_str)),
        Err(GroupsRefusal::ProviderUnreachable) => return render::provider_unreachable(),
        Err(GroupsRefusal::TokenEnded | GroupsRefusal::NoUserinfo) => StaffRoles::default(),
    };
    if roles.is_empty() {
        // Ended here, on every replica: the record is deleted, not just this cookie.
        let _ = session.flush().await;
        tracing::info!("a console session ended: the provider no longer gives it a staff group");
        return render::access_ended(req.method());
    }
    let ip = client_ip(peer.ip(), req.headers(), &state.config.http.trusted_proxies);
    let audit = AuditContext {
        actor: Actor::Staff {
            email: email.clone(),
        },
        client_ip: Some(ip.to_string()),
        at: now_millis(),
    };
    req.extensions_mut().insert(Staff {
        subject,
        email,
        roles,
        audit,
    });
    next.run(req).await
}

/// Refuses a change that does not come from the console's own pages.
pub async fn require_same_origin(
    State(state): State<AppState>,
    req: Request,
    next: Next,
) -> Response {
    let from = "console actions must come from the console itself";
    match crate::auth::refuse_cross_origin(&state, &req, from) {
        Some(refused) => refused,
        None => next.run(req).await,
    }
}

/// A handler that takes [`Staff`] is reached only signed in: a page sends others to sign
/// in (and back), anything else is answered 401.
impl<S: Send + Sync> FromRequestParts<S> for Staff {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        if let Some(staff) = parts.extensions.get::<Staff>() {
            return Ok(staff.clone());
        }
        if parts.method == Method::GET {
            let back = parts
                .uri
                .path_and_query()
                .map(|pq| pq.as_str())
                .unwrap_or("/console");
            let target = format!("/console/sign-in?next={}", query_value(back));
            return Err(Redirect::to(&target).into_response());
        }
        Err(render::sign_in_needed())
    }
}
