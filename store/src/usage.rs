//! What each project's data takes in the database (issue 36): Settings and `project list
//! --json` show it. An estimate from what the rows hold (their texts' lengths and a fixed
//! cost per row for numbers, keys and the row's own overhead), the same on both backends, so
//! that projects compare with each other; the database's own size is in `/metrics`.
//!
//! Measuring a project reads every row it has, so it is done off the request path, one
//! project at a time by its indexes, and kept in `project_usage` (issue 70: summing the whole
//! account on every read grew with N squared). Readers get the last measurement and when it
//! was made; a push (the project's scan count moves), housekeeping and pruning make a project
//! stale, and [`refresh_stale`] measures stale projects again (the `project_usage` worker,
//! and a small allowance on each read so a small account reads what it just did).

use std::time::{Duration, Instant};

use tidemark_domain::time::DAY_MS;
use tidemark_domain::Millis;

use crate::{on_db, on_db_write, Db, StoreError, Writer};
use crate::{AccountId, ProjectId};

/// Bytes a row costs beyond its texts, by table: what a page of that table holds per row,
/// measured on SQLite (numbers, keys, headers and the indexes' share).
const SCAN_ROW: i64 = 420;
const SPAN_ROW: i64 = 110;
const TEXT_ROW: i64 = 60;
const FINDING_ROW: i64 = 60;
const TRACKED_ROW: i64 = 200;

/// A measurement older than this is taken again even if nothing said it moved (a catch-all
/// for writes that do not mark it, such as moving stored rows into spans).
const STALE_AFTER_MS: Millis = DAY_MS;

/// Deletes a project's measurement, in a transaction that removes its rows: the next
/// [`refresh_stale`] measures it again. Binds the project id as `$1`.
pub(crate) const FORGET: &str = "DELETE FROM project_usage WHERE project_id = $1";

/// One project's share.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ProjectBytes {
    pub project_id: ProjectId,
    pub label: String,
    pub scans: i64,
    /// Scans whose findings housekeeping removed (their rows stay), as last measured.
    pub scans_thinned: i64,
    /// `None` until the project is first measured.
    pub bytes: Option<i64>,
    /// When `bytes` was measured.
    pub measured_at: Option<Millis>,
}

/// Every project of the account as last measured, largest first (projects not measured yet
/// last). One indexed read, whatever the projects hold.
pub async fn project_bytes(
    db: &Db,
    account_id: &AccountId,
) -> Result<Vec<ProjectBytes>, StoreError> {
    type Row = (
        ProjectId,
        String,
        i64,
        Option<i64>,
        Option<i64>,
        Option<i64>,
    );
    let rows: Vec<Row> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT p.id, p.label, p.scan_count, u.scans_thinned, u.bytes, u.measured_at \
             FROM projects p LEFT JOIN project_usage u ON u.project_id = p.id \
             WHERE p.account_id = $1 ORDER BY COALESCE(u.bytes, -1) DESC, p.label",
        )
        .bind(account_id)
        .fetch_all(pool)
        .await
    })?;
    Ok(rows
        .into_iter()
        .map(
            |(project_id, label, scans, scans_thinned, bytes, measured_at)| ProjectBytes {
                project_id,
                label,
                scans,
                scans_thinned: scans_thinned.unwrap_or(0),
                bytes,
                measured_at,
            },
        )
        .collect())
}

/// Projects whose measurement is missing or stale as of `now`, the longest waiting first:
/// the account's, or every account's. A project pushed to since it was measured counts once
/// its measurement is `settle` old.
pub async fn stale_projects(
    db: &Db,
    account_id: Option<&AccountId>,
    now: Millis,
    settle: Duration,
    limit: i64,
) -> Result<Vec<ProjectId>, StoreError> {
    let settle = Millis::try_from(settle.as_millis()).unwrap_or(Millis::MAX);
    let rows: Vec<(ProjectId,)> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT p.id FROM projects p LEFT JOIN project_usage u ON u.project_id = p.id \
             WHERE ($1 IS NULL OR p.account_id = $2) \
             AND (u.project_id IS NULL OR u.measured_at < $3 \
                  OR (u.scan_count <> p.scan_count AND u.measured_at <= $4)) \
             ORDER BY COALESCE(u.measured_at, 0), p.id LIMIT $5",
        )
        .bind(account_id)
        .bind(account_id)
        .bind(now - STALE_AFTER_MS)
        .bind(now.saturating_sub(settle))
        .bind(limit)
        .fetch_all(pool)
        .await
    })?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}

/// Measures one project (a read by its indexes, outside the writer's turn) and keeps the
/// figure. The scan count is read by the same statement, so a push landing meanwhile leaves
/// the row stale and it is measured again.
pub async fn measure_project(
    db: &Writer,
    project_id: &ProjectId,
    now: Millis,
) -> Result<(), StoreError> {
    let sql = format!(
        "SELECT p.scan_count, \
         (SELECT COUNT(*) FROM scans s WHERE s.project_id = p.id \
            AND s.findings_stored = 'thinned') AS scans_thinned, \
         CAST((SELECT COUNT(*) FROM scans s WHERE s.project_id = p.id) * {SCAN_ROW} \
         + COALESCE((SELECT SUM(LENGTH(sp.rule_id) + LENGTH(sp.resource) + LENGTH(sp.status) \
              + LENGTH(sp.severity) + LENGTH(sp.text_hash) + 2 * LENGTH(sp.branch_id) + {SPAN_ROW}) \
            FROM finding_spans sp JOIN branches b ON b.id = sp.branch_id \
            WHERE b.project_id = p.id), 0) \
         + COALESCE((SELECT SUM(LENGTH(t.message) + LENGTH(t.remediation) + LENGTH(t.hash) \
              + LENGTH(t.project_id) + {TEXT_ROW}) FROM finding_texts t WHERE t.project_id = p.id), 0) \
         + COALESCE((SELECT SUM(LENGTH(f.rule_id) + LENGTH(f.resource) + LENGTH(f.status) \
              + LENGTH(f.severity) + LENGTH(f.message) + LENGTH(f.remediation) \
              + LENGTH(f.project_id) + {FINDING_ROW}) FROM findings f WHERE f.project_id = p.id), 0) \
         + COALESCE((SELECT SUM(LENGTH(tf.rule_id) + LENGTH(tf.resource) + {TRACKED_ROW}) \
            FROM tracked_findings tf JOIN branches b ON b.id = tf.branch_id \
            WHERE b.project_id = p.id), 0) AS BIGINT) AS bytes \
         FROM projects p WHERE p.id = $1"
    );
    type Row = (i64, i64, i64);
    let measured: Option<Row> = on_db!(db.db(), pool => {
        sqlx::query_as(&sql).bind(project_id).fetch_optional(pool).await
    })?;
    let Some((scan_count, scans_thinned, bytes)) = measured else {
        return Ok(());
    };
    on_db_write!(db, pool => {
        sqlx::query(
            "INSERT INTO project_usage \
             (project_id, scans_thinned, bytes, scan_count, measured_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (project_id) DO UPDATE SET \
             scans_thinned = excluded.scans_thinned, bytes = excluded.bytes, \
             scan_count = excluded.scan_count, measured_at = excluded.measured_at",
        )
        .bind(project_id)
        .bind(scans_thinned)
        .bind(bytes)
        .bind(scan_count)
        .bind(now)
        .execute(pool)
        .await
        .map(|_| ())
    })?;
    Ok(())
}

/// How much of the stale work one call may do.
#[derive(Debug, Clone, Copy)]
pub struct Allowance {
    /// Projects measured at most.
    pub projects: i64,
    /// No project is started after this long.
    pub time: Duration,
    /// A project pushed to since it was measured waits until its measurement is this old:
    /// measuring reads every row the project has, and an account pushing back to back would
    /// otherwise have each of its projects measured again after every push.
    pub settle: Duration,
}

/// Measures stale projects (the account's, or every account's) within `allowance`; returns
/// how many it measured. What is left stays stale for the next call.
pub async fn refresh_stale(
    db: &Writer,
    account_id: Option<&AccountId>,
    now: Millis,
    allowance: Allowance,
) -> Result<u64, StoreError> {
    let started = Instant::now();
    let stale = stale_projects(db, account_id, now, allowance.settle, allowance.projects).await?;
    let mut measured = 0;
    for project_id in stale {
        if started.elapsed() >= allowance.time {
            break;
        }
        measure_project(db, &project_id, now).await?;
        measured += 1;
    }
    Ok(measured)
}
