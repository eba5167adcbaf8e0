//! Seats: the machines a licence is activated on. An activation takes a seat (or finds the
//! one its machine holds) and issues its key in one account-locked transaction, so concurrent
//! activations never pass the licence's `max_machines`; releasing a seat revokes its keys in
//! the same transaction.

use tidemark_domain::audit::{Action, AuditContext};
use tidemark_domain::Millis;

use crate::audit::Change;
use crate::license_events::{raise, Raise};
use crate::licenses::NewApiKey;
use crate::stmt::Stmt;
use crate::tx::{read_all, WriteTx};
use crate::{AccountId, Db, StoreError, Writer};
use tidemark_domain::license_events::{event_machine, LicenseEvent};

/// An activation: the machine (by its key: `fp:<fingerprint>` or `name:<name>`) and the API
/// key to issue it.
pub struct NewActivation<'a> {
    pub license_id: &'a str,
    /// Used when the machine holds no seat yet.
    pub machine_id: &'a str,
    pub machine_key: &'a str,
    pub key: &'a NewApiKey,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActivationOutcome {
    /// The key is issued; `reused` when the machine already held a seat.
    Activated { machine_id: String, reused: bool },
    /// Every seat is taken by another machine: nothing was written.
    SeatLimit { limit: u64 },
}

/// Takes (or finds) the machine's seat and issues its key.
pub async fn activate(db: &Writer, a: &NewActivation<'_>) -> Result<ActivationOutcome, StoreError> {
    let account_id: &AccountId = &a.key.account_id;
    let now = a.key.now;
    // The account's lock: activations of one licence queue here (PostgreSQL); SQLite has one
    // writer.
    let mut tx = WriteTx::begin_account(db, account_id).await?;
    let held: Option<(String,)> = tx
        .fetch_optional(
            Stmt::new(
                "SELECT id FROM machines WHERE license_id = $1 AND machine_key = $2 \
                 AND released_at IS NULL",
            )
            .bind(a.license_id)
            .bind(a.machine_key),
        )
        .await?;
    let (machine_id, reused) = match held {
        Some((id,)) => {
            tx.execute(
                Stmt::new("UPDATE machines SET last_seen_at = $1, name = $2 WHERE id = $3")
                    .bind(now)
                    .bind(&a.key.machine)
                    .bind(id.clone()),
            )
            .await?;
            (id, true)
        }
        None => {
            let (limit,): (Option<i64>,) = tx
                .fetch_one(
                    Stmt::new("SELECT max_machines FROM licenses WHERE id = $1").bind(a.license_id),
                )
                .await?;
            if let Some(limit) = limit {
                let (live,): (i64,) = tx
                    .fetch_one(
                        Stmt::new(
                            "SELECT COUNT(*) FROM machines WHERE license_id = $1 \
                             AND released_at IS NULL",
                        )
                        .bind(a.license_id),
                    )
                    .await?;
                if live >= limit {
                    let limit = limit.max(0) as u64;
                    // The refusal writes only its event (once an hour per licence).
                    let mut refused = Raise::new(LicenseEvent::SeatLimitReached, now);
                    refused.details.machine =
                        Some(event_machine(None, &a.key.machine, a.machine_key));
                    refused.details.seat_limit = Some(limit);
                    raise(&mut tx, a.license_id, refused).await?;
                    tx.commit().await?;
                    return Ok(ActivationOutcome::SeatLimit { limit });
                }
            }
            tx.execute(
                Stmt::new(
                    "INSERT INTO machines (id, license_id, account_id, machine_key, name, \
                     activated_at, last_seen_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                )
                .bind(a.machine_id)
                .bind(a.license_id)
                .bind(account_id)
                .bind(a.machine_key)
                .bind(&a.key.machine)
                .bind(now)
                .bind(now),
            )
            .await?;
            let mut activated = Raise::new(LicenseEvent::MachineActivated, now);
            activated.details.machine = Some(event_machine(
                Some(a.machine_id),
                &a.key.machine,
                a.machine_key,
            ));
            raise(&mut tx, a.license_id, activated).await?;
            (a.machine_id.to_owned(), false)
        }
    };
    tx.execute(
        Stmt::new(
            "INSERT INTO api_keys (id, account_id, key_hash, prefix, machine, created_at, \
             machine_id) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&a.key.id)
        .bind(account_id)
        .bind(a.key.hash.as_str())
        .bind(&a.key.prefix)
        .bind(&a.key.machine)
        .bind(now)
        .bind(machine_id.clone()),
    )
    .await?;
    tx.commit().await?;
    Ok(ActivationOutcome::Activated { machine_id, reused })
}

/// Notes that the machine was seen at `at` (a validation, the demo's history); never moves
/// its last sighting back.
pub async fn mark_seen(db: &Writer, machine_id: &str, at: Millis) -> Result<(), StoreError> {
    let mut tx = WriteTx::begin(db).await?;
    tx.execute(
        Stmt::new(
            "UPDATE machines SET last_seen_at = $1 WHERE id = $2 AND released_at IS NULL \
             AND last_seen_at < $3",
        )
        .bind(at)
        .bind(machine_id)
        .bind(at),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// What [`hold_offline`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OfflineSeat {
    /// The seat is held until the file expires (a machine that held one keeps it).
    Held { machine_id: String },
    /// Every seat is taken by another machine: nothing was written.
    SeatLimit { limit: u64 },
}

/// An offline file to hold a seat for: its machine and when it expires.
pub struct NewOfflineSeat<'a> {
    pub license_id: &'a str,
    pub account_id: &'a AccountId,
    /// Used when the machine holds no seat yet.
    pub machine_id: &'a str,
    pub machine_key: &'a str,
    pub name: &'a str,
    pub until: Millis,
    pub now: Millis,
}

/// Takes (or keeps) a seat for an offline licence file until it expires: it cannot be
/// revoked, so neither can its seat.
pub async fn hold_offline(db: &Writer, s: &NewOfflineSeat<'_>) -> Result<OfflineSeat, StoreError> {
    let mut tx = WriteTx::begin_account(db, s.account_id).await?;
    let held: Option<(String, Option<i64>)> = tx
        .fetch_optional(
            Stmt::new(
                "SELECT id, offline_until FROM machines WHERE license_id = $1 \
                 AND machine_key = $2 AND released_at IS NULL",
            )
            .bind(s.license_id)
            .bind(s.machine_key),
        )
        .await?;
    if let Some((id, until)) = held {
        let until = until.unwrap_or(0).max(s.until);
        tx.execute(
            Stmt::new("UPDATE machines SET offline_until = $1, last_seen_at = $2 WHERE id = $3")
                .bind(until)
                .bind(s.now)
                .bind(id.clone()),
        )
        .await?;
        tx.commit().await?;
        return Ok(OfflineSeat::Held { machine_id: id });
    }
    let (limit,): (Option<i64>,) = tx
        .fetch_one(Stmt::new("SELECT max_machines FROM licenses WHERE id = $1").bind(s.license_id))
        .await?;
    if let Some(limit) = limit {
        let (live,): (i64,) = tx
            .fetch_one(
                Stmt::new(
                    "SELECT COUNT(*) FROM machines WHERE license_id = $1 AND released_at IS NULL",
                )
                .bind(s.license_id),
            )
            .await?;
        if live >= limit {
            return Ok(OfflineSeat::SeatLimit {
                limit: limit.max(0) as u64,
            });
        }
    }
    tx.execute(
        Stmt::new(
            "INSERT INTO machines (id, license_id, account_id, machine_key, name, activated_at, \
             last_seen_at, offline_until) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(s.machine_id)
        .bind(s.license_id)
        .bind(s.account_id)
        .bind(s.machine_key)
        .bind(s.name)
        .bind(s.now)
        .bind(s.now)
        .bind(s.until),
    )
    .await?;
    let mut activated = Raise::new(LicenseEvent::MachineActivated, s.now);
    activated.details.machine = Some(event_machine(Some(s.machine_id), s.name, s.machine_key));
    raise(&mut tx, s.license_id, activated).await?;
    tx.commit().await?;
    Ok(OfflineSeat::Held {
        machine_id: s.machine_id.to_owned(),
    })
}

/// Notes each (licence, machine key) seen at its time (validations, flushed a minute at a
/// time): a seat's last sighting only moves forward; a machine holding no seat is ignored.
pub async fn mark_seen_by_key(
    db: &Writer,
    sightings: &[(String, String, Millis)],
) -> Result<(), StoreError> {
    let mut tx = WriteTx::begin(db).await?;
    for (license_id, machine_key, at) in sightings {
        tx.execute(
            Stmt::new(
                "UPDATE machines SET last_seen_at = $1 WHERE license_id = $2 \
                 AND machine_key = $3 AND released_at IS NULL AND last_seen_at < $4",
            )
            .bind(*at)
            .bind(license_id)
            .bind(machine_key)
            .bind(*at),
        )
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// A seat as the vendor and the customer's admin see it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct MachineRow {
    pub id: String,
    pub name: String,
    /// `fp:<fingerprint>` or `name:<name>`.
    pub machine_key: String,
    pub activated_at: Millis,
    /// Its latest activation, or use of one of its keys (a push), whichever is later.
    pub last_seen_at: Millis,
    pub released_at: Option<Millis>,
    /// Its API keys still live.
    pub live_keys: i64,
    /// An offline licence file holds the seat until then.
    pub offline_until: Option<Millis>,
    /// The client it last validated with ("tidemark-cli/1.4.2"), when it said.
    pub client_version: Option<String>,
}

/// The licence's machines: seats held first (newest activation first), then released ones.
pub async fn list(db: &Db, license_id: &str) -> Result<Vec<MachineRow>, StoreError> {
    read_all(
        db,
        Stmt::new(
            "SELECT m.id, m.name, m.machine_key, m.activated_at, \
             COALESCE((SELECT MAX(k.last_used_at) FROM api_keys k WHERE k.machine_id = m.id \
                       AND k.last_used_at > m.last_seen_at), m.last_seen_at) AS last_seen_at, \
             m.released_at, m.offline_until, m.client_version, \
             (SELECT COUNT(*) FROM api_keys k WHERE k.machine_id = m.id \
              AND k.revoked_at IS NULL) AS live_keys \
             FROM machines m WHERE m.license_id = $1 \
             ORDER BY (m.released_at IS NULL) DESC, m.activated_at DESC, m.id",
        )
        .bind(license_id),
    )
    .await
}

/// What [`release`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Released {
    Released,
    /// The licence holds no such live seat.
    NotFound,
    /// An offline licence file holds it until then (it cannot be revoked).
    HeldOffline {
        until: Millis,
    },
}

/// Frees the seat and revokes its keys at once (audited), unless an unexpired offline file
/// holds it.
pub async fn release(
    db: &Writer,
    license_id: &str,
    machine_id: &str,
    audit: &AuditContext,
) -> Result<Released, StoreError> {
    let mut tx = WriteTx::begin(db).await?;
    let found: Option<(AccountId, String, String, Option<i64>)> = tx
        .fetch_optional(
            Stmt::new(
                "SELECT account_id, name, machine_key, offline_until FROM machines WHERE id = $1 \
                 AND license_id = $2 AND released_at IS NULL",
            )
            .bind(machine_id)
            .bind(license_id),
        )
        .await?;
    let Some((account_id, name, machine_key, offline_until)) = found else {
        return Ok(Released::NotFound);
    };
    if let Some(until) = offline_until.filter(|until| *until > audit.at) {
        return Ok(Released::HeldOffline { until });
    }
    tx.execute(
        Stmt::new("UPDATE machines SET released_at = $1 WHERE id = $2")
            .bind(audit.at)
            .bind(machine_id),
    )
    .await?;
    let revoked = tx
        .execute(
            Stmt::new(
                "UPDATE api_keys SET revoked_at = $1 WHERE machine_id = $2 \
                 AND revoked_at IS NULL",
            )
            .bind(audit.at)
            .bind(machine_id),
        )
        .await?;
    let change = Change {
        account_id: Some(&account_id),
        action: Action::MachineReleased,
        target: machine_id.to_owned(),
        before: Some(format!("{name} holds a seat of {license_id}")),
        after: Some(format!("released; {revoked} API keys revoked")),
    };
    tx.audit(audit, change).await?;
    let mut released = Raise::new(LicenseEvent::MachineReleased, audit.at);
    released.details.machine = Some(event_machine(Some(machine_id), &name, &machine_key));
    raise(&mut tx, license_id, released).await?;
    tx.commit().await?;
    Ok(Released::Released)
}

/// Frees, as of `audit.at`, up to `limit` seats: those whose offline file has expired, and
/// those unseen (no activation, validation or use of their keys) for their licence's
/// `seat_release_after_days`, else `default_days` (0: never by time). Each is audited as
/// `audit`'s; returns the machines freed.
pub async fn release_unseen(
    db: &Writer,
    default_days: u32,
    limit: i64,
    audit: &AuditContext,
) -> Result<Vec<String>, StoreError> {
    let now = audit.at;
    let days = i64::from(default_days);
    let unseen: Vec<(String, String)> = read_all(
        db,
        Stmt::new(
            "SELECT m.id, m.license_id FROM machines m JOIN licenses l ON l.id = m.license_id \
             WHERE m.released_at IS NULL AND ( \
               (m.offline_until IS NOT NULL AND m.offline_until <= $1) \
               OR (m.offline_until IS NULL AND COALESCE(l.seat_release_after_days, $2) > 0 \
                   AND m.last_seen_at < $3 - COALESCE(l.seat_release_after_days, $4) * 86400000 \
                   AND NOT EXISTS (SELECT 1 FROM api_keys k WHERE k.machine_id = m.id \
                     AND k.last_used_at >= $5 - COALESCE(l.seat_release_after_days, $6) * 86400000))) \
             ORDER BY m.last_seen_at LIMIT $7",
        )
        .bind(now)
        .bind(days)
        .bind(now)
        .bind(days)
        .bind(now)
        .bind(days)
        .bind(limit),
    )
    .await?;
    let mut freed = Vec::new();
    for (machine_id, license_id) in unseen {
        if release(db, &license_id, &machine_id, audit).await? == Released::Released {
            freed.push(machine_id);
        }
    }
    Ok(freed)
}
