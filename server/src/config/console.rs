//! The vendor's console: the staff's own OpenID Connect provider, which of its groups open the
//! console as which role, and the claim and scope that carry them.

use tidemark_domain::console::GroupRoles;

use super::signin::{ClientSecret, OidcConfig};
use super::{ConfigError, Vars};

#[derive(Debug, Clone)]
pub struct ConsoleConfig {
    /// The staff's provider: never the customers' (`TIDEMARK_OIDC_*`), so a customer's
    /// identity cannot become a staff one.
    pub oidc: OidcConfig,
    /// Group names to roles (`TIDEMARK_CONSOLE_ROLES`).
    pub roles: GroupRoles,
    /// The claim holding the person's groups (`groups` at most providers).
    pub groups_claim: String,
    /// Scopes asked for besides `openid email` (Okta and others release groups to a scope).
    pub scopes: Vec<String>,
}

impl ConsoleConfig {
    /// The console is on when its issuer is set; the client and the role map must come too.
    pub fn read(vars: &Vars) -> Result<Option<Self>, ConfigError> {
        let issuer = vars.get("TIDEMARK_CONSOLE_OIDC_ISSUER");
        let client_id = vars.get("TIDEMARK_CONSOLE_OIDC_CLIENT_ID");
        let secret = vars.get("TIDEMARK_CONSOLE_OIDC_CLIENT_SECRET");
        let roles = vars.get("TIDEMARK_CONSOLE_ROLES");
        let groups_claim = vars
            .get("TIDEMARK_CONSOLE_GROUPS_CLAIM")
            .unwrap_or_else(|| "groups".into());
        let scopes = vars
            .get("TIDEMARK_CONSOLE_OIDC_SCOPES")
            .unwrap_or_else(|| "groups".into());
        let (issuer, client_id, secret, roles) = match (issuer, client_id, secret, roles) {
            (None, None, None, None) => return Ok(None),
            (Some(i), Some(c), Some(s), Some(r)) => (i, c, s, r),
            _ => {
                return Err(ConfigError::invalid(
                    "TIDEMARK_CONSOLE_OIDC_ISSUER",
                    "set TIDEMARK_CONSOLE_OIDC_ISSUER, TIDEMARK_CONSOLE_OIDC_CLIENT_ID, \
                     TIDEMARK_CONSOLE_OIDC_CLIENT_SECRET and TIDEMARK_CONSOLE_ROLES together \
                     (or none of them)",
                ))
            }
        };
        let roles = GroupRoles::parse(&roles)
            .map_err(|reason| ConfigError::invalid("TIDEMARK_CONSOLE_ROLES", reason))?;
        if groups_claim.is_empty() || groups_claim.contains(char::is_whitespace) {
            return Err(ConfigError::invalid(
                "TIDEMARK_CONSOLE_GROUPS_CLAIM",
                "one claim name, without spaces",
            ));
        }
        let scopes = scopes
            .split([' ', ','])
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        Ok(Some(Self {
            oidc: OidcConfig {
                issuer: super::vars::parse_url("TIDEMARK_CONSOLE_OIDC_ISSUER", &issuer)?,
                client_id,
                client_secret: ClientSecret::new(secret),
            },
            roles,
            groups_claim,
            scopes,
        }))
    }

    pub fn summary(&self) -> String {
        format!(
            "staff sign in at OpenID Connect {} as {}, roles from the {:?} claim",
            self.oidc.issuer, self.oidc.client_id, self.groups_claim
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::config;

    #[test]
    fn the_console_comes_whole_or_not_at_all_and_its_secret_is_never_printed() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().to_str().unwrap();
        let off = config(&[("TIDEMARK_DATA_DIR", data)]).unwrap();
        assert!(off.console.is_none());
        let err = config(&[
            ("TIDEMARK_DATA_DIR", data),
            ("TIDEMARK_CONSOLE_OIDC_ISSUER", "https://staff.example"),
        ])
        .unwrap_err();
        assert!(err.to_string().contains("together"), "{err}");
        let whole = [
            ("TIDEMARK_DATA_DIR", data),
            ("TIDEMARK_CONSOLE_OIDC_ISSUER", "https://staff.example/"),
            ("TIDEMARK_CONSOLE_OIDC_CLIENT_ID", "console"),
            ("TIDEMARK_CONSOLE_OIDC_CLIENT_SECRET", "c0ns0le-secret"),
            (
                "TIDEMARK_CONSOLE_ROLES",
                "vendor-admins=admin,helpdesk=support",
            ),
        ];
        let c = config(&whole).unwrap();
        let console = c.console.as_ref().unwrap();
        assert_eq!(console.oidc.issuer, "https://staff.example");
        assert_eq!(console.groups_claim, "groups");
        assert_eq!(console.scopes, ["groups"]);
        assert!(!format!("{c:?}").contains("c0ns0le-secret"));
        assert!(!console.summary().contains("c0ns0le-secret"));
        let mut billing = whole;
        billing[4] = ("TIDEMARK_CONSOLE_ROLES", "checkout=billing");
        let err = config(&billing).unwrap_err();
        assert!(err.to_string().contains("TIDEMARK_CONSOLE_ROLES"), "{err}");
    }
}
