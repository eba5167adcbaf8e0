//! A scan's compliance report (issue 47) as a file: a printable HTML page, a Prowler-shaped
//! CSV, or the report's JSON signed with the installation's published keys. `/v1` and the
//! dashboard's links answer the same files; the report itself is `tidemark_domain::report`.

use std::collections::HashMap;
use std::fmt::Write as _;

use sha2::{Digest as _, Sha256};
use tidemark_domain::push::MAX_FINDINGS;
use tidemark_domain::report::{build_report, describe_with, report_csv, ReportInput};
use tidemark_domain::{now_millis, to_rfc3339};
use tidemark_store::dashboard::{list_findings, FindingFilter};
use tidemark_store::Db;
use tidemark_wire::ids::{AccountId, ProjectId, ScanId};
use tidemark_wire::report::{
    ComplianceReport, ReportClaims, ReportProject, ReportScan, ReportTriage, SignedReport,
    REPORT_TYP,
};

use super::{file_stem, scan_of, File, ScanFindings};
use crate::crypto::signing::Signer;
use crate::ServiceError;

/// What a report is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    Html,
    Csv,
    /// The report's JSON text with a JWS over its SHA-256.
    Signed,
}

impl ReportFormat {
    pub fn parse(text: &str) -> Option<ReportFormat> {
        match text {
            "html" => Some(ReportFormat::Html),
            "csv" => Some(ReportFormat::Csv),
            "json" => Some(ReportFormat::Signed),
            _ => None,
        }
    }
}

/// The report of the account's scan, judged with the triage that holds now and the custom
/// frameworks the licence may use.
pub async fn scan_report(
    db: &Db,
    signer: &Signer,
    account_id: &AccountId,
    project_id: &ProjectId,
    scan_id: &ScanId,
    format: ReportFormat,
) -> Result<ScanFindings, ServiceError> {
    let (project, scan) = match scan_of(db, account_id, project_id, scan_id).await? {
        Ok(found) => found,
        Err(none) => return Ok(none),
    };
    let now = now_millis();
    let limit = i64::try_from(MAX_FINDINGS).unwrap_or(i64::MAX);
    let filter = FindingFilter::default();
    let (rows, _) = list_findings(db, project_id, scan.seq, &filter, 0, limit).await?;
    let findings: Vec<ReportInput> = rows
        .into_iter()
        .map(|f| ReportInput {
            rule_id: f.rule_id,
            resource: f.resource,
            status: f.status,
            severity: f.severity,
            message: f.message,
        })
        .collect();
    let triage: HashMap<(String, String), ReportTriage> = match &scan.line_id {
        Some(line) => tidemark_store::findings::triaged_on_line(db, line, now)
            .await?
            .into_iter()
            .filter_map(|(key, row)| {
                Some((
                    key,
                    ReportTriage {
                        state: row.triage_state?,
                        reason: row.triage_reason.unwrap_or_default(),
                        by: row.triaged_by.unwrap_or_default(),
                        at: row.triaged_at.map(to_rfc3339).unwrap_or_default(),
                        expires_at: row.triage_expires_at.map(to_rfc3339),
                    },
                ))
            })
            .collect(),
        None => HashMap::new(),
    };
    let customs = tidemark_store::frameworks::in_force(db, account_id).await?;
    let mut report = build_report(
        ReportProject {
            id: project.id.to_string(),
            label: project.label.clone(),
        },
        ReportScan {
            scan_id: scan.scan_id.to_string(),
            scanned_at: to_rfc3339(scan.scanned_at),
            received_at: to_rfc3339(scan.received_at),
            cloud: scan.cloud.clone(),
            cloud_account_id: scan.cloud_account_id.clone(),
            score: scan.score,
            branch: scan.branch.clone(),
            pull_request: scan.pull_request,
            commit: scan.commit.clone(),
            pushed_by: scan.pushed_by.clone(),
        },
        &scan.frameworks,
        &findings,
        &triage,
        &customs,
        to_rfc3339(now),
    );
    let mut catalogues = Vec::new();
    for fw in &report.frameworks {
        if let Some(c) = crate::catalogues::find(db, &fw.framework).await? {
            catalogues.push(c);
        }
    }
    describe_with(&mut report, &catalogues);
    let stem = format!("{}-{}-compliance", file_stem(&project.label), scan.scan_id);
    let file = match format {
        ReportFormat::Html => File {
            inline: true,
            policy: Some(report_policy()),
            ..File::new(
                "text/html; charset=utf-8",
                format!("{stem}.html"),
                report_html(&report).into_bytes(),
            )
        },
        ReportFormat::Csv => File::new(
            "text/csv; charset=utf-8",
            format!("{stem}.csv"),
            report_csv(&report).into_bytes(),
        ),
        ReportFormat::Signed => {
            let signed = sign_report(db, signer, &report, now).await?;
            File::new(
                "application/json",
                format!("{stem}.json"),
                serde_json::to_vec_pretty(&signed).map_err(ServiceError::internal)?,
            )
        }
    };
    Ok(ScanFindings::File(file))
}

/// The report's JSON text, and a JWS (`typ` [`REPORT_TYP`]) over its SHA-256 by the key whose
/// turn it is to sign (the keys `/v1/keys` publishes).
pub async fn sign_report(
    db: &Db,
    signer: &Signer,
    report: &ComplianceReport,
    now: i64,
) -> Result<SignedReport, ServiceError> {
    let text = serde_json::to_string_pretty(report).map_err(ServiceError::internal)?;
    let claims = ReportClaims {
        iss: signer.issuer().to_owned(),
        sub: format!("{}/{}", report.project.id, report.scan.scan_id),
        iat: now.div_euclid(1000),
        report_sha256: hex::encode(Sha256::digest(text.as_bytes())),
    };
    let (signature, _kid) = signer
        .sign(db, REPORT_TYP, &claims)
        .await
        .map_err(ServiceError::internal)?;
    Ok(SignedReport {
        report: text,
        signature,
    })
}

/// The report page's policy: nothing but its own style sheet (by hash), so nothing a report
/// holds (resource names, messages, reasons, all escaped anyway) could run or load anything.
fn report_policy() -> String {
    use base64::Engine as _;
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(PRINT_CSS));
    format!(
        "default-src 'none'; style-src 'sha256-{hash}'; frame-ancestors 'none'; base-uri 'none'; \
         form-action 'none'"
    )
}

fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const PRINT_CSS: &str = "body{font:14px/1.45 system-ui,sans-serif;color:#1a1a1a;\
background:#fff;margin:2rem;}\
h1{font-size:1.5rem;margin:0 0 .25rem}h2{font-size:1.2rem;margin:2rem 0 .5rem;\
border-bottom:2px solid #333}table{border-collapse:collapse;width:100%;margin:.5rem 0}\
th,td{border:1px solid #999;padding:.25rem .4rem;text-align:left;vertical-align:top;\
overflow-wrap:anywhere}table{table-layout:fixed}\
th{background:#eee}.passed{color:#0a5d1a}.failed{color:#9b1111;font-weight:600}\
.triaged{color:#7a4b00}.not_evaluated{color:#555}dl{display:grid;\
grid-template-columns:max-content 1fr;gap:.15rem 1rem}dt{font-weight:600}\
ul{margin:.2rem 0 .2rem 1.1rem;padding:0}.muted{color:#555}\
@media print{body{margin:0}h2{break-after:avoid}tr{break-inside:avoid}\
a{color:inherit;text-decoration:none}}";

/// The report as a page that prints cleanly (to PDF from any browser).
pub fn report_html(r: &ComplianceReport) -> String {
    let s = &r.scan;
    let mut out = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Compliance report · {} · {}</title><style>{PRINT_CSS}</style></head><body>\
         <main><h1>Compliance report: {}</h1><p class=\"muted\">Scan {} · generated {} \
         (triage as it stood then)</p><dl>",
        esc(&r.project.label),
        esc(&s.scan_id),
        esc(&r.project.label),
        esc(&s.scan_id),
        esc(&r.generated_at),
    );
    let mut fact = |name: &str, value: String| {
        let _ = write!(out, "<dt>{name}</dt><dd>{}</dd>", esc(&value));
    };
    fact(
        "Cloud",
        format!("{} · account {}", s.cloud, s.cloud_account_id),
    );
    fact("Scanned at", s.scanned_at.clone());
    fact("Received at", s.received_at.clone());
    fact("Score", format!("{:.1}", s.score));
    if let Some(b) = &s.branch {
        fact("Branch", b.clone());
    }
    if let Some(n) = s.pull_request {
        fact("Pull request", format!("#{n}"));
    }
    if let Some(c) = &s.commit {
        fact("Commit", c.clone());
    }
    if let Some(p) = &s.pushed_by {
        fact("Pushed by", p.describe());
    }
    out.push_str(
        "</dl><h2>Summary</h2><table><thead><tr><th scope=\"col\">Framework</th>\
        <th scope=\"col\">Passing</th><th scope=\"col\">Passed</th><th scope=\"col\">Failed</th>\
        <th scope=\"col\">Triaged</th><th scope=\"col\">Not evaluated</th></tr></thead><tbody>",
    );
    for fw in &r.frameworks {
        let c = &fw.counts;
        let share = c
            .share_passing
            .map_or("–".to_owned(), |s| format!("{:.0}%", s * 100.0));
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{share}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&fw.framework),
            c.passed,
            c.failed,
            c.triaged,
            c.not_evaluated
        );
    }
    out.push_str("</tbody></table>");
    for fw in &r.frameworks {
        framework_html(&mut out, fw);
    }
    out.push_str("</main></body></html>");
    out
}

fn framework_html(out: &mut String, fw: &tidemark_wire::report::ReportFramework) {
    let _ = write!(
        out,
        "<h2>{}</h2><table><thead><tr><th scope=\"col\">Requirement</th>\
         <th scope=\"col\">Section</th><th scope=\"col\">Status</th>\
         <th scope=\"col\">Failing resources</th></tr></thead><tbody>",
        esc(&fw.framework)
    );
    for req in &fw.requirements {
        let title = req
            .title
            .as_ref()
            .map(|t| format!("<br><span class=\"muted\">{}</span>", esc(t)))
            .unwrap_or_default();
        let mut failures = String::new();
        if !req.failures.is_empty() {
            failures.push_str("<ul>");
            for f in &req.failures {
                let triage = f
                    .triage
                    .as_ref()
                    .map(|t| {
                        format!(
                            "<br><em>{}</em> by {} on {}{}: {}",
                            esc(&t.state.replace('_', " ")),
                            esc(&t.by),
                            esc(&t.at),
                            t.expires_at
                                .as_ref()
                                .map(|e| format!(", until {}", esc(e)))
                                .unwrap_or_default(),
                            esc(&t.reason)
                        )
                    })
                    .unwrap_or_default();
                let _ = write!(
                    failures,
                    "<li><code>{}</code> ({} {}): {}{triage}</li>",
                    esc(&f.resource),
                    esc(&f.status),
                    esc(&f.severity),
                    esc(&f.message)
                );
            }
            failures.push_str("</ul>");
        }
        let _ = write!(
            out,
            "<tr><td><code>{}</code>{title}</td><td>{}</td><td class=\"{}\">{}</td><td>{failures}</td></tr>",
            esc(&req.id),
            esc(&req.section),
            esc(&req.status),
            esc(&req.status.replace('_', " "))
        );
    }
    out.push_str("</tbody></table>");
}
