//! A scan, its findings and their triage, a finding's page and life, a diff.

use serde::{Deserialize, Serialize};

use super::*;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScanSummary {
    pub scan_id: tidemark_wire::ids::ScanId,
    pub score: f64,
    pub score_delta: f64,
    pub passed: i64,
    pub failed: i64,
    pub severities: SeverityCounts,
    pub cloud: String,
    pub cloud_account_id: String,
    pub frameworks: Vec<String>,
    pub state_source: String,
    pub scanned_at: String,
    pub finding_count: i64,
    pub gate: GateResult,
    /// The branch it was pushed from (a pull request's source branch), when known.
    pub branch: Option<String>,
    pub pull_request: Option<i64>,
    /// The commit scanned, and a link to it when the repository's address is known.
    pub commit: Option<String>,
    pub commit_url: Option<String>,
    /// For a pull request's scan: the base branch, the base scan compared with (`None`: the
    /// base had no scan), and what the pull request added and fixed.
    pub base: Option<BaseSummary>,
    /// How it was pushed: an API key, or a keyless CI identity (`None` for older scans).
    pub pushed_by: Option<tidemark_wire::PushedBy>,
    /// Requirements that passed in the branch's previous scan and fail in this one (drift
    /// detection), per framework.
    #[serde(default)]
    pub drifted: Vec<tidemark_wire::DriftedRequirements>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaseSummary {
    pub branch: String,
    pub scan_id: Option<tidemark_wire::ids::ScanId>,
    pub new_findings: Option<i64>,
    pub fixed_findings: Option<i64>,
    /// This scan's score minus the base scan's (as the push's `base.score_delta` said).
    #[serde(default)]
    pub score_delta: Option<f64>,
}

impl ScanSummary {
    /// The change a page puts beside the score, and what it is against: a pull request's
    /// scan is judged against its base branch's scan, so its change is against that scan
    /// (`Some(base branch)`); any other scan's is against the previous scan on its line.
    pub fn headline_change(&self) -> (f64, Option<&str>) {
        match self.base.as_ref() {
            Some(BaseSummary {
                branch,
                score_delta: Some(delta),
                ..
            }) => (*delta, Some(branch.as_str())),
            _ => (self.score_delta, None),
        }
    }

    /// The first 7 characters of the commit, as people read them.
    pub fn short_commit(&self) -> Option<&str> {
        self.commit.as_deref().map(|c| c.get(..7).unwrap_or(c))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScansPage {
    pub scans: Vec<ScanSummary>,
    pub page: i64,
    pub has_more: bool,
    /// How many scans the line has in all.
    #[serde(default)]
    pub total: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScanView {
    pub project_id: tidemark_wire::ids::ProjectId,
    pub project_label: String,
    pub scan: ScanSummary,
    pub previous_scan_id: Option<tidemark_wire::ids::ScanId>,
    /// Housekeeping removed its findings (its row stays in the history).
    #[serde(default)]
    pub findings_removed: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingQuery {
    /// The column to sort by (`severity`, the default, `status`, `rule`, `resource`,
    /// `scanner`), and `desc` to reverse it.
    pub sort: Option<String>,
    pub dir: Option<String>,
    pub severity: Option<String>,
    pub status: Option<String>,
    pub framework: Option<String>,
    pub text: Option<String>,
    pub page: i64,
    /// The page starts right after this finding (its place in the scanner's order): the
    /// "next" link's keyset, so a deep page costs what the first does. `page` still numbers it.
    #[serde(default)]
    pub after: Option<i64>,
    /// The page ends right before this finding: the "previous" link's keyset.
    #[serde(default)]
    pub before: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingView {
    pub rule_id: String,
    pub resource: String,
    pub status: String,
    pub severity: String,
    pub message: String,
    pub remediation: String,
    /// The finding as its branch tracks it (open findings only): its page, age and triage.
    #[serde(default)]
    pub tracked: Option<FindingTag>,
}

/// The findings of a scan's branch set aside by a triage that holds (the scan page's
/// Triaged tab).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriagedView {
    pub total: i64,
    /// Most severe first, then oldest (at most 100).
    pub rows: Vec<TriagedRow>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriagedRow {
    pub finding_id: tidemark_wire::ids::FindingId,
    pub rule_id: String,
    pub resource: String,
    pub severity: String,
    /// "Accepted risk until 2027-03-01".
    pub triage: String,
    pub reason: String,
    pub by: String,
}

/// What a scan's row says of the tracked finding behind it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingTag {
    pub id: tidemark_wire::ids::FindingId,
    /// First seen in this very scan.
    pub new_here: bool,
    /// "first seen 12 days ago".
    pub first_seen: String,
    /// The UTC time, for the tooltip.
    pub first_seen_utc: String,
    /// "Accepted risk", "False positive" or "Won't fix" while a triage holds.
    pub triage: Option<String>,
}

/// A tracked finding's own page: what it is, its life on its branch and its triage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindingPageView {
    pub project_id: tidemark_wire::ids::ProjectId,
    pub project_label: String,
    pub finding: tidemark_wire::findings::TrackedFinding,
    /// From the latest scan that had it.
    pub message: String,
    pub remediation: String,
    pub first_seen: String,
    pub last_seen: String,
    pub fixed: Option<String>,
    /// Its life on its branch, oldest first: the changes, each with the unchanged scans
    /// after it folded in, and its triage changes between them.
    pub life: Vec<LifeEntry>,
    /// The scans the life was read from (its branch's latest, at most 500).
    pub scans_read: i64,
    /// The viewer may triage it now (a member: when no triage holds; an admin: always).
    pub can_triage: bool,
    /// The viewer may undo its triage (admins).
    pub can_undo: bool,
}

/// One entry of a finding's life ([`crate::life::LifeEvent`] with its times written out).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LifeEntry {
    pub event: crate::life::LifeEvent,
    pub at: String,
    pub last_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingsPage {
    pub findings: Vec<FindingView>,
    pub total: i64,
    pub page: i64,
    pub page_size: i64,
    /// The scanner's places of the page's first and last findings: where the pager's links
    /// start the pages before and after.
    #[serde(default)]
    pub first: Option<i64>,
    #[serde(default)]
    pub last: Option<i64>,
    /// How many of the scan's findings each filter choice holds, by (severity, status).
    #[serde(default)]
    pub counts: Vec<(String, String, i64)>,
    /// The same per framework of the scan: (framework, severity, status, count).
    #[serde(default)]
    pub by_framework: Vec<(String, String, String, i64)>,
}

impl FindingsPage {
    /// The scan's findings with this severity, status and framework (each `None`: any).
    pub fn count(
        &self,
        severity: Option<&str>,
        status: Option<&str>,
        framework: Option<&str>,
    ) -> i64 {
        let fits = |sev: &str, st: &str| {
            severity.is_none_or(|s| s == sev) && status.is_none_or(|s| s == st)
        };
        match framework {
            None => self
                .counts
                .iter()
                .filter(|(sev, st, _)| fits(sev, st))
                .map(|(_, _, n)| n)
                .sum(),
            Some(f) => self
                .by_framework
                .iter()
                .filter(|(fw, sev, st, _)| fw == f && fits(sev, st))
                .map(|(_, _, _, n)| n)
                .sum(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffView {
    /// There is a scan to compare with (the previous one, or the chosen base).
    pub has_previous: bool,
    /// For a pull request's scan: its base branch, and the base scan it was judged against
    /// (what the diff shows unless another scan is chosen).
    pub pr_base: Option<(String, tidemark_wire::ids::ScanId)>,
    /// The scan compared with, when one was chosen (`None`: the previous scan).
    pub base_scan_id: Option<tidemark_wire::ids::ScanId>,
    /// The project's other recent scans (newest first, at most 50), to choose a base from.
    pub choices: Vec<tidemark_wire::ids::ScanId>,
    pub new: Vec<FindingView>,
    pub fixed: Vec<FindingView>,
    pub new_count: i64,
    pub fixed_count: i64,
    pub unchanged_count: i64,
}
