//! PostgreSQL's push: one transaction per push, holding its project's lock (not the
//! account's), so one account's pushes to different projects are written side by side on
//! every replica ([`crate::locks`]).
//!
//! The head is read under the project's lock, so the project's rules (scan numbers, deltas,
//! replays, the gate) are decided on exactly what the project holds. The account-wide limits
//! read with it may be passed by pushes to other projects meanwhile: the push writes, then
//! counts again under the account's admission lock, with its own rows included, and rolls
//! back if it no longer fits ([`tidemark_domain::append::admit`]).

use sqlx::PgPool;
use tidemark_domain::append::{admit, Admission, Counted};
use tidemark_domain::push::ValidPush;

use super::head_row::HeadRow;
use super::{head_statement, plan, rate_status, PushContext, PushOutcome, RateStatus};
use crate::posture::push::PushPosture;
use crate::stmt::add_args;
use crate::{locks, Backend, StoreError};

/// Tries after the first when PostgreSQL picks this push to end a deadlock or a serialization
/// conflict: each try reads and decides afresh, so a retry is answered as the first would be.
const RETRIES: u32 = 3;

pub(super) async fn record(
    pool: &PgPool,
    ctx: &PushContext,
    push: &ValidPush,
    posture: &PushPosture,
) -> Result<PushOutcome, StoreError> {
    let mut tries = 0;
    loop {
        match record_once(pool, ctx, push, posture).await {
            Err(StoreError::Sqlx(err)) if tries < RETRIES && is_transient(&err) => {
                tries += 1;
                tracing::debug!(tries, error = %err, "push retried");
            }
            done => return done,
        }
    }
}

async fn record_once(
    pool: &PgPool,
    ctx: &PushContext,
    push: &ValidPush,
    posture: &PushPosture,
) -> Result<PushOutcome, StoreError> {
    let mut tx = pool.begin().await?;
    sqlx::query(locks::PUSH)
        .bind(ctx.account_id.as_str())
        .bind(push.label())
        .execute(&mut *tx)
        .await?;
    let head = head_statement(ctx, push, Backend::Postgres);
    let mut args = sqlx::postgres::PgArguments::default();
    add_args::<sqlx::Postgres>(&mut args, head.args)?;
    let row: HeadRow = sqlx::query_as_with(&head.sql, args)
        .fetch_one(&mut *tx)
        .await?;
    let head = row.into_head();
    let creates_project = head.rules.project.is_none();
    let (outcome, writes) = plan(ctx, push, posture, head);
    let PushOutcome::Appended(scan, _) = outcome else {
        // Refused or replayed: nothing was written and nothing is held.
        tx.rollback().await?;
        return Ok(outcome);
    };
    for stmt in writes {
        let mut args = sqlx::postgres::PgArguments::default();
        add_args::<sqlx::Postgres>(&mut args, stmt.args)?;
        sqlx::query_with(&stmt.sql, args).execute(&mut *tx).await?;
    }
    let counted = count_under_admission(&mut tx, ctx, creates_project).await?;
    let before = rate_status(
        &ctx.write_limit,
        ctx.now,
        counted.writes_in_window.saturating_sub(1),
        counted.oldest_write,
    );
    let outcome = match admit(&ctx.write_limit, ctx.now, counted) {
        Admission::Admitted {
            remaining,
            reset_secs,
        } => {
            tx.commit().await?;
            let rate = RateStatus {
                limit: ctx.write_limit.limit,
                remaining,
                reset_secs,
            };
            return Ok(PushOutcome::Appended(scan, rate));
        }
        Admission::RateLimited { retry_after_secs } => PushOutcome::RateLimited {
            retry_after_secs,
            rate: before,
        },
        Admission::ProjectLimitReached { cap } => {
            PushOutcome::ProjectLimitReached { cap, rate: before }
        }
    };
    tx.rollback().await?;
    Ok(outcome)
}

#[derive(sqlx::FromRow)]
struct CountRow {
    writes: i64,
    oldest: Option<i64>,
    active: i64,
}

/// The account's appends in the window and active projects, this push's included, read
/// under the admission lock (a statement of its own, so that it reads every commit made
/// before the lock was granted).
async fn count_under_admission(
    tx: &mut sqlx::Transaction<'static, sqlx::Postgres>,
    ctx: &PushContext,
    creates_project: bool,
) -> Result<Counted, StoreError> {
    sqlx::query(locks::ADMISSION)
        .bind(ctx.account_id.as_str())
        .execute(&mut **tx)
        .await?;
    let cap = ctx.project_cap.filter(|_| creates_project);
    let row: CountRow = sqlx::query_as(
        "SELECT COUNT(*) AS writes, MIN(received_at) AS oldest, \
         CASE WHEN $3 THEN (SELECT COUNT(*) FROM projects \
                            WHERE account_id = $1 AND archived_at IS NULL) ELSE 0 END AS active \
         FROM scans WHERE account_id = $1 AND received_at > $2",
    )
    .bind(ctx.account_id.as_str())
    .bind(ctx.write_limit.window_start(ctx.now))
    .bind(cap.is_some())
    .fetch_one(&mut **tx)
    .await?;
    Ok(Counted {
        writes_in_window: u32::try_from(row.writes).unwrap_or(u32::MAX),
        oldest_write: row.oldest,
        active_projects: cap.map(|cap| (cap, u64::try_from(row.active).unwrap_or(0))),
    })
}

/// A deadlock or serialization failure: PostgreSQL rolled the push back, and trying again
/// reads what the other transaction committed.
fn is_transient(err: &sqlx::Error) -> bool {
    err.as_database_error()
        .and_then(|e| e.code())
        .is_some_and(|code| code == "40P01" || code == "40001")
}
