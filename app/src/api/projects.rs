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
    let project_id = parse_project_id(&project_id)?;
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
        Ok(ArchiveOutcome::Done) => {
            back_to_form("set_archived");
            Ok(())
        }
        Ok(ArchiveOutcome::NotFound) => not_found(),
        Ok(ArchiveOutcome::NoFreeSlot { cap }) => Err(DashboardError::Conflict(format!(
            "Your plan allows {cap} active project(s): archive one before unarchiving this."
        ))),
        Err(err) => crate::error::unavailable(err),
    }
}

/// The projects page's glance: each project's verdict and open findings, and the overview.
#[server(endpoint = "projects_glance")]
pub async fn load_glance() -> Result<crate::model::ProjectsGlance, DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_viewer()?;
    let db = db();
    let account = &viewer.account_id;
    let now = tidemark_domain::now_millis();
    let rows = or_unavailable(tidemark_store::dashboard::list_projects(&db, account).await)?;
    let open =
        or_unavailable(tidemark_store::findings::open_counts_by_project(&db, account, now).await)?;
    let overview = overview(&db, account, &rows, now).await?;
    Ok(crate::model::ProjectsGlance {
        overview,
        projects: rows
            .into_iter()
            .map(|r| {
                let counts = open.get(&r.id).copied().unwrap_or_default();
                (r.id, r.gate, counts)
            })
            .collect(),
    })
}

/// Days the overview's chart covers.
#[cfg(feature = "ssr")]
const OVERVIEW_DAYS: usize = 90;

/// The account at a glance: failing projects, the oldest open criticals, and open findings by
/// severity per day across the default branches.
#[cfg(feature = "ssr")]
async fn overview(
    db: &tidemark_store::Db,
    account_id: &tidemark_wire::ids::AccountId,
    projects: &[tidemark_store::dashboard::ProjectRow],
    now: i64,
) -> Result<crate::model::AccountOverview, DashboardError> {
    use super::ssr::or_unavailable;
    use crate::model::{AccountOverview, OldFinding};
    let failing = projects
        .iter()
        .filter(|p| p.archived_at.is_none() && p.gate.status == tidemark_wire::GateStatus::Failed)
        .map(|p| (p.id.clone(), p.label.clone(), p.gate.reasons.clone()))
        .collect();
    let oldest = or_unavailable(
        tidemark_store::findings::oldest_open(
            db,
            account_id,
            tidemark_wire::Severity::Critical,
            now,
            5,
        )
        .await,
    )?;
    // The push keeps a per-day roll-up: one row a day, however many projects.
    let days = or_unavailable(
        tidemark_store::rollups::open_by_day(db, account_id, OVERVIEW_DAYS, now).await,
    )?;
    let severity_days = crate::chart::draw_severity_days(&days);
    Ok(AccountOverview {
        failing,
        oldest_criticals: oldest
            .into_iter()
            .map(|f| OldFinding {
                project_id: f.row.project_id.clone(),
                label: f.label,
                finding_id: f.row.id.clone(),
                rule_id: f.row.rule_id.clone(),
                resource: f.row.resource.clone(),
                age: format!("first seen {}", crate::time::ago(f.row.first_seen_at, now)),
            })
            .collect(),
        severity_days,
    })
}
