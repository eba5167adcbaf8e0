//! The vendor's licence events: its webhook endpoints (admin only; URL and secret sealed
//! under the master key like the account webhooks) and the event log the admin API pages
//! through. Events themselves are raised by the store in the transaction that makes them
//! happen; the server's sender delivers them.

use tidemark_domain::audit::AuditContext;
use tidemark_domain::ids;
use tidemark_domain::license_events::{LicenseEvent, MAX_VENDOR_ENDPOINTS};
use tidemark_domain::paging::Keyset;
use tidemark_domain::webhook::{WebhookSecret, WebhookUrl};
use tidemark_store::license_events::{self as store, NewVendorWebhook};
pub use tidemark_store::license_events::{EventFilter, StoredEvent, VendorWebhookRow};

use tidemark_store::Db;

use crate::crypto::SecretBox;
use crate::ServiceError;

/// A page of events, newest first, and where the next (older) one starts.
pub struct EventPage {
    pub events: Vec<StoredEvent>,
    pub next: Option<Keyset>,
}

/// Adds an endpoint with a fresh signing secret, shown to the caller this once.
pub async fn create_webhook(
    db: &Db,
    secrets: &SecretBox,
    url: &WebhookUrl,
    events: Vec<LicenseEvent>,
    audit: &AuditContext,
) -> Result<(VendorWebhookRow, WebhookSecret), ServiceError> {
    let secret = WebhookSecret::generate();
    let id = ids::new_vendor_webhook_id();
    let (url_sealed, secret_sealed) = (
        secrets.seal(url.as_str().as_bytes()),
        secrets.seal(secret.expose().as_bytes()),
    );
    let url_display = url.display();
    let (row_id, display, kept, audit_of_write) = (
        id.clone(),
        url_display.clone(),
        events.clone(),
        audit.clone(),
    );
    let made = db
        .detached(move |db| async move {
            let new = NewVendorWebhook {
                id: &row_id,
                url_sealed: &url_sealed,
                url_display: &display,
                events: &kept,
                secret_sealed: &secret_sealed,
            };
            store::create_webhook(&db, &new, &audit_of_write).await
        })
        .await?;
    if !made {
        return Err(ServiceError::Conflict(format!(
            "The vendor can have {MAX_VENDOR_ENDPOINTS} webhook endpoints; remove one first."
        )));
    }
    let row = VendorWebhookRow {
        id,
        url_display,
        events,
        created_at: audit.at,
        pending: 0,
        failed: 0,
    };
    Ok((row, secret))
}

pub async fn list_webhooks(db: &Db) -> Result<Vec<VendorWebhookRow>, ServiceError> {
    Ok(store::list_webhooks(db).await?)
}

/// Removes the endpoint and what was still to be sent to it.
pub async fn delete_webhook(db: &Db, id: &str, audit: &AuditContext) -> Result<(), ServiceError> {
    if !ids::is_vendor_webhook_id(id) {
        return Err(ServiceError::NotFound);
    }
    let (id, audit) = (id.to_owned(), audit.clone());
    let deleted = db
        .detached(move |db| async move { store::delete_webhook(&db, &id, &audit).await })
        .await?;
    deleted.then_some(()).ok_or(ServiceError::NotFound)
}

/// Up to `limit` events after `cursor` (newest first).
pub async fn page_events(
    db: &Db,
    filter: &EventFilter,
    cursor: Option<&Keyset>,
    limit: i64,
) -> Result<EventPage, ServiceError> {
    let before = cursor.map(|k| (k.at, k.id.as_str()));
    let mut events = store::page_events(db, filter, before, limit + 1).await?;
    let more = events.len() as i64 > limit;
    events.truncate(limit.max(0) as usize);
    let next = more
        .then(|| {
            events.last().map(|e| Keyset {
                at: e.created_at,
                id: e.id.clone(),
            })
        })
        .flatten();
    Ok(EventPage { events, next })
}
