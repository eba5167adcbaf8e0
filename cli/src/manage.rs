//! `tidemark findings list|triage` and `tidemark gate get|set`: a project's tracked findings,
//! their triage and its quality gate, through `/v1`. A project is named by its id or label.

use std::io::Write;

use anyhow::Context as _;
use clap::Subcommand;
use reqwest::Method;
use serde_json::{json, Value};
use tidemark_wire::findings::{
    BatchTriageResponse, FindingsPage, InboxFinding, InboxPage, TrackedFinding, TriageState,
};
use tidemark_wire::{ProjectGate, Severity};

use crate::client::Client;
use crate::credential::{api_key, explain};
use crate::env::Env;

/// Rows `findings list` prints at most (it follows the pages up to this).
const MAX_ROWS: usize = 10_000;

#[derive(Debug, Subcommand)]
pub enum FindingsCommand {
    /// List a project's findings, or with --all-projects the account's inbox across its
    /// projects: most severe first, then oldest first.
    List {
        /// The project's id (prj_…) or label.
        #[arg(required_unless_present = "all_projects")]
        project: Option<String>,
        /// Every live project of the account (`GET /v1/findings`): the project is a column.
        #[arg(long, conflicts_with = "project")]
        all_projects: bool,
        /// A branch name, or pr:<number> (default: each project's default branch); with
        /// --all-projects also `*` for every branch and pull request.
        #[arg(long)]
        branch: Option<String>,
        /// Only the rules of this framework (cis-aws-2.0). With --all-projects.
        #[arg(long, requires = "all_projects")]
        framework: Option<String>,
        /// Only this rule (requirement). With --all-projects.
        #[arg(long, requires = "all_projects")]
        rule: Option<String>,
        /// Only branches whose latest scan is of this cloud account. With --all-projects.
        #[arg(long, requires = "all_projects")]
        cloud_account: Option<String>,
        /// Only findings with this triage (lapsed: its expiry passed). With --all-projects.
        #[arg(long, requires = "all_projects", value_parser = ["none", "accepted_risk", "false_positive", "wont_fix", "lapsed"])]
        triage: Option<String>,
        /// Only findings first seen at least this many days ago. With --all-projects.
        #[arg(long, requires = "all_projects", value_name = "DAYS")]
        older_than_days: Option<u32>,
        /// Only findings in this state.
        #[arg(long, value_parser = ["open", "triaged", "fixed"])]
        state: Option<String>,
        /// Only findings of this severity.
        #[arg(long, value_parser = ["critical", "high", "medium", "low"])]
        severity: Option<String>,
        /// Print the findings as one JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Set findings aside with a reason (or undo that with --undo). Needs the API key.
    Triage {
        /// The project's id (prj_…) or label.
        project: String,
        /// The findings' ids (fnd_…), from `findings list`: one, or up to 100 triaged as one
        /// request (all or none).
        #[arg(required = true, num_args = 1..)]
        findings: Vec<String>,
        /// accepted_risk, false_positive or wont_fix.
        #[arg(long, value_parser = ["accepted_risk", "false_positive", "wont_fix"], required_unless_present = "undo")]
        state: Option<String>,
        /// Why (required with --state).
        #[arg(long, required_unless_present = "undo")]
        reason: Option<String>,
        /// When the triage lapses: a date (2027-03-01) or an RFC 3339 time.
        #[arg(long)]
        expires: Option<String>,
        /// Undo the finding's triage: it is open again.
        #[arg(long, conflicts_with_all = ["state", "reason", "expires"])]
        undo: bool,
        /// Print the answer as JSON (what `/v1` returned) instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum GateCommand {
    /// Print a project's quality gate.
    Get {
        /// The project's id (prj_…) or label.
        project: String,
        /// Print the answer as JSON (what `/v1` returned) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Replace a project's quality gate: the conditions not given are not checked; none at
    /// all removes the gate. Needs the API key.
    Set {
        /// The project's id (prj_…) or label.
        project: String,
        /// A scan below this score fails (0-100).
        #[arg(long)]
        min_score: Option<f64>,
        /// A scan whose score dropped more than this since the previous one fails (0-100).
        #[arg(long)]
        max_drop: Option<f64>,
        /// A new open finding at this severity or above fails the scan.
        #[arg(long, value_parser = ["critical", "high", "medium", "low"])]
        new_findings_at: Option<String>,
        /// Print the answer as JSON (what `/v1` returned) instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// A path segment, percent-encoded (labels may hold `/`, spaces, anything).
pub(crate) fn segment(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

pub(crate) fn query(pairs: &[(&str, Option<&str>)]) -> String {
    let parts: Vec<String> = pairs
        .iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k}={}", segment(v))))
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("?{}", parts.join("&"))
    }
}

pub async fn findings(
    client: &Client,
    env: &Env,
    out: &mut (dyn Write + Send),
    command: FindingsCommand,
) -> anyhow::Result<u8> {
    let key = api_key(client, env).await?;
    match command {
        FindingsCommand::List {
            project: None,
            branch,
            framework,
            rule,
            cloud_account,
            triage,
            older_than_days,
            state,
            severity,
            json,
            ..
        } => {
            let age = older_than_days.map(|d| d.to_string());
            let filters = [
                ("branch", branch.as_deref()),
                ("framework", framework.as_deref()),
                ("rule_id", rule.as_deref()),
                ("cloud_account", cloud_account.as_deref()),
                ("triage", triage.as_deref()),
                ("older_than_days", age.as_deref()),
                ("state", state.as_deref()),
                ("severity", severity.as_deref()),
            ];
            let rows = inbox_rows(client, &key, &filters).await?;
            print_inbox(out, &rows, env.now, json)?;
            Ok(0)
        }
        FindingsCommand::List {
            project: Some(project),
            branch,
            state,
            severity,
            json,
            ..
        } => {
            let filters = [
                ("branch", branch.as_deref()),
                ("state", state.as_deref()),
                ("severity", severity.as_deref()),
            ];
            let rows = project_rows(client, &key, &project, &filters).await?;
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?;
            } else {
                print_findings(out, &rows, env.now)?;
            }
            Ok(0)
        }
        FindingsCommand::Triage {
            project,
            findings,
            state,
            reason,
            expires,
            undo,
            json,
        } => {
            let one = |finding: &str| {
                format!(
                    "/v1/projects/{}/findings/{}/triage",
                    segment(&project),
                    segment(finding)
                )
            };
            let body = json!({"state": state, "reason": reason, "expires_at": expires});
            let answers: Vec<TrackedFinding> = match findings.as_slice() {
                [finding] if undo => {
                    vec![client
                        .call(Method::DELETE, &one(finding), &key, None)
                        .await
                        .map_err(explain)?]
                }
                [finding] => {
                    vec![client
                        .call(Method::PUT, &one(finding), &key, Some(&body))
                        .await
                        .map_err(explain)?]
                }
                // There is no batch undo in `/v1`: one request each, stopping at the first
                // refusal (those before it stay undone, as the output says).
                _ if undo => {
                    let mut done = Vec::new();
                    for finding in &findings {
                        match client.call(Method::DELETE, &one(finding), &key, None).await {
                            Ok(answer) => done.push(answer),
                            Err(err) => {
                                print_triaged(out, &done, true, false)?;
                                return Err(explain(err));
                            }
                        }
                    }
                    done
                }
                _ => {
                    let mut body = body;
                    body["finding_ids"] = json!(findings);
                    let path = format!("/v1/projects/{}/findings/triage", segment(&project));
                    let answer: BatchTriageResponse = client
                        .call(Method::POST, &path, &key, Some(&body))
                        .await
                        .map_err(explain)?;
                    answer.findings
                }
            };
            print_triaged(out, &answers, undo, json)?;
            Ok(0)
        }
    }
}

/// What a triage did, a line per finding (or as JSON: the finding for one, an array for more).
fn print_triaged(
    out: &mut (dyn Write + Send),
    answers: &[TrackedFinding],
    undo: bool,
    json: bool,
) -> anyhow::Result<()> {
    if json {
        match answers {
            [one] => writeln!(out, "{}", serde_json::to_string_pretty(one)?)?,
            many => writeln!(out, "{}", serde_json::to_string_pretty(many)?)?,
        }
        return Ok(());
    }
    for answer in answers {
        let what = match &answer.triage {
            Some(t) if !undo => describe_triage(t.state, t.expires_at.as_deref()),
            _ => "open again (triage undone)".to_owned(),
        };
        writeln!(
            out,
            "{} ({} on {}): {what}.",
            answer.id, answer.rule_id, answer.resource
        )?;
    }
    Ok(())
}

fn describe_triage(state: TriageState, expires_at: Option<&str>) -> String {
    match expires_at {
        Some(at) => format!("{} until {}", state.label(), &at[..at.len().min(10)]),
        None => state.label().to_owned(),
    }
}

/// One line per finding: severity, state, age, rule, resource and id, in columns.
/// Every page of one project's findings with `filters`, up to [`MAX_ROWS`].
async fn project_rows(
    client: &Client,
    key: &str,
    project: &str,
    filters: &[(&str, Option<&str>)],
) -> anyhow::Result<Vec<TrackedFinding>> {
    let base = format!("/v1/projects/{}/findings", segment(project));
    let mut rows: Vec<TrackedFinding> = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut pairs = filters.to_vec();
        pairs.push(("limit", Some("500")));
        pairs.push(("cursor", cursor.as_deref()));
        let page: FindingsPage = client
            .call(Method::GET, &format!("{base}{}", query(&pairs)), key, None)
            .await
            .map_err(explain)?;
        rows.extend(page.findings);
        cursor = page.next_cursor;
        if cursor.is_none() || rows.len() >= MAX_ROWS {
            return Ok(rows);
        }
    }
}

/// Every page of `GET /v1/findings` with `filters`, up to [`MAX_ROWS`].
async fn inbox_rows(
    client: &Client,
    key: &str,
    filters: &[(&str, Option<&str>)],
) -> anyhow::Result<Vec<InboxFinding>> {
    let mut rows: Vec<InboxFinding> = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut pairs = filters.to_vec();
        pairs.push(("limit", Some("500")));
        pairs.push(("cursor", cursor.as_deref()));
        let page: InboxPage = client
            .call(
                Method::GET,
                &format!("/v1/findings{}", query(&pairs)),
                key,
                None,
            )
            .await
            .map_err(explain)?;
        rows.extend(page.findings);
        cursor = page.next_cursor;
        if cursor.is_none() || rows.len() >= MAX_ROWS {
            return Ok(rows);
        }
    }
}

/// The inbox as `findings list --all-projects` prints it: the project first.
fn print_inbox(
    out: &mut (dyn Write + Send),
    rows: &[InboxFinding],
    now: chrono::DateTime<chrono::Utc>,
    json: bool,
) -> anyhow::Result<()> {
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(rows)?)?;
        return Ok(());
    }
    if rows.is_empty() {
        writeln!(out, "No findings.")?;
        return Ok(());
    }
    let width = |f: &dyn Fn(&InboxFinding) -> usize, min: usize| {
        rows.iter().map(f).max().unwrap_or(min).max(min)
    };
    let project_width = width(&|r| r.project_label.len(), 7);
    let rule_width = width(&|r| r.finding.rule_id.len(), 4);
    writeln!(
        out,
        "{:<project_width$}  {:<8}  {:<7}  {:>5}  {:<rule_width$}  {:<24}  RESOURCE",
        "PROJECT", "SEVERITY", "STATE", "AGE", "RULE", "ID"
    )?;
    for r in rows {
        let f = &r.finding;
        writeln!(
            out,
            "{:<project_width$}  {:<8}  {:<7}  {:>5}  {:<rule_width$}  {:<24}  {}",
            r.project_label,
            f.severity.as_str(),
            f.state.as_str(),
            age_days(&f.first_seen_at, now),
            f.rule_id,
            f.id,
            f.resource
        )?;
    }
    Ok(())
}

/// Whole days since an RFC 3339 time, as `12d`.
fn age_days(first: &str, now: chrono::DateTime<chrono::Utc>) -> String {
    chrono::DateTime::parse_from_rfc3339(first)
        .map(|t| {
            format!(
                "{}d",
                (now - t.with_timezone(&chrono::Utc)).num_days().max(0)
            )
        })
        .unwrap_or_default()
}

fn print_findings(
    out: &mut (dyn Write + Send),
    rows: &[TrackedFinding],
    now: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<()> {
    if rows.is_empty() {
        writeln!(out, "No findings.")?;
        return Ok(());
    }
    let age = |first: &str| {
        chrono::DateTime::parse_from_rfc3339(first)
            .map(|t| {
                let days = (now - t.with_timezone(&chrono::Utc)).num_days().max(0);
                format!("{days}d")
            })
            .unwrap_or_default()
    };
    let rule_width = rows
        .iter()
        .map(|r| r.rule_id.len())
        .max()
        .unwrap_or(4)
        .max(4);
    writeln!(
        out,
        "{:<8}  {:<7}  {:>5}  {:<rule_width$}  {:<22}  RESOURCE",
        "SEVERITY", "STATE", "AGE", "RULE", "ID"
    )?;
    for r in rows {
        writeln!(
            out,
            "{:<8}  {:<7}  {:>5}  {:<rule_width$}  {:<22}  {}",
            r.severity.as_str(),
            r.state.as_str(),
            age(&r.first_seen_at),
            r.rule_id,
            r.id,
            r.resource
        )?;
    }
    Ok(())
}

pub async fn gate(
    client: &Client,
    env: &Env,
    out: &mut (dyn Write + Send),
    command: GateCommand,
) -> anyhow::Result<u8> {
    let key = api_key(client, env).await?;
    let (gate, json): (ProjectGate, bool) = match command {
        GateCommand::Get { project, json } => {
            let path = format!("/v1/projects/{}/gate", segment(&project));
            let gate = client
                .call(Method::GET, &path, &key, None)
                .await
                .map_err(explain)?;
            (gate, json)
        }
        GateCommand::Set {
            project,
            min_score,
            max_drop,
            new_findings_at,
            json,
        } => {
            let path = format!("/v1/projects/{}/gate", segment(&project));
            let body: Value = serde_json::to_value(ProjectGate {
                min_score,
                max_drop,
                new_findings_at: new_findings_at.as_deref().and_then(Severity::parse),
            })
            .context("the gate could not be written as JSON")?;
            let gate = client
                .call(Method::PUT, &path, &key, Some(&body))
                .await
                .map_err(explain)?;
            (gate, json)
        }
    };
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&gate)?)?;
    } else {
        writeln!(out, "{}", describe_gate(&gate))?;
    }
    Ok(0)
}

/// The gate in words, as the dashboard says it.
pub fn describe_gate(gate: &ProjectGate) -> String {
    let mut parts = Vec::new();
    if let Some(min) = gate.min_score {
        parts.push(format!("score at least {min}"));
    }
    if let Some(drop) = gate.max_drop {
        parts.push(format!("a drop of at most {drop} points"));
    }
    if let Some(severity) = gate.new_findings_at {
        parts.push(format!(
            "no new open finding at {} or above",
            severity.as_str()
        ));
    }
    if parts.is_empty() {
        "No gate: every push passes, whatever its score.".to_owned()
    } else {
        format!("Gate: {}.", parts.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_travel_as_one_path_segment() {
        assert_eq!(segment("team/web app"), "team%2Fweb%20app");
        assert_eq!(segment("prj_abc-1.2~x"), "prj_abc-1.2~x");
        assert_eq!(
            query(&[("branch", Some("feature/x")), ("state", None)]),
            "?branch=feature%2Fx"
        );
        assert_eq!(query(&[("state", None)]), "");
    }

    #[test]
    fn a_gate_reads_as_words() {
        assert_eq!(
            describe_gate(&ProjectGate::default()),
            "No gate: every push passes, whatever its score."
        );
        let gate = ProjectGate {
            min_score: Some(80.0),
            max_drop: None,
            new_findings_at: Some(Severity::High),
        };
        assert_eq!(
            describe_gate(&gate),
            "Gate: score at least 80; no new open finding at high or above."
        );
    }
}
