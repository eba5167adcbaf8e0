//! The dashboard's data: shared types and the server functions behind every page. Each
//! function takes the account from the signed-in viewer, never from the browser, so another
//! account's ids find nothing ("not found").

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::DashboardError;

/// Rows per page of the scans and findings tables.
pub const PAGE_SIZE: i64 = 50;
/// The most points a chart draws.
pub const CHART_POINTS: usize = 400;
/// Time buckets the database reduces a history to (up to four scans each) before LTTB.
pub const HISTORY_BUCKETS: i64 = 500;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectCard {
    pub id: String,
    pub label: String,
    pub archived: bool,
    pub scan_count: i64,
    pub last_score: Option<f64>,
    pub last_delta: Option<f64>,
    pub last_scan_id: Option<String>,
    /// "2026-11-22 06:43 UTC".
    pub last_scanned_at: Option<String>,
    pub recent_scores: Vec<f64>,
    /// The recent scores drawn as a small SVG line.
    pub sparkline_svg: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectsView {
    pub projects: Vec<ProjectCard>,
    pub active: u64,
    /// `None`: unlimited.
    pub cap: Option<u64>,
    pub tier: String,
    pub is_admin: bool,
    pub base_url: String,
}

/// Which part of a history the chart shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Range {
    Week,
    Month,
    Quarter,
    All,
}

impl Range {
    pub const ALL: [Range; 4] = [Range::Week, Range::Month, Range::Quarter, Range::All];

    pub fn as_str(self) -> &'static str {
        match self {
            Range::Week => "7d",
            Range::Month => "30d",
            Range::Quarter => "90d",
            Range::All => "all",
        }
    }

    pub fn parse(raw: &str) -> Range {
        match raw {
            "7d" => Range::Week,
            "30d" => Range::Month,
            "all" => Range::All,
            _ => Range::Quarter,
        }
    }

    pub fn days(self) -> Option<i64> {
        match self {
            Range::Week => Some(7),
            Range::Month => Some(30),
            Range::Quarter => Some(90),
            Range::All => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChartPoint {
    pub scan_id: String,
    /// Unix milliseconds.
    pub at: i64,
    pub score: f64,
    /// critical, high, medium, low
    pub severities: [i64; 4],
}

/// Size of the history chart, in SVG pixels.
pub const WIDTH: u32 = 880;
pub const HEIGHT: u32 = 320;
pub const SEVERITY_COLOURS: [&str; 4] = ["#c62828", "#ef6c00", "#f9a825", "#1e88e5"];

/// A history drawn on the server: the SVG markup and where each point landed, in pixels.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HistoryDrawing {
    pub svg: String,
    pub dots: Vec<(i32, i32)>,
    /// Pixel y of the score grid lines 0, 25, 50, 75, 100.
    pub grid: Vec<(i32, u32)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectChart {
    pub project: ProjectCard,
    pub range: Range,
    /// Scans in the range before downsampling.
    pub scans_in_range: usize,
    pub points: Vec<ChartPoint>,
    pub drawing: HistoryDrawing,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScanSummary {
    pub scan_id: String,
    pub score: f64,
    pub score_delta: f64,
    pub passed: i64,
    pub failed: i64,
    pub severities: [i64; 4],
    pub cloud: String,
    pub cloud_account_id: String,
    pub frameworks: Vec<String>,
    pub state_source: String,
    pub scanned_at: String,
    pub finding_count: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScansPage {
    pub scans: Vec<ScanSummary>,
    pub page: i64,
    pub has_more: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScanView {
    pub project_id: String,
    pub project_label: String,
    pub scan: ScanSummary,
    pub previous_scan_id: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingQuery {
    pub severity: Option<String>,
    pub status: Option<String>,
    pub framework: Option<String>,
    pub text: Option<String>,
    pub page: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingView {
    pub rule_id: String,
    pub resource: String,
    pub status: String,
    pub severity: String,
    pub message: String,
    pub remediation: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingsPage {
    pub findings: Vec<FindingView>,
    pub total: i64,
    pub page: i64,
    pub page_size: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffView {
    pub has_previous: bool,
    pub new: Vec<FindingView>,
    pub fixed: Vec<FindingView>,
    pub new_count: i64,
    pub fixed_count: i64,
    pub unchanged_count: i64,
}

/// On the server: "2026-11-22 06:43 UTC".
#[cfg(feature = "ssr")]
pub fn format_time_ssr(ms: i64) -> String {
    server::format_time(ms)
}

#[cfg(feature = "ssr")]
mod server {
    use super::*;
    use tidemark_store::dashboard as store;

    pub fn format_time(ms: i64) -> String {
        chrono::DateTime::from_timestamp_millis(ms)
            .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
            .unwrap_or_default()
    }

    pub fn card(p: store::ProjectRow) -> ProjectCard {
        ProjectCard {
            archived: p.archived_at.is_some(),
            last_scanned_at: p.last_scanned_at.map(format_time),
            id: p.id,
            label: p.label,
            scan_count: p.scan_count,
            last_score: p.last_score,
            last_delta: p.last_delta,
            last_scan_id: p.last_scan_id,
            sparkline_svg: crate::chart::draw_sparkline(&p.recent_scores, 120, 28),
            recent_scores: p.recent_scores,
        }
    }

    pub fn scan(s: store::ScanRow) -> ScanSummary {
        ScanSummary {
            scanned_at: format_time(s.scanned_at),
            scan_id: s.scan_id,
            score: s.score,
            score_delta: s.score_delta,
            passed: s.passed,
            failed: s.failed,
            severities: s.severities,
            cloud: s.cloud,
            cloud_account_id: s.cloud_account_id,
            frameworks: s.frameworks,
            state_source: s.state_source,
            finding_count: s.finding_count,
        }
    }

    pub fn finding(f: store::FindingRow) -> FindingView {
        FindingView {
            rule_id: f.rule_id,
            resource: f.resource,
            status: f.status,
            severity: f.severity,
            message: f.message,
            remediation: f.remediation,
        }
    }

    pub fn db() -> tidemark_store::Db {
        expect_context::<tidemark_store::Db>()
    }

    pub fn or_unavailable<T>(
        r: Result<T, tidemark_store::StoreError>,
    ) -> Result<T, DashboardError> {
        r.or_else(crate::error::unavailable)
    }

    pub fn not_found<T>() -> Result<T, DashboardError> {
        crate::error::fail(DashboardError::NotFound)
    }
}

#[server(endpoint = "projects")]
pub async fn list_projects() -> Result<ProjectsView, DashboardError> {
    use server::*;
    let viewer = crate::members::require_viewer()?;
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

#[server(endpoint = "project_chart")]
pub async fn load_project_chart(
    project_id: String,
    range: Range,
) -> Result<ProjectChart, DashboardError> {
    use server::*;
    let viewer = crate::members::require_viewer()?;
    let db = db();
    let account = viewer.account_id.as_str();
    let Some(project) =
        or_unavailable(tidemark_store::dashboard::find_project(&db, account, &project_id).await)?
    else {
        return not_found();
    };
    let since = range
        .days()
        .map(|d| tidemark_domain::now_millis() - d * 86_400_000);
    // The database reduces the range to a few scans per time bucket; LTTB picks the rest.
    let (history, total) = or_unavailable(
        tidemark_store::dashboard::project_history(
            &db,
            account,
            &project_id,
            since,
            HISTORY_BUCKETS,
        )
        .await,
    )?;
    let xs: Vec<f64> = history.iter().map(|p| p.scanned_at as f64).collect();
    let ys: Vec<f64> = history.iter().map(|p| p.score).collect();
    let kept = tidemark_domain::chart::lttb(&xs, &ys, CHART_POINTS);
    let points = kept
        .iter()
        .map(|&i| {
            let p = &history[i];
            ChartPoint {
                scan_id: p.scan_id.clone(),
                at: p.scanned_at,
                score: p.score,
                severities: p.severities,
            }
        })
        .collect::<Vec<_>>();
    Ok(ProjectChart {
        project: card(project),
        range,
        scans_in_range: usize::try_from(total).unwrap_or(0),
        drawing: crate::chart::draw_history(&points),
        points,
    })
}

#[server(endpoint = "project_scans")]
pub async fn project_scans(project_id: String, page: i64) -> Result<ScansPage, DashboardError> {
    use server::*;
    let viewer = crate::members::require_viewer()?;
    let page = page.max(0);
    let db = db();
    let rows = or_unavailable(
        tidemark_store::dashboard::list_scans(
            &db,
            &viewer.account_id,
            &project_id,
            page * PAGE_SIZE,
            PAGE_SIZE + 1,
        )
        .await,
    )?;
    if rows.is_empty() && page == 0 {
        let known = or_unavailable(
            tidemark_store::dashboard::find_project(&db, &viewer.account_id, &project_id).await,
        )?;
        if known.is_none() {
            return not_found();
        }
    }
    let has_more = rows.len() as i64 > PAGE_SIZE;
    Ok(ScansPage {
        scans: rows
            .into_iter()
            .take(PAGE_SIZE as usize)
            .map(scan)
            .collect(),
        page,
        has_more,
    })
}

#[server(endpoint = "scan")]
pub async fn load_scan(project_id: String, scan_id: String) -> Result<ScanView, DashboardError> {
    use server::*;
    let viewer = crate::members::require_viewer()?;
    let db = db();
    let account = viewer.account_id.as_str();
    let Some(project) =
        or_unavailable(tidemark_store::dashboard::find_project(&db, account, &project_id).await)?
    else {
        return not_found();
    };
    let Some((found, previous)) = or_unavailable(
        tidemark_store::dashboard::find_scan(&db, account, &project_id, &scan_id).await,
    )?
    else {
        return not_found();
    };
    Ok(ScanView {
        project_id,
        project_label: project.label,
        previous_scan_id: previous.map(|p| p.scan_id),
        scan: scan(found),
    })
}

#[server(endpoint = "scan_findings")]
pub async fn scan_findings(
    project_id: String,
    scan_id: String,
    query: FindingQuery,
) -> Result<FindingsPage, DashboardError> {
    use server::*;
    let viewer = crate::members::require_viewer()?;
    let db = db();
    let Some((found, _)) = or_unavailable(
        tidemark_store::dashboard::find_scan(&db, &viewer.account_id, &project_id, &scan_id).await,
    )?
    else {
        return not_found();
    };
    let nonempty = |v: Option<String>| v.filter(|s| !s.trim().is_empty());
    let filter = tidemark_store::dashboard::FindingFilter {
        severity: nonempty(query.severity),
        status: nonempty(query.status),
        framework: nonempty(query.framework),
        text: nonempty(query.text).map(|t| t.chars().take(200).collect()),
    };
    let page = query.page.max(0);
    let (rows, total) = or_unavailable(
        tidemark_store::dashboard::list_findings(
            &db,
            &project_id,
            found.seq,
            &filter,
            page * PAGE_SIZE,
            PAGE_SIZE,
        )
        .await,
    )?;
    Ok(FindingsPage {
        findings: rows.into_iter().map(finding).collect(),
        total,
        page,
        page_size: PAGE_SIZE,
    })
}

#[server(endpoint = "scan_diff")]
pub async fn scan_diff(project_id: String, scan_id: String) -> Result<DiffView, DashboardError> {
    use server::*;
    let viewer = crate::members::require_viewer()?;
    let db = db();
    let Some((found, previous)) = or_unavailable(
        tidemark_store::dashboard::find_scan(&db, &viewer.account_id, &project_id, &scan_id).await,
    )?
    else {
        return not_found();
    };
    if previous.is_none() {
        return Ok(DiffView::default());
    }
    let diff = or_unavailable(
        tidemark_store::dashboard::diff_scans(&db, &project_id, found.seq, 100).await,
    )?;
    Ok(DiffView {
        has_previous: true,
        new: diff.new.into_iter().map(finding).collect(),
        fixed: diff.fixed.into_iter().map(finding).collect(),
        new_count: diff.new_count,
        fixed_count: diff.fixed_count,
        unchanged_count: diff.unchanged_count,
    })
}

/// Archives or unarchives a project (admins only). Unarchiving needs a free slot.
#[server(endpoint = "set_archived")]
pub async fn set_archived(project_id: String, archived: bool) -> Result<(), DashboardError> {
    use server::*;
    use tidemark_store::dashboard::ArchiveOutcome;
    let viewer = crate::members::require_admin()?;
    let db = db();
    let license = or_unavailable(
        tidemark_store::licenses::find_license_for_account(&db, &viewer.account_id).await,
    )?;
    let cap = license.and_then(|l| l.project_cap());
    let now = tidemark_domain::now_millis();
    let account = viewer.account_id.clone();
    let outcome = tokio::spawn(async move {
        tidemark_store::dashboard::set_archived(&db, &account, &project_id, archived, cap, now)
            .await
    })
    .await
    .map_err(|e| e.to_string());
    match outcome {
        Ok(Ok(ArchiveOutcome::Done)) => Ok(()),
        Ok(Ok(ArchiveOutcome::NotFound)) => not_found(),
        Ok(Ok(ArchiveOutcome::NoFreeSlot { cap })) => {
            crate::error::fail(DashboardError::Conflict(format!(
                "Your plan allows {cap} active project(s): archive one before unarchiving this."
            )))
        }
        Ok(Err(err)) => crate::error::unavailable(err),
        Err(err) => crate::error::unavailable(err),
    }
}
