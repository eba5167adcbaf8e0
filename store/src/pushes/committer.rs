//! SQLite group commit for pushes.
//!
//! SQLite admits one writer, and sqlx runs each SQLite connection on its own thread: every
//! statement is a message to that thread and a wake-up back. A push made of seven such round
//! trips spent most of its time handing off, not writing (docs/benchmarks.md). So one task
//! owns the push path on SQLite. It takes every push waiting in its queue
//! (one per account, so each still sees the one before it), reads all their heads in one
//! call, decides each with the shared rules, and writes them all and commits in a second
//! call: two round trips and one fsync for the whole group. A push is answered only after its
//! group is durable.
//!
//! Waiting pushes queue per account, and each group takes the oldest push of each account in
//! turn (round robin), so an account that sends hundreds of pushes at once delays another
//! account's push by about one group, not by its whole backlog.
//!
//! If a group's write fails, it is rolled back and every push in it is retried alone, so one
//! bad push cannot fail its neighbours.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use sqlx::pool::PoolConnection;
use sqlx::sqlite::SqliteArguments;
use sqlx::{Sqlite, SqlitePool};
use tidemark_domain::push::ValidPush;
use tokio::sync::{mpsc, oneshot};

use super::{head_from_row, head_statement, plan, HeadRow, PushContext, PushOutcome};
use crate::posture::push::PushPosture;
use crate::stmt::{add_args, positional};
use crate::{Backend, StoreError};

/// Pushes in one group at most, and findings: a big push should not hold up many small ones
/// for long, nor many small ones a big one.
pub const MAX_GROUP_PUSHES: usize = 32;
const MAX_GROUP_FINDINGS: usize = 20_000;
/// Pushes waiting beyond this make their callers wait to enqueue.
const QUEUE_DEPTH: usize = 1024;

struct Job {
    ctx: PushContext,
    push: ValidPush,
    posture: PushPosture,
    reply: oneshot::Sender<Result<PushOutcome, StoreError>>,
}

/// The way into the committer task. Cheap to clone.
#[derive(Clone)]
pub struct PushQueue {
    jobs: mpsc::Sender<Job>,
    counters: Arc<Counters>,
}

#[derive(Default)]
struct Counters {
    groups: AtomicU64,
    retried_alone: AtomicU64,
    /// Pushes submitted and not yet answered.
    in_flight: AtomicU64,
    /// `formed[n - 1]`: groups formed with `n` pushes (retries alone not counted).
    formed: [AtomicU64; MAX_GROUP_PUSHES],
}

/// How the committer has grouped pushes since it started (for metrics, benchmarks and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupStats {
    /// Transactions committed or attempted, counting retries.
    pub groups: u64,
    /// Pushes handled (each once, however it ended).
    pub pushes: u64,
    /// Pushes written again alone because their group failed.
    pub retried_alone: u64,
    /// Pushes submitted and not yet answered: waiting for a group, or in the one being
    /// written. Callers waiting for room in the queue count too.
    pub in_flight: u64,
    /// `formed[n - 1]` is how many groups were formed of `n` pushes.
    pub formed: [u64; MAX_GROUP_PUSHES],
}

/// Counts a push as in flight until it is answered or its caller stops waiting.
struct InFlight<'a>(&'a AtomicU64);

impl<'a> InFlight<'a> {
    fn enter(counter: &'a AtomicU64) -> Self {
        counter.fetch_add(1, Ordering::Relaxed);
        InFlight(counter)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl fmt::Debug for PushQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PushQueue").finish_non_exhaustive()
    }
}

impl PushQueue {
    /// Starts the committer on the current runtime. It ends when every queue handle is gone.
    pub(crate) fn start(writer: SqlitePool) -> Self {
        let (jobs, queue) = mpsc::channel(QUEUE_DEPTH);
        let counters = Arc::new(Counters::default());
        tokio::spawn(run(writer, queue, counters.clone()));
        PushQueue { jobs, counters }
    }

    pub fn stats(&self) -> GroupStats {
        let c = &self.counters;
        let formed: [u64; MAX_GROUP_PUSHES] =
            std::array::from_fn(|i| c.formed[i].load(Ordering::Relaxed));
        GroupStats {
            groups: c.groups.load(Ordering::Relaxed),
            // Every push is in exactly one formed group.
            pushes: (1..).zip(formed).map(|(size, groups)| size * groups).sum(),
            retried_alone: c.retried_alone.load(Ordering::Relaxed),
            in_flight: c.in_flight.load(Ordering::Relaxed),
            formed,
        }
    }

    pub(crate) async fn submit(
        &self,
        ctx: PushContext,
        push: ValidPush,
        posture: PushPosture,
    ) -> Result<PushOutcome, StoreError> {
        let _in_flight = InFlight::enter(&self.counters.in_flight);
        let (reply, answer) = oneshot::channel();
        let job = Job {
            ctx,
            push,
            posture,
            reply,
        };
        self.jobs.send(job).await.map_err(|_| StoreError::Closed)?;
        answer.await.map_err(|_| StoreError::Closed)?
    }
}

async fn run(writer: SqlitePool, mut queue: mpsc::Receiver<Job>, counters: Arc<Counters>) {
    let mut waiting = Waiting::default();
    let mut open = true;
    loop {
        if waiting.is_empty() {
            if !open {
                return;
            }
            match queue.recv().await {
                Some(job) => waiting.add(job),
                None => return,
            }
        }
        // Everything that arrived meanwhile takes its place in its account's line.
        loop {
            match queue.try_recv() {
                Ok(job) => waiting.add(job),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => {
                    open = false;
                    break;
                }
            }
        }
        let group = waiting.next_group();
        if let Some(formed) = group
            .len()
            .checked_sub(1)
            .and_then(|i| counters.formed.get(i))
        {
            formed.fetch_add(1, Ordering::Relaxed);
        }
        commit_group(&writer, group, &counters).await;
    }
}

/// Pushes not yet in a group: one line per account, and the accounts in the order they are
/// next served.
#[derive(Default)]
struct Waiting {
    lines: HashMap<crate::AccountId, VecDeque<Job>>,
    turns: VecDeque<crate::AccountId>,
}

impl Waiting {
    fn is_empty(&self) -> bool {
        self.turns.is_empty()
    }

    fn add(&mut self, job: Job) {
        let line = self.lines.entry(job.ctx.account_id.clone()).or_default();
        if line.is_empty() {
            self.turns.push_back(job.ctx.account_id.clone());
        }
        line.push_back(job);
    }

    /// The oldest push of each account in turn, at most one per account (each must see the
    /// one before it committed), within the group's limits. An account with more waiting
    /// goes to the back of the turns.
    fn next_group(&mut self) -> Vec<Job> {
        let mut group = Vec::new();
        let mut findings = 0;
        for _ in 0..self.turns.len() {
            if group.len() >= MAX_GROUP_PUSHES || findings >= MAX_GROUP_FINDINGS {
                break;
            }
            let Some(account) = self.turns.pop_front() else {
                break;
            };
            let Some(line) = self.lines.get_mut(&account) else {
                continue;
            };
            let Some(job) = line.pop_front() else {
                continue;
            };
            findings += job.push.request().findings.len();
            group.push(job);
            if line.is_empty() {
                self.lines.remove(&account);
            } else {
                self.turns.push_back(account);
            }
        }
        group
    }
}

async fn commit_group(writer: &SqlitePool, group: Vec<Job>, counters: &Counters) {
    counters.groups.fetch_add(1, Ordering::Relaxed);
    match apply(writer, &group).await {
        Ok(outcomes) => {
            for (job, outcome) in group.into_iter().zip(outcomes) {
                // A caller that stopped waiting does not need its answer.
                let _ = job.reply.send(Ok(outcome));
            }
        }
        Err(err) if group.len() == 1 => {
            if let Some(job) = group.into_iter().next() {
                let _ = job.reply.send(Err(err));
            }
        }
        Err(err) => {
            tracing::warn!(pushes = group.len(), error = %err, "push group failed; retrying each alone");
            for job in group {
                counters.groups.fetch_add(1, Ordering::Relaxed);
                counters.retried_alone.fetch_add(1, Ordering::Relaxed);
                let answer =
                    apply(writer, std::slice::from_ref(&job))
                        .await
                        .and_then(|mut outcomes| {
                            outcomes.pop().ok_or(StoreError::Corrupt("push group"))
                        });
                let _ = job.reply.send(answer);
            }
        }
    }
}

/// Applies a group in one transaction: heads and `BEGIN IMMEDIATE` in one call, every write
/// and `COMMIT` in another. Rolls back on any failure.
async fn apply(writer: &SqlitePool, group: &[Job]) -> Result<Vec<PushOutcome>, StoreError> {
    let mut conn = writer.acquire().await?;
    let result = apply_on(&mut conn, group).await;
    if result.is_err() && sqlx::query("ROLLBACK").execute(&mut *conn).await.is_err() {
        // No transaction was open (the BEGIN itself failed), or the connection is in a state
        // no one should reuse: a fresh one costs little.
        conn.close_on_drop();
    }
    result
}

async fn apply_on(
    conn: &mut PoolConnection<Sqlite>,
    group: &[Job],
) -> Result<Vec<PushOutcome>, StoreError> {
    let mut sql = String::from("BEGIN IMMEDIATE;");
    let mut args = SqliteArguments::default();
    for job in group {
        let head = head_statement(&job.ctx, &job.push, Backend::Sqlite);
        sql.push_str(&positional(&head.sql));
        sql.push(';');
        add_args::<Sqlite>(&mut args, head.args)?;
    }
    let rows: Vec<HeadRow> = sqlx::query_as_with(&sql, args)
        .fetch_all(&mut **conn)
        .await?;
    if rows.len() != group.len() {
        return Err(StoreError::Corrupt("push head rows"));
    }

    let mut outcomes = Vec::with_capacity(group.len());
    let mut sql = String::new();
    let mut args = SqliteArguments::default();
    for (job, row) in group.iter().zip(rows) {
        let (outcome, writes) = plan(&job.ctx, &job.push, &job.posture, head_from_row(row)?);
        for stmt in writes {
            sql.push_str(&positional(&stmt.sql));
            sql.push(';');
            add_args::<Sqlite>(&mut args, stmt.args)?;
        }
        outcomes.push(outcome);
    }
    sql.push_str("COMMIT");
    sqlx::query_with(&sql, args).execute(&mut **conn).await?;
    Ok(outcomes)
}
