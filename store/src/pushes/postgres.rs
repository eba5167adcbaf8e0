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
        // After a failure the database is likely unreachable, and the caller's 503 must not
        // wait a second time for a connection: the place goes back behind the answer.
        let give_back = give_back(pool.clone(), place.id);
        if done.is_err() {
            tokio::spawn(give_back);
        } else {
            give_back.await;
        }
    }
    done
}

async fn give_back(pool: PgPool, place: String) {
    if let Err(err) = sqlx::query("DELETE FROM push_admissions WHERE id = $1")
        .bind(&place)
        .execute(&pool)
        .await
    {
        tracing::warn!(error = %err, "a push's unused place under the write budget was not given back; it lapses");
    }
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

/// How long a place counts without its push committing: far past any push's transaction,
/// so only a crashed replica's places lapse.
const PLACE_LAPSES_MS: i64 = 120_000;

/// Takes the push's place under the budget, ordered by the account's admission lock: the
/// appends in the window and the places still held are counted, and a place is taken if they
/// leave room. The lock, the count and the commit go to the server as one message of two
/// statements (one implicit transaction; each statement reads what was committed when it
/// began, so the count sees every place committed before the lock was granted). The lock is
/// thus held only while PostgreSQL runs them, never while this replica's busy threads get
/// round to the next statement: with the lock, the count and the commit sent one at a time,
/// 16 writers of one account queued 32 ms a push on it. It is never held across a push's
/// writes or durable commit, so pushes to different projects commit side by side.
async fn take_place(pool: &PgPool, ctx: &PushContext) -> Result<Place, StoreError> {
    use sqlx::Row as _;
    let id = tidemark_domain::ids::new_state_token();
    let sql = place_sql(
        ctx.account_id.as_str(),
        &id,
        ctx.now,
        ctx.write_limit.window_start(ctx.now),
        i64::from(ctx.write_limit.limit),
    );
    // The simple-query protocol (no parameters) is what carries two statements in one message;
    // `place_sql` quotes its one text value.
    let rows = sqlx::raw_sql(&sql).fetch_all(pool).await?;
    let row = rows.last().ok_or(sqlx::Error::RowNotFound)?;
    let n: i64 = row.try_get("n")?;
    let taken: i64 = row.try_get("taken")?;
    Ok(Place {
        id,
        before: u32::try_from(n).unwrap_or(u32::MAX),
        oldest: row.try_get("oldest")?,
        taken: taken > 0,
    })
}

/// The admission's two statements: the lock (with an asynchronous commit, see
/// [`locks::ADMISSION`]), then the count and the place.
fn place_sql(account: &str, id: &str, now: i64, window: i64, limit: i64) -> String {
    let account = pg_text(account);
    let id = pg_text(id);
    let lapsed = now - PLACE_LAPSES_MS;
    let lock = locks::ADMISSION.replace("$1", &account);
    format!(
        "{lock}; \
         WITH lapsed AS (DELETE FROM push_admissions \
                         WHERE account_id = {account} AND admitted_at <= {lapsed}), \
         c AS (SELECT (SELECT COUNT(*) FROM scans \
                       WHERE account_id = {account} AND received_at > {window}) \
                    + (SELECT COUNT(*) FROM push_admissions \
                       WHERE account_id = {account} AND admitted_at > {lapsed}) AS n, \
                      (SELECT MIN(received_at) FROM scans \
                       WHERE account_id = {account} AND received_at > {window}) AS oldest), \
         placed AS (INSERT INTO push_admissions (id, account_id, admitted_at) \
                    SELECT {id}, {account}, {now} FROM c WHERE c.n < {limit} RETURNING 1) \
         SELECT c.n, c.oldest, (SELECT COUNT(*) FROM placed) AS taken FROM c"
    )
}

/// A text literal: PostgreSQL's standard strings (`standard_conforming_strings`, on since
/// 9.1) take everything between the quotes as it is, but a doubled quote.
fn pg_text(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
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

#[cfg(test)]
mod tests {
    use super::{pg_text, place_sql};

    #[test]
    fn a_text_literal_keeps_its_quotes_inside() {
        assert_eq!(pg_text("acct_1"), "'acct_1'");
        assert_eq!(pg_text("o'clock\\'); DROP"), "'o''clock\\''); DROP'");
    }

    #[test]
    fn the_admission_is_the_lock_then_the_count() {
        let sql = place_sql("acct'1", "tok", 1_000_000, 940_000, 50);
        let (lock, count) = sql.split_once("; ").expect("two statements");
        assert!(lock.contains("'admission:' || 'acct''1'"), "{lock}");
        assert!(!sql.contains('$'), "no parameter is left: {sql}");
        assert!(count.contains("received_at > 940000"), "{count}");
        assert!(count.contains("admitted_at <= 880000"), "{count}");
        assert!(count.contains("c.n < 50"), "{count}");
    }
}
