//! The compliance report of one scan (issue 47): per framework every requirement with its
//! status, the resources and messages behind each failure, each triage, the scan's provenance
//! and the posture summary. `GET /v1/projects/{project}/scans/{scan}/report?format=json`
//! answers a [`SignedReport`]: the report as JSON text and a JWS over its SHA-256, signed with
//! the installation's published keys (`/v1/keys`), so anyone can check it offline.

use serde::{Deserialize, Serialize};

#[cfg(feature = "openapi")]
use utoipa::ToSchema;

use crate::posture::PostureCounts;
use crate::PushedBy;

/// The JWS `typ` of a report's signature.
pub const REPORT_TYP: &str = "tidemark-report+jwt";
/// What a report says it is.
pub const REPORT_KIND: &str = "tidemark.compliance_report.v1";

/// The signed file: `report` is the report's JSON text exactly as signed (hash its UTF-8
/// bytes), `signature` a compact JWS whose payload is [`ReportClaims`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct SignedReport {
    pub report: String,
    pub signature: String,
}

/// The signature's payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ReportClaims {
    /// The installation (its dashboard URL), as in verdicts.
    pub iss: String,
    /// `<project id>/<scan id>`.
    pub sub: String,
    /// When it was signed (Unix seconds).
    pub iat: i64,
    /// Lower-case hex SHA-256 of the report's UTF-8 bytes.
    pub report_sha256: String,
}

/// A compliance report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ComplianceReport {
    /// [`REPORT_KIND`].
    pub kind: String,
    /// RFC 3339; triage is as it stood then.
    pub generated_at: String,
    pub project: ReportProject,
    pub scan: ReportScan,
    pub frameworks: Vec<ReportFramework>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ReportProject {
    pub id: String,
    pub label: String,
}

/// Where the scan came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ReportScan {
    pub scan_id: String,
    pub scanned_at: String,
    pub received_at: String,
    pub cloud: String,
    pub cloud_account_id: String,
    pub score: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// An API key (prefix, machine) or the keyless CI identity that pushed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pushed_by: Option<PushedBy>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ReportFramework {
    /// As posture names it.
    pub framework: String,
    pub counts: PostureCounts,
    /// By id.
    pub requirements: Vec<ReportRequirement>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ReportRequirement {
    /// The rule id (for a custom framework, its control id).
    pub id: String,
    pub section: String,
    /// `passed`, `failed`, `triaged` or `not_evaluated`.
    pub status: String,
    /// For a custom framework's control: its title and the rules mapped to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<String>,
    /// Every open finding behind it (resource, status, severity, message).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<ReportFinding>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ReportFinding {
    pub rule_id: String,
    pub resource: String,
    pub status: String,
    pub severity: String,
    pub message: String,
    /// Its triage, when one holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub triage: Option<ReportTriage>,
}

/// A triage: who set the finding aside, why, when, until when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ReportTriage {
    /// `accepted_risk`, `false_positive` or `wont_fix`.
    pub state: String,
    pub reason: String,
    pub by: String,
    pub at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
}
