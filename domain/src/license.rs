//! Whether a license is in force right now.

use tidemark_wire::{Feature, Tier};

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

/// A licence: who holds it, its tier and what overrides the tier's features and project cap,
/// and until when it is in force (the store reads it; its key never leaves the store).
#[derive(Debug, Clone, PartialEq)]
pub struct License {
    pub id: String,
    pub account_id: crate::ids::AccountId,
    pub email: String,
    pub tier: Tier,
    pub expires_at: Millis,
    pub suspended_at: Option<Millis>,
    pub max_projects: Option<u64>,
    /// How many machines may hold a seat at once; `None`: unlimited.
    pub max_machines: Option<u64>,
    /// Days a seat may go unseen before it is freed; `None`: the server's default, 0: never.
    pub seat_release_after_days: Option<u32>,
    pub features_added: Vec<Feature>,
    pub features_removed: Vec<Feature>,
    pub created_at: Millis,
    /// Bumped by every change: the admin API's ETag.
    pub version: i64,
}

impl License {
    pub fn state(&self, now: Millis) -> LicenseState {
        LicenseState::at(now, self.expires_at, self.suspended_at)
    }

    pub fn features(&self) -> Vec<Feature> {
        crate::tier::effective_features(self.tier, &self.features_added, &self.features_removed)
    }

    pub fn project_cap(&self) -> Option<u64> {
        crate::tier::project_cap(self.tier, self.max_projects)
    }
}

/// A change to a licence that keeps its key; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LicenseEdit {
    pub tier: Option<Tier>,
    pub expires_at: Option<Millis>,
    /// `Some(None)` removes the cap override (the tier's cap holds again).
    pub max_projects: Option<Option<u64>>,
    /// Seats: `Some(None)` makes them unlimited.
    pub max_machines: Option<Option<u64>>,
    /// `Some(None)`: the server's default again.
    pub seat_release_after_days: Option<Option<u32>>,
    /// Entitlement overrides: features beyond the tier's, and the tier's features taken away.
    pub features_added: Option<Vec<Feature>>,
    pub features_removed: Option<Vec<Feature>>,
    /// Suspends (`true`) or resumes, with the reason the audit log keeps.
    pub suspended: Option<(bool, Option<String>)>,
}

impl LicenseEdit {
    pub fn is_empty(&self) -> bool {
        *self == LicenseEdit::default()
    }

    /// Refuses overrides that contradict themselves: one feature both added and removed
    /// (as the licence would stand after the edit).
    pub fn check(&self, current: &License) -> Result<(), String> {
        let added = self
            .features_added
            .as_deref()
            .unwrap_or(&current.features_added);
        let removed = self
            .features_removed
            .as_deref()
            .unwrap_or(&current.features_removed);
        match added.iter().find(|f| removed.contains(f)) {
            Some(f) => Err(format!(
                "{} cannot be both added and removed: name it in features_added or \
                 features_removed, not both",
                f.as_str()
            )),
            None => Ok(()),
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

    #[test]
    fn a_license_reads_its_state_features_and_cap_from_its_tier_and_overrides() {
        use tidemark_wire::{Feature, Tier};
        let license = super::License {
            id: "lic".into(),
            account_id: crate::ids::AccountId::trusted("acct"),
            email: "a@example.com".into(),
            tier: Tier::Team,
            expires_at: 2_000,
            suspended_at: None,
            max_projects: Some(3),
            max_machines: None,
            seat_release_after_days: None,
            features_added: vec![Feature::CustomFrameworks],
            features_removed: vec![Feature::DriftDetection],
            created_at: 0,
            version: 1,
        };
        assert!(license.state(1_999).is_active());
        assert_eq!(license.state(2_000), LicenseState::Expired { since: 2_000 });
        let features = license.features();
        assert!(features.contains(&Feature::CustomFrameworks));
        assert!(!features.contains(&Feature::DriftDetection));
        assert_eq!(license.project_cap(), Some(3));
    }
}
