//! The `/v1` wire format: every request and response body of the scanner API, as the
//! interface document names its fields. Only serde here, so a scanner client can use these
//! types without pulling in the server.
//!
//! Deserialising checks shapes (types, required fields, enumerations); the server's domain
//! layer checks the rules (ranges, lengths, limits).

use serde::{Deserialize, Serialize};

#[cfg(feature = "openapi")]
use utoipa::ToSchema;

pub mod admin;
pub mod findings;
pub mod frameworks;
pub mod ids;
mod keyless;
pub mod posture;
pub mod report;
pub mod verdict;
mod webhook;

pub use keyless::*;
pub use webhook::*;

/// License tiers, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    Individual,
    Team,
    Agency,
    Enterprise,
}

impl Tier {
    pub const ALL: [Tier; 4] = [Tier::Individual, Tier::Team, Tier::Agency, Tier::Enterprise];

    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Individual => "individual",
            Tier::Team => "team",
            Tier::Agency => "agency",
            Tier::Enterprise => "enterprise",
        }
    }

    pub fn parse(s: &str) -> Option<Tier> {
        Tier::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

/// Feature flags a license can carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Feature {
    HostedDashboard,
    DriftDetection,
    CustomFrameworks,
    PrioritySupport,
}

impl Feature {
    pub const ALL: [Feature; 4] = [
        Feature::HostedDashboard,
        Feature::DriftDetection,
        Feature::CustomFrameworks,
        Feature::PrioritySupport,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Feature::HostedDashboard => "hosted_dashboard",
            Feature::DriftDetection => "drift_detection",
            Feature::CustomFrameworks => "custom_frameworks",
            Feature::PrioritySupport => "priority_support",
        }
    }

    /// What people read in Settings.
    pub fn label(self) -> &'static str {
        match self {
            Feature::HostedDashboard => "Hosted dashboard",
            Feature::DriftDetection => "Drift detection",
            Feature::CustomFrameworks => "Custom frameworks",
            Feature::PrioritySupport => "Priority support",
        }
    }

    pub fn parse(s: &str) -> Option<Feature> {
        Feature::ALL.into_iter().find(|f| f.as_str() == s)
    }
}

/// Response of `POST /v1/license/validate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ValidateResponse {
    /// True when the license is active and not expired.
    pub valid: bool,
    pub tier: Tier,
    /// Empty when `valid` is false.
    pub features: Vec<Feature>,
    /// RFC 3339 timestamp in UTC.
    #[cfg_attr(feature = "openapi", schema(format = DateTime, example = "2027-11-22T00:00:00Z"))]
    pub expiry: String,
    /// Where to download the latest compliance profile bundle; null when the license is not
    /// valid or no bundle has been published yet.
    pub bundle_url: Option<String>,
    /// `sha256:` followed by the hex digest of exactly the bytes served at `bundle_url`.
    #[cfg_attr(
        feature = "openapi",
        schema(
            example = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
        )
    )]
    pub bundle_checksum: Option<String>,
    /// This answer signed: a compact JWS (`alg` `EdDSA`) over the fields above and the
    /// offline grace's end, verifiable with the keys at `/v1/keys` (see `VerdictClaims`).
    /// Absent only from servers older than signed verdicts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
}

/// Body of `POST /v1/license/activate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ActivateRequest {
    /// A name for the machine or CI secret this key is for (1–128 characters).
    #[cfg_attr(
        feature = "openapi",
        schema(
            example = "ci-main",
            min_length = 1,
            max_length = 128,
            pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$"
        )
    )]
    pub machine: String,
}

/// Response of `POST /v1/license/activate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ActivateResponse {
    /// `svc_api_` followed by 43 base62 characters. Shown this once only.
    pub api_key: String,
    pub account_id: String,
    pub tier: Tier,
    /// The licence's state signed, as `verdict` in the validation answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
}

/// Body of `POST /v1/license/resend`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ResendRequest {
    #[cfg_attr(
        feature = "openapi",
        schema(example = "alice@example.com", format = Email, max_length = 254)
    )]
    pub email: String,
}

/// Response of `POST /v1/license/resend`: the same whether or not a license exists.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ResendResponse {
    pub ok: bool,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Cloud {
    Gcp,
    Aws,
    Azure,
}

impl Cloud {
    pub fn as_str(self) -> &'static str {
        match self {
            Cloud::Gcp => "gcp",
            Cloud::Aws => "aws",
            Cloud::Azure => "azure",
        }
    }
}

/// Origin of the infrastructure state that was scanned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum StateSource {
    Local,
    Remote,
    Ci,
}

impl StateSource {
    pub fn as_str(self) -> &'static str {
        match self {
            StateSource::Local => "local",
            StateSource::Remote => "remote",
            StateSource::Ci => "ci",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Critical,
    High,
    Medium,
    Low,
}

impl Severity {
    /// `true` when `self` is `threshold` or more severe.
    pub fn at_or_above(self, threshold: Severity) -> bool {
        // The derived order puts the most severe first.
        self <= threshold
    }

    pub fn parse(text: &str) -> Option<Severity> {
        Severity::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// Most severe first: the order counts are shown and stacked in.
    pub const ALL: [Severity; 4] = [
        Severity::Critical,
        Severity::High,
        Severity::Medium,
        Severity::Low,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Critical => "critical",
            Severity::High => "high",
            Severity::Medium => "medium",
            Severity::Low => "low",
        }
    }
}

/// Result of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(rename_all = "UPPERCASE")]
pub enum FindingStatus {
    Pass,
    Fail,
    Warn,
    Skip,
    Error,
}

impl FindingStatus {
    /// FAIL, WARN and ERROR are open: they need someone's attention. The diff between two
    /// scans and the quality gates count only open findings.
    pub fn is_open(self) -> bool {
        matches!(
            self,
            FindingStatus::Fail | FindingStatus::Warn | FindingStatus::Error
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FindingStatus::Pass => "PASS",
            FindingStatus::Fail => "FAIL",
            FindingStatus::Warn => "WARN",
            FindingStatus::Skip => "SKIP",
            FindingStatus::Error => "ERROR",
        }
    }

    pub fn parse(text: &str) -> Option<FindingStatus> {
        [
            FindingStatus::Pass,
            FindingStatus::Fail,
            FindingStatus::Warn,
            FindingStatus::Skip,
            FindingStatus::Error,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }
}

/// Counts per severity: exactly these four keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SeverityCounts {
    #[cfg_attr(feature = "openapi", schema(maximum = 1_000_000_000))]
    #[serde(deserialize_with = "whole_number")]
    pub critical: u64,
    #[cfg_attr(feature = "openapi", schema(maximum = 1_000_000_000))]
    #[serde(deserialize_with = "whole_number")]
    pub high: u64,
    #[cfg_attr(feature = "openapi", schema(maximum = 1_000_000_000))]
    #[serde(deserialize_with = "whole_number")]
    pub medium: u64,
    #[cfg_attr(feature = "openapi", schema(maximum = 1_000_000_000))]
    #[serde(deserialize_with = "whole_number")]
    pub low: u64,
}

impl SeverityCounts {
    pub fn get(&self, severity: Severity) -> u64 {
        match severity {
            Severity::Critical => self.critical,
            Severity::High => self.high,
            Severity::Medium => self.medium,
            Severity::Low => self.low,
        }
    }

    pub fn total(&self) -> u64 {
        Severity::ALL.iter().map(|&s| self.get(s)).sum()
    }

    /// From stored columns (never negative: pushes are validated), most severe first.
    pub fn from_columns(critical: i64, high: i64, medium: i64, low: i64) -> Self {
        let count = |n: i64| u64::try_from(n).unwrap_or(0);
        SeverityCounts {
            critical: count(critical),
            high: count(high),
            medium: count(medium),
            low: count(low),
        }
    }
}

/// One element of `findings`. Unknown extra fields are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Finding {
    /// A rule's ID, e.g. `cis-gcp-2.0-4.1`: 1–256 characters, not blank, no control characters.
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 256,
            pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"
        )
    )]
    pub rule_id: String,
    /// Address of the scanned resource: 1–2,048 characters, not blank, no control characters.
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 2048,
            pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"
        )
    )]
    pub resource: String,
    pub status: FindingStatus,
    pub severity: Severity,
    /// At most 16,384 characters; tab and line breaks are the only control characters allowed.
    #[cfg_attr(
        feature = "openapi",
        schema(
            max_length = 16384,
            pattern = "^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f]*$"
        )
    )]
    pub message: String,
    /// At most 16,384 characters; tab and line breaks are the only control characters allowed.
    #[cfg_attr(
        feature = "openapi",
        schema(
            max_length = 16384,
            pattern = "^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f]*$"
        )
    )]
    pub remediation: String,
}

/// Body of `POST /v1/dashboard/push`. Every field is required; unknown extra fields are
/// ignored (forward compatibility).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct PushRequest {
    /// Identifies the project within the account: 1–128 characters, no control characters,
    /// compared exactly.
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 128,
            pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$"
        )
    )]
    pub project_label: String,
    pub cloud: Cloud,
    /// 1–256 characters, no control characters.
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 256,
            pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$"
        )
    )]
    pub cloud_account_id: String,
    /// IDs of the frameworks scanned: at least one, each 1–128 characters with no control
    /// characters.
    #[cfg_attr(feature = "openapi", schema(schema_with = framework_ids))]
    pub frameworks: Vec<String>,
    /// Overall compliance score, 0 to 100.
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 100))]
    pub score: f64,
    /// At most 1,000,000,000 (as is every count). Counts are whole numbers, however spelled:
    /// `140`, `140.0` and `1.4e2` are the same count.
    #[cfg_attr(feature = "openapi", schema(maximum = 1_000_000_000))]
    #[serde(deserialize_with = "whole_number")]
    pub passed: u64,
    #[cfg_attr(feature = "openapi", schema(maximum = 1_000_000_000))]
    #[serde(deserialize_with = "whole_number")]
    pub failed: u64,
    pub severity_counts: SeverityCounts,
    /// At most 50,000 (more is `413 payload_too_large`).
    #[cfg_attr(feature = "openapi", schema(max_items = 50_000))]
    pub findings: Vec<Finding>,
    pub state_source: StateSource,
    /// RFC 3339 timestamp with an offset (`Z` or `+hh:mm`).
    #[cfg_attr(feature = "openapi", schema(format = DateTime, example = "2026-11-22T10:15:00Z"))]
    pub scanned_at: String,
    /// Where in the repository the scan was taken. Optional: without it the scan goes to the
    /// project's default branch, as every push did before branches existed.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "object_or_null"
    )]
    pub git: Option<GitContext>,
}

/// The git context of a push: which branch (and commit) was scanned, and for a pull or merge
/// request, which branch it targets.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct GitContext {
    /// The branch scanned (for a pull request, its source branch): 1–255 characters, no
    /// control characters; a leading `refs/heads/` is removed (and does not count). Absent: the project's default
    /// branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 255,
            pattern = "^(?!refs/heads/$)[^\\u0000-\\u001f\\u007f-\\u009f]+$",
            example = "main"
        )
    )]
    pub branch: Option<String>,
    /// The repository's default branch, as the CI knows it (GitHub's
    /// `repository.default_branch`, GitLab's `CI_DEFAULT_BRANCH`). It names the project's
    /// default branch while that has no name yet; once named, only an admin changes it. Same
    /// rules as `branch`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 255,
            pattern = "^(?!refs/heads/$)[^\\u0000-\\u001f\\u007f-\\u009f]+$",
            example = "main"
        )
    )]
    pub default_branch: Option<String>,
    /// The commit scanned: 7–64 hexadecimal characters (an abbreviated or full SHA-1 or
    /// SHA-256 object name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(
            pattern = "^[0-9a-fA-F]{7,64}$",
            example = "9fceb02d0ae598e95dc970b74767f19372d61af8"
        )
    )]
    pub commit: Option<String>,
    /// The repository's web address (`http://` or `https://`, at most 2,000 characters, no
    /// user name or password), used to link commits from the dashboard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(
            max_length = 2000,
            pattern = "^https?://([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.)*[A-Za-z]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(:[1-9][0-9]{0,3})?(/[!-~]*)?$",
            example = "https://github.com/acme/payments"
        )
    )]
    pub repository_url: Option<String>,
    /// Present when the scan is of a pull (merge) request: the scan is judged against the
    /// latest scan of `base_branch`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "object_or_null"
    )]
    pub pull_request: Option<PullRequestRef>,
}

/// A pull request (GitHub) or merge request (GitLab).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct PullRequestRef {
    /// The request's number in its repository (GitHub's `number`, GitLab's `iid`), from 1.
    #[cfg_attr(
        feature = "openapi",
        schema(minimum = 1, maximum = 1_000_000_000_000u64)
    )]
    pub number: u64,
    /// The branch it would merge into: 1–255 characters, no control characters; a leading
    /// `refs/heads/` is removed.
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 255,
            pattern = "^(?!refs/heads/$)[^\\u0000-\\u001f\\u007f-\\u009f]+$",
            example = "main"
        )
    )]
    pub base_branch: String,
    /// Its title: at most 512 characters, no control characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(max_length = 512, pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$")
    )]
    pub title: Option<String>,
    /// Its web address (`http://` or `https://`, as `repository_url`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(
            max_length = 2000,
            pattern = "^https?://([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.)*[A-Za-z]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(:[1-9][0-9]{0,3})?(/[!-~]*)?$",
            example = "https://github.com/acme/payments/pull/42"
        )
    )]
    pub url: Option<String>,
}

/// Response of a successful push (`201 Created`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct PushResponse {
    /// `prj_` followed by 20 lowercase base32 characters.
    #[cfg_attr(feature = "openapi", schema(example = "prj_3k5v7x2m4q6s8u0w1y3a"))]
    pub project_id: String,
    /// `YYYYMMDD-HHMMSS-<label-slug>`, with `-2`, `-3`, … if taken in the project.
    #[cfg_attr(feature = "openapi", schema(example = "20261122-101500-payments-api"))]
    pub scan_id: String,
    /// This score minus the previous scan's score (0 for a project's first scan).
    pub score_delta: f64,
    /// `{dashboard_url}/projects/<project_id>/scans/<scan_id>`
    pub dashboard_url: String,
    /// The project's quality gate applied to this scan, as it was when the scan was first
    /// pushed (a replay answers with the same verdict). Added after the first release: clients
    /// that do not know it ignore it, and a client reading an older server's answer reads
    /// `none`.
    #[serde(default = "GateResult::none")]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub gate: GateResult,
    /// The branch the scan was recorded on (for a pull request, its source branch); `null`
    /// for the default line of a project that has never been told a branch name.
    #[serde(default)]
    pub branch: Option<String>,
    /// The pull request's number, when the push was of one.
    #[serde(default)]
    pub pull_request: Option<u64>,
    /// For a pull request: the comparison with its base branch's latest scan. `null` for
    /// other pushes.
    #[serde(default)]
    pub base: Option<BaseComparison>,
}

/// A pull request's scan compared with the latest scan of the branch it targets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct BaseComparison {
    /// The base branch's name.
    #[cfg_attr(feature = "openapi", schema(example = "main"))]
    pub branch: String,
    /// The base branch's latest scan when the pull request was pushed; `null` when the base
    /// has no scan yet (then the pull request is judged on its own: only the gate's minimum
    /// score applies, and `message` says so).
    pub scan_id: Option<String>,
    /// That scan's score.
    pub score: Option<f64>,
    /// This scan's score minus the base's.
    pub score_delta: Option<f64>,
    /// Open findings (FAIL, WARN, ERROR) of this scan whose rule and resource are not open in
    /// the base scan: what the pull request adds.
    pub new_findings: Option<u64>,
    /// Open findings of the base scan that are not open in this scan: what it fixes.
    pub fixed_findings: Option<u64>,
    /// One sentence for people, e.g. "2 new findings and 1 fixed compared with main".
    pub message: String,
}

/// A quality gate's verdict on one scan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct GateResult {
    pub status: GateStatus,
    /// Why the gate failed, one sentence per failed condition, in the order minimum score,
    /// maximum drop, new findings. Empty unless `status` is `failed`.
    #[cfg_attr(
        feature = "openapi",
        schema(example = json!(["score 71.5 is below the gate's minimum of 80"]))
    )]
    pub reasons: Vec<String>,
}

impl GateResult {
    /// The project had no gate when the scan was pushed.
    pub fn none() -> Self {
        GateResult {
            status: GateStatus::None,
            reasons: Vec::new(),
        }
    }
}

/// `none`: the project has no quality gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum GateStatus {
    Passed,
    Failed,
    None,
}

impl GateStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            GateStatus::Passed => "passed",
            GateStatus::Failed => "failed",
            GateStatus::None => "none",
        }
    }

    pub fn parse(text: &str) -> Option<GateStatus> {
        [GateStatus::Passed, GateStatus::Failed, GateStatus::None]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

/// A project's quality gate as `/v1/projects/{project_id}/gate` reads and sets it: each
/// condition null when not set; all three null, no gate (every push passes).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
// A misspelt condition must not quietly become "no such condition".
#[serde(deny_unknown_fields)]
pub struct ProjectGate {
    /// A scan below this score fails (0–100).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 100, example = 80))]
    pub min_score: Option<f64>,
    /// A scan whose score dropped more than this since its line's previous scan fails (0–100).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 100, example = 5))]
    pub max_drop: Option<f64>,
    /// A scan with an open finding at this severity or above that its line's previous scan
    /// did not have (and nobody triaged) fails.
    #[serde(default)]
    pub new_findings_at: Option<Severity>,
}

/// Every documented error: `{"error": "<code>", "message": "<human text>"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ErrorBody {
    /// Machine-readable code, e.g. `invalid_api_key`.
    pub error: String,
    /// Human-readable explanation, saying what to do next.
    pub message: String,
}

/// An optional object that must be written as one: serde would otherwise also read a struct
/// from an array of its fields in order (`"git": [null, null]`), which the schema refuses.
fn object_or_null<'de, D, T>(de: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct Object<T>(std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Object<T> {
        type Value = Option<T>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object or null")
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D2: serde::Deserializer<'de>>(
            self,
            de: D2,
        ) -> Result<Self::Value, D2::Error> {
            de.deserialize_any(self)
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            T::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(Some)
        }
    }
    de.deserialize_option(Object(std::marker::PhantomData))
}

/// A count: any JSON number with no fractional part, so `2.0` and `1e3` are read as 2 and
/// 1000 (JSON has one number type, and JSON Schema's `integer` admits both).
fn whole_number<'de, D: serde::Deserializer<'de>>(de: D) -> Result<u64, D::Error> {
    struct Whole;
    impl serde::de::Visitor<'_> for Whole {
        type Value = u64;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a whole number of at least 0")
        }
        fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<u64, E> {
            Ok(n)
        }
        fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<u64, E> {
            u64::try_from(n).map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(n), &self))
        }
        fn visit_f64<E: serde::de::Error>(self, x: f64) -> Result<u64, E> {
            // 2^64 is the first float past u64::MAX; every float from 2^53 up is whole.
            if x.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&x) {
                Ok(x as u64)
            } else {
                Err(E::invalid_value(serde::de::Unexpected::Float(x), &self))
            }
        }
    }
    de.deserialize_any(Whole)
}

/// `frameworks`: utoipa has no attribute for the items of a `Vec<String>`.
#[cfg(feature = "openapi")]
fn framework_ids() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
    let id = ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(128))
        .pattern(Some("^[^\\u0000-\\u001f\\u007f-\\u009f]+$"));
    ArrayBuilder::new()
        .description(Some(
            "IDs of the frameworks scanned: at least one, each 1–128 characters with no control \
             characters.",
        ))
        .items(id)
        .min_items(Some(1))
        .build()
}
