//! A scan as its page reads it: the scan and the one before it on its line, its findings
//! (filtered, sorted, paged by key), what changed against another scan, its branch's triaged
//! findings, and the tracked finding behind each of its open rows.

use std::collections::{HashMap, HashSet};

use tidemark_domain::Millis;
use tidemark_store::dashboard::{self, PageStart, ScanRow};
pub use tidemark_store::dashboard::{
    FindingFilter, FindingRow, FindingSort, ScanDiff, SortDirection,
};
pub use tidemark_store::findings::{StateCounts, TrackedQuery, TrackedRow};
use tidemark_store::Db;
use tidemark_wire::ids::{AccountId, ProjectId, ScanId};

use crate::ServiceError;

/// The scan and the one before it on its line ("not found" for another account's).
pub async fn find(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
    scan_id: &ScanId,
) -> Result<(ScanRow, Option<ScanRow>), ServiceError> {
    dashboard::find_scan(db, account_id, project_id, scan_id)
        .await?
        .ok_or(ServiceError::NotFound)
}

/// The project's latest `n` scans on any line, newest first.
pub async fn recent(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
    n: i64,
) -> Result<Vec<ScanRow>, ServiceError> {
    Ok(dashboard::list_scans(db, account_id, project_id, None, 0, n).await?)
}

/// Where a page of findings starts: after or before a finding the pager named (by its
/// ordinal in the scan), else at the page's number.
pub struct PageAt {
    pub page: i64,
    pub after: Option<i64>,
    pub before: Option<i64>,
}

/// One page of the scan's findings, and what the scan holds in all.
pub struct FindingsPage {
    pub rows: Vec<FindingRow>,
    /// Findings matching the filter.
    pub total: i64,
    /// `(severity, status, count)` over the whole scan.
    pub counts: Vec<(String, String, i64)>,
    /// `(framework, severity, status, count)` over the whole scan.
    pub by_framework: Vec<(String, String, String, i64)>,
}

pub async fn findings_page(
    db: &Db,
    project_id: &ProjectId,
    scan: &ScanRow,
    filter: &FindingFilter,
    at: &PageAt,
    size: i64,
) -> Result<FindingsPage, ServiceError> {
    // A pager link's finding gone from the scan (or made up) falls back to the page's number.
    let anchor = match at.after.or(at.before) {
        Some(ordinal) if at.page > 0 => {
            dashboard::finding_key(db, project_id, scan.seq, ordinal).await?
        }
        _ => None,
    };
    let start = match anchor {
        Some(key) if at.after.is_some() => PageStart::After(key),
        Some(key) => PageStart::Before(key),
        None => PageStart::Offset(tidemark_domain::input::page_offset(at.page, size)),
    };
    let (rows, total) =
        dashboard::list_findings_from(db, project_id, scan.seq, filter, &start, size).await?;
    if rows.is_empty() && at.page > 0 {
        // A page past the end does not exist.
        return Err(ServiceError::NotFound);
    }
    Ok(FindingsPage {
        rows,
        total,
        counts: dashboard::finding_counts(db, project_id, scan.seq).await?,
        by_framework: dashboard::framework_counts(db, project_id, scan.seq, &scan.frameworks)
            .await?,
    })
}

/// What changed between the scan at `seq` and the one at `base_seq`, with up to `limit`
/// findings of each kind.
pub async fn diff(
    db: &Db,
    project_id: &ProjectId,
    seq: i64,
    base_seq: i64,
    limit: i64,
) -> Result<ScanDiff, ServiceError> {
    Ok(dashboard::diff_scans(db, project_id, seq, base_seq, limit).await?)
}

/// The line's findings in `query`'s state now, and the line's counts by state.
pub async fn tracked(
    db: &Db,
    line_id: &str,
    query: &TrackedQuery,
    now: Millis,
) -> Result<(Vec<TrackedRow>, StateCounts), ServiceError> {
    Ok((
        tidemark_store::findings::list_tracked(db, line_id, query, now).await?,
        tidemark_store::findings::state_counts(db, line_id, now).await?,
    ))
}

type Key = (String, String);

/// The tracked findings behind a scan's open rows (by rule and resource) on its line; for a
/// pull request's scan also which of them its base scan had open, and their life on the
/// base's line.
pub struct TrackedTags {
    pub tracked: HashMap<Key, TrackedRow>,
    pub in_base: Option<HashSet<Key>>,
    pub base_tracked: HashMap<Key, TrackedRow>,
}

pub async fn tracked_tags(
    db: &Db,
    project_id: &ProjectId,
    scan: &ScanRow,
    keys: &[(&str, &str)],
) -> Result<TrackedTags, ServiceError> {
    let Some(line) = &scan.line_id else {
        return Ok(TrackedTags {
            tracked: HashMap::new(),
            in_base: None,
            base_tracked: HashMap::new(),
        });
    };
    let tracked = tidemark_store::findings::tracked_for_keys(db, line, keys).await?;
    let (in_base, base_tracked) = match (scan.base_seq, &scan.base_line_id) {
        (Some(base_seq), Some(base_line)) => {
            let in_base = dashboard::open_among(db, project_id, base_seq, keys).await?;
            let inherited: Vec<(&str, &str)> = keys
                .iter()
                .copied()
                .filter(|(r, x)| in_base.contains(&((*r).to_owned(), (*x).to_owned())))
                .collect();
            let base_tracked =
                tidemark_store::findings::tracked_for_keys(db, base_line, &inherited).await?;
            (Some(in_base), base_tracked)
        }
        _ => (None, HashMap::new()),
    };
    Ok(TrackedTags {
        tracked,
        in_base,
        base_tracked,
    })
}
