//! Moving scans stored before spans (one row per finding in `findings`) to spans, online, in
//! transactions of at most [`ROWS_PER_STEP`] rows each, so pushes never wait long behind one.
//!
//! A branch's scans move oldest first. A moved scan's findings go on in the spans of the
//! branch's previous scan stored as spans when they are the same (those spans are lengthened
//! to cover it), and start spans of their own otherwise: the same plan a push makes
//! (`domain::spans::plan_spans`). Until the scan is marked as stored in spans (one small
//! transaction at the end), nothing written for it is read: a scan's spans are read only once
//! it is so marked, and rows only while it is not. Its rows are deleted after that, a step at
//! a time.
//!
//! Killed anywhere (even `kill -9`), a move leaves every scan reading as before; the next run
//! undoes what a half-done move of a scan wrote and moves it again, so the move resumes where
//! it stopped. A scan that spans already cover (one a replica of the previous release wrote
//! between two pushes of this release during a rolling upgrade) stays as rows.

use crate::{AccountId, ProjectId};
use tidemark_domain::spans::{plan_spans, text_hash, SpanKey};

use super::{insert_spans, texts_statements, LiveSpan, NewSpan, STORED_AS_SPANS};
use crate::stmt::{bound, Stmt};
use crate::{on_db, on_db_write, BeginWrite as _, Db, StoreError, Writer};

/// Scans looked at per batch at most.
const SCANS_PER_BATCH: i64 = 50;
/// Rows one transaction writes at most.
pub const ROWS_PER_STEP: usize = 500;

/// Where a move has got to: the last scan it looked at, by (project, storage position).
pub type Cursor = Option<(ProjectId, i64)>;

/// What one batch did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MoveBatch {
    /// Scans moved to spans, and their findings.
    pub moved: u64,
    pub findings: u64,
    /// Scans left as rows (spans already cover them, or they have no line).
    pub left: u64,
    /// Where the next batch starts; `None` once no scan is left to look at.
    pub cursor: Cursor,
}

#[derive(sqlx::FromRow)]
struct Candidate {
    project_id: ProjectId,
    seq: i64,
    account_id: AccountId,
    branch_id: Option<String>,
    line_seq: Option<i64>,
    finding_count: i64,
}

/// How many scans are still stored as rows.
pub async fn scans_as_rows(db: &Db) -> Result<i64, StoreError> {
    let n = on_db!(db, pool => {
        sqlx::query_scalar("SELECT COUNT(*) FROM scans WHERE findings_stored IS NULL")
            .fetch_one(pool)
            .await
    })?;
    Ok(n)
}

/// Moves the next scans after `cursor` that are stored as rows, up to about `max_findings`
/// findings (at least one scan) of one project.
pub async fn move_batch(
    db: &Writer,
    cursor: &Cursor,
    max_findings: i64,
) -> Result<MoveBatch, StoreError> {
    let (after_project, after_seq) = cursor.clone().unwrap_or_default();
    let candidates: Vec<Candidate> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT project_id, seq, account_id, branch_id, line_seq, finding_count FROM scans \
             WHERE (project_id > $1 OR (project_id = $2 AND seq > $3)) \
             AND findings_stored IS NULL ORDER BY project_id, seq LIMIT $4",
        )
        .bind(&after_project)
        .bind(&after_project)
        .bind(after_seq)
        .bind(SCANS_PER_BATCH)
        .fetch_all(pool)
        .await
    })?;
    let Some(first) = candidates.first() else {
        return Ok(MoveBatch::default());
    };
    let mut report = MoveBatch::default();
    let mut findings = 0;
    for scan in candidates
        .iter()
        .take_while(|c| c.project_id == first.project_id)
    {
        if report.cursor.is_some() && findings + scan.finding_count > max_findings {
            break;
        }
        findings += scan.finding_count;
        match move_scan(db, scan).await? {
            Some(n) => {
                report.moved += 1;
                report.findings += n;
            }
            None => report.left += 1,
        }
        report.cursor = Some((scan.project_id.clone(), scan.seq));
    }
    Ok(report)
}

#[derive(sqlx::FromRow)]
struct Row {
    rule_id: String,
    resource: String,
    status: String,
    severity: String,
    message: String,
    remediation: String,
}

/// Runs `writes` in transactions of at most [`ROWS_PER_STEP`] rows' worth each (statements
/// are built that small), under the account's write lock.
async fn run_steps(db: &Writer, account: &AccountId, writes: Vec<Stmt>) -> Result<(), StoreError> {
    for stmt in writes {
        on_db_write!(db, pool => {
            let mut tx = pool.begin_account_write(account).await?;
            bound(&stmt.sql, stmt.args.clone())?.execute(&mut *tx).await?;
            tx.commit().await?;
            Ok::<_, sqlx::Error>(())
        })?;
    }
    Ok(())
}

/// The spans a moved scan starts (`started`: its row index and the span's position), with
/// the texts they bring, [`ROWS_PER_STEP`] per statement.
fn start_statements(
    scan: &Candidate,
    line: &str,
    rows: &[Row],
    texts: &[String],
    started: &[(usize, i64)],
) -> Vec<Stmt> {
    let y = scan.seq;
    let mut writes = Vec::new();
    for chunk in started.chunks(ROWS_PER_STEP) {
        writes.extend(texts_statements(
            &scan.project_id,
            chunk.iter().map(|&(f, _)| {
                (
                    texts[f].as_str(),
                    rows[f].message.as_str(),
                    rows[f].remediation.as_str(),
                )
            }),
        ));
        let spans: Vec<NewSpan<'_>> = chunk
            .iter()
            .map(|&(f, position)| NewSpan {
                position,
                rule_id: &rows[f].rule_id,
                resource: &rows[f].resource,
                status: &rows[f].status,
                severity: &rows[f].severity,
                text: &texts[f],
            })
            .collect();
        writes.extend(insert_spans(line, y, y + 1, &spans));
    }
    writes
}

/// The previous scan `p`'s spans at `kept` positions, lengthened to cover scan `y`. No span
/// covers `y` yet, so those spans all end after `p` and at or before `y`.
fn lengthen_statements(line: &str, y: i64, p: i64, kept: &[i64]) -> Vec<Stmt> {
    kept.chunks(ROWS_PER_STEP)
        .map(|chunk| {
            let mut sql = String::from(
                "UPDATE finding_spans SET to_seq = $1 WHERE branch_id = $2 AND to_seq > $3 \
                 AND from_seq <= $4 AND position IN (",
            );
            let mut stmt = Stmt::new(String::new())
                .bind(y + 1)
                .bind(line)
                .bind(p)
                .bind(p);
            for (i, position) in chunk.iter().enumerate() {
                sql.push_str(&format!("{}${}", if i == 0 { "" } else { "," }, 5 + i));
                stmt = stmt.bind(*position);
            }
            sql.push(')');
            stmt.sql = sql;
            stmt
        })
        .collect()
}

type Facts = (Option<Option<String>>, i64, Option<i64>);

/// Whether the scan is still stored as rows, how many spans cover it already, and the
/// line's latest earlier scan stored as spans.
/// Read outside any transaction: only this move (one at a time, under the lease) writes
/// the spans it reads, and a push never starts a span covering an older scan.
async fn move_facts(
    db: &Writer,
    scan: &Candidate,
    line: &str,
    line_seq: i64,
) -> Result<Facts, StoreError> {
    let y = scan.seq;
    let facts: Facts = on_db!(db, pool => {
        let stored = sqlx::query_scalar(
            "SELECT findings_stored FROM scans WHERE project_id = $1 AND seq = $2",
        )
        .bind(&scan.project_id)
        .bind(y)
        .fetch_optional(pool)
        .await?;
        let covered = sqlx::query_scalar(
            "SELECT COUNT(*) FROM finding_spans WHERE branch_id = $1 AND to_seq > $2 \
             AND from_seq <= $3",
        )
        .bind(line)
        .bind(y)
        .bind(y)
        .fetch_one(pool)
        .await?;
        let previous = sqlx::query_scalar(&format!(
            "SELECT seq FROM scans WHERE branch_id = $1 AND line_seq < $2 \
             AND findings_stored = '{STORED_AS_SPANS}' ORDER BY line_seq DESC LIMIT 1"
        ))
        .bind(line)
        .bind(line_seq)
        .fetch_optional(pool)
        .await?;
        Ok::<_, sqlx::Error>((stored, covered, previous))
    })?;
    Ok(facts)
}

/// Moves one scan: `Some(findings)` when it moved, `None` when it stays as rows.
async fn move_scan(db: &Writer, scan: &Candidate) -> Result<Option<u64>, StoreError> {
    let (Some(line), Some(line_seq)) = (&scan.branch_id, scan.line_seq) else {
        return Ok(None);
    };
    let y = scan.seq;
    // What a move of this scan that did not finish wrote: spans of it alone (only a move
    // starts spans at a scan stored as rows), and spans lengthened to just past it (shortened
    // to end at it, which every scan stored as spans reads the same).
    run_steps(
        db,
        &scan.account_id,
        vec![
            Stmt::new(
                "DELETE FROM finding_spans WHERE branch_id = $1 AND from_seq = $2 AND to_seq = $3",
            )
            .bind(line.as_str())
            .bind(y)
            .bind(y + 1),
            Stmt::new(
                "UPDATE finding_spans SET to_seq = $1 WHERE branch_id = $2 AND to_seq = $3 \
                 AND from_seq < $4",
            )
            .bind(y)
            .bind(line.as_str())
            .bind(y + 1)
            .bind(y),
        ],
    )
    .await?;
    let (stored, covered, previous) = move_facts(db, scan, line, line_seq).await?;
    // Moved or thinned meanwhile, or covered by spans already: it stays as it is.
    if !matches!(stored, Some(None)) || covered > 0 {
        return Ok(None);
    }
    let (base, rows): (Vec<LiveSpan>, Vec<Row>) = on_db!(db, pool => {
        let base = match previous {
            Some(p) => {
                sqlx::query_as(
                    "SELECT position, rule_id, resource, status, severity, text_hash AS text \
                     FROM finding_spans WHERE branch_id = $1 AND to_seq > $2 AND from_seq <= $3",
                )
                .bind(line)
                .bind(p)
                .bind(p)
                .fetch_all(pool)
                .await?
            }
            None => Vec::new(),
        };
        let rows = sqlx::query_as(
            "SELECT rule_id, resource, status, severity, message, remediation FROM findings \
             WHERE project_id = $1 AND scan_seq = $2 ORDER BY ordinal",
        )
        .bind(&scan.project_id)
        .bind(y)
        .fetch_all(pool)
        .await?;
        Ok::<_, sqlx::Error>((base, rows))
    })?;
    let texts: Vec<String> = rows
        .iter()
        .map(|r| text_hash(&r.message, &r.remediation))
        .collect();
    let current: Vec<(i64, SpanKey<'_>)> = base.iter().map(LiveSpan::key).collect();
    let keys: Vec<SpanKey<'_>> = rows
        .iter()
        .zip(&texts)
        .map(|(r, text)| SpanKey {
            rule_id: &r.rule_id,
            resource: &r.resource,
            status: &r.status,
            severity: &r.severity,
            text,
        })
        .collect();
    let plan = plan_spans(&current, &keys);

    // New spans, with the texts they bring; then the previous scan's spans this one has,
    // lengthened to cover it.
    let mut writes = start_statements(scan, line, &rows, &texts, &plan.started);
    if let Some(p) = previous {
        let kept: Vec<i64> = plan.kept.iter().map(|&i| base[i].position()).collect();
        writes.extend(lengthen_statements(line, y, p, &kept));
    }
    // Then the scan reads its spans, and its rows go.
    writes.push(
        Stmt::new(
            "UPDATE scans SET findings_stored = $1 WHERE project_id = $2 AND seq = $3 \
             AND findings_stored IS NULL",
        )
        .bind(STORED_AS_SPANS)
        .bind(scan.project_id.as_str())
        .bind(y),
    );
    // A move writes spans that end at or before the line's latest scan, never live ones; a
    // replica's kept state of the line is dropped all the same, as for any writer but a push.
    writes.push(Stmt::new(crate::pushes::line_state::FORGET).bind(line.as_str()));
    run_steps(db, &scan.account_id, writes).await?;
    delete_rows(db, &scan.account_id, &scan.project_id, y).await?;
    Ok(Some(rows.len() as u64))
}

/// Deletes the rows in `findings` of the project's scan `seq` (one no longer read from them:
/// moved to spans, or thinned), [`ROWS_PER_STEP`] per transaction.
pub async fn delete_rows(
    db: &Writer,
    account_id: &AccountId,
    project_id: &ProjectId,
    seq: i64,
) -> Result<(), StoreError> {
    loop {
        let deleted = on_db_write!(db, pool => {
            let mut tx = pool.begin_project_write(account_id, project_id).await?;
            let n = sqlx::query(
                "DELETE FROM findings WHERE project_id = $1 AND scan_seq = $2 AND ordinal IN \
                 (SELECT ordinal FROM findings WHERE project_id = $3 AND scan_seq = $4 \
                  ORDER BY ordinal LIMIT $5)",
            )
            .bind(project_id)
            .bind(seq)
            .bind(project_id)
            .bind(seq)
            .bind(ROWS_PER_STEP as i64)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            tx.commit().await?;
            Ok::<_, sqlx::Error>(n)
        })?;
        if deleted < ROWS_PER_STEP as u64 {
            return Ok(());
        }
    }
}

/// Deletes the rows left in `findings` of scans no longer read from them (a run killed
/// between marking a scan and deleting its rows), up to `scans` scans' worth. Returns how
/// many scans it cleared.
pub async fn sweep_rows(db: &Writer, scans: i64) -> Result<u64, StoreError> {
    let left: Vec<(AccountId, ProjectId, i64)> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT DISTINCT s.account_id, f.project_id, f.scan_seq FROM findings f \
             JOIN scans s ON s.project_id = f.project_id AND s.seq = f.scan_seq \
             WHERE s.findings_stored IS NOT NULL LIMIT $1",
        )
        .bind(scans)
        .fetch_all(pool)
        .await
    })?;
    for (account, project, seq) in &left {
        delete_rows(db, account, project, *seq).await?;
    }
    Ok(left.len() as u64)
}

/// Moves every scan still stored as rows, batch after batch (for tests and benchmarks; the
/// server runs [`move_batch`] in its housekeeping passes).
pub async fn move_all(db: &Writer, max_findings: i64) -> Result<MoveBatch, StoreError> {
    let mut total = MoveBatch::default();
    let mut cursor: Cursor = None;
    loop {
        let batch = move_batch(db, &cursor, max_findings).await?;
        total.moved += batch.moved;
        total.findings += batch.findings;
        total.left += batch.left;
        if batch.cursor.is_none() {
            return Ok(total);
        }
        cursor = batch.cursor;
    }
}
