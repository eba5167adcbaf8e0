//! PostgreSQL's push: one transaction per push, holding its project's lock (not the
//! account's), so one account's pushes to different projects are written side by side on
//! every replica ([`crate::locks`]).
//!
//! The head is read under the project's lock, so the project's rules (scan numbers, deltas,
//! replays, the gate) are decided on exactly what the project holds; the line's large state is
//! read only when this replica does not keep it already ([`line_state`]). The write budget is
//! decided first, by the push's place under it (`take_place`), and a push that creates a
//! project confirms the cap last, under a lock of its own, with its project counted
//! ([`tidemark_domain::append::admit`]).

use std::sync::Arc;

use sqlx::PgPool;
use tidemark_domain::append::{admit, Admission, Counted};
use tidemark_domain::push::ValidPush;

use super::head_row::HeadRow;
use super::{head_statement, line_state, plan, rate_status, PushContext, PushOutcome, RateStatus};
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
    let place = take_place(pool, ctx).await?;
    let mut tries = 0;
    let done = loop {
        match record_once(pool, ctx, push, posture, &place).await {
            Err(StoreError::Sqlx(err)) if tries < RETRIES && is_transient(&err) => {
                tries += 1;
                tracing::debug!(tries, error = %err, "push retried");
            }
            done => break done,
        }
    };
    if place.taken && !matches!(done, Ok(PushOutcome::Appended(..))) {
        // Replayed, refused or failed: the place goes back (or lapses, if this fails too).
        if let Err(err) = sqlx::query("DELETE FROM push_admissions WHERE id = $1")
            .bind(&place.id)
            .execute(pool)
            .await
        {
            tracing::warn!(error = %err, "a push's unused place under the write budget was not given back; it lapses");
        }
    }
    done
}

/// Where a push stands under its account's write budget, decided before its transaction.
struct Place {
    id: String,
    /// The account's appends in the window and places taken before this push's.
    before: u32,
    oldest: Option<i64>,
    /// It fits: its row in `push_admissions` counts it until its scan does.
    taken: bool,
}

#[derive(sqlx::FromRow)]
struct PlaceRow {
    n: i64,
    oldest: Option<i64>,
    taken: i64,
}

/// How long a place counts without its push committing: far past any push's transaction,
/// so only a crashed replica's places lapse.
const PLACE_LAPSES_MS: i64 = 120_000;

/// Takes the push's place under the budget, in a short transaction ordered by the account's
/// admission lock: the appends in the window and the places still held are counted, and a
/// place is taken if they leave room. The lock is held for that and an asynchronous commit
/// only, never across a push's writes or its durable commit, so pushes to different projects
/// commit side by side (and the log flushes their commits together).
async fn take_place(pool: &PgPool, ctx: &PushContext) -> Result<Place, StoreError> {
    let id = tidemark_domain::ids::new_state_token();
    let account = ctx.account_id.as_str();
    let lapsed = ctx.now - PLACE_LAPSES_MS;
    let window = ctx.write_limit.window_start(ctx.now);
    let mut tx = pool.begin().await?;
    sqlx::query(locks::ADMISSION)
        .bind(account)
        .execute(&mut *tx)
        .await?;
    let row: PlaceRow = sqlx::query_as(
        "WITH lapsed AS (DELETE FROM push_admissions WHERE account_id = $1 AND admitted_at <= $2), \
         c AS (SELECT (SELECT COUNT(*) FROM scans WHERE account_id = $3 AND received_at > $4) \
                    + (SELECT COUNT(*) FROM push_admissions \
                       WHERE account_id = $5 AND admitted_at > $6) AS n, \
                      (SELECT MIN(received_at) FROM scans \
                       WHERE account_id = $7 AND received_at > $8) AS oldest), \
         placed AS (INSERT INTO push_admissions (id, account_id, admitted_at) \
                    SELECT $9, $10, $11 FROM c WHERE c.n < $12 RETURNING 1) \
         SELECT c.n, c.oldest, (SELECT COUNT(*) FROM placed) AS taken FROM c",
    )
    .bind(account)
    .bind(lapsed)
    .bind(account)
    .bind(window)
    .bind(account)
    .bind(lapsed)
    .bind(account)
    .bind(window)
    .bind(&id)
    .bind(account)
    .bind(ctx.now)
    .bind(i64::from(ctx.write_limit.limit))
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Place {
        id,
        before: u32::try_from(row.n).unwrap_or(u32::MAX),
        oldest: row.oldest,
        taken: row.taken > 0,
    })
}

async fn record_once(
    pool: &PgPool,
    ctx: &PushContext,
    push: &ValidPush,
    posture: &PushPosture,
    place: &Place,
) -> Result<PushOutcome, StoreError> {
    let key = line_state::key(
        ctx.account_id.as_str(),
        push.label(),
        &push.git().line().stored().unwrap_or_default(),
    );
    let kept = line_state::recall(&key);
    let mut tx = pool.begin().await?;
    sqlx::query(locks::PUSH)
        .bind(ctx.account_id.as_str())
        .bind(push.label())
        .execute(&mut *tx)
        .await?;
    let known = kept
        .as_ref()
        .map_or(("", 0), |k| (k.token.as_str(), k.head_seq));
    let head = head_statement(ctx, push, Backend::Postgres, known);
    let mut args = sqlx::postgres::PgArguments::default();
    add_args::<sqlx::Postgres>(&mut args, head.args)?;
    let row: HeadRow = sqlx::query_as_with(&head.sql, args)
        .fetch_one(&mut *tx)
        .await?;
    let mut head = row.into_head(kept.map(|k| k.state));
    // The budget as the place found it: room for this push exactly when it took one.
    head.rules.writes_in_window = place.before;
    head.rules.oldest_write = place.oldest;
    let creates_project = head.rules.project.is_none();
    let planned = plan(ctx, push, posture, head, true);
    let PushOutcome::Appended(scan, _) = planned.outcome else {
        // Refused or replayed: nothing was written and nothing is held.
        tx.rollback().await?;
        return Ok(planned.outcome);
    };
    for stmt in planned.own {
        execute(&mut tx, stmt).await?;
    }
    let counted = Counted {
        writes_in_window: place.before.saturating_add(1),
        oldest_write: place.oldest,
        active_projects: match ctx.project_cap {
            Some(cap) if creates_project => Some((cap, count_active_projects(&mut tx, ctx).await?)),
            _ => None,
        },
    };
    let before = rate_status(&ctx.write_limit, ctx.now, place.before, place.oldest);
    let outcome = match admit(&ctx.write_limit, ctx.now, counted) {
        Admission::Admitted {
            remaining,
            reset_secs,
        } => {
            // The account's shared rows last, so that no push holds their row locks through
            // its other writes while the others queue on them.
            for stmt in planned.shared {
                execute(&mut tx, stmt).await?;
            }
            // The scan counts from this commit on; its place stops counting with it.
            sqlx::query("DELETE FROM push_admissions WHERE id = $1")
                .bind(&place.id)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            crate::rollup_folds::fold_soon(pool, &ctx.account_id);
            if let Some((token, head_seq, state)) = planned.kept {
                line_state::keep(key, token, head_seq, Arc::new(state));
            }
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

async fn execute(
    tx: &mut sqlx::Transaction<'static, sqlx::Postgres>,
    stmt: crate::stmt::Stmt,
) -> Result<(), StoreError> {
    let mut args = sqlx::postgres::PgArguments::default();
    add_args::<sqlx::Postgres>(&mut args, stmt.args)?;
    sqlx::query_with(&stmt.sql, args).execute(&mut **tx).await?;
    Ok(())
}

/// The account's active projects, the one this push creates included, read under the
/// project-cap lock (a statement of its own, so that it reads every commit made before the
/// lock was granted); the lock is held to the commit.
async fn count_active_projects(
    tx: &mut sqlx::Transaction<'static, sqlx::Postgres>,
    ctx: &PushContext,
) -> Result<u64, StoreError> {
    sqlx::query(locks::PROJECT_CAP)
        .bind(ctx.account_id.as_str())
        .execute(&mut **tx)
        .await?;
    let active: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM projects WHERE account_id = $1 AND archived_at IS NULL",
    )
    .bind(ctx.account_id.as_str())
    .fetch_one(&mut **tx)
    .await?;
    Ok(u64::try_from(active).unwrap_or(0))
}

/// A deadlock or serialization failure: PostgreSQL rolled the push back, and trying again
/// reads what the other transaction committed.
fn is_transient(err: &sqlx::Error) -> bool {
    err.as_database_error()
        .and_then(|e| e.code())
        .is_some_and(|code| code == "40P01" || code == "40001")
}
