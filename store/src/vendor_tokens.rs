//! Vendor tokens: what the vendor's systems and staff call `/admin/v1` with. Stored as a hash
//! with a prefix to name it; one role each.

use tidemark_domain::audit::{Action, AuditContext};
use tidemark_domain::secrets::HashedApiKey;
use tidemark_domain::vendor::VendorRole;
use tidemark_domain::Millis;

use crate::audit::Change;
use crate::stmt::Stmt;
use crate::tx::{read_all, WriteTx};
use crate::{Db, StoreError, Writer};

/// A token as listed: never the token, never its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VendorTokenRow {
    pub id: String,
    pub name: String,
    pub role: VendorRole,
    pub prefix: String,
    pub created_at: Millis,
    pub created_by: String,
    pub expires_at: Option<Millis>,
    pub last_used_at: Option<Millis>,
    pub revoked_at: Option<Millis>,
}

#[derive(sqlx::FromRow)]
struct Row {
    id: String,
    name: String,
    role: String,
    prefix: String,
    created_at: i64,
    created_by: String,
    expires_at: Option<i64>,
    last_used_at: Option<i64>,
    revoked_at: Option<i64>,
}

const COLUMNS: &str =
    "id, name, role, prefix, created_at, created_by, expires_at, last_used_at, revoked_at";

impl TryFrom<Row> for VendorTokenRow {
    type Error = StoreError;

    fn try_from(r: Row) -> Result<Self, StoreError> {
        Ok(VendorTokenRow {
            id: r.id,
            name: r.name,
            role: VendorRole::parse(&r.role).ok_or(StoreError::Corrupt("vendor_tokens.role"))?,
            prefix: r.prefix,
            created_at: r.created_at,
            created_by: r.created_by,
            expires_at: r.expires_at,
            last_used_at: r.last_used_at,
            revoked_at: r.revoked_at,
        })
    }
}

/// A token to store.
pub struct NewVendorToken<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub role: VendorRole,
    pub hash: &'a HashedApiKey,
    pub prefix: &'a str,
    pub expires_at: Option<Millis>,
}

/// Stores the token; `false` when a live token already has its name (nothing stored).
pub async fn create(
    db: &Writer,
    new: &NewVendorToken<'_>,
    audit: &AuditContext,
) -> Result<bool, StoreError> {
    let mut tx = WriteTx::begin(db).await?;
    let taken: Option<(String,)> = tx
        .fetch_optional(
            Stmt::new("SELECT id FROM vendor_tokens WHERE name = $1 AND revoked_at IS NULL")
                .bind(new.name),
        )
        .await?;
    if taken.is_some() {
        return Ok(false);
    }
    tx.execute(
        Stmt::new(
            "INSERT INTO vendor_tokens (id, name, role, token_hash, prefix, created_at, \
             created_by, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(new.id)
        .bind(new.name)
        .bind(new.role.as_str())
        .bind(new.hash.as_str())
        .bind(new.prefix)
        .bind(audit.at)
        .bind(audit.actor.name())
        .bind(new.expires_at),
    )
    .await?;
    let change = Change {
        account_id: None,
        action: Action::VendorTokenCreated,
        target: new.id.to_owned(),
        before: None,
        after: Some(format!(
            "{} ({}, {}){}",
            new.name,
            new.role.as_str(),
            new.prefix,
            new.expires_at
                .map(|at| format!(", expires {}", tidemark_domain::to_rfc3339(at)))
                .unwrap_or_default()
        )),
    };
    tx.audit(audit, change).await?;
    tx.commit().await?;
    Ok(true)
}

/// Every token, live ones first, newest first.
pub async fn list(db: &Db) -> Result<Vec<VendorTokenRow>, StoreError> {
    let rows: Vec<Row> = read_all(
        db,
        Stmt::new(format!(
            "SELECT {COLUMNS} FROM vendor_tokens \
             ORDER BY (revoked_at IS NULL) DESC, created_at DESC, id"
        )),
    )
    .await?;
    rows.into_iter().map(VendorTokenRow::try_from).collect()
}

/// Revokes the token at once; `false` when there is no such live token.
pub async fn revoke(db: &Writer, id: &str, audit: &AuditContext) -> Result<bool, StoreError> {
    let mut tx = WriteTx::begin(db).await?;
    let found: Option<(String, String)> = tx
        .fetch_optional(
            Stmt::new(
                "SELECT name, prefix FROM vendor_tokens WHERE id = $1 AND revoked_at IS NULL",
            )
            .bind(id),
        )
        .await?;
    let Some((name, prefix)) = found else {
        return Ok(false);
    };
    tx.execute(
        Stmt::new("UPDATE vendor_tokens SET revoked_at = $1 WHERE id = $2")
            .bind(audit.at)
            .bind(id),
    )
    .await?;
    let change = Change {
        account_id: None,
        action: Action::VendorTokenRevoked,
        target: id.to_owned(),
        before: Some(format!("{name} ({prefix})")),
        after: None,
    };
    tx.audit(audit, change).await?;
    tx.commit().await?;
    Ok(true)
}

/// The live token with this hash (not revoked, not expired at `now`), its last use noted (at
/// most once a minute: a busy integration does not write on every call).
pub async fn authenticate(
    db: &Db,
    hash: &HashedApiKey,
    now: Millis,
) -> Result<Option<VendorTokenRow>, StoreError> {
    let rows: Vec<Row> = read_all(
        db,
        Stmt::new(format!(
            "SELECT {COLUMNS} FROM vendor_tokens WHERE token_hash = $1 AND revoked_at IS NULL \
             AND (expires_at IS NULL OR expires_at > $2)"
        ))
        .bind(hash.as_str())
        .bind(now),
    )
    .await?;
    let Some(row) = rows.into_iter().next() else {
        return Ok(None);
    };
    let token = VendorTokenRow::try_from(row)?;
    if token
        .last_used_at
        .is_none_or(|at| now - at >= tidemark_domain::time::MINUTE_MS)
    {
        let id = token.id.clone();
        db.detached(move |db| async move {
            let mut tx = WriteTx::begin(&db).await?;
            tx.execute(
                Stmt::new("UPDATE vendor_tokens SET last_used_at = $1 WHERE id = $2")
                    .bind(now)
                    .bind(id),
            )
            .await?;
            tx.commit().await?;
            Ok::<_, StoreError>(())
        })
        .await?;
    }
    Ok(Some(token))
}

/// Records a read made through the admin API (`target`: its method's path and query), in a
/// transaction of its own: the vendor's log says who looked at what, too.
pub async fn record_read(
    db: &Writer,
    ctx: &AuditContext,
    target: String,
) -> Result<(), StoreError> {
    let mut tx = WriteTx::begin(db).await?;
    let change = Change {
        account_id: None,
        action: Action::AdminRead,
        target,
        before: None,
        after: None,
    };
    tx.audit(ctx, change).await?;
    tx.commit().await?;
    Ok(())
}
