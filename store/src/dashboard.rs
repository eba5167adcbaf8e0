//! What the dashboard reads, always within one account: every query is scoped by the
//! account id, so a project id from another account finds nothing.

use tidemark_domain::audit::{Action, AuditContext};
use tidemark_domain::Millis;
use tidemark_wire::{GateResult, SeverityCounts};

use crate::audit::{record_in, Change};
use crate::gates::verdict_from_columns;
use crate::spans::{scan_findings, texts_of, Texts};

use crate::Writer;
use crate::{on_db, on_db_write, BeginWrite as _, Db, StoreError};

/// How many recent scores a project's sparkline shows.
pub const SPARKLINE_POINTS: i64 = 20;

#[derive(Debug, Clone, PartialEq)]
pub struct ProjectRow {
    pub id: String,
    pub label: String,
    pub created_at: Millis,
    pub archived_at: Option<Millis>,
    pub scan_count: i64,
    pub last_score: Option<f64>,
    pub last_delta: Option<f64>,
    pub last_scan_id: Option<String>,
    pub last_scanned_at: Option<Millis>,
    /// Oldest first.
    pub recent_scores: Vec<f64>,
    /// The default line's latest verdict (`None`: no scan, or no gate when it was pushed).
    pub gate: GateResult,
}

#[derive(sqlx::FromRow)]
struct ProjectHeadRow {
    id: String,
    label: String,
    created_at: i64,
    archived_at: Option<i64>,
    scan_count: i64,
    last_score: Option<f64>,
    last_delta: Option<f64>,
    last_scan_id: Option<String>,
    last_gate_status: Option<String>,
    last_gate_reasons: Option<String>,
}

/// One of a project's latest scores, for its sparkline.
#[derive(sqlx::FromRow)]
struct SparkPoint {
    project_id: String,
    score: f64,
    scanned_at: i64,
}

/// A page of findings, each row carrying the filtered total (a window count) when filtered.
#[derive(sqlx::FromRow)]
struct FindingPageRow {
    #[sqlx(flatten)]
    finding: FindingRow,
    total: i64,
}

/// Every project of the account, active first then archived, by label.
pub async fn list_projects(db: &Db, account_id: &str) -> Result<Vec<ProjectRow>, StoreError> {
    projects_of(db, account_id, None).await
}

/// One project of the account, or none (another account's id finds nothing).
pub async fn find_project(
    db: &Db,
    account_id: &str,
    project_id: &str,
) -> Result<Option<ProjectRow>, StoreError> {
    Ok(projects_of(db, account_id, Some(project_id)).await?.pop())
}

/// The severity counts of every scan of the account's active projects' default branches since
/// `since`: what the projects page's overview sums day by day.
pub async fn default_line_counts(
    db: &Db,
    account_id: &str,
    since: Millis,
) -> Result<Vec<tidemark_domain::overview::ScanCounts>, StoreError> {
    let rows: Vec<(String, i64, i64, i64, i64, i64)> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT s.project_id, s.scanned_at, s.sev_critical, s.sev_high, s.sev_medium, \
             s.sev_low FROM projects p JOIN scans s ON s.branch_id = p.default_branch_id \
             WHERE p.account_id = $1 AND p.archived_at IS NULL AND s.scanned_at >= $2",
        )
        .bind(account_id)
        .bind(since)
        .fetch_all(pool)
        .await
    })?;
    Ok(rows
        .into_iter()
        .map(
            |(project, at, c, h, m, l)| tidemark_domain::overview::ScanCounts {
                project,
                at,
                counts: [c, h, m, l],
            },
        )
        .collect())
}

/// The id of the account's project labelled `label`, if it has one.
pub async fn project_id_by_label(
    db: &Db,
    account_id: &str,
    label: &str,
) -> Result<Option<String>, StoreError> {
    let id: Option<(String,)> = on_db!(db, pool => {
        sqlx::query_as("SELECT id FROM projects WHERE account_id = $1 AND label = $2")
            .bind(account_id)
            .bind(label)
            .fetch_optional(pool)
            .await
    })?;
    Ok(id.map(|(id,)| id))
}

/// The account's projects, or just `only` among them, with their sparkline points.
async fn projects_of(
    db: &Db,
    account_id: &str,
    only: Option<&str>,
) -> Result<Vec<ProjectRow>, StoreError> {
    let (projects, points): (Vec<ProjectHeadRow>, Vec<SparkPoint>) = on_db!(db, pool => {
        // The project's line is its default branch: its count, head and sparkline.
        let projects = sqlx::query_as(
            "SELECT p.id, p.label, p.created_at, p.archived_at, \
             COALESCE(d.scan_count, p.scan_count) AS scan_count, p.last_score, p.last_delta, \
             p.last_scan_id, p.last_gate_status, p.last_gate_reasons \
             FROM projects p LEFT JOIN branches d ON d.id = p.default_branch_id \
             WHERE p.account_id = $1 AND ($2 IS NULL OR p.id = $2) \
             ORDER BY p.archived_at IS NOT NULL, p.label",
        )
        .bind(account_id)
        .bind(only)
        .fetch_all(pool)
        .await?;
        // The newest scans of every project's default line, one index range per project.
        let points = sqlx::query_as(
            "SELECT s.project_id, s.score, s.scanned_at FROM projects p \
             JOIN branches d ON d.id = p.default_branch_id \
             JOIN scans s ON s.branch_id = d.id AND s.line_seq > d.scan_count - $2 \
             WHERE p.account_id = $1 AND ($3 IS NULL OR p.id = $3) \
             ORDER BY s.project_id, s.line_seq",
        )
        .bind(account_id)
        .bind(SPARKLINE_POINTS)
        .bind(only)
        .fetch_all(pool)
        .await?;
        Ok::<_, sqlx::Error>((projects, points))
    })?;
    Ok(projects
        .into_iter()
        .map(|p| {
            let mine: Vec<&SparkPoint> = points.iter().filter(|s| s.project_id == p.id).collect();
            ProjectRow {
                recent_scores: mine.iter().map(|s| s.score).collect(),
                last_scanned_at: mine.last().map(|s| s.scanned_at),
                id: p.id,
                label: p.label,
                created_at: p.created_at,
                archived_at: p.archived_at,
                scan_count: p.scan_count,
                last_score: p.last_score,
                last_delta: p.last_delta,
                last_scan_id: p.last_scan_id,
                gate: verdict_from_columns(
                    p.last_gate_status.as_deref(),
                    p.last_gate_reasons.as_deref(),
                ),
            }
        })
        .collect())
}

#[derive(sqlx::FromRow)]
struct HistoryRow {
    seq: i64,
    scan_id: String,
    scanned_at: i64,
    score: f64,
    sev_critical: i64,
    sev_high: i64,
    sev_medium: i64,
    sev_low: i64,
    gate_status: Option<String>,
    score_delta: f64,
    gate_reasons: Option<String>,
}

/// One point of a score history.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryPoint {
    pub seq: i64,
    pub scan_id: String,
    pub scanned_at: Millis,
    pub score: f64,
    pub severities: SeverityCounts,
    /// The gate's verdict on the scan (`None` status when the project had no gate), with
    /// its reasons.
    pub gate: GateResult,
    /// The change against the previous scan on its line.
    pub score_delta: f64,
}

impl From<HistoryRow> for HistoryPoint {
    fn from(r: HistoryRow) -> Self {
        HistoryPoint {
            seq: r.seq,
            scan_id: r.scan_id,
            scanned_at: r.scanned_at,
            score: r.score,
            severities: SeverityCounts::from_columns(
                r.sev_critical,
                r.sev_high,
                r.sev_medium,
                r.sev_low,
            ),
            gate: verdict_from_columns(r.gate_status.as_deref(), r.gate_reasons.as_deref()),
            score_delta: r.score_delta,
        }
    }
}

/// A project's history from `since` (all when `None`), reduced in the database to at most
/// four scans per time bucket: the first, the last, the lowest and the highest score (M4
/// aggregation, which keeps the drawn shape exact). The caller downsamples further (LTTB).
/// Returns the points, oldest first, and how many scans the range holds.
///
/// Scores are packed with the sequence number (`score × 1000 × 10⁹ + seq`) so that plain
/// `MIN`/`MAX` find *which* scan is extreme, portably on SQLite and PostgreSQL.
///
/// `line` is one line of the project (a branch's or a pull request's id, see
/// [`crate::branches`]); `None` is every scan of the project.
pub async fn project_history(
    db: &Db,
    account_id: &str,
    project_id: &str,
    line: Option<&str>,
    since: Option<Millis>,
    buckets: i64,
) -> Result<(Vec<HistoryPoint>, i64), StoreError> {
    match line {
        Some(line) => {
            history_of(
                db,
                account_id,
                project_id,
                "branch_id",
                line,
                since,
                buckets,
            )
            .await
        }
        None => {
            history_of(
                db,
                account_id,
                project_id,
                "project_id",
                project_id,
                since,
                buckets,
            )
            .await
        }
    }
}

/// [`project_history`] over the scans whose `column` (`project_id` or `branch_id`, each the
/// head of an index on `scanned_at`) is `key`.
/// One bucket of the chart as the query returns it: scans, first and last `seq`, and the
/// packed lowest and highest score (see `PACK`).
type ChartBucket = (i64, i64, i64, i64, i64);

async fn history_of(
    db: &Db,
    account_id: &str,
    project_id: &str,
    column: &'static str,
    key: &str,
    since: Option<Millis>,
    buckets: i64,
) -> Result<(Vec<HistoryPoint>, i64), StoreError> {
    const PACK: i64 = 1_000_000_000;
    let buckets = buckets.max(1);
    let bounds_sql = format!(
        "SELECT \
         (SELECT scanned_at FROM scans WHERE {column} = $1 AND scanned_at >= $3 \
          ORDER BY scanned_at LIMIT 1), \
         (SELECT scanned_at FROM scans WHERE {column} = $1 AND scanned_at >= $3 \
          ORDER BY scanned_at DESC LIMIT 1) \
         FROM projects WHERE id = $4 AND account_id = $2"
    );
    let buckets_sql = format!(
        "SELECT COUNT(*), MIN(seq), MAX(seq), \
         MIN(CAST(ROUND(score * 1000) AS BIGINT) * $4 + seq), \
         MAX(CAST(ROUND(score * 1000) AS BIGINT) * $4 + seq) \
         FROM scans WHERE {column} = $1 AND scanned_at >= $2 \
         GROUP BY (scanned_at - $2) / $3"
    );
    let rows: Option<Vec<ChartBucket>> = on_db!(db, pool => {
        // Each end is one step down the history index. (`MIN`/`MAX` over a join would read
        // the whole range on PostgreSQL: 33 ms of the 100,000-scan page.)
        let bounds: Option<(Option<i64>, Option<i64>)> = sqlx::query_as(&bounds_sql)
        .bind(key)
        .bind(account_id)
        .bind(since.unwrap_or(i64::MIN))
        .bind(project_id)
        .fetch_optional(pool)
        .await?;
        match bounds {
            Some((Some(first), Some(last))) => {
                let width = ((last - first) / buckets).max(1);
                sqlx::query_as(&buckets_sql)
                    .bind(key)
                    .bind(first)
                    .bind(width)
                    .bind(PACK)
                    .fetch_all(pool)
                    .await
                    .map(Some)
            }
            _ => Ok::<_, sqlx::Error>(None),
        }
    })?;
    let Some(rows) = rows else {
        return Ok((Vec::new(), 0));
    };
    let total = rows.iter().map(|r| r.0).sum();
    let mut seqs: Vec<i64> = rows
        .iter()
        .flat_map(|&(_, first, last, low, high)| [first, last, low % PACK, high % PACK])
        .collect();
    seqs.sort_unstable();
    seqs.dedup();
    let mut points = Vec::with_capacity(seqs.len());
    for chunk in seqs.chunks(2000) {
        // The list is integers we computed, never text from a request.
        let list = chunk
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let sql = format!(
            "SELECT seq, scan_id, scanned_at, score, sev_critical, sev_high, sev_medium, sev_low, \
             gate_status, score_delta, gate_reasons FROM scans \
             WHERE project_id = $1 AND seq IN ({list})"
        );
        let part: Vec<HistoryRow> = on_db!(db, pool => {
            sqlx::query_as(&sql).bind(project_id).fetch_all(pool).await
        })?;
        points.extend(part.into_iter().map(HistoryPoint::from));
    }
    points.sort_by_key(|p| (p.scanned_at, p.seq));
    Ok((points, total))
}

#[derive(Debug, Clone, PartialEq)]
pub struct ScanRow {
    pub seq: i64,
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
    pub scanned_at: Millis,
    pub received_at: Millis,
    pub finding_count: i64,
    pub gate: GateResult,
    /// The line it is on (`None` only for a scan written by an older release during a
    /// rolling upgrade), its branch name, and its position on the line.
    pub line_id: Option<String>,
    pub branch: Option<String>,
    pub line_seq: Option<i64>,
    pub pull_request: Option<i64>,
    pub commit: Option<String>,
    /// Where the line's repository lives, to link the commit.
    pub repository_url: Option<String>,
    /// For a pull request's scan: the base it was compared with when pushed.
    pub base_branch: Option<String>,
    pub base_scan_id: Option<String>,
    pub base_seq: Option<i64>,
    pub base_new: Option<i64>,
    pub base_fixed: Option<i64>,
    /// The base scan's score (`None`: no base, or it was pruned since).
    pub base_score: Option<f64>,
    /// The base scan's line: where a finding the pull request inherited was first seen.
    pub base_line_id: Option<String>,
    /// How it was pushed (`None` for scans from before this was recorded).
    pub pushed_by: Option<tidemark_wire::PushedBy>,
    /// Housekeeping removed its findings (its row stays: see `crate::housekeeping`).
    pub thinned: bool,
}

/// A scan `s` and its line `b` (`FROM scans s LEFT JOIN branches b ON b.id = s.branch_id`).
const SCAN_COLUMNS: &str = "s.seq, s.scan_id, s.score, s.score_delta, s.passed, s.failed, \
     s.sev_critical, s.sev_high, s.sev_medium, s.sev_low, s.cloud, s.cloud_account_id, \
     s.frameworks, s.state_source, s.scanned_at, s.received_at, s.finding_count, \
     s.gate_status, s.gate_reasons, s.branch_id, b.name AS branch_name, s.line_seq, \
     b.pr_number, s.commit_sha, b.repository_url, s.base_branch, s.base_scan_id, s.base_seq, \
     s.base_new, s.base_fixed, s.pushed_by, s.findings_stored, bs.score AS base_score, \
     bs.branch_id AS base_line_id";
/// With the pull request's base scan `bs`, whose score the page compares with.
const SCAN_FROM: &str = "FROM scans s LEFT JOIN branches b ON b.id = s.branch_id \
     LEFT JOIN scans bs ON bs.project_id = s.project_id AND bs.seq = s.base_seq";

#[derive(sqlx::FromRow)]
struct ScanTuple {
    seq: i64,
    scan_id: String,
    score: f64,
    score_delta: f64,
    passed: i64,
    failed: i64,
    sev_critical: i64,
    sev_high: i64,
    sev_medium: i64,
    sev_low: i64,
    cloud: String,
    cloud_account_id: String,
    frameworks: String,
    state_source: String,
    scanned_at: i64,
    received_at: i64,
    finding_count: i64,
    gate_status: Option<String>,
    gate_reasons: Option<String>,
    branch_id: Option<String>,
    branch_name: Option<String>,
    line_seq: Option<i64>,
    pr_number: Option<i64>,
    commit_sha: Option<String>,
    repository_url: Option<String>,
    base_branch: Option<String>,
    base_scan_id: Option<String>,
    base_seq: Option<i64>,
    base_new: Option<i64>,
    base_fixed: Option<i64>,
    pushed_by: Option<String>,
    findings_stored: Option<String>,
    base_score: Option<f64>,
    base_line_id: Option<String>,
}

impl From<ScanTuple> for ScanRow {
    fn from(t: ScanTuple) -> Self {
        ScanRow {
            seq: t.seq,
            scan_id: t.scan_id,
            score: t.score,
            score_delta: t.score_delta,
            passed: t.passed,
            failed: t.failed,
            severities: SeverityCounts::from_columns(
                t.sev_critical,
                t.sev_high,
                t.sev_medium,
                t.sev_low,
            ),
            cloud: t.cloud,
            cloud_account_id: t.cloud_account_id,
            frameworks: serde_json::from_str(&t.frameworks).unwrap_or_default(),
            state_source: t.state_source,
            scanned_at: t.scanned_at,
            received_at: t.received_at,
            finding_count: t.finding_count,
            gate: verdict_from_columns(t.gate_status.as_deref(), t.gate_reasons.as_deref()),
            line_id: t.branch_id,
            branch: t.branch_name,
            line_seq: t.line_seq,
            pull_request: t.pr_number,
            commit: t.commit_sha,
            repository_url: t.repository_url,
            base_branch: t.base_branch,
            base_scan_id: t.base_scan_id,
            base_seq: t.base_seq,
            base_new: t.base_new,
            base_fixed: t.base_fixed,
            base_score: t.base_score,
            base_line_id: t.base_line_id,
            // Written by this server from a typed value: unreadable only if hand-edited, and
            // then shown as unknown rather than failing the page.
            pushed_by: t
                .pushed_by
                .as_deref()
                .and_then(|j| serde_json::from_str(j).ok()),
            thinned: t.findings_stored.as_deref() == Some(crate::spans::THINNED),
        }
    }
}

/// A page of the project's scans, newest first: of one line (a branch's or a pull
/// request's id), or with `None` of every line.
pub async fn list_scans(
    db: &Db,
    account_id: &str,
    project_id: &str,
    line: Option<&str>,
    offset: i64,
    limit: i64,
) -> Result<Vec<ScanRow>, StoreError> {
    let sql = match line {
        Some(_) => format!(
            "SELECT {SCAN_COLUMNS} {SCAN_FROM} WHERE s.branch_id = $1 AND s.project_id = $2 \
             AND s.account_id = $3 ORDER BY s.line_seq DESC LIMIT $4 OFFSET $5"
        ),
        None => format!(
            "SELECT {SCAN_COLUMNS} {SCAN_FROM} WHERE s.project_id = $1 AND s.project_id = $2 \
             AND s.account_id = $3 ORDER BY s.seq DESC LIMIT $4 OFFSET $5"
        ),
    };
    let rows: Vec<ScanTuple> = on_db!(db, pool => {
        sqlx::query_as(&sql)
            .bind(line.unwrap_or(project_id))
            .bind(project_id)
            .bind(account_id)
            .bind(limit)
            .bind(offset)
            .fetch_all(pool)
            .await
    })?;
    Ok(rows.into_iter().map(ScanRow::from).collect())
}

/// Up to `limit` of the project's scans after sequence number `after_seq`, oldest first: an
/// export pages through a whole history this way, each page one index range.
pub async fn scans_after(
    db: &Db,
    account_id: &str,
    project_id: &str,
    after_seq: i64,
    limit: i64,
) -> Result<Vec<ScanRow>, StoreError> {
    let sql = format!(
        "SELECT {SCAN_COLUMNS} {SCAN_FROM} WHERE s.project_id = $1 AND s.account_id = $2 \
         AND s.seq > $3 ORDER BY s.seq LIMIT $4"
    );
    let rows: Vec<ScanTuple> = on_db!(db, pool => {
        sqlx::query_as(&sql)
            .bind(project_id)
            .bind(account_id)
            .bind(after_seq)
            .bind(limit)
            .fetch_all(pool)
            .await
    })?;
    Ok(rows.into_iter().map(ScanRow::from).collect())
}

/// The scan, and the one before it on its line (for the diff).
pub async fn find_scan(
    db: &Db,
    account_id: &str,
    project_id: &str,
    scan_id: &str,
) -> Result<Option<(ScanRow, Option<ScanRow>)>, StoreError> {
    let sql = format!(
        "SELECT {SCAN_COLUMNS} {SCAN_FROM} \
         WHERE s.project_id = $1 AND s.account_id = $2 AND s.scan_id = $3"
    );
    let prev_on_line = format!(
        "SELECT {SCAN_COLUMNS} {SCAN_FROM} \
         WHERE s.project_id = $1 AND s.account_id = $2 AND s.branch_id = $3 AND s.line_seq = $4"
    );
    let prev_in_project = format!(
        "SELECT {SCAN_COLUMNS} {SCAN_FROM} \
         WHERE s.project_id = $1 AND s.account_id = $2 AND s.seq = $3"
    );
    let found = on_db!(db, pool => {
        let scan: Option<ScanTuple> = sqlx::query_as(&sql)
            .bind(project_id)
            .bind(account_id)
            .bind(scan_id)
            .fetch_optional(pool)
            .await?;
        match scan {
            None => Ok::<_, sqlx::Error>(None),
            Some(scan) => {
                let prev: Option<ScanTuple> = match (&scan.branch_id, scan.line_seq) {
                    (Some(line), Some(line_seq)) => sqlx::query_as(&prev_on_line)
                        .bind(project_id)
                        .bind(account_id)
                        .bind(line)
                        .bind(line_seq - 1)
                        .fetch_optional(pool)
                        .await?,
                    // A scan an older release wrote during a rolling upgrade has no line.
                    _ => sqlx::query_as(&prev_in_project)
                        .bind(project_id)
                        .bind(account_id)
                        .bind(scan.seq - 1)
                        .fetch_optional(pool)
                        .await?,
                };
                Ok(Some((ScanRow::from(scan), prev.map(ScanRow::from))))
            }
        }
    })?;
    Ok(found)
}

/// Which findings of a scan to show.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FindingFilter {
    /// The order of the rows (default: the scanner's, which exports keep).
    pub sort: FindingSort,
    pub direction: SortDirection,
    pub severity: Option<String>,
    pub status: Option<String>,
    /// A framework id: rule ids are "<framework>-<rule number>".
    pub framework: Option<String>,
    /// Case-insensitive text in rule id, resource or message.
    pub text: Option<String>,
}

/// How a scan's findings are ordered. Every order ends with the scanner's, so pages are
/// stable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FindingSort {
    /// As the scanner listed them (exports).
    #[default]
    Scanner,
    /// Most severe first, then by status (failing first), rule and resource: the dashboard's
    /// default, so what needs fixing is on top.
    Severity,
    /// Failing first, then by severity, rule and resource.
    Status,
    Rule,
    Resource,
}

/// Whether the chosen column's order is reversed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SortDirection {
    #[default]
    Ascending,
    Descending,
}

const SEVERITY_RANK: &str = "CASE severity WHEN 'critical' THEN 0 WHEN 'high' THEN 1 \
     WHEN 'medium' THEN 2 WHEN 'low' THEN 3 ELSE 4 END";
const STATUS_RANK: &str = "CASE status WHEN 'FAIL' THEN 0 WHEN 'ERROR' THEN 1 WHEN 'WARN' THEN 2 \
     WHEN 'SKIP' THEN 3 ELSE 4 END";

impl FindingSort {
    pub const ALL: [FindingSort; 5] = [
        FindingSort::Severity,
        FindingSort::Status,
        FindingSort::Rule,
        FindingSort::Resource,
        FindingSort::Scanner,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FindingSort::Scanner => "scanner",
            FindingSort::Severity => "severity",
            FindingSort::Status => "status",
            FindingSort::Rule => "rule",
            FindingSort::Resource => "resource",
        }
    }

    pub fn parse(text: &str) -> Option<FindingSort> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// The ORDER BY clause (fixed texts only: nothing from the request reaches the SQL).
    fn order_by(self, direction: SortDirection) -> String {
        let dir = match direction {
            SortDirection::Ascending => "ASC",
            SortDirection::Descending => "DESC",
        };
        match self {
            FindingSort::Scanner => format!("ordinal {dir}"),
            FindingSort::Severity => {
                format!("{SEVERITY_RANK} {dir}, {STATUS_RANK}, rule_id, resource, ordinal")
            }
            FindingSort::Status => {
                format!("{STATUS_RANK} {dir}, {SEVERITY_RANK}, rule_id, resource, ordinal")
            }
            FindingSort::Rule => format!("rule_id {dir}, resource, ordinal"),
            FindingSort::Resource => format!("resource {dir}, rule_id, ordinal"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct FindingRow {
    pub ordinal: i64,
    pub rule_id: String,
    pub resource: String,
    pub status: String,
    pub severity: String,
    pub message: String,
    pub remediation: String,
}

fn like_pattern(text: &str) -> String {
    let escaped = text
        .to_lowercase()
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_");
    format!("%{escaped}%")
}

/// Over `scan_findings("$1", "$2", …)`.
const FINDING_FILTER: &str = "($3 IS NULL OR severity = $3) \
     AND ($4 IS NULL OR status = $4) \
     AND ($5 IS NULL OR substr(rule_id, 1, length($5) + 1) = $5 || '-') \
     AND ($6 IS NULL OR lower(rule_id) LIKE $6 ESCAPE '\\' OR lower(resource) LIKE $6 ESCAPE '\\' \
          OR lower(message) LIKE $6 ESCAPE '\\')";

/// A page of a scan's findings (in `filter.sort` order) and how many match in all.
pub async fn list_findings(
    db: &Db,
    project_id: &str,
    scan_seq: i64,
    filter: &FindingFilter,
    offset: i64,
    limit: i64,
) -> Result<(Vec<FindingRow>, i64), StoreError> {
    let text = filter
        .text
        .as_deref()
        .filter(|t| !t.trim().is_empty())
        .map(|t| like_pattern(t.trim()));
    // Unfiltered, the page stops after `limit` rows and the total is an index-only count.
    // Filtered, both need a pass over the scan's findings, so the total comes with the page
    // (a window count) in that one pass.
    let filtered = filter.severity.is_some()
        || filter.status.is_some()
        || filter.framework.is_some()
        || text.is_some();
    let total_column = if filtered {
        "COUNT(*) OVER ()"
    } else {
        "CAST(0 AS BIGINT)"
    };
    // Searching reads every finding's texts; otherwise only the page's rows get theirs.
    let order = filter.sort.order_by(filter.direction);
    let texts = if text.is_some() {
        Texts::Joined
    } else {
        Texts::Keys
    };
    let inner = format!(
        "SELECT f.*, {total_column} AS total FROM {} f \
         WHERE {FINDING_FILTER} ORDER BY {order} LIMIT $7 OFFSET $8",
        scan_findings("$1", "$2", texts)
    );
    let page_sql = if texts == Texts::Joined {
        format!(
            "SELECT ordinal, rule_id, resource, status, severity, message, remediation, total \
             FROM ({inner}) p ORDER BY {order}"
        )
    } else {
        let (columns, join) = texts_of("p", "$1");
        format!(
            "SELECT p.ordinal, p.rule_id, p.resource, p.status, p.severity, {columns}, p.total \
             FROM ({inner}) p {join} ORDER BY {order}"
        )
    };
    let count_sql = format!(
        "SELECT COUNT(*) FROM {} f WHERE {FINDING_FILTER}",
        scan_findings("$1", "$2", texts)
    );
    let rows: Vec<FindingPageRow> = on_db!(db, pool => {
        sqlx::query_as(&page_sql)
            .bind(project_id)
            .bind(scan_seq)
            .bind(filter.severity.as_deref())
            .bind(filter.status.as_deref())
            .bind(filter.framework.as_deref())
            .bind(text.as_deref())
            .bind(limit)
            .bind(offset)
            .fetch_all(pool)
            .await
    })?;
    let total = match rows.first() {
        Some(first) if filtered => first.total,
        // A page past the end has no row to carry the total.
        _ if !filtered || offset > 0 => {
            let (total,): (i64,) = on_db!(db, pool => {
                sqlx::query_as(&count_sql)
                    .bind(project_id)
                    .bind(scan_seq)
                    .bind(filter.severity.as_deref())
                    .bind(filter.status.as_deref())
                    .bind(filter.framework.as_deref())
                    .bind(text.as_deref())
                    .fetch_one(pool)
                    .await
            })?;
            total
        }
        _ => 0,
    };
    let rows = rows.into_iter().map(|r| r.finding).collect();
    Ok((rows, total))
}

/// How many of the scan's findings have each (severity, status): what the filters' choices
/// say they hold. One index range of the scan.
pub async fn finding_counts(
    db: &Db,
    project_id: &str,
    scan_seq: i64,
) -> Result<Vec<(String, String, i64)>, StoreError> {
    let sql = format!(
        "SELECT severity, status, COUNT(*) FROM {} f GROUP BY severity, status",
        scan_findings("$1", "$2", Texts::None)
    );
    let rows = on_db!(db, pool => {
        sqlx::query_as(&sql)
        .bind(project_id)
        .bind(scan_seq)
        .fetch_all(pool)
        .await
    })?;
    Ok(rows)
}

/// [`finding_counts`] per framework of the scan: (framework, severity, status, count), a
/// finding belonging to a framework as the framework filter reads it (its rule id starts
/// with `<framework>-`). One statement, a branch of a `UNION ALL` per framework.
pub async fn framework_counts(
    db: &Db,
    project_id: &str,
    scan_seq: i64,
    frameworks: &[String],
) -> Result<Vec<(String, String, String, i64)>, StoreError> {
    if frameworks.is_empty() {
        return Ok(Vec::new());
    }
    let sql = (0..frameworks.len())
        .map(|i| {
            let f = i + 3;
            format!(
                "SELECT CAST(${f} AS TEXT), severity, status, COUNT(*) FROM {} f \
                 WHERE substr(rule_id, 1, length(${f}) + 1) = ${f} || '-' GROUP BY severity, status",
                scan_findings("$1", "$2", Texts::None)
            )
        })
        .collect::<Vec<_>>()
        .join(" UNION ALL ");
    let rows = on_db!(db, pool => {
        let mut query = sqlx::query_as(&sql).bind(project_id).bind(scan_seq);
        for framework in frameworks {
            query = query.bind(framework);
        }
        query.fetch_all(pool).await
    })?;
    Ok(rows)
}

/// Open findings (FAIL, WARN, ERROR) compared with the previous scan, by rule id + resource.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanDiff {
    pub new: Vec<FindingRow>,
    pub fixed: Vec<FindingRow>,
    pub new_count: i64,
    pub fixed_count: i64,
    pub unchanged_count: i64,
}

const OPEN: &str = "status IN ('FAIL', 'WARN', 'ERROR')";

/// The diff between scan `seq` and `base_seq` (any two scans of the project), with at most
/// `limit` rows of each list: open findings (FAIL, WARN, ERROR) by rule id and resource.
///
/// Each scan's open findings are read once as keys, in the scanner's order, and compared here;
/// then only the rows shown are read whole. An anti-join in SQL of two scans' findings has no
/// index on `(rule_id, resource)` and SQLite compared every row with every row (more than a
/// minute for two scans of 50,000 findings).
pub async fn diff_scans(
    db: &Db,
    project_id: &str,
    seq: i64,
    base_seq: i64,
    limit: i64,
) -> Result<ScanDiff, StoreError> {
    use std::collections::HashSet;
    let keys_sql = format!(
        "SELECT ordinal, rule_id, resource FROM {} f WHERE {OPEN} ORDER BY ordinal",
        scan_findings("$1", "$2", Texts::None)
    );
    type Key = (i64, String, String);
    let (now, then): (Vec<Key>, Vec<Key>) = on_db!(db, pool => {
        let now = sqlx::query_as(&keys_sql).bind(project_id).bind(seq).fetch_all(pool).await?;
        let then = sqlx::query_as(&keys_sql).bind(project_id).bind(base_seq).fetch_all(pool).await?;
        Ok::<_, sqlx::Error>((now, then))
    })?;
    let set = |rows: &[Key]| -> HashSet<(String, String)> {
        rows.iter()
            .map(|(_, r, x)| (r.clone(), x.clone()))
            .collect()
    };
    let (now_set, then_set) = (set(&now), set(&then));
    let only = |rows: &[Key], other: &HashSet<(String, String)>| -> Vec<i64> {
        rows.iter()
            .filter(|(_, r, x)| !other.contains(&(r.clone(), x.clone())))
            .map(|(ordinal, _, _)| *ordinal)
            .collect()
    };
    let (new, fixed) = (only(&now, &then_set), only(&then, &now_set));
    let keep = usize::try_from(limit).unwrap_or(0);
    Ok(ScanDiff {
        new: rows_at(db, project_id, seq, &new[..new.len().min(keep)]).await?,
        fixed: rows_at(db, project_id, base_seq, &fixed[..fixed.len().min(keep)]).await?,
        new_count: new.len() as i64,
        fixed_count: fixed.len() as i64,
        unchanged_count: (now.len() - new.len()) as i64,
    })
}

/// Which of `keys` (rule id, resource) are open findings (FAIL, WARN, ERROR) of the project's
/// scan `seq`: what a pull request's scan page tells apart from its base with, reading only
/// the rows it shows (at most 200 keys are looked up).
pub async fn open_among(
    db: &Db,
    project_id: &str,
    seq: i64,
    keys: &[(&str, &str)],
) -> Result<std::collections::HashSet<(String, String)>, StoreError> {
    use std::fmt::Write as _;
    let keys = &keys[..keys.len().min(200)];
    if keys.is_empty() {
        return Ok(Default::default());
    }
    let mut sql = format!(
        "SELECT rule_id, resource FROM {} f WHERE {OPEN} AND (",
        scan_findings("$1", "$2", Texts::None)
    );
    for i in 0..keys.len() {
        let n = 3 + 2 * i;
        let _ = write!(
            sql,
            "{}(f.rule_id = ${n} AND f.resource = ${})",
            if i == 0 { "" } else { " OR " },
            n + 1
        );
    }
    sql.push(')');
    let rows: Vec<(String, String)> = on_db!(db, pool => {
        let mut q = sqlx::query_as(&sql).bind(project_id).bind(seq);
        for (rule, resource) in keys {
            q = q.bind(*rule).bind(*resource);
        }
        q.fetch_all(pool).await
    })?;
    Ok(rows.into_iter().collect())
}

/// The findings of the project's scan `seq` at `ordinals`, whole, in the scanner's order.
async fn rows_at(
    db: &Db,
    project_id: &str,
    seq: i64,
    ordinals: &[i64],
) -> Result<Vec<FindingRow>, StoreError> {
    if ordinals.is_empty() {
        return Ok(Vec::new());
    }
    // Integers read from the database, never text from a request.
    let list = ordinals
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let (texts, join) = texts_of("k", "$1");
    let sql = format!(
        "SELECT k.ordinal, k.rule_id, k.resource, k.status, k.severity, {texts} \
         FROM (SELECT * FROM {} f WHERE f.ordinal IN ({list})) k {join} ORDER BY k.ordinal",
        scan_findings("$1", "$2", Texts::Keys)
    );
    let rows = on_db!(db, pool => {
        sqlx::query_as(&sql).bind(project_id).bind(seq).fetch_all(pool).await
    })?;
    Ok(rows)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArchiveOutcome {
    Done,
    NotFound,
    /// Unarchiving would exceed the tier's cap.
    NoFreeSlot {
        cap: u64,
    },
}

/// Archives (`archived = true`) or unarchives a project of the account. Unarchiving needs a
/// free slot under `cap`; the check and the change are one step per account.
pub async fn set_archived(
    db: &Writer,
    account_id: &str,
    project_id: &str,
    archived: bool,
    cap: Option<u64>,
    audit: &AuditContext,
) -> Result<ArchiveOutcome, StoreError> {
    let outcome = on_db_write!(db, pool => {
        let mut tx = pool.begin_account_write(account_id).await?;
        let found: Option<(Option<i64>, String)> = sqlx::query_as(
            "SELECT archived_at, label FROM projects WHERE id = $1 AND account_id = $2",
        )
        .bind(project_id)
        .bind(account_id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((archived_at, label)) = found else {
            return Ok(ArchiveOutcome::NotFound);
        };
        if !archived && archived_at.is_some() {
            if let Some(cap) = cap {
                let (active,): (i64,) = sqlx::query_as(
                    "SELECT COUNT(*) FROM projects WHERE account_id = $1 AND archived_at IS NULL",
                )
                .bind(account_id)
                .fetch_one(&mut *tx)
                .await?;
                if u64::try_from(active).unwrap_or(0) >= cap {
                    return Ok(ArchiveOutcome::NoFreeSlot { cap });
                }
            }
        }
        sqlx::query("UPDATE projects SET archived_at = $1 WHERE id = $2 AND account_id = $3")
            .bind(if archived { archived_at.or(Some(audit.at)) } else { None })
            .bind(project_id)
            .bind(account_id)
            .execute(&mut *tx)
            .await?;
        // Archiving an archived project (or the reverse) changes nothing worth a record.
        if archived_at.is_some() != archived {
            let state = |a: bool| Some(if a { "archived" } else { "active" }.to_owned());
            let change = Change {
                account_id: Some(account_id),
                action: if archived { Action::ProjectArchived } else { Action::ProjectUnarchived },
                target: label,
                before: state(!archived),
                after: state(archived),
            };
            record_in!(&mut *tx, audit, change)?;
        }
        tx.commit().await?;
        Ok::<_, sqlx::Error>(ArchiveOutcome::Done)
    })?;
    Ok(outcome)
}
