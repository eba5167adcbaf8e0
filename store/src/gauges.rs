//! What `/metrics` reads from the database: the durable queues' depth and age, live sessions,
//! and how busy the pools are. Shared by every replica, so each replica reports the same figures.

use std::time::{Duration, Instant};

use tidemark_domain::Millis;

use crate::{on_db, Db, StoreError};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Backlog {
    /// Mail not yet sent.
    pub mail_pending: i64,
    /// When the oldest of it was queued.
    pub mail_oldest_at: Option<Millis>,
    /// Unsent mail that has failed at least once.
    pub mail_failing: i64,
    /// Webhook deliveries waiting for their first or next attempt.
    pub webhooks_pending: i64,
    pub webhooks_oldest_at: Option<Millis>,
    /// Pending deliveries whose last attempt failed.
    pub webhooks_failing: i64,
    /// Sessions not yet expired.
    pub sessions_active: i64,
    /// Bytes the database takes.
    pub database_bytes: i64,
    /// Scans still stored one row per finding (housekeeping moves them to spans).
    pub scans_as_rows: i64,
    /// Scans stored before posture was kept, not yet judged (housekeeping backfills them).
    pub scans_posture_pending: i64,
}

/// The backlog's counts as one row reads them (every column named, none by position).
#[derive(sqlx::FromRow)]
struct BacklogRow {
    mail_pending: i64,
    mail_oldest_at: Option<i64>,
    mail_failing: i64,
    webhooks_pending: i64,
    webhooks_oldest_at: Option<i64>,
    webhooks_failing: i64,
    sessions_active: i64,
    scans_as_rows: i64,
    scans_posture_pending: i64,
}

pub async fn backlog(db: &Db, now: Millis) -> Result<Backlog, StoreError> {
    let sql = "SELECT \
        (SELECT COUNT(*) FROM mail_outbox WHERE sent_at IS NULL) AS mail_pending, \
        (SELECT MIN(created_at) FROM mail_outbox WHERE sent_at IS NULL) AS mail_oldest_at, \
        (SELECT COUNT(*) FROM mail_outbox WHERE sent_at IS NULL AND attempts > 0) AS mail_failing, \
        (SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'pending') AS webhooks_pending, \
        (SELECT MIN(created_at) FROM webhook_deliveries WHERE state = 'pending') AS webhooks_oldest_at, \
        (SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'pending' AND attempts > 0) AS webhooks_failing, \
        (SELECT COUNT(*) FROM sessions WHERE expires_at > $1 AND absolute_expires_at > $1) AS sessions_active, \
        (SELECT COUNT(*) FROM scans WHERE findings_stored IS NULL) AS scans_as_rows, \
        (SELECT COUNT(*) FROM scans WHERE posture_pending = 1) AS scans_posture_pending";
    let row: BacklogRow = on_db!(db, pool => sqlx::query_as(sql).bind(now).fetch_one(pool).await)?;
    let database_bytes = database_bytes(db).await?;
    Ok(Backlog {
        mail_pending: row.mail_pending,
        mail_oldest_at: row.mail_oldest_at,
        mail_failing: row.mail_failing,
        webhooks_pending: row.webhooks_pending,
        webhooks_oldest_at: row.webhooks_oldest_at,
        webhooks_failing: row.webhooks_failing,
        sessions_active: row.sessions_active,
        database_bytes,
        scans_as_rows: row.scans_as_rows,
        scans_posture_pending: row.scans_posture_pending,
    })
}

/// Bytes the database takes: SQLite's pages in use (the file, less its free pages; the WAL
/// is checkpointed into it), PostgreSQL's `pg_database_size`.
pub async fn database_bytes(db: &Db) -> Result<i64, StoreError> {
    let bytes = match db {
        Db::Sqlite { pool, .. } => {
            let (pages, free, size): (i64, i64, i64) = sqlx::query_as(
                "SELECT (SELECT page_count FROM pragma_page_count()), \
                 (SELECT freelist_count FROM pragma_freelist_count()), \
                 (SELECT page_size FROM pragma_page_size())",
            )
            .fetch_one(pool)
            .await?;
            (pages - free) * size
        }
        Db::Postgres(pool) => {
            crate::fault::bounded(async {
                sqlx::query_scalar("SELECT pg_database_size(current_database())")
                    .fetch_one(pool)
                    .await
            })
            .await?
        }
    };
    Ok(bytes)
}

/// One connection pool's occupancy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// `reader`/`writer` on SQLite, `main` on PostgreSQL.
    pub pool: &'static str,
    pub open: u32,
    pub idle: u32,
    pub max: u32,
}

impl Db {
    /// How long each pool takes to lend a connection now, at most `limit` (then `limit`).
    /// sqlx does not say how many tasks wait for a connection; it hands connections out in
    /// order, so this probe waits about as long as a request arriving now would.
    pub async fn acquire_waits(&self, limit: Duration) -> Vec<(&'static str, Duration)> {
        async fn probe<D: sqlx::Database>(pool: &sqlx::Pool<D>, limit: Duration) -> Duration {
            let started = Instant::now();
            // Dropped at once: the connection goes straight back to the pool.
            let _ = tokio::time::timeout(limit, pool.acquire()).await;
            started.elapsed().min(limit)
        }
        match self {
            Db::Sqlite { pool, writer, .. } => vec![
                ("reader", probe(pool, limit).await),
                ("writer", probe(writer, limit).await),
            ],
            Db::Postgres(pool) => vec![("main", probe(pool, limit).await)],
        }
    }

    pub fn pool_stats(&self) -> Vec<PoolStats> {
        fn stats<D: sqlx::Database>(name: &'static str, pool: &sqlx::Pool<D>) -> PoolStats {
            PoolStats {
                pool: name,
                open: pool.size(),
                idle: u32::try_from(pool.num_idle()).unwrap_or(u32::MAX),
                max: pool.options().get_max_connections(),
            }
        }
        match self {
            Db::Sqlite { pool, writer, .. } => {
                vec![stats("reader", pool), stats("writer", writer)]
            }
            Db::Postgres(pool) => vec![stats("main", pool)],
        }
    }
}
