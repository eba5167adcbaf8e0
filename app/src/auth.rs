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
    pub account_id: tidemark_wire::ids::AccountId,
    /// Admins rotate keys, manage members, archive projects and configure SSO.
    pub is_admin: bool,
    /// Signed in through a SAML connection: the session stays in that connection's account.
    pub via_saml: bool,
    /// Where this request came from (the forwarded client behind trusted proxies), for the
    /// audit log. Never sent to the browser.
    #[serde(skip, default)]
    pub client_ip: Option<String>,
}

impl Viewer {
    /// Who is making a change, from where, now: what audited store calls take.
    #[cfg(feature = "ssr")]
    pub fn audit(&self) -> tidemark_domain::audit::AuditContext {
        tidemark_domain::audit::AuditContext {
            actor: tidemark_domain::audit::Actor::User {
                user_id: self.user_id.clone(),
                email: self.email.clone(),
            },
            client_ip: self.client_ip.clone(),
            at: tidemark_domain::now_millis(),
        }
    }

    pub fn role(&self) -> crate::model::MemberRole {
        if self.is_admin {
            crate::model::MemberRole::Admin
        } else {
            crate::model::MemberRole::Member
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
    pub account_id: tidemark_wire::ids::AccountId,
    /// How people know the account: its license's e-mail and tier.
    pub label: String,
    pub role: crate::model::MemberRole,
    pub current: bool,
}

/// The viewer's accounts; empty when signed out.
#[server(endpoint = "accounts")]
pub async fn my_accounts() -> Result<Vec<AccountChoice>, ServerFnError> {
    let Some(viewer) = request_viewer() else {
        return Ok(Vec::new());
    };
    let db = expect_context::<tidemark_services::Db>();
    let accounts = tidemark_services::account::accounts_of(&db, &viewer.user_id)
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
                _ => a.account_id.to_string(),
            },
            role: a.role.into(),
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

/// Why a sign-in did not complete: the code the server puts in `/signin?error=<code>` and the
/// sentence the sign-in page shows for it. One enum for both sides, so every code the server
/// can send has a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignInRefusal {
    EmailInvalid,
    OidcUnconfigured,
    SignInExpired,
    StateMismatch,
    ProviderRefused,
    ProviderUnreachable,
    TokenInvalid,
    EmailUnverified,
    NoAccess,
    BoundElsewhere,
    SamlRequired,
    SamlInvalid,
    Unavailable,
}

impl SignInRefusal {
    pub const ALL: [SignInRefusal; 13] = [
        SignInRefusal::EmailInvalid,
        SignInRefusal::OidcUnconfigured,
        SignInRefusal::SignInExpired,
        SignInRefusal::StateMismatch,
        SignInRefusal::ProviderRefused,
        SignInRefusal::ProviderUnreachable,
        SignInRefusal::TokenInvalid,
        SignInRefusal::EmailUnverified,
        SignInRefusal::NoAccess,
        SignInRefusal::BoundElsewhere,
        SignInRefusal::SamlRequired,
        SignInRefusal::SamlInvalid,
        SignInRefusal::Unavailable,
    ];

    /// The code in the sign-in page's URL.
    pub fn code(self) -> &'static str {
        match self {
            SignInRefusal::EmailInvalid => "email_invalid",
            SignInRefusal::OidcUnconfigured => "oidc_unconfigured",
            SignInRefusal::SignInExpired => "sign_in_expired",
            SignInRefusal::StateMismatch => "state_mismatch",
            SignInRefusal::ProviderRefused => "provider_refused",
            SignInRefusal::ProviderUnreachable => "provider_unreachable",
            SignInRefusal::TokenInvalid => "token_invalid",
            SignInRefusal::EmailUnverified => "email_unverified",
            SignInRefusal::NoAccess => "no_access",
            SignInRefusal::BoundElsewhere => "bound_elsewhere",
            SignInRefusal::SamlRequired => "saml_required",
            SignInRefusal::SamlInvalid => "saml_invalid",
            SignInRefusal::Unavailable => "unavailable",
        }
    }

    pub fn parse(code: &str) -> Option<SignInRefusal> {
        SignInRefusal::ALL.into_iter().find(|r| r.code() == code)
    }

    pub fn message(self) -> &'static str {
        match self {
            SignInRefusal::EmailInvalid => "Enter a valid e-mail address.",
            SignInRefusal::OidcUnconfigured => {
                "Sign-in with OpenID Connect is not configured on this server. Ask your operator."
            }
            SignInRefusal::SignInExpired => {
                "That sign-in attempt expired or was already used. Please start again."
            }
            SignInRefusal::StateMismatch => {
                "That sign-in response did not match this browser's attempt."
            }
            SignInRefusal::ProviderRefused => "The identity provider did not sign you in.",
            SignInRefusal::ProviderUnreachable => {
                "The identity provider could not be reached. Try again soon."
            }
            SignInRefusal::TokenInvalid => "The identity provider's answer could not be verified.",
            SignInRefusal::EmailUnverified => {
                "Your identity provider has not verified your e-mail address, so it cannot be \
                 used to sign in."
            }
            SignInRefusal::NoAccess => {
                "You are signed in with your identity provider, but this address is not a member \
                 of any Tidemark account. Ask an admin of your account to add you."
            }
            SignInRefusal::BoundElsewhere => {
                "This e-mail address is already linked to a different sign-in. Ask an admin."
            }
            SignInRefusal::SamlRequired => {
                "Your organisation requires single sign-on (SAML) for this address. Sign in again \
                 with your work e-mail to be sent to your company's identity provider."
            }
            SignInRefusal::SamlInvalid => {
                "Your company's identity provider sent an answer that was refused."
            }
            SignInRefusal::Unavailable => {
                "Sign-in is unavailable right now. Please try again in a moment."
            }
        }
    }
}

/// The sign-in page's explanation of `?error=<code>` (an unknown code gets a general one).
pub fn sign_in_error_message(code: &str) -> &'static str {
    SignInRefusal::parse(code)
        .map(SignInRefusal::message)
        .unwrap_or("Sign-in did not complete. Please try again.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_round_trips_and_has_its_own_message() {
        let mut messages = std::collections::HashSet::new();
        for refusal in SignInRefusal::ALL {
            assert_eq!(SignInRefusal::parse(refusal.code()), Some(refusal));
            assert!(
                messages.insert(refusal.message()),
                "{refusal:?} shares a message"
            );
        }
        assert_eq!(SignInRefusal::parse("nonsense"), None);
        assert!(sign_in_error_message("nonsense").contains("did not complete"));
    }
}
