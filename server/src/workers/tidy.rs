//! What the database no longer needs, forgotten once a minute by one replica at a time:
//! rate-limit rows past every window, delivered mail past its keeping time, expired
//! sessions, finished webhook deliveries, and verdict-signing keys whose every signature has
//! expired.

use std::time::Duration;

use tidemark_domain::audit::{Actor, AuditContext};
use tidemark_domain::now_millis;
use tidemark_domain::time::{DAY_MS, HOUR_MS, MINUTE_MS};
use tidemark_domain::Millis;
use tidemark_store::Writer;

use crate::workers::runner::{Lease, Pacing, Worker};

/// Rate rows are kept a little longer than the longest window or ban they can matter to.
const RATE_DATA_KEEP_MS: Millis = HOUR_MS;
/// Delivered mail is kept this long (for support questions), then forgotten.
const SENT_MAIL_KEEP_MS: Millis = 30 * DAY_MS;

pub struct Tidy;

#[async_trait::async_trait]
impl Worker for Tidy {
    fn name(&self) -> &'static str {
        "tidy"
    }

    fn lease(&self) -> Lease {
        Lease::Named {
            name: "tidy",
            ttl_ms: 5 * MINUTE_MS,
        }
    }

    fn pacing(&self) -> Pacing {
        Pacing::every(Duration::from_secs(60), Duration::ZERO)
    }

    async fn pass(&self, db: &Writer, _holder: &str) -> anyhow::Result<u64> {
        let now = now_millis();
        let mut forgotten =
            tidemark_store::rate::prune_rate_data(db, now - RATE_DATA_KEEP_MS).await?;
        forgotten += tidemark_store::outbox::prune_sent(db, now - SENT_MAIL_KEEP_MS).await?;
        forgotten += tidemark_store::sessions::prune_expired(db, now).await?;
        forgotten += tidemark_store::webhooks::prune_finished(
            db,
            now - tidemark_store::webhooks::FINISHED_KEEP_MS,
        )
        .await?;
        let audit = AuditContext {
            actor: Actor::System {
                name: "key-retirement".into(),
            },
            client_ip: None,
            at: now,
        };
        let kids = tidemark_store::signing_keys::delete_retired(db, now, &audit).await?;
        if !kids.is_empty() {
            tracing::info!(?kids, "retired verdict-signing keys");
        }
        Ok(forgotten + kids.len() as u64)
    }
}
