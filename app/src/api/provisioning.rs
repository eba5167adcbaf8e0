//! SCIM provisioning in Settings (admins only): what the section shows. Its changes (a token
//! made, rotated or revoked; a group marked as the admins' one) are plain form posts to the
//! server's `/settings/provisioning/change`, so the section ships no WASM.

use leptos::prelude::*;

use crate::error::DashboardError;
use crate::model::ProvisioningView;

#[server(endpoint = "provisioning")]
pub async fn load_provisioning() -> Result<ProvisioningView, DashboardError> {
    use super::ssr::*;
    use crate::model::{ScimGroupRow, ScimTokenView};
    let viewer = crate::auth::require_admin()?;
    let config = expect_context::<crate::DashboardConfig>();
    let account = &viewer.account_id;
    let db = db();
    let overview = tidemark_services::account::provisioning(&db, account)
        .await
        .or_else(crate::error::refused)?;
    let (enterprise, verified) = (overview.enterprise, overview.verified_domain);
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
    let (token, users, groups) = (overview.token, overview.users, overview.groups);
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
