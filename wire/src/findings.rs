//! Tracked findings and their triage, as `/v1/projects/{project}/findings` shows them: a
//! finding is one (branch, rule id, resource) followed across scans, not one row of one scan.

use serde::{Deserialize, Serialize};

#[cfg(feature = "openapi")]
use utoipa::ToSchema;

use crate::Severity;

/// Why a finding is set aside. `accepted_risk`: known and tolerated; `false_positive`: the
/// rule is wrong about this resource; `wont_fix`: real, and will stay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum TriageState {
    AcceptedRisk,
    FalsePositive,
    WontFix,
}

impl TriageState {
    pub const ALL: [TriageState; 3] = [
        TriageState::AcceptedRisk,
        TriageState::FalsePositive,
        TriageState::WontFix,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TriageState::AcceptedRisk => "accepted_risk",
            TriageState::FalsePositive => "false_positive",
            TriageState::WontFix => "wont_fix",
        }
    }

    pub fn parse(text: &str) -> Option<TriageState> {
        TriageState::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// Whether the triage sets the failure aside in posture (and mutes it in a Prowler-shaped
    /// report). Won't fix does not: a known failure is still a failure.
    pub fn sets_aside(self) -> bool {
        !matches!(self, TriageState::WontFix)
    }

    /// What the dashboard calls it.
    pub fn label(self) -> &'static str {
        match self {
            TriageState::AcceptedRisk => "Accepted risk",
            TriageState::FalsePositive => "False positive",
            TriageState::WontFix => "Won't fix",
        }
    }
}

/// Where a finding stands now. `open`: failing in its branch's latest scan; `fixed`: absent
/// or passing since a later scan; `triaged`: open, but set aside with a reason (until its
/// triage expires or is undone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum FindingState {
    Open,
    Fixed,
    Triaged,
}

impl FindingState {
    pub const ALL: [FindingState; 3] = [
        FindingState::Open,
        FindingState::Triaged,
        FindingState::Fixed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FindingState::Open => "open",
            FindingState::Fixed => "fixed",
            FindingState::Triaged => "triaged",
        }
    }

    pub fn parse(text: &str) -> Option<FindingState> {
        FindingState::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

/// A finding's triage: who set it aside, why, and until when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Triage {
    pub state: TriageState,
    /// Why, in the words of whoever triaged it (1–1,000 characters).
    #[cfg_attr(
        feature = "openapi",
        schema(example = "Public by design: the bucket serves the marketing site.")
    )]
    pub reason: String,
    /// When the triage lapses and the finding is open again; null: never.
    #[cfg_attr(feature = "openapi", schema(format = DateTime, example = "2027-03-01T00:00:00Z"))]
    pub expires_at: Option<String>,
    /// A member's e-mail address, or `api-key:<prefix>` for a triage made with an API key.
    pub by: String,
    #[cfg_attr(feature = "openapi", schema(format = DateTime))]
    pub at: String,
}

/// One tracked finding of a project's branch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct TrackedFinding {
    /// `fnd_` + 20 lowercase base32 characters; the same for the finding in every scan of
    /// its branch.
    #[cfg_attr(feature = "openapi", schema(example = "fnd_3k5v7x2m4q6s8u0w1y3a"))]
    pub id: String,
    /// The branch it was found on (null: the project's default line, not yet named).
    pub branch: Option<String>,
    pub rule_id: String,
    pub resource: String,
    /// As in the latest scan that had it.
    pub severity: Severity,
    pub state: FindingState,
    /// The scan and time it was first seen on this branch.
    pub first_seen_scan_id: String,
    #[cfg_attr(feature = "openapi", schema(format = DateTime))]
    pub first_seen_at: String,
    pub last_seen_scan_id: String,
    #[cfg_attr(feature = "openapi", schema(format = DateTime))]
    pub last_seen_at: String,
    /// The first scan without it (absent or passing); null while it is open.
    pub fixed_scan_id: Option<String>,
    #[cfg_attr(feature = "openapi", schema(format = DateTime))]
    pub fixed_at: Option<String>,
    /// How many times it came back after being fixed.
    pub reopened_count: u64,
    /// Null unless someone triaged it (an expired triage is shown until undone or replaced,
    /// but no longer makes the state `triaged`).
    pub triage: Option<Triage>,
}

/// A page of a project's tracked findings, most severe first, then oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct FindingsPage {
    pub findings: Vec<TrackedFinding>,
    /// Pass it as `cursor` for the next page; null on the last.
    pub next_cursor: Option<String>,
}

/// The body of `PUT /v1/projects/{project}/findings/{finding}/triage`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct TriageRequest {
    pub state: TriageState,
    /// Required: 1–1,000 characters, not blank, no control characters but tab and line breaks.
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 1000,
            pattern = "^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f]*$"
        )
    )]
    pub reason: String,
    /// Optional: a date (`2027-03-01`, midnight UTC) or an RFC 3339 time, in the future
    /// (`422` otherwise: a triage that has already lapsed sets nothing aside).
    #[serde(default)]
    #[cfg_attr(
        feature = "openapi",
        schema(
            example = "2027-03-01",
            pattern = "^[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2}))?$"
        )
    )]
    pub expires_at: Option<String>,
}

/// The body of `POST /v1/projects/{project}/findings/triage`: one triage for several findings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct BatchTriageRequest {
    /// 1–100 finding ids (`fnd_…`) of the project; one named twice counts once.
    #[cfg_attr(
        feature = "openapi",
        schema(min_items = 1, max_items = 100, example = json!(["fnd_3k2j4h5g6f7d8s9a0q1w", "fnd_9z8x7c6v5b4n3m2l1k0j"]))
    )]
    pub finding_ids: Vec<FindingIdText>,
    pub state: TriageState,
    /// Required: 1–1,000 characters, not blank, no control characters but tab and line breaks.
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 1000,
            pattern = "^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f]*$"
        )
    )]
    pub reason: String,
    /// Optional: a date (`2027-03-01`, midnight UTC) or an RFC 3339 time, in the future
    /// (`422` otherwise: a triage that has already lapsed sets nothing aside).
    #[serde(default)]
    #[cfg_attr(
        feature = "openapi",
        schema(
            example = "2027-03-01",
            pattern = "^[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2}))?$"
        )
    )]
    pub expires_at: Option<String>,
}

impl BatchTriageRequest {
    /// The triage itself, as for one finding.
    pub fn triage(&self) -> TriageRequest {
        TriageRequest {
            state: self.state,
            reason: self.reason.clone(),
            expires_at: self.expires_at.clone(),
        }
    }
}

/// A finding's id as a request names it: `fnd_` and up to 24 lowercase letters and digits
/// (whether the project has it is the server's to say: `404`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[cfg_attr(
    feature = "openapi",
    schema(pattern = "^fnd_[a-z0-9]{1,24}$", example = "fnd_3k2j4h5g6f7d8s9a0q1w")
)]
#[serde(transparent)]
pub struct FindingIdText(pub String);

/// What `POST /v1/projects/{project}/findings/triage` did: every finding named, as it is now,
/// in the order named.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct BatchTriageResponse {
    pub findings: Vec<TrackedFinding>,
}

/// A tracked finding in the account-wide inbox: the finding and the project it is in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct InboxFinding {
    pub project_id: String,
    pub project_label: String,
    #[serde(flatten)]
    pub finding: TrackedFinding,
}

/// A page of `GET /v1/findings`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct InboxPage {
    pub findings: Vec<InboxFinding>,
    /// Pass it as `cursor` for the next page; null on the last.
    pub next_cursor: Option<String>,
}
