//! Folding the account's roll-up changes into its kept rows (issue 70).
//!
//! A PostgreSQL push inserts its change to the account's roll-ups (`account_posture`,
//! `account_days`) as rows of its own, so that no two pushes of an account hold the same row
//! to their durable commits. The readers sum the kept rows and the changes; a fold moves the
//! changes into the kept rows, so that what they read stays a few rows. A replica folds an
//! account after one of its pushes, at most once a second, on a task of its own, so no push
//! waits for it.
//!
//! A fold deletes the changes it saw and adds their sums in one statement per roll-up, so
//! each change is counted once whatever runs beside it: a change committed meanwhile is not
//! in the fold's snapshot and waits for the next, and of two folds at once the second finds
//! the first's rows gone. It holds the account's lock shared, as a push does, so that a
//! rebuild of the roll-ups (which holds it exclusive) never runs beside it. Its commit need
//! not wait for the disk: lost, it takes its deletions with it.

use std::sync::LazyLock;
use std::time::Duration;

use moka::sync::Cache;
use sqlx::PgPool;

use crate::{locks, AccountId, StoreError, Writer};

/// At most one fold of an account a second on each replica.
const FOLD_EVERY: Duration = Duration::from_secs(1);

static FOLDED: LazyLock<Cache<String, ()>> = LazyLock::new(|| {
    Cache::builder()
        .max_capacity(100_000)
        .time_to_live(FOLD_EVERY)
        .build()
});

const FOLD_SQL: [&str; 2] = [
    "WITH moved AS (DELETE FROM account_day_changes WHERE account_id = $1 \
     RETURNING utc_day, d_critical, d_high, d_medium, d_low) \
     INSERT INTO account_days (account_id, utc_day, d_critical, d_high, d_medium, d_low) \
     SELECT $2, utc_day, SUM(d_critical), SUM(d_high), SUM(d_medium), SUM(d_low) \
     FROM moved GROUP BY utc_day ORDER BY utc_day \
     ON CONFLICT (account_id, utc_day) DO UPDATE SET \
     d_critical = account_days.d_critical + excluded.d_critical, \
     d_high = account_days.d_high + excluded.d_high, \
     d_medium = account_days.d_medium + excluded.d_medium, \
     d_low = account_days.d_low + excluded.d_low",
    "WITH moved AS (DELETE FROM account_posture_changes WHERE account_id = $1 \
     RETURNING kind, cloud, name, passed, failed, triaged, not_evaluated, projects) \
     INSERT INTO account_posture (account_id, kind, cloud, name, passed, failed, triaged, \
     not_evaluated, projects) \
     SELECT $2, kind, cloud, name, SUM(passed), SUM(failed), SUM(triaged), \
     SUM(not_evaluated), SUM(projects) \
     FROM moved GROUP BY kind, cloud, name ORDER BY kind, cloud, name \
     ON CONFLICT (account_id, kind, cloud, name) DO UPDATE SET \
     passed = account_posture.passed + excluded.passed, \
     failed = account_posture.failed + excluded.failed, \
     triaged = account_posture.triaged + excluded.triaged, \
     not_evaluated = account_posture.not_evaluated + excluded.not_evaluated, \
     projects = account_posture.projects + excluded.projects",
];

/// After a push of `account`'s: folds its changes on a task of its own, unless this replica
/// folded them less than a second ago.
pub(crate) fn fold_soon(pool: &PgPool, account: &AccountId) {
    let key = account.as_str().to_owned();
    if FOLDED.contains_key(&key) {
        return;
    }
    FOLDED.insert(key, ());
    let (pool, account) = (pool.clone(), account.clone());
    tokio::spawn(async move {
        if let Err(err) = fold(&pool, &account).await {
            // The changes stay, and the readers count them: the next fold takes them.
            tracing::warn!(error = %err, "an account's roll-up changes were not folded");
        }
    });
}

/// Moves every committed change of `account`'s roll-ups into its kept rows (SQLite's pushes
/// make none).
pub async fn fold_account(db: &Writer, account: &AccountId) -> Result<(), StoreError> {
    match db.db() {
        crate::Db::Postgres(pool) => fold(pool, account).await,
        crate::Db::Sqlite { .. } => Ok(()),
    }
}

async fn fold(pool: &PgPool, account: &AccountId) -> Result<(), StoreError> {
    let mut tx = pool.begin().await?;
    sqlx::query(locks::ACCOUNT_SHARED_ASYNC)
        .bind(account.as_str())
        .execute(&mut *tx)
        .await?;
    for sql in FOLD_SQL {
        sqlx::query(sql)
            .bind(account.as_str())
            .bind(account.as_str())
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}
