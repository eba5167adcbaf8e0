//! Status badges in Settings: each active project's badge Markdown for a README; admins make a
//! new token (the old one stops working) or revoke it.

use leptos::prelude::*;

use crate::error::DashboardError;
use crate::model::BadgesView;

#[server(endpoint = "badges")]
pub async fn load_badges() -> Result<BadgesView, DashboardError> {
    use super::ssr::*;
    use crate::model::BadgeRow;
    let viewer = crate::auth::require_viewer()?;
    let config = expect_context::<crate::DashboardConfig>();
    let rows = tidemark_services::badges::list(&db(), &viewer.account_id)
        .await
        .or_else(crate::error::refused)?;
    Ok(BadgesView {
        is_admin: viewer.is_admin,
        rows: rows
            .into_iter()
            .map(|b| {
                let token = b.token.map(|t| t.as_str().to_owned());
                BadgeRow {
                    markdown: token.as_ref().map(|t| {
                        format!(
                            "[![Tidemark: {}]({}/badge/{t}.svg)]({}/projects/{})",
                            b.label.replace(['[', ']'], ""),
                            config.base_url,
                            config.dashboard_url,
                            b.project_id
                        )
                    }),
                    image: token.map(|t| format!("/badge/{t}.svg")),
                    project_id: b.project_id,
                    label: b.label,
                }
            })
            .collect(),
    })
}

/// Makes a new badge token for the project (admins only); a previous one stops working.
#[server(endpoint = "issue_badge")]
pub async fn issue_badge(project_id: String) -> Result<(), DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_admin()?;
    let project_id = parse_project_id(&project_id)?;
    tidemark_services::badges::issue(&db(), &viewer.account_id, &project_id, &viewer.audit())
        .await
        .inspect(|_| back_to_form("issue_badge"))
        .or_else(crate::error::refused)
}

/// Revokes the project's badge token (admins only): the badge then reads "unknown badge".
#[server(endpoint = "revoke_badge")]
pub async fn revoke_badge(project_id: String) -> Result<(), DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_admin()?;
    let project_id = parse_project_id(&project_id)?;
    tidemark_services::badges::revoke(&db(), &viewer.account_id, &project_id, &viewer.audit())
        .await
        .inspect(|_| back_to_form("revoke_badge"))
        .or_else(crate::error::refused)
}
