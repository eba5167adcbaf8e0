//! The last word on an append that was planned against a snapshot.
//!
//! Where pushes to different projects of one account are written side by side (PostgreSQL),
//! each plans from what it read, and the account-wide limits (the write budget and the
//! project cap) are checked once more at the end, one push at a time, counting every append
//! committed before it and its own. The push is admitted only if it still fits: so ten
//! concurrent pushes with a budget of five append exactly five, as if written one by one.

use crate::rate::{RateDecision, RollingLimit};
use crate::Millis;

/// What the account holds once this push's own writes are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counted {
    /// Appends inside the rate window, this one included.
    pub writes_in_window: u32,
    /// When the oldest of them was received.
    pub oldest_write: Option<Millis>,
    /// For a push that creates a project under a cap: the account's active projects, the new
    /// one included. `None` when the push creates none, or the licence has no cap.
    pub active_projects: Option<(u64, u64)>,
}

/// Whether the planned append stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// It stands; the budget left after it.
    Admitted { remaining: u32, reset_secs: u64 },
    /// Appends committed meanwhile spent the budget.
    RateLimited { retry_after_secs: u64 },
    /// Projects created meanwhile reached the cap.
    ProjectLimitReached { cap: u64 },
}

/// Decides in the order `decide_push` does: the budget before the cap.
pub fn admit(limit: &RollingLimit, now: Millis, counted: Counted) -> Admission {
    let before = counted.writes_in_window.saturating_sub(1);
    let (remaining, reset_secs) = match limit.decide(now, before, counted.oldest_write) {
        RateDecision::Allow {
            remaining,
            reset_secs,
        } => (remaining, reset_secs),
        RateDecision::Refuse { retry_after_secs } => {
            return Admission::RateLimited { retry_after_secs }
        }
    };
    if let Some((cap, active)) = counted.active_projects {
        if active > cap {
            return Admission::ProjectLimitReached { cap };
        }
    }
    Admission::Admitted {
        remaining,
        reset_secs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Millis = 1_800_000_000_000;

    fn counted(writes: u32, active: Option<(u64, u64)>) -> Counted {
        Counted {
            writes_in_window: writes,
            oldest_write: Some(NOW - 30_000),
            active_projects: active,
        }
    }

    #[test]
    fn the_push_that_fills_the_budget_stands_and_the_next_does_not() {
        let limit = RollingLimit::per_minute(5);
        assert_eq!(
            admit(&limit, NOW, counted(5, None)),
            Admission::Admitted {
                remaining: 0,
                reset_secs: 30
            }
        );
        assert_eq!(
            admit(&limit, NOW, counted(6, None)),
            Admission::RateLimited {
                retry_after_secs: 30
            }
        );
    }

    #[test]
    fn the_first_write_of_a_window_resets_a_window_from_now() {
        let limit = RollingLimit::per_minute(5);
        let only = Counted {
            writes_in_window: 1,
            oldest_write: Some(NOW),
            active_projects: None,
        };
        assert_eq!(
            admit(&limit, NOW, only),
            Admission::Admitted {
                remaining: 4,
                reset_secs: 60
            }
        );
    }

    #[test]
    fn a_new_project_may_reach_the_cap_but_not_pass_it() {
        let limit = RollingLimit::per_minute(100);
        assert!(matches!(
            admit(&limit, NOW, counted(1, Some((3, 3)))),
            Admission::Admitted { .. }
        ));
        assert_eq!(
            admit(&limit, NOW, counted(1, Some((3, 4)))),
            Admission::ProjectLimitReached { cap: 3 }
        );
    }

    #[test]
    fn the_budget_is_judged_before_the_cap() {
        let limit = RollingLimit::per_minute(1);
        assert!(matches!(
            admit(&limit, NOW, counted(2, Some((1, 2)))),
            Admission::RateLimited { .. }
        ));
    }
}
