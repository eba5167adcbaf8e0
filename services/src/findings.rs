//! Tracked findings: a line's findings a page at a time, one finding, and a finding's page
//! (the finding on its branch, the scans that saw it, its triage history).

use tidemark_domain::Millis;
pub use tidemark_store::findings::{Sighting, TrackedQuery, TrackedRow, TriageEvent};
use tidemark_store::Db;
use tidemark_wire::ids::{AccountId, FindingId, ProjectId};

use crate::ServiceError;

pub struct FindingLife {
    pub project_label: String,
    pub row: TrackedRow,
    /// Newest first, at most `scans` of the branch's latest scans.
    pub seen: Vec<Sighting>,
    pub history: Vec<TriageEvent>,
}

pub async fn life(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
    finding_id: &FindingId,
    scans: i64,
) -> Result<FindingLife, ServiceError> {
    let project = crate::projects::find(db, account_id, project_id).await?;
    let row = tidemark_store::findings::find_tracked(db, account_id, project_id, finding_id)
        .await?
        .ok_or(ServiceError::NotFound)?;
    let seen = tidemark_store::findings::sightings(db, &row, scans).await?;
    let history = tidemark_store::findings::triage_history(db, &row.id).await?;
    Ok(FindingLife {
        project_label: project.label,
        row,
        seen,
        history,
    })
}

/// A page of the line's tracked findings as `query` asks, and the cursor of the next page
/// when there is one.
pub async fn page(
    db: &Db,
    line_id: &str,
    query: &TrackedQuery,
    now: Millis,
) -> Result<(Vec<TrackedRow>, Option<String>), ServiceError> {
    let limit = usize::try_from(query.limit).unwrap_or(0);
    // One more than asked says whether another page follows.
    let asked = TrackedQuery {
        limit: query.limit + 1,
        ..query.clone()
    };
    let mut rows = tidemark_store::findings::list_tracked(db, line_id, &asked, now).await?;
    let more = rows.len() > limit;
    rows.truncate(limit);
    let next = more
        .then(|| rows.last().map(|last| last.cursor().encode()))
        .flatten();
    Ok((rows, next))
}

/// The finding, or "not found" (another account's or project's findings find nothing too).
pub async fn find(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
    finding_id: &FindingId,
) -> Result<TrackedRow, ServiceError> {
    tidemark_store::findings::find_tracked(db, account_id, project_id, finding_id)
        .await?
        .ok_or(ServiceError::NotFound)
}
