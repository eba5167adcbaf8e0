//! The body of a webhook delivery (`format: tidemark`).

use serde::{Deserialize, Serialize};

#[cfg(feature = "openapi")]
use utoipa::ToSchema;

use super::*;

/// The body of a webhook delivery (`format: tidemark`), signed in the `Tidemark-Signature`
/// header. Receivers should ignore fields they do not know: more may be added.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct WebhookEvent {
    /// `evt_` + 20 lowercase base32 characters. The same on every attempt and redelivery of
    /// the event: receivers use it to drop duplicates.
    #[cfg_attr(feature = "openapi", schema(example = "evt_3k5v7x2m4q6s8u0w1y3a"))]
    pub id: String,
    /// `scan.pushed`, `gate.failed`, `score.regressed`, `pull_request.gate_failed`,
    /// `posture.drifted`, `keys.rotated` or `webhook.test`.
    #[serde(rename = "type")]
    #[cfg_attr(feature = "openapi", schema(example = "gate.failed"))]
    pub event_type: String,
    /// When the event happened (RFC 3339, UTC).
    #[cfg_attr(feature = "openapi", schema(format = DateTime))]
    pub created_at: String,
    pub account_id: String,
    /// The project, for scan events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<WebhookProject>,
    /// The scan, for scan events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scan: Option<WebhookScan>,
    /// Where to look in the dashboard: the scan's page, or Settings for account events.
    pub dashboard_url: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct WebhookProject {
    pub id: String,
    pub label: String,
}

/// The summary of the scan an event is about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct WebhookScan {
    pub scan_id: String,
    pub score: f64,
    /// This score minus the previous scan's (0 for a project's first scan).
    pub score_delta: f64,
    pub passed: u64,
    pub failed: u64,
    pub severity_counts: SeverityCounts,
    #[cfg_attr(feature = "openapi", schema(format = DateTime))]
    pub scanned_at: String,
    pub gate: GateResult,
    /// The branch the scan was pushed from (a pull request's source branch), when known.
    /// For `scan.pushed` this may be any branch; `gate.failed` and `score.regressed` are
    /// raised on the project's default branch only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The commit scanned, when the push named it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// For a pull request's scan (and `pull_request.gate_failed`): the request and its
    /// comparison with its base.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<WebhookPullRequest>,
    /// How the scan was pushed: an API key (prefix and machine) or a keyless CI identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pushed_by: Option<PushedBy>,
    /// Requirements that passed in the branch's previous scan and fail in this one, per
    /// framework (only for licences with `drift_detection`; absent when nothing drifted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drifted: Vec<DriftedRequirements>,
}

/// One framework's requirements that drifted in a scan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct DriftedRequirements {
    /// As posture names it (`cis-aws-2.0`, or `custom:<id>`).
    pub framework: String,
    /// Rule ids (for a custom framework, `custom:<id>-<control id>`).
    pub requirements: Vec<String>,
}

/// A pull request as a scan event describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct WebhookPullRequest {
    pub number: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Its comparison with the base branch's latest scan when it was pushed.
    pub base: BaseComparison,
}
