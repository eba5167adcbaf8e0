//! The audit log as the operator's `audit list` reads it (the dashboard's Audit page pages
//! through the same store query).

use serde::Serialize;
use tidemark_domain::audit::Action;
use tidemark_domain::{to_rfc3339, Millis};
use tidemark_store::audit::AuditQuery;
use tidemark_store::Db;
use tidemark_wire::ids::AccountId;

use crate::ServiceError;

/// An audit event as `audit list` prints it.
#[derive(Debug, Serialize)]
pub struct AuditView {
    pub id: String,
    pub at: String,
    /// `at` as stored: where a page that ends here continues from.
    #[serde(skip)]
    pub at_ms: Millis,
    pub account_id: Option<AccountId>,
    pub actor_kind: String,
    pub actor: String,
    pub client_ip: Option<String>,
    pub action: String,
    pub target: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// Which events to list.
pub struct AuditFilter<'a> {
    pub account_id: Option<&'a AccountId>,
    pub since: Option<Millis>,
    pub actor: Option<&'a str>,
    pub action: Option<&'a str>,
    /// Only events older than this one (its time and id): a page after the one that ended
    /// there.
    pub before: Option<(Millis, &'a str)>,
    pub limit: i64,
}

/// The events that match, newest first.
pub async fn list(db: &Db, filter: &AuditFilter<'_>) -> Result<Vec<AuditView>, ServiceError> {
    let action = filter
        .action
        .map(|a| {
            Action::parse(a).ok_or_else(|| {
                let known: Vec<&str> = Action::ALL.iter().map(|a| a.as_str()).collect();
                ServiceError::Invalid(format!(
                    "unknown action {a:?}; one of: {}",
                    known.join(", ")
                ))
            })
        })
        .transpose()?;
    if !(1..=10_000).contains(&filter.limit) {
        return Err(ServiceError::invalid("--limit must be 1 to 10000"));
    }
    let query = AuditQuery {
        account_id: filter.account_id.cloned(),
        actor: filter.actor.map(str::to_owned),
        action,
        since: filter.since,
        before: filter.before.map(|(at, id)| (at, id.to_owned())),
        offset: 0,
        limit: filter.limit,
    };
    Ok(tidemark_store::audit::list_audit(db, &query)
        .await?
        .into_iter()
        .map(|e| AuditView {
            id: e.id,
            at: to_rfc3339(e.at),
            at_ms: e.at,
            account_id: e.account_id,
            actor_kind: e.actor_kind,
            actor: e.actor,
            client_ip: e.client_ip,
            action: e.action,
            target: e.target,
            before: e.before_summary,
            after: e.after_summary,
        })
        .collect())
}

/// A page of the account's audit log for Settings, newest first, and who acted in it.
pub struct AuditPage {
    pub events: Vec<tidemark_store::audit::AuditEvent>,
    pub has_more: bool,
    pub actors: Vec<String>,
}

pub async fn account_page(
    db: &Db,
    account_id: &AccountId,
    actor: Option<String>,
    action: Option<Action>,
    page: i64,
    page_size: i64,
) -> Result<AuditPage, ServiceError> {
    let query = AuditQuery {
        account_id: Some(account_id.clone()),
        actor,
        action,
        since: None,
        before: None,
        offset: page * page_size,
        limit: page_size + 1,
    };
    let mut events = tidemark_store::audit::list_audit(db, &query).await?;
    let has_more = events.len() > page_size as usize;
    events.truncate(page_size as usize);
    Ok(AuditPage {
        events,
        has_more,
        actors: tidemark_store::audit::audit_actors(db, account_id).await?,
    })
}
