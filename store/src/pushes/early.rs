//! SQLite: a push decided before the writer's turn.
//!
//! The one writer used to read each push's head, decode it and plan the push's statements in
//! its own turn, all while every other push waited (0.43 ms of its 0.89 ms of CPU a push, the
//! serial part that capped the push at about 30 % of the C baseline). Now, while a push waits
//! in the queue, a blocking task does that against a read snapshot of its own (WAL readers
//! never wait on the writer), on as many threads as the machine has, and leaves the plan for
//! the writer with a fingerprint of what it was decided on ([`Slot`]). It runs beside the
//! wait, never before it: a push that finds the writer idle is decided there at once, and
//! pays no latency for a plan it does not need.
//!
//! In its turn the writer reads the fingerprint again, with one small statement over the same
//! joins ([`check_statement`]): every part of the head the plan depends on (the key and the
//! licence, the project and its gate, the lines and their heads, the triaged findings, the
//! custom frameworks, who follows the account). The large parts are covered by what names
//! them: a scan's findings never change, so a line's head names its open set; and the line's
//! open tracked findings and live spans are named by its state token, which every push stamps
//! afresh and every other writer of them clears (`line_state::FORGET`). A line whose token was
//! cleared is decided by the writer, as before; so is a push the snapshot would refuse or
//! answer as a replay. Equal: the write budget and the project cap are confirmed with the
//! counts read in the same statement ([`tidemark_domain::append::admit`], as PostgreSQL's path
//! does with its place), and the planned statements run. Different: the writer reads the head
//! and decides again, exactly as it did before. So every push is decided on what the line
//! holds in the writer's turn, whichever path wrote it.
//!
//! Off unless `TIDEMARK_SQLITE_PLAN_PUSHES_EARLY=1`: on two cores the check cost about half
//! the head read it replaced (the head's cost is its joins, not its finding sets) and the
//! planners took CPU from the writer, so the writer's turn did not shrink (docs/benchmarks-log.md,
//! issue 70's eighth step). A check that reads nothing (generations of the committer's own
//! commits and of `PRAGMA data_version`) is the next thing to try.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::types::Value;
use rusqlite::{params_from_iter, Connection, OpenFlags};
use tidemark_domain::append::{admit, Admission, Counted};
use tidemark_domain::push::ValidPush;

use super::head_row::HeadRow;
use super::{
    head_query, head_statement, plan, rate_status, triage_columns, Planned, PushContext,
    PushOutcome, RateStatus, SAME_SECOND,
};
use crate::posture::push::PushPosture;
use crate::stmt::{positional, Stmt};
use crate::{Backend, StoreError, SQLITE_BUSY_TIMEOUT};

/// The check's last columns, read fresh and confirmed, not compared: the account's appends in
/// the rate window, the oldest of them, its active projects.
const BUDGET_COLUMNS: usize = 3;

/// Pushes planned at once, each on a reader connection of its own, all kept open between
/// pushes (each connection keeps its statements prepared): more would only queue for the
/// same cores.
pub(super) const READERS: usize = 8;

/// Each reader's page cache, in KiB (SQLite's default is 2 MiB a connection): a head reads a
/// few index pages, and the operating system caches the file anyway.
const READER_CACHE_KIB: i64 = 512;

/// What the writer re-reads: the fingerprint first, the budget's counts last.
fn check_statement(ctx: &PushContext, push: &ValidPush) -> Stmt {
    let (triaged, set_aside) = triage_columns(Backend::Sqlite);
    let columns = format!(
        "t.live_token AS line_token, t.head_seq AS line_head_seq, {triaged} AS triaged, \
         {set_aside} AS set_aside, cf.documents AS custom_frameworks, k.key_live, \
         l.license_live, p.id, p.archived_at, p.scan_count, p.gate_min_score, \
         p.gate_max_drop, p.gate_new_severity, wh.webhooks, al.alerts, \
         {SAME_SECOND} AS same_second, d.id AS default_id, d.name AS default_name, \
         t.id AS line_id, t.name AS line_name, t.pr_number AS line_pr, \
         t.scan_count AS line_count, bs.id AS base_id, bs.head_seq AS base_head_seq, \
         r.n AS writes, r.oldest AS oldest_write, a.active"
    );
    head_query(ctx, push, Backend::Sqlite, ("", 0), &columns)
}

/// The check's row: what the plan was decided on, and the budget's counts now.
struct Check {
    fingerprint: Vec<Value>,
    /// The line exists and its state has no token: it cannot be named, so it is read again.
    unnamed_state: bool,
    writes: i64,
    oldest_write: Option<i64>,
    active: i64,
}

fn read_check(conn: &Connection, stmt: &Stmt) -> rusqlite::Result<Check> {
    conn.prepare_cached(&positional(&stmt.sql))?
        .query_row(params_from_iter(&stmt.args), |row| {
            let columns = row.as_ref().column_count();
            let compared = columns.saturating_sub(BUDGET_COLUMNS);
            let fingerprint = (0..compared)
                .map(|i| row.get::<_, Value>(i))
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let token: Option<String> = row.get("line_token")?;
            let line: Option<String> = row.get("line_id")?;
            Ok(Check {
                fingerprint,
                unnamed_state: line.is_some() && token.is_none(),
                writes: row.get("writes")?,
                oldest_write: row.get("oldest_write")?,
                active: row.get("active")?,
            })
        })
}

/// A push planned on a snapshot, and what it was planned on.
pub(super) struct Decided {
    fingerprint: Vec<Value>,
    planned: Planned,
    creates_project: bool,
}

/// Where a push's early plan meets the writer: whichever comes first decides. A plan still
/// being made when the writer reaches its push is not waited for (the writer decides, and the
/// plan is dropped when done); one not yet begun is not begun.
#[derive(Default)]
pub(super) struct Slot {
    state: AtomicU8,
    decided: Mutex<Option<Decided>>,
}

const PENDING: u8 = 0;
const PLANNING: u8 = 1;
const READY: u8 = 2;
const WRITER_FIRST: u8 = 3;

impl Slot {
    /// The planner may begin: the writer has not reached the push.
    pub(super) fn start(&self) -> bool {
        self.state
            .compare_exchange(PENDING, PLANNING, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    pub(super) fn fill(&self, decided: Option<Decided>) {
        if let Ok(mut slot) = self.decided.lock() {
            *slot = decided;
        }
        self.state.store(READY, Ordering::Release);
    }

    /// In the writer's turn: the plan, if one is ready (once: a push retried alone after its
    /// group failed is decided by the writer).
    pub(super) fn take(&self) -> Option<Decided> {
        match self.state.compare_exchange(
            PENDING,
            WRITER_FIRST,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Err(READY) => self.decided.lock().ok()?.take(),
            _ => None,
        }
    }
}

/// Reader connections for deciding pushes, and how the decisions fared.
pub(super) struct Readers {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    /// One for each push being planned.
    pub(super) permits: Arc<tokio::sync::Semaphore>,
    /// The database was closed: no reader is opened or kept from then on (its file may be
    /// replaced, and a push is refused by the writer's closed pool).
    closed: AtomicBool,
    enabled: AtomicBool,
    confirmed: AtomicU64,
    redecided: AtomicU64,
}

impl Readers {
    pub(super) fn new(path: PathBuf) -> Self {
        Readers {
            path,
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(tokio::sync::Semaphore::new(READERS)),
            closed: AtomicBool::new(false),
            enabled: AtomicBool::new(false),
            confirmed: AtomicU64::new(0),
            redecided: AtomicU64::new(0),
        }
    }

    /// On, pushes are planned beside the queue; off (the default), every push is decided in
    /// the writer's turn.
    pub(super) fn set_enabled(&self, enabled: bool) {
        self.enabled.store(enabled, Ordering::Relaxed);
    }

    pub(super) fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Pushes written as decided early, and pushes the writer decided again.
    pub(super) fn counts(&self) -> (u64, u64) {
        (
            self.confirmed.load(Ordering::Relaxed),
            self.redecided.load(Ordering::Relaxed),
        )
    }

    /// Closes the idle connections for good (before the database's file may be replaced or
    /// removed); those in use are closed when their push is decided.
    pub(super) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        if let Ok(mut idle) = self.idle.lock() {
            idle.clear();
        }
    }

    /// The push planned on a snapshot, when it would be appended; `None` leaves the decision
    /// to the writer. Blocking.
    pub(super) fn decide(
        &self,
        ctx: &PushContext,
        push: &ValidPush,
        posture: &PushPosture,
    ) -> Option<Decided> {
        if self.closed.load(Ordering::SeqCst) {
            return None;
        }
        let conn = match self.take() {
            Ok(conn) => conn,
            Err(err) => {
                tracing::debug!(error = %err, "push left to the writer to decide");
                return None;
            }
        };
        let decided = decide_on(&conn, ctx, push, posture);
        if conn.is_autocommit() && !self.closed.load(Ordering::SeqCst) {
            if let Ok(mut idle) = self.idle.lock() {
                if idle.len() < READERS {
                    idle.push(conn);
                }
            }
        }
        match decided {
            Ok(decided) => decided,
            Err(err) => {
                tracing::debug!(error = %err, "push left to the writer to decide");
                None
            }
        }
    }

    fn take(&self) -> rusqlite::Result<Connection> {
        if let Some(conn) = self.idle.lock().ok().and_then(|mut idle| idle.pop()) {
            return Ok(conn);
        }
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(SQLITE_BUSY_TIMEOUT)?;
        conn.pragma_update(None, "query_only", "ON")?;
        conn.pragma_update(None, "cache_size", -READER_CACHE_KIB)?;
        conn.set_prepared_statement_cache_capacity(8);
        Ok(conn)
    }

    /// In the writer's turn, inside its transaction: the push's answer as decided early, with
    /// the statements to run for it (none for a refusal), when what it was decided on still
    /// holds; `None` when the writer must decide.
    pub(super) fn confirm<'d>(
        &self,
        conn: &Connection,
        ctx: &PushContext,
        push: &ValidPush,
        decided: &'d Decided,
    ) -> Result<Option<(PushOutcome, Option<&'d Planned>)>, StoreError> {
        let now = read_check(conn, &check_statement(ctx, push))?;
        if now.fingerprint != decided.fingerprint {
            self.redecided.fetch_add(1, Ordering::Relaxed);
            return Ok(None);
        }
        self.confirmed.fetch_add(1, Ordering::Relaxed);
        let writes = u32::try_from(now.writes).unwrap_or(u32::MAX);
        let counted = Counted {
            writes_in_window: writes.saturating_add(1),
            oldest_write: now.oldest_write,
            active_projects: match ctx.project_cap {
                Some(cap) if decided.creates_project => Some((
                    cap,
                    u64::try_from(now.active).unwrap_or(0).saturating_add(1),
                )),
                _ => None,
            },
        };
        let before = rate_status(&ctx.write_limit, ctx.now, writes, now.oldest_write);
        Ok(Some(match admit(&ctx.write_limit, ctx.now, counted) {
            Admission::Admitted {
                remaining,
                reset_secs,
            } => {
                let PushOutcome::Appended(scan, _) = &decided.planned.outcome else {
                    return Err(StoreError::Corrupt(
                        "an early decision that appends nothing",
                    ));
                };
                let rate = RateStatus {
                    limit: ctx.write_limit.limit,
                    remaining,
                    reset_secs,
                };
                (
                    PushOutcome::Appended(scan.clone(), rate),
                    Some(&decided.planned),
                )
            }
            Admission::RateLimited { retry_after_secs } => (
                PushOutcome::RateLimited {
                    retry_after_secs,
                    rate: before,
                },
                None,
            ),
            Admission::ProjectLimitReached { cap } => {
                (PushOutcome::ProjectLimitReached { cap, rate: before }, None)
            }
        }))
    }
}

/// The check and the head in one read transaction (one WAL snapshot), then the plan.
fn decide_on(
    conn: &Connection,
    ctx: &PushContext,
    push: &ValidPush,
    posture: &PushPosture,
) -> Result<Option<Decided>, StoreError> {
    conn.prepare_cached("BEGIN")?.execute([])?;
    let read = read_snapshot(conn, ctx, push);
    // Nothing was written: ending the snapshot cannot fail in a way that matters to the plan.
    let _ = conn
        .prepare_cached("COMMIT")
        .and_then(|mut s| s.execute([]));
    let Some((check, row)) = read? else {
        return Ok(None);
    };
    let head = row.into_head(None);
    let creates_project = head.rules.project.is_none();
    let planned = plan(ctx, push, posture, head, false);
    if !matches!(planned.outcome, PushOutcome::Appended(..)) {
        // Refusals and replays are rare, and answer with the budget as the writer finds it.
        return Ok(None);
    }
    Ok(Some(Decided {
        fingerprint: check.fingerprint,
        planned,
        creates_project,
    }))
}

fn read_snapshot(
    conn: &Connection,
    ctx: &PushContext,
    push: &ValidPush,
) -> Result<Option<(Check, HeadRow)>, StoreError> {
    let check = read_check(conn, &check_statement(ctx, push))?;
    if check.unnamed_state {
        return Ok(None);
    }
    let head = head_statement(ctx, push, Backend::Sqlite, ("", 0));
    let row = conn
        .prepare_cached(&positional(&head.sql))?
        .query_row(params_from_iter(&head.args), HeadRow::from_sqlite)?;
    Ok(Some((check, row)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The check binds the head's arguments to the head's joins: its placeholders must be the
    /// head's, in order, or SQLite's positional `?` would bind them to the wrong places.
    #[test]
    fn the_check_binds_what_the_head_binds() {
        let body = serde_json::json!({
            "project_label": "api", "cloud": "aws", "cloud_account_id": "1",
            "frameworks": ["f"], "score": 50.0, "passed": 1, "failed": 0,
            "severity_counts": {"critical": 0, "high": 0, "medium": 0, "low": 0},
            "findings": [], "state_source": "ci", "scanned_at": "2026-11-18T11:06:40Z",
        });
        let push = ValidPush::parse(body.to_string().as_bytes()).expect("a valid push");
        let ctx = PushContext {
            account_id: crate::AccountId::trusted("acct"),
            key_id: "key".into(),
            project_cap: Some(3),
            write_limit: tidemark_domain::rate::RollingLimit::per_minute(100),
            now: 1_795_000_000_000,
            touch_key: false,
            raw_body_hash: None,
            pushed_by: None,
            custom_frameworks: true,
            drift_detection: false,
        };
        let check = check_statement(&ctx, &push);
        let head = head_statement(&ctx, &push, Backend::Sqlite, ("", 0));
        assert_eq!(check.args, head.args);
        let _ = positional(&check.sql);
        assert_eq!(check.sql.matches('$').count(), check.args.len());
        let (_, joins) = check
            .sql
            .split_once(" FROM (SELECT COUNT(*) AS n")
            .expect("joins");
        assert!(head.sql.ends_with(joins));
        assert!(check
            .sql
            .contains("r.n AS writes, r.oldest AS oldest_write, a.active FROM"));
    }
}
