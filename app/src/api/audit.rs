//! Settings → Audit log (admins only): who changed what in the account, when and from where.

use leptos::prelude::*;

use crate::error::DashboardError;
use crate::model::AuditPage;

/// Events per page.
pub const AUDIT_PAGE_SIZE: i64 = 50;

#[server(endpoint = "audit")]
pub async fn load_audit(
    #[server(default)] actor: Option<String>,
    #[server(default)] action: Option<String>,
    #[server(default)] page: i64,
) -> Result<AuditPage, DashboardError> {
    use super::ssr::*;
    use crate::model::AuditRow;
    use tidemark_domain::audit::Action;
    let viewer = crate::auth::require_admin()?;
    let db = db();
    // An unknown action is refused; an unknown actor simply matches nothing.
    let action = match action.as_deref().filter(|a| !a.is_empty()) {
        None => None,
        Some(name) => match Action::parse(name) {
            Some(action) => Some(action),
            None => return Err(DashboardError::Invalid(format!("No such action: {name}."))),
        },
    };
    let page = page.clamp(0, 1_000_000);
    let tidemark_services::audit::AuditPage {
        events,
        has_more,
        actors,
    } = tidemark_services::audit::account_page(
        &db,
        &viewer.account_id,
        actor.filter(|a| !a.is_empty()),
        action,
        page,
        AUDIT_PAGE_SIZE,
    )
    .await
    .or_else(crate::error::refused)?;
    Ok(AuditPage {
        rows: events
            .into_iter()
            .map(|e| AuditRow {
                at: tidemark_domain::to_rfc3339(e.at),
                action_label: Action::parse(&e.action)
                    .map_or_else(|| e.action.clone(), |a| a.label().to_owned()),
                actor: e.actor,
                client_ip: e.client_ip,
                action: e.action,
                target: human_target(e.target),
                before: e.before_summary,
                after: e.after_summary,
            })
            .collect(),
        has_more,
        actors,
        actions: Action::ALL
            .iter()
            .map(|a| (a.as_str().to_owned(), a.label().to_owned()))
            .collect(),
    })
}

/// What a change was made to, in words: a licence id means nothing to the people reading the
/// log (an account has one licence).
#[cfg(feature = "ssr")]
fn human_target(target: String) -> String {
    if target.starts_with("lcn_") {
        "this account's license".to_owned()
    } else {
        target
    }
}
