//! Leases: work one replica does for all at a time (housekeeping) holds one while it runs.
//! Taking one is a single conditional upsert, so two replicas never both hold it; a holder
//! that dies lets it lapse, and another replica takes it over then.

use tidemark_domain::Millis;

use crate::{on_db, on_db_write, Db, StoreError, Writer};

/// Takes lease `name` for `holder` until `now + ttl`, or renews it if `holder` has it.
/// `false`: another holder has it and it has not lapsed.
pub async fn acquire(
    db: &Writer,
    name: &str,
    holder: &str,
    now: Millis,
    ttl: Millis,
) -> Result<bool, StoreError> {
    let done = on_db_write!(db, pool => {
        sqlx::query(
            "INSERT INTO leases (name, holder, expires_at) VALUES ($1, $2, $3) \
             ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, \
             expires_at = excluded.expires_at \
             WHERE leases.holder = excluded.holder OR leases.expires_at <= $4",
        )
        .bind(name)
        .bind(holder)
        .bind(now + ttl)
        .bind(now)
        .execute(pool)
        .await
        .map(|r| r.rows_affected())
    })?;
    Ok(done == 1)
}

/// Gives lease `name` up, if `holder` has it.
pub async fn release(db: &Writer, name: &str, holder: &str) -> Result<(), StoreError> {
    on_db_write!(db, pool => {
        sqlx::query("DELETE FROM leases WHERE name = $1 AND holder = $2")
            .bind(name)
            .bind(holder)
            .execute(pool)
            .await
            .map(|_| ())
    })?;
    Ok(())
}

/// Who holds lease `name` now, if anyone, and until when.
pub async fn holder(db: &Db, name: &str, now: Millis) -> Result<Option<Held>, StoreError> {
    let held = on_db!(db, pool => {
        sqlx::query_as("SELECT holder, expires_at FROM leases WHERE name = $1 AND expires_at > $2")
            .bind(name)
            .bind(now)
            .fetch_optional(pool)
            .await
    })?;
    Ok(held.map(|(holder, expires_at)| Held { holder, expires_at }))
}

/// A lease's holder, and when it lapses unless renewed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub holder: String,
    pub expires_at: Millis,
}

/// Takes lease `name` for `holder` whoever has it: for an operator who knows its holder is
/// dead (a killed pass) and will not wait for it to lapse. A live holder finds the lease gone
/// at its next renewal and stops there.
pub async fn take_over(
    db: &Writer,
    name: &str,
    holder: &str,
    now: Millis,
    ttl: Millis,
) -> Result<(), StoreError> {
    on_db_write!(db, pool => {
        sqlx::query(
            "INSERT INTO leases (name, holder, expires_at) VALUES ($1, $2, $3) \
             ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, \
             expires_at = excluded.expires_at",
        )
        .bind(name)
        .bind(holder)
        .bind(now + ttl)
        .execute(pool)
        .await
        .map(|_| ())
    })?;
    Ok(())
}
