//! The SQLite committer's own connection: each statement text prepared once and kept.
//!
//! Through sqlx every statement is a message to the connection's thread, so the committer
//! sent a whole group as one multi-statement string; its text changed with every group's
//! mix, so SQLite parsed and planned every statement of every push again (the profile's
//! largest share after the writes themselves). Here the group runs on one blocking thread
//! against a connection of our own, each statement taken from a cache keyed by its text and
//! only bound and stepped, with no hand-off between statements.
//!
//! The connection is a second one on the same file, so the committer still takes the
//! process's writer connection from its pool for each group, as a lock: pushes and every
//! other write keep queueing in one line, first come first served, and never meet SQLite's
//! busy handler (which sleeps) inside the process.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use rusqlite::{params_from_iter, Connection, OpenFlags, ToSql};
use sqlx::SqlitePool;
use tidemark_domain::push::ValidPush;
use tokio::sync::oneshot;

use super::early::{Ledger, Readers, Slot};
use super::head_row::HeadRow;
use super::{head_statement, plan, PushContext, PushOutcome};
use crate::posture::push::PushPosture;
use crate::stmt::{positional, Arg, Stmt};
use crate::{Backend, StoreError, SQLITE_BUSY_TIMEOUT};

/// Statement texts kept prepared: a push's statements have a few dozen shapes (the head,
/// the scan, its line and project, findings and spans in chunks of a few sizes).
const PREPARED_STATEMENTS: usize = 96;

/// Statements longer than this are prepared for one use and dropped: only a push of a
/// thousand new findings or more makes one (rows of a chunk share a statement), and kept,
/// each held a program of megabytes for pushes that are rare (`scripts/bench.sh`'s memory by
/// step: the 5,000-finding pushes added 12 MB that stayed).
const CACHED_TEXT_MAX: usize = 32 * 1024;

/// What a push is: shared by its job and the task planning it early.
pub(super) struct Input {
    pub(super) ctx: PushContext,
    pub(super) push: ValidPush,
    pub(super) posture: PushPosture,
}

/// One push waiting to be written, and where its answer goes.
pub(super) struct Job {
    pub(super) input: Arc<Input>,
    /// Its plan made before the writer's turn, if one is ready by then ([`super::early`]).
    pub(super) early: Arc<Slot>,
    pub(super) reply: oneshot::Sender<Result<PushOutcome, StoreError>>,
}

/// The writer connection held as the write lock, or why it could not be had.
pub(super) type Turn = Result<sqlx::pool::PoolConnection<sqlx::Sqlite>, sqlx::Error>;

/// The committer's connection, opened at its first group.
pub(super) struct SqliteWriter {
    path: PathBuf,
    /// The process's writer pool: its one connection is held as the write lock.
    lock: SqlitePool,
    conn: Option<Connection>,
    /// What its commits wrote, for plans made early ([`super::early`]).
    ledger: Option<Ledger>,
    readers: Arc<Readers>,
    pub(super) timing: Arc<Timing>,
}

impl SqliteWriter {
    pub(super) fn new(path: PathBuf, lock: SqlitePool, readers: Arc<Readers>) -> Self {
        SqliteWriter {
            path,
            lock,
            conn: None,
            ledger: Some(Ledger::default()),
            readers,
            timing: Arc::default(),
        }
    }

    /// Waits for the process's writer connection: the write lock for one group.
    pub(super) fn turn(&self) -> impl std::future::Future<Output = Turn> + Send + 'static {
        // Not borrowing the writer across the wait: its connection is not `Sync`.
        let lock = self.lock.clone();
        async move { lock.acquire().await }
    }

    /// Writes `group` in one transaction, all or nothing, in the `turn` taken for it; the
    /// jobs come back with the outcome, so a failed group can be retried push by push.
    pub(super) async fn apply(
        &mut self,
        group: Vec<Job>,
        turn: Turn,
    ) -> (Vec<Job>, Result<Vec<PushOutcome>, StoreError>) {
        let _turn = match turn {
            Ok(turn) => turn,
            Err(err) => {
                // The pool is closed: so is the database, for this process.
                self.conn = None;
                return (group, Err(err.into()));
            }
        };
        let conn = self.conn.take();
        let mut ledger = self.ledger.take().unwrap_or_default();
        let path = self.path.clone();
        let readers = self.readers.clone();
        let timing = self.timing.clone();
        let joined = tokio::task::spawn_blocking(move || {
            let conn = match conn {
                Some(conn) => conn,
                None => match open(&path) {
                    Ok(conn) => {
                        ledger.forget_connection();
                        conn
                    }
                    Err(err) => return (None, ledger, group, Err(err.into())),
                },
            };
            let result = write_group(&conn, &mut ledger, &group, (&readers, &timing));
            (Some(conn), ledger, group, result)
        })
        .await;
        match joined {
            Ok((conn, ledger, group, result)) => {
                // One that a failed ROLLBACK left inside a transaction would refuse every
                // later BEGIN: closing it rolls back, and the next group opens a fresh one.
                self.conn = conn.filter(Connection::is_autocommit);
                self.ledger = Some(ledger);
                (group, result)
            }
            // The thread panicked: its jobs are gone, and their callers hear `Closed`. A new
            // ledger starts with a new connection, which no plan made before it can pass.
            Err(err) => (Vec::new(), Err(StoreError::Interrupted(err.to_string()))),
        }
    }

    /// Closes the connection (before the database's file may be replaced or removed).
    pub(super) fn close(&mut self) {
        self.conn = None;
    }
}

fn open(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    // The settings `Db::connect` gives sqlx's connections (WAL is the file's own).
    conn.busy_timeout(SQLITE_BUSY_TIMEOUT)?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.set_prepared_statement_cache_capacity(PREPARED_STATEMENTS);
    Ok(conn)
}

/// One transaction for the group: each push's head read, its decision and its writes, in
/// turn (each push is another account's, so none reads what another wrote).
fn write_group(
    conn: &Connection,
    ledger: &mut Ledger,
    group: &[Job],
    (readers, timing): (&Readers, &Timing),
) -> Result<Vec<PushOutcome>, StoreError> {
    conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
    let result = ledger
        .look_outside(conn, readers)
        .map_err(StoreError::from)
        .and_then(|()| {
            group
                .iter()
                .map(|job| write_push(conn, ledger, job, (readers, timing)))
                .collect::<Result<Vec<_>, _>>()
        })
        .and_then(|outcomes| {
            let started = Instant::now();
            conn.prepare_cached("COMMIT")?.execute([])?;
            Timing::add(&timing.commit, started.elapsed());
            Ok(outcomes)
        });
    match &result {
        Ok(_) => ledger.committed(
            group
                .iter()
                .map(|job| (&job.input.ctx.account_id, job.input.push.label())),
            readers,
        ),
        // A failed ROLLBACK leaves nothing to undo that a later BEGIN would not refuse.
        Err(_) if !conn.is_autocommit() => {
            let _ = conn.execute_batch("ROLLBACK");
        }
        Err(_) => {}
    }
    result
}

fn write_push(
    conn: &Connection,
    ledger: &Ledger,
    job: &Job,
    (readers, timing): (&Readers, &Timing),
) -> Result<PushOutcome, StoreError> {
    let Input { ctx, push, posture } = &*job.input;
    let started = Instant::now();
    let early = job.early.take();
    let confirmed = match &early {
        Some(decided) => readers.confirm(conn, ledger, ctx, push, decided)?,
        None => None,
    };
    let owned;
    let (outcome, planned) = match confirmed {
        Some((outcome, planned)) => (outcome, planned),
        None => {
            // No line state is kept here: the head is read in process (`line_state`).
            let head = head_statement(ctx, push, Backend::Sqlite, ("", 0));
            let row = conn
                .prepare_cached(&positional(&head.sql))?
                .query_row(params_from_iter(&head.args), HeadRow::from_sqlite)?;
            owned = plan(ctx, push, posture, row.into_head(None), false);
            (owned.outcome.clone(), Some(&owned))
        }
    };
    let decided = Instant::now();
    Timing::add(&timing.decide, decided - started);
    if let Some(planned) = planned {
        for stmt in planned.own.iter().chain(&planned.shared) {
            execute(conn, stmt)?;
        }
    }
    Timing::add(&timing.write, decided.elapsed());
    Ok(outcome)
}

/// Where the writer's turn goes, summed over every push (for metrics and benchmarks): reading
/// or checking heads and deciding, running the statements, and committing (the fsync).
#[derive(Debug, Default)]
pub(super) struct Timing {
    pub(super) decide: AtomicU64,
    pub(super) write: AtomicU64,
    pub(super) commit: AtomicU64,
}

impl Timing {
    fn add(total: &AtomicU64, took: Duration) {
        total.fetch_add(
            u64::try_from(took.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    pub(super) fn nanos(&self) -> [u64; 3] {
        [&self.decide, &self.write, &self.commit].map(|n| n.load(Ordering::Relaxed))
    }
}

pub(super) fn execute(conn: &Connection, stmt: &Stmt) -> rusqlite::Result<usize> {
    let sql = positional(&stmt.sql);
    if sql.len() > CACHED_TEXT_MAX {
        return conn.prepare(&sql)?.execute(params_from_iter(&stmt.args));
    }
    conn.prepare_cached(&sql)?
        .execute(params_from_iter(&stmt.args))
}

impl ToSql for Arg {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Arg::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            Arg::Int(n) => ToSqlOutput::Owned(Value::Integer(*n)),
            Arg::Real(x) => ToSqlOutput::Owned(Value::Real(*x)),
            Arg::Bool(b) => ToSqlOutput::Owned(Value::Integer(i64::from(*b))),
            Arg::NoText | Arg::NoInt | Arg::NoReal | Arg::NoBool => ToSqlOutput::Owned(Value::Null),
        })
    }
}
