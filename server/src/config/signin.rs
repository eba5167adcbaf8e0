//! Dashboard sign-in: the OpenID Connect provider, how long sessions last, and the nameserver
//! SSO domain checks ask.

use std::net::SocketAddr;

use super::{ConfigError, Vars};

#[derive(Debug, Clone)]
pub struct OidcConfig {
    pub issuer: String,
    pub client_id: String,
    pub client_secret: ClientSecret,
}

/// The OIDC client secret: never printed.
#[derive(Clone)]
pub struct ClientSecret(String);

impl ClientSecret {
    pub fn new(secret: String) -> Self {
        Self(secret)
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

tidemark_domain::redacted_debug!(ClientSecret);

#[derive(Debug, Clone)]
pub struct SigninConfig {
    /// The OpenID Connect provider browsers sign in with, if configured.
    pub oidc: Option<OidcConfig>,
    /// Dashboard session inactivity limit and absolute lifetime.
    pub session_idle_seconds: u32,
    pub session_max_seconds: u32,
    /// The one nameserver SSO domain-verification look-ups ask (`host:port`); the system's
    /// resolvers (`/etc/resolv.conf`) when unset.
    pub dns_resolver: Option<SocketAddr>,
}

impl SigninConfig {
    pub fn read(vars: &Vars) -> Result<Self, ConfigError> {
        let oidc = match (
            vars.get("TIDEMARK_OIDC_ISSUER"),
            vars.get("TIDEMARK_OIDC_CLIENT_ID"),
            vars.get("TIDEMARK_OIDC_CLIENT_SECRET"),
        ) {
            (None, None, None) => None,
            (Some(issuer), Some(client_id), Some(secret)) => Some(OidcConfig {
                issuer: super::vars::parse_url("TIDEMARK_OIDC_ISSUER", &issuer)?,
                client_id,
                client_secret: ClientSecret(secret),
            }),
            _ => {
                return Err(ConfigError::invalid(
                    "TIDEMARK_OIDC_ISSUER",
                    "set TIDEMARK_OIDC_ISSUER, TIDEMARK_OIDC_CLIENT_ID and \
                     TIDEMARK_OIDC_CLIENT_SECRET together (or none of them)",
                ))
            }
        };
        Ok(Self {
            oidc,
            session_idle_seconds: vars.number("TIDEMARK_SESSION_IDLE_SECONDS", 86_400)?,
            session_max_seconds: vars.number("TIDEMARK_SESSION_MAX_SECONDS", 604_800)?,
            dns_resolver: vars.socket_addr("TIDEMARK_DNS_RESOLVER", "127.0.0.1:53")?,
        })
    }

    pub fn summary(&self) -> String {
        let oidc = self.oidc.as_ref().map_or_else(
            || "no OpenID Connect provider".to_owned(),
            |o| format!("OpenID Connect at {} as {}", o.issuer, o.client_id),
        );
        let dns = self
            .dns_resolver
            .map_or_else(|| "the system's resolvers".to_owned(), |a| a.to_string());
        format!(
            "{oidc}; sessions end after {} s idle or {} s; SSO domain checks ask {dns}",
            self.session_idle_seconds, self.session_max_seconds
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::config;

    #[test]
    fn oidc_settings_come_together_and_the_secret_is_never_printed() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().to_str().unwrap();
        let err = config(&[
            ("TIDEMARK_DATA_DIR", data),
            ("TIDEMARK_OIDC_ISSUER", "https://idp.example"),
        ])
        .unwrap_err();
        assert!(err.to_string().contains("together"), "{err}");
        let c = config(&[
            ("TIDEMARK_DATA_DIR", data),
            ("TIDEMARK_OIDC_ISSUER", "https://idp.example/"),
            ("TIDEMARK_OIDC_CLIENT_ID", "tidemark"),
            ("TIDEMARK_OIDC_CLIENT_SECRET", "s3cr3t-value"),
        ])
        .unwrap();
        let oidc = c.signin.oidc.as_ref().unwrap();
        assert_eq!(oidc.issuer, "https://idp.example");
        assert!(!format!("{c:?}").contains("s3cr3t-value"));
        let summary = c.signin.summary();
        assert!(summary.contains("OpenID Connect at https://idp.example as tidemark"));
        assert!(!summary.contains("s3cr3t-value"));
    }
}
