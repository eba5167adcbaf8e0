//! SCIM provisioning in Settings (admins only): the account's SCIM token (made, rotated,
//! revoked), and which of the groups the identity provider pushed gives the admin role.

use leptos::prelude::*;

use crate::error::DashboardError;
use crate::model::ProvisioningView;

#[server(endpoint = "provisioning")]
pub async fn load_provisioning() -> Result<ProvisioningView, DashboardError> {
    use super::ssr::*;
    use crate::model::{ScimGroupRow, ScimTokenView};
    use tidemark_domain::sso::ClaimState;
    let viewer = crate::auth::require_admin()?;
    let config = expect_context::<crate::DashboardConfig>();
    let account = viewer.account_id.as_str();
    let db = db();
    let license =
        or_unavailable(tidemark_store::licenses::find_license_for_account(&db, account).await)?;
    let claims = or_unavailable(tidemark_store::sso::list_connections(&db, Some(account)).await)?;
    let enterprise = license.is_some_and(|l| tidemark_domain::tier::allows_sso(l.tier));
    let verified = claims.iter().any(|c| c.state == ClaimState::Verified);
    let unavailable = if !enterprise {
        Some("SCIM provisioning is part of the enterprise tier.".to_owned())
    } else if !verified {
        Some(
            "SCIM provisioning opens once a single sign-on domain is verified (Settings → Single \
             sign-on)."
                .to_owned(),
        )
    } else {
        None
    };
    let token = or_unavailable(tidemark_store::scim::token_info(&db, account).await)?;
    let users = or_unavailable(tidemark_store::scim::list_users(&db, account).await)?;
    let groups = or_unavailable(tidemark_store::scim::list_groups(&db, account, true).await)?;
    let fmt = crate::time::format_time;
    Ok(ProvisioningView {
        unavailable,
        scim_url: format!("{}/scim/v2", config.base_url.trim_end_matches('/')),
        token: token.map(|t| ScimTokenView {
            prefix: t.prefix,
            created_at: fmt(t.created_at),
            last_used_at: t.last_used_at.map(fmt),
        }),
        people: users.len() as u64,
        active_people: users
            .iter()
            .filter(|u| u.record.is_active() && u.user_id.is_some())
            .count() as u64,
        groups: groups
            .into_iter()
            .map(|g| ScimGroupRow {
                id: g.id,
                name: g.record.display_name,
                members: g.members.len() as u64,
                grants_admin: g.grants_admin,
            })
            .collect(),
    })
}

/// Makes the account a new SCIM token and returns it (shown once); the previous one stops
/// working at once.
#[server(endpoint = "scim/token")]
pub async fn create_scim_token() -> Result<String, DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_admin()?;
    let token = tidemark_domain::secrets::ScimToken::generate();
    let (hash, prefix) = (token.hash(), token.display_prefix());
    let (account, audit) = (viewer.account_id.clone(), viewer.audit());
    or_unavailable(
        db().detached(|db| async move {
            tidemark_store::scim::set_token(&db, &account, &hash, &prefix, &audit).await
        })
        .await,
    )?;
    Ok(token.expose().to_owned())
}

#[server(endpoint = "scim/revoke")]
pub async fn revoke_scim_token() -> Result<(), DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_admin()?;
    let (account, audit) = (viewer.account_id.clone(), viewer.audit());
    let revoked = or_unavailable(
        db().detached(|db| async move {
            tidemark_store::scim::revoke_token(&db, &account, &audit).await
        })
        .await,
    )?;
    if revoked {
        Ok(())
    } else {
        not_found()
    }
}

/// Marks a provisioned group as giving (or no longer giving) the admin role; refused when it
/// would leave the account without an admin.
#[server(endpoint = "scim/group_admin")]
pub async fn set_admin_group(group_id: String, admin: bool) -> Result<(), DashboardError> {
    use super::ssr::*;
    use tidemark_store::scim::Refusal;
    let viewer = crate::auth::require_admin()?;
    let (account, audit) = (viewer.account_id.clone(), viewer.audit());
    let outcome = or_unavailable(
        db().detached(|db| async move {
            tidemark_store::scim::set_group_admin(&db, &account, &group_id, admin, &audit).await
        })
        .await,
    )?;
    match outcome {
        Ok(()) => Ok(()),
        Err(Refusal::NotFound) => not_found(),
        Err(Refusal::LastAdmin(reason)) => {
            Err(DashboardError::Conflict(format!("Not changed: {reason}.")))
        }
        Err(Refusal::Scim(e)) => Err(DashboardError::Invalid(e.detail)),
    }
}
