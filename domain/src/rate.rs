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

/// Who a per-address limit counts: an IPv4 address, or an IPv6 client's /64 (one subscriber
/// line or host usually holds a whole /64, so counting single addresses would give each
/// client 2^64 budgets). IPv4-mapped IPv6 addresses count as their IPv4 address.
pub fn rate_subject(ip: std::net::IpAddr) -> String {
    match ip {
        std::net::IpAddr::V4(v4) => v4.to_string(),
        std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                let prefix = std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0);
                format!("{prefix}/64")
            }
        },
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

    #[test]
    fn ipv6_clients_count_per_64() {
        let subject = |s: &str| rate_subject(s.parse().unwrap());
        assert_eq!(subject("203.0.113.9"), "203.0.113.9");
        assert_eq!(subject("::ffff:203.0.113.9"), "203.0.113.9");
        assert_eq!(subject("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
        assert_eq!(
            subject("2001:db8:1:2:ffff:ffff:ffff:ffff"),
            subject("2001:db8:1:2::7")
        );
        assert_ne!(subject("2001:db8:1:3::1"), subject("2001:db8:1:2::1"));
    }
}
