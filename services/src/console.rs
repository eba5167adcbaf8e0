//! The vendor's console: what its staff look up. Every change the console makes goes through
//! the same use cases as the admin API (`licensing`, `seats`), under the staff member's
//! name; this module holds what only the console does.

use tidemark_domain::audit::{Action, AuditContext};
use tidemark_domain::console::SearchTerm;
use tidemark_store::audit::Change;
use tidemark_store::licenses::{self, FoundBy, License};
use tidemark_store::Db;

use crate::ServiceError;

/// Up to `limit` licences `term` finds, and whether more did. The search is kept in the
/// vendor's audit log under the staff member's name (as the admin API keeps its reads).
pub async fn search(
    db: &Db,
    term: &SearchTerm,
    limit: i64,
    audit: &AuditContext,
) -> Result<(Vec<(License, FoundBy)>, bool), ServiceError> {
    let mut found = licenses::search_licenses(db, term, limit + 1).await?;
    let more = found.len() as i64 > limit;
    found.truncate(usize::try_from(limit).unwrap_or(0));
    note_read(db, audit, format!("search: {}", term.describe())).await?;
    Ok((found, more))
}

/// Records that a staff member looked at `target`.
pub async fn note_read(db: &Db, audit: &AuditContext, target: String) -> Result<(), ServiceError> {
    let ctx = audit.clone();
    let target: String = target.chars().take(500).collect();
    db.detached(move |db| async move {
        let change = Change {
            account_id: None,
            action: Action::ConsoleRead,
            target,
            before: None,
            after: None,
        };
        tidemark_store::audit::record(&db, &ctx, change).await
    })
    .await?;
    Ok(())
}

/// What the console's licence page shows: the licence and what hangs off it, never the
/// account's findings, scans' contents or reports.
pub struct LicenseDossier {
    pub license: License,
    pub machines: Vec<tidemark_store::machines::MachineRow>,
    pub members: Vec<tidemark_store::access::Member>,
    pub projects: Vec<ProjectLine>,
    /// The latest vendor events (type, when, reason if any), newest first.
    pub events: Vec<EventLine>,
    /// The latest audited changes to the licence and its account's access, newest first.
    pub audit: Vec<tidemark_store::audit::AuditEvent>,
    /// Its days of use within the last [`ACTIVITY_DAYS`] (days with none are absent).
    pub days: Vec<tidemark_store::activity::LicenseDay>,
}

/// How many days of use a licence's page charts.
pub const ACTIVITY_DAYS: i64 = 90;

/// A project as staff see it: its name and how much it is used.
pub struct ProjectLine {
    pub label: String,
    pub scans: i64,
    pub last_push: Option<tidemark_domain::Millis>,
    pub archived: bool,
}

pub struct EventLine {
    pub at: tidemark_domain::Millis,
    pub event: String,
    pub reason: Option<String>,
}

/// Audit actions a licence page shows: the licence, its seats and keys, who has access.
/// A customer's triage notes, gates and frameworks are their own business.
const DOSSIER_ACTIONS: [&str; 8] = [
    "license.", "machine.", "key.", "keys.", "member.", "sso.", "scim.", "badge.",
];

/// Events and audit lines a licence page shows at most.
const DOSSIER_RECENT: i64 = 30;

pub async fn license_dossier(
    db: &Db,
    license_id: &str,
    audit: &AuditContext,
) -> Result<LicenseDossier, ServiceError> {
    let license = licenses::find_license(db, license_id)
        .await?
        .ok_or(ServiceError::NotFound)?;
    let account = license.account_id.clone();
    let machines = tidemark_store::machines::list(db, &license.id).await?;
    let members = tidemark_store::access::list_members(db, &account).await?;
    let projects = tidemark_store::dashboard::list_projects(db, &account)
        .await?
        .into_iter()
        .map(|p| ProjectLine {
            label: p.label,
            scans: p.scan_count,
            last_push: p.last_scanned_at,
            archived: p.archived_at.is_some(),
        })
        .collect();
    let filter = tidemark_store::license_events::EventFilter {
        license_id: Some(license.id.clone()),
        event: None,
    };
    let events = tidemark_store::license_events::page_events(db, &filter, None, DOSSIER_RECENT)
        .await?
        .into_iter()
        .map(|e| {
            let body: serde_json::Value = serde_json::from_str(&e.body).unwrap_or_default();
            EventLine {
                at: e.created_at,
                event: body["type"].as_str().unwrap_or("?").to_owned(),
                reason: body["data"]["reason"].as_str().map(str::to_owned),
            }
        })
        .collect();
    let query = tidemark_store::audit::AuditQuery {
        account_id: Some(account),
        limit: DOSSIER_RECENT * 4,
        ..Default::default()
    };
    let audit_lines = tidemark_store::audit::list_audit(db, &query)
        .await?
        .into_iter()
        .filter(|e| DOSSIER_ACTIONS.iter().any(|p| e.action.starts_with(p)))
        .take(usize::try_from(DOSSIER_RECENT).unwrap_or(0))
        .collect();
    let first_day = tidemark_domain::client_version::day_of(audit.at)
        - (ACTIVITY_DAYS - 1) * tidemark_domain::time::DAY_MS;
    let days = tidemark_store::activity::license_days(db, &license.id, first_day).await?;
    note_read(db, audit, format!("licence {}", license.id)).await?;
    Ok(LicenseDossier {
        days,
        license,
        machines,
        members,
        projects,
        events,
        audit: audit_lines,
    })
}
