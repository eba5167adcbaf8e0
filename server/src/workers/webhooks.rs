//! The webhook sender of each replica: claims due deliveries from the outbox in the
//! database, composes and signs each body, POSTs it, and records what happened.
//!
//! Requests never reach a webhook URL themselves, so a slow receiver never slows a push. The
//! HTTP client follows no redirects, uses no proxy, gives up after the configured timeout, and
//! resolves names through a resolver that refuses loopback, private and link-local answers
//! unless the operator allows them (an IP literal is checked when the URL is parsed): the
//! address checked is the address connected to.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use tidemark_domain::webhook::{
    is_delivered, next_attempt_at, slack_message, PayloadFormat, WebhookSecret, WebhookUrl,
};
use tidemark_domain::{now_millis, to_rfc3339, Millis};
use tidemark_store::webhooks::{self, Attempt, DueDelivery};
use tidemark_store::Writer;
use tidemark_wire::{WebhookEvent, WebhookProject, WebhookScan};

use crate::net::guard::GuardedResolver;
use crate::state::AppState;
use crate::workers::runner::{Lease, Pacing, Worker};

/// How often a replica looks for due deliveries when nothing wakes it.
const POLL_INTERVAL: Duration = Duration::from_secs(2);
/// Deliveries one pass claims, and sends at once.
const BATCH: i64 = 16;
/// The longest error text kept in the log.
const MAX_ERROR_LEN: usize = 300;

/// The header that carries the signature.
pub const SIGNATURE_HEADER: &str = "Tidemark-Signature";

/// A claimed delivery is this replica's for the timeout and a margin: longer than any send.
fn lease_ms(timeout: Duration) -> Millis {
    i64::try_from(timeout.as_millis()).unwrap_or(30_000) * 2 + 30_000
}

/// The client every delivery goes through.
pub fn http_client(state: &AppState) -> anyhow::Result<reqwest::Client> {
    let timeout = Duration::from_secs(state.config.webhooks.timeout_seconds.into());
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(5)))
        .user_agent(concat!("Tidemark-Webhooks/", env!("CARGO_PKG_VERSION")))
        .dns_resolver(Arc::new(GuardedResolver {
            dns: state.dns.clone(),
            allow_private: state.config.webhooks.allow_private,
            lifted_by: "TIDEMARK_WEBHOOK_ALLOW_PRIVATE",
            exempt: Vec::new(),
        }))
        .build()
        .context("could not build the webhook HTTP client")
}

/// The body for `delivery`, in its endpoint's format.
pub fn compose(delivery: &DueDelivery, dashboard_url: &str) -> Vec<u8> {
    let event = event_body(delivery, dashboard_url);
    let value = match delivery.format {
        PayloadFormat::Tidemark => serde_json::to_value(&event).unwrap_or_default(),
        PayloadFormat::Slack => slack_message(&event),
    };
    serde_json::to_vec(&value).unwrap_or_default()
}

fn event_body(d: &DueDelivery, dashboard_url: &str) -> WebhookEvent {
    let scan = d.scan.as_ref().filter(|_| d.event.is_about_a_scan());
    WebhookEvent {
        id: d.event_id.clone(),
        event_type: d.event.as_str().to_owned(),
        created_at: to_rfc3339(d.created_at),
        account_id: d.account_id.to_string(),
        project: scan.map(|s| WebhookProject {
            id: s.project_id.to_string(),
            label: s.project_label.clone(),
        }),
        scan: scan.map(|s| WebhookScan {
            scan_id: s.scan_id.to_string(),
            score: s.score,
            score_delta: s.score_delta,
            passed: u64::try_from(s.passed).unwrap_or(0),
            failed: u64::try_from(s.failed).unwrap_or(0),
            severity_counts: s.severity_counts,
            scanned_at: to_rfc3339(s.scanned_at),
            gate: s.gate.clone(),
            branch: s.branch.clone(),
            commit: s.commit.clone(),
            pull_request: s.pull_request.clone(),
            pushed_by: s.pushed_by.clone(),
            drifted: s.drifted.clone(),
        }),
        dashboard_url: match scan {
            Some(s) => format!(
                "{dashboard_url}/projects/{}/scans/{}",
                s.project_id, s.scan_id
            ),
            None => format!("{dashboard_url}/settings"),
        },
    }
}

/// Sends due webhook deliveries: every replica claims them, each under a lease as long as
/// a send may take; one cut off mid-send is due again when its lease ends.
pub struct WebhookSender {
    state: AppState,
    client: reqwest::Client,
}

impl WebhookSender {
    pub fn new(state: &AppState) -> anyhow::Result<Self> {
        Ok(Self {
            client: http_client(state)?,
            state: state.clone(),
        })
    }
}

#[async_trait::async_trait]
impl Worker for WebhookSender {
    fn name(&self) -> &'static str {
        "webhooks"
    }

    fn lease(&self) -> Lease {
        Lease::PerItem
    }

    fn pacing(&self) -> Pacing {
        Pacing::draining(POLL_INTERVAL)
    }

    fn wakeup(&self) -> Option<Arc<tokio::sync::Notify>> {
        Some(self.state.webhook_wakeup.clone())
    }

    /// Until the next retry is due, when that is sooner than the next poll (another replica
    /// may queue meanwhile, so never longer).
    async fn idle_pause(&self, db: &tidemark_store::Db) -> Duration {
        match webhooks::next_due_at(db).await {
            Ok(Some(at)) => Duration::from_millis(u64::try_from(at - now_millis()).unwrap_or(0))
                .min(POLL_INTERVAL),
            _ => POLL_INTERVAL,
        }
    }

    async fn pass(&self, db: &Writer, _holder: &str) -> anyhow::Result<u64> {
        Ok(send_due(db, &self.state, &self.client).await? as u64)
    }
}

/// Claims and sends one batch; how many were claimed.
async fn send_due(
    db: &Writer,
    state: &AppState,
    client: &reqwest::Client,
) -> Result<usize, tidemark_store::StoreError> {
    let timeout = Duration::from_secs(state.config.webhooks.timeout_seconds.into());
    let due = webhooks::claim_due(db, now_millis(), lease_ms(timeout), BATCH).await?;
    let claimed = due.len();
    // Side by side: a slow receiver holds up only its own delivery.
    let mut sends = tokio::task::JoinSet::new();
    for delivery in due {
        let (state, client) = (state.clone(), client.clone());
        sends.spawn(async move {
            let attempt = send_one(&state, &client, &delivery).await;
            (delivery, attempt)
        });
    }
    // A send that panicked leaves its delivery leased: it is due again when the lease ends.
    while let Some(Ok((delivery, attempt))) = sends.join_next().await {
        state
            .metrics
            .count_webhook_delivery(match (&attempt.error, attempt.retry_at) {
                (None, _) => "delivered",
                (Some(_), Some(_)) => "retrying",
                (Some(_), None) => "gave_up",
            });
        webhooks::record_attempt(db, &delivery, &attempt).await?;
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
            error = %error, retry = attempt.retry_at.is_some(), "webhook not delivered"
        );
    }
    attempt
}

/// What a send that began at `at` (`started`) came to: the receiver's status or why there
/// was none, and when to try again (never after a success, nor once the retries' day is
/// over). Shared by the account webhooks' sender and the vendor's.
pub fn attempt_of(
    state: &AppState,
    result: Result<u16, String>,
    at: tidemark_domain::Millis,
    started: Instant,
    attempts: i64,
    window_start: tidemark_domain::Millis,
) -> Attempt {
    let latency_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
    let (status, error) = match result {
        Ok(status) if is_delivered(status) => (Some(status), None),
        Ok(status) if (300..400).contains(&status) => (
            Some(status),
            Some(format!(
                "the receiver answered {status}; redirects are not followed"
            )),
        ),
        Ok(status) => (
            Some(status),
            Some(format!("the receiver answered {status}")),
        ),
        Err(err) => (None, Some(err)),
    };
    let retry_at = error.as_ref().and_then(|_| {
        next_attempt_at(
            attempts,
            window_start,
            now_millis(),
            state.config.webhooks.retry_base_ms.into(),
        )
    });
    Attempt {
        at,
        status,
        latency_ms,
        error: error.map(|e| e.chars().take(MAX_ERROR_LEN).collect()),
        retry_at,
    }
}

/// POSTs the delivery; the receiver's status, or why there was none (never naming the URL,
/// which may hold a credential).
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
    let body = compose(d, &state.config.http.dashboard_url);
    let t = now_millis() / 1000;
    let response = client
        .post(url.as_str())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(SIGNATURE_HEADER, secret.sign(t, &body))
        .header("Tidemark-Event", d.event.as_str())
        .header("Tidemark-Event-Id", &d.event_id)
        .body(body)
        .send()
        .await
        .map_err(describe)?;
    Ok(response.status().as_u16())
}

fn describe(err: reqwest::Error) -> String {
    let timed_out = err.is_timeout();
    let err = err.without_url();
    if timed_out {
        return "the receiver did not answer in time".to_owned();
    }
    // The innermost cause says what went wrong (refused, resolved to a private address, …).
    let mut text = err.to_string();
    let mut source = std::error::Error::source(&err);
    while let Some(cause) = source {
        text = cause.to_string();
        source = cause.source();
    }
    text
}
