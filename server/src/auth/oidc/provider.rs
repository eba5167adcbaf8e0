//! The configured OpenID Connect provider: its discovery document and keys, re-read every ten
//! minutes, and the client built from them. Held by the server's state; the sign-in handlers
//! beside it use it.

use std::time::{Duration, Instant};

use app::auth::SignInRefusal;
use openidconnect::core::{CoreClient, CoreProviderMetadata};
use openidconnect::{ClientId, ClientSecret, IssuerUrl, RedirectUrl};
use tokio::sync::RwLock;

use crate::config::OidcConfig;

/// Discovery and keys are re-read this often, so a provider's key rotation is picked up.
const METADATA_TTL: Duration = Duration::from_secs(600);

/// The configured provider, discovered lazily: the server starts even while it is down.
pub struct OidcProvider {
    pub(crate) config: OidcConfig,
    redirect_url: RedirectUrl,
    pub(crate) http: reqwest::Client,
    metadata: RwLock<Option<(Instant, CoreProviderMetadata)>>,
}

impl std::fmt::Debug for OidcProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcProvider")
            .field("issuer", &self.config.issuer)
            .finish_non_exhaustive()
    }
}

impl OidcProvider {
    /// The dashboard's provider, answering at `/auth/oidc/callback`.
    pub fn new(config: OidcConfig, base_url: &str) -> anyhow::Result<Self> {
        Self::answering_at(config, base_url, "/auth/oidc/callback")
    }

    /// A provider whose answers come back to `callback_path` (the console's has its own).
    pub fn answering_at(
        config: OidcConfig,
        base_url: &str,
        callback_path: &str,
    ) -> anyhow::Result<Self> {
        // Token exchange must not follow redirects: a redirect could carry the code and the
        // client secret somewhere else.
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(10))
            .build()?;
        Ok(Self {
            redirect_url: RedirectUrl::new(format!("{base_url}{callback_path}"))?,
            config,
            http,
            metadata: RwLock::new(None),
        })
    }

    pub(crate) async fn metadata(
        &self,
        refresh: bool,
    ) -> Result<CoreProviderMetadata, SignInRefusal> {
        if !refresh {
            if let Some((at, metadata)) = self.metadata.read().await.as_ref() {
                if at.elapsed() < METADATA_TTL {
                    return Ok(metadata.clone());
                }
            }
        }
        let issuer = IssuerUrl::new(self.config.issuer.clone())
            .map_err(|_| SignInRefusal::OidcUnconfigured)?;
        let metadata = CoreProviderMetadata::discover_async(issuer, &self.http)
            .await
            .map_err(|err| {
                tracing::warn!(err = %err, "OpenID Connect discovery failed");
                SignInRefusal::ProviderUnreachable
            })?;
        *self.metadata.write().await = Some((Instant::now(), metadata.clone()));
        Ok(metadata)
    }

    pub(crate) fn client(
        &self,
        metadata: CoreProviderMetadata,
    ) -> openidconnect::core::CoreClient<
        openidconnect::EndpointSet,
        openidconnect::EndpointNotSet,
        openidconnect::EndpointNotSet,
        openidconnect::EndpointNotSet,
        openidconnect::EndpointMaybeSet,
        openidconnect::EndpointMaybeSet,
    > {
        CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(self.config.client_id.clone()),
            Some(ClientSecret::new(
                self.config.client_secret.expose().to_owned(),
            )),
        )
        .set_redirect_uri(self.redirect_url.clone())
    }
}
