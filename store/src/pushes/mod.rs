//! Appending a pushed scan to a project's history: one transaction that reads the head,
//! decides (`tidemark_domain::append`) and writes.
//!
//! Both backends run the same statements and the same rules; they differ in how the
//! statements travel. PostgreSQL sends them one by one inside a transaction that holds the
//! project's lock, so one account's projects are written side by side ([`postgres`]). SQLite has a single writer anyway, so its pushes go through one
//! committer task that applies several at once ([`committer`]).

use crate::{AccountId, ProjectId, ScanId};
use std::collections::HashSet;

use tidemark_domain::append::{
    alerts_due, base_comparison, decide_push, BaseHead, BaseScan, LastScan, LineHead, LineIds,
    LineRef, ProjectHead, PushDecision, PushFacts, PushHead,
};
use tidemark_domain::git::branch_ref_key;
use tidemark_domain::push::{scan_id_candidate, ValidPush};
use tidemark_domain::rate::{RateDecision, RollingLimit};
use tidemark_domain::Millis;
use tidemark_wire::{BaseComparison, GateResult};

use crate::gates::{gate_from_columns, open_set_column, verdict_from_columns};

use crate::alerts::AlertScan;
use crate::posture::push::PushPosture;
use crate::stmt::Stmt;
use crate::webhooks::{enqueue_statement, EventRef};
use crate::Writer;
use crate::{on_db, Backend, Db, StoreError};
use tidemark_domain::webhook::{push_events, Event};

/// The events a push may raise, in a fixed order (see [`EventRef::raised`]).
const SCAN_EVENTS: [Event; 5] = [
    Event::ScanPushed,
    Event::GateFailed,
    Event::ScoreRegressed,
    Event::PullRequestGateFailed,
    Event::PostureDrifted,
];

pub mod committer;
mod early;
mod head_row;
pub mod line_state;
mod postgres;
mod sqlite_writer;
mod write;

use write::{write_statements, Placed};

/// Who pushes, and under which limits.
#[derive(Debug, Clone)]
pub struct PushContext {
    pub account_id: AccountId,
    pub key_id: String,
    /// Active-project cap; `None` is unlimited.
    pub project_cap: Option<u64>,
    pub write_limit: RollingLimit,
    pub now: Millis,
    /// Record the key's use (callers skip it when the stored time is recent enough).
    pub touch_key: bool,
    /// SHA-256 (hex) of the bytes the push arrived as: kept with the line's head, so that a
    /// byte-identical retry is recognised without parsing while the write budget is spent
    /// ([`replay_by_raw_hash`]). `None` when the push did not come as bytes.
    pub raw_body_hash: Option<String>,
    /// How the scan was pushed (`wire::PushedBy` as JSON), kept with it.
    pub pushed_by: Option<String>,
    /// The licence has `custom_frameworks`: the push judges the account's own frameworks too.
    pub custom_frameworks: bool,
    /// The licence has `drift_detection`: the scan keeps what drifted, and a push on the
    /// default branch where something did raises `posture.drifted`.
    pub drift_detection: bool,
}

/// The scan a push created (or, for a replay, had created).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredScan {
    pub project_id: ProjectId,
    pub scan_id: ScanId,
    pub score_delta: f64,
    pub gate: GateResult,
    /// The branch the scan is on (for a pull request, its source branch), if known.
    pub branch: Option<String>,
    /// The pull request's number, for a pull request's scan.
    pub pull_request: Option<u64>,
    /// A pull request's comparison with its base.
    pub base: Option<BaseComparison>,
    /// Webhook deliveries were queued with the scan (the caller wakes the sender).
    pub webhooks_queued: bool,
    /// Alert mail may have been queued with the scan (the caller wakes the mail sender).
    pub alerts_queued: bool,
}

/// The account's write budget after this request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateStatus {
    pub limit: u32,
    pub remaining: u32,
    pub reset_secs: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum PushOutcome {
    Appended(StoredScan, RateStatus),
    /// The same push as the project's latest scan: nothing appended.
    Replayed(StoredScan, RateStatus),
    ProjectLimitReached {
        cap: u64,
        rate: RateStatus,
    },
    ProjectArchived {
        project_id: ProjectId,
        rate: RateStatus,
    },
    RateLimited {
        retry_after_secs: u64,
        rate: RateStatus,
    },
    /// The key was revoked between authentication and the write: nothing written.
    KeyRevoked,
    /// The license stopped being active between authentication and the write.
    LicenseInactive,
}

/// Records a push.
///
/// Per project, the replay check and the append are one atomic step on every replica: the
/// head is read inside the write transaction (SQLite: one writer at a time; PostgreSQL: the
/// project's lock, taken before anything is read), so N concurrent pushes make N entries whose
/// deltas chain exactly. The write budget and the project cap hold per account as if pushes
/// were written one by one (PostgreSQL confirms them last, [`postgres`]).
///
/// The push completes even if the caller stops waiting: on SQLite the committer owns it once
/// it is queued.
pub async fn record_push(
    db: &Writer,
    ctx: PushContext,
    push: ValidPush,
) -> Result<PushOutcome, StoreError> {
    // Judged here, by the caller, not in the one writer's turn (`posture::push`).
    let posture = PushPosture::prepare(&push.request().frameworks, &push.request().findings);
    match db.db() {
        Db::Sqlite { pushes, .. } => pushes.submit(ctx, push, posture).await,
        Db::Postgres(pool) => postgres::record(pool, &ctx, &push, &posture).await,
    }
}

/// Who follows this account's pushes: only then does a push queue webhook deliveries, or
/// alert mail (so a push that nobody follows runs no statement for them).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Listeners {
    webhooks: bool,
    alerts: bool,
}

/// Everything the rules need, in one statement.
///
/// The push's line is the one stored under its key; a push without a branch goes to the
/// project's default line; a branch with no line of its own while the default line has no
/// name is the default line, when that branch is the one that names it
/// (`GitTarget::default_name`). A pull request's base is found the same way.
///
/// `known` is the token and head of the line state this replica keeps for the push's line
/// (an empty token for none): when the line still has both, the state is not read again
/// ([`line_state`]).
fn head_statement(
    ctx: &PushContext,
    push: &ValidPush,
    backend: Backend,
    known: (&str, i64),
) -> Stmt {
    let (triaged, set_aside) = triage_columns(backend);
    let line_state = line_state_columns(backend);
    let columns = format!(
        "{} AS previous_open, {} AS base_open, {triaged} AS triaged, \
         {set_aside} AS set_aside, {line_state}, cf.documents AS custom_frameworks, \
         t.head_seq AS line_head_seq, \
         ls.scanned_at AS line_head_at, \
         k.key_live, l.license_live, r.n AS writes, r.oldest AS oldest_write, a.active, \
         p.id, p.archived_at, p.scan_count, \
         p.gate_min_score, p.gate_max_drop, p.gate_new_severity, wh.webhooks, al.alerts, \
         {SAME_SECOND} AS same_second, \
         d.id AS default_id, d.name AS default_name, \
         t.id AS line_id, t.name AS line_name, t.pr_number AS line_pr, t.scan_count AS line_count, \
         ls.score AS last_score, ls.scan_id AS last_scan_id, ls.score_delta AS last_delta, \
         ls.body_hash AS last_body_hash, ls.gate_status AS last_gate_status, \
         ls.gate_reasons AS last_gate_reasons, ls.base_branch AS last_base_branch, \
         ls.base_scan_id AS last_base_scan_id, ls.base_score AS last_base_score, \
         ls.base_new AS last_base_new, ls.base_fixed AS last_base_fixed, \
         bs.id AS base_id, bsc.scan_id AS base_scan_id, bsc.score AS base_score, \
         bsc.seq AS base_seq",
        open_set_column(
            backend,
            "p.gate_new_severity IS NOT NULL AND t.head_seq IS NOT NULL",
            "t.head_seq"
        ),
        open_set_column(backend, "bs.head_seq IS NOT NULL", "bs.head_seq"),
    );
    head_query(ctx, push, backend, known, &columns)
}

/// The head's columns `triaged` and `set_aside`: the line's findings triaged now, and those
/// set aside for posture.
fn triage_columns(backend: Backend) -> (String, String) {
    // The time comes from a one-row join at the end (`nw`), so that its placeholder follows
    // the others as SQLite's positional `?` need, and the text stays the same from push to
    // push: the SQLite writer keeps each statement prepared by its text.
    let triaged = crate::findings::triaged_set_column(
        backend,
        "p.gate_new_severity IS NOT NULL AND t.id IS NOT NULL",
        "t.id",
        "nw.now_ms",
        None,
    );
    // Posture tells set-aside failures apart on every push, not only for a gate.
    let set_aside = crate::findings::triaged_set_column(
        backend,
        "t.id IS NOT NULL",
        "t.id",
        "nw.now_ms",
        Some(crate::findings::POSTURE_SET_ASIDE),
    );
    (triaged, set_aside)
}

/// The account's writes in the rate window (`r.n`, the oldest `r.oldest`) and its active
/// projects (`a.active`), bound to the account, the window's start and the account again from
/// placeholder `first` on: the head's counts, and what a plan made early counts again.
fn budget_joins(first: usize) -> String {
    let (account, from, again) = (first, first + 1, first + 2);
    format!(
        "(SELECT COUNT(*) AS n, MIN(received_at) AS oldest FROM scans \
          WHERE account_id = ${account} AND received_at > ${from}) r \
         CROSS JOIN (SELECT COUNT(*) AS active FROM projects \
                     WHERE account_id = ${again} AND archived_at IS NULL) a"
    )
}

/// The scans of the push's project in the push's second (`$1`, `$2`: the head's first
/// placeholders), which scan ids count.
const SAME_SECOND: &str = "(SELECT COUNT(*) FROM scans s WHERE s.project_id = p.id \
                           AND s.scanned_at >= $1 AND s.scanned_at < $2)";

/// The head's tables and joins with `columns` read from them (the only placeholders
/// `columns` may hold are [`SAME_SECOND`]'s, before the joins' own).
fn head_query(
    ctx: &PushContext,
    push: &ValidPush,
    backend: Backend,
    known: (&str, i64),
    columns: &str,
) -> Stmt {
    let second = push.scanned_at().timestamp() * 1000;
    let git = push.git();
    let key = git.line();
    let naming = git.default_name().map(branch_ref_key);
    let line_key = key.stored();
    let adopts = line_key.is_some() && line_key == naming;
    let base_key = git.base().map(branch_ref_key);
    let base_adopts = base_key.is_some() && base_key == naming;
    Stmt::new(format!(
        "SELECT {columns} \
         FROM {budget} \
         LEFT JOIN projects p ON p.account_id = $6 AND p.label = $7 \
         LEFT JOIN branches d ON d.id = p.default_branch_id \
         LEFT JOIN branches t ON t.id = CASE WHEN $8 = '' THEN p.default_branch_id ELSE COALESCE(\
             (SELECT b1.id FROM branches b1 WHERE b1.project_id = p.id AND b1.ref_key = $9), \
             CASE WHEN d.name IS NULL AND $10 = 1 THEN d.id END) END \
         LEFT JOIN scans ls ON ls.project_id = p.id AND ls.seq = t.head_seq \
         LEFT JOIN branches bs ON bs.id = CASE WHEN $11 = '' THEN NULL ELSE COALESCE(\
             (SELECT b2.id FROM branches b2 WHERE b2.project_id = p.id AND b2.ref_key = $12), \
             CASE WHEN d.name IS NULL AND $13 = 1 THEN d.id END) END \
         LEFT JOIN scans bsc ON bsc.project_id = p.id AND bsc.seq = bs.head_seq \
         CROSS JOIN (SELECT COUNT(*) AS key_live FROM \
                     (SELECT id, account_id FROM api_keys WHERE revoked_at IS NULL \
                      UNION ALL SELECT id, account_id FROM ci_tokens) kk \
                     WHERE kk.id = $14 AND kk.account_id = $15) k \
         CROSS JOIN (SELECT COUNT(*) AS license_live FROM licenses \
                     WHERE account_id = $16 AND suspended_at IS NULL AND expires_at > $17) l \
         CROSS JOIN (SELECT COUNT(*) AS webhooks FROM webhooks WHERE account_id = $18) wh \
         CROSS JOIN (SELECT COUNT(*) AS alerts FROM alert_prefs \
                     WHERE account_id = $19 \
                     AND (gate_failed OR score_regressed OR posture_drifted)) al \
         CROSS JOIN (SELECT $20 AS now_ms) nw \
         CROSS JOIN (SELECT '[' || {} || ']' AS documents FROM custom_frameworks \
                     WHERE account_id = $21) cf \
         CROSS JOIN (SELECT $22 AS known, CAST($23 AS BIGINT) AS known_seq) kn",
        match backend {
            Backend::Sqlite => "group_concat(document, ',')",
            Backend::Postgres => "string_agg(document, ',')",
        },
        budget = budget_joins(3),
    ))
    .bind(second)
    .bind(second + 1000)
    .bind(ctx.account_id.as_str())
    .bind(writes_counted_from(ctx, backend))
    .bind(ctx.account_id.as_str())
    .bind(ctx.account_id.as_str())
    .bind(push.label())
    .bind(line_key.clone().unwrap_or_default())
    .bind(line_key.unwrap_or_default())
    .bind(i64::from(adopts))
    .bind(base_key.clone().unwrap_or_default())
    .bind(base_key.unwrap_or_default())
    .bind(i64::from(base_adopts))
    .bind(ctx.key_id.as_str())
    .bind(ctx.account_id.as_str())
    .bind(ctx.account_id.as_str())
    .bind(ctx.now)
    .bind(ctx.account_id.as_str())
    .bind(ctx.account_id.as_str())
    .bind(ctx.now)
    // No account's id when the licence lacks the feature: its frameworks are not read.
    .bind(if ctx.custom_frameworks {
        ctx.account_id.as_str()
    } else {
        ""
    })
    .bind(known.0)
    .bind(known.1)
}

/// Where the head starts counting the account's appends: the rate window's start on SQLite;
/// the end of time (an empty range of the index) on PostgreSQL, whose budget is the push's
/// place, counted already (`postgres::take_place`).
fn writes_counted_from(ctx: &PushContext, backend: Backend) -> Millis {
    match backend {
        Backend::Sqlite => ctx.write_limit.window_start(ctx.now),
        Backend::Postgres => Millis::MAX,
    }
}

/// The head's columns `open_tracked`, `live_spans` and `state_kept`: the line's state, read
/// unless the replica keeps it under the line's token and head (`kn`, [`line_state`]).
fn line_state_columns(backend: Backend) -> String {
    let unknown = "t.id IS NOT NULL AND (kn.known = '' OR t.live_token IS NULL \
                   OR t.live_token <> kn.known OR t.head_seq IS NULL \
                   OR t.head_seq <> kn.known_seq)";
    format!(
        "{} AS open_tracked, {} AS live_spans, \
         CAST(CASE WHEN kn.known <> '' AND t.live_token = kn.known \
              AND t.head_seq = kn.known_seq THEN 1 ELSE 0 END AS BIGINT) AS state_kept",
        crate::findings::open_tracked_column(backend, unknown, "t.id"),
        crate::spans::live_spans_column(backend, unknown, "t.id"),
    )
}

/// What a push's transaction reads before it decides.
pub(crate) struct Head {
    rules: PushHead,
    listeners: Listeners,
    /// The line's latest scan's open findings, when the project's gate looks for new ones.
    previous_open: Option<HashSet<(String, String)>>,
    /// A pull request's base scan's open findings.
    base_open: Option<HashSet<(String, String)>>,
    /// The line's triaged findings, when the project's gate looks for new ones.
    triaged: Option<HashSet<(String, String)>>,
    /// The line's findings set aside as accepted risk or false positive (posture).
    set_aside: Option<HashSet<(String, String)>>,
    /// The line's open tracked findings and the spans its latest scan has: as read, or as
    /// this replica kept them.
    state: std::sync::Arc<line_state::LineState>,
    /// The account's custom frameworks (none without the feature).
    customs: Vec<tidemark_domain::frameworks::ValidFramework>,
    line_head: Option<(i64, i64)>,
    /// The push's line as stored: its name and pull-request number (what a replay answers).
    line_name: Option<String>,
    line_pr: Option<u64>,
    /// The default line's name, if it has one.
    default_name: Option<String>,
    base_seq: Option<i64>,
}

/// The answer to a push that stores nothing: refused, or a replay of the line's latest scan.
fn refused_outcome(
    decision: PushDecision,
    project_id: ProjectId,
    line_name: Option<String>,
    line_pr: Option<u64>,
    rate: RateStatus,
) -> PushOutcome {
    match decision {
        PushDecision::KeyRevoked => PushOutcome::KeyRevoked,
        PushDecision::LicenseInactive => PushOutcome::LicenseInactive,
        PushDecision::ProjectArchived => PushOutcome::ProjectArchived { project_id, rate },
        PushDecision::Replay(last) => PushOutcome::Replayed(
            StoredScan {
                project_id,
                scan_id: last.scan_id,
                score_delta: last.score_delta,
                gate: last.gate,
                branch: line_name,
                pull_request: line_pr,
                base: last.base,
                webhooks_queued: false,
                alerts_queued: false,
            },
            rate,
        ),
        PushDecision::RateLimited { retry_after_secs } => PushOutcome::RateLimited {
            retry_after_secs,
            rate,
        },
        PushDecision::ProjectLimitReached { cap } => PushOutcome::ProjectLimitReached { cap, rate },
        PushDecision::Append(_) => unreachable!("an append is planned, not refused"),
    }
}

/// The answer for a push and the statements that make it true ([`write::Written`]).
pub(crate) struct Planned {
    outcome: PushOutcome,
    own: Vec<Stmt>,
    shared: Vec<Stmt>,
    /// The line's state after the push, the token the push gives it and the line's new head
    /// (when asked to keep it).
    kept: Option<(String, i64, line_state::LineState)>,
}

impl Planned {
    fn refused(outcome: PushOutcome) -> Self {
        Planned {
            outcome,
            own: Vec::new(),
            shared: Vec::new(),
            kept: None,
        }
    }
}

/// The answer for this push and the statements that make it true; with `keep_state`, the
/// line's state after it under a fresh token.
fn plan(
    ctx: &PushContext,
    push: &ValidPush,
    prepared: &PushPosture,
    head: Head,
    keep_state: bool,
) -> Planned {
    let Head {
        rules: head,
        listeners,
        previous_open,
        base_open,
        triaged,
        set_aside,
        state,
        customs,
        line_head,
        line_name,
        line_pr,
        default_name,
        base_seq,
    } = head;
    let req = push.request();
    let git = push.git();
    let facts = PushFacts {
        score: req.score,
        body_hash: push.body_hash(),
        findings: &req.findings,
        git,
        previous_open: previous_open.as_ref(),
        base_open: base_open.as_ref(),
        triaged: triaged.as_ref(),
        project_cap: ctx.project_cap,
        write_limit: ctx.write_limit,
        now: ctx.now,
    };
    let current = rate_status(
        &ctx.write_limit,
        ctx.now,
        head.writes_in_window,
        head.oldest_write,
    );
    let decision = decide_push(&head, &facts);
    let project = head.project;
    let append = match decision {
        PushDecision::Append(append) => append,
        refused => {
            let project_id = project.map(|p| p.id).unwrap_or_default();
            let outcome = refused_outcome(refused, project_id, line_name, line_pr, current);
            return Planned::refused(outcome);
        }
    };
    let default_id = project
        .as_ref()
        .and_then(|p| p.default_line.as_ref())
        .map(|d| d.id.clone());
    let project_id = project
        .map(|p| p.id)
        .unwrap_or_else(tidemark_domain::ids::new_project_id);
    let scan_id = scan_id_candidate(&push.scan_id_base(), append.scan_id_n);
    let lines = LineIds::assign(&append.lines, default_id);
    let (posture, drifted) = prepared.judge(
        push.request(),
        (set_aside.as_ref(), &state.live_spans, &customs),
        ctx.drift_detection,
    );
    let token = tidemark_domain::ids::new_state_token();
    let placed = Placed {
        project_id: &project_id,
        scan_id: &scan_id,
        line_id: &lines.target,
        base_seq,
        state: &state,
        token: &token,
        keep: keep_state,
        // Both are PostgreSQL's, whose pushes of one account commit side by side.
        own_rollup_rows: keep_state,
        line_head,
        posture: &posture,
        drifted: drifted.as_deref(),
    };
    let written = write_statements(ctx, push, &append, &placed, &lines);
    let head_seq = append.seq;
    let mut writes = written.own;
    let heard = listener_statements(
        ctx,
        listeners,
        (append.lines.kind(git), &append),
        &project_id,
        drifted.is_some(),
    );
    let (webhooks_queued, alerts_queued) = (heard.webhooks, heard.alerts);
    writes.extend(heard.writes);
    let rate = RateStatus {
        limit: ctx.write_limit.limit,
        remaining: append.writes_remaining,
        reset_secs: current.reset_secs,
    };
    let branch = append.lines.scan_branch(git, default_name);
    let scan = StoredScan {
        project_id,
        scan_id,
        score_delta: append.score_delta,
        gate: append.gate,
        branch,
        pull_request: git.pull_request.as_ref().map(|pr| pr.number),
        base: append.base,
        webhooks_queued,
        alerts_queued,
    };
    Planned {
        outcome: PushOutcome::Appended(scan, rate),
        own: writes,
        shared: written.shared,
        kept: written.state.map(|state| (token, head_seq, state)),
    }
}

/// What a push queues for those who follow the account: webhook deliveries and alert mail.
struct Heard {
    writes: Vec<Stmt>,
    webhooks: bool,
    alerts: bool,
}

fn listener_statements(
    ctx: &PushContext,
    listeners: Listeners,
    (kind, append): (
        tidemark_domain::webhook::LineKind,
        &tidemark_domain::append::Append,
    ),
    project_id: &ProjectId,
    drifted: bool,
) -> Heard {
    let raised = push_events(kind, append.gate.status, append.score_delta, drifted);
    let event_ids = scan_event_ids(listeners.webhooks);
    let mut writes: Vec<Stmt> =
        webhook_statement(ctx, &event_ids, (project_id, append.seq), &raised)
            .into_iter()
            .collect();
    let alerts = alerts_due(kind, listeners.alerts)
        .then(|| alert_statement(ctx, project_id, append.seq, &raised))
        .flatten();
    let alerts_queued = alerts.is_some();
    writes.extend(alerts);
    Heard {
        writes,
        webhooks: !event_ids.is_empty(),
        alerts: alerts_queued,
    }
}

/// The alert mails of a push that raised `raised`, for the members who asked for them.
fn alert_statement(
    ctx: &PushContext,
    project_id: &ProjectId,
    seq: i64,
    raised: &[Event],
) -> Option<Stmt> {
    crate::alerts::enqueue_statement(&AlertScan {
        account_id: &ctx.account_id,
        project_id,
        seq,
        gate_failed: raised.contains(&Event::GateFailed),
        score_regressed: raised.contains(&Event::ScoreRegressed),
        posture_drifted: raised.contains(&Event::PostureDrifted),
        now: ctx.now,
    })
}

/// The deliveries of the events a pushed scan raised, one per endpoint that hears them.
fn webhook_statement(
    ctx: &PushContext,
    event_ids: &[(String, Event)],
    scan: (&ProjectId, i64),
    raised: &[Event],
) -> Option<Stmt> {
    let events: Vec<EventRef<'_>> = event_ids
        .iter()
        .map(|(id, event)| EventRef {
            event_id: id,
            event: *event,
            account_id: &ctx.account_id,
            scan: Some((scan.0.as_str(), scan.1)),
            now: ctx.now,
            raised: raised.contains(event),
        })
        .collect();
    enqueue_statement(&events)
}

/// A fresh id for each scan event, when the account has webhooks to hear them.
fn scan_event_ids(webhooks: bool) -> Vec<(String, Event)> {
    if !webhooks {
        return Vec::new();
    }
    SCAN_EVENTS
        .into_iter()
        .map(|e| (tidemark_domain::ids::new_event_id(), e))
        .collect()
}

/// What a byte-identical retry found ([`replay_by_raw_hash`]).
#[derive(Debug, Clone, PartialEq)]
pub enum RawReplay {
    /// The latest scan of one of the account's lines was pushed as exactly these bytes.
    Replay(Box<StoredScan>),
    /// It was, but its project is archived now (`409 project_archived`, as for any push).
    Archived { project_id: ProjectId },
}

#[derive(sqlx::FromRow)]
struct RawReplayRow {
    project_id: ProjectId,
    archived_at: Option<i64>,
    scan_id: ScanId,
    score: f64,
    score_delta: f64,
    gate_status: Option<String>,
    gate_reasons: Option<String>,
    name: Option<String>,
    pr_number: Option<i64>,
    base_branch: Option<String>,
    base_scan_id: Option<String>,
    base_score: Option<f64>,
    base_new: Option<i64>,
    base_fixed: Option<i64>,
}

/// The scan whose push was byte for byte `raw_body_hash`, among the latest scans of the
/// account's lines: how a retry is answered while the account's write budget is spent,
/// before its body is parsed (decisions.md). A read: it appends nothing and uses no budget.
pub async fn replay_by_raw_hash(
    db: &Db,
    account_id: &AccountId,
    raw_body_hash: &str,
) -> Result<Option<RawReplay>, StoreError> {
    let row: Option<RawReplayRow> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT s.project_id, p.archived_at, s.scan_id, s.score, s.score_delta, \
             s.gate_status, s.gate_reasons, b.name, b.pr_number, s.base_branch, s.base_scan_id, \
             s.base_score, s.base_new, s.base_fixed \
             FROM branches b JOIN scans s ON s.project_id = b.project_id AND s.seq = b.head_seq \
             JOIN projects p ON p.id = b.project_id \
             WHERE b.account_id = $1 AND b.head_raw_hash = $2 LIMIT 1",
        )
        .bind(account_id)
        .bind(raw_body_hash)
        .fetch_optional(pool)
        .await
    })?;
    Ok(row.map(|r| {
        if r.archived_at.is_some() {
            return RawReplay::Archived {
                project_id: r.project_id,
            };
        }
        let base = r.base_branch.map(|branch| {
            base_comparison(
                &branch,
                r.base_scan_id.zip(r.base_score),
                r.score,
                r.base_new
                    .zip(r.base_fixed)
                    .map(|(n, f)| (u64::try_from(n).unwrap_or(0), u64::try_from(f).unwrap_or(0))),
            )
        });
        RawReplay::Replay(Box::new(StoredScan {
            project_id: r.project_id,
            scan_id: r.scan_id,
            score_delta: r.score_delta,
            gate: verdict_from_columns(r.gate_status.as_deref(), r.gate_reasons.as_deref()),
            branch: r.name,
            pull_request: r.pr_number.and_then(|n| u64::try_from(n).ok()),
            base,
            webhooks_queued: false,
            alerts_queued: false,
        }))
    }))
}

/// The write budget left after `writes` (read with the credential that pushes).
pub fn rate_after(
    limit: &RollingLimit,
    now: Millis,
    writes: crate::licenses::Writes,
) -> RateStatus {
    rate_status(limit, now, writes.in_window, writes.oldest)
}

fn rate_status(
    limit: &RollingLimit,
    now: Millis,
    in_window: u32,
    oldest: Option<i64>,
) -> RateStatus {
    let reset_secs = match limit.decide(now, in_window, oldest) {
        RateDecision::Allow { reset_secs, .. } => reset_secs,
        RateDecision::Refuse { retry_after_secs } => retry_after_secs,
    };
    RateStatus {
        limit: limit.limit,
        remaining: limit.limit.saturating_sub(in_window),
        reset_secs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SQLite writer caches a group's statements by their text: a head statement whose
    /// text changed with the time (or any value) would be parsed and planned on every push.
    #[test]
    fn the_head_statement_text_does_not_change_between_pushes() {
        let push = |second: i64| {
            let at = tidemark_domain::to_rfc3339((1_795_000_000 + second) * 1000);
            let body = serde_json::json!({
                "project_label": "api", "cloud": "aws", "cloud_account_id": "1",
                "frameworks": ["f"], "score": 50.0, "passed": 1, "failed": 0,
                "severity_counts": {"critical": 0, "high": 0, "medium": 0, "low": 0},
                "findings": [], "state_source": "ci", "scanned_at": at,
            });
            ValidPush::parse(body.to_string().as_bytes()).expect("a valid push")
        };
        let mut ctx = PushContext {
            account_id: AccountId::trusted("acct"),
            key_id: "key".into(),
            project_cap: None,
            write_limit: RollingLimit::per_minute(100),
            now: 1_795_000_000_000,
            touch_key: false,
            raw_body_hash: None,
            pushed_by: None,
            custom_frameworks: false,
            drift_detection: false,
        };
        let first = head_statement(&ctx, &push(1), Backend::Sqlite, ("", 0));
        ctx.now += 60_000;
        let later = head_statement(&ctx, &push(2), Backend::Sqlite, ("", 0));
        assert_eq!(first.sql, later.sql);
        assert_ne!(first.args, later.args);
        // Every placeholder once, in order: how the SQLite writer binds.
        let _ = crate::stmt::positional(&first.sql);
        assert_eq!(first.sql.matches('$').count(), first.args.len());
    }
}
