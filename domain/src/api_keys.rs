//! Named API keys: a key an admin makes in Settings for one CI secret or machine, with a name
//! and an optional expiry, beside the keys activations make. The rules here (what a name and
//! an expiry may be, when a key counts as expired and what the refusal says) are the same
//! for the dashboard, the API and the mail that warns of an expiry.

use crate::input::{bounded_text, FieldError};
use crate::time::{to_rfc3339, DAY_MS};
use crate::Millis;

/// The longest a named key may live: a key that never expires is chosen by leaving the
/// expiry out, not by a far date.
pub const MAX_LIFETIME_DAYS: u32 = 366;

/// How long before its expiry a key's admins are mailed.
pub const WARN_BEFORE_MS: Millis = 7 * DAY_MS;

/// What an admin calls a key ("GitHub Actions", "release laptop"): shown beside its prefix
/// in Settings, in the audit log and in the expiry mail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyName(String);

impl KeyName {
    pub fn parse(raw: &str) -> Result<KeyName, FieldError> {
        let name = raw.trim();
        if name.is_empty() {
            return Err(FieldError::new(
                "name",
                "name must not be empty: say what the key is for (e.g. \"GitHub Actions\")".into(),
            ));
        }
        bounded_text("name", name, 64)?;
        Ok(KeyName(name.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// When a new key stops working: `days` from `now` (none: never). Refuses 0 and anything
/// past [`MAX_LIFETIME_DAYS`].
pub fn expiry_after_days(days: Option<u32>, now: Millis) -> Result<Option<Millis>, FieldError> {
    match days {
        None => Ok(None),
        Some(d) if (1..=MAX_LIFETIME_DAYS).contains(&d) => Ok(Some(now + i64::from(d) * DAY_MS)),
        Some(_) => Err(FieldError::new(
            "expires_in_days",
            format!(
                "expires_in_days must be a whole number of days from 1 to {MAX_LIFETIME_DAYS}, \
                 or left out for a key that does not expire"
            ),
        )),
    }
}

/// A key past its expiry: refused as a revoked key is, saying when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expired {
    pub at: Millis,
}

impl Expired {
    pub fn message(&self) -> String {
        format!(
            "The API key expired at {}: an admin set that expiry when making it in Settings → \
             API keys. Make a new key there (or run `tidemark activate` again) and replace the \
             secret.",
            to_rfc3339(self.at)
        )
    }
}

/// Whether a key expiring at `expires_at` still works at `now`.
pub fn check_expiry(expires_at: Option<Millis>, now: Millis) -> Result<(), Expired> {
    match expires_at {
        Some(at) if at <= now => Err(Expired { at }),
        _ => Ok(()),
    }
}

/// Whether the key's admins are due the warning at `now` (not yet expired, within a week).
pub fn due_warning(expires_at: Millis, now: Millis) -> bool {
    expires_at > now && expires_at - now <= WARN_BEFORE_MS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_trimmed_and_bounded() {
        assert_eq!(KeyName::parse("  CI  ").unwrap().as_str(), "CI");
        assert_eq!(KeyName::parse("   ").unwrap_err().field, "name");
        assert!(KeyName::parse(&"x".repeat(65)).is_err());
        assert!(KeyName::parse("a\u{7}b").is_err());
        assert!(KeyName::parse(&"x".repeat(64)).is_ok());
    }

    #[test]
    fn expiry_is_whole_days_within_a_year() {
        assert_eq!(expiry_after_days(None, 5).unwrap(), None);
        assert_eq!(expiry_after_days(Some(1), 5).unwrap(), Some(5 + DAY_MS));
        assert_eq!(expiry_after_days(Some(366), 0).unwrap(), Some(366 * DAY_MS));
        for bad in [0, 367, u32::MAX] {
            let err = expiry_after_days(Some(bad), 0).unwrap_err();
            assert_eq!(err.field, "expires_in_days");
            assert!(err.message.contains("1 to 366"), "{}", err.message);
        }
    }

    #[test]
    fn a_key_expires_at_its_instant_and_the_refusal_says_when() {
        assert!(check_expiry(None, i64::MAX).is_ok());
        assert!(check_expiry(Some(10), 9).is_ok());
        let expired = check_expiry(Some(10), 10).unwrap_err();
        assert_eq!(expired.at, 10);
        let text = Expired { at: DAY_MS }.message();
        assert!(text.contains("1970-01-02T00:00:00Z"), "{text}");
        assert!(text.contains("Settings → API keys"), "{text}");
    }

    #[test]
    fn the_warning_is_due_in_the_last_week_only() {
        let at = 100 * DAY_MS;
        assert!(!due_warning(at, at - WARN_BEFORE_MS - 1));
        assert!(due_warning(at, at - WARN_BEFORE_MS));
        assert!(due_warning(at, at - 1));
        assert!(!due_warning(at, at));
    }
}
