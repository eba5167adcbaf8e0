//! SQLite: a push decided before the writer's turn.
//!
//! The one writer reads each push's head, decodes it and plans the push's statements in its
//! own turn, while every other push waits (about half of the writer's turn on the push
//! benchmark). Here, while a push waits in the queue, a blocking task does that against a read
//! snapshot of its own (WAL readers never wait on the writer) and leaves the plan for the
//! writer in the push's [`Slot`]. It runs beside the wait, never before it: a push that finds
//! the writer idle is decided there at once, and pays no latency for a plan it does not need.
//!
//! In its turn the writer takes the plan as made when nothing it was made on can have
//! changed, and it knows that without reading anything: every change to what a head reads is
//! either a push, which the writer itself committed, or another connection's commit, which
//! moves `PRAGMA data_version` on the writer's connection. So the writer numbers its commits
//! and keeps the number of each project's and each account's last one ([`Ledger`]), counts the
//! other connections' commits it has seen ([`Generations`]), and a plan carries both numbers
//! as they were before its snapshot began ([`Seen`]). A plan is taken when no other commit
//! came since and no push to its project was committed since; when only another project of
//! the account was written, its write budget and project cap are counted again in the turn
//! (one small statement) and confirmed with [`tidemark_domain::append::admit`], as
//! PostgreSQL's path does with its place. Anything else, and the writer reads the head and
//! decides as before. So every push is decided on what the database holds in the writer's
//! turn, whichever path made the decision.
//!
//! Off unless `TIDEMARK_SQLITE_PLAN_PUSHES_EARLY=1` (docs/benchmarks-log.md, issue 70).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::{params_from_iter, Connection, OpenFlags};
use tidemark_domain::append::{admit, Admission, Counted};
use tidemark_domain::push::ValidPush;

use super::head_row::HeadRow;
use super::{
    budget_joins, head_statement, plan, rate_status, writes_counted_from, Planned, PushContext,
    PushOutcome, RateStatus, StoredScan,
};
use crate::posture::push::PushPosture;
use crate::stmt::{positional, Stmt};
use crate::{AccountId, Backend, StoreError, SQLITE_BUSY_TIMEOUT};

/// Pushes planned at once, each on a reader connection of its own, all kept open between
/// pushes (each connection keeps its statements prepared): more would only queue for the
/// same cores.
pub(super) const READERS: usize = 8;

/// Each reader's page cache, in KiB (SQLite's default is 2 MiB a connection): a head reads a
/// few index pages, and the operating system caches the file anyway.
const READER_CACHE_KIB: i64 = 512;

/// Projects the ledger remembers before it starts again (a few MB): plans older than that
/// are decided again.
const LEDGER_PROJECTS: usize = 100_000;

/// The writer's commit count and the other connections' commits it has seen; read by the
/// planners, moved only by the writer.
#[derive(Debug, Default)]
struct Generations {
    commits: AtomicU64,
    external: AtomicU64,
}

/// Where the database stood, as far as a plan can tell, before its snapshot began: its
/// snapshot holds at least these commits.
#[derive(Debug, Clone, Copy)]
pub(super) struct Seen {
    commits: u64,
    external: u64,
}

/// What the writer's commits wrote, by project and by account; kept on the writer's thread.
#[derive(Debug, Default)]
pub(super) struct Ledger {
    /// `PRAGMA data_version` at the writer's last turn on its connection; `None` on a
    /// connection not yet asked (what came before it is unknown).
    data_version: Option<i64>,
    projects: HashMap<(AccountId, String), u64>,
    accounts: HashMap<AccountId, u64>,
    /// Plans seen before this commit are not checked: the ledger forgot them.
    floor: u64,
}

impl Ledger {
    /// The writer's connection is new: another connection's commits before it are unknown.
    pub(super) fn forget_connection(&mut self) {
        self.data_version = None;
    }

    /// In the writer's turn, once it holds the write lock: whether another connection
    /// committed since its last turn (then no plan made before now is taken).
    pub(super) fn look_outside(
        &mut self,
        conn: &Connection,
        readers: &Readers,
    ) -> rusqlite::Result<()> {
        let version: i64 = conn
            .prepare_cached("PRAGMA data_version")?
            .query_row([], |row| row.get(0))?;
        if self.data_version != Some(version) {
            readers.generations.external.fetch_add(1, Ordering::AcqRel);
            self.data_version = Some(version);
        }
        Ok(())
    }

    /// After a commit of `pushes`: their projects and accounts were written by it. The count
    /// moves only after the commit, so a plan that reads it sees the commit in its snapshot.
    pub(super) fn committed<'a>(
        &mut self,
        pushes: impl Iterator<Item = (&'a AccountId, &'a str)>,
        readers: &Readers,
    ) {
        let commits = &readers.generations.commits;
        let now = commits.load(Ordering::Acquire) + 1;
        if self.projects.len() >= LEDGER_PROJECTS {
            self.projects.clear();
            self.accounts.clear();
            self.floor = now;
        }
        for (account, label) in pushes {
            self.projects
                .insert((account.clone(), label.to_owned()), now);
            self.accounts.insert(account.clone(), now);
        }
        commits.store(now, Ordering::Release);
    }

    /// Whether anything the plan for `project` read may have changed since `seen`, and
    /// whether its account's budget and projects may have.
    fn since(&self, seen: Seen, external: u64, account: &AccountId, label: &str) -> Since {
        let after = |last: Option<&u64>| last.is_some_and(|&at| at > seen.commits);
        if seen.external != external
            || seen.commits < self.floor
            || after(self.projects.get(&(account.clone(), label.to_owned())))
        {
            Since::Changed
        } else if after(self.accounts.get(account)) {
            Since::AccountWritten
        } else {
            Since::Unchanged
        }
    }
}

enum Since {
    Unchanged,
    /// Another project of the account was written: its budget and cap are counted again.
    AccountWritten,
    Changed,
}

/// The account's writes in the rate window, the oldest of them, and its active projects.
fn budget_statement(ctx: &PushContext) -> Stmt {
    Stmt::new(format!(
        "SELECT r.n, r.oldest, a.active FROM {}",
        budget_joins(1)
    ))
    .bind(ctx.account_id.as_str())
    .bind(writes_counted_from(ctx, Backend::Sqlite))
    .bind(ctx.account_id.as_str())
}

fn read_budget(conn: &Connection, ctx: &PushContext) -> rusqlite::Result<(i64, Option<i64>, i64)> {
    let stmt = budget_statement(ctx);
    conn.prepare_cached(&positional(&stmt.sql))?
        .query_row(params_from_iter(&stmt.args), |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })
}

/// A push planned on a snapshot, and what it was planned on.
pub(super) struct Decided {
    seen: Seen,
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
    generations: Generations,
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
            generations: Generations::default(),
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

    /// The push planned on a snapshot; `None` leaves the decision to the writer. Blocking.
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
        let decided = decide_on(&conn, &self.generations, ctx, push, posture);
        if conn.is_autocommit() && !self.closed.load(Ordering::SeqCst) {
            if let Ok(mut idle) = self.idle.lock() {
                if idle.len() < READERS {
                    idle.push(conn);
                }
            }
        }
        match decided {
            Ok(decided) => Some(decided),
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
        ledger: &Ledger,
        ctx: &PushContext,
        push: &ValidPush,
        decided: &'d Decided,
    ) -> Result<Option<(PushOutcome, Option<&'d Planned>)>, StoreError> {
        let external = self.generations.external.load(Ordering::Acquire);
        let since = ledger.since(decided.seen, external, &ctx.account_id, push.label());
        let confirmed = match (since, &decided.planned.outcome) {
            (Since::Unchanged, outcome) => Some((outcome.clone(), Some(&decided.planned))),
            (Since::AccountWritten, PushOutcome::Appended(scan, _)) => {
                Some(self.admit_again(conn, ctx, decided, scan)?)
            }
            // A refusal or a replay counted on the account as it was.
            (Since::AccountWritten, _) | (Since::Changed, _) => None,
        };
        let counter = match confirmed {
            Some(_) => &self.confirmed,
            None => &self.redecided,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        Ok(confirmed)
    }

    /// The budget and the cap counted again for a push planned to append, when only another
    /// project of its account was written since its snapshot.
    fn admit_again<'d>(
        &self,
        conn: &Connection,
        ctx: &PushContext,
        decided: &'d Decided,
        scan: &StoredScan,
    ) -> Result<(PushOutcome, Option<&'d Planned>), StoreError> {
        let (writes, oldest_write, active) = read_budget(conn, ctx)?;
        let writes = u32::try_from(writes).unwrap_or(u32::MAX);
        let counted = Counted {
            writes_in_window: writes.saturating_add(1),
            oldest_write,
            active_projects: match ctx.project_cap {
                Some(cap) if decided.creates_project => {
                    Some((cap, u64::try_from(active).unwrap_or(0).saturating_add(1)))
                }
                _ => None,
            },
        };
        let before = rate_status(&ctx.write_limit, ctx.now, writes, oldest_write);
        Ok(match admit(&ctx.write_limit, ctx.now, counted) {
            Admission::Admitted {
                remaining,
                reset_secs,
            } => {
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
        })
    }
}

/// The head in one read transaction (one WAL snapshot), then the plan.
fn decide_on(
    conn: &Connection,
    generations: &Generations,
    ctx: &PushContext,
    push: &ValidPush,
    posture: &PushPosture,
) -> Result<Decided, StoreError> {
    // Before the snapshot begins, so that it holds at least what these name.
    let seen = Seen {
        commits: generations.commits.load(Ordering::Acquire),
        external: generations.external.load(Ordering::Acquire),
    };
    conn.prepare_cached("BEGIN")?.execute([])?;
    let head = head_statement(ctx, push, Backend::Sqlite, ("", 0));
    let read = conn
        .prepare_cached(&positional(&head.sql))
        .and_then(|mut s| s.query_row(params_from_iter(&head.args), HeadRow::from_sqlite));
    // Nothing was written: ending the snapshot cannot fail in a way that matters to the plan.
    let _ = conn
        .prepare_cached("COMMIT")
        .and_then(|mut s| s.execute([]));
    let head = read?.into_head(None);
    let creates_project = head.rules.project.is_none();
    Ok(Decided {
        seen,
        planned: plan(ctx, push, posture, head, false),
        creates_project,
    })
}
