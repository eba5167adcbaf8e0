//! Rolling-window limits with a ban, kept in the database so every replica shares them.

use tidemark_domain::rate::{secs_until, RollingLimit};
use tidemark_domain::Millis;

use crate::Writer;
use crate::{on_db, on_db_write, BeginWrite as _, Db, StoreError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BanDecision {
    Allow,
    /// Refused: banned, or this request exceeded the limit and started a ban.
    Refuse {
        retry_after_secs: u64,
    },
}

/// Counts one request in `bucket`. More than `limit.limit` requests in the rolling window
/// starts a ban of `ban_ms`, during which every request is refused. A ban is not a bucket
/// refilling: the window emptying does not lift it.
pub async fn hit_with_ban(
    db: &Writer,
    bucket: &str,
    limit: &RollingLimit,
    ban_ms: Millis,
    now: Millis,
) -> Result<BanDecision, StoreError> {
    let decision = on_db_write!(db, pool => {
        let mut tx = pool.begin_write().await?;
        // Upserting the bucket's row locks it: requests for one bucket queue here.
        let (until,): (i64,) = sqlx::query_as(
            "INSERT INTO rate_bans (bucket, until) VALUES ($1, 0) \
             ON CONFLICT (bucket) DO UPDATE SET until = rate_bans.until RETURNING until",
        )
        .bind(bucket)
        .fetch_one(&mut *tx)
        .await?;
        let decision = if until > now {
            BanDecision::Refuse { retry_after_secs: secs_until(now, until) }
        } else {
            let (count,): (i64,) = sqlx::query_as(
                "SELECT COUNT(*) FROM rate_events WHERE bucket = $1 AND at > $2",
            )
            .bind(bucket)
            .bind(limit.window_start(now))
            .fetch_one(&mut *tx)
            .await?;
            if count >= i64::from(limit.limit) {
                let until = now + ban_ms;
                sqlx::query("UPDATE rate_bans SET until = $2 WHERE bucket = $1")
                    .bind(bucket)
                    .bind(until)
                    .execute(&mut *tx)
                    .await?;
                BanDecision::Refuse { retry_after_secs: secs_until(now, until) }
            } else {
                sqlx::query("INSERT INTO rate_events (bucket, at) VALUES ($1, $2)")
                    .bind(bucket)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
                BanDecision::Allow
            }
        };
        tx.commit().await?;
        decision
    });
    Ok(decision)
}

/// Forgets events older than `keep_after` and bans that ended before it.
pub async fn prune_rate_data(db: &Writer, keep_after: Millis) -> Result<u64, StoreError> {
    let n = on_db_write!(db, pool => {
        let events = sqlx::query("DELETE FROM rate_events WHERE at <= $1")
            .bind(keep_after)
            .execute(pool)
            .await?
            .rows_affected();
        let bans = sqlx::query("DELETE FROM rate_bans WHERE until <= $1")
            .bind(keep_after)
            .execute(pool)
            .await?
            .rows_affected();
        events + bans
    });
    Ok(n)
}

/// Seconds left of a ban on `bucket`, if one is in force.
pub async fn ban_remaining(db: &Db, bucket: &str, now: Millis) -> Result<Option<u64>, StoreError> {
    let row: Option<(i64,)> = on_db!(db, pool => {
        sqlx::query_as("SELECT until FROM rate_bans WHERE bucket = $1")
            .bind(bucket)
            .fetch_optional(pool)
            .await
    })?;
    Ok(row
        .filter(|(until,)| *until > now)
        .map(|(until,)| secs_until(now, until)))
}
