//! Exports: a scan's findings as CSV or SARIF 2.1.0, and a project's score history as CSV.
//! The formats are plain functions from stored rows to bytes; the loaders below find the
//! rows within one account, so the dashboard's links and `/v1` return the same files.

use axum::body::Body;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use sha2::{Digest as _, Sha256};
use tidemark_domain::push::MAX_FINDINGS;
use tidemark_domain::to_rfc3339;
use tidemark_store::dashboard::{
    find_project, find_scan, list_findings, scans_after, FindingFilter, FindingRow, ScanRow,
};
use tidemark_store::{Db, StoreError};
use tidemark_wire::ids::{AccountId, ProjectId, ScanId};

/// History rows read per query while streaming a history export.
const HISTORY_PAGE: i64 = 2_000;

/// What a findings export is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FindingsFormat {
    Csv,
    Sarif,
}

/// A file to download.
pub struct Download {
    content_type: &'static str,
    filename: String,
    body: Body,
    /// Shown in the browser (a page to read or print) rather than saved.
    inline: bool,
    /// The page's own Content-Security-Policy (otherwise the site's: nothing allowed).
    policy: Option<String>,
}

impl Download {
    pub fn new(content_type: &'static str, filename: String, body: Body) -> Self {
        Download {
            content_type,
            filename,
            body,
            inline: false,
            policy: None,
        }
    }

    /// Served with `policy` as its Content-Security-Policy.
    pub fn with_policy(self, policy: String) -> Self {
        Download {
            policy: Some(policy),
            ..self
        }
    }

    pub fn inline(content_type: &'static str, filename: String, body: Body) -> Self {
        Download {
            inline: true,
            ..Download::new(content_type, filename, body)
        }
    }
}

impl IntoResponse for Download {
    fn into_response(self) -> Response {
        let kind = if self.inline { "inline" } else { "attachment" };
        let disposition = format!("{kind}; filename=\"{}\"", self.filename);
        let mut res = self.body.into_response();
        let h = res.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(self.content_type),
        );
        if let Ok(v) = HeaderValue::from_str(&disposition) {
            h.insert(header::CONTENT_DISPOSITION, v);
        }
        if let Some(v) = self.policy.and_then(|p| HeaderValue::from_str(&p).ok()) {
            h.insert(header::CONTENT_SECURITY_POLICY, v);
        }
        res
    }
}

/// A project label as part of a file name: labels may hold `/` and spaces.
pub(crate) fn file_stem(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// What a findings export finds.
pub enum ScanFindings {
    File(Download),
    /// The account has no such project or scan (ids that cannot exist are not looked up).
    Missing,
    /// Housekeeping removed the scan's findings; its row in the history stays.
    Thinned,
}

/// What a thinned scan's finding endpoints say (`410 Gone`).
pub use tidemark_domain::housekeeping::THINNED_MESSAGE;

/// A scan's findings in `format`.
pub async fn scan_findings(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
    scan_id: &ScanId,
    format: FindingsFormat,
    dashboard_url: &str,
) -> Result<ScanFindings, StoreError> {
    let Some(project) = find_project(db, account_id, project_id).await? else {
        return Ok(ScanFindings::Missing);
    };
    let Some((scan, _previous)) = find_scan(db, account_id, project_id, scan_id).await? else {
        return Ok(ScanFindings::Missing);
    };
    if scan.thinned {
        return Ok(ScanFindings::Thinned);
    }
    let limit = i64::try_from(MAX_FINDINGS).unwrap_or(i64::MAX);
    let (findings, _) = list_findings(
        db,
        project_id,
        scan.seq,
        &FindingFilter::default(),
        0,
        limit,
    )
    .await?;
    let stem = format!("{}-{}", file_stem(&project.label), scan.scan_id);
    Ok(ScanFindings::File(match format {
        FindingsFormat::Csv => Download {
            content_type: "text/csv; charset=utf-8",
            filename: format!("{stem}-findings.csv"),
            body: Body::from(findings_csv(&findings)),
            inline: false,
            policy: None,
        },
        FindingsFormat::Sarif => {
            let target = ExportProject {
                id: &project.id,
                label: &project.label,
            };
            let triaged = match &scan.line_id {
                Some(line) => {
                    tidemark_store::findings::triaged_on_line(
                        db,
                        line,
                        tidemark_domain::now_millis(),
                    )
                    .await?
                }
                None => Default::default(),
            };
            let log = findings_sarif(&target, &scan, &findings, &triaged, dashboard_url);
            Download {
                content_type: "application/sarif+json",
                filename: format!("{stem}.sarif"),
                body: Body::from(serde_json::to_vec(&log).unwrap_or_default()),
                inline: false,
                policy: None,
            }
        }
    }))
}

/// The project's whole history as CSV, oldest first, streamed a page at a time (a project
/// may have hundreds of thousands of scans); `None` when the account has no such project.
pub async fn project_history(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
) -> Result<Option<Download>, StoreError> {
    let Some(project) = find_project(db, account_id, project_id).await? else {
        return Ok(None);
    };
    struct Cursor {
        db: Db,
        account_id: AccountId,
        project_id: ProjectId,
        after_seq: i64,
        first: bool,
        done: bool,
    }
    let start = Cursor {
        db: db.clone(),
        account_id: account_id.to_owned(),
        project_id: project_id.to_owned(),
        after_seq: 0,
        first: true,
        done: false,
    };
    let pages = futures_util::stream::unfold(start, |mut c| async move {
        if c.done {
            return None;
        }
        let page = match scans_after(
            &c.db,
            &c.account_id,
            &c.project_id,
            c.after_seq,
            HISTORY_PAGE,
        )
        .await
        {
            Ok(page) => page,
            Err(err) => {
                // The status has been sent: all that is left is to cut the body short,
                // which the client sees as an incomplete download.
                tracing::error!(%err, "history export stopped");
                c.done = true;
                return Some((Err(std::io::Error::other("history export stopped")), c));
            }
        };
        c.done = i64::try_from(page.len()).unwrap_or(0) < HISTORY_PAGE;
        c.after_seq = page.last().map_or(c.after_seq, |s| s.seq);
        let chunk = history_csv(&page, c.first);
        c.first = false;
        Some((Ok::<_, std::io::Error>(chunk), c))
    });
    Ok(Some(Download {
        content_type: "text/csv; charset=utf-8",
        filename: format!("{}-history.csv", file_stem(&project.label)),
        // Fused: a body may be polled again after its end (the compression layer does), and
        // an `unfold` stream panics when it is.
        body: Body::from_stream(futures_util::StreamExt::fuse(pages)),
        inline: false,
        policy: None,
    }))
}

/// The project a file is about (named in the file and its download name).
pub struct ExportProject<'a> {
    pub id: &'a ProjectId,
    pub label: &'a str,
}

/// A spreadsheet would run a cell that starts with one of these as a formula (CSV
/// injection): such text cells get a leading apostrophe, which spreadsheets show as text.
fn cell(text: &str) -> std::borrow::Cow<'_, str> {
    if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{text}").into()
    } else {
        text.into()
    }
}

fn csv_bytes(header: Option<&[&str]>, rows: impl Iterator<Item = Vec<String>>) -> Vec<u8> {
    let mut out = csv::Writer::from_writer(Vec::new());
    // Writing to a Vec cannot fail; a failure here would be a bug in the csv crate.
    if let Some(header) = header {
        let _ = out.write_record(header);
    }
    for row in rows {
        let _ = out.write_record(&row);
    }
    out.into_inner().unwrap_or_default()
}

pub const FINDINGS_CSV_HEADER: [&str; 6] = [
    "rule_id",
    "resource",
    "status",
    "severity",
    "message",
    "remediation",
];

/// Every finding of a scan, in the scanner's order.
pub fn findings_csv(findings: &[FindingRow]) -> Vec<u8> {
    csv_bytes(
        Some(&FINDINGS_CSV_HEADER),
        findings.iter().map(|f| {
            vec![
                cell(&f.rule_id).into_owned(),
                cell(&f.resource).into_owned(),
                f.status.clone(),
                f.severity.clone(),
                cell(&f.message).into_owned(),
                cell(&f.remediation).into_owned(),
            ]
        }),
    )
}

pub const HISTORY_CSV_HEADER: [&str; 18] = [
    "scanned_at",
    "scan_id",
    "score",
    "score_delta",
    "passed",
    "failed",
    "critical",
    "high",
    "medium",
    "low",
    "gate_status",
    "gate_reasons",
    "received_at",
    // Added with branches: after the first columns, so readers by position keep working.
    "branch",
    "pull_request",
    "commit",
    // Added with keyless CI: how the scan was pushed, and the CI run's page.
    "pushed_by",
    "ci_run_url",
];

/// Rows of a project's history, oldest first (the header once, at the start).
pub fn history_csv(scans: &[ScanRow], with_header: bool) -> Vec<u8> {
    let rows = scans.iter().map(|s| {
        vec![
            to_rfc3339(s.scanned_at),
            s.scan_id.to_string(),
            s.score.to_string(),
            tidemark_domain::text::score_delta(s.score_delta),
            s.passed.to_string(),
            s.failed.to_string(),
            s.severities.critical.to_string(),
            s.severities.high.to_string(),
            s.severities.medium.to_string(),
            s.severities.low.to_string(),
            s.gate.status.as_str().to_owned(),
            cell(&s.gate.reasons.join("; ")).into_owned(),
            to_rfc3339(s.received_at),
            cell(s.branch.as_deref().unwrap_or("")).into_owned(),
            s.pull_request.map(|n| n.to_string()).unwrap_or_default(),
            s.commit.clone().unwrap_or_default(),
            cell(
                &s.pushed_by
                    .as_ref()
                    .map(tidemark_wire::PushedBy::describe)
                    .unwrap_or_default(),
            )
            .into_owned(),
            match &s.pushed_by {
                Some(tidemark_wire::PushedBy::Ci(id)) => id.run_url.clone().unwrap_or_default(),
                _ => String::new(),
            },
        ]
    });
    csv_bytes(with_header.then_some(&HISTORY_CSV_HEADER[..]), rows)
}

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
