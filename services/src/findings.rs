//! A tracked finding's page: the finding on its branch, the scans that saw it (its life) and
//! its triage history.

pub use tidemark_store::findings::{Sighting, TrackedRow, TriageEvent};
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
