//! What a push does to a project's history, decided from the state the database holds.
//!
//! The store reads a [`PushHead`] inside the project's write transaction (so nothing of the
//! project changes underneath it), asks [`decide_push`], and writes what the answer says;
//! where projects of one account are written side by side, [`admit`] has the last word on
//! the account-wide limits. Keeping the rules here means they are tested without a database,
//! and both backends apply the same ones.

use std::collections::HashSet;

mod admission;
mod placement;
pub use admission::{admit, Admission, Counted};
pub use placement::{alerts_due, line_ref_key, LineIds};

use tidemark_wire::{BaseComparison, Finding, GateResult};

use crate::gate::{evaluate, Previous, QualityGate};
use crate::git::{BranchName, GitTarget, LineKey};
use crate::rate::{RateDecision, RollingLimit};
use crate::Millis;

/// What the database holds, at the moment of the push, about its account and project.
#[derive(Debug, Clone, PartialEq)]
pub struct PushHead {
    /// The pushing key is still unrevoked, and the account's license still active, as read
    /// inside the write transaction: a push authenticated just before Rotate Key or a
    /// suspension, but written after it, is refused.
    pub key_live: bool,
    pub license_live: bool,
    /// The account's pushes inside the rate window, and the time of the oldest.
    pub writes_in_window: u32,
    pub oldest_write: Option<Millis>,
    /// The account's projects that are not archived.
    pub active_projects: u64,
    /// The project named by the push's label, if it exists.
    pub project: Option<ProjectHead>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ProjectHead {
    pub id: crate::ids::ProjectId,
    pub archived: bool,
    /// Scans of the project on all its lines: storage numbers them 1, 2, … in arrival order.
    pub scan_count: i64,
    /// Scans of this project whose `scanned_at` falls in the same second as the push's (scan
    /// ids are unique per project, across its lines).
    pub scans_in_same_second: u32,
    /// The project's quality gate now, if it has one.
    pub gate: Option<QualityGate>,
    /// The project's default line. `None` only for a project created by an older release
    /// during a rolling upgrade; the push then creates it.
    pub default_line: Option<LineRef>,
    /// The line the push goes to, when it exists: the line stored under the push's key, or
    /// for a push without a branch the default line. A branch that has no line of its own
    /// while the default line has no name yet is the default line (it adopts the name).
    pub line: Option<LineHead>,
    /// For a pull request: the line of its base branch, when it exists (or the unnamed default
    /// line, which the base then names).
    pub base: Option<BaseHead>,
}

/// A line as far as naming it goes.
#[derive(Debug, Clone, PartialEq)]
pub struct LineRef {
    pub id: String,
    /// `None`: the default line of a project never told a branch name.
    pub name: Option<String>,
}

/// The head of the line a push goes to.
#[derive(Debug, Clone, PartialEq)]
pub struct LineHead {
    pub id: String,
    /// Scans on this line: the line's sequence.
    pub scan_count: i64,
    pub last_score: Option<f64>,
    pub last_scan: Option<LastScan>,
}

/// The base branch of a pull request, as the comparison needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct BaseHead {
    pub id: String,
    /// Its latest scan, if it has one.
    pub last: Option<BaseScan>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BaseScan {
    pub scan_id: crate::ids::ScanId,
    pub score: f64,
}

/// The line's latest scan, as much of it as a replay answers with.
#[derive(Debug, Clone, PartialEq)]
pub struct LastScan {
    pub scan_id: crate::ids::ScanId,
    pub score_delta: f64,
    pub body_hash: String,
    /// The gate's verdict as it was when that scan was pushed.
    pub gate: GateResult,
    /// For a pull request, its comparison with the base as it was then.
    pub base: Option<BaseComparison>,
}

/// The facts of the push itself that the rules look at.
#[derive(Debug, Clone, Copy)]
pub struct PushFacts<'a> {
    pub score: f64,
    pub body_hash: &'a str,
    pub findings: &'a [Finding],
    pub git: &'a GitTarget,
    /// The line's latest scan's open findings by (rule id, resource), read in the transaction
    /// when the project's gate needs them (`gate::needs_previous_findings`); otherwise `None`.
    pub previous_open: Option<&'a HashSet<(String, String)>>,
    /// For a pull request whose base has a scan: that scan's open findings.
    pub base_open: Option<&'a HashSet<(String, String)>>,
    /// The line's triaged findings (whose triage holds), read with `previous_open`: the
    /// gate never counts them as new.
    pub triaged: Option<&'a HashSet<(String, String)>>,
    /// Active-project cap; `None` is unlimited.
    pub project_cap: Option<u64>,
    pub write_limit: RollingLimit,
    pub now: Millis,
}

#[derive(Debug, Clone, PartialEq)]
pub enum PushDecision {
    /// The key was revoked (rotated) after the request was authenticated.
    KeyRevoked,
    /// The license was suspended or expired after the request was authenticated.
    LicenseInactive,
    ProjectArchived,
    /// The push equals its line's latest scan: answer with that scan, write nothing.
    Replay(LastScan),
    RateLimited {
        retry_after_secs: u64,
    },
    ProjectLimitReached {
        cap: u64,
    },
    Append(Append),
}

/// A new history entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Append {
    /// The label names no project yet: create it.
    pub new_project: bool,
    /// The entry's storage position in the project (1 for the first scan of any line).
    pub seq: i64,
    /// Which lines to create or name, and which one the scan goes on.
    pub lines: LinePlan,
    /// The entry's position in its line (1 for the line's first scan).
    pub line_seq: i64,
    /// This score minus the line's previous scan's (0 for a line's first scan).
    pub score_delta: f64,
    /// Which candidate scan id is free: 1 is the base id, 2 is `base-2`, …
    pub scan_id_n: u32,
    /// Writes left in the window after this one.
    pub writes_remaining: u32,
    /// The project's gate applied to this scan (for a pull request: against its base).
    pub gate: GateResult,
    /// For a pull request: the comparison with its base.
    pub base: Option<BaseComparison>,
}

/// What happens to a project's lines when a scan is appended.
#[derive(Debug, Clone, PartialEq)]
pub struct LinePlan {
    /// The project has no default line yet: create it, named or not.
    pub create_default: Option<Option<BranchName>>,
    /// The default line has no name yet, and this push gives it one.
    pub name_default: Option<BranchName>,
    /// The line the scan goes on.
    pub target: LineTarget,
    /// The scan is on the project's default line: the projects list, badges, alerts and
    /// `score.regressed` follow it.
    pub on_default: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum LineTarget {
    /// A line that exists, by id.
    Existing(String),
    /// The default line this push creates.
    NewDefault,
    /// A new line of its own (a branch's or a pull request's).
    New,
}

/// Applies the rules in the contract's order: an archived project refuses; a replay is
/// answered without using the budget; then the write limit; then the project cap, which only
/// a new label can hit. "Previous scan", "replay" and "delta" are the line's.
pub fn decide_push(head: &PushHead, push: &PushFacts<'_>) -> PushDecision {
    // Before everything, replays included: a revoked key fails from that instant on.
    if !head.key_live {
        return PushDecision::KeyRevoked;
    }
    if !head.license_live {
        return PushDecision::LicenseInactive;
    }
    if let Some(project) = &head.project {
        if project.archived {
            return PushDecision::ProjectArchived;
        }
        if let Some(last) = project.line.as_ref().and_then(|l| l.last_scan.as_ref()) {
            if last.body_hash == push.body_hash {
                return PushDecision::Replay(last.clone());
            }
        }
    }
    let writes_remaining =
        match push
            .write_limit
            .decide(push.now, head.writes_in_window, head.oldest_write)
        {
            RateDecision::Allow { remaining, .. } => remaining,
            RateDecision::Refuse { retry_after_secs } => {
                return PushDecision::RateLimited { retry_after_secs }
            }
        };
    if head.project.is_none() {
        if let Some(cap) = push.project_cap {
            if head.active_projects >= cap {
                return PushDecision::ProjectLimitReached { cap };
            }
        }
    }
    let project = head.project.as_ref();
    let lines = plan_lines(project, push.git);
    let line = project.and_then(|p| p.line.as_ref());
    let base = push.git.base().map(|name| {
        let last = project
            .and_then(|p| p.base.as_ref())
            .and_then(|b| b.last.as_ref());
        compare_with_base(name, last, push.score, push.findings, push.base_open)
    });
    let no_findings = HashSet::new();
    // A pull request is judged against its base (what it adds); a branch against its own
    // previous scan. A new project has no gate yet.
    let previous = match (push.git.base(), project) {
        (_, None) => None,
        (Some(_), Some(p)) => p
            .base
            .as_ref()
            .and_then(|b| b.last.as_ref())
            .map(|last| Previous {
                score: last.score,
                open: push.base_open.unwrap_or(&no_findings),
                triaged: push.triaged.unwrap_or(&no_findings),
            }),
        (None, Some(_)) => line.and_then(|l| l.last_score).map(|score| Previous {
            score,
            open: push.previous_open.unwrap_or(&no_findings),
            triaged: push.triaged.unwrap_or(&no_findings),
        }),
    };
    let gate = project.and_then(|p| p.gate.as_ref());
    PushDecision::Append(Append {
        new_project: project.is_none(),
        seq: project.map_or(0, |p| p.scan_count) + 1,
        lines,
        line_seq: line.map_or(0, |l| l.scan_count) + 1,
        score_delta: line
            .and_then(|l| l.last_score)
            .map_or(0.0, |last| push.score - last),
        // Ids of one second are handed out as base, base-2, … without gaps, so the count of
        // that second's scans names the next free one.
        scan_id_n: project
            .map_or(0, |p| p.scans_in_same_second)
            .saturating_add(1),
        writes_remaining,
        gate: if project.is_some() {
            evaluate(gate, push.score, push.findings, previous)
        } else {
            GateResult::none()
        },
        base,
    })
}

/// Which line a push goes on, and what it names. A project's default line is named by the
/// first push that names a branch: the repository's default branch when the CI says which it
/// is, else the branch pushed (for a pull request, its base). A history pushed before branches
/// existed so continues as the main line, not as whichever feature branch pushed first.
fn plan_lines(project: Option<&ProjectHead>, git: &GitTarget) -> LinePlan {
    let naming = git.default_name().cloned();
    let is_default_branch = match git.line() {
        LineKey::Default => true,
        LineKey::Branch(branch) => naming.as_ref() == Some(&branch),
        LineKey::PullRequest(_) => false,
    };
    let line = project.and_then(|p| p.line.as_ref());
    let Some(default) = project.and_then(|p| p.default_line.as_ref()) else {
        // A new project, or one an older release made: its default line starts now.
        let target = match line {
            Some(l) => LineTarget::Existing(l.id.clone()),
            None if is_default_branch => LineTarget::NewDefault,
            None => LineTarget::New,
        };
        return LinePlan {
            create_default: Some(naming),
            name_default: None,
            on_default: target == LineTarget::NewDefault,
            target,
        };
    };
    let name_default = if default.name.is_none() { naming } else { None };
    match line {
        Some(l) => LinePlan {
            create_default: None,
            name_default,
            on_default: l.id == default.id,
            target: LineTarget::Existing(l.id.clone()),
        },
        None => LinePlan {
            create_default: None,
            name_default,
            target: LineTarget::New,
            on_default: false,
        },
    }
}

/// A pull request's scan against its base's latest scan (`None`: the base has none yet).
pub fn compare_with_base(
    branch: &BranchName,
    base: Option<&BaseScan>,
    score: f64,
    findings: &[Finding],
    base_open: Option<&HashSet<(String, String)>>,
) -> BaseComparison {
    let Some(base) = base else {
        return base_comparison(branch.as_str(), None, score, None);
    };
    let empty = HashSet::new();
    let base_open = base_open.unwrap_or(&empty);
    let open: HashSet<(&str, &str)> = findings
        .iter()
        .filter(|f| f.status.is_open())
        .map(|f| (f.rule_id.as_str(), f.resource.as_str()))
        .collect();
    let new = open
        .iter()
        .filter(|(r, res)| !base_open.contains(&((*r).to_owned(), (*res).to_owned())))
        .count() as u64;
    let fixed = base_open
        .iter()
        .filter(|(r, res)| !open.contains(&(r.as_str(), res.as_str())))
        .count() as u64;
    base_comparison(
        branch.as_str(),
        Some((base.scan_id.to_string(), base.score)),
        score,
        Some((new, fixed)),
    )
}

/// The comparison as the answer carries it, from its parts (also how a stored one is read
/// back for a replay): the base's scan id and score, and the new and fixed counts.
pub fn base_comparison(
    branch: &str,
    base: Option<(String, f64)>,
    score: f64,
    counts: Option<(u64, u64)>,
) -> BaseComparison {
    let Some((scan_id, base_score)) = base else {
        return BaseComparison {
            branch: branch.to_owned(),
            scan_id: None,
            score: None,
            score_delta: None,
            new_findings: None,
            fixed_findings: None,
            message: format!(
                "{branch} has no scan yet, so this pull request was judged on its own: only the \
                 gate's minimum score applied"
            ),
        };
    };
    let (new, fixed) = counts.unwrap_or((0, 0));
    let findings = if new == 1 { "finding" } else { "findings" };
    BaseComparison {
        branch: branch.to_owned(),
        scan_id: Some(scan_id),
        score: Some(base_score),
        score_delta: Some(score - base_score),
        new_findings: Some(new),
        fixed_findings: Some(fixed),
        message: format!("{new} new {findings} and {fixed} fixed compared with {branch}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tidemark_wire::{FindingStatus, GateStatus, Severity};

    const NOW: Millis = 1_000_000;

    fn no_git() -> &'static GitTarget {
        static NONE: std::sync::OnceLock<GitTarget> = std::sync::OnceLock::new();
        NONE.get_or_init(GitTarget::default)
    }

    fn facts(hash: &str) -> PushFacts<'_> {
        PushFacts {
            score: 80.0,
            body_hash: hash,
            findings: &[],
            git: no_git(),
            previous_open: None,
            base_open: None,
            triaged: None,
            project_cap: Some(1),
            write_limit: RollingLimit::per_minute(5),
            now: NOW,
        }
    }

    fn last_scan() -> LastScan {
        LastScan {
            scan_id: crate::ids::ScanId::trusted("20261122-101500-api"),
            score_delta: -1.0,
            body_hash: "old".into(),
            gate: GateResult::none(),
            base: None,
        }
    }

    fn project() -> ProjectHead {
        ProjectHead {
            id: crate::ids::ProjectId::trusted("prj"),
            archived: false,
            scan_count: 7,
            scans_in_same_second: 0,
            gate: None,
            default_line: Some(LineRef {
                id: "br_main".into(),
                name: Some("main".into()),
            }),
            line: Some(LineHead {
                id: "br_main".into(),
                scan_count: 5,
                last_score: Some(82.5),
                last_scan: Some(last_scan()),
            }),
            base: None,
        }
    }

    fn head(project: Option<ProjectHead>) -> PushHead {
        PushHead {
            key_live: true,
            license_live: true,
            writes_in_window: 0,
            oldest_write: None,
            active_projects: 1,
            project,
        }
    }

    fn branch(name: &str) -> BranchName {
        BranchName::parse("git.branch", name).unwrap()
    }

    fn git(branch_name: Option<&str>, pr_base: Option<(u64, &str)>) -> GitTarget {
        GitTarget {
            branch: branch_name.map(branch),
            pull_request: pr_base.map(|(number, base)| crate::git::PullRequest {
                number,
                base_branch: branch(base),
                title: None,
                url: None,
            }),
            ..GitTarget::default()
        }
    }

    fn finding(rule: &str, resource: &str, status: FindingStatus) -> Finding {
        Finding {
            rule_id: rule.into(),
            resource: resource.into(),
            status,
            severity: Severity::High,
            message: String::new(),
            remediation: String::new(),
        }
    }

    fn appended(d: PushDecision) -> Append {
        match d {
            PushDecision::Append(a) => a,
            other => panic!("expected an append, got {other:?}"),
        }
    }

    #[test]
    fn a_revoked_key_or_an_inactive_license_stops_everything_even_a_replay() {
        let mut h = head(Some(project()));
        h.key_live = false;
        // "old" is the last scan's hash: otherwise a replay.
        assert_eq!(decide_push(&h, &facts("old")), PushDecision::KeyRevoked);
        h.key_live = true;
        h.license_live = false;
        assert_eq!(
            decide_push(&h, &facts("old")),
            PushDecision::LicenseInactive
        );
        h.license_live = true;
        assert!(matches!(
            decide_push(&h, &facts("old")),
            PushDecision::Replay(_)
        ));
    }

    #[test]
    fn an_existing_line_appends_after_its_last_entry_with_the_delta_to_it() {
        let a = appended(decide_push(&head(Some(project())), &facts("new")));
        assert_eq!(a.seq, 8, "storage position: after the project's 7 scans");
        assert_eq!(a.line_seq, 6, "position in the line: after its 5 scans");
        assert_eq!(a.score_delta, -2.5);
        assert_eq!(a.writes_remaining, 4);
        assert_eq!(
            a.lines,
            LinePlan {
                create_default: None,
                name_default: None,
                target: LineTarget::Existing("br_main".into()),
                on_default: true,
            }
        );
        assert_eq!(a.base, None);
    }

    #[test]
    fn an_appended_scan_carries_the_gate_verdict_against_the_latest_scan() {
        let mut p = project();
        p.gate = QualityGate::new(None, Some(2.0), None).unwrap();
        // 82.5 -> 80.0 is a drop of 2.5.
        let append = appended(decide_push(&head(Some(p)), &facts("new")));
        assert_eq!(append.gate.status, GateStatus::Failed);
    }

    #[test]
    fn a_first_scan_has_delta_zero_and_a_new_label_needs_a_free_slot() {
        let mut h = head(None);
        h.active_projects = 0;
        let a = appended(decide_push(&h, &facts("new")));
        assert!(a.new_project);
        assert_eq!((a.seq, a.line_seq, a.score_delta), (1, 1, 0.0));
        // Without a branch, the project's default line starts unnamed and takes the scan.
        assert_eq!(a.lines.create_default, Some(None));
        assert_eq!(a.lines.target, LineTarget::NewDefault);
        assert!(a.lines.on_default);
        h.active_projects = 1;
        assert_eq!(
            decide_push(&h, &facts("new")),
            PushDecision::ProjectLimitReached { cap: 1 }
        );
        let unlimited = PushFacts {
            project_cap: None,
            ..facts("new")
        };
        assert!(matches!(
            decide_push(&h, &unlimited),
            PushDecision::Append(_)
        ));
    }

    #[test]
    fn a_replay_answers_with_the_latest_scan_even_when_the_budget_is_spent() {
        let mut h = head(Some(project()));
        h.writes_in_window = 5;
        h.oldest_write = Some(NOW - 10_000);
        assert_eq!(
            decide_push(&h, &facts("old")),
            PushDecision::Replay(last_scan())
        );
        assert_eq!(
            decide_push(&h, &facts("new")),
            PushDecision::RateLimited {
                retry_after_secs: 50
            }
        );
    }

    #[test]
    fn replays_are_per_line() {
        // The same body as another line's latest scan is no replay on a line of its own.
        let mut p = project();
        p.line = None;
        let g = git(Some("feature"), None);
        let f = PushFacts {
            git: &g,
            ..facts("old")
        };
        let a = appended(decide_push(&head(Some(p)), &f));
        assert_eq!(a.lines.target, LineTarget::New);
        assert!(!a.lines.on_default);
        assert_eq!((a.line_seq, a.score_delta), (1, 0.0));
    }

    #[test]
    fn an_archived_project_refuses_before_anything_else() {
        let mut p = project();
        p.archived = true;
        assert_eq!(
            decide_push(&head(Some(p)), &facts("old")),
            PushDecision::ProjectArchived
        );
    }

    #[test]
    fn a_taken_second_moves_to_the_next_suffix() {
        let mut p = project();
        p.scans_in_same_second = 2;
        assert_eq!(
            appended(decide_push(&head(Some(p)), &facts("new"))).scan_id_n,
            3
        );
    }

    #[test]
    fn the_rate_limit_is_checked_before_the_project_cap() {
        let mut h = head(None);
        h.writes_in_window = 5;
        h.oldest_write = Some(NOW - 30_000);
        assert_eq!(
            decide_push(&h, &facts("new")),
            PushDecision::RateLimited {
                retry_after_secs: 30
            }
        );
    }

    #[test]
    fn the_first_named_branch_names_an_unnamed_default_line() {
        let mut p = project();
        p.default_line.as_mut().unwrap().name = None;
        // The store hands the unnamed default line over as the branch's line.
        let g = git(Some("trunk"), None);
        let f = PushFacts {
            git: &g,
            ..facts("new")
        };
        let a = appended(decide_push(&head(Some(p.clone())), &f));
        assert_eq!(a.lines.name_default, Some(branch("trunk")));
        assert!(a.lines.on_default);
        assert_eq!(a.line_seq, 6, "the history continues");

        // When the CI says the default is another branch, that one names it, and the pushed
        // branch gets a line of its own.
        let mut g = git(Some("feature"), None);
        g.default_branch = Some(branch("main"));
        p.line = None;
        let f = PushFacts {
            git: &g,
            ..facts("new")
        };
        let a = appended(decide_push(&head(Some(p.clone())), &f));
        assert_eq!(a.lines.name_default, Some(branch("main")));
        assert_eq!(a.lines.target, LineTarget::New);
        assert!(!a.lines.on_default);

        // A named default line keeps its name.
        p.default_line.as_mut().unwrap().name = Some("main".into());
        let a = appended(decide_push(&head(Some(p)), &f));
        assert_eq!(a.lines.name_default, None);
    }

    #[test]
    fn a_new_project_pushed_from_a_pull_request_starts_an_empty_default_line_named_by_its_base() {
        let mut h = head(None);
        h.active_projects = 0;
        let g = git(Some("feature"), Some((7, "main")));
        let f = PushFacts {
            git: &g,
            ..facts("new")
        };
        let a = appended(decide_push(&h, &f));
        assert_eq!(a.lines.create_default, Some(Some(branch("main"))));
        assert_eq!(a.lines.target, LineTarget::New);
        assert!(!a.lines.on_default);
        let base = a.base.unwrap();
        assert_eq!(base.scan_id, None);
        assert!(
            base.message.contains("judged on its own"),
            "{}",
            base.message
        );
    }

    fn pr_project(gate: Option<QualityGate>) -> ProjectHead {
        ProjectHead {
            gate,
            line: None,
            base: Some(BaseHead {
                id: "br_main".into(),
                last: Some(BaseScan {
                    scan_id: crate::ids::ScanId::trusted("20261122-090000-api"),
                    score: 90.0,
                }),
            }),
            ..project()
        }
    }

    #[test]
    fn a_pull_request_is_gated_on_the_findings_it_adds() {
        let gate = QualityGate::new(Some(50.0), None, Some(Severity::Low)).unwrap();
        let base_open: HashSet<(String, String)> = [("r1".to_owned(), "a".to_owned())].into();
        // The line's own previous scan had nothing open: compared with it, r1 would be new.
        let previous_open = HashSet::new();
        let g = git(Some("feature"), Some((7, "main")));
        let pre_existing = [finding("r1", "a", FindingStatus::Fail)];
        let f = PushFacts {
            git: &g,
            findings: &pre_existing,
            base_open: Some(&base_open),
            previous_open: Some(&previous_open),
            triaged: None,
            ..facts("new")
        };
        let a = appended(decide_push(&head(Some(pr_project(gate))), &f));
        assert_eq!(a.gate.status, GateStatus::Passed, "{:?}", a.gate.reasons);
        let base = a.base.unwrap();
        assert_eq!(base.new_findings, Some(0));
        assert_eq!(base.fixed_findings, Some(0));
        assert_eq!(base.score_delta, Some(-10.0));
        assert_eq!(
            base.message,
            "0 new findings and 0 fixed compared with main"
        );

        let added = [
            finding("r1", "a", FindingStatus::Fail),
            finding("r2", "b", FindingStatus::Warn),
            finding("r3", "c", FindingStatus::Pass),
        ];
        let f = PushFacts {
            findings: &added,
            ..f
        };
        let a = appended(decide_push(&head(Some(pr_project(gate))), &f));
        assert_eq!(a.gate.status, GateStatus::Failed);
        assert_eq!(a.base.unwrap().new_findings, Some(1));

        let fixed: [Finding; 0] = [];
        let f = PushFacts {
            findings: &fixed,
            ..f
        };
        let a = appended(decide_push(&head(Some(pr_project(gate))), &f));
        assert_eq!(
            a.base.unwrap().message,
            "0 new findings and 1 fixed compared with main"
        );
    }

    #[test]
    fn a_pull_request_whose_base_has_no_scan_is_judged_on_its_own() {
        let gate = QualityGate::new(Some(85.0), Some(1.0), Some(Severity::Low)).unwrap();
        let mut p = pr_project(gate);
        p.base = None;
        let g = git(Some("feature"), Some((7, "main")));
        let open = [finding("r9", "z", FindingStatus::Fail)];
        let f = PushFacts {
            git: &g,
            findings: &open,
            ..facts("new")
        };
        let a = appended(decide_push(&head(Some(p)), &f));
        // Only the minimum score applies: 80 < 85.
        assert_eq!(
            a.gate.reasons,
            vec!["score 80 is below the gate's minimum of 85".to_owned()]
        );
        assert_eq!(a.base.unwrap().new_findings, None);
    }
}
