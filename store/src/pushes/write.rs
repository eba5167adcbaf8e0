//! The statements an appended scan is written with: the project's row, its lines, the scan's
//! row, its spans and tracked findings, in the order the database checks them. What they say
//! was decided in `tidemark_domain::append`; this file only spells it in SQL.

use crate::ProjectId;
use tidemark_domain::append::{line_ref_key, Append, LineIds};
use tidemark_domain::git::{branch_ref_key, BranchName, PullRequest};
use tidemark_domain::push::ValidPush;

use super::line_state::LineState;
use super::PushContext;
use crate::gates::verdict_columns;
use crate::stmt::Stmt;

/// Where an appended scan goes.
pub(super) struct Placed<'a> {
    pub(super) project_id: &'a ProjectId,
    pub(super) scan_id: &'a str,
    pub(super) line_id: &'a str,
    /// A pull request's base scan (its storage position).
    pub(super) base_seq: Option<i64>,
    /// The line's open tracked findings and the spans its latest scan has, before this one.
    pub(super) state: &'a super::line_state::LineState,
    /// The line state's new token, under which a replica keeps the line's state (PostgreSQL);
    /// every other writer of the line's findings clears it. Both databases stamp one, so a
    /// line's token always names its latest state (SQLite's early plans no longer need it:
    /// `early` checks them by commit counts).
    pub(super) token: &'a str,
    /// The line's state after the push is computed, to be kept under the token (PostgreSQL;
    /// SQLite keeps none).
    pub(super) keep: bool,
    /// The account's roll-ups take the push's change as rows of its own (PostgreSQL: see
    /// `migrations/20261217000001_rollup_deltas.sql`) instead of updating the kept rows.
    pub(super) own_rollup_rows: bool,
    pub(super) line_head: Option<(i64, i64)>,
    /// The scan's posture per framework, and what drifted as the scan keeps it (JSON; only
    /// for a licence with drift detection).
    pub(super) posture: &'a [crate::posture::PostureRowOut],
    pub(super) drifted: Option<&'a str>,
}

/// A push's statements: its own rows, then the rows every push of the account shares (the
/// posture roll-up, the day's counts, the key's last use), which PostgreSQL writes last, under
/// the account's admission lock, so that no push waits on another's row locks meanwhile. With
/// `keep`, also the line's state after the push.
pub(super) struct Written {
    pub(super) own: Vec<Stmt>,
    pub(super) shared: Vec<Stmt>,
    pub(super) state: Option<LineState>,
}

pub(super) fn write_statements(
    ctx: &PushContext,
    push: &ValidPush,
    append: &Append,
    placed: &Placed<'_>,
    lines: &LineIds,
) -> Written {
    let req = push.request();
    let project_id = placed.project_id;
    let keep = placed.keep;
    let mut own = Vec::with_capacity(16);
    own.extend(project_row_statements(ctx, push, append, lines, project_id));
    own.extend(line_statements(ctx, push, append, placed, lines));
    own.push(project_head_statement(push, append, placed));
    own.push(scan_statement(ctx, push, append, placed));
    let spans = crate::spans::span_writes(
        &crate::spans::SpanScan {
            project_id,
            line_id: placed.line_id,
            seq: append.seq,
        },
        &req.findings,
        &placed.state.live_spans,
        keep,
    );
    own.extend(spans.writes);
    let (tracking, open_after) = crate::findings::tracking_writes(
        &crate::findings::TrackedScan {
            account_id: &ctx.account_id,
            project_id,
            line_id: placed.line_id,
            seq: append.seq,
            scanned_at: push.scanned_at().timestamp_millis(),
            previous: placed.line_head,
        },
        &req.findings,
        &placed.state.open_tracked,
        keep,
    );
    own.extend(tracking);
    own.extend(crate::posture::insert_statement(
        &crate::posture::PostureScan {
            project_id,
            seq: append.seq,
            line_id: placed.line_id,
            scanned_at: push.scanned_at().timestamp_millis(),
        },
        placed.posture,
    ));
    let mut shared = Vec::with_capacity(4);
    let scan_ref = format!("{}/{}", project_id.as_str(), append.seq);
    let change_of = placed.own_rollup_rows.then_some(scan_ref.as_str());
    if append.lines.on_default {
        shared.push(crate::posture::summary::push_statement(
            &ctx.account_id,
            project_id,
            placed.line_head.map(|(seq, _)| seq),
            append.seq,
            change_of,
        ));
    }
    let counts = &req.severity_counts;
    shared.extend(crate::rollups::push_statements(&crate::rollups::DayScan {
        account_id: ctx.account_id.as_str(),
        line_id: placed.line_id,
        on_default_line: append.lines.on_default,
        scanned_at: push.scanned_at().timestamp_millis(),
        seq: append.seq,
        counts: [counts.critical, counts.high, counts.medium, counts.low]
            .map(|n| i64::try_from(n).unwrap_or(i64::MAX)),
        change_of,
    }));
    if ctx.touch_key {
        shared.push(
            Stmt::new("UPDATE api_keys SET last_used_at = $1 WHERE id = $2")
                .bind(ctx.now)
                .bind(ctx.key_id.as_str()),
        );
    }
    let state = spans
        .live_after
        .zip(open_after)
        .map(|(live_spans, open_tracked)| LineState {
            live_spans,
            open_tracked,
        });
    Written { own, shared, state }
}

/// A new project's row, or the default line a project gets.
fn project_row_statements(
    ctx: &PushContext,
    push: &ValidPush,
    append: &Append,
    lines: &LineIds,
    project_id: &ProjectId,
) -> Vec<Stmt> {
    let mut writes = Vec::new();
    if append.new_project {
        writes.push(
            Stmt::new(
                "INSERT INTO projects (id, account_id, label, created_at, default_branch_id, \
                 name_key) VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(project_id)
            .bind(ctx.account_id.as_str())
            .bind(push.label())
            .bind(ctx.now)
            .bind(lines.default.clone())
            .bind(tidemark_domain::project_order::name_key(push.label())),
        );
    } else if lines.new_default {
        writes.push(
            Stmt::new("UPDATE projects SET default_branch_id = $1 WHERE id = $2")
                .bind(lines.default.clone())
                .bind(project_id),
        );
    }
    writes
}

/// The lines this push creates or names, and the scan's line's new head.
fn line_statements(
    ctx: &PushContext,
    push: &ValidPush,
    append: &Append,
    placed: &Placed<'_>,
    lines: &LineIds,
) -> Vec<Stmt> {
    let git = push.git();
    let project_id = placed.project_id;
    let mut writes = Vec::new();
    let repository_url = git.repository_url.as_ref().map(|u| u.as_str().to_owned());
    // A line made here starts empty; the append below moves its head like any other's.
    let new_line = |id: &str, name: Option<&BranchName>, pr: Option<&PullRequest>| {
        let key = line_ref_key(name, pr);
        Stmt::new(
            "INSERT INTO branches (id, account_id, project_id, ref_key, name, pr_number, \
             pr_base, pr_title, pr_url, repository_url, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        )
        .bind(id)
        .bind(ctx.account_id.as_str())
        .bind(project_id)
        .bind(key)
        .bind(name.map(|n| n.as_str().to_owned()))
        .bind(pr.map(|pr| pr.number as i64))
        .bind(pr.map(|pr| pr.base_branch.as_str().to_owned()))
        .bind(pr.and_then(|pr| pr.title.clone()))
        .bind(pr.and_then(|pr| pr.url.as_ref().map(|u| u.as_str().to_owned())))
        .bind(repository_url.clone())
        .bind(ctx.now)
    };
    if let (true, Some(default), Some(name)) = (
        lines.new_default,
        &lines.default,
        &append.lines.create_default,
    ) {
        writes.push(new_line(default, name.as_ref(), None));
    }
    if let (Some(default), Some(name)) = (&lines.default, &append.lines.name_default) {
        writes.push(
            Stmt::new("UPDATE branches SET name = $1, ref_key = $2 WHERE id = $3")
                .bind(name.as_str())
                .bind(branch_ref_key(name))
                .bind(default.as_str()),
        );
    }
    if lines.new_target {
        writes.push(new_line(
            placed.line_id,
            git.branch.as_ref(),
            git.pull_request.as_ref(),
        ));
    }
    // The line's head, and what a pull request says of itself now (title, head branch and
    // target may change between pushes).
    let pr = git.pull_request.as_ref();
    writes.push(
        Stmt::new(
            "UPDATE branches SET scan_count = $1, head_seq = $2, head_raw_hash = $3, \
             last_push_at = $4, repository_url = COALESCE($5, repository_url), \
             name = CASE WHEN pr_number IS NULL THEN name ELSE COALESCE($6, name) END, \
             pr_base = COALESCE($7, pr_base), pr_title = COALESCE($8, pr_title), \
             pr_url = COALESCE($9, pr_url), live_token = $10 WHERE id = $11",
        )
        .bind(append.line_seq)
        .bind(append.seq)
        .bind(ctx.raw_body_hash.clone())
        .bind(ctx.now)
        .bind(repository_url)
        .bind(git.branch.as_ref().map(|b| b.as_str().to_owned()))
        .bind(pr.map(|pr| pr.base_branch.as_str().to_owned()))
        .bind(pr.and_then(|pr| pr.title.clone()))
        .bind(pr.and_then(|pr| pr.url.as_ref().map(|u| u.as_str().to_owned())))
        .bind(placed.token)
        .bind(placed.line_id),
    );
    writes
}

fn project_head_statement(push: &ValidPush, append: &Append, placed: &Placed<'_>) -> Stmt {
    let req = push.request();
    let project_id = placed.project_id;
    // The project row numbers scans across lines, and keeps the default line's head for the
    // projects list (and for a replica of the previous release during a rolling upgrade).
    if append.lines.on_default {
        let (gate_status, gate_reasons) = verdict_columns(&append.gate);
        Stmt::new(
            "UPDATE projects SET scan_count = $1, last_score = $2, last_delta = $3, \
                 last_scan_id = $4, last_body_hash = $5, last_gate_status = $6, \
                 last_gate_reasons = $7, last_scanned_at = $8 WHERE id = $9",
        )
        .bind(append.seq)
        .bind(req.score)
        .bind(append.score_delta)
        .bind(placed.scan_id)
        .bind(push.body_hash())
        .bind(gate_status)
        .bind(gate_reasons)
        .bind(push.scanned_at().timestamp_millis())
        .bind(project_id)
    } else {
        Stmt::new("UPDATE projects SET scan_count = $1 WHERE id = $2")
            .bind(append.seq)
            .bind(project_id)
    }
}

/// The scan's own row.
fn scan_statement(
    ctx: &PushContext,
    push: &ValidPush,
    append: &Append,
    placed: &Placed<'_>,
) -> Stmt {
    let req = push.request();
    let git = push.git();
    let project_id = placed.project_id;
    let (gate_status, gate_reasons) = verdict_columns(&append.gate);
    let commit = git.commit.as_ref().map(|c| c.as_str().to_owned());
    let frameworks = serde_json::to_string(&req.frameworks).unwrap_or_default();
    let base = append.base.as_ref();
    let count = |n: Option<u64>| n.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
    Stmt::new(
        "INSERT INTO scans (project_id, seq, scan_id, account_id, score, score_delta, passed, \
             failed, sev_critical, sev_high, sev_medium, sev_low, cloud, cloud_account_id, \
             frameworks, state_source, scanned_at, received_at, finding_count, body_hash, \
             gate_status, gate_reasons, branch_id, line_seq, commit_sha, base_branch, \
             base_scan_id, base_seq, base_score, base_new, base_fixed, pushed_by, \
             findings_stored, drifted, posture_pending) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
             $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, \
             $34, 0)",
    )
    .bind(project_id)
    .bind(append.seq)
    .bind(placed.scan_id)
    .bind(ctx.account_id.as_str())
    .bind(req.score)
    .bind(append.score_delta)
    .bind(as_i64(req.passed))
    .bind(as_i64(req.failed))
    .bind(as_i64(req.severity_counts.critical))
    .bind(as_i64(req.severity_counts.high))
    .bind(as_i64(req.severity_counts.medium))
    .bind(as_i64(req.severity_counts.low))
    .bind(req.cloud.as_str())
    .bind(req.cloud_account_id.as_str())
    .bind(frameworks)
    .bind(req.state_source.as_str())
    .bind(push.scanned_at().timestamp_millis())
    .bind(ctx.now)
    .bind(req.findings.len() as i64)
    .bind(push.body_hash())
    .bind(gate_status)
    .bind(gate_reasons)
    .bind(placed.line_id)
    .bind(append.line_seq)
    .bind(commit)
    .bind(base.map(|b| b.branch.clone()))
    .bind(base.and_then(|b| b.scan_id.clone()))
    .bind(base.and(placed.base_seq))
    .bind(base.and_then(|b| b.score))
    .bind(count(base.and_then(|b| b.new_findings)))
    .bind(count(base.and_then(|b| b.fixed_findings)))
    .bind(ctx.pushed_by.clone())
    .bind(crate::spans::STORED_AS_SPANS)
    .bind(placed.drifted.map(str::to_owned))
}

fn as_i64(n: u64) -> i64 {
    // ValidPush has already refused counts above i64::MAX.
    i64::try_from(n).unwrap_or(i64::MAX)
}
