//! Who is looking at the dashboard. The server resolves the signed-in member from the session
//! on every request and puts a [`Viewer`] in the request; server functions read it from there
//! and never trust anything the browser sends about identity or role.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// The signed-in member of one account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Viewer {
    pub user_id: String,
    pub email: String,
    pub account_id: String,
    /// Admins rotate keys, manage members, archive projects and configure SSO.
    pub is_admin: bool,
    /// Signed in through a SAML connection: the session stays in that connection's account.
    pub via_saml: bool,
}

impl Viewer {
    pub fn role_label(&self) -> &'static str {
        if self.is_admin {
            "admin"
        } else {
            "member"
        }
    }
}

/// The viewer of the current request, if signed in.
#[server(endpoint = "viewer")]
pub async fn current_viewer() -> Result<Option<Viewer>, ServerFnError> {
    Ok(request_viewer())
}

/// An account the viewer can switch to (or is in), for the header's switcher.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountChoice {
    pub account_id: String,
    /// How people know the account: its license's e-mail and tier.
    pub label: String,
    pub is_admin: bool,
    pub current: bool,
}

/// The viewer's accounts; empty when signed out.
#[server(endpoint = "accounts")]
pub async fn my_accounts() -> Result<Vec<AccountChoice>, ServerFnError> {
    let Some(viewer) = request_viewer() else {
        return Ok(Vec::new());
    };
    let db = expect_context::<tidemark_store::Db>();
    let accounts = tidemark_store::access::accounts_of(&db, &viewer.user_id)
        .await
        .map_err(|err| {
            tracing::error!(%err, "could not list the viewer's accounts");
            ServerFnError::new("unavailable")
        })?;
    Ok(accounts
        .into_iter()
        .map(|a| AccountChoice {
            label: match (a.license_email, a.tier) {
                (Some(email), Some(tier)) => format!("{email} ({tier})"),
                _ => a.account_id.clone(),
            },
            is_admin: a.role == "admin",
            current: a.account_id == viewer.account_id,
            account_id: a.account_id,
        })
        .collect())
}

/// On the server: the viewer the session middleware attached to this request.
#[cfg(feature = "ssr")]
pub fn request_viewer() -> Option<Viewer> {
    use_context::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Viewer>().cloned())
}

/// The signed-in viewer, or `SignedOut`: the first line of every dashboard server function.
#[cfg(feature = "ssr")]
pub fn require_viewer() -> Result<Viewer, crate::error::DashboardError> {
    match request_viewer() {
        Some(viewer) => Ok(viewer),
        None => Err(crate::error::DashboardError::SignedOut),
    }
}

/// The signed-in viewer if an admin of the account, or `AdminOnly`.
#[cfg(feature = "ssr")]
pub fn require_admin() -> Result<Viewer, crate::error::DashboardError> {
    let viewer = require_viewer()?;
    if viewer.is_admin {
        Ok(viewer)
    } else {
        Err(crate::error::DashboardError::AdminOnly)
    }
}

/// Why a sign-in did not complete, as the sign-in page explains it.
pub fn sign_in_error_message(code: &str) -> &'static str {
    match code {
        "email_invalid" => "Enter a valid e-mail address.",
        "oidc_unconfigured" => {
            "Sign-in with OpenID Connect is not configured on this server. Ask your operator."
        }
        "sign_in_expired" => {
            "That sign-in attempt expired or was already used. Please start again."
        }
        "state_mismatch" => "That sign-in response did not match this browser's attempt.",
        "provider_refused" => "The identity provider did not sign you in.",
        "provider_unreachable" => "The identity provider could not be reached. Try again soon.",
        "token_invalid" => "The identity provider's answer could not be verified.",
        "email_unverified" => {
            "Your identity provider has not verified your e-mail address, so it cannot be used \
             to sign in."
        }
        "no_access" => {
            "You are signed in with your identity provider, but this address is not a member of \
             any Tidemark account. Ask an admin of your account to add you."
        }
        "bound_elsewhere" => {
            "This e-mail address is already linked to a different sign-in. Ask an admin."
        }
        "saml_required" => {
            "Your organisation requires single sign-on (SAML) for this address. Sign in again \
             with your work e-mail to be sent to your company's identity provider."
        }
        "saml_invalid" => "Your company's identity provider sent an answer that was refused.",
        "unavailable" => "Sign-in is unavailable right now. Please try again in a moment.",
        _ => "Sign-in did not complete. Please try again.",
    }
}
