//! When a project's history has gone quiet: the projects page tags a project whose last scan
//! is a week old or more, so a pipeline that stopped pushing is noticed.

use crate::Millis;

/// Days without a scan after which a project is stale.
pub const STALE_AFTER_DAYS: i64 = 7;

use crate::time::DAY_MS;

/// Whole days since the last scan, when there are at least [`STALE_AFTER_DAYS`] of them;
/// `None` while the project is fresh, and for a project never scanned (it has no history to
/// go quiet).
pub fn stale_days(last_scan: Option<Millis>, now: Millis) -> Option<i64> {
    let days = (now - last_scan?).div_euclid(DAY_MS);
    (days >= STALE_AFTER_DAYS).then_some(days)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_week_without_a_scan_is_stale() {
        let now = 100 * DAY_MS;
        assert_eq!(stale_days(None, now), None);
        assert_eq!(stale_days(Some(now), now), None);
        assert_eq!(stale_days(Some(now - 7 * DAY_MS + 1), now), None);
        assert_eq!(stale_days(Some(now - 7 * DAY_MS), now), Some(7));
        assert_eq!(stale_days(Some(now - 40 * DAY_MS - 5), now), Some(40));
        // A scan dated in the future (a skewed CI clock) is not stale.
        assert_eq!(stale_days(Some(now + DAY_MS), now), None);
    }
}
