//! The account on one page: open findings by severity over time across projects, from each
//! project's default-branch scans.

use std::collections::HashMap;

use crate::Millis;

pub use crate::time::DAY_MS as DAY;

/// One scan of a project's default branch: its time and its counts (critical, high, medium,
/// low).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanCounts {
    pub project: String,
    pub at: Millis,
    pub counts: [i64; 4],
}

/// Each of the `days` days up to and including `now`'s (UTC), with the open findings of every
/// project as its latest scan by the end of that day said, summed. A project counts from its
/// first scan on. `scans` may come in any order.
pub fn daily_severity(scans: &[ScanCounts], days: usize, now: Millis) -> Vec<(Millis, [i64; 4])> {
    let mut ordered: Vec<&ScanCounts> = scans.iter().collect();
    ordered.sort_by_key(|s| s.at);
    let today_end = (now.div_euclid(DAY) + 1) * DAY;
    let mut latest: HashMap<&str, [i64; 4]> = HashMap::new();
    let mut next = ordered.into_iter().peekable();
    (0..days)
        .map(|i| {
            let end = today_end - (days - 1 - i) as Millis * DAY;
            while let Some(scan) = next.next_if(|s| s.at < end) {
                latest.insert(&scan.project, scan.counts);
            }
            let mut sum = [0; 4];
            for counts in latest.values() {
                for (total, n) in sum.iter_mut().zip(counts) {
                    *total += n;
                }
            }
            (end - DAY, sum)
        })
        .collect()
}

/// Each of the `days` days from `first` (days since 1970, UTC) with the running total of
/// `changes` up to and including it. `changes` holds each day's change, oldest first; days
/// before `first` count towards every total.
pub fn running_totals(
    changes: &[(i64, [i64; 4])],
    first: i64,
    days: usize,
) -> Vec<(i64, [i64; 4])> {
    let mut total = [0; 4];
    let mut next = changes.iter().peekable();
    (first..first + days as i64)
        .map(|day| {
            while let Some((_, change)) = next.next_if(|(d, _)| *d <= day) {
                for (sum, n) in total.iter_mut().zip(change) {
                    *sum += n;
                }
            }
            (day, total)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(project: &str, day: i64, counts: [i64; 4]) -> ScanCounts {
        ScanCounts {
            project: project.into(),
            at: day * DAY + crate::time::HOUR_MS,
            counts,
        }
    }

    #[test]
    fn each_day_sums_every_projects_latest_scan() {
        let now = 10 * DAY + 5_000;
        let scans = [
            scan("b", 9, [0, 0, 1, 0]),
            scan("a", 7, [1, 2, 0, 0]),
            scan("a", 9, [0, 1, 0, 0]),
            // Later today: counts for today.
            scan("b", 10, [0, 0, 0, 4]),
        ];
        let days = daily_severity(&scans, 5, now);
        assert_eq!(days.len(), 5);
        assert_eq!(days[0], (6 * DAY, [0, 0, 0, 0]), "before any scan");
        assert_eq!(days[1], (7 * DAY, [1, 2, 0, 0]));
        assert_eq!(days[2], (8 * DAY, [1, 2, 0, 0]), "carried forward");
        assert_eq!(
            days[3],
            (9 * DAY, [0, 1, 1, 0]),
            "a's newer scan replaces its older"
        );
        assert_eq!(days[4], (10 * DAY, [0, 1, 0, 4]));
    }

    #[test]
    fn running_totals_carry_the_days_before_the_window() {
        let changes = [(3, [1, 0, 0, 0]), (9, [0, 2, 0, 0]), (11, [-1, 0, 0, 5])];
        let days = running_totals(&changes, 10, 3);
        assert_eq!(
            days,
            vec![(10, [1, 2, 0, 0]), (11, [0, 2, 0, 5]), (12, [0, 2, 0, 5])]
        );
        assert_eq!(running_totals(&[], 10, 2), vec![(10, [0; 4]), (11, [0; 4])]);
    }
}
