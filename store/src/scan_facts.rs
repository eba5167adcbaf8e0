//! The scan an outbox row is about (a webhook delivery or an alert mail), read when the row
//! is sent. Rows point at `(project_id, scan_seq)`: scans are append-only, so the facts read
//! at delivery are the facts of the push.

use crate::{ProjectId, ScanId};
use tidemark_domain::Millis;
use tidemark_wire::SeverityCounts;

use crate::gates::verdict_from_columns;

/// The select-list part: `p` is the project, `s` the scan (both LEFT JOINed by the caller,
/// see [`SCAN_FACTS_JOIN`]).
pub(crate) const SCAN_FACTS_COLUMNS: &str = "p.label, s.scan_id, s.score, s.score_delta, \
     s.passed, s.failed, s.sev_critical, s.sev_high, s.sev_medium, s.sev_low, s.scanned_at, \
     s.gate_status, s.gate_reasons, b.name AS branch_name, b.pr_number, b.pr_title, b.pr_url, \
     s.commit_sha, s.base_branch, s.base_scan_id, s.base_score, s.base_new, s.base_fixed, \
     s.pushed_by, s.drifted";

/// Joins for a row alias `o` with `project_id` and `scan_seq` columns.
pub(crate) const SCAN_FACTS_JOIN: &str = "LEFT JOIN projects p ON p.id = o.project_id \
     LEFT JOIN scans s ON s.project_id = o.project_id AND s.seq = o.scan_seq \
     LEFT JOIN branches b ON b.id = s.branch_id";

/// A pushed scan as events and alerts describe it.
#[derive(Debug, Clone, PartialEq)]
pub struct ScanFacts {
    pub project_id: ProjectId,
    pub project_label: String,
    pub scan_id: ScanId,
    pub score: f64,
    pub score_delta: f64,
    pub passed: i64,
    pub failed: i64,
    pub severity_counts: SeverityCounts,
    pub scanned_at: Millis,
    pub gate: tidemark_wire::GateResult,
    /// The branch it was pushed from (a pull request's source branch), when known.
    pub branch: Option<String>,
    pub commit: Option<String>,
    /// For a pull request's scan: the request and its comparison with the base.
    pub pull_request: Option<tidemark_wire::WebhookPullRequest>,
    /// How it was pushed (an API key, or a keyless CI identity).
    pub pushed_by: Option<tidemark_wire::PushedBy>,
    /// What drifted (a licence with drift detection; empty otherwise).
    pub drifted: Vec<tidemark_wire::DriftedRequirements>,
}

/// [`SCAN_FACTS_COLUMNS`] as read (all null when the row is about no scan).
#[derive(sqlx::FromRow)]
pub(crate) struct ScanFactsRow {
    label: Option<String>,
    scan_id: Option<ScanId>,
    score: Option<f64>,
    score_delta: Option<f64>,
    passed: Option<i64>,
    failed: Option<i64>,
    sev_critical: Option<i64>,
    sev_high: Option<i64>,
    sev_medium: Option<i64>,
    sev_low: Option<i64>,
    scanned_at: Option<i64>,
    gate_status: Option<String>,
    gate_reasons: Option<String>,
    branch_name: Option<String>,
    pr_number: Option<i64>,
    pr_title: Option<String>,
    pr_url: Option<String>,
    commit_sha: Option<String>,
    base_branch: Option<String>,
    base_scan_id: Option<String>,
    base_score: Option<f64>,
    base_new: Option<i64>,
    base_fixed: Option<i64>,
    pushed_by: Option<String>,
    drifted: Option<String>,
}

impl ScanFactsRow {
    pub(crate) fn into_facts(self, project_id: Option<ProjectId>) -> Option<ScanFacts> {
        let r = self;
        match (project_id, r.label, r.scan_id, r.score, r.scanned_at) {
            (Some(project_id), Some(label), Some(scan_id), Some(score), Some(scanned_at)) => {
                let base = r.base_branch.map(|branch| {
                    tidemark_domain::append::base_comparison(
                        &branch,
                        r.base_scan_id.zip(r.base_score),
                        score,
                        r.base_new.zip(r.base_fixed).map(|(n, f)| {
                            (u64::try_from(n).unwrap_or(0), u64::try_from(f).unwrap_or(0))
                        }),
                    )
                });
                let pull_request = r.pr_number.and_then(|number| {
                    Some(tidemark_wire::WebhookPullRequest {
                        number: u64::try_from(number).ok()?,
                        title: r.pr_title,
                        url: r.pr_url,
                        base: base?,
                    })
                });
                Some(ScanFacts {
                    project_id,
                    project_label: label,
                    scan_id,
                    score,
                    score_delta: r.score_delta.unwrap_or(0.0),
                    passed: r.passed.unwrap_or(0),
                    failed: r.failed.unwrap_or(0),
                    severity_counts: SeverityCounts::from_columns(
                        r.sev_critical.unwrap_or(0),
                        r.sev_high.unwrap_or(0),
                        r.sev_medium.unwrap_or(0),
                        r.sev_low.unwrap_or(0),
                    ),
                    scanned_at,
                    gate: verdict_from_columns(r.gate_status.as_deref(), r.gate_reasons.as_deref()),
                    branch: r.branch_name,
                    commit: r.commit_sha,
                    pull_request,
                    pushed_by: r
                        .pushed_by
                        .as_deref()
                        .and_then(|j| serde_json::from_str(j).ok()),
                    drifted: r
                        .drifted
                        .as_deref()
                        .and_then(|j| serde_json::from_str(j).ok())
                        .unwrap_or_default(),
                })
            }
            _ => None,
        }
    }
}
