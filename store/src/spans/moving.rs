//! Moving scans stored before spans (one row per finding in `findings`) to spans, online: in
//! small batches, each one transaction, while pushes go on. A batch that is killed leaves
//! nothing half-done (its transaction rolls back); the next run starts over from the first
//! scan still stored as rows, so the move resumes wherever it stopped.
//!
//! A branch's scans move oldest first. A moved scan's findings go on in the spans of the
//! branch's previous scan stored as spans when they are the same (those spans are lengthened
//! to cover it), and start spans of their own otherwise: the same plan a push makes
//! (`domain::spans::plan_spans`). A scan that spans already cover (one a replica of the
//! previous release wrote between two pushes of this release during a rolling upgrade) stays
//! as rows: every read handles both.

use tidemark_domain::spans::{plan_spans, text_hash, SpanKey};

use super::{insert_spans, texts_statements, LiveSpan, NewSpan, STORED_AS_SPANS};
use crate::stmt::{bound, Stmt};
use crate::{on_db, on_db_write, BeginWrite as _, StoreError, Writer};

/// Scans looked at per batch at most.
const SCANS_PER_BATCH: i64 = 50;

/// Where a move has got to: the last scan it looked at, by (project, storage position).
pub type Cursor = Option<(String, i64)>;

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
    project_id: String,
    seq: i64,
    account_id: String,
    branch_id: Option<String>,
    line_seq: Option<i64>,
    finding_count: i64,
}

/// How many scans are still stored as rows.
pub async fn scans_as_rows(db: &crate::Db) -> Result<i64, StoreError> {
    let n = on_db!(db, pool => {
        sqlx::query_scalar("SELECT COUNT(*) FROM scans WHERE findings_stored IS NULL")
            .fetch_one(pool)
            .await
    })?;
    Ok(n)
}

/// Moves the next scans after `cursor` that are stored as rows, up to about `max_findings`
/// findings (at least one scan), in one transaction per project's run of scans.
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
    // One project's scans, oldest first, within the findings budget (the first always).
    let mut batch: Vec<&Candidate> = Vec::new();
    let mut findings = 0;
    for c in candidates
        .iter()
        .take_while(|c| c.project_id == first.project_id)
    {
        if !batch.is_empty() && findings + c.finding_count > max_findings {
            break;
        }
        findings += c.finding_count;
        batch.push(c);
    }
    let mut report = MoveBatch {
        cursor: batch.last().map(|c| (c.project_id.clone(), c.seq)),
        ..MoveBatch::default()
    };
    let account = first.account_id.clone();
    on_db_write!(db, pool => {
        let mut tx = pool.begin_account_write(&account).await?;
        for scan in &batch {
            match move_scan(&mut tx, scan).await? {
                Some(n) => {
                    report.moved += 1;
                    report.findings += n;
                }
                None => report.left += 1,
            }
        }
        tx.commit().await?;
        Ok::<_, StoreError>(())
    })?;
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

/// Moves one scan inside `tx`: `Some(findings)` when it moved, `None` when it stays as rows.
async fn move_scan<'c, DB>(
    tx: &mut sqlx::Transaction<'c, DB>,
    scan: &Candidate,
) -> Result<Option<u64>, StoreError>
where
    DB: sqlx::Database,
    for<'q> <DB as sqlx::Database>::Arguments<'q>: sqlx::IntoArguments<'q, DB>,
    for<'e> &'e mut <DB as sqlx::Database>::Connection: sqlx::Executor<'e, Database = DB>,
    for<'q> String: sqlx::Encode<'q, DB> + sqlx::Decode<'q, DB> + sqlx::Type<DB>,
    for<'q> &'q str: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    for<'q> Option<String>: sqlx::Encode<'q, DB> + sqlx::Decode<'q, DB>,
    for<'q> Option<i64>: sqlx::Encode<'q, DB> + sqlx::Decode<'q, DB>,
    for<'q> Option<f64>: sqlx::Encode<'q, DB>,
    for<'q> i64: sqlx::Encode<'q, DB> + sqlx::Decode<'q, DB> + sqlx::Type<DB>,
    for<'q> f64: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    for<'r> LiveSpan: sqlx::FromRow<'r, <DB as sqlx::Database>::Row>,
    for<'r> Row: sqlx::FromRow<'r, <DB as sqlx::Database>::Row>,
    for<'r> (i64,): sqlx::FromRow<'r, <DB as sqlx::Database>::Row>,
    for<'r> (Option<String>,): sqlx::FromRow<'r, <DB as sqlx::Database>::Row>,
    usize: sqlx::ColumnIndex<<DB as sqlx::Database>::Row>,
{
    let (Some(line), Some(line_seq)) = (&scan.branch_id, scan.line_seq) else {
        return Ok(None);
    };
    let y = scan.seq;
    // Still stored as rows (a concurrent move or housekeeping may have been first).
    let stored: Option<(Option<String>,)> =
        sqlx::query_as("SELECT findings_stored FROM scans WHERE project_id = $1 AND seq = $2")
            .bind(&scan.project_id)
            .bind(y)
            .fetch_optional(&mut **tx)
            .await?;
    if !matches!(stored, Some((None,))) {
        return Ok(None);
    }
    let (covered,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM finding_spans WHERE branch_id = $1 AND to_seq > $2 AND from_seq <= $3",
    )
    .bind(line)
    .bind(y)
    .bind(y)
    .fetch_one(&mut **tx)
    .await?;
    if covered > 0 {
        return Ok(None);
    }
    let previous: Option<(i64,)> = sqlx::query_as(&format!(
        "SELECT seq FROM scans WHERE branch_id = $1 AND line_seq < $2 \
         AND findings_stored = '{STORED_AS_SPANS}' ORDER BY line_seq DESC LIMIT 1"
    ))
    .bind(line)
    .bind(line_seq)
    .fetch_optional(&mut **tx)
    .await?;
    let base: Vec<LiveSpan> = match previous {
        Some((p,)) => {
            sqlx::query_as(
                "SELECT position, rule_id, resource, status, severity, text_hash AS text \
                 FROM finding_spans WHERE branch_id = $1 AND to_seq > $2 AND from_seq <= $3",
            )
            .bind(line)
            .bind(p)
            .bind(p)
            .fetch_all(&mut **tx)
            .await?
        }
        None => Vec::new(),
    };
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT rule_id, resource, status, severity, message, remediation FROM findings \
         WHERE project_id = $1 AND scan_seq = $2 ORDER BY ordinal",
    )
    .bind(&scan.project_id)
    .bind(y)
    .fetch_all(&mut **tx)
    .await?;
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

    let mut writes: Vec<Stmt> = texts_statements(
        &scan.project_id,
        plan.started.iter().map(|&(f, _)| {
            (
                texts[f].as_str(),
                rows[f].message.as_str(),
                rows[f].remediation.as_str(),
            )
        }),
    );
    // The previous scan's spans this one has: lengthened to cover it. No span covers it yet,
    // so those spans all end after the previous scan and at or before this one.
    if let Some((p,)) = previous {
        let kept: Vec<i64> = plan.kept.iter().map(|&i| base[i].position()).collect();
        for chunk in kept.chunks(3_000) {
            let mut sql = String::from(
                "UPDATE finding_spans SET to_seq = $1 WHERE branch_id = $2 AND to_seq > $3 \
                 AND from_seq <= $4 AND position IN (",
            );
            let mut stmt = Stmt::new(String::new())
                .bind(y + 1)
                .bind(line.as_str())
                .bind(p)
                .bind(p);
            for (i, position) in chunk.iter().enumerate() {
                sql.push_str(&format!("{}${}", if i == 0 { "" } else { "," }, 5 + i));
                stmt = stmt.bind(*position);
            }
            sql.push(')');
            stmt.sql = sql;
            writes.push(stmt);
        }
    }
    let started: Vec<NewSpan<'_>> = plan
        .started
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
    writes.extend(insert_spans(line, y, y + 1, &started));
    writes.push(
        Stmt::new("DELETE FROM findings WHERE project_id = $1 AND scan_seq = $2")
            .bind(scan.project_id.as_str())
            .bind(y),
    );
    writes.push(
        Stmt::new("UPDATE scans SET findings_stored = $1 WHERE project_id = $2 AND seq = $3")
            .bind(STORED_AS_SPANS)
            .bind(scan.project_id.as_str())
            .bind(y),
    );
    for stmt in writes {
        bound::<DB>(&stmt.sql, stmt.args)?
            .execute(&mut **tx)
            .await?;
    }
    Ok(Some(rows.len() as u64))
}

/// Moves every scan still stored as rows, batch after batch (for the operator's command and
/// tests; the server runs [`move_batch`] in the background).
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
