//! What the dashboard's pages show: the serialisable types every server function returns and
//! every view renders, the chart's geometry and ranges, and how severities look. Plain data,
//! compiled into the server and the browser alike; nothing here reaches the database.

use serde::{Deserialize, Serialize};
pub use tidemark_wire::{GateResult, GateStatus, Severity, SeverityCounts};

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
    pub projects: Vec<(String, tidemark_wire::GateResult, [i64; 4])>,
}

/// The account at a glance, above its projects.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AccountOverview {
    /// Active projects whose default branch's latest scan failed its gate: id, label, reasons.
    pub failing: Vec<(String, String, Vec<String>)>,
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
    pub project_id: String,
    pub label: String,
    pub finding_id: String,
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

// ---- Branches and pull requests

/// Which line of a project's history a page shows: `?branch=<name>`, `?pr=<number>`, or
/// neither for the default branch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum LineChoice {
    #[default]
    Default,
    Branch(String),
    PullRequest(i64),
}

impl LineChoice {
    /// From the page's query; a `pr` that is not a number is the default line (the page then
    /// says nothing is there rather than failing).
    pub fn from_query(branch: Option<String>, pr: Option<String>) -> LineChoice {
        if let Some(pr) = pr.filter(|p| !p.is_empty()) {
            return match pr.parse::<i64>() {
                Ok(n) if n > 0 => LineChoice::PullRequest(n),
                _ => LineChoice::PullRequest(0),
            };
        }
        match branch.filter(|b| !b.is_empty()) {
            Some(b) => LineChoice::Branch(b),
            None => LineChoice::Default,
        }
    }

    /// The query parameters that name it, each followed by `&` (empty for the default).
    pub fn query(&self) -> String {
        match self {
            LineChoice::Default => String::new(),
            LineChoice::Branch(b) => format!("branch={}&", crate::links::query_value(b)),
            LineChoice::PullRequest(n) => format!("pr={n}&"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineSummary {
    /// `None`: the default line of a project never told a branch name.
    pub name: Option<String>,
    pub is_default: bool,
    pub pull_request: Option<PullSummary>,
    pub scan_count: i64,
    pub last_push: Option<String>,
    pub head: Option<LineHeadSummary>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullSummary {
    pub number: i64,
    pub title: Option<String>,
    pub url: Option<String>,
    pub base_branch: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineHeadSummary {
    pub scan_id: String,
    pub score: f64,
    pub score_delta: f64,
    pub gate: GateStatus,
    /// Pull requests: compared with a base scan, and what they add.
    pub compared: bool,
    pub new_findings: Option<i64>,
    pub fixed_findings: Option<i64>,
    /// Pull requests: the score minus the base scan's.
    #[serde(default)]
    pub base_score_delta: Option<f64>,
}

impl LineSummary {
    /// How the line is named on the page.
    pub fn label(&self) -> String {
        match (&self.pull_request, &self.name) {
            (Some(pr), _) => format!("#{}", pr.number),
            (None, Some(name)) => name.clone(),
            (None, None) => "default branch".to_owned(),
        }
    }

    pub fn choice(&self) -> LineChoice {
        match (&self.pull_request, &self.name, self.is_default) {
            (Some(pr), _, _) => LineChoice::PullRequest(pr.number),
            (None, _, true) => LineChoice::Default,
            (None, Some(name), false) => LineChoice::Branch(name.clone()),
            (None, None, false) => LineChoice::Default,
        }
    }
}

/// Settings' badge list: every active project, with its badge when it has one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BadgesView {
    pub is_admin: bool,
    pub rows: Vec<BadgeRow>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BadgeRow {
    pub project_id: String,
    pub label: String,
    /// The badge's own path (for the preview) and the Markdown to paste; `None` without one.
    pub image: Option<String>,
    pub markdown: Option<String>,
}

/// Settings' storage section: what each project's data takes, largest first, and the
/// housekeeping policy in words (`None`: housekeeping is off).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StorageView {
    pub total: String,
    pub own_policy: bool,
    pub policy: Option<Vec<String>>,
    pub projects: Vec<StorageRow>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StorageRow {
    pub project_id: String,
    pub label: String,
    pub scans: i64,
    pub scans_thinned: i64,
    /// About how much its data takes ("3.4 MiB").
    pub size: String,
}

/// Settings' provisioning section (admins only): the SCIM endpoint, its token and the groups
/// the identity provider pushed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProvisioningView {
    /// Why SCIM is not open to this account (not enterprise, no verified domain); `None` when
    /// it is.
    pub unavailable: Option<String>,
    /// What to paste into the IdP as the SCIM base URL.
    pub scim_url: String,
    pub token: Option<ScimTokenView>,
    pub people: u64,
    pub active_people: u64,
    pub groups: Vec<ScimGroupRow>,
}

/// What an admin does in Settings → Provisioning (a plain form post to
/// `/settings/provisioning/change`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProvisioningAction {
    /// Make a token (replacing the one there is).
    CreateToken,
    RevokeToken,
    /// Mark the group as giving the admin role.
    GiveAdmin,
    StopAdmin,
}

impl ProvisioningAction {
    pub fn parse(raw: &str) -> Option<ProvisioningAction> {
        [
            ProvisioningAction::CreateToken,
            ProvisioningAction::RevokeToken,
            ProvisioningAction::GiveAdmin,
            ProvisioningAction::StopAdmin,
        ]
        .into_iter()
        .find(|a| a.as_str() == raw)
    }

    /// As the form posts it.
    pub fn as_str(self) -> &'static str {
        match self {
            ProvisioningAction::CreateToken => "create_token",
            ProvisioningAction::RevokeToken => "revoke_token",
            ProvisioningAction::GiveAdmin => "give_admin",
            ProvisioningAction::StopAdmin => "stop_admin",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScimTokenView {
    pub prefix: String,
    pub created_at: String,
    pub last_used_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScimGroupRow {
    pub id: String,
    pub name: String,
    pub members: u64,
    pub grants_admin: bool,
}

/// Settings' trusted publishers (admins only): the CI identities that push keyless.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublishersView {
    pub publishers: Vec<PublisherRow>,
    /// The audience jobs must request (`aud`).
    pub audience: String,
    /// The account's id, for `TIDEMARK_ACCOUNT` when two accounts trust one repository.
    pub account_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublisherRow {
    pub id: String,
    /// "GitHub Actions", "GitLab CI" or "Custom issuer".
    pub provider: String,
    pub issuer: String,
    pub repository: String,
    /// "1001 / 2002", or `None` until the first token pins them.
    pub ids: Option<String>,
    pub workflow: Option<String>,
    pub environment: Option<String>,
    pub ref_pattern: Option<String>,
    /// `None`: every project.
    pub project: Option<String>,
    pub last_used_at: Option<String>,
}

/// Settings' webhooks (admins only): the endpoints, the latest deliveries, and what a new
/// endpoint can be scoped to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebhooksView {
    pub endpoints: Vec<WebhookRow>,
    pub deliveries: Vec<DeliveryRow>,
    /// Active projects, (id, label), for "only this project".
    pub projects: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebhookRow {
    pub id: String,
    /// Scheme, host and port only: the rest of a URL may be a credential.
    pub url: String,
    /// `None`: every project.
    pub project_label: Option<String>,
    pub format: String,
    pub events: Vec<String>,
    pub created_at: String,
    pub secret_rotated_at: Option<String>,
}

/// One delivery in the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeliveryRow {
    pub event_id: String,
    pub webhook_id: String,
    pub url: String,
    pub event: String,
    pub created_at: String,
    /// `pending`, `delivered` or `failed` (gave up).
    pub state: String,
    pub attempts: i64,
    pub status_code: Option<i64>,
    pub latency_ms: Option<i64>,
    pub error: Option<String>,
    pub next_attempt_at: Option<String>,
}

/// Settings' alert preferences: what the signed-in member is mailed about, in this account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertsView {
    /// Where the mail goes.
    pub email: String,
    pub gate_failed: bool,
    pub score_regressed: bool,
}

/// The audit log page's filters and page number (from its URL).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditFilter {
    pub actor: Option<String>,
    pub action: Option<String>,
    pub page: i64,
}

/// One page of the account's audit log, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditPage {
    pub rows: Vec<AuditRow>,
    pub has_more: bool,
    /// Everyone in the log, for the actor filter.
    pub actors: Vec<String>,
    /// Every action as (name, label), for the action filter.
    pub actions: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRow {
    pub at: String,
    pub actor: String,
    pub client_ip: Option<String>,
    pub action: String,
    pub action_label: String,
    pub target: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// A signing secret, shown once (after creating an endpoint or replacing its secret).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct WebhookSecretShown {
    pub webhook_id: String,
    pub secret: String,
}

impl std::fmt::Debug for WebhookSecretShown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookSecretShown")
            .field("webhook_id", &self.webhook_id)
            .field("secret", &"[redacted]")
            .finish()
    }
}

/// A secret the page answering a plain form shows once: the server puts it in that request's
/// extensions (`server::http::shown_once`), never in a URL, a cookie or the database.
#[derive(Clone, PartialEq)]
pub enum ShownOnce {
    /// The one new API key after Rotate Key.
    ApiKey(String),
    /// An endpoint's new signing secret (made with the endpoint or replaced).
    WebhookSecret(WebhookSecretShown),
}

impl std::fmt::Debug for ShownOnce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ShownOnce::ApiKey(_) => "ShownOnce::ApiKey([redacted])",
            ShownOnce::WebhookSecret(_) => "ShownOnce::WebhookSecret([redacted])",
        })
    }
}

impl ShownOnce {
    /// The secret this page's request carries, if any (server-rendered pages only).
    pub fn of_this_request() -> Option<ShownOnce> {
        #[cfg(feature = "ssr")]
        {
            leptos::prelude::use_context::<http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<ShownOnce>().cloned())
        }
        #[cfg(not(feature = "ssr"))]
        None
    }
}

/// A project's quality gate as the page shows and edits it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GateSettings {
    pub min_score: Option<f64>,
    pub max_drop: Option<f64>,
    pub new_findings_at: Option<Severity>,
}

impl GateSettings {
    /// The conditions in words, for the page and its screen readers.
    pub fn describe(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(min) = self.min_score {
            out.push(format!("score at least {min}"));
        }
        if let Some(drop) = self.max_drop {
            out.push(format!(
                "a drop of at most {drop} points from the previous scan"
            ));
        }
        if let Some(severity) = self.new_findings_at {
            out.push(format!(
                "no new open findings at {} severity or above",
                severity.as_str()
            ));
        }
        out
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScanSummary {
    pub scan_id: String,
    pub score: f64,
    pub score_delta: f64,
    pub passed: i64,
    pub failed: i64,
    pub severities: SeverityCounts,
    pub cloud: String,
    pub cloud_account_id: String,
    pub frameworks: Vec<String>,
    pub state_source: String,
    pub scanned_at: String,
    pub finding_count: i64,
    pub gate: GateResult,
    /// The branch it was pushed from (a pull request's source branch), when known.
    pub branch: Option<String>,
    pub pull_request: Option<i64>,
    /// The commit scanned, and a link to it when the repository's address is known.
    pub commit: Option<String>,
    pub commit_url: Option<String>,
    /// For a pull request's scan: the base branch, the base scan compared with (`None`: the
    /// base had no scan), and what the pull request added and fixed.
    pub base: Option<BaseSummary>,
    /// How it was pushed: an API key, or a keyless CI identity (`None` for older scans).
    pub pushed_by: Option<tidemark_wire::PushedBy>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaseSummary {
    pub branch: String,
    pub scan_id: Option<String>,
    pub new_findings: Option<i64>,
    pub fixed_findings: Option<i64>,
    /// This scan's score minus the base scan's (as the push's `base.score_delta` said).
    #[serde(default)]
    pub score_delta: Option<f64>,
}

impl ScanSummary {
    /// The change a page puts beside the score, and what it is against: a pull request's
    /// scan is judged against its base branch's scan, so its change is against that scan
    /// (`Some(base branch)`); any other scan's is against the previous scan on its line.
    pub fn headline_change(&self) -> (f64, Option<&str>) {
        match self.base.as_ref() {
            Some(BaseSummary {
                branch,
                score_delta: Some(delta),
                ..
            }) => (*delta, Some(branch.as_str())),
            _ => (self.score_delta, None),
        }
    }

    /// The first 7 characters of the commit, as people read them.
    pub fn short_commit(&self) -> Option<&str> {
        self.commit.as_deref().map(|c| c.get(..7).unwrap_or(c))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScansPage {
    pub scans: Vec<ScanSummary>,
    pub page: i64,
    pub has_more: bool,
    /// How many scans the line has in all.
    #[serde(default)]
    pub total: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScanView {
    pub project_id: String,
    pub project_label: String,
    pub scan: ScanSummary,
    pub previous_scan_id: Option<String>,
    /// Housekeeping removed its findings (its row stays in the history).
    #[serde(default)]
    pub findings_removed: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingQuery {
    /// The column to sort by (`severity`, the default, `status`, `rule`, `resource`,
    /// `scanner`), and `desc` to reverse it.
    pub sort: Option<String>,
    pub dir: Option<String>,
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
    /// The finding as its branch tracks it (open findings only): its page, age and triage.
    #[serde(default)]
    pub tracked: Option<FindingTag>,
}

/// The findings of a scan's branch set aside by a triage that holds (the scan page's
/// Triaged tab).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriagedView {
    pub total: i64,
    /// Most severe first, then oldest (at most 100).
    pub rows: Vec<TriagedRow>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriagedRow {
    pub finding_id: String,
    pub rule_id: String,
    pub resource: String,
    pub severity: String,
    /// "Accepted risk until 2027-03-01".
    pub triage: String,
    pub reason: String,
    pub by: String,
}

/// What a scan's row says of the tracked finding behind it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingTag {
    pub id: String,
    /// First seen in this very scan.
    pub new_here: bool,
    /// "first seen 12 days ago".
    pub first_seen: String,
    /// The UTC time, for the tooltip.
    pub first_seen_utc: String,
    /// "Accepted risk", "False positive" or "Won't fix" while a triage holds.
    pub triage: Option<String>,
}

/// A tracked finding's own page: what it is, its life on its branch and its triage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindingPageView {
    pub project_id: String,
    pub project_label: String,
    pub finding: tidemark_wire::findings::TrackedFinding,
    /// From the latest scan that had it.
    pub message: String,
    pub remediation: String,
    pub first_seen: String,
    pub last_seen: String,
    pub fixed: Option<String>,
    /// Its life on its branch, oldest first: the changes, each with the unchanged scans
    /// after it folded in, and its triage changes between them.
    pub life: Vec<LifeEntry>,
    /// The scans the life was read from (its branch's latest, at most 500).
    pub scans_read: i64,
    /// The viewer may triage it now (a member: when no triage holds; an admin: always).
    pub can_triage: bool,
    /// The viewer may undo its triage (admins).
    pub can_undo: bool,
}

/// One entry of a finding's life ([`crate::life::LifeEvent`] with its times written out).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LifeEntry {
    pub event: crate::life::LifeEvent,
    pub at: String,
    pub last_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingsPage {
    pub findings: Vec<FindingView>,
    pub total: i64,
    pub page: i64,
    pub page_size: i64,
    /// How many of the scan's findings each filter choice holds, by (severity, status).
    #[serde(default)]
    pub counts: Vec<(String, String, i64)>,
    /// The same per framework of the scan: (framework, severity, status, count).
    #[serde(default)]
    pub by_framework: Vec<(String, String, String, i64)>,
}

impl FindingsPage {
    /// The scan's findings with this severity, status and framework (each `None`: any).
    pub fn count(
        &self,
        severity: Option<&str>,
        status: Option<&str>,
        framework: Option<&str>,
    ) -> i64 {
        let fits = |sev: &str, st: &str| {
            severity.is_none_or(|s| s == sev) && status.is_none_or(|s| s == st)
        };
        match framework {
            None => self
                .counts
                .iter()
                .filter(|(sev, st, _)| fits(sev, st))
                .map(|(_, _, n)| n)
                .sum(),
            Some(f) => self
                .by_framework
                .iter()
                .filter(|(fw, sev, st, _)| fw == f && fits(sev, st))
                .map(|(_, _, _, n)| n)
                .sum(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffView {
    /// There is a scan to compare with (the previous one, or the chosen base).
    pub has_previous: bool,
    /// For a pull request's scan: its base branch, and the base scan it was judged against
    /// (what the diff shows unless another scan is chosen).
    pub pr_base: Option<(String, String)>,
    /// The scan compared with, when one was chosen (`None`: the previous scan).
    pub base_scan_id: Option<String>,
    /// The project's other recent scans (newest first, at most 50), to choose a base from.
    pub choices: Vec<String>,
    pub new: Vec<FindingView>,
    pub fixed: Vec<FindingView>,
    pub new_count: i64,
    pub fixed_count: i64,
    pub unchanged_count: i64,
}

// ---- Settings

/// A member's role in an account: admins change things, members read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemberRole {
    Admin,
    Member,
}

impl MemberRole {
    pub fn as_str(self) -> &'static str {
        match self {
            MemberRole::Admin => "admin",
            MemberRole::Member => "member",
        }
    }

    /// The other role: what "Make …" in Settings changes a member to.
    pub fn other(self) -> MemberRole {
        match self {
            MemberRole::Admin => MemberRole::Member,
            MemberRole::Member => MemberRole::Admin,
        }
    }
}

/// What an admin does to a member in Settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemberAction {
    MakeAdmin,
    MakeMember,
    Remove,
}

impl MemberAction {
    pub fn to_role(role: MemberRole) -> MemberAction {
        match role {
            MemberRole::Admin => MemberAction::MakeAdmin,
            MemberRole::Member => MemberAction::MakeMember,
        }
    }

    /// As the form posts it.
    pub fn as_str(self) -> &'static str {
        match self {
            MemberAction::MakeAdmin => "make_admin",
            MemberAction::MakeMember => "make_member",
            MemberAction::Remove => "remove",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberSummary {
    pub email: String,
    pub role: MemberRole,
    /// RFC 3339.
    pub added_at: String,
    pub last_login_at: Option<String>,
    /// Provisioned by the account's identity provider (SCIM): changed there, not here.
    #[serde(default)]
    pub managed: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyView {
    pub id: String,
    pub prefix: String,
    pub machine: String,
    pub created_at: String,
    pub last_used_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LicenseView {
    pub tier: String,
    pub state: String,
    pub features: Vec<String>,
    pub expires_at: String,
    pub projects_used: u64,
    pub project_cap: Option<u64>,
}

/// Where an SSO claim stands (see `tidemark_domain::sso::ClaimState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SsoState {
    /// Waiting for its DNS record: routes nobody, enforces nothing.
    Pending,
    /// Proven: the domain's people sign in through this IdP.
    Verified,
    /// Over; `ended_reason` says why.
    Ended,
}

/// One SSO claim of the account, as Settings shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SsoSummary {
    pub domain: String,
    pub state: SsoState,
    pub idp_entity_id: String,
    pub enforce: bool,
    /// The TXT record to publish: its name and its exact value.
    pub record_name: String,
    pub record_value: String,
    /// When the record was last looked up, and what was found.
    pub checked_at: Option<String>,
    pub check_message: Option<String>,
    /// Whether the server still looks again by itself (every 15 minutes for 7 days).
    pub rechecking: bool,
    pub verified_at: Option<String>,
    pub ended_reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingsView {
    pub is_admin: bool,
    pub viewer_email: String,
    pub license: Option<LicenseView>,
    pub keys: Vec<KeyView>,
    pub members: Vec<MemberSummary>,
    pub sso: Vec<SsoSummary>,
}

#[cfg(test)]
mod arrange_tests {
    use super::*;

    fn card(label: &str, score: Option<f64>, delta: Option<f64>, at: Option<&str>) -> ProjectCard {
        ProjectCard {
            id: format!("prj_{label}"),
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
}
