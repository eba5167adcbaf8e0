//! Appending a pushed scan to a project's history: one transaction that decides and writes.

use tidemark_domain::push::{scan_id_candidate, ValidPush};
use tidemark_domain::rate::{RateDecision, RollingLimit};
use tidemark_domain::Millis;

use crate::{on_db, BeginWrite as _, Db, StoreError};

/// Findings per INSERT statement: 9 parameters each stays far below SQLite's limit of 32,766
/// bound parameters (and PostgreSQL's 65,535).
const FINDINGS_PER_STATEMENT: usize = 2_000;

/// Who pushes, and under which limits.
#[derive(Debug, Clone)]
pub struct PushContext<'a> {
    pub account_id: &'a str,
    pub key_id: &'a str,
    /// Active-project cap; `None` is unlimited.
    pub project_cap: Option<u64>,
    pub write_limit: RollingLimit,
    pub now: Millis,
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
/// Everything happens in one write transaction whose first statement locks the account row,
/// so per account the replay check, the write-rate check, the project cap and the append are
/// one atomic step on every replica. The project's head (`scan_count`, `last_score`) moves in
/// a single `UPDATE … RETURNING`, which hands back the predecessor's score: N concurrent
/// pushes make N entries whose deltas chain exactly.
pub async fn record_push(
    db: &Db,
    ctx: &PushContext<'_>,
    push: &ValidPush,
) -> Result<PushOutcome, StoreError> {
    let req = push.request();
    // Early `return`s and `?` inside the body leave this function directly.
    let outcome = on_db!(db, pool => {
        let mut tx = pool.begin_write().await?;
        sqlx::query("UPDATE accounts SET write_guard = write_guard + 1 WHERE id = $1")
            .bind(ctx.account_id)
            .execute(&mut *tx)
            .await?;

        let project: Option<(String, Option<i64>, i64)> = sqlx::query_as(
            "SELECT id, archived_at, scan_count FROM projects WHERE account_id = $1 AND label = $2",
        )
        .bind(ctx.account_id)
        .bind(push.label())
        .fetch_optional(&mut *tx)
        .await?;

        let (in_window, oldest): (i64, Option<i64>) = sqlx::query_as(
            "SELECT COUNT(*), MIN(received_at) FROM scans WHERE account_id = $1 AND received_at > $2",
        )
        .bind(ctx.account_id)
        .bind(ctx.write_limit.window_start(ctx.now))
        .fetch_one(&mut *tx)
        .await?;
        let in_window = u32::try_from(in_window).unwrap_or(u32::MAX);
        let current = rate_status(&ctx.write_limit, ctx.now, in_window, oldest);

        if let Some((project_id, archived_at, scan_count)) = &project {
            if archived_at.is_some() {
                tx.rollback().await?;
                return Ok(PushOutcome::ProjectArchived {
                    project_id: project_id.clone(),
                    rate: current,
                });
            }
            if *scan_count > 0 {
                let latest: (String, f64, String) = sqlx::query_as(
                    "SELECT scan_id, score_delta, body_hash FROM scans WHERE project_id = $1 AND seq = $2",
                )
                .bind(project_id)
                .bind(scan_count)
                .fetch_one(&mut *tx)
                .await?;
                if latest.2 == push.body_hash() {
                    let scan = StoredScan {
                        project_id: project_id.clone(),
                        scan_id: latest.0,
                        score_delta: latest.1,
                    };
                    tx.rollback().await?;
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
            Some((id, _, _)) => id,
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

        let (seq, previous): (i64, Option<f64>) = sqlx::query_as(
            "UPDATE projects SET scan_count = scan_count + 1, prev_score = last_score, \
             last_score = $2 WHERE id = $1 RETURNING scan_count, prev_score",
        )
        .bind(&project_id)
        .bind(req.score)
        .fetch_one(&mut *tx)
        .await?;
        let score_delta = previous.map_or(0.0, |p| req.score - p) + 0.0;

        // Within a project every scan id shares the label's slug, so the ids of one second
        // are `base`, `base-2`, … without gaps: the count of that second's scans names the
        // next free suffix in one indexed query. The loop only guards against surprises.
        let base = push.scan_id_base();
        let second = push.scanned_at().timestamp() * 1000;
        let (same_second,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM scans WHERE project_id = $1 AND scanned_at >= $2 AND scanned_at < $3",
        )
        .bind(&project_id)
        .bind(second)
        .bind(second + 1000)
        .fetch_one(&mut *tx)
        .await?;
        let mut n = u32::try_from(same_second).unwrap_or(u32::MAX - 1) + 1;
        let scan_id = loop {
            let candidate = scan_id_candidate(&base, n);
            let taken: Option<(i64,)> =
                sqlx::query_as("SELECT seq FROM scans WHERE project_id = $1 AND scan_id = $2")
                    .bind(&project_id)
                    .bind(&candidate)
                    .fetch_optional(&mut *tx)
                    .await?;
            if taken.is_none() {
                break candidate;
            }
            n += 1;
        };

        let frameworks = serde_json::to_string(&req.frameworks).unwrap_or_default();
        sqlx::query(
            "INSERT INTO scans (project_id, seq, scan_id, account_id, score, score_delta, passed, \
             failed, sev_critical, sev_high, sev_medium, sev_low, cloud, cloud_account_id, \
             frameworks, state_source, scanned_at, received_at, finding_count, body_hash) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
             $18, $19, $20)",
        )
        .bind(&project_id)
        .bind(seq)
        .bind(&scan_id)
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
        .execute(&mut *tx)
        .await?;

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

        sqlx::query("UPDATE api_keys SET last_used_at = $1 WHERE id = $2")
            .bind(ctx.now)
            .bind(ctx.key_id)
            .execute(&mut *tx)
            .await?;
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
