//! Stripe's events as applied: which were (each once, by its id) and which licence each
//! subscription keeps.

use tidemark_domain::Millis;

use crate::stmt::Stmt;
use crate::tx::{read_all, WriteTx};
use crate::{Db, StoreError, Writer};

/// What the event did, if it was applied before.
pub async fn applied(db: &Db, event_id: &str) -> Result<Option<String>, StoreError> {
    let rows: Vec<(String,)> = read_all(
        db,
        Stmt::new("SELECT outcome FROM stripe_events WHERE id = $1").bind(event_id),
    )
    .await?;
    Ok(rows.into_iter().next().map(|(o,)| o))
}

/// Records the event as applied; `false` when another delivery of it got there first.
pub async fn record(
    db: &Writer,
    event_id: &str,
    event_type: &str,
    outcome: &str,
    now: Millis,
) -> Result<bool, StoreError> {
    let mut tx = WriteTx::begin(db).await?;
    let n = tx
        .execute(
            Stmt::new(
                "INSERT INTO stripe_events (id, event_type, received_at, outcome) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING",
            )
            .bind(event_id)
            .bind(event_type)
            .bind(now)
            .bind(outcome),
        )
        .await?;
    tx.commit().await?;
    Ok(n == 1)
}

/// Ties the subscription to its licence (the first tie stands).
pub async fn link(
    db: &Writer,
    subscription_id: &str,
    license_id: &str,
    customer_id: Option<&str>,
    now: Millis,
) -> Result<(), StoreError> {
    let mut tx = WriteTx::begin(db).await?;
    tx.execute(
        Stmt::new(
            "INSERT INTO stripe_subscriptions (subscription_id, license_id, customer_id, \
             created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (subscription_id) DO NOTHING",
        )
        .bind(subscription_id)
        .bind(license_id)
        .bind(customer_id.map(str::to_owned))
        .bind(now),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// The licence the subscription keeps, if its checkout has been seen.
pub async fn license_of(db: &Db, subscription_id: &str) -> Result<Option<String>, StoreError> {
    let rows: Vec<(String,)> = read_all(
        db,
        Stmt::new("SELECT license_id FROM stripe_subscriptions WHERE subscription_id = $1")
            .bind(subscription_id),
    )
    .await?;
    Ok(rows.into_iter().next().map(|(l,)| l))
}
