//! What a failed database call means for whoever asked: the database is away for a while
//! (restart, failover, a stall), its storage is full, or neither (a bug, bad data). Callers
//! answer the first two honestly (`503`/`507` with `Retry-After`) instead of a bare `500`,
//! and the request-scoped deadline keeps a database that stopped answering from holding them.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::StoreError;

/// sqlx's error, for callers that meet it inside an `anyhow` chain without depending on sqlx.
pub use sqlx::Error as SqlxError;

/// A database failure that is about the database's state, not about the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// Unreachable, restarting, failing over, read-only, or not answering in time: the same
    /// request later will likely succeed.
    Unavailable,
    /// No space left to write (SQLite `SQLITE_FULL`, PostgreSQL `53100 disk_full`): reads
    /// still work; writes will once space is freed.
    StorageFull,
}

impl StoreError {
    /// Whether a unique constraint refused the write (a race that a check before it lost).
    pub fn is_unique_violation(&self) -> bool {
        match self {
            StoreError::Sqlx(sqlx::Error::Database(db)) => db.is_unique_violation(),
            StoreError::Sqlite(err) => matches!(
                err.sqlite_error().map(|e| e.extended_code),
                Some(
                    rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                        | rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
                )
            ),
            _ => false,
        }
    }

    /// Whether this error is one of the database's [`Fault`]s.
    pub fn fault(&self) -> Option<Fault> {
        match self {
            StoreError::Sqlx(err) => fault_of(err),
            StoreError::Migrate(sqlx::migrate::MigrateError::Execute(err)) => fault_of(err),
            StoreError::Sqlite(err) => err
                .sqlite_error()
                .and_then(|e| fault_of_sqlite_code(e.extended_code)),
            StoreError::Closed => Some(Fault::Unavailable),
            _ => None,
        }
    }
}

/// The [`Fault`] behind a sqlx error, if it is one.
pub fn fault_of(err: &sqlx::Error) -> Option<Fault> {
    match err {
        // Refused, reset, broken pipe, or a deadline of ours (`TimedOut`): the connection.
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => Some(Fault::Unavailable),
        sqlx::Error::Database(db) => {
            let code = db.code()?;
            if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
                code.parse().ok().and_then(fault_of_sqlite_code)
            } else {
                fault_of_sqlstate(&code)
            }
        }
        _ => None,
    }
}

/// SQLite result codes, possibly extended (the primary code is the low byte).
fn fault_of_sqlite_code(code: i32) -> Option<Fault> {
    match code & 0xff {
        // SQLITE_FULL
        13 => Some(Fault::StorageFull),
        // SQLITE_BUSY and SQLITE_LOCKED after the busy timeout: another process holds the
        // file (a backup, an operator command); it will let go.
        5 | 6 => Some(Fault::Unavailable),
        _ => None,
    }
}

/// PostgreSQL SQLSTATEs.
fn fault_of_sqlstate(code: &str) -> Option<Fault> {
    match code {
        // disk_full
        "53100" => Some(Fault::StorageFull),
        // insufficient_resources, out_of_memory, too_many_connections
        "53000" | "53200" | "53300" => Some(Fault::Unavailable),
        // admin_shutdown, crash_shutdown, cannot_connect_now (starting up, failing over),
        // database_dropped is not one of them: that is a configuration problem.
        "57P01" | "57P02" | "57P03" => Some(Fault::Unavailable),
        // read_only_sql_transaction: a primary demoted in a failover, or a hot standby.
        "25006" => Some(Fault::Unavailable),
        // connection_exception and its subclasses (08000, 08003, 08006, …).
        c if c.starts_with("08") => Some(Fault::Unavailable),
        _ => None,
    }
}

tokio::task_local! {
    /// How long one database call made by the current request may take.
    static DEADLINE: Duration;
}

/// Runs `request` with every database call it makes bounded by `limit`: a read that has
/// not finished by then fails as [`Fault::Unavailable`], and a [`crate::Db::detached`]
/// write stops being waited for (it still runs to its end, so a retry finds it). Work done
/// outside a request (background senders, operator commands) has no such bound.
pub async fn within_deadline<F: Future>(limit: Duration, request: F) -> F::Output {
    DEADLINE.scope(limit, request).await
}

/// The current request's bound on one database call, if it runs under one.
pub fn deadline() -> Option<Duration> {
    DEADLINE.try_with(|d| *d).ok()
}

/// The error a call that outlasted its deadline fails with: an I/O time-out, which is what
/// it is (the database did not answer), so it classifies as [`Fault::Unavailable`].
pub fn timed_out(limit: Duration) -> sqlx::Error {
    sqlx::Error::Io(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!(
            "the database did not answer within {:.1} s",
            limit.as_secs_f64()
        ),
    ))
}

/// Runs one read under the current request's deadline (see [`within_deadline`]). Used by
/// `on_db!` on PostgreSQL, whose server can stop answering while its connections stay open
/// (a paused VM, a storage stall, a network black hole). SQLite is a local file.
#[doc(hidden)]
pub async fn bounded<T, E, F>(read: F) -> Result<T, E>
where
    F: Future<Output = Result<T, E>>,
    E: From<sqlx::Error>,
{
    match deadline() {
        None => read.await,
        Some(limit) => match tokio::time::timeout(limit, read).await {
            Ok(result) => result,
            Err(_) => Err(timed_out(limit).into()),
        },
    }
}

/// How long identical outage lines are summarised into one.
const OUTAGE_WINDOW: Duration = Duration::from_secs(10);

/// Logs a request's database fault: the first in each [`OUTAGE_WINDOW`] in full, the rest
/// counted and reported with the next line ("412 more in the last 10 s"). During a failover
/// every request fails alike; one line per request would bury everything else.
pub fn log_fault(fault: Fault, cause: &dyn std::fmt::Display) {
    if let Some(more) = outages().note(fault, Instant::now()) {
        let what = match fault {
            Fault::Unavailable => "database unavailable",
            Fault::StorageFull => "database storage full",
        };
        // `{:#}`-style: the whole chain on one line.
        let cause = format!("{cause:#}");
        if more == 0 {
            tracing::warn!(error = cause, "{what}");
        } else {
            tracing::warn!(
                error = cause,
                "{what}, {more} more in the last {} s",
                OUTAGE_WINDOW.as_secs()
            );
        }
    }
}

fn outages() -> &'static OutageLog {
    static LOG: OnceLock<OutageLog> = OnceLock::new();
    LOG.get_or_init(OutageLog::default)
}

/// Per fault: when its last line was written, and how many were held back since.
#[derive(Default)]
struct OutageLog(Mutex<HashMap<Fault, (Instant, u64)>>);

impl OutageLog {
    /// `Some(held back since the last line)` when a line is due now; `None` to hold it back.
    fn note(&self, fault: Fault, now: Instant) -> Option<u64> {
        let mut seen = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match seen.get_mut(&fault) {
            Some((last, held)) if now.duration_since(*last) < OUTAGE_WINDOW => {
                *held += 1;
                None
            }
            Some((last, held)) => {
                let more = *held;
                (*last, *held) = (now, 0);
                Some(more)
            }
            None => {
                seen.insert(fault, (now, 0));
                Some(0)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_outage_lines_are_summarised_per_window() {
        let log = OutageLog::default();
        let t0 = Instant::now();
        assert_eq!(
            log.note(Fault::Unavailable, t0),
            Some(0),
            "the first is logged"
        );
        for i in 1..=412 {
            assert_eq!(
                log.note(Fault::Unavailable, t0 + Duration::from_millis(i)),
                None
            );
        }
        // Another fault has its own window.
        assert_eq!(log.note(Fault::StorageFull, t0), Some(0));
        assert_eq!(
            log.note(Fault::Unavailable, t0 + OUTAGE_WINDOW),
            Some(412),
            "the next window's first line says how many were held back"
        );
        assert_eq!(log.note(Fault::Unavailable, t0 + OUTAGE_WINDOW), None);
    }

    #[test]
    fn codes_are_classified_as_the_databases_document_them() {
        assert_eq!(fault_of_sqlite_code(13), Some(Fault::StorageFull));
        // An extended code is read by its low byte: SQLITE_IOERR_READ is no "full".
        assert_eq!(fault_of_sqlite_code(266), None);
        assert_eq!(fault_of_sqlite_code(517), Some(Fault::Unavailable)); // SQLITE_BUSY_SNAPSHOT
        assert_eq!(fault_of_sqlite_code(19), None); // SQLITE_CONSTRAINT: a bug, not a fault
        assert_eq!(fault_of_sqlstate("53100"), Some(Fault::StorageFull));
        assert_eq!(fault_of_sqlstate("57P01"), Some(Fault::Unavailable));
        assert_eq!(fault_of_sqlstate("57P03"), Some(Fault::Unavailable));
        assert_eq!(fault_of_sqlstate("08006"), Some(Fault::Unavailable));
        assert_eq!(fault_of_sqlstate("25006"), Some(Fault::Unavailable));
        assert_eq!(fault_of_sqlstate("23505"), None); // unique_violation
        assert_eq!(fault_of_sqlstate("42P01"), None); // undefined_table
    }

    #[test]
    fn connection_failures_and_deadlines_are_unavailability() {
        let refused = sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert_eq!(fault_of(&refused), Some(Fault::Unavailable));
        assert_eq!(
            fault_of(&sqlx::Error::PoolTimedOut),
            Some(Fault::Unavailable)
        );
        assert_eq!(
            fault_of(&timed_out(Duration::from_secs(8))),
            Some(Fault::Unavailable)
        );
        assert_eq!(fault_of(&sqlx::Error::RowNotFound), None);
        assert_eq!(StoreError::Corrupt("x").fault(), None);
    }

    #[tokio::test]
    async fn a_read_outlasting_the_requests_deadline_fails_as_unavailable() {
        let slow = async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok::<_, sqlx::Error>(1)
        };
        let err = within_deadline(Duration::from_millis(20), bounded(slow))
            .await
            .unwrap_err();
        assert_eq!(fault_of(&err), Some(Fault::Unavailable));
        // Outside a request nothing is bounded.
        let quick = bounded(async { Ok::<_, sqlx::Error>(2) }).await;
        assert_eq!(quick.ok(), Some(2));
        assert_eq!(deadline(), None);
    }
}
