//! Settings: the license, API keys (rotate all, revoke one), members, and archived projects.
//! Admins change things; members read. Every change is checked on the server.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::DashboardError;
use crate::members::MemberSummary;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyView {
    pub id: String,
    pub prefix: String,
    pub machine: String,
    pub created_at: String,
    pub last_used_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LicenseView {
    pub tier: String,
    pub state: String,
    pub features: Vec<String>,
    pub expires_at: String,
    pub projects_used: u64,
    pub project_cap: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SsoSummary {
    pub domain: String,
    pub idp_entity_id: String,
    pub enforce: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingsView {
    pub is_admin: bool,
    pub viewer_email: String,
    pub license: Option<LicenseView>,
    pub keys: Vec<KeyView>,
    pub members: Vec<MemberSummary>,
    pub sso: Vec<SsoSummary>,
}

#[server(endpoint = "settings")]
pub async fn load_settings() -> Result<SettingsView, DashboardError> {
    use crate::error::unavailable;
    let viewer = crate::members::require_viewer()?;
    let db = expect_context::<tidemark_store::Db>();
    let account = viewer.account_id.as_str();
    let fmt = crate::dashboard::format_time_ssr;
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
        features: l.features().iter().map(|f| f.as_str().to_owned()).collect(),
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
    let sso = match tidemark_store::sso::list_sso_domains(&db, Some(account)).await {
        Ok(s) => s,
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
        members: members.into_iter().map(MemberSummary::from).collect(),
        sso: sso
            .into_iter()
            .map(|s| SsoSummary {
                domain: s.domain,
                idp_entity_id: s.idp_entity_id,
                enforce: s.enforce,
            })
            .collect(),
    })
}

/// Revokes every key of the account at once and returns the one new key (shown once).
#[server(endpoint = "rotate_keys")]
pub async fn rotate_keys() -> Result<String, DashboardError> {
    let viewer = crate::members::require_admin()?;
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
    // Run to completion even if the browser goes away mid-write.
    let rotated =
        tokio::spawn(async move { tidemark_store::licenses::rotate_api_keys(&db, &new).await })
            .await;
    match rotated {
        Ok(Ok(revoked)) => {
            tracing::info!(account_id = %viewer.account_id, revoked, "API keys rotated from Settings");
            Ok(key.expose().to_owned())
        }
        Ok(Err(e)) => crate::error::unavailable(e),
        Err(e) => crate::error::unavailable(e),
    }
}

#[server(endpoint = "revoke_key")]
pub async fn revoke_key(key_id: String) -> Result<(), DashboardError> {
    let viewer = crate::members::require_admin()?;
    let db = expect_context::<tidemark_store::Db>();
    let now = tidemark_domain::now_millis();
    let account = viewer.account_id.clone();
    let done = tokio::spawn(async move {
        tidemark_store::licenses::revoke_api_key(&db, &account, &key_id, now).await
    })
    .await;
    match done {
        Ok(Ok(true)) => Ok(()),
        Ok(Ok(false)) => crate::error::fail(DashboardError::NotFound),
        Ok(Err(e)) => crate::error::unavailable(e),
        Err(e) => crate::error::unavailable(e),
    }
}

/// `role`: "admin", "member", or "remove".
#[server(endpoint = "change_member")]
pub async fn change_member(email: String, role: String) -> Result<(), DashboardError> {
    use tidemark_domain::access::Role;
    let viewer = crate::members::require_admin()?;
    let db = expect_context::<tidemark_store::Db>();
    let change = match role.as_str() {
        "remove" => None,
        other => match Role::parse(other) {
            Some(role) => Some(role),
            None => return crate::error::fail(DashboardError::Invalid("Unknown role.".into())),
        },
    };
    let Ok(email) = tidemark_domain::text::Email::parse(&email) else {
        return crate::error::fail(DashboardError::Invalid(
            "Enter a valid e-mail address.".into(),
        ));
    };
    let account = viewer.account_id.clone();
    let done = tokio::spawn(async move {
        let Some(member) =
            tidemark_store::access::find_member_by_email(&db, &account, &email).await?
        else {
            return Ok(None);
        };
        tidemark_store::access::change_member(&db, &account, &member.user_id, change)
            .await
            .map(Some)
    })
    .await;
    match done {
        Ok(Ok(Some(Ok(())))) => Ok(()),
        Ok(Ok(None)) => crate::error::fail(DashboardError::NotFound),
        Ok(Ok(Some(Err(refused)))) => {
            crate::error::fail(DashboardError::Conflict(refused.to_string()))
        }
        Ok(Err(e)) => crate::error::unavailable(e),
        Err(e) => crate::error::unavailable(e),
    }
}

/// Configuring SAML needs the IdP metadata checked by the server's SAML code, which `app`
/// cannot depend on; the server provides this through the Leptos context.
#[cfg(feature = "ssr")]
pub trait SsoAdmin: Send + Sync {
    fn configure(
        &self,
        account_id: String,
        domain: String,
        metadata_xml: String,
        enforce: bool,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<SsoSummary, String>> + Send>>;

    fn remove(
        &self,
        account_id: String,
        domain: String,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send>>;
}

#[cfg(feature = "ssr")]
#[derive(Clone)]
pub struct SsoAdminHandle(pub std::sync::Arc<dyn SsoAdmin>);

/// Routes a domain's users to a SAML IdP (enterprise admins). Their sessions end.
#[server(endpoint = "configure_sso")]
pub async fn configure_sso(
    domain: String,
    metadata_xml: String,
    #[server(default)] enforce: bool,
) -> Result<SsoSummary, DashboardError> {
    let viewer = crate::members::require_admin()?;
    let Some(sso) = use_context::<SsoAdminHandle>() else {
        return crate::error::unavailable("no SSO administration in context");
    };
    match sso
        .0
        .configure(viewer.account_id, domain, metadata_xml, enforce)
        .await
    {
        Ok(summary) => Ok(summary),
        Err(refusal) => crate::error::fail(DashboardError::Invalid(refusal)),
    }
}

#[server(endpoint = "remove_sso")]
pub async fn remove_sso(domain: String) -> Result<(), DashboardError> {
    let viewer = crate::members::require_admin()?;
    let Some(sso) = use_context::<SsoAdminHandle>() else {
        return crate::error::unavailable("no SSO administration in context");
    };
    match sso.0.remove(viewer.account_id, domain).await {
        Ok(()) => Ok(()),
        Err(refusal) => crate::error::fail(DashboardError::Invalid(refusal)),
    }
}
