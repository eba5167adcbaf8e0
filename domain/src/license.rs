//! Whether a license is in force right now.

use crate::Millis;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LicenseState {
    Active,
    Expired { since: Millis },
    Suspended { since: Millis },
}

impl LicenseState {
    pub fn as_str(self) -> &'static str {
        match self {
            LicenseState::Active => "active",
            LicenseState::Expired { .. } => "expired",
            LicenseState::Suspended { .. } => "suspended",
        }
    }

    /// Suspension wins over expiry: it is the operator's explicit word.
    pub fn at(now: Millis, expires_at: Millis, suspended_at: Option<Millis>) -> Self {
        match suspended_at {
            Some(since) => LicenseState::Suspended { since },
            None if now >= expires_at => LicenseState::Expired { since: expires_at },
            None => LicenseState::Active,
        }
    }

    pub fn is_active(self) -> bool {
        self == LicenseState::Active
    }

    /// For `license_inactive` messages: what happened, since when, and what to do.
    pub fn explain(self) -> String {
        match self {
            LicenseState::Active => "The license is active.".into(),
            LicenseState::Expired { since } => format!(
                "The license expired at {}. Renew it to continue; your data is kept.",
                crate::to_rfc3339(since)
            ),
            LicenseState::Suspended { since } => format!(
                "The license has been suspended since {}. Contact support to resume it.",
                crate::to_rfc3339(since)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_is_exclusive_and_suspension_wins() {
        assert_eq!(LicenseState::at(999, 1000, None), LicenseState::Active);
        assert_eq!(
            LicenseState::at(1000, 1000, None),
            LicenseState::Expired { since: 1000 }
        );
        assert_eq!(
            LicenseState::at(5, 1000, Some(3)),
            LicenseState::Suspended { since: 3 }
        );
        assert!(LicenseState::Expired { since: 0 }
            .explain()
            .contains("1970-01-01T00:00:00Z"));
    }
}
