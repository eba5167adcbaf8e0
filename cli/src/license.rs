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
//!
//! Every decision is taken from a **signed verdict** whose signature the caller has verified
//! (`verdict.rs`), never from fields of a file the user can edit: the cache holds the verdict
//! as the service signed it, the offline grace ends at the verdict's own `exp`, and the
//! newest time this machine has seen is kept so that a clock moved back is noticed.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Deserializer, Serialize};
use tidemark_wire::verdict::VerdictClaims;

pub const CACHE_TTL: Duration = Duration::hours(24);
pub const OFFLINE_GRACE: Duration = Duration::days(7);
/// Clock skew tolerated before a clock is taken to have moved back.
pub const CLOCK_LEEWAY: Duration = Duration::minutes(5);

/// Where a verdict came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// `validate` or `activate`: trusted for the offline grace, refreshed daily.
    Validation,
    /// An offline licence file (`tidemark activate --offline`): trusted until its `exp`.
    OfflineFile,
}

impl Kind {
    pub fn typ(self) -> &'static str {
        match self {
            Kind::Validation => tidemark_wire::verdict::VERDICT_TYP,
            Kind::OfflineFile => tidemark_wire::verdict::OFFLINE_VERDICT_TYP,
        }
    }
}

/// The cache as stored: the signed verdict itself, and the clock guard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CachedValidation {
    /// The compact JWS the service signed.
    pub verdict: String,
    pub kind: Kind,
    /// The newest time this machine has seen (the clock-rollback guard).
    pub newest_seen: DateTime<Utc>,
}

/// A cache written by a client older than signed verdicts reads as no cache (it is
/// validated again online), not as a damaged file.
pub fn lenient<'de, D: Deserializer<'de>>(d: D) -> Result<Option<CachedValidation>, D::Error> {
    let value = Option::<serde_json::Value>::deserialize(d)?;
    Ok(value.and_then(|v| serde_json::from_value(v).ok()))
}

/// A verdict whose signature, key, licence and machine have been checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub claims: VerdictClaims,
    pub jws: String,
    pub kind: Kind,
}

impl Verdict {
    pub fn issued_at(&self) -> DateTime<Utc> {
        DateTime::from_timestamp(self.claims.iat, 0).unwrap_or_default()
    }

    /// The end of the offline grace (a file's expiry).
    pub fn good_until(&self) -> DateTime<Utc> {
        DateTime::from_timestamp(self.claims.exp, 0).unwrap_or_default()
    }

    pub fn to_cache(&self, newest_seen: DateTime<Utc>) -> CachedValidation {
        CachedValidation {
            verdict: self.jws.clone(),
            kind: self.kind,
            newest_seen: newest_seen.max(self.issued_at()),
        }
    }
}

/// Whether to call the validation endpoint now. An offline licence file has no service to
/// call.
pub fn needs_validation(now: DateTime<Utc>, cache: Option<&Verdict>, explicit: bool) -> bool {
    match cache {
        Some(v) if v.kind == Kind::OfflineFile => false,
        _ if explicit => true,
        None => true,
        Some(v) => now - v.issued_at() > CACHE_TTL,
    }
}

/// What the validation endpoint said, reduced to what the state machine needs.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A verdict that verified.
    Answered(Box<Verdict>),
    /// `404 license_not_found` (or another definitive refusal).
    Refused(String),
    /// Connection refused, DNS failure, timeout, a 5xx, or an answer whose verdict did not
    /// verify: no answer to go by.
    Unreachable(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    Licensed {
        verdict: Box<Verdict>,
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

/// Whether `verdict` licenses this machine at `now`, given the newest time seen before.
pub fn judge(
    now: DateTime<Utc>,
    verdict: &Verdict,
    newest_seen: DateTime<Utc>,
) -> Result<(), String> {
    let c = &verdict.claims;
    let seen = newest_seen.max(verdict.issued_at());
    if now + CLOCK_LEEWAY < seen {
        return Err(format!(
            "this machine's clock says {}, but it has already seen {}: the clock was moved \
             back. Set the clock right, then run `tidemark status`",
            now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            seen.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        ));
    }
    if !c.valid {
        return Err(format!(
            "the license is not valid ({}; expiry {}). Renew it, then run `tidemark activate`",
            c.status, c.expiry
        ));
    }
    if verdict.kind == Kind::Validation
        && verdict.good_until() - verdict.issued_at() > OFFLINE_GRACE
    {
        return Err(
            "the cached verdict claims a longer life than the offline grace; run \
                    `tidemark status` while online"
                .into(),
        );
    }
    if now >= verdict.good_until() {
        return Err(match verdict.kind {
            Kind::Validation => "the license service has been unreachable for 7 days or more; \
                 connect to the network and run `tidemark status`"
                .into(),
            Kind::OfflineFile => format!(
                "the offline licence file expired at {}; ask your admin for a new one",
                verdict
                    .good_until()
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            ),
        });
    }
    Ok(())
}

/// The mode from the cache alone (no call made). `cache` is the verified cache, or why it
/// could not be verified.
pub fn from_cache(
    now: DateTime<Utc>,
    cache: Result<Option<&Verdict>, &str>,
    newest_seen: DateTime<Utc>,
) -> Mode {
    match cache {
        Ok(Some(v)) => match judge(now, v, newest_seen) {
            Ok(()) => Mode::Licensed {
                verdict: Box::new(v.clone()),
                offline: false,
            },
            Err(reason) => Mode::Unlicensed { reason },
        },
        Ok(None) => Mode::Unlicensed {
            reason: "this machine is not activated; run `tidemark activate`".into(),
        },
        Err(why) => Mode::Unlicensed {
            reason: format!("{why}; run `tidemark status` while online, or `tidemark activate`"),
        },
    }
}

/// The next cache and mode after a call to the endpoint.
pub fn after_validation(
    now: DateTime<Utc>,
    cache: Result<Option<&Verdict>, &str>,
    newest_seen: DateTime<Utc>,
    outcome: Outcome,
) -> (Option<Verdict>, Mode) {
    match outcome {
        Outcome::Answered(verdict) => match judge(now, &verdict, newest_seen) {
            Ok(()) => (
                Some((*verdict).clone()),
                Mode::Licensed {
                    verdict,
                    offline: false,
                },
            ),
            Err(reason) if verdict.claims.valid => (None, Mode::Unlicensed { reason }),
            Err(_) => (
                None,
                Mode::Unlicensed {
                    reason: format!(
                        "the license is not valid (expired or suspended; expiry {}). Renew it, \
                         then run `tidemark activate`",
                        verdict.claims.expiry
                    ),
                },
            ),
        },
        Outcome::Refused(why) => (
            None,
            Mode::Unlicensed {
                reason: format!("the service refused the license: {why}"),
            },
        ),
        Outcome::Unreachable(why) => match cache {
            Ok(Some(v)) => match judge(now, v, newest_seen) {
                Ok(()) => (
                    Some(v.clone()),
                    Mode::Licensed {
                        verdict: Box::new(v.clone()),
                        offline: true,
                    },
                ),
                Err(reason) => (
                    Some(v.clone()),
                    Mode::Unlicensed {
                        reason: format!("{reason} (the service: {why})"),
                    },
                ),
            },
            Ok(None) => (
                None,
                Mode::Unlicensed {
                    reason: format!(
                        "the license service cannot be reached ({why}) and this machine has no \
                         validation to fall back on; connect to the network and run `tidemark \
                         status`"
                    ),
                },
            ),
            Err(bad) => (
                None,
                Mode::Unlicensed {
                    reason: format!(
                        "{bad}, and the license service cannot be reached ({why}); connect to \
                         the network and run `tidemark status`"
                    ),
                },
            ),
        },
    }
}

/// Time left in the offline grace (or of an offline file).
pub fn grace_left(now: DateTime<Utc>, verdict: &Verdict) -> Duration {
    (verdict.good_until() - now).max(Duration::zero())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tidemark_wire::{Feature, Tier};

    fn t0() -> DateTime<Utc> {
        "2026-11-01T00:00:00Z".parse().unwrap()
    }

    fn verdict_at(at: DateTime<Utc>, valid: bool) -> Verdict {
        Verdict {
            claims: VerdictClaims {
                iss: "https://tidemark.test".into(),
                aud: "tidemark-scanner".into(),
                sub: "sha256:00".into(),
                iat: at.timestamp(),
                exp: (at + OFFLINE_GRACE).timestamp(),
                jti: "vrd_1".into(),
                valid,
                status: if valid { "active" } else { "expired" }.into(),
                tier: Tier::Team,
                features: if valid {
                    vec![Feature::HostedDashboard]
                } else {
                    vec![]
                },
                expiry: "2027-11-01T00:00:00Z".into(),
                bundle_url: None,
                bundle_sha256: None,
                machine: None,
            },
            jws: "signed".into(),
            kind: Kind::Validation,
        }
    }

    #[test]
    fn a_fresh_verdict_is_used_and_a_stale_one_is_revalidated() {
        let v = verdict_at(t0(), true);
        assert!(!needs_validation(t0(), Some(&v), false));
        let almost = t0() + Duration::hours(23) + Duration::minutes(59);
        assert!(!needs_validation(almost, Some(&v), false));
        let past = t0() + Duration::hours(24) + Duration::minutes(1);
        assert!(needs_validation(past, Some(&v), false));
        assert!(needs_validation(t0(), Some(&v), true));
        assert!(needs_validation(t0(), None, false));
        assert!(from_cache(almost, Ok(Some(&v)), t0()).is_licensed());
        let mut file = v.clone();
        file.kind = Kind::OfflineFile;
        assert!(
            !needs_validation(past, Some(&file), true),
            "no service to ask"
        );
    }

    #[test]
    fn an_outage_keeps_the_license_until_the_signed_grace_ends() {
        let v = verdict_at(t0(), true);
        let still = t0() + Duration::days(6) + Duration::hours(23);
        let (kept, mode) = after_validation(
            still,
            Ok(Some(&v)),
            t0(),
            Outcome::Unreachable("timeout".into()),
        );
        assert!(
            matches!(mode, Mode::Licensed { offline: true, .. }),
            "{mode:?}"
        );
        assert_eq!(kept.as_ref(), Some(&v));
        assert_eq!(grace_left(still, &v), Duration::hours(1));
        let gone = t0() + Duration::days(7) + Duration::minutes(1);
        let (_, mode) =
            after_validation(gone, Ok(Some(&v)), t0(), Outcome::Unreachable("dns".into()));
        assert!(!mode.is_licensed(), "{mode:?}");
        let (_, mode) =
            after_validation(t0(), Ok(None), t0(), Outcome::Unreachable("refused".into()));
        assert!(
            !mode.is_licensed(),
            "never validated: nothing to fall back on"
        );
    }

    #[test]
    fn a_clock_moved_back_is_noticed() {
        let v = verdict_at(t0(), true);
        let seen = t0() + Duration::days(3);
        // Moved back before a time already seen: refused, though the verdict would allow it.
        let back = t0() + Duration::days(1);
        match from_cache(back, Ok(Some(&v)), seen) {
            Mode::Unlicensed { reason } => assert!(reason.contains("moved back"), "{reason}"),
            other => panic!("{other:?}"),
        }
        // Before the verdict's own issue time: refused too.
        assert!(!from_cache(t0() - Duration::hours(1), Ok(Some(&v)), t0()).is_licensed());
        // Within the leeway: fine.
        assert!(from_cache(seen - Duration::minutes(4), Ok(Some(&v)), seen).is_licensed());
    }

    #[test]
    fn a_definitive_refusal_or_an_invalid_verdict_downgrades_at_once() {
        let v = verdict_at(t0(), true);
        let soon = t0() + Duration::hours(25);
        let (kept, mode) = after_validation(
            soon,
            Ok(Some(&v)),
            t0(),
            Outcome::Refused("license_not_found".into()),
        );
        assert!(kept.is_none());
        assert!(!mode.is_licensed());
        let (kept, mode) = after_validation(
            soon,
            Ok(Some(&v)),
            t0(),
            Outcome::Answered(Box::new(verdict_at(soon, false))),
        );
        assert!(kept.is_none());
        match mode {
            Mode::Unlicensed { reason } => assert!(reason.contains("not valid"), "{reason}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_verdict_claiming_more_than_the_grace_is_refused() {
        let mut v = verdict_at(t0(), true);
        v.claims.exp += 86_400;
        assert!(judge(t0(), &v, t0()).unwrap_err().contains("longer life"));
        v.kind = Kind::OfflineFile;
        assert!(
            judge(t0(), &v, t0()).is_ok(),
            "files run as long as they were signed for"
        );
    }
}
