//! Settings: the license, API keys (make a named one, rotate all, revoke one), members, archived projects and
//! single sign-on. Admins change things; members read. Every change is checked here.

use leptos::prelude::*;

use crate::error::DashboardError;
#[cfg(feature = "ssr")]
use crate::model::{KeyView, LicenseView, MachineView, SeatsView, SsoState};
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
impl From<tidemark_services::members::Member> for MemberSummary {
    fn from(m: tidemark_services::members::Member) -> Self {
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
impl From<tidemark_services::sso::SsoConnection> for SsoSummary {
    fn from(c: tidemark_services::sso::SsoConnection) -> Self {
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
    let viewer = crate::auth::require_viewer()?;
    let services = expect_context::<tidemark_services::Services>();
    let fmt = crate::time::format_time;
    let overview =
        match tidemark_services::account::settings(services.db(), &viewer.account_id).await {
            Ok(overview) => overview,
            Err(e) => return crate::error::refused(e),
        };
    let now = tidemark_domain::now_millis();
    let license = overview.license.as_ref().map(|l| LicenseView {
        tier: l.tier.as_str().to_owned(),
        state: l.state(now).as_str().to_owned(),
        features: l.features().iter().map(|f| f.label().to_owned()).collect(),
        expires_at: fmt(l.expires_at),
        projects_used: overview.active_projects,
        project_cap: l.project_cap(),
    });
    let seats = match &overview.license {
        Some(l) => match tidemark_services::seats::list(services.db(), &l.id).await {
            Ok(rows) => rows,
            Err(e) => return crate::error::refused(e),
        },
        None => Vec::new(),
    };
    let seats = SeatsView {
        machines: seats
            .into_iter()
            .filter(|m| m.released_at.is_none())
            .map(|m| MachineView {
                fingerprint: m.machine_key.strip_prefix("fp:").map(str::to_owned),
                id: m.id,
                name: m.name,
                activated_at: fmt(m.activated_at),
                last_seen_at: fmt(m.last_seen_at),
                live_keys: m.live_keys,
                offline_until: m.offline_until.map(fmt),
            })
            .collect(),
        max_machines: overview.license.as_ref().and_then(|l| l.max_machines),
        release_after_days: expect_context::<crate::DashboardConfig>().seat_release_after_days,
    };
    let (keys, members, sso, managed) = (
        overview.keys,
        overview.members,
        overview.sso,
        overview.managed,
    );
    Ok(SettingsView {
        is_admin: viewer.is_admin,
        viewer_email: viewer.email,
        license,
        keys: keys
            .into_iter()
            .map(|k| KeyView {
                expired: tidemark_domain::api_keys::check_expiry(k.expires_at, now).is_err(),
                id: k.id,
                prefix: k.prefix,
                machine: k.machine,
                created_at: fmt(k.created_at),
                last_used_at: k.last_used_at.map(fmt),
                expires_at: k.expires_at.map(fmt),
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
        seats,
    })
}

/// Frees a machine's seat: its API keys stop working at once, and another machine may
/// activate.
#[server(endpoint = "release_machine")]
pub async fn release_machine(machine_id: String) -> Result<(), DashboardError> {
    let viewer = crate::auth::require_admin()?;
    let services = expect_context::<tidemark_services::Services>();
    tidemark_services::seats::release_for_account(
        services.db(),
        &viewer.account_id,
        &machine_id,
        &viewer.audit(),
    )
    .await
    .inspect(|_| crate::api::ssr::back_to_form("release_machine"))
    .or_else(crate::error::refused)
}

/// Revokes every key of the account at once and returns the one new key (shown once).
#[server(endpoint = "rotate_keys")]
pub async fn rotate_keys() -> Result<String, DashboardError> {
    let viewer = crate::auth::require_admin()?;
    let services = expect_context::<tidemark_services::Services>();
    let rotated = tidemark_services::api_keys::rotate(
        services.db(),
        &viewer.account_id,
        "dashboard rotation",
        &viewer.audit(),
    )
    .await;
    match rotated {
        Ok(rotated) => Ok(rotated.key.expose().to_owned()),
        Err(e) => crate::error::refused(e),
    }
}

/// Makes a named key beside the others (none stops working), with an expiry in days if one
/// is chosen, and returns it (shown once, as Rotate Key's is).
#[server(endpoint = "create_key")]
pub async fn create_key(
    name: String,
    #[server(default)] expires_in_days: String,
) -> Result<String, DashboardError> {
    use tidemark_domain::api_keys::{expiry_after_days, KeyName};
    let viewer = crate::auth::require_admin()?;
    let invalid = |e: tidemark_domain::input::FieldError| DashboardError::Invalid(e.message);
    let name = KeyName::parse(&name).map_err(invalid)?;
    let days = match expires_in_days.trim() {
        "" | "never" => None,
        text => Some(text.parse::<u32>().unwrap_or(0)),
    };
    let audit = viewer.audit();
    let expires_at = expiry_after_days(days, audit.at).map_err(invalid)?;
    let services = expect_context::<tidemark_services::Services>();
    tidemark_services::api_keys::create_named(
        services.db(),
        &viewer.account_id,
        &name,
        expires_at,
        &audit,
    )
    .await
    .map(|key| key.expose().to_owned())
    .or_else(crate::error::refused)
}

#[server(endpoint = "revoke_key")]
pub async fn revoke_key(key_id: String) -> Result<(), DashboardError> {
    let viewer = crate::auth::require_admin()?;
    let services = expect_context::<tidemark_services::Services>();
    tidemark_services::api_keys::revoke(services.db(), &viewer.account_id, &key_id, &viewer.audit())
        .await
        .inspect(|_| crate::api::ssr::back_to_form("revoke_key"))
        .or_else(crate::error::refused)
}

/// Makes a member an admin or a member, or removes them (which ends their sessions here).
#[server(endpoint = "change_member")]
pub async fn change_member(email: String, action: MemberAction) -> Result<(), DashboardError> {
    use tidemark_domain::access::Role;
    let viewer = crate::auth::require_admin()?;
    let change = match action {
        MemberAction::MakeAdmin => Some(Role::Admin),
        MemberAction::MakeMember => Some(Role::Member),
        MemberAction::Remove => None,
    };
    let email = parse_email(&email)?;
    let services = expect_context::<tidemark_services::Services>();
    tidemark_services::members::change(
        services.db(),
        &viewer.account_id,
        &email,
        change,
        &viewer.audit(),
    )
    .await
    .inspect(|_| crate::api::ssr::back_to_form("change_member"))
    .or_else(crate::error::refused)
}

#[cfg(feature = "ssr")]
fn parse_email(text: &str) -> Result<tidemark_domain::text::Email, DashboardError> {
    tidemark_domain::text::Email::parse(text)
        .map_err(|_| DashboardError::Invalid("Enter a valid e-mail address.".into()))
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
    let request = tidemark_services::sso::ClaimRequest {
        account_id: &viewer.account_id,
        domain: &domain,
        metadata_xml: &metadata_xml,
        enforce,
    };
    expect_context::<tidemark_services::Services>()
        .claim_sso(&request, &viewer.audit())
        .await
        .map(SsoSummary::from)
        .inspect(|_| crate::api::ssr::back_to_form("configure_sso"))
        .or_else(crate::error::refused)
}

/// "Verify now": looks the claim's DNS record up at once.
#[server(endpoint = "verify_sso")]
pub async fn verify_sso(domain: String) -> Result<SsoSummary, DashboardError> {
    let viewer = crate::auth::require_admin()?;
    expect_context::<tidemark_services::Services>()
        .verify_sso(&viewer.account_id, &domain, &viewer.audit())
        .await
        .map(SsoSummary::from)
        .inspect(|_| crate::api::ssr::back_to_form("verify_sso"))
        .or_else(crate::error::refused)
}

#[server(endpoint = "remove_sso")]
pub async fn remove_sso(domain: String) -> Result<(), DashboardError> {
    let viewer = crate::auth::require_admin()?;
    expect_context::<tidemark_services::Services>()
        .remove_sso(&viewer.account_id, &domain, &viewer.audit())
        .await
        .inspect(|_| crate::api::ssr::back_to_form("remove_sso"))
        .or_else(crate::error::refused)
}

/// Adds a person to the viewer's account (admins only).
#[server(endpoint = "members/add")]
pub async fn add_member(
    email: String,
    #[server(default)] admin: bool,
) -> Result<MemberSummary, DashboardError> {
    use tidemark_domain::access::Role;
    let viewer = crate::auth::require_admin()?;
    let email = parse_email(&email)?;
    let role = if admin { Role::Admin } else { Role::Member };
    let services = expect_context::<tidemark_services::Services>();
    tidemark_services::members::add(
        services.db(),
        &viewer.account_id,
        &email,
        role,
        &viewer.audit(),
    )
    .await
    .map(MemberSummary::from)
    .inspect(|_| crate::api::ssr::back_to_form("members/add"))
    .or_else(crate::error::refused)
}
