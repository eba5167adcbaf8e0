//! The operator subcommands: each gathers what it reports as a [`Report`], one document
//! for programs and lines for people; `main` prints one or the other.

mod catalogue;
mod config_check;
mod inventory;
mod license;
pub mod member;
mod publisher;
mod rotate;
mod scim;
mod signing_key;
pub mod sso;
mod vendor_token;

use anyhow::Context as _;
use serde::Serialize;
use serde_json::{json, Value};
use tidemark_domain::audit::AuditContext;
use tidemark_store::Writer;
use tidemark_wire::ids::AccountId;

use crate::config::Config;
use crate::operator::cli::{
    parse_timestamp, AuditCommand, BundleCommand, Command, HousekeepingCommand,
};
use crate::state::AppState;

pub use config_check::check_config;

/// What a command tells its operator.
#[derive(Debug)]
pub struct Report {
    /// The JSON document `--json` prints.
    pub json: Value,
    /// The text printed for people (to standard error under `--json`).
    pub human: String,
    /// Set when the command did run but its outcome is a failure (exit status 1), as when
    /// `config check` finds a problem; the report still says everything.
    pub failure: Option<String>,
    /// What goes to standard error under `--json` instead of `human`, when `human` holds a
    /// secret the document already carries (standard error often ends up in logs).
    pub human_beside_json: Option<String>,
}

impl Report {
    pub fn new(json: &impl Serialize, human: impl Into<String>) -> anyhow::Result<Self> {
        Ok(Self {
            json: serde_json::to_value(json).context("could not render the report")?,
            human: human.into(),
            failure: None,
            human_beside_json: None,
        })
    }

    pub fn beside_json(mut self, human: impl Into<String>) -> Self {
        self.human_beside_json = Some(human.into());
        self
    }

    pub fn failed_if(mut self, failure: Option<String>) -> Self {
        self.failure = failure;
        self
    }
}

/// Lines for people, one per item, or `none` when there are none.
fn lines<T>(items: &[T], line: impl Fn(&T) -> String) -> String {
    if items.is_empty() {
        return "(none)\n".to_owned();
    }
    items.iter().map(|i| line(i) + "\n").collect()
}

/// `prune`: the lines removed (or, dry, that would be).
async fn prune(
    age: &str,
    dry_run: bool,
    db: &Writer,
    audit: &AuditContext,
) -> anyhow::Result<Report> {
    let age = tidemark_domain::retention::Age::parse(age).map_err(anyhow::Error::msg)?;
    let cutoff = age.before(tidemark_domain::now_millis());
    let pruned = tidemark_store::branches::prune_lines(db, cutoff, dry_run, audit).await?;
    let verb = if dry_run { "would remove" } else { "removed" };
    let mut human = format!(
        "{verb} {} {} with no push since {}\n",
        pruned.len(),
        if pruned.len() == 1 { "line" } else { "lines" },
        tidemark_domain::to_rfc3339(cutoff)
    );
    human.push_str(&lines(&pruned, |p| {
        let line = match (p.pull_request, &p.branch) {
            (Some(n), _) => format!("pull request #{n}"),
            (None, Some(b)) => format!("branch {b}"),
            (None, None) => "an unnamed branch".to_owned(),
        };
        format!(
            "{}  {}  {line}  ({} scans)",
            p.account_id, p.project_label, p.scans
        )
    }));
    Report::new(
        &json!({ "dry_run": dry_run, "cutoff": tidemark_domain::to_rfc3339(cutoff), "pruned": pruned }),
        human,
    )
}

/// `housekeeping [--dry-run]`: one pass now (holding the lease, as a server's would), or what
/// it would thin.
async fn housekeeping(
    state: &AppState,
    db: &Writer,
    dry_run: bool,
    force: bool,
) -> anyhow::Result<Report> {
    // Off (`TIDEMARK_HOUSEKEEPING=off`): scans stored as rows still move; nothing is thinned.
    let policy = state.config.housekeeping.policy;
    if dry_run {
        let rows = tidemark_store::spans::moving::scans_as_rows(db.as_ref()).await?;
        let pending = tidemark_store::posture::backfill::scans_pending(db.as_ref()).await?;
        let planned: Vec<_> = match &policy {
            Some(policy) => {
                tidemark_store::housekeeping::plan_all(
                    db.as_ref(),
                    tidemark_domain::now_millis(),
                    policy,
                )
                .await?
            }
            None => Vec::new(),
        }
        .into_iter()
        .filter(|(_, seqs)| !seqs.is_empty())
        .collect();
        let scans_thinned: usize = planned.iter().map(|(_, seqs)| seqs.len()).sum();
        let mut human = format!(
            "would move {rows} {} stored one row per finding to spans\n\
             would judge the posture of {pending} {} stored before it was kept\n\
             would remove the findings of {} {} on {} {} (their rows stay in the history)\n",
            if rows == 1 { "scan" } else { "scans" },
            if pending == 1 { "scan" } else { "scans" },
            scans_thinned,
            if scans_thinned == 1 { "scan" } else { "scans" },
            planned.len(),
            if planned.len() == 1 { "line" } else { "lines" },
        );
        let listed: Vec<Value> = planned
            .iter()
            .map(|(line, seqs)| {
                let name = match (line.pr_number, &line.line_name) {
                    (Some(n), _) => format!("pull request #{n}"),
                    (None, Some(b)) => format!("branch {b}"),
                    (None, None) => "the default branch".to_owned(),
                };
                human.push_str(&format!(
                    "  {}  {}  {name}: {} {}\n",
                    line.account_id,
                    line.project_label,
                    seqs.len(),
                    if seqs.len() == 1 { "scan" } else { "scans" }
                ));
                json!({
                    "account_id": line.account_id, "project_id": line.project_id,
                    "project_label": line.project_label, "branch": line.line_name,
                    "pull_request": line.pr_number, "scans": seqs.len(),
                })
            })
            .collect();
        return Report::new(
            &json!({ "dry_run": true, "scans_as_rows": rows, "posture_pending": pending,
                     "scans_to_thin": scans_thinned, "lines": listed }),
            human,
        );
    }
    let holder =
        crate::workers::housekeeping::holder_name(&format!("operator {}", operator_name()));
    if force {
        tidemark_store::leases::take_over(
            db,
            crate::workers::housekeeping::LEASE,
            &holder,
            tidemark_domain::now_millis(),
            crate::workers::housekeeping::LEASE_MS,
        )
        .await?;
    }
    let Some(done) = crate::workers::housekeeping::run_pass(db, &holder, policy.as_ref()).await?
    else {
        let now = tidemark_domain::now_millis();
        let held =
            tidemark_store::leases::holder(db.as_ref(), crate::workers::housekeeping::LEASE, now)
                .await?;
        let Some(held) = held else {
            anyhow::bail!("another housekeeping pass held the lease a moment ago; try again");
        };
        let minutes = (held.expires_at - now + 59_999) / 60_000;
        anyhow::bail!(
            "housekeeping is running elsewhere: {} holds the lease until {} (in {minutes} \
             {}), renewing it at each line while it runs. Try again then; if that holder is \
             known to be dead (a pass that was killed), `tidemark-server housekeeping --force` \
             takes the lease over now",
            held.holder,
            app::time::format_time(held.expires_at),
            if minutes == 1 { "minute" } else { "minutes" },
        );
    };
    let human = format!(
        "moved {} scans ({} findings) to spans ({} left as rows)\n\
         judged the posture of {} scans stored before it was kept ({} had nothing to judge)\n\
         removed the findings of {} scans on {} lines, and {} spans nothing needed\n",
        done.scans_moved,
        done.findings_moved,
        done.scans_left_as_rows,
        done.posture_judged,
        done.posture_nothing_to_judge,
        done.scans_thinned,
        done.lines,
        done.spans_removed
    );
    Report::new(&done, human)
}

/// An account named on the command line. Text that cannot be an account id is answered as an
/// unknown account is, before any query.
pub(crate) fn account_arg(s: &str) -> anyhow::Result<AccountId> {
    AccountId::parse(s).with_context(|| format!("no account with id {s}"))
}

/// `housekeeping policy`: an account's policy, shown or changed.
async fn housekeeping_policy(
    state: &AppState,
    db: &Writer,
    account: &AccountId,
    set: &[String],
    reset: bool,
    audit: &AuditContext,
) -> anyhow::Result<Report> {
    let installation = state.config.housekeeping.policy.unwrap_or_default();
    let Some(own) = tidemark_store::housekeeping::account_policy(db.as_ref(), account).await?
    else {
        anyhow::bail!("no account {account}");
    };
    let own = if reset {
        None
    } else if set.is_empty() {
        own
    } else {
        let base = own.unwrap_or(installation);
        let policy = base
            .with_pairs(&set.join(","))
            .map_err(anyhow::Error::msg)?;
        Some(policy)
    };
    if reset || !set.is_empty() {
        tidemark_store::housekeeping::set_account_policy(db, account, own.as_ref(), audit).await?;
    }
    let applies = own.unwrap_or(installation);
    let days = |ms: i64| tidemark_domain::retention::Age::from_millis(ms).to_string();
    let human = format!(
        "{account} ({}): every scan's findings for {}, then one a day; one a week after {}; \
         one a month after {}; pull requests' after {} quiet, other branches' after {}\n",
        if own.is_some() {
            "its own policy"
        } else {
            "the installation's policy"
        },
        days(applies.keep_all),
        days(applies.weekly_after),
        days(applies.monthly_after),
        days(applies.pull_request_after),
        days(applies.inactive_branch_after),
    );
    Report::new(
        &json!({
            "account_id": account,
            "own": own.is_some(),
            // Ages as written (`45d`, `36h`), as the audit log shows them.
            "policy": applies
                .ages()
                .iter()
                .map(|(name, age)| (name.to_string(), json!(age.to_string())))
                .collect::<serde_json::Map<_, _>>(),
        }),
        human,
    )
}

/// Who runs this command, for the audit log: `$USER` or `$LOGNAME`, else (containers often set
/// neither) the process owner's name from `/etc/passwd`, else `uid <n>`.
fn operator_name() -> String {
    use std::os::unix::fs::MetadataExt as _;
    if let Some(name) = ["USER", "LOGNAME"]
        .into_iter()
        .filter_map(|v| std::env::var(v).ok())
        .find(|v| !v.trim().is_empty())
    {
        return name;
    }
    // The process's own /proc entry belongs to its effective user.
    let Ok(uid) = std::fs::metadata("/proc/self").map(|m| m.uid()) else {
        return "unknown".to_owned();
    };
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    user_of_uid(&passwd, uid).map_or_else(|| format!("uid {uid}"), str::to_owned)
}

/// The name `/etc/passwd` gives `uid` (`name:password:uid:…`).
fn user_of_uid(passwd: &str, uid: u32) -> Option<&str> {
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let id = fields.nth(1)?.parse::<u32>().ok()?;
        (id == uid && !name.is_empty()).then_some(name)
    })
}

/// Runs a command that needs the database (all but `serve`, `restore`, `config check` and `healthcheck`).
pub async fn run(command: Command, state: &AppState, db: &Writer) -> anyhow::Result<Report> {
    // Every change a command makes is in the audit log under the OS user who ran it.
    let operator = operator_name();
    let audit = tidemark_store::audit::operator_context(&operator, tidemark_domain::now_millis());
    match command {
        Command::Serve
        | Command::Restore { .. }
        | Command::Config(_)
        | Command::Healthcheck { .. } => {
            anyhow::bail!("this command does not run here")
        }
        Command::Migrate => Report::new(
            &json!({ "migrated": true }),
            "migrations applied; the schema is current\n",
        ),
        Command::Backup { to } => {
            let report = crate::operator::backup::backup(&state.db, &to).await?;
            let human = format!(
                "backed up to {} ({} bytes, schema {}, {} accounts, {} scans)\n",
                report.file,
                report.bytes,
                report.summary.schema_version,
                report.summary.accounts,
                report.summary.scans
            );
            Report::new(&report, human)
        }
        Command::RotateMasterKey => rotate::rotate(state, db).await,
        Command::Prune {
            branches_older_than,
            dry_run,
        } => prune(&branches_older_than, dry_run, db, &audit).await,
        Command::Housekeeping {
            dry_run,
            force,
            command: None,
        } => housekeeping(state, db, dry_run, force).await,
        Command::Housekeeping {
            command:
                Some(HousekeepingCommand::Policy {
                    account,
                    set,
                    reset,
                }),
            ..
        } => housekeeping_policy(state, db, &account_arg(&account)?, &set, reset, &audit).await,
        Command::License(command) => license::run(command, state, db, &audit).await,
        Command::Publisher(command) => publisher::run(command, state, db, &audit).await,
        Command::Scim(command) => scim::run(command, db, &audit).await,
        Command::VendorToken(command) => vendor_token::run(command, db, &audit).await,
        Command::SigningKey(command) => signing_key::run(command, state, db, &audit).await,
        Command::Catalogue(command) => catalogue::run(command, db, &audit).await,
        Command::Account(_) | Command::Project(_) | Command::Scan(_) | Command::Key(_) => {
            inventory::run(command, db, &audit).await
        }
        Command::Bundle(BundleCommand::Publish { file }) => {
            let bytes = std::fs::read(&file)
                .with_context(|| format!("could not read {}", file.display()))?;
            let name = file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "bundle".into());
            let p = tidemark_services::bundles::publish(
                db,
                &state.config.http.base_url,
                &name,
                &bytes,
                &audit,
            )
            .await?;
            let human = format!(
                "published {} ({} bytes)\nurl:      {}\nchecksum: {}\n",
                p.bundle_id, p.size_bytes, p.bundle_url, p.bundle_checksum
            );
            Report::new(&p, human)
        }
        Command::Member(command) => member::run(command, db, &audit).await,
        Command::Sso(command) => sso::run(command, db, &audit).await,
        Command::Audit(AuditCommand::List {
            account,
            since,
            actor,
            action,
            limit,
        }) => {
            let account = account.as_deref().map(account_arg).transpose()?;
            let filter = tidemark_services::audit::AuditFilter {
                account_id: account.as_ref(),
                since: since.as_deref().map(parse_timestamp).transpose()?,
                actor: actor.as_deref(),
                action: action.as_deref(),
                before: None,
                limit,
            };
            let events = tidemark_services::audit::list(db, &filter).await?;
            let human = lines(&events, |e| {
                format!(
                    "{}  {:<24}  {:<22}  {}  {} -> {}  [{}]",
                    e.at,
                    e.actor,
                    e.action,
                    e.target,
                    e.before.as_deref().unwrap_or("-"),
                    e.after.as_deref().unwrap_or("-"),
                    e.client_ip.as_deref().unwrap_or("-"),
                )
            });
            Report::new(&json!({ "events": events }), human)
        }
    }
}

/// `restore`, which must not open the database it replaces.
pub async fn restore(config: &Config, from: &std::path::Path) -> anyhow::Result<Report> {
    let report = crate::operator::backup::restore(config, from).await?;
    let human = format!(
        "restored {} from {} (schema {}, {} accounts, {} scans)\n",
        report.file,
        from.display(),
        report.summary.schema_version,
        report.summary.accounts,
        report.summary.scans
    );
    Report::new(&report, human)
}

#[cfg(test)]
mod operator_tests {
    use super::user_of_uid;

    #[test]
    fn the_process_owner_is_named_from_passwd() {
        let passwd = "root:x:0:0:root:/root:/bin/bash\n# comment\nbroken\ntidemark:x:999:999::/var/lib/tidemark:/usr/sbin/nologin\n";
        assert_eq!(user_of_uid(passwd, 999), Some("tidemark"));
        assert_eq!(user_of_uid(passwd, 0), Some("root"));
        assert_eq!(user_of_uid(passwd, 1000), None);
        assert_eq!(user_of_uid("", 0), None);
    }
}
