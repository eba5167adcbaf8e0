//! A project and its account's projects as the dashboard reads and changes them: the list and
//! its page, the overview, a project's score history, its scans, its quality gate, its default
//! branch, archiving.

use std::collections::HashMap;

use tidemark_domain::audit::AuditContext;
use tidemark_domain::gate::QualityGate;
use tidemark_domain::git::BranchName;
pub use tidemark_domain::project_order::{filter_needle, ProjectOrder};
use tidemark_domain::Millis;
use tidemark_store::branches::DefaultBranchChange;
use tidemark_store::dashboard::{self, ArchiveOutcome};
pub use tidemark_store::dashboard::{HistoryPoint, ProjectPage, ProjectRow, ScanRow};
pub use tidemark_store::findings::AccountFinding;
use tidemark_store::Db;
use tidemark_wire::ids::{AccountId, ProjectId};
use tidemark_wire::Severity;

use crate::ServiceError;

/// The project, or "not found" (another account's projects find nothing too).
pub async fn find(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
) -> Result<ProjectRow, ServiceError> {
    dashboard::find_project(db, account_id, project_id)
        .await?
        .ok_or(ServiceError::NotFound)
}

/// Every project of the account, with its recent scores.
pub async fn list(db: &Db, account_id: &AccountId) -> Result<Vec<ProjectRow>, ServiceError> {
    Ok(dashboard::list_projects(db, account_id).await?)
}

/// Every project's head (a row each, no recent scores): what a page of the list is chosen
/// from.
pub async fn heads(db: &Db, account_id: &AccountId) -> Result<Vec<ProjectRow>, ServiceError> {
    Ok(dashboard::list_project_heads(db, account_id).await?)
}

/// Page `page` (from 1; past the end: the last) of the account's projects in `order`, of
/// those whose name contains `filter` (as typed), with their recent scores: the database
/// chooses the page, so it costs what fifty projects cost however many there are.
pub async fn page(
    db: &Db,
    account_id: &AccountId,
    order: ProjectOrder,
    filter: &str,
    page: u32,
) -> Result<ProjectPage, ServiceError> {
    let needle = filter_needle(filter);
    Ok(dashboard::project_page(db, account_id, order, &needle, page).await?)
}

/// The projects of the same page as [`page`], without their recent scores or the counts.
pub async fn page_rows(
    db: &Db,
    account_id: &AccountId,
    order: ProjectOrder,
    filter: &str,
    page: u32,
) -> Result<Vec<ProjectRow>, ServiceError> {
    let needle = filter_needle(filter);
    Ok(dashboard::project_page_rows(db, account_id, order, &needle, page).await?)
}

/// The recent scores of the chosen rows (the page's sparklines), read for these rows only.
pub async fn fill_recent_scores(
    db: &Db,
    account_id: &AccountId,
    rows: &mut [ProjectRow],
) -> Result<(), ServiceError> {
    Ok(dashboard::fill_recent_scores(db, account_id, rows, true).await?)
}

/// Archives or unarchives the project; unarchiving needs a free slot under the license's cap.
pub async fn set_archived(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
    archived: bool,
    audit: &AuditContext,
) -> Result<(), ServiceError> {
    let license = tidemark_store::licenses::find_license_for_account(db, account_id).await?;
    let cap = license.and_then(|l| l.project_cap());
    let (account, project, audit) = (account_id.clone(), project_id.clone(), audit.clone());
    let outcome = db
        .detached(|db| async move {
            dashboard::set_archived(&db, &account, &project, archived, cap, &audit).await
        })
        .await?;
    match outcome {
        ArchiveOutcome::Done => Ok(()),
        ArchiveOutcome::NotFound => Err(ServiceError::NotFound),
        ArchiveOutcome::NoFreeSlot { cap } => Err(ServiceError::Conflict(format!(
            "Your plan allows {cap} active project(s): archive one before unarchiving this."
        ))),
    }
}

/// The account at a glance: projects whose latest default-branch scan failed its gate, the
/// oldest open criticals, and open findings by severity per day.
pub struct Overview {
    /// The first [`FAILING_SHOWN`] by name, and how many fail in all.
    pub failing: (Vec<(ProjectId, String, Vec<String>)>, u64),
    pub oldest_criticals: Vec<AccountFinding>,
    /// `(day start, [critical, high, medium, low])`, oldest first.
    pub open_by_day: Vec<(Millis, [i64; 4])>,
}

/// Failing projects the overview names; the rest it counts (the projects page, lowest
/// score first, lists them all).
pub const FAILING_SHOWN: i64 = 10;

pub async fn overview(
    db: &Db,
    account_id: &AccountId,
    days: usize,
    now: Millis,
) -> Result<Overview, ServiceError> {
    Ok(Overview {
        failing: dashboard::failing_projects(db, account_id, FAILING_SHOWN).await?,
        oldest_criticals: tidemark_store::findings::oldest_open(
            db,
            account_id,
            Severity::Critical,
            now,
            5,
        )
        .await?,
        // The push keeps a per-day roll-up: one row a day, however many projects.
        open_by_day: tidemark_store::rollups::open_by_day(db, account_id, days, now).await?,
    })
}

/// Open findings by severity for each of `projects`.
pub async fn open_counts(
    db: &Db,
    account_id: &AccountId,
    projects: &[ProjectId],
    now: Millis,
) -> Result<HashMap<ProjectId, [i64; 4]>, ServiceError> {
    Ok(tidemark_store::findings::open_counts_by_project(db, account_id, projects, now).await?)
}

/// A line's score history since `since`, reduced to about `buckets` scans per time bucket;
/// and how many scans the range holds.
pub async fn history(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
    line_id: &str,
    since: Option<Millis>,
    buckets: i64,
) -> Result<(Vec<HistoryPoint>, i64), ServiceError> {
    Ok(
        dashboard::project_history(db, account_id, project_id, Some(line_id), since, buckets)
            .await?,
    )
}

pub async fn gate(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
) -> Result<Option<QualityGate>, ServiceError> {
    Ok(tidemark_store::gates::project_gate(db, account_id, project_id).await?)
}

/// Sets (or with `None` removes) the project's quality gate; scans already pushed keep their
/// verdicts.
pub async fn set_gate(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
    gate: Option<QualityGate>,
    audit: &AuditContext,
) -> Result<(), ServiceError> {
    let (account, project, audit) = (account_id.clone(), project_id.clone(), audit.clone());
    let found = db
        .detached(|db| async move {
            tidemark_store::gates::set_project_gate(&db, &account, &project, gate.as_ref(), &audit)
                .await
        })
        .await?;
    found.then_some(()).ok_or(ServiceError::NotFound)
}

/// Makes `branch` the project's default: the projects list, badges and alerts follow it.
pub async fn set_default_branch(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
    branch: &BranchName,
    audit: &AuditContext,
) -> Result<(), ServiceError> {
    let (account, project, chosen, audit) = (
        account_id.clone(),
        project_id.clone(),
        branch.clone(),
        audit.clone(),
    );
    let changed = db
        .detached(|db| async move {
            tidemark_store::branches::set_default_branch(&db, &account, &project, &chosen, &audit)
                .await
        })
        .await?;
    match changed {
        DefaultBranchChange::Changed | DefaultBranchChange::Unchanged => Ok(()),
        DefaultBranchChange::NoProject => Err(ServiceError::NotFound),
        DefaultBranchChange::NoBranch => Err(ServiceError::Invalid(format!(
            "This project has no branch called {}: a branch exists once a scan of it is pushed.",
            branch.as_str()
        ))),
    }
}

/// A page of a line's scans, newest first, and whether more follow. A page past the end does
/// not exist; neither does the first page of an unknown project.
pub async fn scans_page(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
    line_id: &str,
    page: i64,
    size: i64,
) -> Result<(Vec<ScanRow>, bool), ServiceError> {
    let mut rows = dashboard::list_scans(
        db,
        account_id,
        project_id,
        Some(line_id),
        tidemark_domain::input::page_offset(page, size),
        size + 1,
    )
    .await?;
    if rows.is_empty()
        && (page > 0
            || dashboard::find_project(db, account_id, project_id)
                .await?
                .is_none())
    {
        return Err(ServiceError::NotFound);
    }
    let has_more = rows.len() as i64 > size;
    rows.truncate(size as usize);
    Ok((rows, has_more))
}

/// The project a `/v1` caller names by id or, for people and scripts that know it, by label;
/// "not found" for another account's, for a label no push could have made, and for a
/// project a keyless CI token's publisher may not use.
pub async fn named_by(
    db: &Db,
    owner: &tidemark_store::licenses::KeyOwner,
    project: &str,
) -> Result<ProjectId, ServiceError> {
    let account_id = &owner.license.account_id;
    let project_id = match ProjectId::parse(project) {
        Some(id) => id,
        None => {
            let max = tidemark_domain::push::MAX_LABEL_CHARS;
            if tidemark_domain::input::bounded_text("project", project, max).is_err() {
                return Err(ServiceError::NotFound);
            }
            dashboard::project_id_by_label(db, account_id, project)
                .await?
                .ok_or(ServiceError::NotFound)?
        }
    };
    if owner.limited_to_projects() {
        let found = dashboard::find_project(db, account_id, &project_id).await?;
        if !found.is_some_and(|p| owner.may_use_project(&p.label)) {
            return Err(ServiceError::NotFound);
        }
    }
    Ok(project_id)
}
