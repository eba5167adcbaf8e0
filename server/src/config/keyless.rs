//! Keyless CI: which tokens a CI job may exchange, and how their issuers are reached.

use super::{ConfigError, Vars};

#[derive(Debug, Clone)]
pub struct KeylessConfig {
    /// The one audience a CI job's token must carry to be exchanged
    /// (`TIDEMARK_OIDC_AUDIENCE`, default the base URL).
    pub audience: String,
    /// Trusted publishers may name `http://` issuers on loopback or private addresses
    /// (`TIDEMARK_OIDC_ALLOW_PRIVATE_ISSUERS=1`): for a lab issuer and for tests. Off by
    /// default, so an issuer URL cannot reach into the operator's network.
    pub allow_private_issuers: bool,
    /// More certificate authorities the CI token issuers' keys are fetched with
    /// (`TIDEMARK_OIDC_CA_FILE`, a PEM bundle), beside the system's trust store: a
    /// self-hosted issuer (GitHub Enterprise Server, self-managed GitLab) on a private CA.
    pub ca_pem: Option<Vec<u8>>,
}

impl KeylessConfig {
    pub fn read(vars: &Vars, base_url: &str) -> Result<Self, ConfigError> {
        let audience = vars
            .get("TIDEMARK_OIDC_AUDIENCE")
            .map(|a| a.trim().to_owned())
            .unwrap_or_else(|| base_url.to_owned());
        if audience.len() > 255 || audience.chars().any(char::is_control) {
            return Err(ConfigError::invalid(
                "TIDEMARK_OIDC_AUDIENCE",
                "at most 255 characters, no control characters",
            ));
        }
        let ca_pem = match vars.get("TIDEMARK_OIDC_CA_FILE") {
            None => None,
            Some(path) => Some(
                read_ca_file(&path)
                    .map_err(|reason| ConfigError::invalid("TIDEMARK_OIDC_CA_FILE", reason))?,
            ),
        };
        Ok(Self {
            audience,
            allow_private_issuers: vars.flag("TIDEMARK_OIDC_ALLOW_PRIVATE_ISSUERS")?,
            ca_pem,
        })
    }

    pub fn summary(&self) -> String {
        format!(
            "CI tokens must name the audience {}{}{}",
            self.audience,
            if self.allow_private_issuers {
                "; issuers may be private"
            } else {
                ""
            },
            if self.ca_pem.is_some() {
                "; extra issuer CAs loaded"
            } else {
                ""
            }
        )
    }
}

/// The PEM bundle at `path`, if it holds at least one certificate.
fn read_ca_file(path: &str) -> Result<Vec<u8>, String> {
    let pem = std::fs::read(path).map_err(|e| format!("could not read {path}: {e}"))?;
    match reqwest::Certificate::from_pem_bundle(&pem) {
        Ok(certs) if !certs.is_empty() => Ok(pem),
        _ => Err(format!("{path} holds no PEM certificate")),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::config;

    #[test]
    fn the_audience_defaults_to_the_base_url_and_a_ca_file_must_hold_a_certificate() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().to_str().unwrap();
        let c = config(&[
            ("TIDEMARK_DATA_DIR", data),
            ("TIDEMARK_BASE_URL", "https://api.example"),
        ])
        .unwrap();
        assert_eq!(c.keyless.audience, "https://api.example");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "no certificate here").unwrap();
        let err = config(&[
            ("TIDEMARK_DATA_DIR", data),
            ("TIDEMARK_OIDC_CA_FILE", empty.to_str().unwrap()),
        ])
        .unwrap_err()
        .to_string();
        assert!(err.contains("holds no PEM certificate"), "{err}");
    }
}
