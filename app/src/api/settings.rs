//! Settings: the license, API keys (rotate all, revoke one), members, archived projects and
//! single sign-on. Admins change things; members read. Every change is checked here.

use leptos::prelude::*;

use crate::error::DashboardError;
#[cfg(feature = "ssr")]
use crate::model::{KeyView, LicenseView, SsoState};
use crate::model::{MemberAction, MemberSummary, SettingsView, SsoSummary};

#[cfg(feature = "ssr")]
impl From<tidemark_domain::access::Role> for crate::model::MemberRole {
    fn from(role: tidemark_domain::access::Role) -> Self {
        match role {
            tidemark_domain::access::Role::Admin => crate::model::MemberRole::Admin,
            tidemark_domain::access::Role::Member => crate::model::MemberRole::Member,
        }
    }
}

#[cfg(feature = "ssr")]
impl From<tidemark_store::access::Member> for MemberSummary {
    fn from(m: tidemark_store::access::Member) -> Self {
        MemberSummary {
            email: m.email,
            role: m.role.into(),
            added_at: crate::time::format_time(m.added_at),
            last_login_at: m.last_login_at.map(crate::time::format_time),
            managed: false,
        }
    }
}

#[cfg(feature = "ssr")]
impl From<tidemark_store::sso::SsoConnection> for SsoSummary {
    fn from(c: tidemark_store::sso::SsoConnection) -> Self {
        use tidemark_domain::sso::{challenge_name, challenge_value, ClaimState};
        let fmt = crate::time::format_time;
        SsoSummary {
            state: match c.state {
                ClaimState::Pending => SsoState::Pending,
                ClaimState::Verified => SsoState::Verified,
                ClaimState::Ended => SsoState::Ended,
            },
            record_name: challenge_name(&c.domain),
            record_value: challenge_value(&c.challenge_token),
            rechecking: c.state == ClaimState::Pending && c.next_check_at.is_some(),
            checked_at: c.checked_at.map(fmt),
            check_message: c.check_message,
            verified_at: c.verified_at.map(fmt),
            ended_reason: c.ended_reason,
            domain: c.domain,
            idp_entity_id: c.idp_entity_id,
            enforce: c.enforce,
        }
    }
}

#[server(endpoint = "settings")]
pub async fn load_settings() -> Result<SettingsView, DashboardError> {
    use crate::error::unavailable;
    let viewer = crate::auth::require_viewer()?;
    let db = expect_context::<tidemark_store::Db>();
    let account = &viewer.account_id;
    let fmt = crate::time::format_time;
    let license = match tidemark_store::licenses::find_license_for_account(&db, account).await {
        Ok(l) => l,
        Err(e) => return unavailable(e),
    };
    let projects = match tidemark_store::dashboard::list_projects(&db, account).await {
        Ok(p) => p,
        Err(e) => return unavailable(e),
    };
    let now = tidemark_domain::now_millis();
    let license = license.map(|l| LicenseView {
        tier: l.tier.as_str().to_owned(),
        state: l.state(now).as_str().to_owned(),
        features: l.features().iter().map(|f| f.label().to_owned()).collect(),
        expires_at: fmt(l.expires_at),
        projects_used: projects.iter().filter(|p| p.archived_at.is_none()).count() as u64,
        project_cap: l.project_cap(),
    });
    let keys = match tidemark_store::licenses::list_api_keys(&db, account).await {
        Ok(keys) => keys,
        Err(e) => return unavailable(e),
    };
    let members = match tidemark_store::access::list_members(&db, account).await {
        Ok(m) => m,
        Err(e) => return unavailable(e),
    };
    let sso = match tidemark_store::sso::list_connections(&db, Some(account)).await {
        Ok(s) => s,
        Err(e) => return unavailable(e),
    };
    let managed = match tidemark_store::scim::managed_user_ids(&db, account).await {
        Ok(m) => m,
        Err(e) => return unavailable(e),
    };
    Ok(SettingsView {
        is_admin: viewer.is_admin,
        viewer_email: viewer.email,
        license,
        keys: keys
            .into_iter()
            .map(|k| KeyView {
                id: k.id,
                prefix: k.prefix,
                machine: k.machine,
                created_at: fmt(k.created_at),
                last_used_at: k.last_used_at.map(fmt),
            })
            .collect(),
        members: members
            .into_iter()
            .map(|m| {
                let managed = managed.contains(&m.user_id);
                MemberSummary {
                    managed,
                    ..MemberSummary::from(m)
                }
            })
            .collect(),
        sso: sso.into_iter().map(SsoSummary::from).collect(),
    })
}

/// Revokes every key of the account at once and returns the one new key (shown once).
#[server(endpoint = "rotate_keys")]
pub async fn rotate_keys() -> Result<String, DashboardError> {
    let viewer = crate::auth::require_admin()?;
    let db = expect_context::<tidemark_store::Db>();
    let key = tidemark_domain::secrets::ApiKey::generate();
    let new = tidemark_store::licenses::NewApiKey {
        id: tidemark_domain::ids::new_key_id(),
        account_id: viewer.account_id.clone(),
        hash: key.hash(),
        prefix: key.display_prefix(),
        machine: "dashboard rotation".into(),
        now: tidemark_domain::now_millis(),
    };
    let audit = viewer.audit();
    let rotated = db
        .detached(
            |db| async move { tidemark_store::licenses::rotate_api_keys(&db, &new, &audit).await },
        )
        .await;
    match rotated {
        Ok(revoked) => {
            tracing::info!(account_id = %viewer.account_id, revoked, "API keys rotated from Settings");
            Ok(key.expose().to_owned())
        }
        Err(e) => crate::error::unavailable(e),
    }
}

#[server(endpoint = "revoke_key")]
pub async fn revoke_key(key_id: String) -> Result<(), DashboardError> {
    let viewer = crate::auth::require_admin()?;
    let db = expect_context::<tidemark_store::Db>();
    let (account, audit) = (viewer.account_id.clone(), viewer.audit());
    let done = db
        .detached(|db| async move {
            tidemark_store::licenses::revoke_api_key(&db, &account, &key_id, &audit).await
        })
        .await;
    match done {
        Ok(true) => {
            crate::api::ssr::back_to_form("revoke_key");
            Ok(())
        }
        Ok(false) => Err(DashboardError::NotFound),
        Err(e) => crate::error::unavailable(e),
    }
}

/// Makes a member an admin or a member, or removes them (which ends their sessions here).
#[server(endpoint = "change_member")]
pub async fn change_member(email: String, action: MemberAction) -> Result<(), DashboardError> {
    use tidemark_domain::access::Role;
    let viewer = crate::auth::require_admin()?;
    let db = expect_context::<tidemark_store::Db>();
    let change = match action {
        MemberAction::MakeAdmin => Some(Role::Admin),
        MemberAction::MakeMember => Some(Role::Member),
        MemberAction::Remove => None,
    };
    let Ok(email) = tidemark_domain::text::Email::parse(&email) else {
        return Err(DashboardError::Invalid(
            "Enter a valid e-mail address.".into(),
        ));
    };
    let (account, audit) = (viewer.account_id.clone(), viewer.audit());
    let done = db
        .detached(|db| async move {
            let Some(member) =
                tidemark_store::access::find_member_by_email(&db, &account, &email).await?
            else {
                return Ok(None);
            };
            tidemark_store::access::change_member(&db, &account, &member.user_id, change, &audit)
                .await
                .map(Some)
        })
        .await;
    match done {
        Ok(Some(Ok(()))) => {
            crate::api::ssr::back_to_form("change_member");
            Ok(())
        }
        Ok(None) => Err(DashboardError::NotFound),
        Ok(Some(Err(refused))) => Err(DashboardError::Conflict(refused.to_string())),
        Err(e) => crate::error::unavailable(e),
    }
}

/// Why an SSO change was not made. The server's SAML code writes `Refused` texts for admins;
/// anything else (a database failure) stays in the server's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SsoAdminError {
    Refused(String),
    NotFound,
    Unavailable,
}

#[cfg(feature = "ssr")]
type SsoAdminFuture<T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, SsoAdminError>> + Send>>;

/// SSO claims need the IdP metadata checked by the server's SAML code and the DNS looked up
/// by its resolver, which `app` cannot depend on; the server provides this through the
/// Leptos context.
#[cfg(feature = "ssr")]
pub trait SsoAdmin: Send + Sync {
    /// Claims the domain for the account (pending until its DNS record is found), or
    /// replaces the IdP of its existing claim.
    fn configure(
        &self,
        account_id: tidemark_wire::ids::AccountId,
        domain: String,
        metadata_xml: String,
        enforce: bool,
        audit: tidemark_domain::audit::AuditContext,
    ) -> SsoAdminFuture<SsoSummary>;

    /// Looks the claim's DNS record up now.
    fn verify(
        &self,
        account_id: tidemark_wire::ids::AccountId,
        domain: String,
        audit: tidemark_domain::audit::AuditContext,
    ) -> SsoAdminFuture<SsoSummary>;

    fn remove(
        &self,
        account_id: tidemark_wire::ids::AccountId,
        domain: String,
        audit: tidemark_domain::audit::AuditContext,
    ) -> SsoAdminFuture<()>;
}

#[cfg(feature = "ssr")]
#[derive(Clone)]
pub struct SsoAdminHandle(pub std::sync::Arc<dyn SsoAdmin>);

#[cfg(feature = "ssr")]
fn sso_admin() -> Result<SsoAdminHandle, DashboardError> {
    match use_context::<SsoAdminHandle>() {
        Some(handle) => Ok(handle),
        None => crate::error::unavailable("no SSO administration in context"),
    }
}

#[cfg(feature = "ssr")]
fn sso_failed<T>(err: SsoAdminError) -> Result<T, DashboardError> {
    match err {
        SsoAdminError::Refused(text) => Err(DashboardError::Invalid(text)),
        SsoAdminError::NotFound => Err(DashboardError::NotFound),
        SsoAdminError::Unavailable => crate::error::unavailable("SSO administration failed"),
    }
}

/// Claims a domain for SAML (enterprise admins). The claim is pending, and changes nothing
/// for anybody, until the domain publishes its DNS record.
#[server(endpoint = "configure_sso")]
pub async fn configure_sso(
    domain: String,
    metadata_xml: String,
    #[server(default)] enforce: bool,
) -> Result<SsoSummary, DashboardError> {
    let viewer = crate::auth::require_admin()?;
    sso_admin()?
        .0
        .configure(
            viewer.account_id.clone(),
            domain,
            metadata_xml,
            enforce,
            viewer.audit(),
        )
        .await
        .inspect(|_| crate::api::ssr::back_to_form("configure_sso"))
        .or_else(sso_failed)
}

/// "Verify now": looks the claim's DNS record up at once.
#[server(endpoint = "verify_sso")]
pub async fn verify_sso(domain: String) -> Result<SsoSummary, DashboardError> {
    let viewer = crate::auth::require_admin()?;
    sso_admin()?
        .0
        .verify(viewer.account_id.clone(), domain, viewer.audit())
        .await
        .inspect(|_| crate::api::ssr::back_to_form("verify_sso"))
        .or_else(sso_failed)
}

#[server(endpoint = "remove_sso")]
pub async fn remove_sso(domain: String) -> Result<(), DashboardError> {
    let viewer = crate::auth::require_admin()?;
    sso_admin()?
        .0
        .remove(viewer.account_id.clone(), domain, viewer.audit())
        .await
        .inspect(|_| crate::api::ssr::back_to_form("remove_sso"))
        .or_else(sso_failed)
}

/// Adds a person to the viewer's account (admins only).
#[server(endpoint = "members/add")]
pub async fn add_member(
    email: String,
    #[server(default)] admin: bool,
) -> Result<MemberSummary, DashboardError> {
    use tidemark_domain::access::Role;
    let viewer = crate::auth::require_admin()?;
    let Ok(email) = tidemark_domain::text::Email::parse(&email) else {
        return Err(DashboardError::Invalid(
            "Enter a valid e-mail address.".into(),
        ));
    };
    let db = expect_context::<tidemark_store::Db>();
    let role = if admin { Role::Admin } else { Role::Member };
    let audit = viewer.audit();
    let added = db
        .detached(|db| async move {
            tidemark_store::access::add_member(&db, &viewer.account_id, &email, role, &audit).await
        })
        .await;
    match added {
        Ok(Ok(member)) => {
            crate::api::ssr::back_to_form("members/add");
            Ok(member.into())
        }
        Ok(Err(refused)) => Err(DashboardError::Conflict(refused.to_string())),
        Err(err) => crate::error::unavailable(err),
    }
}
