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
    /// Active projects whose default branch's latest scan failed its gate: id, label, reasons.
    pub failing: Vec<(tidemark_wire::ids::ProjectId, String, Vec<String>)>,
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

/// The projects whose label contains `filter` (any case), in `sort` order; ties, and the
/// name order itself, by label. Projects without a scan come last in the other orders.
pub fn arrange_projects(
    mut projects: Vec<ProjectCard>,
    sort: ProjectSort,
    filter: &str,
) -> Vec<ProjectCard> {
    use std::cmp::Ordering;
    let needle = filter.trim().to_lowercase();
    if !needle.is_empty() {
        projects.retain(|p| p.label.to_lowercase().contains(&needle));
    }
    /// `ascending` or not, with `None` after every value either way.
    fn nones_last<T: PartialOrd>(a: Option<T>, b: Option<T>, ascending: bool) -> Ordering {
        match (a, b) {
            (Some(a), Some(b)) => {
                let o = a.partial_cmp(&b).unwrap_or(Ordering::Equal);
                if ascending {
                    o
                } else {
                    o.reverse()
                }
            }
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        }
    }
    projects.sort_by(|a, b| {
        let primary = match sort {
            ProjectSort::Name => Ordering::Equal,
            ProjectSort::Score => nones_last(a.last_score, b.last_score, true),
            ProjectSort::Change => nones_last(a.last_delta, b.last_delta, true),
            // "YYYY-MM-DD HH:MM UTC" sorts as text.
            ProjectSort::LastScan => nones_last(
                a.last_scanned_at.as_deref(),
                b.last_scanned_at.as_deref(),
                false,
            ),
        };
        primary
            .then_with(|| a.label.to_lowercase().cmp(&b.label.to_lowercase()))
            .then_with(|| a.label.cmp(&b.label))
    });
    projects
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

/// Cards on one page of the projects list: the page's cost (sparklines, open findings) stays
/// that of 50 projects however many the account holds.
pub const PROJECTS_PER_PAGE: usize = 50;

/// Page `page` (from 1; past the end: the last) of `projects` arranged by `sort` and
/// `filter`, active projects before archived ones, with where it stands in the whole.
pub fn page_of_projects(
    projects: Vec<ProjectCard>,
    sort: ProjectSort,
    filter: &str,
    page: u32,
) -> (Vec<ProjectCard>, Paging) {
    let total = projects.len() as u64;
    let mut arranged = arrange_projects(projects, sort, filter);
    // Stable: each part keeps the arrangement.
    arranged.sort_by_key(|p| p.archived);
    let matching = arranged.len();
    let pages = matching.div_ceil(PROJECTS_PER_PAGE).max(1) as u32;
    let page = page.clamp(1, pages);
    let start = (page as usize - 1) * PROJECTS_PER_PAGE;
    let cards = arranged
        .into_iter()
        .skip(start)
        .take(PROJECTS_PER_PAGE)
        .collect();
    let paging = Paging {
        page,
        pages,
        matching: matching as u64,
        total,
    };
    (cards, paging)
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

#[cfg(test)]
mod arrange_tests {
    use super::*;

    fn card(label: &str, score: Option<f64>, delta: Option<f64>, at: Option<&str>) -> ProjectCard {
        ProjectCard {
            id: tidemark_wire::ids::ProjectId::trusted(format!("prj_{label}")),
            label: label.to_owned(),
            archived: false,
            scan_count: i64::from(score.is_some()),
            last_score: score,
            last_delta: delta,
            last_scan_id: None,
            last_scanned_at: at.map(str::to_owned),
            recent_scores: vec![],
            sparkline_svg: String::new(),
            stale_days: None,
        }
    }

    fn labels(cards: Vec<ProjectCard>) -> Vec<String> {
        cards.into_iter().map(|c| c.label).collect()
    }

    fn sample() -> Vec<ProjectCard> {
        vec![
            card("web", Some(90.0), Some(-5.0), Some("2026-11-20 10:00 UTC")),
            card("Api", Some(60.0), Some(2.0), Some("2026-11-22 10:00 UTC")),
            card("new", None, None, None),
            card(
                "infra",
                Some(75.0),
                Some(-1.0),
                Some("2026-11-21 10:00 UTC"),
            ),
        ]
    }

    #[test]
    fn each_order_puts_what_it_promises_first_and_unscanned_projects_last() {
        assert_eq!(
            labels(arrange_projects(sample(), ProjectSort::Name, "")),
            ["Api", "infra", "new", "web"]
        );
        assert_eq!(
            labels(arrange_projects(sample(), ProjectSort::Score, "")),
            ["Api", "infra", "web", "new"]
        );
        assert_eq!(
            labels(arrange_projects(sample(), ProjectSort::Change, "")),
            ["web", "infra", "Api", "new"]
        );
        assert_eq!(
            labels(arrange_projects(sample(), ProjectSort::LastScan, "")),
            ["Api", "infra", "web", "new"]
        );
    }

    #[test]
    fn the_filter_matches_part_of_a_name_in_any_case() {
        assert_eq!(
            labels(arrange_projects(sample(), ProjectSort::Name, " A")),
            ["Api", "infra"]
        );
        assert!(arrange_projects(sample(), ProjectSort::Name, "zzz").is_empty());
        assert_eq!(ProjectSort::parse("change"), ProjectSort::Change);
        assert_eq!(ProjectSort::parse("<script>"), ProjectSort::Name);
    }

    #[test]
    fn pages_hold_fifty_active_before_archived_and_past_the_end_is_the_last() {
        // 110 projects, every tenth archived: 99 active, 11 archived.
        let cards: Vec<ProjectCard> = (0..110)
            .map(|i| {
                let mut c = card(&format!("p{i:03}"), Some(f64::from(i)), None, None);
                c.archived = i % 10 == 0;
                c
            })
            .collect();
        let page = |n, filter| page_of_projects(cards.clone(), ProjectSort::Name, filter, n);
        let (first, paging) = page(1, "");
        assert_eq!(
            paging,
            Paging {
                page: 1,
                pages: 3,
                matching: 110,
                total: 110
            }
        );
        assert_eq!(first.len(), PROJECTS_PER_PAGE);
        assert!(first.iter().all(|c| !c.archived));
        assert_eq!(first[0].label, "p001");
        let (last, paging) = page(3, "");
        assert_eq!(last.len(), 10);
        assert!(
            last.iter().all(|c| c.archived),
            "the 99 active fill pages 1-2 and one of 3"
        );
        assert_eq!(page(99, "").1.page, 3);
        assert_eq!(page(0, "").1.page, 1);
        assert_eq!(paging.pages, 3);
        // The filter pages what matches: p05x and p050's archived one.
        let (matched, paging) = page(1, "p05");
        assert_eq!(labels(matched.clone())[..2], ["p051", "p052"]);
        assert_eq!((paging.matching, paging.pages, paging.total), (10, 1, 110));
        assert!(matched.last().unwrap().archived);
        let (none, paging) = page(1, "zzz");
        assert!(none.is_empty());
        assert_eq!((paging.page, paging.pages), (1, 1));
    }
}
