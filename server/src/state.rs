use std::sync::Arc;

use axum::extract::FromRef;
use leptos::config::LeptosOptions;
use tidemark_store::Db;
use tokio::sync::Notify;

use crate::config::Config;
use crate::http::metrics::Metrics;
use tidemark_services::crypto::SecretBox;

/// Everything a handler may need, cloned cheaply into each request.
#[derive(Clone, FromRef)]
pub struct AppState {
    pub leptos_options: LeptosOptions,
    pub db: Db,
    pub config: Arc<Config>,
    pub metrics: Arc<Metrics>,
    /// Encrypts the raw license keys kept for resend.
    pub license_keys: SecretBox,
    /// Answers validations (with its cache) and activations, signing their verdicts.
    pub validator: Arc<tidemark_services::licensing::Validator>,
    /// Encrypts sign-in attempts between the redirect to an identity provider and its answer.
    #[from_ref(skip)]
    pub login_attempts: SecretBox,
    /// The OpenID Connect provider, when configured.
    pub oidc: Option<Arc<crate::auth::oidc::provider::OidcProvider>>,
    /// The vendor's console: its staff provider and role map, when configured.
    #[from_ref(skip)]
    pub console: Option<Arc<crate::console::provider::ConsoleAuth>>,
    /// Looks up SSO domain-verification records.
    #[from_ref(skip)]
    pub dns: crate::net::dns::DnsVerifier,
    /// Push body bytes this replica holds at once (`TIDEMARK_PUSH_BUDGET_MIB`).
    pub push_budget: Arc<crate::api::push_budget::PushBudget>,
    /// Wakes this replica's mail sender when a message is queued (others poll).
    pub mail_wakeup: Arc<Notify>,
    /// Encrypts webhook URLs and signing secrets.
    #[from_ref(skip)]
    pub webhook_secrets: SecretBox,
    /// Encrypts a secret a form made while it waits for the page that shows it once.
    #[from_ref(skip)]
    pub handovers: SecretBox,
    /// Wakes this replica's webhook sender when deliveries are queued (others poll).
    #[from_ref(skip)]
    pub webhook_wakeup: Arc<Notify>,
    /// The site's `/pkg` files, compressed once `serve` starts.
    #[from_ref(skip)]
    pub assets: crate::http::assets::Assets,
    /// Signs licence verdicts and the published key set.
    #[from_ref(skip)]
    pub signer: Arc<tidemark_services::crypto::signing::Signer>,
    /// The signing keys of CI token issuers (keyless CI), cached by `kid`.
    #[from_ref(skip)]
    pub ci_keys: Arc<crate::keyless::KeySets>,
}
