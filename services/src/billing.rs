//! Licences made and kept by the checkout: Stripe's events applied, each once. A paid
//! checkout makes a licence of the tier its price buys, with a seat per unit, and mails the
//! key as resend does; a paid invoice runs it to the period's end plus a grace; a changed
//! subscription changes tier and seats; a cancelled one lets it expire at the period's end.

use tidemark_domain::audit::{Actor, AuditContext};
use tidemark_domain::license::LicenseEdit;
use tidemark_domain::stripe::{Action, Event, PriceMap};
use tidemark_domain::text::Email;
use tidemark_domain::Millis;
use tidemark_store::licenses::IdempotencyClaim;
use tidemark_store::stripe;
use tidemark_store::Db;

use crate::crypto::SecretBox;
use crate::licensing::{self, Creation, LicenseRequest};
use crate::ports::CheckoutItems;
use crate::ServiceError;

/// How Stripe's events become licences.
#[derive(Debug, Clone)]
pub struct StripeSettings {
    pub prices: PriceMap,
    /// Added to a paid period's end, so a payment a little late never stops the scanner.
    pub grace_ms: Millis,
}

/// What applying an event came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    /// Applied now: what it did.
    Done(String),
    /// Applied before (a redelivery): what it did then.
    Replayed(String),
    /// It is about a subscription whose checkout has not arrived yet: Stripe should retry.
    NotYet(String),
}

/// The idempotency claims of checkouts belong to this pseudo-token.
const CLAIM_OWNER: &str = "stripe";

fn audit_at(now: Millis) -> AuditContext {
    AuditContext {
        actor: Actor::System {
            name: "stripe".into(),
        },
        client_ip: None,
        at: now,
    }
}

/// What an arm of [`apply_event`] came to: an outcome to record, or an answer now.
enum Step {
    Record(String),
    Answer(Applied),
}

/// Applies `event` once (by its id).
pub async fn apply_event(
    db: &Db,
    keys: &SecretBox,
    items: &dyn CheckoutItems,
    settings: &StripeSettings,
    event: &Event,
    now: Millis,
) -> Result<Applied, ServiceError> {
    if let Some(outcome) = stripe::applied(db, &event.id).await? {
        return Ok(Applied::Replayed(outcome));
    }
    let audit = audit_at(now);
    let step = match &event.action {
        Action::Ignored => Step::Record(format!("{} is not used", event.event_type)),
        Action::CheckoutCompleted { .. } => {
            checkout_completed(db, keys, items, settings, &event.action, &audit).await?
        }
        Action::InvoicePaid {
            subscription_id,
            period_end,
        } => invoice_paid(db, subscription_id, *period_end + settings.grace_ms, &audit).await?,
        Action::SubscriptionUpdated {
            subscription_id,
            price_id,
            quantity,
        } => {
            let tier = price_id.as_deref().and_then(|p| settings.prices.tier_of(p));
            let edit = LicenseEdit {
                tier,
                max_machines: quantity.filter(|q| *q > 0).map(Some),
                ..LicenseEdit::default()
            };
            let unmapped = match (price_id, tier) {
                (Some(p), None) => format!("; price {p} maps to no tier, tier kept"),
                _ => String::new(),
            };
            let said = format!("tier and seats from the subscription{unmapped}");
            edit_subscription(db, subscription_id, edit, said, &audit).await?
        }
        Action::SubscriptionDeleted {
            subscription_id,
            period_end,
        } => {
            let edit = LicenseEdit {
                expires_at: Some(*period_end),
                ..LicenseEdit::default()
            };
            let said = format!(
                "expires at the period's end, {}",
                tidemark_domain::to_rfc3339(*period_end)
            );
            edit_subscription(db, subscription_id, edit, said, &audit).await?
        }
    };
    let outcome = match step {
        Step::Answer(answer) => return Ok(answer),
        Step::Record(outcome) => outcome,
    };
    let (id, kind, said) = (event.id.clone(), event.event_type.clone(), outcome.clone());
    let first = db
        .detached(move |db| async move { stripe::record(&db, &id, &kind, &said, now).await })
        .await?;
    Ok(if first {
        Applied::Done(outcome)
    } else {
        Applied::Replayed(outcome)
    })
}

/// A paid checkout: one licence (the session id is its idempotency key), tied to the
/// subscription and mailed.
async fn checkout_completed(
    db: &Db,
    keys: &SecretBox,
    items: &dyn CheckoutItems,
    settings: &StripeSettings,
    action: &Action,
    audit: &AuditContext,
) -> Result<Step, ServiceError> {
    let Action::CheckoutCompleted {
        session_id,
        subscription_id,
        customer_id,
        email,
    } = action
    else {
        return Err(ServiceError::Internal(anyhow::anyhow!("not a checkout")));
    };
    let anchor = subscription_id.as_deref().unwrap_or(session_id);
    if let Some(license_id) = stripe::license_of(db, anchor).await? {
        return Ok(Step::Record(format!(
            "{anchor} already has licence {license_id}"
        )));
    }
    let email = email
        .as_deref()
        .ok_or_else(|| ServiceError::Invalid("the checkout has no customer e-mail address".into()))
        .and_then(|e| {
            Email::parse(e).map_err(|e| {
                ServiceError::Invalid(format!("the checkout's e-mail address: {}", e.message))
            })
        })?;
    let item = items.first_item(session_id).await.map_err(|why| {
        ServiceError::Internal(anyhow::anyhow!("reading the checkout's line items: {why}"))
    })?;
    let Some(tier) = settings.prices.tier_of(&item.price_id) else {
        let outcome = format!(
            "price {} maps to no tier (TIDEMARK_STRIPE_PRICES): no licence made",
            item.price_id
        );
        tracing::warn!(session_id = %session_id, "{outcome}");
        return Ok(Step::Record(outcome));
    };
    let request = LicenseRequest {
        email,
        tier,
        // Until the first invoice says how long it is paid for.
        expires_at: Some(audit.at + settings.grace_ms),
        max_projects: None,
        max_machines: item.quantity.filter(|q| *q > 0),
        features_added: Vec::new(),
        features_removed: Vec::new(),
    };
    let claim = IdempotencyClaim {
        token_id: CLAIM_OWNER.into(),
        key: session_id.clone(),
        request_sha256: tidemark_domain::secrets::sha256_hex(session_id.as_bytes()),
    };
    let made = match licensing::create_once(db, keys, request, Some(claim), audit).await? {
        Creation::Created(made) | Creation::Earlier(made) => made,
    };
    let (anchor_owned, license_id, customer, now) = (
        anchor.to_owned(),
        made.license_id.clone(),
        customer_id.clone(),
        audit.at,
    );
    db.detached(move |db| async move {
        stripe::link(&db, &anchor_owned, &license_id, customer.as_deref(), now).await
    })
    .await?;
    licensing::resend(db, &made.license_id, audit).await?;
    Ok(Step::Record(format!(
        "licence {} ({}, {}) made and mailed",
        made.license_id,
        tier.as_str(),
        item.quantity
            .map_or("unlimited seats".to_owned(), |q| format!("{q} seats"))
    )))
}

/// A paid invoice: the licence runs to `until`, never shortened by an older invoice arriving
/// late.
async fn invoice_paid(
    db: &Db,
    subscription_id: &str,
    until: Millis,
    audit: &AuditContext,
) -> Result<Step, ServiceError> {
    let Some(license_id) = stripe::license_of(db, subscription_id).await? else {
        return Ok(Step::Answer(Applied::NotYet(subscription_id.to_owned())));
    };
    let license = licensing::find(db, &license_id).await?;
    if until > license.expires_at {
        let edit = LicenseEdit {
            expires_at: Some(until),
            ..LicenseEdit::default()
        };
        licensing::edit_license(db, &license_id, None, edit, audit).await?;
    }
    Ok(Step::Record(format!(
        "licence {license_id} runs to {}",
        tidemark_domain::to_rfc3339(until.max(license.expires_at))
    )))
}

/// Applies `edit` to the subscription's licence.
async fn edit_subscription(
    db: &Db,
    subscription_id: &str,
    edit: LicenseEdit,
    said: String,
    audit: &AuditContext,
) -> Result<Step, ServiceError> {
    let Some(license_id) = stripe::license_of(db, subscription_id).await? else {
        return Ok(Step::Answer(Applied::NotYet(subscription_id.to_owned())));
    };
    licensing::edit_license(db, &license_id, None, edit, audit).await?;
    Ok(Step::Record(format!("licence {license_id}: {said}")))
}
