//! What a push does to a project's history, decided from the state the database holds.
//!
//! The store reads a [`PushHead`] inside the account's write transaction (so nothing changes
//! underneath it), asks [`decide_push`], and writes what the answer says. Keeping the rules
//! here means they are tested without a database, and both backends apply the same ones.

use std::collections::HashSet;

use tidemark_wire::{Finding, GateResult};

use crate::gate::{evaluate, Previous, QualityGate};
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
    pub id: String,
    pub archived: bool,
    pub scan_count: i64,
    pub last_score: Option<f64>,
    pub last_scan: Option<LastScan>,
    /// Scans of this project whose `scanned_at` falls in the same second as the push's.
    pub scans_in_same_second: u32,
    /// The project's quality gate now, if it has one.
    pub gate: Option<QualityGate>,
}

/// The project's latest scan, as much of it as a replay answers with.
#[derive(Debug, Clone, PartialEq)]
pub struct LastScan {
    pub scan_id: String,
    pub score_delta: f64,
    pub body_hash: String,
    /// The gate's verdict as it was when that scan was pushed.
    pub gate: GateResult,
}

/// The facts of the push itself that the rules look at.
#[derive(Debug, Clone, Copy)]
pub struct PushFacts<'a> {
    pub score: f64,
    pub body_hash: &'a str,
    pub findings: &'a [Finding],
    /// The latest scan's open findings by (rule id, resource), read in the transaction when
    /// the project's gate needs them (`gate::needs_previous_findings`); otherwise `None`.
    pub previous_open: Option<&'a HashSet<(String, String)>>,
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
    /// The push equals the project's latest scan: answer with that scan, write nothing.
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
    /// The entry's position in the project's history (1 for the first scan).
    pub seq: i64,
    /// This score minus the predecessor's (0 for a project's first scan).
    pub score_delta: f64,
    /// Which candidate scan id is free: 1 is the base id, 2 is `base-2`, …
    pub scan_id_n: u32,
    /// Writes left in the window after this one.
    pub writes_remaining: u32,
    /// The project's gate applied to this scan.
    pub gate: GateResult,
}

/// Applies the rules in the contract's order: an archived project refuses; a replay is
/// answered without using the budget; then the write limit; then the project cap, which only
/// a new label can hit.
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
        if let Some(last) = &project.last_scan {
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
    match &head.project {
        None => match push.project_cap {
            Some(cap) if head.active_projects >= cap => PushDecision::ProjectLimitReached { cap },
            _ => PushDecision::Append(Append {
                new_project: true,
                seq: 1,
                score_delta: 0.0,
                scan_id_n: 1,
                writes_remaining,
                // A label's first push creates the project, which has no gate yet.
                gate: GateResult::none(),
            }),
        },
        Some(project) => {
            let no_findings = HashSet::new();
            let previous = project.last_score.map(|score| Previous {
                score,
                open: push.previous_open.unwrap_or(&no_findings),
            });
            PushDecision::Append(Append {
                new_project: false,
                seq: project.scan_count + 1,
                score_delta: project.last_score.map_or(0.0, |last| push.score - last),
                // Ids of one second are handed out as base, base-2, … without gaps, so the
                // count of that second's scans names the next free one.
                scan_id_n: project.scans_in_same_second.saturating_add(1),
                writes_remaining,
                gate: evaluate(project.gate.as_ref(), push.score, push.findings, previous),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Millis = 1_000_000;

    fn facts(hash: &str) -> PushFacts<'_> {
        PushFacts {
            score: 80.0,
            body_hash: hash,
            findings: &[],
            previous_open: None,
            project_cap: Some(1),
            write_limit: RollingLimit::per_minute(5),
            now: NOW,
        }
    }

    fn project() -> ProjectHead {
        ProjectHead {
            id: "prj".into(),
            archived: false,
            scan_count: 7,
            last_score: Some(82.5),
            last_scan: Some(LastScan {
                scan_id: "20261122-101500-api".into(),
                score_delta: -1.0,
                body_hash: "old".into(),
                gate: GateResult::none(),
            }),
            scans_in_same_second: 0,
            gate: None,
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
    fn an_existing_project_appends_after_its_last_entry_with_the_delta_to_it() {
        let d = decide_push(&head(Some(project())), &facts("new"));
        assert_eq!(
            d,
            PushDecision::Append(Append {
                new_project: false,
                seq: 8,
                score_delta: -2.5,
                scan_id_n: 1,
                writes_remaining: 4,
                gate: GateResult::none(),
            })
        );
    }

    #[test]
    fn an_appended_scan_carries_the_gate_verdict_against_the_latest_scan() {
        let mut p = project();
        p.gate = QualityGate::new(None, Some(2.0), None).unwrap();
        // 82.5 -> 80.0 is a drop of 2.5.
        let PushDecision::Append(append) = decide_push(&head(Some(p)), &facts("new")) else {
            panic!("expected an append");
        };
        assert_eq!(append.gate.status, tidemark_wire::GateStatus::Failed);
    }

    #[test]
    fn a_first_scan_has_delta_zero_and_a_new_label_needs_a_free_slot() {
        let mut h = head(None);
        h.active_projects = 0;
        assert!(matches!(
            decide_push(&h, &facts("new")),
            PushDecision::Append(Append { new_project: true, seq: 1, score_delta, .. }) if score_delta == 0.0
        ));
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
            PushDecision::Replay(project().last_scan.unwrap())
        );
        assert_eq!(
            decide_push(&h, &facts("new")),
            PushDecision::RateLimited {
                retry_after_secs: 50
            }
        );
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
        assert!(matches!(
            decide_push(&head(Some(p)), &facts("new")),
            PushDecision::Append(Append { scan_id_n: 3, .. })
        ));
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
}
