//! Findings as things with a life: one identity per (branch, rule id, resource), followed
//! across the branch's scans (first seen, last seen, fixed, reopened), and triage, which sets
//! an identity aside with a reason until it expires or is undone.

use std::collections::HashSet;

use chrono::{NaiveDate, TimeZone as _, Utc};
use tidemark_wire::findings::{FindingState, TriageState};
use tidemark_wire::ids::FindingId;
use tidemark_wire::Finding;

use crate::input::{non_empty, prose, FieldError};
use crate::Millis;

/// The longest triage reason kept.
pub const MAX_REASON: usize = 1_000;

/// The findings of a push that its branch tracks: each open (FAIL, WARN, ERROR) finding
/// once, at its first occurrence (a scanner that lists one twice describes one problem).
pub fn tracked_in_push(findings: &[Finding]) -> Vec<&Finding> {
    let mut seen = HashSet::new();
    findings
        .iter()
        .filter(|f| f.status.is_open())
        .filter(|f| seen.insert((f.rule_id.as_str(), f.resource.as_str())))
        .collect()
}

/// Whether a triage still holds at `now`: it has no expiry, or the expiry is still ahead.
pub fn triage_holds(expires_at: Option<Millis>, now: Millis) -> bool {
    expires_at.is_none_or(|at| at > now)
}

/// Where a tracked finding stands at `now`. A fixed finding is fixed whatever its triage
/// says: the dashboard never shows it as failing.
pub fn state_of(fixed: bool, triage: Option<Option<Millis>>, now: Millis) -> FindingState {
    match triage {
        _ if fixed => FindingState::Fixed,
        Some(expires_at) if triage_holds(expires_at, now) => FindingState::Triaged,
        _ => FindingState::Open,
    }
}

/// A triage as asked for, checked: a known state, a reason, and an expiry in the future.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TriageChange {
    pub state: TriageState,
    pub reason: String,
    pub expires_at: Option<Millis>,
}

impl TriageChange {
    /// `expires` is an RFC 3339 time or a date (midnight UTC); blank means none, which is how
    /// an empty date field of a form arrives.
    pub fn parse(
        state: TriageState,
        reason: &str,
        expires: Option<&str>,
        now: Millis,
    ) -> Result<TriageChange, FieldError> {
        // Checked as sent (the schema's length is of what is sent), kept trimmed.
        non_empty("reason", reason)?;
        prose("reason", reason, MAX_REASON)?;
        let reason = reason.trim();
        let expires_at = match expires.map(str::trim).filter(|e| !e.is_empty()) {
            None => None,
            Some(text) => Some(parse_expiry(text, now)?),
        };
        Ok(TriageChange {
            state,
            reason: reason.to_owned(),
            expires_at,
        })
    }
}

fn parse_expiry(text: &str, now: Millis) -> Result<Millis, FieldError> {
    let invalid = |why: &str| FieldError::new("expires_at", format!("expires_at {why}"));
    let at = if let Ok(time) = chrono::DateTime::parse_from_rfc3339(text) {
        time.timestamp_millis()
    } else if let Ok(date) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        let midnight = date
            .and_hms_opt(0, 0, 0)
            .ok_or_else(|| invalid("must be a date or an RFC 3339 time"))?;
        Utc.from_utc_datetime(&midnight).timestamp_millis()
    } else {
        return Err(invalid(
            "must be a date (2027-03-01) or an RFC 3339 time (2027-03-01T09:00:00Z)",
        ));
    };
    if at <= now {
        return Err(invalid("must be in the future"));
    }
    Ok(at)
}

/// Whether someone with `role` may make this triage change: any member may set a finding
/// aside that nobody has (or whose triage lapsed); replacing or undoing a triage that holds
/// is an admin's call, so one member's judgement is not quietly overruled by another's.
pub fn may_triage(role: crate::access::Role, holds: bool, undo: bool) -> bool {
    match role {
        crate::access::Role::Admin => true,
        crate::access::Role::Member => !holds && !undo,
    }
}

/// At most this many findings are triaged by one request (two pages of a scan's findings).
pub const MAX_TRIAGE_BATCH: usize = 100;

/// The findings a triage of several names: 1 to [`MAX_TRIAGE_BATCH`] ids that could be
/// finding ids, each once, in the order given. Whether each is the project's is the store's
/// to say.
pub fn triage_batch(ids: &[String]) -> Result<Vec<FindingId>, FieldError> {
    let field = "finding_ids";
    if ids.is_empty() {
        return Err(FieldError::new(
            field,
            "finding_ids must name at least one finding".to_owned(),
        ));
    }
    if ids.len() > MAX_TRIAGE_BATCH {
        return Err(FieldError::new(
            field,
            format!(
                "finding_ids names {} findings; at most {MAX_TRIAGE_BATCH} are triaged at once",
                ids.len()
            ),
        ));
    }
    let mut batch: Vec<FindingId> = Vec::with_capacity(ids.len());
    for id in ids {
        let Some(id) = FindingId::parse(id) else {
            return Err(FieldError::new(
                field,
                "finding_ids holds something that is not a finding id (fnd_…)".to_owned(),
            ));
        };
        if !batch.contains(&id) {
            batch.push(id);
        }
    }
    Ok(batch)
}

/// Where a listing of tracked findings goes on: the sort key of the last finding a page gave
/// (its severity's rank, most severe first; when it was first seen; its id). A page starts
/// after that key rather than after a count of rows, so a walk over the pages returns every
/// finding that keeps its key exactly once, whatever pushes fix or add between pages. Opaque
/// to clients (URL-safe base64 of `v1.<rank>.<first seen>.<id>`), so the order may change
/// later without breaking the cursors they hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindingsCursor {
    /// 0 critical, 1 high, 2 medium, 3 low.
    pub rank: i64,
    pub first_seen_at: Millis,
    pub finding_id: FindingId,
}

impl FindingsCursor {
    /// The longest cursor [`FindingsCursor::encode`] writes is far below this.
    pub const MAX_LEN: usize = 128;

    /// The rank `severity` sorts at (the store's `ORDER BY` uses the same).
    pub fn rank_of(severity: &str) -> i64 {
        match severity {
            "critical" => 0,
            "high" => 1,
            "medium" => 2,
            _ => 3,
        }
    }

    pub fn encode(&self) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!(
            "v1.{}.{}.{}",
            self.rank, self.first_seen_at, self.finding_id
        ))
    }

    /// A cursor [`FindingsCursor::encode`] could have written; anything else is `None`.
    pub fn parse(cursor: &str) -> Option<FindingsCursor> {
        use base64::Engine as _;
        if cursor.len() > Self::MAX_LEN {
            return None;
        }
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(cursor)
            .ok()?;
        let text = String::from_utf8(raw).ok()?;
        let mut parts = text.splitn(4, '.');
        let (version, rank_text, seen_text, finding_id) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        let rank: i64 = rank_text.parse().ok().filter(|r| (0..=3).contains(r))?;
        let first_seen_at: Millis = seen_text.parse().ok().filter(|t| *t >= 0)?;
        // Numbers as written (no "01" or "+1"): one key, one cursor.
        let as_written = rank.to_string() == rank_text && first_seen_at.to_string() == seen_text;
        let finding_id = FindingId::parse(finding_id)?;
        (version == "v1" && as_written).then_some(FindingsCursor {
            rank,
            first_seen_at,
            finding_id,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    #[test]
    fn a_triage_batch_names_one_to_a_hundred_findings_each_once() {
        use super::{triage_batch, MAX_TRIAGE_BATCH};
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            triage_batch(&ids(&["fnd_a1", "fnd_b2", "fnd_a1"])).unwrap(),
            [FindingId::trusted("fnd_a1"), FindingId::trusted("fnd_b2")]
        );
        assert!(triage_batch(&[]).is_err());
        assert!(triage_batch(&ids(&["fnd_a1", "../etc"])).is_err());
        let many: Vec<String> = (0..=MAX_TRIAGE_BATCH).map(|i| format!("fnd_{i}")).collect();
        let err = triage_batch(&many).unwrap_err();
        assert!(err.message.contains("at most 100"), "{}", err.message);
        assert!(triage_batch(&many[..MAX_TRIAGE_BATCH]).is_ok());
    }

    use super::*;
    use tidemark_wire::{FindingStatus, Severity};

    const NOW: Millis = 1_800_000_000_000;
    const DAY: Millis = 86_400_000;

    #[test]
    fn a_cursor_reads_back_only_as_written() {
        let cursor = FindingsCursor {
            rank: 1,
            first_seen_at: 1_700_000_000_123,
            finding_id: FindingId::trusted("fnd_abc234"),
        };
        let text = cursor.encode();
        assert!(text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert_eq!(FindingsCursor::parse(&text), Some(cursor));
        use base64::Engine as _;
        let enc = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        for bad in [
            "999999".to_owned(),
            "".to_owned(),
            "x".repeat(200),
            enc("v2.1.5.fnd_a"),
            enc("v1.4.5.fnd_a"),
            enc("v1.-1.5.fnd_a"),
            enc("v1.1.-5.fnd_a"),
            enc("v1.01.5.fnd_a"),
            enc("v1.1.5.prj_a"),
            enc("v1.1.5"),
            enc("v1.1.5.fnd_A"),
        ] {
            assert_eq!(FindingsCursor::parse(&bad), None, "{bad}");
        }
        assert_eq!(FindingsCursor::rank_of("critical"), 0);
        assert_eq!(FindingsCursor::rank_of("low"), 3);
    }

    fn finding(rule: &str, resource: &str, status: FindingStatus) -> Finding {
        Finding {
            rule_id: rule.into(),
            resource: resource.into(),
            status,
            severity: Severity::High,
            message: "m".into(),
            remediation: "r".into(),
        }
    }

    #[test]
    fn a_push_tracks_each_open_finding_once() {
        let findings = [
            finding("r1", "a", FindingStatus::Fail),
            finding("r1", "a", FindingStatus::Warn),
            finding("r1", "b", FindingStatus::Pass),
            finding("r2", "a", FindingStatus::Error),
            finding("r3", "a", FindingStatus::Skip),
        ];
        let tracked: Vec<_> = tracked_in_push(&findings)
            .into_iter()
            .map(|f| (f.rule_id.as_str(), f.resource.as_str(), f.status))
            .collect();
        assert_eq!(
            tracked,
            [
                ("r1", "a", FindingStatus::Fail),
                ("r2", "a", FindingStatus::Error)
            ]
        );
    }

    #[test]
    fn a_triage_holds_until_its_expiry() {
        assert!(triage_holds(None, NOW));
        assert!(triage_holds(Some(NOW + 1), NOW));
        assert!(!triage_holds(Some(NOW), NOW));
        assert_eq!(state_of(false, None, NOW), FindingState::Open);
        assert_eq!(state_of(false, Some(None), NOW), FindingState::Triaged);
        assert_eq!(
            state_of(false, Some(Some(NOW + DAY)), NOW),
            FindingState::Triaged
        );
        assert_eq!(
            state_of(false, Some(Some(NOW + DAY)), NOW + 2 * DAY),
            FindingState::Open
        );
        assert_eq!(state_of(true, Some(None), NOW), FindingState::Fixed);
        assert_eq!(state_of(true, None, NOW), FindingState::Fixed);
    }

    #[test]
    fn a_triage_needs_a_reason_and_a_future_expiry() {
        let ok = TriageChange::parse(TriageState::WontFix, "  legacy  ", Some(""), NOW).unwrap();
        assert_eq!(ok.reason, "legacy");
        assert_eq!(ok.expires_at, None);
        let dated =
            TriageChange::parse(TriageState::AcceptedRisk, "r", Some("2027-03-01"), NOW).unwrap();
        assert_eq!(
            dated.expires_at,
            Some(
                chrono::DateTime::parse_from_rfc3339("2027-03-01T00:00:00Z")
                    .unwrap()
                    .timestamp_millis()
            )
        );
        let timed = TriageChange::parse(
            TriageState::FalsePositive,
            "r",
            Some("2027-03-01T09:30:00+01:00"),
            NOW,
        )
        .unwrap();
        assert!(timed.expires_at.unwrap() > NOW);

        let err = |reason: &str, expires: Option<&str>| {
            TriageChange::parse(TriageState::WontFix, reason, expires, NOW).unwrap_err()
        };
        assert_eq!(err("   ", None).field, "reason");
        assert_eq!(err(&"x".repeat(MAX_REASON + 1), None).field, "reason");
        assert_eq!(err("nul \u{0} here", None).field, "reason");
        assert_eq!(err("r", Some("2020-01-01")).field, "expires_at");
        assert_eq!(err("r", Some("tomorrow")).field, "expires_at");
        assert!(err("r", Some("2020-01-01")).message.contains("future"));
        // Line breaks are allowed: reasons are prose.
        assert!(TriageChange::parse(TriageState::WontFix, "a\nb", None, NOW).is_ok());
    }

    #[test]
    fn members_triage_and_admins_overrule() {
        use crate::access::Role;
        assert!(may_triage(Role::Member, false, false));
        assert!(!may_triage(Role::Member, true, false));
        assert!(!may_triage(Role::Member, false, true));
        assert!(may_triage(Role::Admin, true, false));
        assert!(may_triage(Role::Admin, true, true));
    }

    #[test]
    fn finding_ids_have_one_shape() {
        assert!(FindingId::has_shape("fnd_3k5v7x2m4q6s8u0w1y3a"));
        assert!(FindingId::has_shape("fnd_m42"));
        for bad in [
            "fnd_",
            "fnd_ABC",
            "prj_abc",
            "fnd_a/b",
            &format!("fnd_{}", "a".repeat(25)),
        ] {
            assert!(!FindingId::has_shape(bad), "{bad}");
        }
    }
}
