//! The projects page: every project with its latest score, and archiving.

use leptos::prelude::*;

use crate::error::DashboardError;
#[cfg(feature = "ssr")]
use crate::model::ProjectCard;
use crate::model::ProjectsView;

#[server(endpoint = "projects")]
pub async fn list_projects() -> Result<ProjectsView, DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_viewer()?;
    let db = db();
    let rows =
        or_unavailable(tidemark_store::dashboard::list_projects(&db, &viewer.account_id).await)?;
    let license = or_unavailable(
        tidemark_store::licenses::find_license_for_account(&db, &viewer.account_id).await,
    )?;
    let projects: Vec<ProjectCard> = rows.into_iter().map(card).collect();
    Ok(ProjectsView {
        active: projects.iter().filter(|p| !p.archived).count() as u64,
        cap: license.as_ref().and_then(|l| l.project_cap()),
        tier: license
            .map(|l| l.tier.as_str().to_owned())
            .unwrap_or_default(),
        is_admin: viewer.is_admin,
        base_url: use_context::<crate::DashboardConfig>()
            .map(|c| c.base_url)
            .unwrap_or_default(),
        projects,
    })
}

/// Archives or unarchives a project (admins only). Unarchiving needs a free slot.
#[server(endpoint = "set_archived")]
pub async fn set_archived(project_id: String, archived: bool) -> Result<(), DashboardError> {
    use super::ssr::*;
    use tidemark_store::dashboard::ArchiveOutcome;
    let viewer = crate::auth::require_admin()?;
    well_formed(&project_id, None)?;
    let db = db();
    let license = or_unavailable(
        tidemark_store::licenses::find_license_for_account(&db, &viewer.account_id).await,
    )?;
    let cap = license.and_then(|l| l.project_cap());
    let (account, audit) = (viewer.account_id.clone(), viewer.audit());
    let outcome = db
        .detached(|db| async move {
            tidemark_store::dashboard::set_archived(
                &db,
                &account,
                &project_id,
                archived,
                cap,
                &audit,
            )
            .await
        })
        .await;
    match outcome {
        Ok(ArchiveOutcome::Done) => Ok(()),
        Ok(ArchiveOutcome::NotFound) => not_found(),
        Ok(ArchiveOutcome::NoFreeSlot { cap }) => Err(DashboardError::Conflict(format!(
            "Your plan allows {cap} active project(s): archive one before unarchiving this."
        ))),
        Err(err) => crate::error::unavailable(err),
    }
}
