//! Webhooks in Settings: endpoints (their URL and signing secret sealed under the master
//! key), the delivery log, Redeliver and "Send a test event". The sender is the server's
//! worker; these wake it when a delivery is due now.

use tidemark_domain::audit::AuditContext;
use tidemark_domain::webhook::{EventSet, PayloadFormat, WebhookSecret, WebhookUrl, MAX_ENDPOINTS};
use tidemark_domain::{ids, now_millis};
use tidemark_store::badges::ProjectBadge;
use tidemark_store::webhooks::{self, CreateOutcome, DeliveryLogRow, NewWebhook, Webhook};
use tidemark_wire::ids::{AccountId, ProjectId};

use crate::{ServiceError, Services};

/// Deliveries the log shows.
pub const LOG_ROWS: i64 = 50;

/// A new endpoint, parsed.
pub struct NewEndpoint {
    pub url: WebhookUrl,
    pub project_id: Option<ProjectId>,
    pub format: PayloadFormat,
    pub events: EventSet,
}

/// A secret made now and shown once.
pub struct SecretShown {
    pub webhook_id: String,
    pub secret: WebhookSecret,
}

/// What Settings → Webhooks shows.
pub struct WebhookOverview {
    pub endpoints: Vec<Webhook>,
    pub deliveries: Vec<DeliveryLogRow>,
    /// The projects an endpoint may be limited to.
    pub projects: Vec<ProjectBadge>,
}

fn known_webhook(id: &str) -> Result<(), ServiceError> {
    if ids::is_webhook_id(id) {
        Ok(())
    } else {
        Err(ServiceError::NotFound)
    }
}

fn found(done: bool) -> Result<(), ServiceError> {
    done.then_some(()).ok_or(ServiceError::NotFound)
}

impl Services {
    pub async fn webhook_overview(
        &self,
        account_id: &AccountId,
    ) -> Result<WebhookOverview, ServiceError> {
        Ok(WebhookOverview {
            endpoints: webhooks::list_webhooks(&self.db, account_id).await?,
            deliveries: webhooks::delivery_log(&self.db, account_id, LOG_ROWS).await?,
            projects: tidemark_store::badges::account_badges(&self.db, account_id).await?,
        })
    }

    /// Adds an endpoint with a fresh signing secret.
    pub async fn create_webhook(
        &self,
        account_id: &AccountId,
        endpoint: NewEndpoint,
        audit: &AuditContext,
    ) -> Result<SecretShown, ServiceError> {
        let secret = WebhookSecret::generate();
        let hook = NewWebhook {
            id: ids::new_webhook_id(),
            account_id: account_id.clone(),
            project_id: endpoint.project_id,
            url_sealed: self.webhook_secrets.seal(endpoint.url.as_str().as_bytes()),
            url_display: endpoint.url.display(),
            format: endpoint.format,
            events: endpoint.events,
            secret_sealed: self.webhook_secrets.seal(secret.expose().as_bytes()),
            now: now_millis(),
        };
        let webhook_id = hook.id.clone();
        let audit = audit.clone();
        let created = self
            .db
            .detached(|db| async move { webhooks::create_webhook(&db, &hook, &audit).await })
            .await?;
        match created {
            CreateOutcome::Created => Ok(SecretShown { webhook_id, secret }),
            CreateOutcome::NoSuchProject => Err(ServiceError::NotFound),
            CreateOutcome::TooMany => Err(ServiceError::Conflict(format!(
                "An account can have {MAX_ENDPOINTS} webhook endpoints; remove one first."
            ))),
        }
    }

    /// A new signing secret for the endpoint; the old one stops signing at once.
    pub async fn rotate_webhook_secret(
        &self,
        account_id: &AccountId,
        webhook_id: &str,
        audit: &AuditContext,
    ) -> Result<SecretShown, ServiceError> {
        known_webhook(webhook_id)?;
        let secret = WebhookSecret::generate();
        let sealed = self.webhook_secrets.seal(secret.expose().as_bytes());
        let (account, id, audit) = (account_id.clone(), webhook_id.to_owned(), audit.clone());
        let replaced = self
            .db
            .detached(|db| async move {
                webhooks::replace_secret(&db, &account, &id, &sealed, &audit).await
            })
            .await?;
        found(replaced)?;
        Ok(SecretShown {
            webhook_id: webhook_id.to_owned(),
            secret,
        })
    }

    /// Removes the endpoint and its delivery log.
    pub async fn delete_webhook(
        &self,
        account_id: &AccountId,
        webhook_id: &str,
        audit: &AuditContext,
    ) -> Result<(), ServiceError> {
        known_webhook(webhook_id)?;
        let (account, id, audit) = (account_id.clone(), webhook_id.to_owned(), audit.clone());
        let deleted = self
            .db
            .detached(
                |db| async move { webhooks::delete_webhook(&db, &account, &id, &audit).await },
            )
            .await?;
        found(deleted)
    }

    /// Queues a `webhook.test` event for the endpoint and sends it now.
    pub async fn send_test_webhook(
        &self,
        account_id: &AccountId,
        webhook_id: &str,
    ) -> Result<(), ServiceError> {
        known_webhook(webhook_id)?;
        let (account, id) = (account_id.clone(), webhook_id.to_owned());
        let (event_id, now) = (ids::new_event_id(), now_millis());
        let queued = self
            .db
            .detached(|db| async move {
                webhooks::enqueue_test_event(&db, &account, &id, &event_id, now).await
            })
            .await?;
        found(queued)?;
        self.webhook_wakeup.notify_one();
        Ok(())
    }

    /// Sends a delivery again now, with a fresh day of retries.
    pub async fn redeliver_webhook(
        &self,
        account_id: &AccountId,
        event_id: &str,
        webhook_id: &str,
    ) -> Result<(), ServiceError> {
        known_webhook(webhook_id)?;
        if !ids::is_event_id(event_id) {
            return Err(ServiceError::NotFound);
        }
        let (account, event, id) = (
            account_id.clone(),
            event_id.to_owned(),
            webhook_id.to_owned(),
        );
        let now = now_millis();
        let queued = self
            .db
            .detached(
                |db| async move { webhooks::redeliver(&db, &account, &event, &id, now).await },
            )
            .await?;
        found(queued)?;
        self.webhook_wakeup.notify_one();
        Ok(())
    }
}
