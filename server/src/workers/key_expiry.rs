//! Warns an account's admins a week before one of its named API keys expires: once an hour,
//! one replica at a time, the keys newly inside the week are grouped by account and each
//! account's admins (unless they turned the warning off in Settings → Alerts) get one mail
//! listing them. A key is warned of once; the mail is composed when sent, so a key revoked
//! in between is left out.

use std::collections::BTreeMap;
use std::time::Duration;

use tidemark_domain::api_keys::WARN_BEFORE_MS;
use tidemark_domain::time::MINUTE_MS;
use tidemark_domain::{now_millis, Millis};
use tidemark_store::Writer;

use crate::workers::runner::{Lease, Pacing, Worker};

/// Keys looked at per pass at most (the next pass goes on).
const BATCH: i64 = 1_000;

pub struct KeyExpiry;

/// One pass as of `now`: how many warning mails were queued.
pub async fn warn_expiring_keys(db: &Writer, now: Millis) -> anyhow::Result<u64> {
    let due = tidemark_store::api_keys::keys_due_warning(db, now, WARN_BEFORE_MS, BATCH).await?;
    let mut by_account: BTreeMap<_, Vec<String>> = BTreeMap::new();
    for key in due {
        by_account
            .entry(key.account_id.clone())
            .or_default()
            .push(key.id);
    }
    let mut queued = 0;
    for (account_id, keys) in by_account {
        queued +=
            tidemark_store::api_keys::queue_expiry_warning(db, &account_id, &keys, now).await?;
    }
    Ok(queued)
}

#[async_trait::async_trait]
impl Worker for KeyExpiry {
    fn name(&self) -> &'static str {
        "key_expiry"
    }

    fn lease(&self) -> Lease {
        Lease::Named {
            name: "key_expiry",
            ttl_ms: 10 * MINUTE_MS,
        }
    }

    fn pacing(&self) -> Pacing {
        Pacing::every(Duration::from_secs(3600), Duration::from_secs(60))
    }

    async fn pass(&self, db: &Writer, _holder: &str) -> anyhow::Result<u64> {
        let queued = warn_expiring_keys(db, now_millis()).await?;
        if queued > 0 {
            tracing::info!(mails = queued, "warned admins of API keys about to expire");
        }
        Ok(queued)
    }
}
