//! A scan's findings as one SARIF 2.1.0 run, for code-scanning tools.

use serde::Serialize;
use sha2::{Digest as _, Sha256};
use tidemark_domain::to_rfc3339;
use tidemark_store::dashboard::{FindingRow, ScanRow};

use tidemark_wire::ids::{ProjectId, ScanId};

use super::ExportProject;

/// The SARIF 2.1.0 schema's URI, as `$schema` names it.
pub const SARIF_SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SarifLog {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: [SarifRun; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifRun {
    tool: SarifTool,
    automation_details: AutomationDetails,
    /// Where the scanned code came from, when the push said (repository, commit, branch).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    version_control_provenance: Vec<VersionControl>,
    invocations: [Invocation; 1],
    results: Vec<SarifResult>,
    properties: RunProperties,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct VersionControl {
    repository_uri: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    revision_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    branch: Option<String>,
}

#[derive(Serialize)]
struct SarifTool {
    driver: Driver,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Driver {
    name: &'static str,
    version: &'static str,
    information_uri: String,
    rules: Vec<Rule>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    id: String,
    default_configuration: Configuration,
    properties: RuleProperties,
}

#[derive(Serialize)]
struct Configuration {
    level: &'static str,
}

#[derive(Serialize)]
struct RuleProperties {
    /// The framework the rule belongs to (its id's prefix).
    tags: Vec<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AutomationDetails {
    /// `<project label>/<scan id>`: GitHub code scanning groups runs by the part before the
    /// last slash.
    id: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Invocation {
    execution_successful: bool,
    end_time_utc: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult {
    rule_id: String,
    rule_index: usize,
    kind: &'static str,
    level: &'static str,
    message: Message,
    locations: [Location; 1],
    partial_fingerprints: Fingerprints,
    /// A triaged finding: set aside in Tidemark, with the reason given there.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    suppressions: Vec<Suppression>,
    properties: ResultProperties,
}

#[derive(Serialize)]
struct Suppression {
    /// `external`: the decision was made outside the analysed files (in Tidemark).
    kind: &'static str,
    status: &'static str,
    justification: String,
}

#[derive(Serialize)]
struct Message {
    text: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Location {
    logical_locations: [LogicalLocation; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LogicalLocation {
    fully_qualified_name: String,
    kind: &'static str,
}

#[derive(Serialize)]
struct Fingerprints {
    /// sha256 of rule id and resource: the same finding has the same value in every scan.
    #[serde(rename = "tidemarkFinding/v1")]
    finding: String,
}

#[derive(Serialize)]
struct ResultProperties {
    status: String,
    severity: String,
    remediation: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RunProperties {
    project_id: ProjectId,
    project_label: String,
    scan_id: ScanId,
    score: f64,
    score_delta: f64,
    dashboard_url: String,
}

/// SARIF's view of a finding: `kind` (did the check fail?) and `level` (how bad). A finding
/// that is not a failure has level `none`, as SARIF requires.
fn kind_and_level(status: &str, severity: &str) -> (&'static str, &'static str) {
    let level = match severity {
        "critical" | "high" => "error",
        "medium" => "warning",
        _ => "note",
    };
    match status {
        "FAIL" => ("fail", level),
        // A warning is an open finding the scanner was less sure of.
        "WARN" => ("fail", "warning"),
        // The check itself could not run: someone should look.
        "ERROR" => ("review", "none"),
        "PASS" => ("pass", "none"),
        _ => ("notApplicable", "none"),
    }
}

fn severity_level(severity: &str) -> &'static str {
    kind_and_level("FAIL", severity).1
}

/// A rule id is `<framework>-<rule>`; the framework is the part before the last `-` that is
/// followed by the rule number (`cis-aws-2.0-1.1` → `cis-aws-2.0`).
fn framework_of(rule_id: &str) -> Option<&str> {
    rule_id
        .rsplit_once('-')
        .map(|(framework, _)| framework)
        .filter(|f| !f.is_empty())
}

/// The triaged findings of a scan's line, by (rule id, resource).
pub type Triaged =
    std::collections::HashMap<(String, String), tidemark_store::findings::TrackedRow>;

/// An open finding that someone triaged is an accepted external suppression: "Accepted risk:
/// <reason>" (with the expiry, if any), so code-scanning tools show it dismissed.
fn suppression(triaged: &Triaged, f: &FindingRow) -> Option<Suppression> {
    if !matches!(f.status.as_str(), "FAIL" | "WARN" | "ERROR") {
        return None;
    }
    let row = triaged.get(&(f.rule_id.clone(), f.resource.clone()))?;
    let state = row.triage_state()?;
    let until = row
        .triage_expires_at
        .map(|at| format!(" (until {})", &to_rfc3339(at)[..10]))
        .unwrap_or_default();
    Some(Suppression {
        kind: "external",
        status: "accepted",
        justification: format!(
            "{}{until}: {}",
            state.label(),
            row.triage_reason.as_deref().unwrap_or("")
        ),
    })
}

/// A scan's findings as one SARIF 2.1.0 run. Findings have no file and line: each is located
/// at its resource (a logical location of kind `resource`).
pub fn findings_sarif(
    project: &ExportProject<'_>,
    scan: &ScanRow,
    findings: &[FindingRow],
    triaged: &Triaged,
    dashboard_url: &str,
) -> SarifLog {
    let mut rules: Vec<Rule> = Vec::new();
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let results = findings
        .iter()
        .map(|f| {
            let rule_index = *index.entry(f.rule_id.as_str()).or_insert_with(|| {
                rules.push(Rule {
                    id: f.rule_id.clone(),
                    default_configuration: Configuration {
                        level: severity_level(&f.severity),
                    },
                    properties: RuleProperties {
                        tags: framework_of(&f.rule_id)
                            .map(str::to_owned)
                            .into_iter()
                            .collect(),
                    },
                });
                rules.len() - 1
            });
            let (kind, level) = kind_and_level(&f.status, &f.severity);
            SarifResult {
                rule_id: f.rule_id.clone(),
                rule_index,
                kind,
                level,
                message: Message {
                    text: if f.message.is_empty() {
                        format!("{} on {}", f.rule_id, f.resource)
                    } else {
                        f.message.clone()
                    },
                },
                locations: [Location {
                    logical_locations: [LogicalLocation {
                        fully_qualified_name: f.resource.clone(),
                        kind: "resource",
                    }],
                }],
                partial_fingerprints: Fingerprints {
                    finding: hex::encode(Sha256::digest(
                        format!("{}\n{}", f.rule_id, f.resource).as_bytes(),
                    )),
                },
                suppressions: suppression(triaged, f).into_iter().collect(),
                properties: ResultProperties {
                    status: f.status.clone(),
                    severity: f.severity.clone(),
                    remediation: f.remediation.clone(),
                },
            }
        })
        .collect();
    let scan_url = format!(
        "{dashboard_url}/projects/{}/scans/{}",
        project.id, scan.scan_id
    );
    SarifLog {
        schema: SARIF_SCHEMA,
        version: "2.1.0",
        runs: [SarifRun {
            tool: SarifTool {
                driver: Driver {
                    name: "Tidemark",
                    version: env!("CARGO_PKG_VERSION"),
                    information_uri: dashboard_url.to_owned(),
                    rules,
                },
            },
            automation_details: AutomationDetails {
                id: format!("{}/{}", project.label, scan.scan_id),
            },
            // SARIF requires the repository's address; without it the commit stays in the
            // dashboard only.
            version_control_provenance: scan
                .repository_url
                .clone()
                .map(|repository_uri| VersionControl {
                    repository_uri,
                    revision_id: scan.commit.clone(),
                    branch: scan.branch.clone(),
                })
                .into_iter()
                .collect(),
            invocations: [Invocation {
                execution_successful: true,
                end_time_utc: to_rfc3339(scan.scanned_at),
            }],
            results,
            properties: RunProperties {
                project_id: project.id.clone(),
                project_label: project.label.to_owned(),
                scan_id: scan.scan_id.clone(),
                score: scan.score,
                score_delta: scan.score_delta,
                dashboard_url: scan_url,
            },
        }],
    }
}
