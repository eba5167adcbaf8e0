//! `tidemark frameworks`: the account's custom frameworks as code, through `/v1/frameworks`.
//! A framework file lives beside the code (JSON, or YAML by its `.yaml`/`.yml` extension) and
//! `tidemark frameworks set FILE` makes the service's copy match it.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Subcommand;
use reqwest::Method;
use tidemark_wire::frameworks::{CustomFramework, FrameworkList, FrameworkSet};

use crate::client::Client;
use crate::credential::{api_key, explain};
use crate::env::Env;
use crate::manage::segment;

#[derive(Debug, Subcommand)]
pub enum FrameworksCommand {
    /// Create or replace a custom framework from a file: JSON, or YAML when the file ends in
    /// .yaml or .yml. Its id is the document's `id` (or --id). Needs the API key and a
    /// licence with custom frameworks (Agency tier or above).
    Set {
        /// The framework's file: JSON, or YAML (.yaml, .yml).
        file: PathBuf,
        /// The framework's id, when the document has none.
        #[arg(long)]
        id: Option<String>,
        /// Print the answer as JSON (what `/v1` returned) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List the account's custom frameworks.
    List {
        /// Print the answer as JSON (what `/v1` returned) instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Print one custom framework as JSON.
    Show {
        /// The framework's id.
        id: String,
    },
    /// Remove a custom framework and the posture kept for it. Needs the API key.
    Delete {
        /// The framework's id.
        id: String,
    },
}

/// The id a framework file gives itself (YAML reads JSON too).
fn document_id(text: &str) -> Option<String> {
    let value: serde_yaml_ng::Value = serde_yaml_ng::from_str(text).ok()?;
    value.get("id")?.as_str().map(str::to_owned)
}

fn media_type(file: &std::path::Path) -> &'static str {
    match file.extension().and_then(|e| e.to_str()) {
        Some("yaml" | "yml") => "application/yaml",
        _ => "application/json",
    }
}

pub async fn frameworks(
    client: &Client,
    env: &Env,
    out: &mut (dyn Write + Send),
    command: FrameworksCommand,
) -> anyhow::Result<u8> {
    let key = api_key(client, env).await?;
    match command {
        FrameworksCommand::Set { file, id, json } => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            let Some(id) = id.or_else(|| document_id(&text)) else {
                anyhow::bail!(
                    "{} has no `id`: add one to the document, or pass --id",
                    file.display()
                );
            };
            let path = format!("/v1/frameworks/{}", segment(&id));
            let answer: FrameworkSet = client
                .send_document(Method::PUT, &path, &key, text.as_bytes(), media_type(&file))
                .await
                .map_err(explain)?;
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&answer)?)?;
            } else {
                let f = &answer.framework;
                writeln!(
                    out,
                    "{} {} ({}, {} controls); posture names it {}; judged the latest scan of {} \
                     branches and pull requests",
                    if answer.created {
                        "Created"
                    } else {
                        "Replaced"
                    },
                    f.id,
                    f.title,
                    f.controls.len(),
                    f.posture_name,
                    answer.judged_scans
                )?;
            }
        }
        FrameworksCommand::List { json } => {
            let answer: FrameworkList = client
                .call(Method::GET, "/v1/frameworks", &key, None)
                .await
                .map_err(explain)?;
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&answer)?)?;
            } else if answer.frameworks.is_empty() {
                writeln!(
                    out,
                    "No custom frameworks yet: `tidemark frameworks set FILE`."
                )?;
            } else {
                writeln!(
                    out,
                    "{:<24} {:>8}  {:<20}  title",
                    "id", "controls", "updated"
                )?;
                for f in &answer.frameworks {
                    writeln!(
                        out,
                        "{:<24} {:>8}  {:<20}  {}",
                        f.id,
                        f.controls.len(),
                        f.updated_at,
                        f.title
                    )?;
                }
            }
        }
        FrameworksCommand::Show { id } => {
            let answer: CustomFramework = client
                .call(
                    Method::GET,
                    &format!("/v1/frameworks/{}", segment(&id)),
                    &key,
                    None,
                )
                .await
                .map_err(explain)?;
            writeln!(out, "{}", serde_json::to_string_pretty(&answer)?)?;
        }
        FrameworksCommand::Delete { id } => {
            client
                .call::<()>(
                    Method::DELETE,
                    &format!("/v1/frameworks/{}", segment(&id)),
                    &key,
                    None,
                )
                .await
                .map_err(explain)?;
            writeln!(out, "Removed {id} and the posture kept for it.")?;
        }
    }
    Ok(0)
}
