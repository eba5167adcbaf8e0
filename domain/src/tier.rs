//! What each tier includes, and the operator's per-license overrides.

use std::collections::BTreeSet;

use tidemark_wire::{Feature, Tier};

pub fn base_features(tier: Tier) -> &'static [Feature] {
    use Feature::*;
    match tier {
        Tier::Individual => &[],
        Tier::Team => &[HostedDashboard, DriftDetection],
        Tier::Agency => &[HostedDashboard, DriftDetection, CustomFrameworks],
        Tier::Enterprise => &[
            HostedDashboard,
            DriftDetection,
            CustomFrameworks,
            PrioritySupport,
        ],
    }
}

/// The lowest tier whose licences carry `feature` (Enterprise for one no tier carries).
pub fn lowest_tier_with(feature: Feature) -> Tier {
    Tier::ALL
        .into_iter()
        .find(|t| base_features(*t).contains(&feature))
        .unwrap_or(Tier::Enterprise)
}

/// The features a license carries: its tier's, plus operator-added, minus operator-removed.
/// Sorted in the contract's order.
pub fn effective_features(tier: Tier, added: &[Feature], removed: &[Feature]) -> Vec<Feature> {
    let mut set: BTreeSet<Feature> = base_features(tier).iter().copied().collect();
    set.extend(added.iter().copied());
    for f in removed {
        set.remove(f);
    }
    set.into_iter().collect()
}

/// How many active projects a license may hold; `None` is unlimited. A per-license
/// `max_projects` set by an operator wins over the tier's default.
pub fn project_cap(tier: Tier, max_projects_override: Option<u64>) -> Option<u64> {
    if let Some(n) = max_projects_override {
        return Some(n);
    }
    match tier {
        Tier::Individual => Some(0),
        Tier::Team => Some(1),
        Tier::Agency => Some(5),
        Tier::Enterprise => None,
    }
}

/// Feature flags as stored: comma-separated names. Unknown names are dropped.
pub fn parse_feature_list(stored: &str) -> Vec<Feature> {
    stored
        .split(',')
        .filter_map(|s| Feature::parse(s.trim()))
        .collect()
}

pub fn format_feature_list(features: &[Feature]) -> String {
    features
        .iter()
        .map(|f| f.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

/// SAML single sign-on (and enforcing it) is an enterprise capability.
pub fn allows_sso(tier: Tier) -> bool {
    tier == Tier::Enterprise
}

#[cfg(test)]
mod tests {
    use super::*;
    use Feature::*;

    #[test]
    fn each_feature_names_the_lowest_tier_that_has_it() {
        assert_eq!(lowest_tier_with(HostedDashboard), Tier::Team);
        assert_eq!(lowest_tier_with(DriftDetection), Tier::Team);
        assert_eq!(lowest_tier_with(CustomFrameworks), Tier::Agency);
        assert_eq!(lowest_tier_with(PrioritySupport), Tier::Enterprise);
    }

    #[test]
    fn tiers_carry_the_decided_features_and_caps() {
        assert_eq!(effective_features(Tier::Individual, &[], &[]), vec![]);
        assert_eq!(
            effective_features(Tier::Team, &[], &[]),
            vec![HostedDashboard, DriftDetection]
        );
        assert_eq!(
            effective_features(Tier::Agency, &[], &[]),
            vec![HostedDashboard, DriftDetection, CustomFrameworks]
        );
        assert_eq!(effective_features(Tier::Enterprise, &[], &[]).len(), 4);
        assert_eq!(project_cap(Tier::Individual, None), Some(0));
        assert_eq!(project_cap(Tier::Team, None), Some(1));
        assert_eq!(project_cap(Tier::Agency, None), Some(5));
        assert_eq!(project_cap(Tier::Enterprise, None), None);
        assert_eq!(project_cap(Tier::Enterprise, Some(12)), Some(12));
    }

    #[test]
    fn overrides_add_and_remove() {
        assert_eq!(
            effective_features(Tier::Individual, &[HostedDashboard], &[]),
            vec![HostedDashboard]
        );
        assert_eq!(
            effective_features(Tier::Team, &[PrioritySupport], &[HostedDashboard]),
            vec![DriftDetection, PrioritySupport]
        );
        assert_eq!(
            parse_feature_list("hosted_dashboard, nonsense,priority_support"),
            vec![HostedDashboard, PrioritySupport]
        );
        assert_eq!(
            format_feature_list(&[HostedDashboard, DriftDetection]),
            "hosted_dashboard,drift_detection"
        );
    }
}
