//! A scan's page: its summary, its findings (filtered, searched, paged) and the diff against
//! the previous scan.

use leptos::prelude::*;

use crate::error::DashboardError;
#[cfg(feature = "ssr")]
use crate::model::PAGE_SIZE;
use crate::model::{DiffView, FindingQuery, FindingsPage, ScanView};

#[server(endpoint = "scan")]
pub async fn load_scan(project_id: String, scan_id: String) -> Result<ScanView, DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_viewer()?;
    let project_id = parse_project_id(&project_id)?;
    let scan_id = parse_scan_id(&scan_id)?;
    let db = db();
    let account = &viewer.account_id;
    let project = tidemark_services::projects::find(&db, account, &project_id)
        .await
        .or_else(crate::error::refused)?;
    let (found, previous) = tidemark_services::scans::find(&db, account, &project_id, &scan_id)
        .await
        .or_else(crate::error::refused)?;
    Ok(ScanView {
        project_id,
        project_label: project.label,
        previous_scan_id: previous.map(|p| p.scan_id),
        findings_removed: found.thinned,
        scan: scan(found),
    })
}

/// A thinned scan's findings are gone (`410`); its row stays.
#[cfg(feature = "ssr")]
fn thinned() -> DashboardError {
    DashboardError::Gone(tidemark_domain::housekeeping::THINNED_MESSAGE.to_owned())
}

#[server(endpoint = "scan_findings")]
pub async fn scan_findings(
    project_id: String,
    scan_id: String,
    query: FindingQuery,
) -> Result<FindingsPage, DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_viewer()?;
    let project_id = parse_project_id(&project_id)?;
    let scan_id = parse_scan_id(&scan_id)?;
    let db = db();
    let (found, _) = tidemark_services::scans::find(&db, &viewer.account_id, &project_id, &scan_id)
        .await
        .or_else(crate::error::refused)?;
    if found.thinned {
        return Err(thinned());
    }
    use tidemark_domain::input::query_text;
    use tidemark_services::scans::{FindingFilter, FindingSort, PageAt, SortDirection};
    let filter = FindingFilter {
        sort: query
            .sort
            .as_deref()
            .and_then(FindingSort::parse)
            .unwrap_or(FindingSort::Severity),
        direction: match query.dir.as_deref() {
            Some("desc") => SortDirection::Descending,
            _ => SortDirection::Ascending,
        },
        severity: query_text(query.severity, 16),
        status: query_text(query.status, 16),
        framework: query_text(query.framework, 128),
        text: query_text(query.text, 200),
    };
    let page = query.page.max(0);
    let at = PageAt {
        page,
        after: query.after,
        before: query.before,
    };
    let tidemark_services::scans::FindingsPage {
        rows,
        total,
        counts,
        by_framework,
    } = tidemark_services::scans::findings_page(&db, &project_id, &found, &filter, &at, PAGE_SIZE)
        .await
        .or_else(crate::error::refused)?;
    let (first, last) = (
        rows.first().map(|r| r.ordinal),
        rows.last().map(|r| r.ordinal),
    );
    let mut findings: Vec<_> = rows.into_iter().map(finding).collect();
    tag_tracked(&db, &project_id, &found, &mut findings).await?;
    Ok(FindingsPage {
        findings,
        total,
        page,
        page_size: PAGE_SIZE,
        first,
        last,
        counts,
        by_framework,
    })
}

/// The scan's findings compared with another scan of the project: for a pull request's scan
/// the base branch's scan it was judged against, otherwise the previous scan on its line; or
/// `base` (any scan of the project, older or newer) when given.
#[server(endpoint = "scan_diff")]
pub async fn scan_diff(
    project_id: String,
    scan_id: String,
    #[server(default)] base: Option<String>,
) -> Result<DiffView, DashboardError> {
    use super::ssr::*;
    use tidemark_services::scans::{find, recent};
    let viewer = crate::auth::require_viewer()?;
    let base = base.filter(|b| !b.is_empty() && *b != scan_id);
    let project_id = parse_project_id(&project_id)?;
    let scan_id = parse_scan_id(&scan_id)?;
    let base = base.as_deref().map(parse_scan_id).transpose()?;
    let db = db();
    let account = &viewer.account_id;
    let (found, previous) = find(&db, account, &project_id, &scan_id)
        .await
        .or_else(crate::error::refused)?;
    let recent = recent(&db, account, &project_id, 51)
        .await
        .or_else(crate::error::refused)?;
    let choices: Vec<_> = recent
        .into_iter()
        .map(|s| s.scan_id)
        .filter(|id| *id != scan_id)
        .take(50)
        .collect();
    let pr_base = match (&found.base_branch, &found.base_scan_id, found.base_seq) {
        (Some(branch), Some(scan), Some(_)) => Some((branch.clone(), scan.clone())),
        _ => None,
    };
    if found.thinned {
        return Err(thinned());
    }
    let base_seq = match &base {
        Some(b) => match find(&db, account, &project_id, b).await {
            Ok((chosen, _)) if chosen.thinned => return Err(thinned()),
            Ok((chosen, _)) => chosen.seq,
            Err(e) => return crate::error::refused(e),
        },
        None if pr_base.is_some() => found.base_seq.unwrap_or_default(),
        None => match previous {
            Some(p) => p.seq,
            None => {
                return Ok(DiffView {
                    pr_base,
                    choices,
                    ..DiffView::default()
                })
            }
        },
    };
    let diff = tidemark_services::scans::diff(&db, &project_id, found.seq, base_seq, 100)
        .await
        .or_else(crate::error::refused)?;
    let mut new: Vec<_> = diff.new.into_iter().map(finding).collect();
    tag_tracked(&db, &project_id, &found, &mut new).await?;
    Ok(DiffView {
        has_previous: true,
        pr_base,
        base_scan_id: base,
        choices,
        new,
        // Shown as what they are now: a fixed finding never reads FAIL.
        fixed: diff
            .fixed
            .into_iter()
            .map(|f| crate::model::FindingView {
                status: "FIXED".into(),
                ..finding(f)
            })
            .collect(),
        new_count: diff.new_count,
        fixed_count: diff.fixed_count,
        unchanged_count: diff.unchanged_count,
    })
}

/// The scan's branch's findings whose triage holds now (the Triaged tab).
#[server(endpoint = "scan_triaged")]
pub async fn scan_triaged(
    project_id: String,
    scan_id: String,
) -> Result<crate::model::TriagedView, DashboardError> {
    use super::ssr::*;
    use crate::model::{TriagedRow, TriagedView};
    use tidemark_services::scans::TrackedQuery;
    use tidemark_wire::findings::FindingState;
    let viewer = crate::auth::require_viewer()?;
    let project_id = parse_project_id(&project_id)?;
    let scan_id = parse_scan_id(&scan_id)?;
    let db = db();
    let (found, _) = tidemark_services::scans::find(&db, &viewer.account_id, &project_id, &scan_id)
        .await
        .or_else(crate::error::refused)?;
    let Some(line) = found.line_id else {
        return Ok(TriagedView::default());
    };
    let now = tidemark_domain::now_millis();
    let query = TrackedQuery {
        state: Some(FindingState::Triaged),
        limit: 100,
        ..TrackedQuery::default()
    };
    let (rows, counts) = tidemark_services::scans::tracked(&db, &line, &query, now)
        .await
        .or_else(crate::error::refused)?;
    Ok(TriagedView {
        total: counts.triaged,
        rows: rows
            .into_iter()
            .map(|r| {
                let state = r.triage_state().map(|s| s.label()).unwrap_or_default();
                let until = r
                    .triage_expires_at
                    .map(|at| format!(" until {}", crate::time::date(at)))
                    .unwrap_or_default();
                TriagedRow {
                    triage: format!("{state}{until}"),
                    reason: r.triage_reason.clone().unwrap_or_default(),
                    by: r.triaged_by.clone().unwrap_or_default(),
                    finding_id: r.id,
                    rule_id: r.rule_id,
                    resource: r.resource,
                    severity: r.severity,
                }
            })
            .collect(),
    })
}

/// Tags each open row of `scan` with its tracked finding on the scan's branch: a link to its
/// page, "new", its age, and its triage (one query per page).
///
/// A pull request's scan was judged against its base scan, so there "new" means not open in
/// that base scan, and a finding the base has too is as old as the base's line says.
#[cfg(feature = "ssr")]
async fn tag_tracked(
    db: &tidemark_services::Db,
    project: &tidemark_wire::ids::ProjectId,
    scan: &tidemark_services::projects::ScanRow,
    rows: &mut [crate::model::FindingView],
) -> Result<(), DashboardError> {
    use crate::model::FindingTag;
    if scan.line_id.is_none() {
        return Ok(());
    }
    let open = |status: &str| matches!(status, "FAIL" | "WARN" | "ERROR");
    let keys: Vec<(&str, &str)> = rows
        .iter()
        .filter(|r| open(&r.status))
        .map(|r| (r.rule_id.as_str(), r.resource.as_str()))
        .collect();
    // The base's open findings and their life on the base's line.
    let tidemark_services::scans::TrackedTags {
        tracked,
        in_base,
        base_tracked,
    } = tidemark_services::scans::tracked_tags(db, project, scan, &keys)
        .await
        .or_else(crate::error::refused)?;
    let base_name = scan.base_branch.clone().unwrap_or_default();
    let now = tidemark_domain::now_millis();
    for row in rows.iter_mut().filter(|r| open(&r.status)) {
        let key = (row.rule_id.clone(), row.resource.clone());
        let Some(t) = tracked.get(&key) else {
            continue;
        };
        let new_here = match &in_base {
            Some(base) => !base.contains(&key),
            None => t.first_seq == scan.seq,
        };
        let (first_at, on) = match base_tracked.get(&key) {
            Some(b) => (b.first_seen_at, format!(" on {base_name}")),
            None => (t.first_seen_at, String::new()),
        };
        row.tracked = Some(FindingTag {
            id: t.id.clone(),
            new_here,
            first_seen: format!("{}{on}", crate::time::ago(first_at, now)),
            first_seen_utc: crate::time::format_time(first_at),
            triage: t
                .triage_holds(now)
                .then(|| t.triage_state().map(|s| s.label().to_owned()))
                .flatten(),
        });
    }
    Ok(())
}
