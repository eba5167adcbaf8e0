//! The console's identity provider: the staff's own OpenID Connect provider, the map from its
//! groups to roles, and the one question asked of it on every console request: which groups
//! is this token's holder in now? Built from its own inputs (the state holds it).

use std::sync::Arc;

use openidconnect::core::CoreGenderClaim;
use openidconnect::{AccessToken, AdditionalClaims, SubjectIdentifier, UserInfoError};
use serde::{Deserialize, Serialize};
use tidemark_domain::console::GroupRoles;
use tidemark_services::crypto::SecretBox;

use crate::auth::oidc::provider::OidcProvider;
use crate::config::ConsoleConfig;

/// What the console needs from the server: its provider, its role map, and the box its
/// access tokens are sealed in.
pub struct ConsoleAuth {
    pub provider: OidcProvider,
    pub roles: GroupRoles,
    pub groups_claim: String,
    pub scopes: Vec<String>,
    pub tokens: SecretBox,
}

impl std::fmt::Debug for ConsoleAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsoleAuth")
            .field("provider", &self.provider)
            .finish_non_exhaustive()
    }
}

impl ConsoleAuth {
    pub fn new(
        config: &ConsoleConfig,
        base_url: &str,
        tokens: SecretBox,
    ) -> anyhow::Result<Arc<Self>> {
        Ok(Arc::new(Self {
            provider: OidcProvider::answering_at(
                config.oidc.clone(),
                base_url,
                super::signin::CALLBACK_PATH,
            )?,
            roles: config.roles.clone(),
            groups_claim: config.groups_claim.clone(),
            scopes: config.scopes.clone(),
            tokens,
        }))
    }

    /// The groups the provider lists for the token's holder now.
    pub async fn current_groups(
        &self,
        token: &str,
        subject: &str,
    ) -> Result<Vec<String>, GroupsRefusal> {
        let metadata = self
            .provider
            .metadata(false)
            .await
            .map_err(|_| GroupsRefusal::ProviderUnreachable)?;
        let client = self.provider.client(metadata);
        let request = client
            .user_info(
                AccessToken::new(token.to_owned()),
                Some(SubjectIdentifier::new(subject.to_owned())),
            )
            .map_err(|_| GroupsRefusal::NoUserinfo)?;
        let info = request
            .request_async::<OtherClaims, _, CoreGenderClaim>(&self.provider.http)
            .await
            .map_err(|err| match err {
                UserInfoError::Response(status, _, _) if status.as_u16() == 401 => {
                    GroupsRefusal::TokenEnded
                }
                UserInfoError::ClaimsVerification(_) => GroupsRefusal::TokenEnded,
                other => {
                    tracing::warn!(err = %other, "the console's userinfo request failed");
                    GroupsRefusal::ProviderUnreachable
                }
            })?;
        Ok(groups_in(&info.additional_claims().0, &self.groups_claim))
    }
}

/// Why the console could not learn a person's groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupsRefusal {
    /// The provider no longer honours the token (expired, revoked, or signed out there).
    TokenEnded,
    ProviderUnreachable,
    /// The provider publishes no userinfo endpoint: groups could never be asked again.
    NoUserinfo,
}

/// Every claim the provider's userinfo answer carries, by name.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct OtherClaims(pub serde_json::Map<String, serde_json::Value>);
impl AdditionalClaims for OtherClaims {}

/// The groups under `claim`: a list of names (most providers) or one name.
pub fn groups_in(claims: &serde_json::Map<String, serde_json::Value>, claim: &str) -> Vec<String> {
    match claims.get(claim) {
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        Some(serde_json::Value::String(one)) => vec![one.clone()],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn groups_come_as_a_list_or_one_name_and_nothing_else_counts() {
        let claims = |v: serde_json::Value| v.as_object().unwrap().clone();
        let list = claims(json!({"groups": ["a", 7, "b"], "roles": "c"}));
        assert_eq!(groups_in(&list, "groups"), ["a", "b"]);
        assert_eq!(groups_in(&list, "roles"), ["c"]);
        assert!(groups_in(&list, "missing").is_empty());
        assert!(groups_in(&claims(json!({"groups": {"a": 1}})), "groups").is_empty());
    }
}
