//! The projects list, the account's overview and a project's chart.

use serde::{Deserialize, Serialize};

use super::*;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectCard {
    pub id: tidemark_wire::ids::ProjectId,
    pub label: String,
    pub archived: bool,
    pub scan_count: i64,
    pub last_score: Option<f64>,
    pub last_delta: Option<f64>,
    pub last_scan_id: Option<tidemark_wire::ids::ScanId>,
    /// "2026-11-22 06:43 UTC".
    pub last_scanned_at: Option<String>,
    pub recent_scores: Vec<f64>,
    /// The recent scores drawn as a small SVG line.
    pub sparkline_svg: String,
    /// Days since the last scan, once there are a week of them ("stale").
    #[serde(default)]
    pub stale_days: Option<i64>,
}

/// What the projects page adds to each project and above the list (its own server function:
/// Settings lists projects too, in an island, and needs none of it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProjectsGlance {
    pub overview: AccountOverview,
    /// Per project id: its default branch's latest verdict and its open findings (not
    /// triaged) by severity, critical first.
    pub projects: Vec<(
        tidemark_wire::ids::ProjectId,
        tidemark_wire::GateResult,
        [i64; 4],
    )>,
}

/// The account at a glance, above its projects.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AccountOverview {
    /// Active projects whose default branch's latest scan failed its gate: id, label, reasons
    /// (the first ten by name).
    pub failing: Vec<(tidemark_wire::ids::ProjectId, String, Vec<String>)>,
    /// How many fail in all.
    #[serde(default)]
    pub failing_total: u64,
    /// The oldest open critical findings across the default branches.
    pub oldest_criticals: Vec<OldFinding>,
    /// Open findings by severity per day, stacked, drawn on the server.
    pub severity_days: SeverityDays,
}

/// The overview's chart of open findings per day: the bars (an SVG drawn on the server), what
/// the overlay puts on them, and its text alternatives.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeverityDays {
    /// Empty when there is nothing to draw (`summary` says so).
    pub svg: String,
    /// What the drawing shows, in words.
    pub summary: String,
    /// One column per day: where it is, how high its bar is, and its values in words.
    pub columns: Vec<DayColumn>,
    /// Dates under the bars (x, "11-20") and counts beside them (y, count).
    pub x_ticks: Vec<(i32, String)>,
    pub y_ticks: Vec<(i32, i64)>,
    /// The table alternative: the first day, every day the counts changed, and the last,
    /// with critical, high, medium and low.
    pub rows: Vec<(String, [i64; 4])>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DayColumn {
    pub x: i32,
    pub width: i32,
    pub top: i32,
    /// The day's start (UTC milliseconds).
    pub at: i64,
    pub label: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OldFinding {
    pub project_id: tidemark_wire::ids::ProjectId,
    pub label: String,
    pub finding_id: tidemark_wire::ids::FindingId,
    pub rule_id: String,
    pub resource: String,
    /// "first seen 40 days ago".
    pub age: String,
}

/// How the projects page orders its rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProjectSort {
    /// By label, A to Z.
    #[default]
    Name,
    /// Lowest latest score first: what needs attention on top.
    Score,
    /// Largest drop at the latest scan first.
    Change,
    /// Most recently scanned first.
    LastScan,
}

impl ProjectSort {
    pub const ALL: [ProjectSort; 4] = [
        ProjectSort::Name,
        ProjectSort::Score,
        ProjectSort::Change,
        ProjectSort::LastScan,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ProjectSort::Name => "name",
            ProjectSort::Score => "score",
            ProjectSort::Change => "change",
            ProjectSort::LastScan => "last_scan",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            ProjectSort::Name => "Name",
            ProjectSort::Score => "Lowest score",
            ProjectSort::Change => "Largest drop",
            ProjectSort::LastScan => "Latest scan",
        }
    }

    /// An unknown value (a hand-edited URL) is the default order.
    pub fn parse(text: &str) -> ProjectSort {
        ProjectSort::ALL
            .into_iter()
            .find(|s| s.as_str() == text)
            .unwrap_or_default()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectsView {
    /// Every project (Settings), or one page of them in the page's order (the projects page).
    pub projects: Vec<ProjectCard>,
    pub active: u64,
    /// Where `projects` is one page: which, of how many, out of how many projects that match
    /// the name filter, and how many the account has in all.
    #[serde(default)]
    pub paging: Option<Paging>,
    /// `None`: unlimited.
    pub cap: Option<u64>,
    pub tier: String,
    pub is_admin: bool,
    pub base_url: String,
}

/// Where a page of the projects list is in the whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Paging {
    /// From 1.
    pub page: u32,
    pub pages: u32,
    pub matching: u64,
    pub total: u64,
}

/// Cards on one page of the projects list (`tidemark_domain::project_order::PER_PAGE`, by
/// which the database chooses the page).
pub const PROJECTS_PER_PAGE: usize = 50;

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
    pub scan_id: tidemark_wire::ids::ScanId,
    /// Unix milliseconds.
    pub at: i64,
    pub score: f64,
    pub severities: SeverityCounts,
    /// The quality gate's verdict on the scan: failed scans are marked on the chart.
    pub gate: GateStatus,
    /// What the point says (`crate::chart::point_label`): its accessible name, which
    /// `public/dashboard.js` also shows as the tooltip at the point. Written on the server, so
    /// the browser's bundle formats no dates or changes.
    pub label: String,
}

/// Size of the history chart, in SVG pixels.
pub const WIDTH: u32 = 880;
pub const HEIGHT: u32 = 320;
/// Pixel y of the history chart's date labels, in the room left under the bars.
pub const DATE_BASELINE: i32 = HEIGHT as i32 - 4;

/// How a severity is drawn: its colour in charts and chips (the name is `Severity::as_str`).
pub fn severity_colour(severity: Severity) -> &'static str {
    match severity {
        Severity::Critical => "#c62828",
        Severity::High => "#ef6c00",
        Severity::Medium => "#f9a825",
        Severity::Low => "#1e88e5",
    }
}

/// A history drawn on the server: the SVG markup and where each point landed, in pixels.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HistoryDrawing {
    pub svg: String,
    pub dots: Vec<(i32, i32)>,
    /// Pixel y of the score grid lines 0, 25, 50, 75, 100.
    pub grid: Vec<(i32, u32)>,
    /// The time axis: pixel x and a date (or date and hour) label, oldest first.
    pub x_ticks: Vec<(i32, String)>,
    /// The severity bars' scale: pixel y and a finding count (0, half, most).
    pub bar_ticks: Vec<(i32, u64)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectChart {
    pub project: ProjectCard,
    pub range: Range,
    /// Scans in the range before downsampling.
    pub scans_in_range: usize,
    /// The score axis spans 0-100 (`?scale=full`) instead of being fitted to the scores.
    pub full_scale: bool,
    pub points: Vec<ChartPoint>,
    pub drawing: HistoryDrawing,
    /// The project's quality gate (`None`: it has none), and whether the viewer may change it.
    pub gate: Option<GateSettings>,
    pub is_admin: bool,
    /// The line shown, the project's branches (default first, then by latest push) and its
    /// pull requests (latest push first).
    pub line: LineSummary,
    pub branches: Vec<LineSummary>,
    pub pulls: Vec<LineSummary>,
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use super::*;

    /// The page's range line counts by the page size the database chose the page with.
    #[test]
    fn the_page_size_is_the_one_the_database_pages_by() {
        assert_eq!(
            PROJECTS_PER_PAGE as u64,
            tidemark_domain::project_order::PER_PAGE
        );
    }

    #[test]
    fn unknown_orders_are_the_default() {
        assert_eq!(ProjectSort::parse("change"), ProjectSort::Change);
        assert_eq!(ProjectSort::parse("<script>"), ProjectSort::Name);
    }
}
