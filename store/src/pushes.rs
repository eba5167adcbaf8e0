//! Appending a pushed scan to a project's history: one transaction that decides and writes.

use tidemark_domain::push::{scan_id_candidate, ValidPush};
use tidemark_domain::rate::{RateDecision, RollingLimit};
use tidemark_domain::Millis;

use crate::{on_db, on_db_write, BeginWrite as _, Db, StoreError};

/// Findings per INSERT statement: 9 parameters each stays far below SQLite's limit of 32,766
/// bound parameters (and PostgreSQL's 65,535).
const FINDINGS_PER_STATEMENT: usize = 2_000;

/// Writes in the window, their oldest time, then the project's id, archived_at, last scan
/// id, last delta and last body hash (all null when the label is new).
type HeadRow = (
    i64,
    Option<i64>,
    Option<String>,
    Option<i64>,
    Option<String>,
    Option<f64>,
    Option<String>,
);

/// Who pushes, and under which limits.
#[derive(Debug, Clone)]
pub struct PushContext<'a> {
    pub account_id: &'a str,
    pub key_id: &'a str,
    /// Active-project cap; `None` is unlimited.
    pub project_cap: Option<u64>,
    pub write_limit: RollingLimit,
    pub now: Millis,
    /// Record the key's use (callers skip it when the stored time is recent enough).
    pub touch_key: bool,
}

/// The scan a push created (or, for a replay, had created).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredScan {
    pub project_id: String,
    pub scan_id: String,
    pub score_delta: f64,
}

/// The account's write budget after this request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateStatus {
    pub limit: u32,
    pub remaining: u32,
    pub reset_secs: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum PushOutcome {
    Appended(StoredScan, RateStatus),
    /// The same push as the project's latest scan: nothing appended.
    Replayed(StoredScan, RateStatus),
    ProjectLimitReached {
        cap: u64,
        rate: RateStatus,
    },
    ProjectArchived {
        project_id: String,
        rate: RateStatus,
    },
    RateLimited {
        retry_after_secs: u64,
        rate: RateStatus,
    },
}

/// Records a push.
///
/// Everything happens in one transaction begun with `begin_account_write`, so per account the
/// replay check, the write-rate check, the project cap and the append are one atomic step on
/// every replica (SQLite: one writer at a time; PostgreSQL: the account's row lock, taken
/// before anything is read). The project's head (`scan_count`, `last_score`, `last_delta`)
/// moves in a single `UPDATE … RETURNING` that computes the delta from the predecessor's
/// score: N concurrent pushes make N entries whose deltas chain exactly.
pub async fn record_push(
    db: &Db,
    ctx: &PushContext<'_>,
    push: &ValidPush,
) -> Result<PushOutcome, StoreError> {
    let req = push.request();
    // Early `return`s and `?` inside the body leave this function directly.
    let outcome = on_db_write!(db, pool => {
        let mut tx = pool.begin_account_write(ctx.account_id).await?;
        // The project (if any) and the account's writes in the window, in one statement.
        let (in_window, oldest, project_id, archived_at, last_scan_id, last_delta, last_hash): HeadRow =
            sqlx::query_as(
                "SELECT r.n, r.oldest, p.id, p.archived_at, p.last_scan_id, p.last_delta, p.last_body_hash \
                 FROM (SELECT COUNT(*) AS n, MIN(received_at) AS oldest FROM scans \
                       WHERE account_id = $1 AND received_at > $3) r \
                 LEFT JOIN projects p ON p.account_id = $1 AND p.label = $2",
            )
            .bind(ctx.account_id)
            .bind(push.label())
            .bind(ctx.write_limit.window_start(ctx.now))
            .fetch_one(&mut *tx)
            .await?;
        let project = project_id.map(|id| (id, archived_at, last_scan_id, last_delta, last_hash));
        let in_window = u32::try_from(in_window).unwrap_or(u32::MAX);
        let current = rate_status(&ctx.write_limit, ctx.now, in_window, oldest);

        if let Some((project_id, archived_at, last_scan_id, last_delta, last_hash)) = &project {
            if archived_at.is_some() {
                tx.rollback().await?;
                return Ok(PushOutcome::ProjectArchived {
                    project_id: project_id.clone(),
                    rate: current,
                });
            }
            if let (Some(scan_id), Some(delta), Some(hash)) = (last_scan_id, last_delta, last_hash) {
                if hash == push.body_hash() {
                    tx.rollback().await?;
                    let scan = StoredScan {
                        project_id: project_id.clone(),
                        scan_id: scan_id.clone(),
                        score_delta: *delta,
                    };
                    return Ok(PushOutcome::Replayed(scan, current));
                }
            }
        }

        let remaining = match ctx.write_limit.decide(ctx.now, in_window, oldest) {
            RateDecision::Allow { remaining, .. } => remaining,
            RateDecision::Refuse { retry_after_secs } => {
                tx.rollback().await?;
                return Ok(PushOutcome::RateLimited {
                    retry_after_secs,
                    rate: current,
                });
            }
        };

        let project_id = match project {
            Some((id, ..)) => id,
            None => {
                let (active,): (i64,) = sqlx::query_as(
                    "SELECT COUNT(*) FROM projects WHERE account_id = $1 AND archived_at IS NULL",
                )
                .bind(ctx.account_id)
                .fetch_one(&mut *tx)
                .await?;
                if let Some(cap) = ctx.project_cap {
                    if u64::try_from(active).unwrap_or(0) >= cap {
                        tx.rollback().await?;
                        return Ok(PushOutcome::ProjectLimitReached { cap, rate: current });
                    }
                }
                let id = tidemark_domain::ids::new_project_id();
                sqlx::query(
                    "INSERT INTO projects (id, account_id, label, created_at) VALUES ($1, $2, $3, $4)",
                )
                .bind(&id)
                .bind(ctx.account_id)
                .bind(push.label())
                .bind(ctx.now)
                .execute(&mut *tx)
                .await?;
                id
            }
        };

        // One statement moves the head: the delta is computed from the old `last_score` (SET
        // expressions see the row as it was), and the scan id is recorded as the one the
        // insert below will almost always get.
        let base = push.scan_id_base();
        let (seq, score_delta): (i64, f64) = sqlx::query_as(
            "UPDATE projects SET scan_count = scan_count + 1, last_score = $2, \
             last_delta = $2 - COALESCE(last_score, $2), last_scan_id = $3, last_body_hash = $4 \
             WHERE id = $1 RETURNING scan_count, last_delta",
        )
        .bind(&project_id)
        .bind(req.score)
        .bind(&base)
        .bind(push.body_hash())
        .fetch_one(&mut *tx)
        .await?;

        // The scan id is usually free; `ON CONFLICT DO NOTHING` says when it is not. Within
        // a project every id shares the label's slug, so the ids of one second are `base`,
        // `base-2`, … without gaps, and the count of that second's scans names the next free
        // suffix in one indexed query.
        let frameworks = serde_json::to_string(&req.frameworks).unwrap_or_default();
        let mut n = 1;
        let scan_id = loop {
            let candidate = scan_id_candidate(&base, n);
            let inserted: Option<(i64,)> = sqlx::query_as(
                "INSERT INTO scans (project_id, seq, scan_id, account_id, score, score_delta, passed, \
                 failed, sev_critical, sev_high, sev_medium, sev_low, cloud, cloud_account_id, \
                 frameworks, state_source, scanned_at, received_at, finding_count, body_hash) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
                 $18, $19, $20) ON CONFLICT (project_id, scan_id) DO NOTHING RETURNING seq",
            )
            .bind(&project_id)
            .bind(seq)
            .bind(&candidate)
            .bind(ctx.account_id)
            .bind(req.score)
            .bind(score_delta)
            .bind(as_i64(req.passed))
            .bind(as_i64(req.failed))
            .bind(as_i64(req.severity_counts.critical))
            .bind(as_i64(req.severity_counts.high))
            .bind(as_i64(req.severity_counts.medium))
            .bind(as_i64(req.severity_counts.low))
            .bind(req.cloud.as_str())
            .bind(&req.cloud_account_id)
            .bind(&frameworks)
            .bind(req.state_source.as_str())
            .bind(push.scanned_at().timestamp_millis())
            .bind(ctx.now)
            .bind(req.findings.len() as i64)
            .bind(push.body_hash())
            .fetch_optional(&mut *tx)
            .await?;
            if inserted.is_some() {
                break candidate;
            }
            n = if n == 1 {
                let second = push.scanned_at().timestamp() * 1000;
                let (same_second,): (i64,) = sqlx::query_as(
                    "SELECT COUNT(*) FROM scans WHERE project_id = $1 AND scanned_at >= $2 AND scanned_at < $3",
                )
                .bind(&project_id)
                .bind(second)
                .bind(second + 1000)
                .fetch_one(&mut *tx)
                .await?;
                u32::try_from(same_second).unwrap_or(u32::MAX - 1) + 1
            } else {
                n + 1
            };
        };

        for (chunk_no, chunk) in req.findings.chunks(FINDINGS_PER_STATEMENT).enumerate() {
            let first = (chunk_no * FINDINGS_PER_STATEMENT) as i64;
            let mut insert = sqlx::QueryBuilder::new(
                "INSERT INTO findings (project_id, scan_seq, ordinal, rule_id, resource, status, \
                 severity, message, remediation) ",
            );
            insert.push_values(chunk.iter().enumerate(), |mut row, (i, f)| {
                row.push_bind(&project_id)
                    .push_bind(seq)
                    .push_bind(first + i as i64)
                    .push_bind(&f.rule_id)
                    .push_bind(&f.resource)
                    .push_bind(f.status.as_str())
                    .push_bind(f.severity.as_str())
                    .push_bind(&f.message)
                    .push_bind(&f.remediation);
            });
            insert.build().execute(&mut *tx).await?;
        }

        if scan_id != base {
            sqlx::query("UPDATE projects SET last_scan_id = $2 WHERE id = $1")
                .bind(&project_id)
                .bind(&scan_id)
                .execute(&mut *tx)
                .await?;
        }
        if ctx.touch_key {
            sqlx::query("UPDATE api_keys SET last_used_at = $1 WHERE id = $2")
                .bind(ctx.now)
                .bind(ctx.key_id)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;

        let rate = RateStatus {
            limit: ctx.write_limit.limit,
            remaining,
            reset_secs: current.reset_secs,
        };
        PushOutcome::Appended(
            StoredScan {
                project_id,
                scan_id,
                score_delta,
            },
            rate,
        )
    });
    Ok(outcome)
}

/// The account's write budget without writing anything (for refused pushes).
pub async fn write_rate_status(
    db: &Db,
    account_id: &str,
    limit: &RollingLimit,
    now: Millis,
) -> Result<RateStatus, StoreError> {
    let (count, oldest): (i64, Option<i64>) = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT COUNT(*), MIN(received_at) FROM scans WHERE account_id = $1 AND received_at > $2",
        )
        .bind(account_id)
        .bind(limit.window_start(now))
        .fetch_one(pool)
        .await
    })?;
    Ok(rate_status(
        limit,
        now,
        u32::try_from(count).unwrap_or(u32::MAX),
        oldest,
    ))
}

fn rate_status(
    limit: &RollingLimit,
    now: Millis,
    in_window: u32,
    oldest: Option<i64>,
) -> RateStatus {
    let reset_secs = match limit.decide(now, in_window, oldest) {
        RateDecision::Allow { reset_secs, .. } => reset_secs,
        RateDecision::Refuse { retry_after_secs } => retry_after_secs,
    };
    RateStatus {
        limit: limit.limit,
        remaining: limit.limit.saturating_sub(in_window),
        reset_secs,
    }
}

fn as_i64(n: u64) -> i64 {
    // ValidPush has already refused counts above i64::MAX.
    i64::try_from(n).unwrap_or(i64::MAX)
}
