//! Frees the seats of machines gone quiet: a machine with no activation and no push with its
//! keys for `TIDEMARK_SEAT_RELEASE_AFTER_DAYS` (default 30) gives its seat back and its keys
//! are revoked, once an hour by one replica at a time. Also forgets the admin API's
//! idempotency keys after a day.

use std::time::Duration;

use tidemark_domain::audit::{Actor, AuditContext};
use tidemark_domain::time::{DAY_MS, MINUTE_MS};
use tidemark_domain::{now_millis, Millis};
use tidemark_store::Writer;

use crate::workers::runner::{Lease, Pacing, Worker};

/// How long each licence's daily use is kept (the console shows 90 days; a year and a month
/// lets a renewal be compared with the last).
const ACTIVITY_KEPT_DAYS: i64 = 400;

/// Seats freed per pass at most (the next pass goes on).
const BATCH: i64 = 500;

/// Writes the machines this replica saw validating since the last pass as their seats'
/// "last seen", and adds the licences' use it counted (validations, pushes, clients), once a
/// minute (every replica its own).
pub struct Sightings {
    pub validator: std::sync::Arc<tidemark_services::licensing::Validator>,
}

#[async_trait::async_trait]
impl Worker for Sightings {
    fn name(&self) -> &'static str {
        "seat_sightings"
    }

    fn lease(&self) -> Lease {
        Lease::PerItem
    }

    fn pacing(&self) -> Pacing {
        Pacing::every(Duration::from_secs(60), Duration::from_secs(60))
    }

    async fn pass(&self, db: &Writer, _holder: &str) -> anyhow::Result<u64> {
        flush_sightings(db, &self.validator).await
    }
}

/// Writes the sightings kept so far; how many.
pub async fn flush_sightings(
    db: &Writer,
    validator: &tidemark_services::licensing::Validator,
) -> anyhow::Result<u64> {
    let seen = validator.take_sightings();
    if !seen.is_empty() {
        tidemark_store::machines::mark_seen_by_key(db, &seen).await?;
        tidemark_store::activity::note_machine_days(db, &seen).await?;
    }
    let counted = validator.activity.take();
    if !counted.is_empty() {
        if let Err(err) = tidemark_store::activity::add(db, &counted).await {
            // Kept for the next pass: a database away for a minute loses no count.
            validator.activity.restore(counted);
            return Err(err.into());
        }
    }
    Ok(seen.len() as u64)
}

pub struct Seats {
    /// For licences without a term of their own (`seat_release_after_days`); 0: never.
    pub release_after_days: u32,
}

/// One pass as of `now`: the seats unseen for `release_after_days` are freed. Returns the
/// machines freed (and the idempotency keys forgotten are not counted).
pub async fn free_unseen_seats(
    db: &Writer,
    release_after_days: u32,
    now: Millis,
) -> anyhow::Result<Vec<String>> {
    tidemark_store::licenses::prune_idempotency_keys(db, now - DAY_MS).await?;
    tidemark_store::activity::prune(db, now - ACTIVITY_KEPT_DAYS * DAY_MS).await?;
    let audit = AuditContext {
        actor: Actor::System {
            name: "seat-release".into(),
        },
        client_ip: None,
        at: now,
    };
    Ok(tidemark_store::machines::release_unseen(db, release_after_days, BATCH, &audit).await?)
}

#[async_trait::async_trait]
impl Worker for Seats {
    fn name(&self) -> &'static str {
        "seats"
    }

    fn lease(&self) -> Lease {
        Lease::Named {
            name: "seats",
            ttl_ms: 10 * MINUTE_MS,
        }
    }

    fn pacing(&self) -> Pacing {
        Pacing::every(Duration::from_secs(3600), Duration::from_secs(120))
    }

    async fn pass(&self, db: &Writer, _holder: &str) -> anyhow::Result<u64> {
        let freed = free_unseen_seats(db, self.release_after_days, now_millis()).await?;
        if !freed.is_empty() {
            tracing::info!(
                count = freed.len(),
                "freed the seats of machines gone quiet"
            );
        }
        Ok(freed.len() as u64)
    }
}
