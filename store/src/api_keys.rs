//! Named API keys (made in Settings with a name and an optional expiry) and the alert mail
//! that warns an account's admins a week before one expires. Activation's keys and Rotate
//! Key live with the licences (`licenses::rotate_api_keys`, `machines::activate`).

use tidemark_domain::audit::{Action, AuditContext};
use tidemark_domain::Millis;

use crate::audit::Change;
use crate::licenses::NewApiKey;
use crate::stmt::Stmt;
use crate::tx::{read_all, WriteTx};
use crate::{AccountId, Db, StoreError, Writer};

/// The outbox kind of the mail that warns of keys about to expire.
pub const KEY_EXPIRY_MAIL_KIND: &str = "key_expiring";

/// Adds a named key beside the account's others (none is revoked), and records it in the
/// audit log under its name, in one account-locked transaction.
pub async fn create_named_key(
    db: &Writer,
    key: &NewApiKey,
    expires_at: Option<Millis>,
    audit: &AuditContext,
) -> Result<(), StoreError> {
    let mut tx = WriteTx::begin_account(db, &key.account_id).await?;
    tx.execute(
        Stmt::new(
            "INSERT INTO api_keys (id, account_id, key_hash, prefix, machine, created_at, \
             expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&key.id)
        .bind(&key.account_id)
        .bind(key.hash.as_str())
        .bind(&key.prefix)
        .bind(&key.machine)
        .bind(key.now)
        .bind(expires_at),
    )
    .await?;
    let after = match expires_at {
        Some(at) => format!("active until {}", tidemark_domain::time::to_rfc3339(at)),
        None => "active, no expiry".to_owned(),
    };
    let change = Change {
        account_id: Some(&key.account_id),
        action: Action::KeyCreated,
        target: format!("{}… ({})", key.prefix, key.machine),
        before: None,
        after: Some(after),
    };
    tx.audit(audit, change).await?;
    tx.commit().await?;
    Ok(())
}

/// A key whose expiry is near, as the warning names it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ExpiringKey {
    pub id: String,
    pub account_id: AccountId,
    pub prefix: String,
    pub machine: String,
    pub expires_at: Millis,
}

const EXPIRING_COLUMNS: &str = "id, account_id, prefix, machine, expires_at";

/// The live keys of any account due a warning at `now` (expiring within `within` and not
/// warned of yet), oldest expiry first.
pub async fn keys_due_warning(
    db: &Db,
    now: Millis,
    within: Millis,
    limit: i64,
) -> Result<Vec<ExpiringKey>, StoreError> {
    read_all(
        db,
        Stmt::new(format!(
            "SELECT {EXPIRING_COLUMNS} FROM api_keys \
             WHERE expires_at IS NOT NULL AND revoked_at IS NULL AND expiry_warned_at IS NULL \
             AND expires_at > $1 AND expires_at <= $2 ORDER BY expires_at, id LIMIT $3"
        ))
        .bind(now)
        .bind(now + within)
        .bind(limit),
    )
    .await
}

/// The account's live keys expiring after `now` and within `within`: what a warning mail
/// lists when it is sent (a key revoked since it was queued is left out).
pub async fn expiring_keys_of(
    db: &Db,
    account_id: &AccountId,
    now: Millis,
    within: Millis,
) -> Result<Vec<ExpiringKey>, StoreError> {
    read_all(
        db,
        Stmt::new(format!(
            "SELECT {EXPIRING_COLUMNS} FROM api_keys WHERE account_id = $1 \
             AND expires_at IS NOT NULL AND revoked_at IS NULL \
             AND expires_at > $2 AND expires_at <= $3 ORDER BY expires_at, id"
        ))
        .bind(account_id)
        .bind(now)
        .bind(now + within),
    )
    .await
}

/// Queues one warning mail per admin of `account_id` who has not turned the warning off, and
/// marks `key_ids` warned, in one transaction: a pass cut short queues again, a finished one
/// never. Mail ids are `kex_<random>_<user id>`.
pub async fn queue_expiry_warning(
    db: &Writer,
    account_id: &AccountId,
    key_ids: &[String],
    now: Millis,
) -> Result<u64, StoreError> {
    let mut tx = WriteTx::begin(db).await?;
    let prefix = format!("kex_{}_", tidemark_domain::ids::random_base62(16));
    let queued = tx
        .execute(
            Stmt::new(format!(
                "INSERT INTO mail_outbox (id, kind, recipient, account_id, created_at, \
                 next_attempt_at) \
                 SELECT CAST($1 AS TEXT) || m.user_id, '{KEY_EXPIRY_MAIL_KIND}', u.email, \
                 m.account_id, $2, $3 FROM members m JOIN users u ON u.id = m.user_id \
                 LEFT JOIN alert_prefs ap ON ap.account_id = m.account_id \
                 AND ap.user_id = m.user_id \
                 WHERE m.account_id = $4 AND m.role = 'admin' \
                 AND COALESCE(ap.key_expiring, TRUE)"
            ))
            .bind(prefix)
            .bind(now)
            .bind(now)
            .bind(account_id),
        )
        .await?;
    for id in key_ids {
        tx.execute(
            Stmt::new(
                "UPDATE api_keys SET expiry_warned_at = $1 WHERE id = $2 AND account_id = $3",
            )
            .bind(now)
            .bind(id)
            .bind(account_id),
        )
        .await?;
    }
    tx.commit().await?;
    Ok(queued)
}
