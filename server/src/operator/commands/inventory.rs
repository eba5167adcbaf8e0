//! `account list`, `project list`, `scan list`, `key list|revoke`.

use std::collections::HashMap;
use std::time::Duration;

use super::account_arg;
use anyhow::Context as _;
use serde::Serialize;
use serde_json::json;
use tidemark_domain::audit::AuditContext;
use tidemark_domain::{now_millis, to_rfc3339};
use tidemark_store::usage::{project_bytes, refresh_stale, Allowance, ProjectBytes};
use tidemark_store::{inventory, licenses, Db, Writer};
use tidemark_wire::ids::{AccountId, ProjectId, ScanId};

use super::{lines, Report};
use crate::operator::cli::{AccountCommand, Command, KeyCommand, ProjectCommand, ScanCommand};

#[derive(Debug, Serialize)]
pub struct AccountView {
    pub account_id: AccountId,
    pub created_at: String,
    pub license_id: Option<String>,
    pub email: Option<String>,
    pub tier: Option<String>,
    pub members: i64,
    pub projects: i64,
    pub active_keys: i64,
    pub scans: i64,
}

#[derive(Debug, Serialize)]
pub struct ProjectView {
    pub project_id: ProjectId,
    pub label: String,
    pub created_at: String,
    pub archived: bool,
    pub scan_count: i64,
    pub last_score: Option<f64>,
    pub last_scan_id: Option<ScanId>,
    /// About how many bytes its data takes (`tidemark_store::usage`), and how many of its
    /// scans housekeeping has removed the findings of.
    /// `None` until first measured.
    pub stored_bytes: Option<i64>,
    /// When `stored_bytes` was measured.
    pub measured_at: Option<String>,
    pub scans_thinned: i64,
}

#[derive(Debug, Serialize)]
pub struct ScanView {
    pub scan_id: ScanId,
    pub seq: i64,
    pub scanned_at: String,
    pub received_at: String,
    pub score: f64,
    pub score_delta: f64,
    pub passed: i64,
    pub failed: i64,
    pub findings: i64,
}

#[derive(Debug, Serialize)]
pub struct KeyView {
    pub key_id: String,
    /// The key's first characters, as the dashboard shows them.
    pub prefix: String,
    pub machine: String,
    pub created_at: String,
    pub last_used_at: Option<String>,
}

/// What `project list` may measure before it answers: stale projects beyond this keep their
/// last figure (the server's `project_usage` worker measures them).
const MEASURE: Allowance = Allowance {
    projects: 10_000,
    time: Duration::from_millis(500),
    settle: Duration::ZERO,
};

pub async fn projects(db: &Writer, account: &AccountId) -> anyhow::Result<Vec<ProjectView>> {
    let rows = inventory::list_projects(db, account)
        .await?
        .with_context(|| format!("no account with id {account}"))?;
    // Best effort, as Settings: a database that cannot be written still lists what it holds.
    if let Err(error) = refresh_stale(db, Some(account), now_millis(), MEASURE).await {
        tracing::warn!(%error, "project list shows the sizes measured before");
    }
    let usage: HashMap<ProjectId, ProjectBytes> = project_bytes(db, account)
        .await?
        .into_iter()
        .map(|u| (u.project_id.clone(), u))
        .collect();
    Ok(rows
        .into_iter()
        .map(|p| {
            let used = usage.get(&p.id);
            ProjectView {
                stored_bytes: used.and_then(|u| u.bytes),
                measured_at: used.and_then(|u| u.measured_at).map(to_rfc3339),
                scans_thinned: used.map_or(0, |u| u.scans_thinned),
                project_id: p.id,
                label: p.label,
                created_at: to_rfc3339(p.created_at),
                archived: p.archived_at.is_some(),
                scan_count: p.scan_count,
                last_score: p.last_score,
                last_scan_id: p.last_scan_id,
            }
        })
        .collect())
}

/// The account's active keys.
pub async fn keys(db: &Db, account: &AccountId) -> anyhow::Result<Vec<KeyView>> {
    Ok(licenses::list_api_keys(db, account)
        .await?
        .into_iter()
        .map(|k| KeyView {
            key_id: k.id,
            prefix: k.prefix,
            machine: k.machine,
            created_at: to_rfc3339(k.created_at),
            last_used_at: k.last_used_at.map(to_rfc3339),
        })
        .collect())
}

async fn account_list(db: &Writer) -> anyhow::Result<Report> {
    let accounts: Vec<AccountView> = inventory::list_accounts(db)
        .await?
        .into_iter()
        .map(|a| AccountView {
            account_id: a.id,
            created_at: to_rfc3339(a.created_at),
            license_id: a.license_id,
            email: a.email,
            tier: a.tier,
            members: a.members,
            projects: a.projects,
            active_keys: a.active_keys,
            scans: a.scans,
        })
        .collect();
    let human = lines(&accounts, |a| {
        format!(
            "{}  {:<10}  {:>3} members  {:>4} projects  {:>3} keys  {:>8} scans  {}",
            a.account_id,
            a.tier.as_deref().unwrap_or("-"),
            a.members,
            a.projects,
            a.active_keys,
            a.scans,
            a.email.as_deref().unwrap_or("-")
        )
    });
    Report::new(&json!({ "accounts": accounts }), human)
}

async fn scan_list(db: &Writer, project: String, limit: i64) -> anyhow::Result<Report> {
    let missing = || format!("no project with id {project}");
    let id = ProjectId::parse(&project).with_context(missing)?;
    let (account, rows) = inventory::list_scans(db, &id, limit)
        .await?
        .with_context(missing)?;
    let scans: Vec<ScanView> = rows
        .into_iter()
        .map(|s| ScanView {
            scan_id: s.scan_id,
            seq: s.seq,
            scanned_at: to_rfc3339(s.scanned_at),
            received_at: to_rfc3339(s.received_at),
            score: s.score,
            score_delta: s.score_delta,
            passed: s.passed,
            failed: s.failed,
            findings: s.finding_count,
        })
        .collect();
    let human = lines(&scans, |s| {
        format!(
            "{}  #{:<6}  {}  score {:>5.1} ({:+.1})  {} passed  {} failed  {} findings",
            s.scan_id, s.seq, s.scanned_at, s.score, s.score_delta, s.passed, s.failed, s.findings
        )
    });
    Report::new(
        &json!({ "account_id": account, "project_id": project, "scans": scans }),
        human,
    )
}

pub async fn run(command: Command, db: &Writer, audit: &AuditContext) -> anyhow::Result<Report> {
    match command {
        Command::Account(AccountCommand::List) => account_list(db).await,
        Command::Project(ProjectCommand::List { account }) => {
            let projects = projects(db, &account_arg(&account)?).await?;
            let human = lines(&projects, |p| {
                format!(
                    "{}  {:<30}  {:>7} scans  last score {}  {}{}",
                    p.project_id,
                    p.label,
                    p.scan_count,
                    p.last_score.map_or("-".to_owned(), |s| format!("{s:.1}")),
                    p.stored_bytes
                        .map_or("not measured yet".to_owned(), tidemark_domain::text::bytes),
                    if p.archived { "  (archived)" } else { "" }
                )
            });
            // The account's share of the database, as Settings shows it.
            let stored_bytes: i64 = projects.iter().filter_map(|p| p.stored_bytes).sum();
            let human = format!(
                "{human}account {account}: about {}\n",
                tidemark_domain::text::bytes(stored_bytes)
            );
            Report::new(
                &json!({ "account_id": account, "stored_bytes": stored_bytes, "projects": projects }),
                human,
            )
        }
        Command::Scan(ScanCommand::List { project, limit }) => scan_list(db, project, limit).await,
        Command::Key(KeyCommand::List { account }) => {
            // An unknown account is an error, not an empty list.
            if !inventory::account_exists(db, &account_arg(&account)?).await? {
                anyhow::bail!("no account with id {account}");
            }
            let keys = keys(db, &account_arg(&account)?).await?;
            let human = lines(&keys, |k| {
                format!(
                    "{}  {}…  {:<24}  created {}  last used {}",
                    k.key_id,
                    k.prefix,
                    k.machine,
                    k.created_at,
                    k.last_used_at.as_deref().unwrap_or("never")
                )
            });
            Report::new(&json!({ "account_id": account, "keys": keys }), human)
        }
        Command::Key(KeyCommand::Revoke { id }) => {
            let account = inventory::api_key_account(db, &id)
                .await?
                .with_context(|| format!("no API key with id {id}"))?;
            if !licenses::revoke_api_key(db, &account, &id, audit).await? {
                anyhow::bail!("API key {id} is already revoked");
            }
            Report::new(
                &json!({ "key_id": id, "account_id": account, "revoked": true }),
                format!(
                    "API key {id} of {account} revoked; scanners using it get 401 from now \
                     on\n"
                ),
            )
        }
        _ => anyhow::bail!("not an inventory command"),
    }
}
