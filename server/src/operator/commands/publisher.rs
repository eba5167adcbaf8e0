//! `publisher add|list|remove`: keyless CI's trusted publishers, for operators.

use super::account_arg;
use serde::Serialize;
use serde_json::json;
use tidemark_domain::audit::AuditContext;
use tidemark_domain::ci_identity::{PublisherDraft, PublisherSpec};
use tidemark_domain::to_rfc3339;
use tidemark_store::publishers::{self, AddOutcome, Publisher, MAX_PUBLISHERS};
use tidemark_store::Writer;

use super::{lines, Report};
use crate::operator::cli::PublisherCommand;
use crate::state::AppState;

/// A publisher as commands print it.
#[derive(Debug, Serialize)]
pub struct PublisherView {
    pub id: String,
    pub provider: &'static str,
    pub issuer: String,
    pub repository: String,
    pub owner_id: Option<String>,
    pub repository_id: Option<String>,
    pub workflow: Option<String>,
    pub environment: Option<String>,
    pub ref_pattern: Option<String>,
    /// `None`: every project.
    pub project: Option<String>,
    pub created_at: String,
    pub last_used_at: Option<String>,
}

impl From<&Publisher> for PublisherView {
    fn from(p: &Publisher) -> Self {
        let s = &p.spec;
        PublisherView {
            id: p.id.clone(),
            provider: s.provider.as_str(),
            issuer: s.issuer.as_str().to_owned(),
            repository: s.repository.clone(),
            owner_id: s.owner_id.clone(),
            repository_id: s.repository_id.clone(),
            workflow: s.workflow.clone(),
            environment: s.environment.clone(),
            ref_pattern: s.ref_pattern.as_ref().map(|r| r.as_str().to_owned()),
            project: s.projects.stored().map(str::to_owned),
            created_at: to_rfc3339(p.created_at),
            last_used_at: p.last_used_at.map(to_rfc3339),
        }
    }
}

pub async fn run(
    command: PublisherCommand,
    state: &AppState,
    db: &Writer,
    audit: &AuditContext,
) -> anyhow::Result<Report> {
    match command {
        PublisherCommand::Add(add) => {
            let crate::operator::cli::PublisherAdd {
                account,
                provider,
                issuer,
                repository,
                owner_id,
                repository_id,
                workflow,
                environment,
                ref_pattern,
                subject,
                project,
            } = *add;
            let draft = PublisherDraft {
                provider,
                issuer,
                repository,
                owner_id,
                repository_id,
                workflow,
                environment,
                ref_pattern,
                subject,
                project,
            };
            let spec = PublisherSpec::parse(&draft, state.config.keyless.allow_private_issuers)
                .map_err(|e| anyhow::anyhow!("{}: {}", e.field, e.message))?;
            if tidemark_store::licenses::find_license_for_account(db.db(), &account_arg(&account)?)
                .await?
                .is_none()
            {
                anyhow::bail!("no account with id {account}");
            }
            let id = tidemark_domain::ids::new_publisher_id();
            let now = tidemark_domain::now_millis();
            match publishers::add_publisher(db, &account_arg(&account)?, &id, &spec, now, audit)
                .await?
            {
                AddOutcome::Added => {}
                AddOutcome::TooMany => {
                    anyhow::bail!("the account already has {MAX_PUBLISHERS} trusted publishers")
                }
            }
            let human = format!("added trusted publisher {id}: {}\n", spec.describe());
            Report::new(&json!({ "id": id, "account_id": account }), human)
        }
        PublisherCommand::List { account } => {
            let list = publishers::list_publishers(db.db(), &account_arg(&account)?).await?;
            let human = lines(&list, |p| {
                let pinned = match (&p.spec.owner_id, &p.spec.repository_id) {
                    (Some(o), Some(r)) => format!("ids {o}/{r}"),
                    _ => "ids not pinned yet".to_owned(),
                };
                format!(
                    "{}  {}  ({pinned}; last used {})",
                    p.id,
                    p.spec.describe(),
                    p.last_used_at.map_or("never".into(), to_rfc3339)
                )
            });
            let views: Vec<PublisherView> = list.iter().map(PublisherView::from).collect();
            Report::new(&views, human)
        }
        PublisherCommand::Remove { account, id } => {
            if !publishers::remove_publisher(db, &account_arg(&account)?, &id, audit).await? {
                anyhow::bail!("account {account} has no trusted publisher {id}");
            }
            Report::new(
                &json!({ "removed": id }),
                format!("removed trusted publisher {id}; its push tokens no longer work\n"),
            )
        }
    }
}
