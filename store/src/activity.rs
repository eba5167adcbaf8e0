//! Each licence's use per UTC day (validations, pushes) and the client each machine last
//! validated with, as replicas add what they counted in memory: counts are added, never set,
//! so replicas flushing at once each keep their own.

use tidemark_domain::Millis;

use crate::stmt::Stmt;
use crate::tx::{read_all, WriteTx};
use crate::{AccountId, Db, StoreError, Writer};

/// What one replica counted since its last flush.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counted {
    /// (licence lookup hash, day, validations)
    pub validations: Vec<(String, Millis, i64)>,
    /// (account, day, pushes)
    pub pushes: Vec<(AccountId, Millis, i64)>,
    /// (licence lookup hash, machine key, client): the latest seen.
    pub clients: Vec<(String, String, String)>,
}

impl Counted {
    pub fn is_empty(&self) -> bool {
        self.validations.is_empty() && self.pushes.is_empty() && self.clients.is_empty()
    }
}

/// Adds `counted` in one transaction. A lookup hash or account with no licence adds nothing.
pub async fn add(db: &Writer, counted: &Counted) -> Result<(), StoreError> {
    let mut tx = WriteTx::begin(db).await?;
    for (lookup, day, n) in &counted.validations {
        tx.execute(
            Stmt::new(
                "INSERT INTO license_days (license_id, day, validations, pushes) \
                 SELECT id, $2, $3, 0 FROM licenses WHERE lookup_hash = $1 \
                 ON CONFLICT (license_id, day) \
                 DO UPDATE SET validations = license_days.validations + excluded.validations",
            )
            .bind(lookup)
            .bind(*day)
            .bind(*n),
        )
        .await?;
    }
    for (account, day, n) in &counted.pushes {
        tx.execute(
            Stmt::new(
                "INSERT INTO license_days (license_id, day, validations, pushes) \
                 SELECT id, $2, 0, $3 FROM licenses WHERE account_id = $1 \
                 ON CONFLICT (license_id, day) \
                 DO UPDATE SET pushes = license_days.pushes + excluded.pushes",
            )
            .bind(account)
            .bind(*day)
            .bind(*n),
        )
        .await?;
    }
    for (lookup, machine_key, client) in &counted.clients {
        tx.execute(
            Stmt::new(
                "UPDATE machines SET client_version = $3 WHERE machine_key = $2 \
                 AND license_id IN (SELECT id FROM licenses WHERE lookup_hash = $1)",
            )
            .bind(lookup)
            .bind(machine_key)
            .bind(client),
        )
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Notes the machines seen validating (licence id, machine key, when) as active on that day.
pub async fn note_machine_days(
    db: &Writer,
    seen: &[(String, String, Millis)],
) -> Result<(), StoreError> {
    let mut tx = WriteTx::begin(db).await?;
    for (license_id, machine_key, at) in seen {
        tx.execute(
            Stmt::new(
                "INSERT INTO machine_days (day, machine_id) \
                 SELECT $1, id FROM machines WHERE license_id = $2 AND machine_key = $3 \
                 ON CONFLICT (day, machine_id) DO NOTHING",
            )
            .bind(tidemark_domain::client_version::day_of(*at))
            .bind(license_id)
            .bind(machine_key),
        )
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Forgets days before `before`; how many rows.
pub async fn prune(db: &Writer, before: Millis) -> Result<u64, StoreError> {
    let mut tx = WriteTx::begin(db).await?;
    let mut gone = tx
        .execute(Stmt::new("DELETE FROM license_days WHERE day < $1").bind(before))
        .await?;
    gone += tx
        .execute(Stmt::new("DELETE FROM machine_days WHERE day < $1").bind(before))
        .await?;
    tx.commit().await?;
    Ok(gone)
}

/// One licence's day of use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct LicenseDay {
    pub day: Millis,
    pub validations: i64,
    pub pushes: i64,
}

/// The licence's days with any use from `from` on, oldest first.
pub async fn license_days(
    db: &Db,
    license_id: &str,
    from: Millis,
) -> Result<Vec<LicenseDay>, StoreError> {
    read_all(
        db,
        Stmt::new(
            "SELECT day, validations, pushes FROM license_days \
             WHERE license_id = $1 AND day >= $2 ORDER BY day",
        )
        .bind(license_id)
        .bind(from),
    )
    .await
}

/// Every licence's use summed per day from `from` on, oldest first: (day, validations,
/// pushes), days with none absent.
pub async fn use_by_day(db: &Db, from: Millis) -> Result<Vec<(Millis, i64, i64)>, StoreError> {
    read_all(
        db,
        Stmt::new(
            "SELECT day, CAST(SUM(validations) AS BIGINT), CAST(SUM(pushes) AS BIGINT) \
             FROM license_days WHERE day >= $1 GROUP BY day ORDER BY day",
        )
        .bind(from),
    )
    .await
}

/// The machines active per day from `from` on, oldest first.
pub async fn machines_by_day(db: &Db, from: Millis) -> Result<Vec<(Millis, i64)>, StoreError> {
    read_all(
        db,
        Stmt::new(
            "SELECT day, COUNT(*) FROM machine_days WHERE day >= $1 GROUP BY day ORDER BY day",
        )
        .bind(from),
    )
    .await
}

/// The clients of the machines holding a seat and seen since `since`, most common first
/// (`None`: machines that never said).
pub async fn client_versions(
    db: &Db,
    since: Millis,
) -> Result<Vec<(Option<String>, i64)>, StoreError> {
    read_all(
        db,
        Stmt::new(
            "SELECT client_version, COUNT(*) AS n FROM machines \
             WHERE released_at IS NULL AND last_seen_at >= $1 \
             GROUP BY client_version ORDER BY n DESC, client_version",
        )
        .bind(since),
    )
    .await
}

/// Seats held now, per licence that holds any.
pub async fn seats_held(db: &Db) -> Result<Vec<(String, i64)>, StoreError> {
    read_all(
        db,
        Stmt::new(
            "SELECT license_id, COUNT(*) FROM machines WHERE released_at IS NULL \
             GROUP BY license_id",
        ),
    )
    .await
}
