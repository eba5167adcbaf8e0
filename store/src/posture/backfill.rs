//! Judging the posture of scans stored before the push kept it (issue 47), online, one scan
//! per transaction, like the move to spans.
//!
//! A scan is pending (`scans.posture_pending = 1`) until judged: every scan stored before the
//! migration, and any a replica of the previous release pushes during a rolling upgrade. A
//! pending scan is judged from its findings as the push would have judged it: the triage that
//! held when it arrived (the line's triage events up to then, the latest per finding) and
//! drift against the line's previous scan. Its `scan_posture` rows and the end of its pending
//! state commit together, so a run killed anywhere (even `kill -9`) leaves each scan judged
//! or pending, and the next run carries on with the pending ones.
//!
//! A scan whose findings are gone (thinned), with no line, or naming no framework any of its
//! rules is in has nothing to judge: it stops being pending without rows. Housekeeping runs
//! this before it thins, so no scan loses its findings before it is judged.

use std::collections::HashSet;

use tidemark_domain::Millis;

use super::{framework_rows, insert_statement, judge, scan_statuses, PostureScan};
use crate::spans::THINNED;
use crate::stmt::bound;
use crate::{on_db, on_db_write, AccountId, BeginWrite as _, Db, ProjectId, StoreError, Writer};

/// What one batch did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Backfilled {
    /// Scans that now have posture rows.
    pub judged: u64,
    /// Scans with nothing to judge (findings thinned, no line, no framework matched).
    pub nothing_to_judge: u64,
}

impl Backfilled {
    pub fn scans(&self) -> u64 {
        self.judged + self.nothing_to_judge
    }

    pub fn add(&mut self, other: Backfilled) {
        self.judged += other.judged;
        self.nothing_to_judge += other.nothing_to_judge;
    }
}

#[derive(sqlx::FromRow)]
struct Pending {
    project_id: ProjectId,
    seq: i64,
    account_id: AccountId,
    branch_id: Option<String>,
    line_seq: Option<i64>,
    scanned_at: Millis,
    received_at: Millis,
    frameworks: String,
    findings_stored: Option<String>,
}

/// How many scans still wait for their posture.
pub async fn scans_pending(db: &Db) -> Result<i64, StoreError> {
    let n = on_db!(db, pool => {
        sqlx::query_scalar("SELECT COUNT(*) FROM scans WHERE posture_pending = 1")
            .fetch_one(pool)
            .await
    })?;
    Ok(n)
}

/// Judges up to `max_scans` pending scans; none judged means none is left.
pub async fn backfill_batch(db: &Writer, max_scans: i64) -> Result<Backfilled, StoreError> {
    let pending: Vec<Pending> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT project_id, seq, account_id, branch_id, line_seq, scanned_at, received_at, \
             frameworks, findings_stored FROM scans WHERE posture_pending = 1 \
             ORDER BY project_id, seq LIMIT $1",
        )
        .bind(max_scans)
        .fetch_all(pool)
        .await
    })?;
    let mut done = Backfilled::default();
    for scan in &pending {
        if backfill_scan(db, scan).await? {
            done.judged += 1;
        } else {
            done.nothing_to_judge += 1;
        }
    }
    Ok(done)
}

/// Judges every pending scan, batch after batch (tests, benchmarks and the operator's pass).
pub async fn backfill_all(db: &Writer, max_scans: i64) -> Result<Backfilled, StoreError> {
    let mut total = Backfilled::default();
    loop {
        let batch = backfill_batch(db, max_scans).await?;
        if batch.scans() == 0 {
            return Ok(total);
        }
        total.add(batch);
    }
}

/// Judges one scan: whether it got posture rows.
async fn backfill_scan(db: &Writer, scan: &Pending) -> Result<bool, StoreError> {
    let frameworks: Vec<String> = serde_json::from_str(&scan.frameworks).unwrap_or_default();
    let statement = match (&scan.branch_id, scan.line_seq) {
        (Some(line), Some(line_seq))
            if !frameworks.is_empty() && scan.findings_stored.as_deref() != Some(THINNED) =>
        {
            let findings = scan_statuses(db, &scan.project_id, scan.seq).await?;
            let set_aside = set_aside_at(db, line, scan.received_at).await?;
            let now = judge(&findings, |rule, resource| {
                set_aside.contains(&(rule.to_owned(), resource.to_owned()))
            });
            let previous_findings = previous_scan_findings(db, scan, line, line_seq).await?;
            let previous = judge(&previous_findings, |_, _| false);
            insert_statement(
                &PostureScan {
                    project_id: &scan.project_id,
                    seq: scan.seq,
                    line_id: line,
                    scanned_at: scan.scanned_at,
                },
                &framework_rows(&frameworks, &now, &previous),
            )
        }
        _ => None,
    };
    let judged = statement.is_some();
    on_db_write!(db, pool => {
        let mut tx = pool.begin_account_write(&scan.account_id).await?;
        let ended = sqlx::query(
            "UPDATE scans SET posture_pending = 0 WHERE project_id = $1 AND seq = $2 \
             AND posture_pending = 1",
        )
        .bind(&scan.project_id)
        .bind(scan.seq)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        let kept: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM scan_posture WHERE project_id = $1 AND scan_seq = $2",
        )
        .bind(&scan.project_id)
        .bind(scan.seq)
        .fetch_one(&mut *tx)
        .await?;
        // Judged meanwhile (another run), or kept by a push of this release that a pending
        // default marked: its rows stand.
        if ended == 1 && kept == 0 {
            if let Some(stmt) = &statement {
                bound(&stmt.sql, stmt.args.clone())?.execute(&mut *tx).await?;
                // The latest scan of an active project's default line counts in the
                // account's roll-up: sum it again with these rows.
                let counted: i64 = sqlx::query_scalar(
                    "SELECT COUNT(*) FROM projects p JOIN branches b \
                     ON b.id = p.default_branch_id WHERE p.id = $1 AND b.head_seq = $2 \
                     AND p.archived_at IS NULL",
                )
                .bind(&scan.project_id)
                .bind(scan.seq)
                .fetch_one(&mut *tx)
                .await?;
                if counted > 0 {
                    crate::posture::summary::rebuild!(tx, scan.account_id.as_str())?;
                }
            }
        }
        tx.commit().await?;
        Ok::<_, sqlx::Error>(())
    })?;
    Ok(judged)
}

/// The line's findings set aside (accepted risk, false positive) at `at`: each finding's
/// latest triage event up to then, if it sets it aside and had not lapsed.
async fn set_aside_at(
    db: &Db,
    line: &str,
    at: Millis,
) -> Result<HashSet<(String, String)>, StoreError> {
    let rows: Vec<(String, String)> = on_db!(db, pool => {
        sqlx::query_as(&format!(
            "SELECT t.rule_id, t.resource FROM tracked_findings t \
             JOIN finding_triage_events e ON e.finding_id = t.id \
             WHERE t.branch_id = $1 AND e.at = (SELECT MAX(e2.at) FROM finding_triage_events e2 \
               WHERE e2.finding_id = t.id AND e2.at <= $2) \
             AND e.state IN ({}) AND (e.expires_at IS NULL OR e.expires_at > $3)",
            crate::findings::POSTURE_SET_ASIDE
        ))
        .bind(line)
        .bind(at)
        .bind(at)
        .fetch_all(pool)
        .await
    })?;
    Ok(rows.into_iter().collect())
}

/// The findings of the line's scan before `scan` (none when it has none, or they are thinned).
async fn previous_scan_findings(
    db: &Db,
    scan: &Pending,
    line: &str,
    line_seq: i64,
) -> Result<Vec<super::StatusRow>, StoreError> {
    let previous: Option<i64> = on_db!(db, pool => {
        sqlx::query_scalar(
            "SELECT seq FROM scans WHERE branch_id = $1 AND line_seq < $2 \
             ORDER BY line_seq DESC LIMIT 1",
        )
        .bind(line)
        .bind(line_seq)
        .fetch_optional(pool)
        .await
    })?;
    match previous {
        Some(seq) => scan_statuses(db, &scan.project_id, seq).await,
        None => Ok(Vec::new()),
    }
}
