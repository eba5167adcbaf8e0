//! `license create|list|show|suspend|resume|extend`.

use serde_json::json;
use tidemark_domain::audit::AuditContext;
use tidemark_store::Writer;

use super::{inventory, lines, Report};
use crate::operator::cli::{parse_timestamp, LicenseCommand, LicenseStateArg};
use crate::state::AppState;
use tidemark_services::licensing::{
    self, LicenseChange, LicenseEdit, LicenseFilter, LicenseRequest, LicenseSummary,
};
use tidemark_services::ServiceError;

/// A license id that finds nothing is named in the error.
fn no_license(err: ServiceError, id: &str) -> anyhow::Error {
    match err {
        ServiceError::NotFound => anyhow::anyhow!("no license with id {id}"),
        other => other.into(),
    }
}

fn line(l: &LicenseSummary) -> String {
    format!(
        "{}  {}  {:<10}  {:<9}  expires {}  {}",
        l.license_id,
        l.account_id,
        l.tier.as_str(),
        l.state,
        l.expires,
        l.email
    )
}

/// A licence with what its account holds.
async fn show(db: &Writer, id: &str) -> anyhow::Result<Report> {
    let license = licensing::show(db, id)
        .await
        .map_err(|e| no_license(e, id))?;
    let account = &license.account_id;
    let members = super::member::list(db, account).await?;
    let projects = inventory::projects(db, account).await?;
    let keys = inventory::keys(db, account).await?;
    let mut human = line(&license) + "\n";
    human.push_str(&format!(
        "features: {}\nmax projects: {}\nmembers: {}\nprojects: {}\nactive API keys: {}\n",
        serde_json::to_string(&license.features)?,
        license
            .max_projects
            .map_or_else(|| "the tier's".to_owned(), |n| n.to_string()),
        members.len(),
        projects.len(),
        keys.len()
    ));
    Report::new(
        &json!({
            "license": license,
            "members": members,
            "projects": projects,
            "keys": keys,
        }),
        human,
    )
}

pub async fn run(
    command: LicenseCommand,
    state: &AppState,
    db: &Writer,
    audit: &AuditContext,
) -> anyhow::Result<Report> {
    match command {
        LicenseCommand::Create {
            email,
            tier,
            expires,
            max_projects,
            max_machines,
            features_added,
            features_removed,
        } => {
            let request = LicenseRequest {
                email: tidemark_domain::text::Email::parse(&email)
                    .map_err(|e| anyhow::anyhow!(e.message))?,
                tier: tier.into(),
                expires_at: expires.as_deref().map(parse_timestamp).transpose()?,
                max_projects,
                max_machines: max_machines
                    .or_else(|| state.config.limits.default_seats.for_tier(tier.into())),
                features_added: features_added.0,
                features_removed: features_removed.0,
            };
            create(state, db, request, audit).await
        }
        update @ LicenseCommand::Update { .. } => update_from(update, db, audit).await,
        LicenseCommand::List { state, tier, email } => list(db, state, tier, email).await,
        LicenseCommand::Show { id } => show(db, &id).await,
        LicenseCommand::Suspend { id } => {
            let s = licensing::change(db, &id, LicenseChange::Suspended(true), audit)
                .await
                .map_err(|e| no_license(e, &id))?;
            let human = format!("{} is now {}\n", s.license_id, s.state);
            Report::new(&s, human)
        }
        LicenseCommand::Resume { id } => {
            let s = licensing::change(db, &id, LicenseChange::Suspended(false), audit)
                .await
                .map_err(|e| no_license(e, &id))?;
            let human = format!("{} is now {}\n", s.license_id, s.state);
            Report::new(&s, human)
        }
        LicenseCommand::Extend { id, expires } => {
            let s = licensing::change(
                db,
                &id,
                LicenseChange::Expiry(parse_timestamp(&expires)?),
                audit,
            )
            .await
            .map_err(|e| no_license(e, &id))?;
            let human = format!("{} now expires {} ({})\n", s.license_id, s.expires, s.state);
            Report::new(&s, human)
        }
        LicenseCommand::File {
            license,
            machine,
            days,
            out,
        } => {
            let machine = machine
                .as_deref()
                .map(tidemark_domain::signing::MachineFingerprint::parse)
                .transpose()
                .map_err(|e| anyhow::anyhow!("--machine: {e}"))?;
            let file = tidemark_services::licensing::offline_license_file(
                db,
                &state.signer,
                &state.config.http.base_url,
                &license,
                machine,
                days,
                audit,
            )
            .await?;
            let mut text = serde_json::to_string_pretty(&file)?;
            text.push('\n');
            write_new_file(&out, text.as_bytes())?;
            let human = format!(
                "wrote {}: an offline licence for {license}, {days} days; install it with \
                 `tidemark activate --offline {}`\n",
                out.display(),
                out.display()
            );
            Report::new(
                &json!({ "license_id": license, "file": out.display().to_string(), "days": days }),
                human,
            )
        }
    }
}

/// Writes `bytes` to `path`, which must not exist yet.
fn write_new_file(path: &std::path::Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| anyhow::anyhow!("could not create {}: {e}", path.display()))?;
    f.write_all(bytes)
        .map_err(|e| anyhow::anyhow!("could not write {}: {e}", path.display()))
}

/// `license update`: one edit through the use case the admin API calls.
async fn update(
    db: &Writer,
    id: &str,
    edit: LicenseEdit,
    audit: &AuditContext,
) -> anyhow::Result<Report> {
    anyhow::ensure!(
        !edit.is_empty(),
        "nothing to change: give --tier, --max-projects, --tier-max-projects, \
         --max-machines, --unlimited-machines, --features-added or --features-removed"
    );
    let edited = licensing::edit_license(db, id, None, edit, audit)
        .await
        .map_err(|e| no_license(e, id))?;
    let (licensing::Edited::Done(l) | licensing::Edited::Stale(l)) = edited;
    let s = LicenseSummary::from(&l);
    let human = format!(
        "{} is {} with {}\n",
        s.license_id,
        s.tier.as_str(),
        if s.features.is_empty() {
            "no features".to_owned()
        } else {
            s.features
                .iter()
                .map(|f| f.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    Report::new(&s, human)
}

/// `license list`: every page of the licences matching the filters.
async fn list(
    db: &Writer,
    state: Option<LicenseStateArg>,
    tier: Option<crate::operator::cli::TierArg>,
    email: Option<String>,
) -> anyhow::Result<Report> {
    let filter = LicenseFilter {
        state: state.map(Into::into),
        tier: tier.map(tidemark_wire::Tier::from),
        email: email.map(|e| e.trim().to_owned()),
        ..LicenseFilter::default()
    };
    let mut list: Vec<LicenseSummary> = Vec::new();
    let mut after: Option<(i64, String)> = None;
    loop {
        let at = after.as_ref().map(|(t, id)| (*t, id.as_str()));
        let (page, more) = licensing::page(db, &filter, at, 500).await?;
        after = page.last().map(|l| (l.created_at, l.id.clone()));
        list.extend(page.iter().map(LicenseSummary::from));
        if !more {
            break;
        }
    }
    let human = lines(&list, line);
    Report::new(&json!({ "licenses": list }), human)
}

/// `license create`: prints the key once (in the JSON document only, with `--json`).
async fn create(
    state: &AppState,
    db: &Writer,
    request: LicenseRequest,
    audit: &AuditContext,
) -> anyhow::Result<Report> {
    let created = licensing::create(db, &state.license_keys, request, audit).await?;
    let human = format!(
        "license key: {}\nlicense id:  {}\naccount id:  {}\nGive the key to the customer; it \
         is not shown again (resend mails it).\n",
        created.license_key, created.license_id, created.account_id
    );
    let beside = format!(
        "license {} created for account {}; its key is in the JSON document only\n",
        created.license_id, created.account_id
    );
    Ok(Report::new(&created, human)?.beside_json(beside))
}

/// `license update`'s flags as one edit.
async fn update_from(
    command: LicenseCommand,
    db: &Writer,
    audit: &AuditContext,
) -> anyhow::Result<Report> {
    let LicenseCommand::Update {
        id,
        tier,
        max_projects,
        tier_max_projects,
        max_machines,
        unlimited_machines,
        features_added,
        features_removed,
    } = command
    else {
        anyhow::bail!("not a `license update` command");
    };
    let edit = LicenseEdit {
        tier: tier.map(Into::into),
        max_projects: match (max_projects, tier_max_projects) {
            (Some(n), _) => Some(Some(n)),
            (None, true) => Some(None),
            (None, false) => None,
        },
        max_machines: match (max_machines, unlimited_machines) {
            (Some(n), _) => Some(Some(n)),
            (None, true) => Some(None),
            (None, false) => None,
        },
        features_added: features_added.map(|f| f.0),
        features_removed: features_removed.map(|f| f.0),
        ..LicenseEdit::default()
    };
    update(db, &id, edit, audit).await
}
