//! A project's scans as the dashboard lists and opens them.

use crate::{AccountId, ProjectId, ScanId};
use tidemark_domain::Millis;
use tidemark_wire::{GateResult, SeverityCounts};

use crate::gates::verdict_from_columns;

use crate::{on_db, Db, StoreError};

#[derive(Debug, Clone, PartialEq)]
pub struct ScanRow {
    pub seq: i64,
    pub scan_id: ScanId,
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
    pub base_scan_id: Option<ScanId>,
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
    /// Requirements that passed in the line's previous scan and fail in this one, as its
    /// push found them (a licence with drift detection; empty otherwise).
    pub drifted: Vec<tidemark_wire::DriftedRequirements>,
}

/// A scan `s` and its line `b` (`FROM scans s LEFT JOIN branches b ON b.id = s.branch_id`).
const SCAN_COLUMNS: &str = "s.seq, s.scan_id, s.score, s.score_delta, s.passed, s.failed, \
     s.sev_critical, s.sev_high, s.sev_medium, s.sev_low, s.cloud, s.cloud_account_id, \
     s.frameworks, s.state_source, s.scanned_at, s.received_at, s.finding_count, \
     s.gate_status, s.gate_reasons, s.branch_id, b.name AS branch_name, s.line_seq, \
     b.pr_number, s.commit_sha, b.repository_url, s.base_branch, s.base_scan_id, s.base_seq, \
     s.base_new, s.base_fixed, s.pushed_by, s.findings_stored, bs.score AS base_score, \
     bs.branch_id AS base_line_id, s.drifted";
/// With the pull request's base scan `bs`, whose score the page compares with.
const SCAN_FROM: &str = "FROM scans s LEFT JOIN branches b ON b.id = s.branch_id \
     LEFT JOIN scans bs ON bs.project_id = s.project_id AND bs.seq = s.base_seq";

#[derive(sqlx::FromRow)]
struct ScanTuple {
    seq: i64,
    scan_id: ScanId,
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
    base_scan_id: Option<ScanId>,
    base_seq: Option<i64>,
    base_new: Option<i64>,
    base_fixed: Option<i64>,
    pushed_by: Option<String>,
    findings_stored: Option<String>,
    base_score: Option<f64>,
    base_line_id: Option<String>,
    drifted: Option<String>,
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
            drifted: t
                .drifted
                .as_deref()
                .and_then(|j| serde_json::from_str(j).ok())
                .unwrap_or_default(),
        }
    }
}

/// A page of the project's scans, newest first: of one line (a branch's or a pull
/// request's id), or with `None` of every line.
pub async fn list_scans(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
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
    account_id: &AccountId,
    project_id: &ProjectId,
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
    account_id: &AccountId,
    project_id: &ProjectId,
    scan_id: &ScanId,
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
