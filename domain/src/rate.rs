//! Rolling-window rate-limit arithmetic. The counting itself happens in the database so that
//! every replica shares one budget; these functions decide from what it counted.

use crate::Millis;

/// A limit of `limit` events per rolling `window_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RollingLimit {
    pub limit: u32,
    pub window_ms: Millis,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateDecision {
    /// Allowed; `remaining` events are left in the window after this one.
    Allow { remaining: u32, reset_secs: u64 },
    /// Refused; retry after this many seconds.
    Refuse { retry_after_secs: u64 },
}

impl RollingLimit {
    pub fn per_minute(limit: u32) -> Self {
        Self {
            limit,
            window_ms: 60_000,
        }
    }

    /// Where the window of an event at `now` begins (exclusive).
    pub fn window_start(&self, now: Millis) -> Millis {
        now - self.window_ms
    }

    /// Decides for one more event, given how many events the window already holds and the
    /// time of the oldest of them.
    pub fn decide(&self, now: Millis, in_window: u32, oldest: Option<Millis>) -> RateDecision {
        let reset_secs = oldest
            .map(|o| secs_until(now, o + self.window_ms))
            .unwrap_or(secs_until(now, now + self.window_ms));
        if in_window < self.limit {
            RateDecision::Allow {
                remaining: self.limit - in_window - 1,
                reset_secs,
            }
        } else {
            RateDecision::Refuse {
                retry_after_secs: reset_secs,
            }
        }
    }
}

/// Whole seconds from `now` until `at`, rounded up, at least 1.
pub fn secs_until(now: Millis, at: Millis) -> u64 {
    let ms = (at - now).max(0) as u64;
    ms.div_ceil(1000).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allows_up_to_the_limit_then_says_when_to_retry() {
        let l = RollingLimit::per_minute(5);
        assert_eq!(
            l.decide(10_000, 0, None),
            RateDecision::Allow {
                remaining: 4,
                reset_secs: 60
            }
        );
        assert!(matches!(
            l.decide(10_000, 4, Some(1_000)),
            RateDecision::Allow { remaining: 0, .. }
        ));
        // Oldest event at 1 s, window 60 s, now 10 s: the slot frees at 61 s.
        assert_eq!(
            l.decide(10_000, 5, Some(1_000)),
            RateDecision::Refuse {
                retry_after_secs: 51
            }
        );
        assert_eq!(secs_until(0, 1), 1);
        assert_eq!(secs_until(0, 1001), 2);
        assert_eq!(secs_until(5, 0), 1);
    }
}
