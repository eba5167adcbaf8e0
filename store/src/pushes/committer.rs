//! SQLite group commit for pushes.
//!
//! SQLite admits one writer, and sqlx runs each SQLite connection on its own thread: every
//! statement is a message to that thread and a wake-up back. A push made of seven such round
//! trips spent most of its time handing off, not writing (docs/benchmarks.md). So one task
//! owns the push path on SQLite. It takes every push waiting in its queue
//! (one per account, so each still sees the one before it) and hands the group to one
//! blocking thread that reads each head, decides it with the shared rules and writes it, with
//! statements prepared once ([`super::sqlite_writer`]), then commits: one hand-off and one
//! fsync for the whole group. A push is answered only after its group is durable.
//!
//! Waiting pushes queue per account, and each group takes the oldest push of each account in
//! turn (round robin), so an account that sends hundreds of pushes at once delays another
//! account's push by about one group, not by its whole backlog.
//!
//! If a group's write fails, it is rolled back and every push in it is retried alone, so one
//! bad push cannot fail its neighbours.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use sqlx::SqlitePool;
use tidemark_domain::push::ValidPush;
use tokio::sync::{mpsc, oneshot};

use super::early::{Readers, Slot};
use super::sqlite_writer::{Input, Job, SqliteWriter, Timing, Turn};
use super::{PushContext, PushOutcome};
use crate::posture::push::PushPosture;
use crate::StoreError;

/// Pushes in one group at most, and findings: a big push should not hold up many small ones
/// for long, nor many small ones a big one.
pub const MAX_GROUP_PUSHES: usize = 32;
const MAX_GROUP_FINDINGS: usize = 20_000;
/// Pushes waiting beyond this make their callers wait to enqueue.
const QUEUE_DEPTH: usize = 1024;

/// What the committer task is asked.
enum Message {
    Push(Box<Job>),
    /// Close the writer's connection, and say so.
    Close(oneshot::Sender<()>),
}

/// The way into the committer task. Cheap to clone.
#[derive(Clone)]
pub struct PushQueue {
    jobs: mpsc::Sender<Message>,
    counters: Arc<Counters>,
    readers: Arc<Readers>,
    timing: Arc<Timing>,
}

#[derive(Default)]
struct Counters {
    groups: AtomicU64,
    retried_alone: AtomicU64,
    /// Pushes submitted and not yet answered.
    in_flight: AtomicU64,
    /// Pushes not yet queued, or being planned early.
    deciding: AtomicU64,
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
    /// Pushes not yet queued, or being planned beside the queue ([`super::early`]).
    pub deciding: u64,
    /// `formed[n - 1]` is how many groups were formed of `n` pushes.
    pub formed: [u64; MAX_GROUP_PUSHES],
    /// Pushes planned before the writer's turn and written as planned (or refused by the
    /// budget or the cap as counted in the turn).
    pub decided_early: u64,
    /// Pushes planned before the writer's turn on what had changed by then: decided again.
    pub decided_again: u64,
    /// Nanoseconds of the writer's turns, summed: reading or checking heads and deciding,
    /// running the pushes' statements, committing (the fsync).
    pub writer_nanos: [u64; 3],
}

/// Counts a push as being decided until it is queued and, when planned early, planned.
struct Deciding(Arc<Counters>);

impl Deciding {
    fn enter(counters: Arc<Counters>) -> Self {
        counters.deciding.fetch_add(1, Ordering::Relaxed);
        Deciding(counters)
    }
}

impl Drop for Deciding {
    fn drop(&mut self) {
        self.0.deciding.fetch_sub(1, Ordering::Relaxed);
    }
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
    /// Starts the committer on the current runtime, for the SQLite file at `path` whose
    /// writer pool is `writer`. It ends when every queue handle is gone.
    pub(crate) fn start(path: PathBuf, writer: SqlitePool) -> Self {
        let (jobs, queue) = mpsc::channel(QUEUE_DEPTH);
        let counters = Arc::new(Counters::default());
        let readers = Arc::new(Readers::new(path.clone()));
        let writer = SqliteWriter::new(path, writer, readers.clone());
        let timing = writer.timing.clone();
        tokio::spawn(run(writer, queue, counters.clone()));
        PushQueue {
            jobs,
            counters,
            readers,
            timing,
        }
    }

    /// Closes the committer's connection once the group being written, if any, is done; a
    /// later push opens it again (the writer pool, closed with the database, refuses it first).
    pub(crate) async fn close(&self) {
        self.readers.close();
        let (done, closed) = oneshot::channel();
        if self.jobs.send(Message::Close(done)).await.is_ok() {
            let _ = closed.await;
        }
    }

    /// Whether pushes are planned before the writer's turn ([`super::early`]); off by
    /// default, when the writer decides every push (parity tests compare the two).
    pub fn set_early_decisions(&self, on: bool) {
        self.readers.set_enabled(on);
    }

    pub fn stats(&self) -> GroupStats {
        let c = &self.counters;
        let (decided_early, decided_again) = self.readers.counts();
        let formed: [u64; MAX_GROUP_PUSHES] =
            std::array::from_fn(|i| c.formed[i].load(Ordering::Relaxed));
        GroupStats {
            groups: c.groups.load(Ordering::Relaxed),
            // Every push is in exactly one formed group.
            pushes: (1..).zip(formed).map(|(size, groups)| size * groups).sum(),
            retried_alone: c.retried_alone.load(Ordering::Relaxed),
            in_flight: c.in_flight.load(Ordering::Relaxed),
            deciding: c.deciding.load(Ordering::Relaxed),
            formed,
            decided_early,
            decided_again,
            writer_nanos: self.timing.nanos(),
        }
    }

    pub(crate) async fn submit(
        &self,
        ctx: PushContext,
        push: ValidPush,
        posture: PushPosture,
    ) -> Result<PushOutcome, StoreError> {
        let _in_flight = InFlight::enter(&self.counters.in_flight);
        // Counted from here until the push is queued and, when it is planned early, planned.
        let deciding = Deciding::enter(self.counters.clone());
        let (reply, answer) = oneshot::channel();
        let input = Arc::new(Input { ctx, push, posture });
        let early = Arc::new(Slot::default());
        let job = Job {
            input: input.clone(),
            early: early.clone(),
            reply,
        };
        self.jobs
            .send(Message::Push(Box::new(job)))
            .await
            .map_err(|_| StoreError::Closed)?;
        if self.readers.enabled() {
            // Beside the wait for the writer, not before it: a push the writer reaches first
            // is decided there, as before, and its plan is not made at all.
            let readers = self.readers.clone();
            tokio::spawn(async move {
                let Ok(_permit) = readers.permits.clone().acquire_owned().await else {
                    return;
                };
                let _ = tokio::task::spawn_blocking(move || {
                    let _deciding = deciding;
                    if early.start() {
                        early.fill(readers.decide(&input.ctx, &input.push, &input.posture));
                    }
                })
                .await;
            });
        } else {
            drop(deciding);
        }
        answer.await.map_err(|_| StoreError::Closed)?
    }
}

async fn run(
    mut writer: SqliteWriter,
    mut queue: mpsc::Receiver<Message>,
    counters: Arc<Counters>,
) {
    let mut waiting = Waiting::default();
    let mut closing: Vec<oneshot::Sender<()>> = Vec::new();
    let mut open = true;
    loop {
        // Asked between groups: the one being written has finished.
        for done in closing.drain(..) {
            writer.close();
            let _ = done.send(());
        }
        if waiting.is_empty() {
            if !open {
                return;
            }
            match queue.recv().await {
                Some(Message::Push(job)) => waiting.add(*job),
                Some(Message::Close(done)) => {
                    closing.push(done);
                    continue;
                }
                None => return,
            }
        }
        // The group is formed once the writer's turn comes: what arrives while another
        // write holds it joins the group instead of waiting for the next.
        let turn = writer.turn().await;
        // Everything that arrived meanwhile takes its place in its account's line.
        loop {
            match queue.try_recv() {
                Ok(Message::Push(job)) => waiting.add(*job),
                Ok(Message::Close(done)) => closing.push(done),
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
        commit_group(&mut writer, group, turn, &counters).await;
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
        let line = self
            .lines
            .entry(job.input.ctx.account_id.clone())
            .or_default();
        if line.is_empty() {
            self.turns.push_back(job.input.ctx.account_id.clone());
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
            findings += job.input.push.request().findings.len();
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

async fn commit_group(writer: &mut SqliteWriter, group: Vec<Job>, turn: Turn, counters: &Counters) {
    if group.is_empty() {
        return;
    }
    counters.groups.fetch_add(1, Ordering::Relaxed);
    match writer.apply(group, turn).await {
        (group, Ok(outcomes)) => {
            for (job, outcome) in group.into_iter().zip(outcomes) {
                // A caller that stopped waiting does not need its answer.
                let _ = job.reply.send(Ok(outcome));
            }
        }
        (group, Err(err)) if group.len() <= 1 => {
            if let Some(job) = group.into_iter().next() {
                let _ = job.reply.send(Err(err));
            }
        }
        (group, Err(err)) => {
            tracing::warn!(pushes = group.len(), error = %err, "push group failed; retrying each alone");
            for job in group {
                counters.groups.fetch_add(1, Ordering::Relaxed);
                counters.retried_alone.fetch_add(1, Ordering::Relaxed);
                let turn = writer.turn().await;
                let (mut alone, answer) = writer.apply(vec![job], turn).await;
                let answer = answer.and_then(|mut outcomes| {
                    outcomes.pop().ok_or(StoreError::Corrupt("push group"))
                });
                if let Some(job) = alone.pop() {
                    let _ = job.reply.send(answer);
                }
            }
        }
    }
}
