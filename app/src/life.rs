//! A tracked finding's life as its page tells it: the changes (opened, fixed, reopened,
//! severity or status changed, triaged), each with the scans that followed it unchanged
//! folded into it, so forty-five identical sightings read as one line.

use serde::{Deserialize, Serialize};

/// One scan of the finding's branch, and what the finding was in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub scan_id: tidemark_wire::ids::ScanId,
    pub at: i64,
    /// `FAIL`, `PASS`, …; `None`: not in the scan (or unknown, when not `known`).
    pub status: Option<String>,
    pub severity: Option<String>,
    /// Whether the scan still holds its findings. Housekeeping removes old scans' findings:
    /// what the finding was in such a scan is unknown, which is never a change.
    pub known: bool,
}

/// One triage change: set, undone, or lapsed (its expiry passed with nothing in between).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TriageChange {
    pub at: i64,
    /// `Triaged`, `TriageUndone` or `TriageLapsed`.
    pub kind: LifeKind,
    /// "Set aside as won't fix by ana@… until 2027-03-01".
    pub text: String,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LifeKind {
    Opened,
    /// Open in the oldest scan shown, first seen before it.
    Open,
    Fixed,
    Reopened,
    Changed,
    Triaged,
    TriageUndone,
    /// A triage's expiry passed: the finding counts as open again.
    TriageLapsed,
}

impl LifeKind {
    pub fn label(self) -> &'static str {
        match self {
            LifeKind::Opened => "Opened",
            LifeKind::Open => "Open",
            LifeKind::Fixed => "Fixed",
            LifeKind::Reopened => "Reopened",
            LifeKind::Changed => "Changed",
            LifeKind::Triaged => "Triaged",
            LifeKind::TriageUndone => "Triage undone",
            LifeKind::TriageLapsed => "Triage lapsed",
        }
    }

    /// The class the timeline colours its dot by.
    pub fn class(self) -> &'static str {
        match self {
            LifeKind::Opened | LifeKind::Open | LifeKind::Reopened | LifeKind::Changed => "tl open",
            LifeKind::Fixed => "tl passing",
            LifeKind::Triaged | LifeKind::TriageUndone => "tl triage",
            LifeKind::TriageLapsed => "tl open",
        }
    }
}

/// A change, and the scans after it that changed nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LifeEvent {
    pub at: i64,
    pub kind: LifeKind,
    /// "FAIL, high"; "high → critical"; a triage's state and who set it.
    pub text: String,
    pub reason: Option<String>,
    /// The scan the change was seen in (none for a triage).
    pub scan_id: Option<tidemark_wire::ids::ScanId>,
    /// Scans after it with the finding as it was: how many, and the latest of them.
    pub unchanged: i64,
    pub last_scan_id: Option<tidemark_wire::ids::ScanId>,
    pub last_at: Option<i64>,
    /// Scans after it whose findings are no longer stored, so nobody can say what the
    /// finding was in them.
    #[serde(default)]
    pub unknown: i64,
}

fn is_open(status: Option<&str>) -> bool {
    matches!(status, Some("FAIL" | "WARN" | "ERROR"))
}

/// The life of a finding from its sightings (oldest first) and triage changes, oldest first.
/// `from_first` says the oldest sighting is the scan that first saw it (else older scans
/// were not read, and the first entry says "Open" rather than "Opened").
pub fn life(seen: &[Seen], from_first: bool, triage: &[TriageChange]) -> Vec<LifeEvent> {
    let mut events: Vec<LifeEvent> = Vec::new();
    let mut before: Option<&Seen> = None;
    for (n, s) in seen.iter().enumerate() {
        if !s.known {
            if let Some(last) = events.last_mut() {
                last.unknown += 1;
            }
            continue;
        }
        let open = is_open(s.status.as_deref());
        let change = match before {
            // "Opened" only when this is the scan that first saw it.
            None if open => Some((
                if from_first && n == 0 {
                    LifeKind::Opened
                } else {
                    LifeKind::Open
                },
                describe(s),
            )),
            None => Some((LifeKind::Fixed, fixed_text(s))),
            Some(b) => {
                let was_open = is_open(b.status.as_deref());
                match (was_open, open) {
                    (true, false) => Some((LifeKind::Fixed, fixed_text(s))),
                    (false, true) => Some((LifeKind::Reopened, describe(s))),
                    (true, true) if b.status != s.status || b.severity != s.severity => {
                        Some((LifeKind::Changed, changed_text(b, s)))
                    }
                    _ => None,
                }
            }
        };
        match (change, events.last_mut()) {
            (Some((kind, text)), _) => events.push(LifeEvent {
                at: s.at,
                kind,
                text,
                reason: None,
                scan_id: Some(s.scan_id.clone()),
                unchanged: 0,
                last_scan_id: None,
                last_at: None,
                unknown: 0,
            }),
            (None, Some(last)) => {
                last.unchanged += 1;
                last.last_scan_id = Some(s.scan_id.clone());
                last.last_at = Some(s.at);
            }
            (None, None) => {}
        }
        before = Some(s);
    }
    // Triage changes between the sightings, by time (a sighting first on a tie): a scan's
    // fold is not split by them, since nothing in the scans changed.
    let mut all: Vec<LifeEvent> = events;
    all.extend(triage.iter().map(|t| LifeEvent {
        at: t.at,
        kind: t.kind,
        text: t.text.clone(),
        reason: t.reason.clone(),
        scan_id: None,
        unchanged: 0,
        last_scan_id: None,
        last_at: None,
        unknown: 0,
    }));
    all.sort_by_key(|e| (e.at, e.scan_id.is_none()));
    all
}

fn describe(s: &Seen) -> String {
    match &s.severity {
        Some(sev) => format!("{}, {sev}", s.status.as_deref().unwrap_or("")),
        None => s.status.clone().unwrap_or_default(),
    }
}

fn fixed_text(s: &Seen) -> String {
    match s.status.as_deref() {
        Some(status) => format!("{status} in the scan"),
        None => "Not in the scan".to_owned(),
    }
}

fn changed_text(before: &Seen, now: &Seen) -> String {
    let mut parts = Vec::new();
    if before.severity != now.severity {
        parts.push(format!(
            "severity {} → {}",
            before.severity.as_deref().unwrap_or("?"),
            now.severity.as_deref().unwrap_or("?")
        ));
    }
    if before.status != now.status {
        parts.push(format!(
            "status {} → {}",
            before.status.as_deref().unwrap_or("?"),
            now.status.as_deref().unwrap_or("?")
        ));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(n: i64, status: Option<&str>, severity: &str) -> Seen {
        Seen {
            scan_id: tidemark_wire::ids::ScanId::trusted(format!("s{n}")),
            at: n * 1000,
            status: status.map(str::to_owned),
            severity: status.map(|_| severity.to_owned()),
            known: true,
        }
    }

    fn removed(n: i64) -> Seen {
        Seen {
            known: false,
            ..seen(n, None, "")
        }
    }

    #[test]
    fn a_scan_whose_findings_were_removed_is_unknown_never_a_fix() {
        // As housekeeping leaves a line: every few scans keep their findings, the rest lost them.
        let runs: Vec<Seen> = (1..=12)
            .map(|n| {
                if n % 4 == 1 {
                    seen(n, Some("FAIL"), "critical")
                } else {
                    removed(n)
                }
            })
            .collect();
        let events = life(&runs, true, &[]);
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0].kind, LifeKind::Opened);
        assert_eq!(events[0].unchanged, 2);
        assert_eq!(events[0].unknown, 9);
        assert_eq!(events[0].last_scan_id.as_deref(), Some("s9"));
    }

    #[test]
    fn a_fix_is_seen_only_in_a_scan_that_kept_its_findings() {
        let runs = vec![
            removed(1),
            seen(2, Some("FAIL"), "high"),
            removed(3),
            seen(4, None, ""),
            removed(5),
            seen(6, Some("FAIL"), "high"),
        ];
        let kinds: Vec<(LifeKind, Option<String>, i64)> = life(&runs, true, &[])
            .into_iter()
            .map(|e| (e.kind, e.scan_id.as_deref().map(str::to_owned), e.unknown))
            .collect();
        assert_eq!(
            kinds,
            vec![
                // The scan that first saw it lost its findings: open since before the first known.
                (LifeKind::Open, Some("s2".into()), 1),
                (LifeKind::Fixed, Some("s4".into()), 1),
                (LifeKind::Reopened, Some("s6".into()), 0),
            ]
        );
    }

    #[test]
    fn identical_sightings_fold_into_the_change_before_them() {
        let runs: Vec<Seen> = (1..=45).map(|n| seen(n, Some("FAIL"), "high")).collect();
        let events = life(&runs, true, &[]);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].kind, LifeKind::Opened);
        assert_eq!(events[0].text, "FAIL, high");
        assert_eq!(events[0].unchanged, 44);
        assert_eq!(events[0].last_scan_id.as_deref(), Some("s45"));
    }

    #[test]
    fn each_change_is_its_own_entry_with_its_scan() {
        let runs = vec![
            seen(1, Some("FAIL"), "high"),
            seen(2, Some("FAIL"), "high"),
            seen(3, Some("FAIL"), "critical"),
            seen(4, None, ""),
            seen(5, None, ""),
            seen(6, Some("WARN"), "critical"),
            seen(7, Some("PASS"), "critical"),
        ];
        let kinds: Vec<(LifeKind, String, i64)> = life(&runs, true, &[])
            .into_iter()
            .map(|e| (e.kind, e.text, e.unchanged))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (LifeKind::Opened, "FAIL, high".into(), 1),
                (LifeKind::Changed, "severity high → critical".into(), 0),
                (LifeKind::Fixed, "Not in the scan".into(), 1),
                (LifeKind::Reopened, "WARN, critical".into(), 0),
                (LifeKind::Fixed, "PASS in the scan".into(), 0),
            ]
        );
    }

    #[test]
    fn a_window_that_misses_the_first_scan_says_open_and_triage_falls_between_scans() {
        let runs = vec![seen(1, Some("FAIL"), "low"), seen(3, Some("FAIL"), "low")];
        let triage = vec![TriageChange {
            at: 2000,
            kind: LifeKind::Triaged,
            text: "Set aside as accepted risk by ada@example.com".into(),
            reason: Some("Behind the VPN".into()),
        }];
        let events = life(&runs, false, &triage);
        assert_eq!(events[0].kind, LifeKind::Open);
        // The scans fold into the change they continue, the triage follows in time.
        assert_eq!(events[0].unchanged, 1);
        assert_eq!(events[1].kind, LifeKind::Triaged);
        assert_eq!(
            events[1].text,
            "Set aside as accepted risk by ada@example.com"
        );
        assert_eq!(events.len(), 2);
    }
}
