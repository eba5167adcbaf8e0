//! The audit log: who changed what in an account, when and from where, with a summary of
//! before and after. Store functions that change audited things take an [`AuditContext`] and
//! write the event in their own transaction ([`record_in!`]), so a change and its record
//! commit together or not at all. Append-only: this module inserts and reads, nothing else.

use crate::AccountId;
use tidemark_domain::audit::{Action, AuditContext};
use tidemark_domain::Millis;

use crate::{on_db, on_db_write, Db, StoreError};

/// One audited change, as the store function that makes it describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change<'a> {
    pub account_id: Option<&'a AccountId>,
    pub action: Action,
    pub target: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

#[doc(hidden)]
pub const INSERT_SQL: &str = "INSERT INTO audit_events (id, account_id, at, actor_kind, actor, \
     actor_user_id, client_ip, action, target, before_summary, after_summary) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";

/// Inserts the audit event for `$change` made under `$ctx`, on `$exec` (the change's own
/// transaction). A macro so that one text serves both backends' executors.
macro_rules! record_in {
    ($exec:expr, $ctx:expr, $change:expr) => {{
        let ctx: &tidemark_domain::audit::AuditContext = $ctx;
        let change: $crate::audit::Change<'_> = $change;
        sqlx::query($crate::audit::INSERT_SQL)
            .bind(tidemark_domain::ids::new_audit_id())
            .bind(change.account_id)
            .bind(ctx.at)
            .bind(ctx.actor.kind())
            .bind(ctx.actor.name())
            .bind(ctx.actor.user_id())
            .bind(ctx.client_ip.as_deref())
            .bind(change.action.as_str())
            .bind(change.target)
            .bind(change.before)
            .bind(change.after)
            .execute($exec)
            .await
    }};
}
pub(crate) use record_in;

/// Records `change` alone (one statement, its own transaction): for what changes nothing
/// else, a staff member signing in, a read the vendor's log keeps.
pub async fn record(
    db: &crate::Writer,
    ctx: &AuditContext,
    change: Change<'_>,
) -> Result<(), StoreError> {
    on_db_write!(db, pool => { record_in!(pool, ctx, change).map(drop) })?;
    Ok(())
}

/// One recorded change.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct AuditEvent {
    pub id: String,
    pub account_id: Option<AccountId>,
    pub at: Millis,
    pub actor_kind: String,
    pub actor: String,
    pub client_ip: Option<String>,
    pub action: String,
    pub target: String,
    pub before_summary: Option<String>,
    pub after_summary: Option<String>,
}

/// Which events to list, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditQuery {
    /// `None`: every account's, and those of no account (operators only).
    pub account_id: Option<AccountId>,
    /// The actor exactly as shown (an e-mail address or `operator:<name>`).
    pub actor: Option<String>,
    pub action: Option<Action>,
    pub since: Option<Millis>,
    /// Only events before this one (its time and id): the admin API's keyset pages.
    pub before: Option<(Millis, String)>,
    pub offset: i64,
    pub limit: i64,
}

pub async fn list_audit(db: &Db, q: &AuditQuery) -> Result<Vec<AuditEvent>, StoreError> {
    // No cursor: before every event (ids are `aud_…`, which sort before `~`).
    let (before_at, before_id) = q
        .before
        .as_ref()
        .map_or((i64::MAX, "~"), |(at, id)| (*at, id.as_str()));
    let rows = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT id, account_id, at, actor_kind, actor, client_ip, action, target, \
             before_summary, after_summary FROM audit_events \
             WHERE ($1 IS NULL OR account_id = $1) AND ($2 IS NULL OR actor = $2) \
             AND ($3 IS NULL OR action = $3) AND at >= $4 \
             AND (at < $7 OR (at = $7 AND id < $8)) \
             ORDER BY at DESC, id DESC LIMIT $5 OFFSET $6",
        )
        .bind(q.account_id.as_deref())
        .bind(q.actor.as_deref())
        .bind(q.action.map(Action::as_str))
        .bind(q.since.unwrap_or(i64::MIN))
        .bind(q.limit)
        .bind(q.offset.max(0))
        .bind(before_at)
        .bind(before_id)
        .fetch_all(pool)
        .await
    })?;
    Ok(rows)
}

/// The distinct actors of the account's log (for the filter's choices), by name.
pub async fn audit_actors(db: &Db, account_id: &AccountId) -> Result<Vec<String>, StoreError> {
    let rows: Vec<(String,)> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT DISTINCT actor FROM audit_events WHERE account_id = $1 ORDER BY actor",
        )
        .bind(account_id)
        .fetch_all(pool)
        .await
    })?;
    Ok(rows.into_iter().map(|(a,)| a).collect())
}

/// The context for changes made by an operator command now.
pub fn operator_context(name: &str, at: Millis) -> AuditContext {
    AuditContext {
        actor: tidemark_domain::audit::Actor::Operator {
            name: name.to_owned(),
        },
        client_ip: None,
        at,
    }
}
