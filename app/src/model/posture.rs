//! The compliance views (issue 47): a project's posture card, a framework's page and the
//! account's rollup on the projects page.

use serde::{Deserialize, Serialize};
pub use tidemark_wire::posture::PostureCounts;

/// The small multiples' drawing size (each framework's trend).
pub const TREND_WIDTH: u32 = 300;
pub const TREND_HEIGHT: u32 = 90;

/// One framework on a project's page: where it stands now and its share passing over the range.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameworkTrend {
    /// As posture names it (`cis-aws-2.0`, `custom:baseline`): the framework page's address.
    pub framework: String,
    /// What people read: the id, or a custom framework's title.
    pub name: String,
    pub counts: PostureCounts,
    /// Requirements that drifted in the latest scan (passed in the one before, fail now).
    pub drifted: Vec<String>,
    /// Scans of the range with posture, and the share passing: first, lowest, highest.
    pub scans: usize,
    pub first: Option<f64>,
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// The trend drawn on the server (plotters), on the range's time axis.
    pub svg: String,
    /// The drawing's text alternative.
    pub summary: String,
}

/// A project line's posture card.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ProjectPostureView {
    /// Whether the account's licence has drift detection (drift is listed only then).
    pub drift_detection: bool,
    pub frameworks: Vec<FrameworkTrend>,
}

/// One finding behind a requirement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequirementFinding {
    pub finding_id: String,
    pub rule_id: String,
    pub resource: String,
    pub severity: String,
    pub failing_since: String,
    /// "accepted risk by ana@… until 2027-01-01: reason", or `None` when not triaged.
    pub triage: Option<String>,
}

/// One requirement of a framework in the line's latest scan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequirementView {
    pub id: String,
    pub number: String,
    pub section: String,
    /// A custom control's title, or the catalogue's title of a scanned requirement.
    pub title: Option<String>,
    /// What the catalogue says of it.
    pub description: Option<String>,
    /// The catalogue says no scan evaluates it (`AssessmentStatus: Manual`).
    pub manual: bool,
    /// `passed`, `failed`, `triaged` or `not_evaluated`.
    pub status: String,
    pub failing_since: Option<String>,
    pub drifted: bool,
    pub findings: Vec<RequirementFinding>,
}

/// One section of a framework: its counts and its share failing (the heatmap's shade).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SectionView {
    pub section: String,
    pub counts: PostureCounts,
    /// Failed ÷ evaluated; `None` when nothing was evaluated.
    pub failing: Option<f64>,
}

/// A framework's page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameworkView {
    pub project_id: String,
    pub project_label: String,
    /// The line's query (`branch=…&`) and its label.
    pub line_query: String,
    pub line_label: String,
    pub framework: String,
    pub name: String,
    pub scan_id: String,
    pub scanned_at: String,
    pub counts: PostureCounts,
    pub sections: Vec<SectionView>,
    /// Every requirement, by rule order; failing ones first in `top_failing`.
    pub requirements: Vec<RequirementView>,
    pub drift_detection: bool,
    /// An account's own framework (its controls are custom, their findings name rules).
    pub custom: bool,
    /// The published catalogue behind the requirement list; `None`: the list is what scans
    /// reported, and the page says so.
    pub catalogue: Option<CatalogueNote>,
}

/// The catalogue a framework page lists its requirements from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogueNote {
    pub name: String,
    pub requirements: usize,
    pub manual: usize,
}

impl FrameworkView {
    /// The failing requirements with the most failing resources first (then the longest
    /// failing), at most `n`.
    pub fn top_failing(&self, n: usize) -> Vec<&RequirementView> {
        let mut failing: Vec<&RequirementView> = self
            .requirements
            .iter()
            .filter(|r| r.status == "failed")
            .collect();
        failing.sort_by(|a, b| {
            let open =
                |r: &RequirementView| r.findings.iter().filter(|f| f.triage.is_none()).count();
            open(b)
                .cmp(&open(a))
                .then_with(|| a.failing_since.cmp(&b.failing_since))
                .then_with(|| a.id.cmp(&b.id))
        });
        failing.truncate(n);
        failing
    }
}

/// One line of the projects page's rollup (a framework, or a cloud account).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RollupLine {
    pub name: String,
    /// The framework's id (`cis-aws-2.0`, `custom:acme`) or the cloud account's: what the
    /// findings inbox filters by.
    pub key: String,
    /// For a cloud account, its cloud.
    pub cloud: Option<String>,
    pub projects: usize,
    pub counts: PostureCounts,
}

/// The account's posture across projects (each project's latest default-branch scan).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct PostureRollup {
    pub frameworks: Vec<RollupLine>,
    pub accounts: Vec<RollupLine>,
}

/// A share as people read it: "83%", or "–" when nothing was evaluated.
pub fn percent(share: Option<f64>) -> String {
    share.map_or_else(
        || "–".to_owned(),
        |s| format!("{:.0}%", (s * 100.0).floor()),
    )
}

/// A chart's range as a sentence says it: "over the last 30d", "since the first scan".
pub fn over_range(range: super::Range) -> String {
    match range.days() {
        Some(_) => format!("over the last {}", range.as_str()),
        None => "since the first scan".to_owned(),
    }
}

/// The heatmap's shade of a share failing: 0 (none) to 4 (half or more).
pub fn heat(failing: Option<f64>) -> u8 {
    match failing {
        None => 0,
        Some(f) if f <= 0.0 => 0,
        Some(f) if f < 0.125 => 1,
        Some(f) if f < 0.25 => 2,
        Some(f) if f < 0.5 => 3,
        Some(_) => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_never_rounds_up_to_a_pass_it_did_not_earn() {
        assert_eq!(percent(Some(0.999)), "99%");
        assert_eq!(percent(Some(1.0)), "100%");
        assert_eq!(percent(Some(0.0)), "0%");
        assert_eq!(percent(None), "–");
    }

    #[test]
    fn the_heatmap_shades_by_the_share_failing() {
        assert_eq!(heat(None), 0);
        assert_eq!(heat(Some(0.0)), 0);
        assert_eq!(heat(Some(0.1)), 1);
        assert_eq!(heat(Some(0.2)), 2);
        assert_eq!(heat(Some(0.3)), 3);
        assert_eq!(heat(Some(0.5)), 4);
        assert_eq!(heat(Some(1.0)), 4);
    }
}

/// A requirement across the account's projects (`/requirements/<rule id>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequirementPage {
    pub rule_id: String,
    /// From the published catalogue that lists it: its framework id and name, title,
    /// description and section.
    pub framework: Option<String>,
    pub framework_name: Option<String>,
    pub title: Option<String>,
    pub description: Option<String>,
    pub section: Option<String>,
    pub manual: bool,
    /// Failing first, then set aside, then passed, then not evaluated.
    pub resources: Vec<RequirementResourceView>,
    /// How many projects' latest scans judged it, and how many fail it.
    pub projects: usize,
    pub failing_projects: usize,
}

/// One resource a requirement's rule judged in one project's latest default-branch scan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequirementResourceView {
    pub project_id: String,
    pub project_label: String,
    pub resource: String,
    /// `failed`, `triaged`, `passed` or `not_evaluated`.
    pub status: String,
    pub severity: String,
    pub message: String,
    /// The open finding's id (its page tells its life).
    pub finding_id: Option<String>,
    pub failing_since: Option<String>,
    /// "accepted risk by ana@… until …: reason".
    pub triage: Option<String>,
}
