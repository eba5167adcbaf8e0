//! Secrets a plain form made, waiting for the page the form redirected to
//! (`tidemark_domain::handover`). A row is claimed before the form's action runs (so the same
//! form sent twice acts once), filled with the sealed secret once it is made, and deleted by
//! the page that shows it, or when it expires.

use crate::{on_db, on_db_write, AccountId, StoreError, Writer};
use tidemark_domain::Millis;

/// What claiming a form's handover found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// The first time this form was sent: its action runs.
    New,
    /// The form was sent before: its first sending acts (or acted), this one must not.
    Repeat,
}

/// Who a handover is for: only the member who sent the form may take it.
#[derive(Debug, Clone, Copy)]
pub struct Owner<'a> {
    pub account_id: &'a AccountId,
    pub user_id: &'a str,
}

/// Claims the handover `id` (a hash of the form's token) for `owner`, or finds it claimed.
/// Expired handovers go first: nobody can take them any more.
pub async fn claim(
    db: &Writer,
    id: &str,
    owner: Owner<'_>,
    kind: &str,
    now: Millis,
    ttl: Millis,
) -> Result<Claim, StoreError> {
    let inserted = on_db_write!(db, pool => {
        sqlx::query("DELETE FROM secret_handovers WHERE expires_at <= $1")
            .bind(now)
            .execute(pool)
            .await?;
        sqlx::query(
            "INSERT INTO secret_handovers (id, account_id, user_id, kind, created_at, expires_at) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING",
        )
        .bind(id)
        .bind(owner.account_id)
        .bind(owner.user_id)
        .bind(kind)
        .bind(now)
        .bind(now + ttl)
        .execute(pool)
        .await?
        .rows_affected()
    });
    Ok(if inserted == 1 {
        Claim::New
    } else {
        Claim::Repeat
    })
}

/// The claimed handover's secret, sealed, now that the form's action made it.
pub async fn fill(db: &Writer, id: &str, sealed: &str) -> Result<(), StoreError> {
    on_db_write!(db, pool => {
        sqlx::query("UPDATE secret_handovers SET secret_sealed = $1 WHERE id = $2")
            .bind(sealed)
            .bind(id)
            .execute(pool)
            .await?
            .rows_affected()
    });
    Ok(())
}

/// Lets a claim go when the form's action made nothing (refused, failed): sending the same
/// form again may try again.
pub async fn release(db: &Writer, id: &str) -> Result<(), StoreError> {
    on_db_write!(db, pool => {
        sqlx::query("DELETE FROM secret_handovers WHERE id = $1 AND secret_sealed IS NULL")
            .bind(id)
            .execute(pool)
            .await?
            .rows_affected()
    });
    Ok(())
}

/// What a page found waiting for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Taken {
    /// The secret (sealed), now gone from the store: the page shows it this once.
    Secret { kind: String, sealed: String },
    /// The form's action is still under way (a repeated form's redirect overtook it).
    Pending,
    /// Shown already, expired, never made, or not `owner`'s.
    Gone,
}

#[derive(sqlx::FromRow)]
struct TakenRow {
    kind: String,
    secret_sealed: String,
}

/// Takes the handover `id` for `owner`: the secret once, then never again.
pub async fn take(
    db: &Writer,
    id: &str,
    owner: Owner<'_>,
    now: Millis,
) -> Result<Taken, StoreError> {
    // One statement: two tabs opening the page at once cannot both get it.
    let taken: Option<TakenRow> = on_db_write!(db, pool => {
        sqlx::query_as(
            "DELETE FROM secret_handovers WHERE id = $1 AND account_id = $2 AND user_id = $3 \
             AND expires_at > $4 AND secret_sealed IS NOT NULL RETURNING kind, secret_sealed",
        )
        .bind(id)
        .bind(owner.account_id)
        .bind(owner.user_id)
        .bind(now)
        .fetch_optional(pool)
        .await?
    });
    if let Some(row) = taken {
        return Ok(Taken::Secret {
            kind: row.kind,
            sealed: row.secret_sealed,
        });
    }
    let pending: Option<(i64,)> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT 1 FROM secret_handovers WHERE id = $1 AND account_id = $2 AND user_id = $3 \
             AND expires_at > $4 AND secret_sealed IS NULL",
        )
        .bind(id)
        .bind(owner.account_id)
        .bind(owner.user_id)
        .bind(now)
        .fetch_optional(pool)
        .await
    })?;
    Ok(if pending.is_some() {
        Taken::Pending
    } else {
        Taken::Gone
    })
}
