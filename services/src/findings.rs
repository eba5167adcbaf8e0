//! Tracked findings: a line's findings a page at a time, one finding, and a finding's page
//! (the finding on its branch, the scans that saw it, its triage history).

use tidemark_domain::Millis;
pub use tidemark_store::findings::inbox::{InboxQuery, InboxRow, Lines, TriageFilter};
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

/// A page of the account's findings inbox (across its live projects) and the cursor of the
/// next, if any.
pub async fn inbox(
    db: &Db,
    account_id: &AccountId,
    query: &tidemark_store::findings::inbox::InboxQuery,
    now: Millis,
) -> Result<
    (
        Vec<tidemark_store::findings::inbox::InboxRow>,
        Option<String>,
    ),
    ServiceError,
> {
    let limit = usize::try_from(query.limit).unwrap_or(0);
    // One more than asked says whether another page follows.
    let asked = tidemark_store::findings::inbox::InboxQuery {
        limit: query.limit + 1,
        ..query.clone()
    };
    let mut rows = tidemark_store::findings::inbox::list_inbox(db, account_id, &asked, now).await?;
    let more = rows.len() > limit;
    rows.truncate(limit);
    let next = more
        .then(|| rows.last().map(|last| last.finding.cursor().encode()))
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

/// The member's saved inbox views in the account, by name.
pub async fn saved_views(
    db: &Db,
    account_id: &AccountId,
    user_id: &str,
) -> Result<Vec<tidemark_store::saved_views::SavedView>, ServiceError> {
    Ok(tidemark_store::saved_views::list_views(db, account_id, user_id).await?)
}

/// Saves the inbox's `query` under `name` for the member: a name of 1 to 80 characters, a
/// query of at most 2,000; at most 50 views each.
pub async fn save_view(
    db: &Db,
    account_id: &AccountId,
    user_id: &str,
    name: &str,
    query: &str,
    now: Millis,
) -> Result<(), ServiceError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(ServiceError::Invalid(
            "Name the view (e.g. \"Critical on prod\").".into(),
        ));
    }
    tidemark_domain::input::bounded_text("name", name, 80)
        .map_err(|e| ServiceError::Invalid(e.message))?;
    let query = query.trim_start_matches('?');
    tidemark_domain::input::bounded_text("query", query, 2_000)
        .or_else(|e| if query.is_empty() { Ok(()) } else { Err(e) })
        .map_err(|e| ServiceError::Invalid(e.message))?;
    let (account, user, name, query) = (
        account_id.clone(),
        user_id.to_owned(),
        name.to_owned(),
        query.to_owned(),
    );
    let saved = db
        .detached(move |db| async move {
            tidemark_store::saved_views::save_view(&db, &account, &user, &name, &query, now).await
        })
        .await?;
    saved.then_some(()).ok_or_else(|| {
        ServiceError::Conflict(format!(
            "You keep {} views already: remove one first.",
            tidemark_store::saved_views::MAX_VIEWS
        ))
    })
}

pub async fn delete_view(
    db: &Db,
    account_id: &AccountId,
    user_id: &str,
    id: &str,
) -> Result<(), ServiceError> {
    let (account, user, id) = (account_id.clone(), user_id.to_owned(), id.to_owned());
    let deleted = db
        .detached(move |db| async move {
            tidemark_store::saved_views::delete_view(&db, &account, &user, &id).await
        })
        .await?;
    deleted.then_some(()).ok_or(ServiceError::NotFound)
}

/// Rows an inbox CSV holds at most.
pub const INBOX_CSV_MAX_ROWS: usize = 10_000;

/// The inbox's view as a CSV file (every page, up to [`INBOX_CSV_MAX_ROWS`] rows).
pub async fn inbox_csv(
    db: &Db,
    account_id: &AccountId,
    query: &tidemark_store::findings::inbox::InboxQuery,
    now: Millis,
) -> Result<crate::exports::File, ServiceError> {
    let mut rows = Vec::new();
    let mut q = tidemark_store::findings::inbox::InboxQuery {
        limit: 500,
        after: None,
        ..query.clone()
    };
    loop {
        let (page, next) = inbox(db, account_id, &q, now).await?;
        rows.extend(page);
        match next.and_then(|c| tidemark_domain::findings::FindingsCursor::parse(&c)) {
            Some(after) if rows.len() < INBOX_CSV_MAX_ROWS => q.after = Some(after),
            _ => break,
        }
    }
    rows.truncate(INBOX_CSV_MAX_ROWS);
    Ok(crate::exports::File::new(
        "text/csv; charset=utf-8",
        "findings.csv".to_owned(),
        crate::exports::csv::inbox_csv(&rows, now),
    ))
}

/// The project of each of the account's findings named (others are left out).
pub async fn projects_of(
    db: &Db,
    account_id: &AccountId,
    ids: &[FindingId],
) -> Result<Vec<(FindingId, ProjectId)>, ServiceError> {
    Ok(tidemark_store::findings::inbox::projects_of(db, account_id, ids).await?)
}
