//! The CSV files: a scan's findings and a project's history (RFC 4180, UTF-8, a header row).

use tidemark_domain::to_rfc3339;
use tidemark_store::dashboard::{FindingRow, ScanRow};

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

/// Any table as CSV: its heads, then its rows, each text cell made safe for spreadsheets.
pub fn table_csv(heads: &[&str], rows: &[Vec<String>]) -> Vec<u8> {
    csv_bytes(
        Some(heads),
        rows.iter()
            .map(|row| row.iter().map(|c| cell(c).into_owned()).collect()),
    )
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

pub const INBOX_CSV_HEADER: [&str; 14] = [
    "project",
    "branch",
    "rule_id",
    "resource",
    "severity",
    "state",
    "first_seen_at",
    "last_seen_at",
    "triage_state",
    "triage_reason",
    "triaged_by",
    "triage_expires_at",
    "finding_id",
    "project_id",
];

/// The findings inbox's rows as the view shows them at `now`.
pub fn inbox_csv(rows: &[tidemark_store::findings::inbox::InboxRow], now: i64) -> Vec<u8> {
    csv_bytes(
        Some(&INBOX_CSV_HEADER),
        rows.iter().map(|r| {
            let f = &r.finding;
            vec![
                cell(&r.project_label).into_owned(),
                cell(f.branch.as_deref().unwrap_or("")).into_owned(),
                cell(&f.rule_id).into_owned(),
                cell(&f.resource).into_owned(),
                f.severity.clone(),
                f.state(now).as_str().to_owned(),
                to_rfc3339(f.first_seen_at),
                to_rfc3339(f.last_seen_at),
                f.triage_state.clone().unwrap_or_default(),
                cell(f.triage_reason.as_deref().unwrap_or("")).into_owned(),
                cell(f.triaged_by.as_deref().unwrap_or("")).into_owned(),
                f.triage_expires_at.map(to_rfc3339).unwrap_or_default(),
                f.id.to_string(),
                f.project_id.to_string(),
            ]
        }),
    )
}
