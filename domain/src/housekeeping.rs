//! Housekeeping (issue 36): which scans' finding detail is removed as they age. A thinned
//! scan keeps its row (score, counts, gate result, commit), so the score history never
//! thins; only its findings go, and its finding pages answer `410 Gone`.
//!
//! The defaults follow SonarQube's: every scan of the last day, then the latest scan of each
//! day, of each week after a month, and of each month after a year. Some scans are never
//! thinned (see [`Protected`], and a line's latest scan, which its next push is compared
//! with); a pull request's scans go 30 days after its last push, and an inactive branch's after
//! 30 days (never the default branch's).

use serde::{Deserialize, Serialize};

use crate::retention::Age;
use crate::Millis;

use crate::time::DAY_MS as DAY;

/// What a thinned scan's finding endpoints say (`410 Gone`), in the API and the dashboard.
pub const THINNED_MESSAGE: &str = "This scan's findings were removed by housekeeping (older \
     scans keep one scan's findings a day, a week or a month); its score, counts and gate \
     result stay in the project's history. The project's later scans have their findings.";

/// How long detail is kept. Each age is counted back from now, by the scan's own time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Every scan younger than this keeps its detail.
    pub keep_all: Millis,
    /// Older than `keep_all`: the latest scan of each day; older than this, of each week.
    pub weekly_after: Millis,
    /// Older than this: the latest scan of each month.
    pub monthly_after: Millis,
    /// A pull request's scans lose their detail this long after its last push.
    pub pull_request_after: Millis,
    /// A branch other than the default loses its scans' detail this long after its last push.
    pub inactive_branch_after: Millis,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            keep_all: DAY,
            weekly_after: 30 * DAY,
            monthly_after: 365 * DAY,
            pull_request_after: 30 * DAY,
            inactive_branch_after: 30 * DAY,
        }
    }
}

impl Policy {
    /// The policy with the ages in `pairs` replaced: `name=age` pairs separated by commas
    /// (`keep_all=45d,weekly_after=90d`), each age an [`Age`] (`36h`, `2d`, `4w`), each name
    /// one of `keep_all`, `weekly_after`, `monthly_after`, `pull_request_after`,
    /// `inactive_branch_after`. Every pair is applied first and the whole policy checked
    /// once, so their order never matters. A malformed pair, an unknown name or a bad age is
    /// refused, naming it.
    pub fn with_pairs(mut self, pairs: &str) -> Result<Policy, String> {
        for pair in pairs.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, age) = pair
                .split_once('=')
                .ok_or_else(|| format!("{pair:?} is not name=age (e.g. keep_all=2d)"))?;
            self.set(name.trim(), age.trim())?;
        }
        self.check()?;
        Ok(self)
    }

    fn set(&mut self, name: &str, age: &str) -> Result<(), String> {
        let age = Age::parse(age)
            .map_err(|e| format!("{name}: {e}"))?
            .millis();
        let slot = match name {
            "keep_all" => &mut self.keep_all,
            "weekly_after" => &mut self.weekly_after,
            "monthly_after" => &mut self.monthly_after,
            "pull_request_after" => &mut self.pull_request_after,
            "inactive_branch_after" => &mut self.inactive_branch_after,
            other => {
                return Err(format!(
                    "{other:?} is not a housekeeping setting: keep_all, weekly_after, \
                     monthly_after, pull_request_after or inactive_branch_after"
                ))
            }
        };
        *slot = age;
        Ok(())
    }

    /// The three tiers follow each other: every scan, then one a day, a week, a month.
    fn check(&self) -> Result<(), String> {
        let age = |ms| Age::from_millis(ms);
        if self.keep_all > self.weekly_after {
            return Err(format!(
                "keep_all ({}) must not be longer than weekly_after ({})",
                age(self.keep_all),
                age(self.weekly_after)
            ));
        }
        if self.weekly_after > self.monthly_after {
            return Err(format!(
                "weekly_after ({}) must not be longer than monthly_after ({})",
                age(self.weekly_after),
                age(self.monthly_after)
            ));
        }
        Ok(())
    }

    /// Each setting's name and age.
    pub fn ages(&self) -> [(&'static str, Age); 5] {
        [
            ("keep_all", self.keep_all),
            ("weekly_after", self.weekly_after),
            ("monthly_after", self.monthly_after),
            ("pull_request_after", self.pull_request_after),
            ("inactive_branch_after", self.inactive_branch_after),
        ]
        .map(|(name, ms)| (name, Age::from_millis(ms)))
    }

    /// As an operator writes it (`keep_all=45d,…`), every age in the unit it was most likely
    /// given in: what the audit log and the CLI show.
    pub fn to_pairs(&self) -> String {
        self.ages()
            .map(|(name, age)| format!("{name}={age}"))
            .join(",")
    }
}

/// What kind of line a scan is on, and when it was last pushed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line {
    pub is_default: bool,
    pub is_pull_request: bool,
    pub last_push_at: Millis,
}

/// Why a scan keeps its detail whatever its age.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Protected {
    /// A branch's or pull request's scans were compared against it.
    pub compared_against: bool,
    /// The audit log or a triage decision refers to it.
    pub referred_to: bool,
}

/// One scan of a line, oldest first, as housekeeping sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineScan {
    pub seq: i64,
    pub scanned_at: Millis,
    /// The gate's verdict (`passed`, `failed`, or `None`: no gate).
    pub gate: Option<String>,
    pub protected: Protected,
    /// Its detail is gone already.
    pub thinned: bool,
}

/// The scans of one line (oldest first) whose detail goes now: their `seq`s.
pub fn to_thin(line: Line, scans: &[LineScan], now: Millis, policy: &Policy) -> Vec<i64> {
    let Some(latest) = scans.last() else {
        return Vec::new();
    };
    let quiet = now - line.last_push_at;
    let line_gone = !line.is_default
        && if line.is_pull_request {
            quiet >= policy.pull_request_after
        } else {
            quiet >= policy.inactive_branch_after
        };
    let mut thin = Vec::new();
    for (i, scan) in scans.iter().enumerate() {
        if scan.thinned || scan.protected.compared_against || scan.protected.referred_to {
            continue;
        }
        // A line's latest scan is what its next push is compared with (a gate's "new
        // findings" too), even on a line that has gone quiet.
        if scan.seq == latest.seq {
            continue;
        }
        // Where the gate's verdict changed, passed to failed or back.
        let previous_gate = i.checked_sub(1).map(|p| &scans[p].gate);
        if previous_gate.is_some_and(|g| g != &scan.gate) {
            continue;
        }
        let age = now - scan.scanned_at;
        let keep = !line_gone
            && match bucket(scan.scanned_at, age, policy) {
                None => true,
                // The latest of its day, week or month keeps its detail.
                Some(b) => scans.get(i + 1).is_none_or(|next| {
                    bucket(next.scanned_at, now - next.scanned_at, policy) != Some(b)
                }),
            };
        if !keep {
            thin.push(scan.seq);
        }
    }
    thin
}

/// The day, week or month (by its first millisecond, UTC) a scan of this age shares with the
/// others whose latest keeps its detail; `None` while every scan keeps it.
fn bucket(at: Millis, age: Millis, policy: &Policy) -> Option<(u8, Millis)> {
    if age < policy.keep_all {
        return None;
    }
    let day = at.div_euclid(DAY);
    if age < policy.weekly_after {
        return Some((0, day));
    }
    if age < policy.monthly_after {
        // Weeks start on Monday: 1970-01-01 was a Thursday.
        return Some((1, (day + 3).div_euclid(7)));
    }
    let date = chrono::DateTime::from_timestamp_millis(at).map(|t| t.date_naive());
    let month = date.map_or(0, |d| {
        use chrono::Datelike;
        Millis::from(d.year()) * 12 + Millis::from(d.month0())
    });
    Some((2, month))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Millis = 1_800_000_000_000; // 2027-01-15 08:00 UTC
    const HOUR: Millis = 3_600_000;

    fn scan(seq: i64, age: Millis) -> LineScan {
        LineScan {
            seq,
            scanned_at: NOW - age,
            gate: None,
            protected: Protected::default(),
            thinned: false,
        }
    }

    fn main_line() -> Line {
        Line {
            is_default: true,
            is_pull_request: false,
            last_push_at: NOW,
        }
    }

    fn thin(line: Line, scans: &[LineScan]) -> Vec<i64> {
        to_thin(line, scans, NOW, &Policy::default())
    }

    #[test]
    fn the_last_day_keeps_every_scan() {
        let scans: Vec<_> = (0..10).map(|i| scan(i, DAY - 1 - i * HOUR)).collect();
        assert!(thin(main_line(), &scans).is_empty());
    }

    #[test]
    fn after_a_day_the_latest_scan_of_each_day_keeps_its_detail() {
        // Three scans on the day before yesterday, two yesterday (all over a day old), one now.
        let day = |d: Millis, h: Millis| {
            let midnight = (NOW - d * DAY).div_euclid(DAY) * DAY;
            NOW - (midnight + h * HOUR)
        };
        let scans = [
            scan(1, day(3, 1)),
            scan(2, day(3, 5)),
            scan(3, day(3, 20)),
            scan(4, day(2, 2)),
            scan(5, day(2, 3)),
            scan(6, 0),
        ];
        assert_eq!(thin(main_line(), &scans), [1, 2, 4]);
    }

    #[test]
    fn the_boundaries_fall_where_the_policy_says() {
        // Exactly a day old: daily. Just under: kept.
        assert_eq!(
            thin(main_line(), &[scan(1, DAY), scan(2, DAY), scan(3, 0)]),
            [1]
        );
        assert!(thin(
            main_line(),
            &[scan(1, DAY - 1), scan(2, DAY - 1), scan(3, 0)]
        )
        .is_empty());
        // Thirty days and more: one a week (two scans of one Monday-to-Sunday week).
        let monday = (NOW - 40 * DAY).div_euclid(DAY) * DAY;
        let monday = monday - ((monday / DAY + 3).rem_euclid(7)) * DAY;
        let in_week = |d: Millis| NOW - (monday + d * DAY + HOUR);
        assert_eq!(
            thin(
                main_line(),
                &[
                    scan(1, in_week(0)),
                    scan(2, in_week(6)),
                    scan(3, in_week(7)),
                    scan(4, 0)
                ]
            ),
            [1]
        );
        // A year and more: one a month.
        let scans = [
            scan(1, 400 * DAY),
            scan(2, 399 * DAY),
            scan(3, 300 * DAY),
            scan(4, 0),
        ];
        let thinned = thin(main_line(), &scans);
        assert_eq!(thinned.len(), 1, "{thinned:?}");
    }

    #[test]
    fn protected_scans_and_gate_changes_keep_their_detail() {
        let mut scans: Vec<_> = (1..=6).map(|i| scan(i, 10 * DAY + i * HOUR)).collect();
        scans.reverse(); // oldest first
        for (s, seq) in scans.iter_mut().zip(1..) {
            s.seq = seq;
        }
        scans[0].protected.compared_against = true;
        scans[1].protected.referred_to = true;
        scans[3].gate = Some("failed".into()); // passed -> failed at 4
        scans[4].gate = Some("failed".into());
        // 6 is the latest of its day and the line's latest; 5 the same failed verdict as 4.
        assert_eq!(thin(main_line(), &scans), [3, 5]);
    }

    #[test]
    fn a_quiet_pull_request_or_branch_loses_its_detail_but_never_the_default_branch() {
        let scans = [scan(1, 45 * DAY), scan(2, 35 * DAY)];
        let quiet = NOW - 35 * DAY;
        let pr = Line {
            is_default: false,
            is_pull_request: true,
            last_push_at: quiet,
        };
        // All but the latest, which the next push would be compared with.
        assert_eq!(thin(pr, &scans), [1]);
        let branch = Line {
            is_pull_request: false,
            ..pr
        };
        assert_eq!(thin(branch, &scans), [1]);
        let recent = Line {
            last_push_at: NOW - 29 * DAY,
            ..branch
        };
        assert!(thin(recent, &scans).is_empty());
        let main = Line {
            is_default: true,
            ..branch
        };
        assert!(
            thin(main, &scans).is_empty(),
            "the default line keeps its latest scans"
        );
        // Still, what a scan was compared against stays.
        let mut kept = scans.clone();
        kept[0].protected.compared_against = true;
        assert!(thin(pr, &kept).is_empty());
    }

    #[test]
    fn thinned_scans_are_not_thinned_again() {
        let mut scans = [scan(1, 3 * DAY), scan(2, 3 * DAY), scan(3, 0)];
        scans[0].thinned = true;
        assert!(thin(main_line(), &scans).is_empty());
    }

    #[test]
    fn policies_are_overridden_by_name_and_checked() {
        let p = Policy::default().with_pairs("keep_all=3d").unwrap();
        assert_eq!(p.keep_all, 3 * DAY);
        assert!(Policy::default()
            .with_pairs("keep_al=3d")
            .unwrap_err()
            .contains("keep_all"));
        assert_eq!(
            Policy::default().with_pairs("keep_all=60d").unwrap_err(),
            "keep_all (60d) must not be longer than weekly_after (30d)"
        );
        assert!(Policy::default()
            .with_pairs("monthly_after=soon")
            .unwrap_err()
            .starts_with("monthly_after: "));
        assert!(Policy::default().with_pairs("keep_all").is_err());
        assert_eq!(Policy::default().with_pairs(" , "), Ok(Policy::default()));
        let hours = Policy::default()
            .with_pairs("keep_all=12h,pull_request_after=36h")
            .unwrap();
        assert_eq!(
            (hours.keep_all, hours.pull_request_after),
            (12 * HOUR, 36 * HOUR)
        );
    }

    const NAMES: [&str; 5] = [
        "keep_all",
        "weekly_after",
        "monthly_after",
        "pull_request_after",
        "inactive_branch_after",
    ];

    /// Every order of `pairs`, the way Heap's algorithm visits them.
    fn orders(pairs: &[String]) -> Vec<Vec<String>> {
        fn heap(k: usize, a: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
            if k <= 1 {
                out.push(a.clone());
                return;
            }
            for i in 0..k {
                heap(k - 1, a, out);
                a.swap(if k.is_multiple_of(2) { i } else { 0 }, k - 1);
            }
        }
        let mut out = Vec::new();
        heap(pairs.len(), &mut pairs.to_vec(), &mut out);
        out
    }

    proptest::proptest! {
        /// Any subset of the five settings, in any unit, in every order: the same policy, or
        /// the same refusal, whatever the order (issue 44: `keep_all=45d,weekly_after=90d`
        /// was refused because each pair was checked over the defaults).
        #[test]
        fn the_order_of_the_pairs_never_matters(
            ages in proptest::collection::vec(
                proptest::option::of((1i64..2000, proptest::sample::select(vec!['h', 'd', 'w']))),
                5,
            )
        ) {
            let pairs: Vec<String> = NAMES
                .iter()
                .zip(&ages)
                .filter_map(|(name, age)| age.map(|(n, unit)| format!("{name}={n}{unit}")))
                .collect();
            let first = Policy::default().with_pairs(&pairs.join(","));
            for order in orders(&pairs) {
                proptest::prop_assert_eq!(&Policy::default().with_pairs(&order.join(",")), &first);
            }
            // A policy accepted is the one written, and written back it reads the same.
            if let Ok(p) = first {
                let tiers_ok = p.keep_all <= p.weekly_after && p.weekly_after <= p.monthly_after;
                proptest::prop_assert!(tiers_ok);
                let fields = [p.keep_all, p.weekly_after, p.monthly_after, p.pull_request_after,
                    p.inactive_branch_after];
                for (field, age) in fields.iter().zip(&ages) {
                    if let Some((n, unit)) = age {
                        let per = match unit { 'h' => HOUR, 'd' => DAY, _ => 7 * DAY };
                        proptest::prop_assert_eq!(*field, n * per);
                    }
                }
                proptest::prop_assert_eq!(Policy::default().with_pairs(&p.to_pairs()), Ok(p));
            }
        }
    }

    #[test]
    fn a_longer_keep_all_with_a_longer_weekly_after_is_accepted_in_either_order() {
        for pairs in [
            "keep_all=45d,weekly_after=90d",
            "weekly_after=90d,keep_all=45d",
        ] {
            let p = Policy::default().with_pairs(pairs).unwrap();
            assert_eq!(
                (p.keep_all, p.weekly_after),
                (45 * DAY, 90 * DAY),
                "{pairs}"
            );
        }
    }
}
