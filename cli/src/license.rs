//! The scanner's local license mode, exactly as the interface's state table says:
//!
//! | state | trigger | condition | next |
//! |---|---|---|---|
//! | licensed | validation succeeds | `valid` is true | licensed, cached for 24 h |
//! | licensed | scan run | cache older than 24 h, or explicit activation | the endpoint is called |
//! | licensed | endpoint unreachable | under 7 days since the last success | licensed (cached) |
//! | licensed | endpoint unreachable | 7 days without success | unlicensed |
//!
//! A definitive answer (`404 license_not_found`, or `valid: false`) downgrades at once.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use tidemark_wire::ValidateResponse;

pub const CACHE_TTL: Duration = Duration::hours(24);
pub const OFFLINE_GRACE: Duration = Duration::days(7);

/// A successful validation and when it happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CachedValidation {
    pub result: ValidateResponse,
    pub validated_at: DateTime<Utc>,
}

/// Whether to call the validation endpoint now.
pub fn needs_validation(
    now: DateTime<Utc>,
    cache: Option<&CachedValidation>,
    explicit: bool,
) -> bool {
    match cache {
        _ if explicit => true,
        None => true,
        Some(c) => now - c.validated_at > CACHE_TTL,
    }
}

/// What the validation endpoint said, reduced to what the state machine needs.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Answered(ValidateResponse),
    /// `404 license_not_found` (or another definitive refusal).
    Refused(String),
    /// Connection refused, DNS failure, timeout or a 5xx: no answer.
    Unreachable(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    Licensed {
        validation: CachedValidation,
        /// True when the endpoint could not be reached and the cache is in use.
        offline: bool,
    },
    Unlicensed {
        reason: String,
    },
}

impl Mode {
    pub fn is_licensed(&self) -> bool {
        matches!(self, Mode::Licensed { .. })
    }
}

/// The mode from the cache alone (no call made).
pub fn from_cache(now: DateTime<Utc>, cache: Option<&CachedValidation>) -> Mode {
    match cache {
        Some(c) if c.result.valid && now - c.validated_at < OFFLINE_GRACE => Mode::Licensed {
            validation: c.clone(),
            offline: false,
        },
        Some(_) => Mode::Unlicensed {
            reason: "the cached validation is too old; run `tidemark status` while online".into(),
        },
        None => Mode::Unlicensed {
            reason: "this machine is not activated; run `tidemark activate`".into(),
        },
    }
}

/// The next cache and mode after a call to the endpoint.
pub fn after_validation(
    now: DateTime<Utc>,
    cache: Option<&CachedValidation>,
    outcome: Outcome,
) -> (Option<CachedValidation>, Mode) {
    match outcome {
        Outcome::Answered(result) if result.valid => {
            let validation = CachedValidation {
                result,
                validated_at: now,
            };
            (
                Some(validation.clone()),
                Mode::Licensed {
                    validation,
                    offline: false,
                },
            )
        }
        Outcome::Answered(result) => (
            None,
            Mode::Unlicensed {
                reason: format!(
                    "the license is not valid (expired or suspended; expiry {}). Renew it, then run `tidemark activate`",
                    result.expiry
                ),
            },
        ),
        Outcome::Refused(why) => (
            None,
            Mode::Unlicensed {
                reason: format!("the service refused the license: {why}"),
            },
        ),
        Outcome::Unreachable(why) => match cache {
            Some(c) if c.result.valid && now - c.validated_at < OFFLINE_GRACE => (
                Some(c.clone()),
                Mode::Licensed {
                    validation: c.clone(),
                    offline: true,
                },
            ),
            _ => (
                cache.cloned(),
                Mode::Unlicensed {
                    reason: format!(
                        "the license service has been unreachable for 7 days or more ({why}); \
                         connect to the network and run `tidemark status`"
                    ),
                },
            ),
        },
    }
}

/// Time left in the offline grace, from the last successful validation.
pub fn grace_left(now: DateTime<Utc>, cache: &CachedValidation) -> Duration {
    (cache.validated_at + OFFLINE_GRACE - now).max(Duration::zero())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tidemark_wire::{Feature, Tier};

    fn t0() -> DateTime<Utc> {
        "2026-11-01T00:00:00Z".parse().unwrap()
    }

    fn valid() -> ValidateResponse {
        ValidateResponse {
            valid: true,
            tier: Tier::Team,
            features: vec![Feature::HostedDashboard, Feature::DriftDetection],
            expiry: "2027-11-01T00:00:00Z".into(),
            bundle_url: None,
            bundle_checksum: None,
        }
    }

    fn cache_at(at: DateTime<Utc>) -> CachedValidation {
        CachedValidation {
            result: valid(),
            validated_at: at,
        }
    }

    #[test]
    fn a_fresh_cache_is_used_and_a_stale_one_is_revalidated() {
        let cache = cache_at(t0());
        assert!(!needs_validation(t0(), Some(&cache), false));
        let almost = t0() + Duration::hours(23) + Duration::minutes(59);
        assert!(
            !needs_validation(almost, Some(&cache), false),
            "23 h 59 m: cached"
        );
        let past = t0() + Duration::hours(24) + Duration::minutes(1);
        assert!(
            needs_validation(past, Some(&cache), false),
            "24 h 01 m: validate"
        );
        assert!(
            needs_validation(t0(), Some(&cache), true),
            "explicit activation validates"
        );
        assert!(needs_validation(t0(), None, false));
        assert!(from_cache(almost, Some(&cache)).is_licensed());
    }

    #[test]
    fn a_successful_validation_is_cached_with_its_time() {
        let now = t0() + Duration::days(3);
        let (cache, mode) = after_validation(now, None, Outcome::Answered(valid()));
        assert_eq!(cache.as_ref().unwrap().validated_at, now);
        assert_eq!(
            mode,
            Mode::Licensed {
                validation: cache.unwrap(),
                offline: false
            }
        );
    }

    #[test]
    fn an_outage_keeps_the_license_for_under_seven_days() {
        let cache = cache_at(t0());
        let still = t0() + Duration::days(6) + Duration::hours(23);
        let (kept, mode) =
            after_validation(still, Some(&cache), Outcome::Unreachable("timeout".into()));
        assert!(
            matches!(mode, Mode::Licensed { offline: true, .. }),
            "6 d 23 h: {mode:?}"
        );
        assert_eq!(
            kept.as_ref(),
            Some(&cache),
            "the last success time is not moved"
        );
        assert_eq!(grace_left(still, &cache), Duration::hours(1));

        let gone = t0() + Duration::days(7) + Duration::minutes(1);
        let (_, mode) = after_validation(gone, Some(&cache), Outcome::Unreachable("dns".into()));
        assert!(
            matches!(mode, Mode::Unlicensed { .. }),
            "7 d 01 m: {mode:?}"
        );
        assert!(!from_cache(gone, Some(&cache)).is_licensed());
        let (_, mode) = after_validation(t0(), None, Outcome::Unreachable("refused".into()));
        assert!(
            !mode.is_licensed(),
            "never validated: nothing to fall back on"
        );
    }

    #[test]
    fn a_definitive_refusal_downgrades_at_once() {
        let cache = cache_at(t0());
        let soon = t0() + Duration::hours(25);
        let (kept, mode) = after_validation(
            soon,
            Some(&cache),
            Outcome::Refused("license_not_found".into()),
        );
        assert!(kept.is_none());
        assert!(!mode.is_licensed());
        let mut expired = valid();
        expired.valid = false;
        expired.features.clear();
        let (kept, mode) = after_validation(soon, Some(&cache), Outcome::Answered(expired));
        assert!(kept.is_none());
        match mode {
            Mode::Unlicensed { reason } => assert!(reason.contains("not valid"), "{reason}"),
            other => panic!("{other:?}"),
        }
    }
}
