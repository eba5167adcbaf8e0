//! `tidemark posture`: a project's compliance posture per framework, through `/v1` (a table, or
//! the answer as JSON).

use std::io::Write;

use clap::Args;
use reqwest::Method;
use tidemark_wire::posture::{PostureCounts, ProjectPosture};

use crate::client::Client;
use crate::credential::{api_key, explain};
use crate::env::Env;
use crate::manage::{query, segment};

#[derive(Debug, Args)]
pub struct PostureArgs {
    /// The project's id (prj_…) or label.
    project: String,
    /// A branch name, or pr:<number> (default: the project's default branch).
    #[arg(long)]
    branch: Option<String>,
    /// Only this framework (as scans name it, e.g. cis-aws-2.0).
    #[arg(long)]
    framework: Option<String>,
    /// How far back the trend goes.
    #[arg(long, value_parser = ["7d", "30d", "90d", "365d", "all"], default_value = "90d")]
    range: String,
    /// Print the answer as JSON (what `/v1` returned) instead of a table.
    #[arg(long)]
    json: bool,
}

fn share(c: &PostureCounts) -> String {
    c.share_passing
        .map_or("-".to_owned(), |s| format!("{:.0}%", s * 100.0))
}

pub async fn posture(
    client: &Client,
    env: &Env,
    out: &mut (dyn Write + Send),
    args: PostureArgs,
) -> anyhow::Result<u8> {
    let key = api_key(client, env).await?;
    let path = format!(
        "/v1/projects/{}/posture{}",
        segment(&args.project),
        query(&[
            ("branch", args.branch.as_deref()),
            ("framework", args.framework.as_deref()),
            ("range", Some(args.range.as_str())),
        ])
    );
    let answer: ProjectPosture = client
        .call(Method::GET, &path, &key, None)
        .await
        .map_err(explain)?;
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&answer)?)?;
        return Ok(0);
    }
    if answer.frameworks.is_empty() {
        writeln!(out, "No scan on this branch names a framework yet.")?;
        return Ok(0);
    }
    writeln!(
        out,
        "{:<24} {:>7} {:>7} {:>7} {:>8} {:>14}  trend ({})",
        "framework", "passing", "passed", "failed", "triaged", "not evaluated", args.range
    )?;
    for f in &answer.frameworks {
        let c = &f.current.counts;
        let trend = match (f.history.first(), f.history.last()) {
            (Some(first), Some(last)) if f.history.len() > 1 => {
                format!("{} → {}", share(&first.counts), share(&last.counts))
            }
            _ => "-".to_owned(),
        };
        writeln!(
            out,
            "{:<24} {:>7} {:>7} {:>7} {:>8} {:>14}  {trend}",
            f.framework,
            share(c),
            c.passed,
            c.failed,
            c.triaged,
            c.not_evaluated
        )?;
        if !f.current.drifted.is_empty() {
            writeln!(
                out,
                "  drifted in the latest scan: {}",
                f.current.drifted.join(", ")
            )?;
        }
    }
    Ok(0)
}
