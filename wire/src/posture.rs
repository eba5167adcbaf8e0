//! Compliance posture, as `GET /v1/projects/{project}/posture` answers: per framework a scan
//! named, its requirements (rules) passed, failed, set aside by triage and not evaluated, now
//! and over time.

use serde::{Deserialize, Serialize};

#[cfg(feature = "openapi")]
use utoipa::ToSchema;

/// How far back the history goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub enum PostureRange {
    #[serde(rename = "7d")]
    Week,
    #[serde(rename = "30d")]
    Month,
    #[default]
    #[serde(rename = "90d")]
    Quarter,
    #[serde(rename = "365d")]
    Year,
    #[serde(rename = "all")]
    All,
}

impl PostureRange {
    /// Days covered; `None`: all of it.
    pub fn days(self) -> Option<i64> {
        match self {
            PostureRange::Week => Some(7),
            PostureRange::Month => Some(30),
            PostureRange::Quarter => Some(90),
            PostureRange::Year => Some(365),
            PostureRange::All => None,
        }
    }
}

/// Requirements by what became of them. `share_passing` is passed ÷ (passed + failed +
/// triaged), absent when nothing was evaluated; a triaged requirement never counts as passed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct PostureCounts {
    pub passed: u32,
    pub failed: u32,
    /// Failing, with every failing finding set aside as accepted risk or false positive.
    pub triaged: u32,
    /// Only skipped checks.
    pub not_evaluated: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share_passing: Option<f64>,
}

/// One section of a framework: a rule number up to its first dot (`1` of `cis-aws-2.0-1.4`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct SectionPosture {
    pub section: String,
    #[serde(flatten)]
    pub counts: PostureCounts,
}

/// A framework in one scan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct PosturePoint {
    pub scan_id: String,
    /// RFC 3339, UTC.
    pub scanned_at: String,
    #[serde(flatten)]
    pub counts: PostureCounts,
    /// Requirements that passed in the branch's previous scan and fail in this one.
    pub drifted: Vec<String>,
}

/// A framework's posture on the branch: as its latest scan stands now (with triage as it is
/// now, so setting a finding aside or its triage lapsing shows at once), per section, and as
/// each scan in the range stood when it was pushed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct FrameworkPosture {
    pub framework: String,
    pub current: PosturePoint,
    pub sections: Vec<SectionPosture>,
    /// Oldest first.
    pub history: Vec<PosturePoint>,
}

/// The answer of `GET /v1/projects/{project}/posture`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ProjectPosture {
    pub project_id: String,
    /// The branch read; `null` for a default branch that was never named.
    pub branch: Option<String>,
    /// The frameworks of the branch's latest scan (or only the one asked for), as it named them.
    pub frameworks: Vec<FrameworkPosture>,
}
