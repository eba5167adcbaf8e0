//! Dashboard session records and the one-time records of sign-in round trips.
//!
//! Session ids are stored only as hashes (the caller hashes them). A record is created once
//! and afterwards only updated: an update never brings back a record that logout deleted.

use tidemark_domain::Millis;

use crate::Writer;
use crate::{on_db, on_db_write, Db, StoreError};

/// Which people's sessions: the dashboard's customers, or the vendor's staff in the console.
/// The two live in tables of the same shape and never in one: a customer's session id can
/// never be looked up as a staff session, whatever the cookie it came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionTable {
    /// `sessions`: `user_id` and `account_id` name the member.
    Customers,
    /// `staff_sessions`: `user_id` is the staff member's subject at the console's provider;
    /// `account_id` is always empty.
    Staff,
}

impl SessionTable {
    fn name(self) -> &'static str {
        match self {
            SessionTable::Customers => "sessions",
            SessionTable::Staff => "staff_sessions",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRow {
    pub data: String,
    pub expires_at: Millis,
}

/// Fields a session record keeps besides its opaque data.
#[derive(Debug, Clone, Copy)]
pub struct SessionOwner<'a> {
    pub user_id: Option<&'a str>,
    pub account_id: Option<&'a str>,
}

/// Inserts a new record; `false` when the id hash is taken (the caller picks another id).
pub async fn create_session(
    db: &Writer,
    id_hash: &str,
    owner: SessionOwner<'_>,
    data: &str,
    now: Millis,
    expires_at: Millis,
    absolute_expires_at: Millis,
) -> Result<bool, StoreError> {
    let at = (now, expires_at, absolute_expires_at);
    create_in(db, SessionTable::Customers, id_hash, owner, data, at).await
}

/// [`create_session`] in `table`; `at` is (now, expires_at, absolute_expires_at).
pub async fn create_in(
    db: &Writer,
    table: SessionTable,
    id_hash: &str,
    owner: SessionOwner<'_>,
    data: &str,
    (now, expires_at, absolute_expires_at): (Millis, Millis, Millis),
) -> Result<bool, StoreError> {
    let sql = format!(
        "INSERT INTO {} (id_hash, user_id, account_id, data, created_at, expires_at, \
         absolute_expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
        table.name()
    );
    let inserted = on_db_write!(db, pool => {
        sqlx::query(&sql)
        .bind(id_hash)
        .bind(owner.user_id)
        .bind(owner.account_id)
        .bind(data)
        .bind(now)
        .bind(expires_at.min(absolute_expires_at))
        .bind(absolute_expires_at)
        .execute(pool)
        .await
        .map(|r| r.rows_affected())
    })?;
    Ok(inserted == 1)
}

/// Updates a live record: new data, and an expiry moved to `expires_at` (never past the
/// record's absolute end). To keep reads cheap, a record whose data is unchanged is only
/// rewritten once its expiry has fallen `slack_ms` behind. A record that is gone stays gone.
pub async fn save_session(
    db: &Writer,
    id_hash: &str,
    owner: SessionOwner<'_>,
    data: &str,
    expires_at: Millis,
    slack_ms: Millis,
) -> Result<(), StoreError> {
    let table = SessionTable::Customers;
    save_in(db, table, id_hash, owner, data, expires_at, slack_ms).await
}

/// [`save_session`] in `table`.
pub async fn save_in(
    db: &Writer,
    table: SessionTable,
    id_hash: &str,
    owner: SessionOwner<'_>,
    data: &str,
    expires_at: Millis,
    slack_ms: Millis,
) -> Result<(), StoreError> {
    let sql = format!(
        "UPDATE {} SET data = $2, user_id = $3, account_id = $4, \
         expires_at = CASE WHEN $5 < absolute_expires_at THEN $5 ELSE absolute_expires_at END \
         WHERE id_hash = $1 AND (data <> $2 OR expires_at < $6)",
        table.name()
    );
    on_db_write!(db, pool => {
        sqlx::query(&sql)
        .bind(id_hash)
        .bind(data)
        .bind(owner.user_id)
        .bind(owner.account_id)
        .bind(expires_at)
        .bind(expires_at - slack_ms)
        .execute(pool)
        .await
        .map(|_| ())
    })?;
    Ok(())
}

/// The record, if it exists and has not expired at `now`.
pub async fn load_session(
    db: &Db,
    id_hash: &str,
    now: Millis,
) -> Result<Option<SessionRow>, StoreError> {
    load_in(db, SessionTable::Customers, id_hash, now).await
}

/// [`load_session`] from `table`.
pub async fn load_in(
    db: &Db,
    table: SessionTable,
    id_hash: &str,
    now: Millis,
) -> Result<Option<SessionRow>, StoreError> {
    let sql = format!(
        "SELECT data, expires_at FROM {} \
         WHERE id_hash = $1 AND expires_at > $2 AND absolute_expires_at > $2",
        table.name()
    );
    let row: Option<(String, i64)> = on_db!(db, pool => {
        sqlx::query_as(&sql)
        .bind(id_hash)
        .bind(now)
        .fetch_optional(pool)
        .await
    })?;
    Ok(row.map(|(data, expires_at)| SessionRow { data, expires_at }))
}

pub async fn delete_session(db: &Writer, id_hash: &str) -> Result<(), StoreError> {
    delete_in(db, SessionTable::Customers, id_hash).await
}

/// [`delete_session`] from `table`.
pub async fn delete_in(db: &Writer, table: SessionTable, id_hash: &str) -> Result<(), StoreError> {
    let sql = format!("DELETE FROM {} WHERE id_hash = $1", table.name());
    on_db_write!(db, pool => {
        sqlx::query(&sql).bind(id_hash).execute(pool).await.map(|_| ())
    })?;
    Ok(())
}

/// Ends every session of a user (on every account).
pub async fn delete_user_sessions(db: &Writer, user_id: &str) -> Result<u64, StoreError> {
    let deleted = on_db_write!(db, pool => {
        sqlx::query("DELETE FROM sessions WHERE user_id = $1").bind(user_id).execute(pool).await.map(|r| r.rows_affected())
    })?;
    Ok(deleted)
}

pub async fn count_user_sessions(db: &Db, user_id: &str) -> Result<i64, StoreError> {
    let (n,): (i64,) = on_db!(db, pool => {
        sqlx::query_as("SELECT COUNT(*) FROM sessions WHERE user_id = $1")
            .bind(user_id)
            .fetch_one(pool)
            .await
    })?;
    Ok(n)
}

/// Removes expired sessions, used or expired sign-in attempts, forgotten SAML assertion ids,
/// and keyless CI's expired push tokens and job token ids.
pub async fn prune_expired(db: &Writer, now: Millis) -> Result<u64, StoreError> {
    let deleted = on_db_write!(db, pool => {
        let mut deleted = 0;
        for sql in [
            "DELETE FROM sessions WHERE expires_at <= $1 OR absolute_expires_at <= $1",
            "DELETE FROM staff_sessions WHERE expires_at <= $1 OR absolute_expires_at <= $1",
            "DELETE FROM login_attempts WHERE expires_at <= $1",
            "DELETE FROM saml_seen_assertions WHERE expires_at <= $1",
            "DELETE FROM oidc_used_tokens WHERE expires_at <= $1",
            "DELETE FROM ci_tokens WHERE expires_at <= $1",
        ] {
            deleted += sqlx::query(sql).bind(now).execute(pool).await?.rows_affected();
        }
        Ok::<u64, sqlx::Error>(deleted)
    })?;
    Ok(deleted)
}

/// Records the start of a sign-in round trip.
pub async fn insert_login_attempt(
    db: &Writer,
    id_hash: &str,
    method: &str,
    payload: &str,
    expires_at: Millis,
) -> Result<(), StoreError> {
    on_db_write!(db, pool => {
        sqlx::query(
            "INSERT INTO login_attempts (id_hash, method, payload, expires_at) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(id_hash)
        .bind(method)
        .bind(payload)
        .bind(expires_at)
        .execute(pool)
        .await
        .map(|_| ())
    })?;
    Ok(())
}

/// Takes (deletes and returns) a live sign-in attempt: each can be completed at most once,
/// even when two replicas receive the same callback.
pub async fn take_login_attempt(
    db: &Writer,
    id_hash: &str,
    method: &str,
    now: Millis,
) -> Result<Option<String>, StoreError> {
    let row: Option<(String, i64)> = on_db_write!(db, pool => {
        sqlx::query_as(
            "DELETE FROM login_attempts WHERE id_hash = $1 AND method = $2 \
             RETURNING payload, expires_at",
        )
        .bind(id_hash)
        .bind(method)
        .fetch_optional(pool)
        .await
    })?;
    Ok(row.and_then(|(payload, expires_at)| (expires_at > now).then_some(payload)))
}

/// Remembers a SAML assertion id until `expires_at`; `false` if it was already seen (replay).
pub async fn remember_assertion(
    db: &Writer,
    id_hash: &str,
    expires_at: Millis,
) -> Result<bool, StoreError> {
    let inserted = on_db_write!(db, pool => {
        sqlx::query(
            "INSERT INTO saml_seen_assertions (id_hash, expires_at) VALUES ($1, $2) \
             ON CONFLICT DO NOTHING",
        )
        .bind(id_hash)
        .bind(expires_at)
        .execute(pool)
        .await
        .map(|r| r.rows_affected())
    })?;
    Ok(inserted == 1)
}
