//! Licence events to the vendor: the sender of each replica (claims the first unfinished
//! delivery of each licence and endpoint, signs and POSTs it, records what happened), and the
//! calendar (once an hour, one replica: licences expiring in 30, 7 or 1 days, or just
//! expired, raise their event once).
//!
//! A send cut off by a crash (`kill -9`) leaves its delivery leased; when the lease ends it
//! is sent again with the same `Tidemark-Event-Id`, which is how a receiver hears each event
//! once. A delivered event is never sent again.

use std::time::{Duration, Instant};

use tidemark_domain::license_events::{expiring_threshold, LicenseEvent, EXPIRED_NEWS_MS};
use tidemark_domain::time::{DAY_MS, MINUTE_MS};
use tidemark_domain::webhook::{WebhookSecret, WebhookUrl};
use tidemark_domain::{now_millis, Millis};
use tidemark_store::license_events::{self as store, Attempt, DueDelivery, Raise};
use tidemark_store::Writer;

use crate::state::AppState;
use crate::workers::runner::{Lease, Pacing, Worker};
use crate::workers::webhooks::{attempt_of, http_client, SIGNATURE_HEADER};

const POLL_INTERVAL: Duration = Duration::from_secs(2);
const BATCH: i64 = 16;

/// A claimed delivery is this replica's for twice the timeout and a margin.
fn lease_ms(timeout: Duration) -> Millis {
    i64::try_from(timeout.as_millis()).unwrap_or(30_000) * 2 + 5_000
}

pub struct VendorSender {
    state: AppState,
    client: reqwest::Client,
}

impl VendorSender {
    pub fn new(state: &AppState) -> anyhow::Result<Self> {
        Ok(Self {
            client: http_client(state)?,
            state: state.clone(),
        })
    }
}

#[async_trait::async_trait]
impl Worker for VendorSender {
    fn name(&self) -> &'static str {
        "vendor_webhooks"
    }

    fn lease(&self) -> Lease {
        Lease::PerItem
    }

    fn pacing(&self) -> Pacing {
        Pacing::draining(POLL_INTERVAL)
    }

    async fn idle_pause(&self, db: &tidemark_store::Db) -> Duration {
        match store::next_due_at(db).await {
            Ok(Some(at)) => Duration::from_millis(u64::try_from(at - now_millis()).unwrap_or(0))
                .min(POLL_INTERVAL),
            _ => POLL_INTERVAL,
        }
    }

    async fn pass(&self, db: &Writer, _holder: &str) -> anyhow::Result<u64> {
        Ok(send_due(db, &self.state, &self.client).await? as u64)
    }
}

/// Claims and sends one batch (different licences side by side); how many were claimed.
pub async fn send_due(
    db: &Writer,
    state: &AppState,
    client: &reqwest::Client,
) -> Result<usize, tidemark_store::StoreError> {
    let timeout = Duration::from_secs(state.config.webhooks.timeout_seconds.into());
    let due = store::claim_due(db, now_millis(), lease_ms(timeout), BATCH).await?;
    let claimed = due.len();
    let mut sends = tokio::task::JoinSet::new();
    for delivery in due {
        let (state, client) = (state.clone(), client.clone());
        sends.spawn(async move {
            let attempt = send_one(&state, &client, &delivery).await;
            (delivery, attempt)
        });
    }
    while let Some(Ok((delivery, attempt))) = sends.join_next().await {
        store::record_attempt(db, &delivery, &attempt).await?;
    }
    Ok(claimed)
}

async fn send_one(state: &AppState, client: &reqwest::Client, d: &DueDelivery) -> Attempt {
    let started = Instant::now();
    let at = now_millis();
    let result = post(state, client, d).await;
    let attempt = attempt_of(state, result, at, started, d.attempts, d.window_start);
    if let Some(error) = &attempt.error {
        tracing::info!(
            event_id = %d.event_id, webhook_id = %d.webhook_id, attempt = d.attempts,
            error = %error, retry = attempt.retry_at.is_some(), "vendor webhook not delivered"
        );
    }
    attempt
}

async fn post(state: &AppState, client: &reqwest::Client, d: &DueDelivery) -> Result<u16, String> {
    let open = |sealed: &str| {
        let opened = state.webhook_secrets.open(sealed).map_err(|e| {
            format!("the endpoint's stored URL or secret could not be decrypted: {e}")
        })?;
        String::from_utf8(opened)
            .map_err(|_| "the endpoint's stored URL or secret is not text".to_owned())
    };
    let url = WebhookUrl::parse(&open(&d.url_sealed)?, state.config.webhooks.allow_private)
        .map_err(|e| e.to_string())?;
    let secret = WebhookSecret::from_stored(open(&d.secret_sealed)?);
    let body = d.body.as_bytes().to_vec();
    let t = now_millis() / 1000;
    let response = client
        .post(url.as_str())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(SIGNATURE_HEADER, secret.sign(t, &body))
        .header("Tidemark-Event", &d.event)
        .header("Tidemark-Event-Id", &d.event_id)
        .body(body)
        .send()
        .await
        .map_err(|e| {
            if e.is_timeout() {
                "the receiver did not answer in time".to_owned()
            } else {
                e.without_url().to_string()
            }
        })?;
    Ok(response.status().as_u16())
}

/// Raises, as of `now`, each licence's `license.expiring` (the nearest of 30, 7 and 1 days
/// reached) and `license.expired` (within a week of its expiry), each once per expiry; also
/// forgets finished deliveries after 30 days. Returns the events raised.
pub async fn raise_calendar_events(db: &Writer, now: Millis) -> anyhow::Result<u64> {
    let mut raised = 0;
    for (license_id, expires_at) in
        store::expiring_between(db, now - EXPIRED_NEWS_MS, now + 30 * DAY_MS).await?
    {
        let mut event = if expires_at <= now {
            Raise::new(LicenseEvent::Expired, now)
        } else {
            Raise::new(LicenseEvent::Expiring, now)
        };
        if event.event == LicenseEvent::Expiring {
            event.details.days_left = expiring_threshold(expires_at, now);
        }
        if store::raise_alone(db, &license_id, event).await? {
            raised += 1;
        }
    }
    store::prune_finished(db, now - store::FINISHED_KEEP_MS).await?;
    Ok(raised)
}

/// The hourly calendar pass, on one replica at a time.
pub struct Calendar;

#[async_trait::async_trait]
impl Worker for Calendar {
    fn name(&self) -> &'static str {
        "license_calendar"
    }

    fn lease(&self) -> Lease {
        Lease::Named {
            name: "license_calendar",
            ttl_ms: 10 * MINUTE_MS,
        }
    }

    fn pacing(&self) -> Pacing {
        Pacing::every(Duration::from_secs(3600), Duration::from_secs(60))
    }

    async fn pass(&self, db: &Writer, _holder: &str) -> anyhow::Result<u64> {
        raise_calendar_events(db, now_millis()).await
    }
}
