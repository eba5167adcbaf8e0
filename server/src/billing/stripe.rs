//! `POST /billing/stripe/events`: Stripe's webhook events, verified as Stripe documents
//! (`Stripe-Signature`, five minutes' tolerance, any `v1` under any current secret, compared
//! in constant time) on the raw body, then applied once by event id
//! (`tidemark_services::billing`). Stripe retries anything but a 2xx for three days, so a
//! failure worth retrying is answered as one.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use serde::{Deserialize, Serialize};
use tidemark_domain::now_millis;
use tidemark_domain::stripe::{parse_event, verify};
use tidemark_domain::time::DAY_MS;
use tidemark_services::billing::{apply_event, Applied, StripeSettings};
use tidemark_services::ports::{CheckoutItem, CheckoutItems};
use tidemark_services::ServiceError;

use crate::config::StripeConfig;
use crate::http::body::read_body;
use crate::http::error::ApiError;
use crate::state::AppState;

/// Stripe's events are a few KiB; a checkout with many custom fields stays far below this.
const BODY_LIMIT: usize = 512 * 1024;

/// What Tidemark answers Stripe (shown in Stripe's dashboard beside the delivery).
#[derive(Debug, Serialize, Deserialize)]
pub struct Received {
    pub received: bool,
    /// `true` when the event was applied before (a redelivery): nothing changed now.
    pub replayed: bool,
    pub outcome: String,
}

/// Reads a checkout session's line items from Stripe's API.
struct StripeApi<'a> {
    config: &'a StripeConfig,
    client: reqwest::Client,
}

#[derive(Deserialize)]
struct LineItems {
    data: Vec<LineItem>,
}

#[derive(Deserialize)]
struct LineItem {
    price: Option<Price>,
    quantity: Option<u64>,
}

#[derive(Deserialize)]
struct Price {
    id: String,
}

#[async_trait::async_trait]
impl CheckoutItems for StripeApi<'_> {
    async fn first_item(&self, session_id: &str) -> Result<CheckoutItem, String> {
        if !session_id.starts_with("cs_")
            || !session_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            return Err(format!("{session_id:?} is no checkout session id"));
        }
        let url = format!(
            "{}/v1/checkout/sessions/{session_id}/line_items?limit=1",
            self.config.api_base.trim_end_matches('/')
        );
        let res = self
            .client
            .get(url)
            .bearer_auth(&self.config.secrets.api_key)
            .send()
            .await
            .map_err(|e| format!("Stripe's API did not answer: {}", e.without_url()))?;
        if !res.status().is_success() {
            return Err(format!("Stripe's API answered {}", res.status().as_u16()));
        }
        let items: LineItems = res
            .json()
            .await
            .map_err(|e| format!("Stripe's API answered no line items: {e}"))?;
        let first = items
            .data
            .into_iter()
            .next()
            .ok_or("the checkout has no line items")?;
        Ok(CheckoutItem {
            price_id: first
                .price
                .ok_or("the checkout's line item has no price")?
                .id,
            quantity: first.quantity,
        })
    }
}

pub async fn receive_event(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<(StatusCode, Json<Received>), ApiError> {
    let Some(config) = state.config.stripe.as_ref() else {
        return Err(ApiError::NoSuchEndpoint);
    };
    let body = read_body(body, BODY_LIMIT).await?;
    let header = headers
        .get("stripe-signature")
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| ApiError::InvalidSignature("No Stripe-Signature header.".into()))?;
    verify(
        header,
        &config.secrets.webhook_secrets,
        &body,
        now_millis() / 1000,
    )
    .map_err(|e| {
        ApiError::InvalidSignature(format!(
            "Stripe-Signature does not verify: {e}. Check TIDEMARK_STRIPE_WEBHOOK_SECRET against \
             the endpoint's signing secret in Stripe."
        ))
    })?;
    let event = parse_event(&body).map_err(ApiError::InvalidRequest)?;
    let settings = StripeSettings {
        prices: config.prices.clone(),
        grace_ms: i64::from(config.grace_days) * DAY_MS,
    };
    let api = StripeApi {
        config,
        client: reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(10))
            .build()
            .map_err(ApiError::internal)?,
    };
    let applied = apply_event(
        &state.db,
        &state.license_keys,
        &api,
        &settings,
        &event,
        now_millis(),
    )
    .await
    .map_err(|err| match err {
        ServiceError::Invalid(why) => ApiError::InvalidRequest(why),
        other => other.into(),
    })?;
    let answer = |replayed, outcome: String| Received {
        received: true,
        replayed,
        outcome,
    };
    Ok(match applied {
        Applied::Done(outcome) => {
            tracing::info!(event_id = %event.id, kind = %event.event_type, %outcome, "stripe event applied");
            (StatusCode::OK, Json(answer(false, outcome)))
        }
        Applied::Replayed(outcome) => (StatusCode::OK, Json(answer(true, outcome))),
        Applied::NotYet(subscription) => {
            return Err(ApiError::Conflict(format!(
                "Subscription {subscription} has no licence yet: its checkout.session.completed \
                 has not arrived. Stripe retries this event."
            )))
        }
    })
}
