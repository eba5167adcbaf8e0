//! A project's lines of history as stored: its default branch, other branches and pull
//! requests (`branches`), each with its own head. The push path moves the heads
//! (`pushes`); this module reads the lines and changes which one is the default.

use crate::{AccountId, ProjectId, ScanId};
use tidemark_domain::audit::{Action, AuditContext};
use tidemark_domain::git::{branch_ref_key, BranchName};
use tidemark_domain::Millis;
use tidemark_wire::GateResult;

use crate::audit::{record_in, Change};
use crate::gates::verdict_from_columns;
use crate::Writer;
use crate::{on_db, on_db_write, BeginWrite as _, Db, StoreError};

/// One line of a project's history, with its latest scan.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub id: String,
    /// The branch (a pull request's source branch); `None` for a default line never named.
    pub name: Option<String>,
    pub is_default: bool,
    pub pull_request: Option<PullRequestInfo>,
    pub repository_url: Option<String>,
    pub scan_count: i64,
    pub last_push_at: Option<Millis>,
    pub head: Option<LineScan>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequestInfo {
    pub number: i64,
    pub base_branch: Option<String>,
    pub title: Option<String>,
    pub url: Option<String>,
}

/// A line's latest scan, as the branch selector and the pull-request tab show it.
#[derive(Debug, Clone, PartialEq)]
pub struct LineScan {
    pub seq: i64,
    pub scan_id: ScanId,
    pub score: f64,
    pub score_delta: f64,
    pub gate: GateResult,
    pub commit: Option<String>,
    /// For a pull request: the base's scan id when one was compared, and the new findings.
    pub base_scan_id: Option<ScanId>,
    pub base_new: Option<i64>,
    pub base_fixed: Option<i64>,
    /// The base scan's score, when one was compared and is still kept.
    pub base_score: Option<f64>,
}

#[derive(sqlx::FromRow)]
struct LineRow {
    id: String,
    name: Option<String>,
    is_default: bool,
    pr_number: Option<i64>,
    pr_base: Option<String>,
    pr_title: Option<String>,
    pr_url: Option<String>,
    repository_url: Option<String>,
    scan_count: i64,
    last_push_at: Option<i64>,
    head_seq: Option<i64>,
    scan_id: Option<ScanId>,
    score: Option<f64>,
    score_delta: Option<f64>,
    gate_status: Option<String>,
    gate_reasons: Option<String>,
    commit_sha: Option<String>,
    base_scan_id: Option<ScanId>,
    base_new: Option<i64>,
    base_fixed: Option<i64>,
    base_score: Option<f64>,
}

impl From<LineRow> for Line {
    fn from(r: LineRow) -> Self {
        let head = match (r.head_seq, r.scan_id, r.score, r.score_delta) {
            (Some(seq), Some(scan_id), Some(score), Some(score_delta)) => Some(LineScan {
                seq,
                scan_id,
                score,
                score_delta,
                gate: verdict_from_columns(r.gate_status.as_deref(), r.gate_reasons.as_deref()),
                commit: r.commit_sha,
                base_scan_id: r.base_scan_id,
                base_new: r.base_new,
                base_fixed: r.base_fixed,
                base_score: r.base_score,
            }),
            _ => None,
        };
        Line {
            id: r.id,
            name: r.name,
            is_default: r.is_default,
            pull_request: r.pr_number.map(|number| PullRequestInfo {
                number,
                base_branch: r.pr_base,
                title: r.pr_title,
                url: r.pr_url,
            }),
            repository_url: r.repository_url,
            scan_count: r.scan_count,
            last_push_at: r.last_push_at,
            head,
        }
    }
}

const LINE_COLUMNS: &str = "b.id, b.name, (b.id = p.default_branch_id) AS is_default, \
     b.pr_number, b.pr_base, b.pr_title, b.pr_url, b.repository_url, b.scan_count, \
     b.last_push_at, b.head_seq, s.scan_id, s.score, s.score_delta, s.gate_status, \
     s.gate_reasons, s.commit_sha, s.base_scan_id, s.base_new, s.base_fixed, bs.score AS base_score";

/// The project's lines: the default branch first, then branches and pull requests by their
/// latest push, newest first. Empty when the account has no such project.
pub async fn list_lines(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
) -> Result<Vec<Line>, StoreError> {
    let sql = format!(
        "SELECT {LINE_COLUMNS} FROM branches b \
         JOIN projects p ON p.id = b.project_id AND p.account_id = $1 \
         LEFT JOIN scans s ON s.project_id = b.project_id AND s.seq = b.head_seq \
         LEFT JOIN scans bs ON bs.project_id = s.project_id AND bs.seq = s.base_seq \
         WHERE b.project_id = $2 \
         ORDER BY CASE WHEN b.id = p.default_branch_id THEN 0 ELSE 1 END, \
         b.last_push_at DESC, b.id"
    );
    let rows: Vec<LineRow> = on_db!(db, pool => {
        sqlx::query_as(&sql).bind(account_id).bind(project_id).fetch_all(pool).await
    })?;
    Ok(rows.into_iter().map(Line::from).collect())
}

/// What [`set_default_branch`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultBranchChange {
    Changed,
    /// It already was the default.
    Unchanged,
    /// The account has no such project.
    NoProject,
    /// The project has no branch of that name (pull requests cannot be the default).
    NoBranch,
}

#[derive(sqlx::FromRow)]
struct DefaultRow {
    label: String,
    default_branch_id: Option<String>,
    default_name: Option<String>,
}

#[derive(sqlx::FromRow)]
struct NewDefaultRow {
    id: String,
    score: Option<f64>,
    score_delta: Option<f64>,
    scan_id: Option<ScanId>,
    body_hash: Option<String>,
    gate_status: Option<String>,
    gate_reasons: Option<String>,
    scanned_at: Option<i64>,
}

/// Makes branch `name` the project's default line: from the next push on, pushes without a
/// branch go to it, and the projects list, badges and alerts follow it. The project row takes
/// the branch's head at once. Audited.
pub async fn set_default_branch(
    db: &Writer,
    account_id: &AccountId,
    project_id: &ProjectId,
    name: &BranchName,
    audit: &AuditContext,
) -> Result<DefaultBranchChange, StoreError> {
    let key = branch_ref_key(name);
    let change = on_db_write!(db, pool => {
        let mut tx = pool.begin_account_write(account_id).await?;
        let project: Option<DefaultRow> = sqlx::query_as(
            "SELECT p.label, p.default_branch_id, d.name AS default_name FROM projects p \
             LEFT JOIN branches d ON d.id = p.default_branch_id \
             WHERE p.id = $1 AND p.account_id = $2",
        )
        .bind(project_id)
        .bind(account_id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(project) = project else {
            return Ok(DefaultBranchChange::NoProject);
        };
        let branch: Option<NewDefaultRow> = sqlx::query_as(
            "SELECT b.id, s.score, s.score_delta, s.scan_id, s.body_hash, \
             s.gate_status, s.gate_reasons, s.scanned_at FROM branches b \
             LEFT JOIN scans s ON s.project_id = b.project_id AND s.seq = b.head_seq \
             WHERE b.project_id = $1 AND b.ref_key = $2",
        )
        .bind(project_id)
        .bind(&key)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(branch) = branch else {
            return Ok(DefaultBranchChange::NoBranch);
        };
        if project.default_branch_id.as_deref() == Some(branch.id.as_str()) {
            return Ok(DefaultBranchChange::Unchanged);
        }
        sqlx::query(
            "UPDATE projects SET default_branch_id = $1, last_score = $2, last_delta = $3, \
             last_scan_id = $4, last_body_hash = $5, last_gate_status = $6, \
             last_gate_reasons = $7, last_scanned_at = $8 WHERE id = $9",
        )
        .bind(&branch.id)
        .bind(branch.score)
        .bind(branch.score_delta)
        .bind(&branch.scan_id)
        .bind(&branch.body_hash)
        .bind(&branch.gate_status)
        .bind(&branch.gate_reasons)
        .bind(branch.scanned_at)
        .bind(project_id)
        .execute(&mut *tx)
        .await?;
        // The overview follows each project's default line: sum it again with this one.
        crate::rollups::rebuild_account_days!(tx, account_id.as_str())?;
        crate::posture::summary::rebuild!(tx, account_id.as_str())?;
        let change = Change {
            account_id: Some(account_id),
            action: Action::DefaultBranchChanged,
            target: project.label,
            before: Some(project.default_name.unwrap_or_else(|| "(unnamed)".to_owned())),
            after: Some(name.as_str().to_owned()),
        };
        record_in!(&mut *tx, audit, change)?;
        tx.commit().await?;
        Ok::<_, sqlx::Error>(DefaultBranchChange::Changed)
    })?;
    Ok(change)
}

/// A line [`prune_lines`] removed (or, dry, would remove).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PrunedLine {
    pub account_id: AccountId,
    pub project_id: ProjectId,
    pub project_label: String,
    /// The branch, or for a pull request its source branch.
    pub branch: Option<String>,
    pub pull_request: Option<i64>,
    pub scans: i64,
    pub last_push_at: Option<Millis>,
}

#[derive(sqlx::FromRow)]
struct PruneCandidate {
    id: String,
    account_id: AccountId,
    project_id: ProjectId,
    label: String,
    name: Option<String>,
    pr_number: Option<i64>,
    scan_count: i64,
    last_push_at: Option<i64>,
    created_at: i64,
    is_default: bool,
}

/// Removes every branch and pull request, other than projects' default branches, that has
/// seen no push since `cutoff`: the line, its scans and their findings, each line in its
/// account's write transaction with an audit event. Pull-request scans that were compared with
/// a removed scan keep their recorded comparison; their diff falls back to the previous scan.
/// With `dry_run`, only says what it would remove.
pub async fn prune_lines(
    db: &Writer,
    cutoff: Millis,
    dry_run: bool,
    audit: &AuditContext,
) -> Result<Vec<PrunedLine>, StoreError> {
    let candidates: Vec<PruneCandidate> = on_db!(db.db(), pool => {
        sqlx::query_as(
            "SELECT b.id, b.account_id, b.project_id, p.label, b.name, b.pr_number, b.scan_count, \
             b.last_push_at, b.created_at, (b.id = p.default_branch_id) AS is_default \
             FROM branches b JOIN projects p ON p.id = b.project_id \
             WHERE COALESCE(b.last_push_at, b.created_at) < $1 \
             ORDER BY b.account_id, p.label, b.last_push_at",
        )
        .bind(cutoff)
        .fetch_all(pool)
        .await
    })?;
    let mut pruned = Vec::new();
    for c in candidates {
        if !tidemark_domain::retention::prunable(c.is_default, c.last_push_at, c.created_at, cutoff)
        {
            continue;
        }
        let line = PrunedLine {
            account_id: c.account_id.clone(),
            project_id: c.project_id.clone(),
            project_label: c.label.clone(),
            branch: c.name.clone(),
            pull_request: c.pr_number,
            scans: c.scan_count,
            last_push_at: c.last_push_at,
        };
        if !dry_run && !prune_line(db, &c, cutoff, audit).await? {
            continue;
        }
        pruned.push(line);
    }
    Ok(pruned)
}

/// Removes one line, unless a push or a default-branch change reached it since it was chosen.
async fn prune_line(
    db: &Writer,
    c: &PruneCandidate,
    cutoff: Millis,
    audit: &AuditContext,
) -> Result<bool, StoreError> {
    let target = match (c.pr_number, &c.name) {
        (Some(n), _) => format!("{}: pull request #{n}", c.label),
        (None, Some(name)) => format!("{}: {name}", c.label),
        (None, None) => format!("{}: (unnamed branch)", c.label),
    };
    let removed = on_db_write!(db, pool => {
        let mut tx = pool.begin_account_write(&c.account_id).await?;
        // Checked again under the account's lock: still quiet, still not the default.
        let still: Option<(i64,)> = sqlx::query_as(
            "SELECT b.scan_count FROM branches b JOIN projects p ON p.id = b.project_id \
             WHERE b.id = $1 AND COALESCE(b.last_push_at, b.created_at) < $2 \
             AND (p.default_branch_id IS NULL OR p.default_branch_id <> b.id)",
        )
        .bind(&c.id)
        .bind(cutoff)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((scans,)) = still else {
            return Ok(false);
        };
        sqlx::query(
            "UPDATE scans SET base_seq = NULL WHERE project_id = $1 AND base_seq IN \
             (SELECT seq FROM scans WHERE branch_id = $2)",
        )
        .bind(&c.project_id)
        .bind(&c.id)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "DELETE FROM findings WHERE project_id = $1 AND scan_seq IN \
             (SELECT seq FROM scans WHERE branch_id = $2)",
        )
        .bind(&c.project_id)
        .bind(&c.id)
        .execute(&mut *tx)
        .await?;
        // A pruned line's findings go with it (their triage is in the audit log).
        sqlx::query(
            "DELETE FROM finding_triage_events WHERE finding_id IN \
             (SELECT id FROM tracked_findings WHERE branch_id = $1)",
        )
        .bind(&c.id)
        .execute(&mut *tx)
        .await?;
        sqlx::query("DELETE FROM finding_spans WHERE branch_id = $1")
            .bind(&c.id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM tracked_findings WHERE branch_id = $1")
            .bind(&c.id)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "DELETE FROM scan_posture WHERE (project_id, scan_seq) IN \
             (SELECT project_id, seq FROM scans WHERE branch_id = $1)",
        )
            .bind(&c.id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM scans WHERE branch_id = $1")
            .bind(&c.id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM line_days WHERE branch_id = $1")
            .bind(&c.id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM branches WHERE id = $1")
            .bind(&c.id)
            .execute(&mut *tx)
            .await?;
        sqlx::query(crate::usage::FORGET)
            .bind(&c.project_id)
            .execute(&mut *tx)
            .await?;
        let change = Change {
            account_id: Some(&c.account_id),
            action: Action::BranchPruned,
            target,
            before: Some(format!("{scans} scans")),
            after: None,
        };
        record_in!(&mut *tx, audit, change)?;
        tx.commit().await?;
        Ok::<_, sqlx::Error>(true)
    })?;
    Ok(removed)
}
