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
