//! What the use cases need from the outside world and the server provides: a DNS resolver
//! (domain-verification records) and the SAML code that reads an identity provider's
//! metadata. Tests and the operator's commands provide their own.

use tidemark_domain::sso::TxtAnswer;

/// An identity provider as its SAML metadata describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdpMetadata {
    pub entity_id: String,
    pub sso_url: String,
    /// Base64 DER.
    pub signing_certs: Vec<String>,
}

/// Reads and checks IdP metadata: the text says why it was refused.
pub trait IdpMetadataReader: Send + Sync {
    fn read(&self, xml: &str) -> Result<IdpMetadata, String>;
}

/// Looks up the TXT records at a name.
#[async_trait::async_trait]
pub trait TxtLookup: Send + Sync {
    async fn lookup_txt(&self, name: &str) -> TxtAnswer;
}

/// A paid checkout's first line item: the price bought and how many.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckoutItem {
    pub price_id: String,
    pub quantity: Option<u64>,
}

/// Reads a checkout session's line items from the payment provider (Stripe's events do not
/// carry them). An `Err` is a failure worth a retry, in words.
#[async_trait::async_trait]
pub trait CheckoutItems: Send + Sync {
    async fn first_item(&self, session_id: &str) -> Result<CheckoutItem, String>;
}
