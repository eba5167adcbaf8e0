//! Triage: setting findings aside (accepted risk, false positive, won't fix) or undoing it,
//! from `/v1` (an API key) and the dashboard's forms (a member or an admin), by one path.

use tidemark_domain::access::Role;
use tidemark_domain::audit::AuditContext;
use tidemark_domain::findings::{may_triage, TriageChange};
use tidemark_domain::now_millis;
pub use tidemark_store::findings::{TrackedRow, TriageEach};
use tidemark_store::Db;
use tidemark_wire::ids::{AccountId, FindingId, ProjectId};

use crate::ServiceError;

/// Who triages, which decides what they may replace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Triager {
    /// Someone signed in to the dashboard: a member may not replace or undo a triage that
    /// holds (`domain::findings::may_triage`).
    Person(Role),
    /// An API key, which acts for the whole account.
    ApiKey,
}

impl Triager {
    pub fn may(self, row: &TrackedRow, now: tidemark_domain::Millis, undo: bool) -> bool {
        match self {
            Triager::ApiKey => true,
            Triager::Person(role) => may_triage(role, row.triage_holds(now), undo),
        }
    }
}

/// Triages each finding (`Some`) or undoes its triage (`None`) in one transaction, with its
/// history rows and audit events; says for each whether it was done, refused (left as it
/// was) or not found.
pub async fn set_many(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
    finding_ids: Vec<FindingId>,
    change: Option<TriageChange>,
    who: Triager,
    audit: &AuditContext,
) -> Result<Vec<(FindingId, TriageEach)>, ServiceError> {
    let (account, project, audit) = (account_id.clone(), project_id.clone(), audit.clone());
    let (now, undo) = (now_millis(), change.is_none());
    let each = db
        .detached(move |db| async move {
            tidemark_store::findings::set_triage_many(
                &db,
                &account,
                &project,
                &finding_ids,
                change.as_ref(),
                &audit,
                |row| who.may(row, now, undo),
            )
            .await
        })
        .await?;
    Ok(each)
}

/// One finding's triage: the finding as it is now, "not found", or a conflict when `who` may
/// not change it.
pub async fn set_one(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
    finding_id: &FindingId,
    change: Option<TriageChange>,
    who: Triager,
    audit: &AuditContext,
) -> Result<TrackedRow, ServiceError> {
    let each = set_many(
        db,
        account_id,
        project_id,
        vec![finding_id.clone()],
        change,
        who,
        audit,
    )
    .await?;
    match each.into_iter().next().map(|(_, outcome)| outcome) {
        Some(TriageEach::Done(row)) => Ok(*row),
        Some(TriageEach::Refused(_)) => Err(ServiceError::Conflict(
            "Only an admin may replace or undo a triage that still holds.".to_owned(),
        )),
        Some(TriageEach::NotFound) | None => Err(ServiceError::NotFound),
    }
}
