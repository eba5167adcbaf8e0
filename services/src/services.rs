//! The use cases' dependencies, bundled for the adapters that hold them for a process (the
//! dashboard's server functions take it from the Leptos context).

use std::sync::Arc;

use tidemark_store::Db;
use tokio::sync::Notify;

use crate::crypto::{Keyring, SecretBox, WEBHOOK_PURPOSE};
use crate::ports::{IdpMetadataReader, TxtLookup};

#[derive(Clone)]
pub struct Services {
    pub(crate) db: Db,
    /// Seals webhook URLs and signing secrets under the master key.
    pub(crate) webhook_secrets: SecretBox,
    /// Wakes this replica's webhook sender when a delivery is due now (others poll).
    pub(crate) webhook_wakeup: Arc<Notify>,
    pub(crate) dns: Arc<dyn TxtLookup>,
    pub(crate) idp_metadata: Arc<dyn IdpMetadataReader>,
}

impl Services {
    pub fn new(
        db: Db,
        keys: &Keyring,
        webhook_wakeup: Arc<Notify>,
        dns: Arc<dyn TxtLookup>,
        idp_metadata: Arc<dyn IdpMetadataReader>,
    ) -> Self {
        Self {
            db,
            webhook_secrets: SecretBox::new(keys, WEBHOOK_PURPOSE),
            webhook_wakeup,
            dns,
            idp_metadata,
        }
    }

    pub fn db(&self) -> &Db {
        &self.db
    }
}
