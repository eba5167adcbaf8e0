//! What the dashboard reads, always within one account: every query is scoped by the
//! account id, so a project id from another account finds nothing.

use crate::{AccountId, ProjectId, ScanId};
use tidemark_domain::audit::{Action, AuditContext};
use tidemark_domain::Millis;
use tidemark_wire::{GateResult, SeverityCounts};

use crate::audit::{record_in, Change};
use crate::gates::verdict_from_columns;

use crate::Writer;
use crate::{on_db, on_db_write, BeginWrite as _, Db, StoreError};

/// How many recent scores a project's sparkline shows.
pub const SPARKLINE_POINTS: i64 = 20;

#[derive(Debug, Clone, PartialEq)]
pub struct ProjectRow {
    pub id: ProjectId,
    pub label: String,
    pub created_at: Millis,
    pub archived_at: Option<Millis>,
    pub scan_count: i64,
    pub last_score: Option<f64>,
    pub last_delta: Option<f64>,
    pub last_scan_id: Option<ScanId>,
    pub last_scanned_at: Option<Millis>,
    /// Oldest first.
    pub recent_scores: Vec<f64>,
    /// The default line's latest verdict (`None`: no scan, or no gate when it was pushed).
    pub gate: GateResult,
}

impl From<ProjectHeadRow> for ProjectRow {
    fn from(p: ProjectHeadRow) -> Self {
        ProjectRow {
            recent_scores: Vec::new(),
            last_scanned_at: p.last_scanned_at,
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
    }
}

#[derive(sqlx::FromRow)]
struct ProjectHeadRow {
    id: ProjectId,
    label: String,
    created_at: i64,
    archived_at: Option<i64>,
    scan_count: i64,
    last_score: Option<f64>,
    last_delta: Option<f64>,
    last_scan_id: Option<ScanId>,
    last_gate_status: Option<String>,
    last_gate_reasons: Option<String>,
    last_scanned_at: Option<i64>,
}

/// One of a project's latest scores, for its sparkline.
#[derive(sqlx::FromRow)]
struct SparkPoint {
    project_id: ProjectId,
    score: f64,
}

/// A page of findings, each row carrying the filtered total (a window count) when filtered.
#[derive(sqlx::FromRow)]
struct FindingPageRow {
    #[sqlx(flatten)]
    finding: FindingRow,
    total: i64,
}

/// Every project of the account, active first then archived, by label.
pub async fn list_projects(db: &Db, account_id: &AccountId) -> Result<Vec<ProjectRow>, StoreError> {
    let mut rows = project_heads(db, account_id, None).await?;
    fill_recent_scores(db, account_id, &mut rows, false).await?;
    Ok(rows)
}

/// Every project of the account as [`list_projects`] orders them, without their sparklines
/// (`recent_scores` empty): what a page of them is chosen from, before
/// [`fill_recent_scores`] reads the chosen ones' points.
pub async fn list_project_heads(
    db: &Db,
    account_id: &AccountId,
) -> Result<Vec<ProjectRow>, StoreError> {
    project_heads(db, account_id, None).await
}

/// One project of the account, or none (another account's id finds nothing).
pub async fn find_project(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
) -> Result<Option<ProjectRow>, StoreError> {
    let mut rows = project_heads(db, account_id, Some(project_id)).await?;
    fill_recent_scores(db, account_id, &mut rows, true).await?;
    Ok(rows.pop())
}

/// A failing project as read: id, label, verdict columns.
type FailingRow = (ProjectId, String, Option<String>, Option<String>);

/// The account's active projects whose default line's latest scan failed its gate, by label:
/// the first `limit` as `(id, label, the gate's reasons)`, and how many there are. Read by
/// their verdict (`projects_gate_status`), never by reading every project.
pub async fn failing_projects(
    db: &Db,
    account_id: &AccountId,
    limit: i64,
) -> Result<(Vec<(ProjectId, String, Vec<String>)>, u64), StoreError> {
    let failed = tidemark_wire::GateStatus::Failed.as_str();
    let (rows, total): (Vec<FailingRow>, i64) = on_db!(db, pool => {
        let rows = sqlx::query_as(
            "SELECT id, label, last_gate_status, last_gate_reasons FROM projects \
             WHERE account_id = $1 AND last_gate_status = $2 AND archived_at IS NULL \
             ORDER BY label LIMIT $3",
        )
        .bind(account_id)
        .bind(failed)
        .bind(limit)
        .fetch_all(pool)
        .await;
        match rows {
            Ok(rows) => sqlx::query_scalar(
                "SELECT COUNT(*) FROM projects WHERE account_id = $1 \
                 AND last_gate_status = $2 AND archived_at IS NULL",
            )
            .bind(account_id)
            .bind(failed)
            .fetch_one(pool)
            .await
            .map(|total| (rows, total)),
            Err(err) => Err(err),
        }
    })?;
    let rows = rows
        .into_iter()
        .map(|(id, label, status, reasons)| {
            let gate = verdict_from_columns(status.as_deref(), reasons.as_deref());
            (id, label, gate.reasons)
        })
        .collect();
    Ok((rows, u64::try_from(total).unwrap_or(0)))
}

/// The id of the account's project labelled `label`, if it has one.
pub async fn project_id_by_label(
    db: &Db,
    account_id: &AccountId,
    label: &str,
) -> Result<Option<ProjectId>, StoreError> {
    let id: Option<(ProjectId,)> = on_db!(db, pool => {
        sqlx::query_as("SELECT id FROM projects WHERE account_id = $1 AND label = $2")
            .bind(account_id)
            .bind(label)
            .fetch_optional(pool)
            .await
    })?;
    Ok(id.map(|(id,)| id))
}

/// The account's projects, or just `only` among them, without sparkline points. The latest
/// scan time is the default line's head's (the sparkline's newest point), kept on the row.
async fn project_heads(
    db: &Db,
    account_id: &AccountId,
    only: Option<&ProjectId>,
) -> Result<Vec<ProjectRow>, StoreError> {
    let projects: Vec<ProjectHeadRow> = on_db!(db, pool => {
        // The project's line is its default branch: its count and head.
        sqlx::query_as(
            "SELECT p.id, p.label, p.created_at, p.archived_at, \
             COALESCE(d.scan_count, p.scan_count) AS scan_count, p.last_score, p.last_delta, \
             p.last_scan_id, p.last_gate_status, p.last_gate_reasons, p.last_scanned_at \
             FROM projects p LEFT JOIN branches d ON d.id = p.default_branch_id \
             WHERE p.account_id = $1 AND ($2 IS NULL OR p.id = $2) \
             ORDER BY p.archived_at IS NOT NULL, p.label",
        )
        .bind(account_id)
        .bind(only)
        .fetch_all(pool)
        .await
    })?;
    Ok(projects.into_iter().map(ProjectRow::from).collect())
}

/// Reads the sparkline points of `rows`' projects (the newest [`SPARKLINE_POINTS`] scores of
/// each default line, oldest first) into their `recent_scores`: of these projects only
/// (`by_id`, a page of them), or of the whole account's in one pass.
pub async fn fill_recent_scores(
    db: &Db,
    account_id: &AccountId,
    rows: &mut [ProjectRow],
    by_id: bool,
) -> Result<(), StoreError> {
    if rows.is_empty() {
        return Ok(());
    }
    // One index range of the default line per project; a page names its projects.
    let only = if by_id {
        let list: Vec<String> = (0..rows.len()).map(|i| format!("${}", i + 3)).collect();
        format!("AND p.id IN ({})", list.join(", "))
    } else {
        String::new()
    };
    let sql = format!(
        "SELECT s.project_id, s.score FROM projects p \
         JOIN branches d ON d.id = p.default_branch_id \
         JOIN scans s ON s.branch_id = d.id AND s.line_seq > d.scan_count - $2 \
         WHERE p.account_id = $1 {only} ORDER BY s.project_id, s.line_seq"
    );
    let ids: Vec<&ProjectId> = if by_id {
        rows.iter().map(|r| &r.id).collect()
    } else {
        Vec::new()
    };
    let points: Vec<SparkPoint> = on_db!(db, pool => {
        let mut query = sqlx::query_as(&sql).bind(account_id).bind(SPARKLINE_POINTS);
        for id in &ids {
            query = query.bind(*id);
        }
        query.fetch_all(pool).await
    })?;
    let mut by_project: std::collections::HashMap<ProjectId, Vec<f64>> = Default::default();
    for point in points {
        by_project
            .entry(point.project_id)
            .or_default()
            .push(point.score);
    }
    for row in rows {
        row.recent_scores = by_project.remove(&row.id).unwrap_or_default();
    }
    Ok(())
}

#[derive(sqlx::FromRow)]
struct HistoryRow {
    seq: i64,
    scan_id: ScanId,
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
    pub scan_id: ScanId,
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
    account_id: &AccountId,
    project_id: &ProjectId,
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
    account_id: &AccountId,
    project_id: &ProjectId,
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

mod findings;
mod project_page;
mod scans;

pub use findings::*;
pub use project_page::{project_page, project_page_rows, ProjectPage};
pub use scans::*;

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
    account_id: &AccountId,
    project_id: &ProjectId,
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
            // An archived project's findings leave the overview; an unarchived one's return.
            crate::rollups::rebuild_account_days!(tx, account_id.as_str())?;
            crate::posture::summary::rebuild!(tx, account_id.as_str())?;
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
