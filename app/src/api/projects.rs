//! The projects page: a page of the account's projects with their latest scores (and
//! Settings' list of them all), and archiving.

use leptos::prelude::*;

use crate::error::DashboardError;
#[cfg(feature = "ssr")]
use crate::model::ProjectCard;
use crate::model::ProjectsView;

/// One page of the projects list in the order and with the name filter the URL asks for:
/// `sort` (`ProjectSort`'s names; unknown: by name), `q` (part of a name), `page` (from 1;
/// past the end: the last).
#[server(endpoint = "projects_page")]
pub async fn projects_page(
    sort: String,
    q: String,
    page: u32,
) -> Result<ProjectsView, DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_viewer()?;
    let db = db();
    let account = &viewer.account_id;
    let (rows, paging, active) = ssr::page_rows(&db, account, &sort, &q, page).await?;
    let projects = rows.into_iter().map(card).collect();
    ssr::view(&db, &viewer, projects, active, Some(paging)).await
}

/// Every project of the account, for Settings' archiving list.
#[server(endpoint = "projects")]
pub async fn list_projects() -> Result<ProjectsView, DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_viewer()?;
    let db = db();
    let rows = tidemark_services::projects::list(&db, &viewer.account_id)
        .await
        .or_else(crate::error::refused)?;
    let projects: Vec<ProjectCard> = rows.into_iter().map(card).collect();
    let active = projects.iter().filter(|p| !p.archived).count() as u64;
    ssr::view(&db, &viewer, projects, active, None).await
}

/// Archives or unarchives a project (admins only). Unarchiving needs a free slot.
#[server(endpoint = "set_archived")]
pub async fn set_archived(project_id: String, archived: bool) -> Result<(), DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_admin()?;
    let project_id = parse_project_id(&project_id)?;
    tidemark_services::projects::set_archived(
        &db(),
        &viewer.account_id,
        &project_id,
        archived,
        &viewer.audit(),
    )
    .await
    .inspect(|_| back_to_form("set_archived"))
    .or_else(crate::error::refused)
}

/// The projects page's glance: the overview, and each project of the page (the same
/// arguments as [`projects_page`]) with its verdict and open findings.
#[server(endpoint = "projects_glance")]
pub async fn load_glance(
    sort: String,
    q: String,
    page: u32,
) -> Result<crate::model::ProjectsGlance, DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_viewer()?;
    let db = db();
    let account = &viewer.account_id;
    let now = tidemark_domain::now_millis();
    let rows = tidemark_services::projects::page_rows(&db, account, ssr::order(&sort), &q, page)
        .await
        .or_else(crate::error::refused)?;
    let ids: Vec<_> = rows.iter().map(|r| r.id.clone()).collect();
    let open = tidemark_services::projects::open_counts(&db, account, &ids, now)
        .await
        .or_else(crate::error::refused)?;
    let overview = overview(&db, account, now).await?;
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
    db: &tidemark_services::Db,
    account_id: &tidemark_wire::ids::AccountId,
    now: i64,
) -> Result<crate::model::AccountOverview, DashboardError> {
    use crate::model::{AccountOverview, OldFinding};
    let glance = tidemark_services::projects::overview(db, account_id, OVERVIEW_DAYS, now)
        .await
        .or_else(crate::error::refused)?;
    let severity_days = crate::chart::draw_severity_days(&glance.open_by_day);
    let (failing, failing_total) = glance.failing;
    Ok(AccountOverview {
        failing,
        failing_total,
        oldest_criticals: glance
            .oldest_criticals
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

#[cfg(feature = "ssr")]
mod ssr {
    use tidemark_services::projects::ProjectRow;
    use tidemark_wire::ids::AccountId;

    use crate::error::DashboardError;
    use crate::model::{Paging, ProjectCard, ProjectSort, ProjectsView};

    /// The projects list as both server functions answer it: these cards, with the plan's
    /// usage and what the viewer may do.
    pub async fn view(
        db: &tidemark_services::Db,
        viewer: &crate::auth::Viewer,
        projects: Vec<ProjectCard>,
        active: u64,
        paging: Option<Paging>,
    ) -> Result<ProjectsView, DashboardError> {
        use leptos::prelude::use_context;
        let license = tidemark_services::account::license(db, &viewer.account_id)
            .await
            .or_else(crate::error::refused)?;
        Ok(ProjectsView {
            active,
            paging,
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

    /// The order a URL's `sort` asks for (unknown: by name).
    pub fn order(sort: &str) -> tidemark_services::projects::ProjectOrder {
        use tidemark_services::projects::ProjectOrder;
        match ProjectSort::parse(sort) {
            ProjectSort::Name => ProjectOrder::Name,
            ProjectSort::Score => ProjectOrder::Score,
            ProjectSort::Change => ProjectOrder::Change,
            ProjectSort::LastScan => ProjectOrder::LastScan,
        }
    }

    /// The rows of one page of the account's projects (with their sparklines), where the page
    /// stands, and how many projects are active. The database chooses the page: only its
    /// projects are read.
    pub async fn page_rows(
        db: &tidemark_services::Db,
        account: &AccountId,
        sort: &str,
        q: &str,
        page: u32,
    ) -> Result<(Vec<ProjectRow>, Paging, u64), DashboardError> {
        let chosen = tidemark_services::projects::page(db, account, order(sort), q, page)
            .await
            .or_else(crate::error::refused)?;
        let paging = Paging {
            page: chosen.page,
            pages: chosen.pages,
            matching: chosen.matching,
            total: chosen.total,
        };
        Ok((chosen.rows, paging, chosen.active))
    }
}
