//! Every setting the server reads from its environment, parsed in this one place, one module
//! per concern. docs/configuration.md's table documents the same variables
//! ([`VARIABLES`]); start-up logs [`Config::summary`], one line per concern.

mod billing;
mod console;
mod database;
mod housekeeping;
mod http;
mod keyless;
mod keys;
mod limits;
mod mail;
mod signin;
mod variables;
mod vars;
mod webhooks;

use std::path::PathBuf;

pub use billing::StripeConfig;
pub use console::ConsoleConfig;
pub use database::{DatabaseConfig, DatabaseUrl, MigratePolicy};
pub use housekeeping::{parse_housekeeping, HousekeepingConfig};
pub use http::HttpConfig;
pub use keyless::KeylessConfig;
pub use keys::{parse_overlap, KeysConfig, MasterKey, MasterKeySource};
pub use limits::Limits;
pub use mail::{MailConfig, SmtpUrl};
pub use signin::{ClientSecret, OidcConfig, SigninConfig};
pub use variables::{variables_help, Variable, SECRET_VARIABLES, VARIABLES};
use vars::Vars;
pub use webhooks::WebhookConfig;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Environment {
    Development,
    Production,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub environment: Environment,
    /// The SQLite file, the development master key and mail files live here.
    pub data_dir: PathBuf,
    /// Development only: seed a demo account whose admin can sign in at once.
    pub dev_demo: bool,
    pub database: DatabaseConfig,
    pub http: HttpConfig,
    pub keys: KeysConfig,
    pub signin: SigninConfig,
    /// The vendor's console, when its staff provider is configured.
    pub console: Option<ConsoleConfig>,
    pub keyless: KeylessConfig,
    pub mail: MailConfig,
    pub webhooks: WebhookConfig,
    /// Licences made by Stripe Checkout, when configured.
    pub stripe: Option<StripeConfig>,
    pub limits: Limits,
    pub housekeeping: HousekeepingConfig,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{name} is not valid: {reason}")]
    Invalid { name: &'static str, reason: String },
    #[error("TIDEMARK_MASTER_KEY must be the base64 encoding of exactly 32 bytes")]
    MasterKeyFormat,
    #[error(
        "TIDEMARK_MASTER_KEY is required when TIDEMARK_ENV=production \
         (generate one with: head -c 32 /dev/urandom | base64)"
    )]
    MasterKeyMissing,
    #[error("could not read or write the development master key at {path}: {source}")]
    MasterKeyFile {
        path: String,
        source: std::io::Error,
    },
}

impl ConfigError {
    fn invalid(name: &'static str, reason: impl Into<String>) -> Self {
        Self::Invalid {
            name,
            reason: reason.into(),
        }
    }
}

impl Config {
    /// Reads the configuration from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the configuration through `lookup` (the environment, or a map in tests).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let vars = Vars::new(&lookup)?;
        let environment = match vars.get("TIDEMARK_ENV").as_deref() {
            None | Some("development") => Environment::Development,
            Some("production") => Environment::Production,
            Some(other) => {
                return Err(ConfigError::invalid(
                    "TIDEMARK_ENV",
                    format!("expected development or production, got {other:?}"),
                ))
            }
        };
        let data_dir = PathBuf::from(
            vars.get("TIDEMARK_DATA_DIR")
                .unwrap_or_else(|| "data".into()),
        );
        let dev_demo = match vars.flag("TIDEMARK_DEV_DEMO") {
            Ok(true) if environment == Environment::Production => {
                return Err(ConfigError::invalid(
                    "TIDEMARK_DEV_DEMO",
                    "the demo account is for development only; it cannot be enabled with \
                     TIDEMARK_ENV=production",
                ))
            }
            other => other?,
        };
        let database = DatabaseConfig::read(&vars, &data_dir)?;
        let http = HttpConfig::read(&vars)?;
        let keys = KeysConfig::read(&vars, environment, &data_dir)?;
        let keyless = KeylessConfig::read(&vars, &http.base_url)?;
        Ok(Config {
            environment,
            dev_demo,
            database,
            keys,
            keyless,
            signin: SigninConfig::read(&vars)?,
            console: ConsoleConfig::read(&vars)?,
            mail: MailConfig::read(&vars)?,
            webhooks: WebhookConfig::read(&vars)?,
            stripe: StripeConfig::read(&vars)?,
            limits: Limits::read(&vars)?,
            housekeeping: HousekeepingConfig::read(&vars)?,
            http,
            data_dir,
        })
    }

    /// What start-up logs: one line per concern, no secret in any of them.
    pub fn summary(&self) -> Vec<(&'static str, String)> {
        let environment = match self.environment {
            Environment::Development => "development",
            Environment::Production => "production",
        };
        vec![
            (
                "environment",
                format!(
                    "{environment}, data in {}{}",
                    self.data_dir.display(),
                    if self.dev_demo { ", demo account" } else { "" }
                ),
            ),
            ("database", self.database.summary()),
            ("http", self.http.summary()),
            ("keys", self.keys.summary()),
            ("sign-in", self.signin.summary()),
            (
                "console",
                self.console
                    .as_ref()
                    .map_or("off".to_owned(), ConsoleConfig::summary),
            ),
            ("keyless CI", self.keyless.summary()),
            ("mail", self.mail.summary()),
            ("webhooks", self.webhooks.summary()),
            (
                "stripe",
                self.stripe
                    .as_ref()
                    .map_or("off".to_owned(), StripeConfig::summary),
            ),
            ("limits", self.limits.summary()),
            ("housekeeping", self.housekeeping.summary()),
        ]
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use base64::Engine as _;
    use std::collections::HashMap;

    pub(crate) fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn the_variables_table_names_every_variable_read_and_the_readme_lists_them() {
        let read = std::cell::RefCell::new(std::collections::BTreeSet::new());
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().display().to_string();
        let _ = Config::from_lookup(|name| {
            read.borrow_mut().insert(name.to_owned());
            match name {
                "TIDEMARK_DATA_DIR" => Some(data.clone()),
                // Set so that the variables read only alongside it are read too.
                "TIDEMARK_OIDC_ISSUER" => Some("https://idp.example".into()),
                "TIDEMARK_OIDC_CLIENT_ID" => Some("tidemark".into()),
                "TIDEMARK_OIDC_CLIENT_SECRET" => Some("s".into()),
                "TIDEMARK_CONSOLE_OIDC_ISSUER" => Some("https://staff.example".into()),
                "TIDEMARK_CONSOLE_OIDC_CLIENT_ID" => Some("console".into()),
                "TIDEMARK_CONSOLE_OIDC_CLIENT_SECRET" => Some("s".into()),
                "TIDEMARK_CONSOLE_ROLES" => Some("staff=read".into()),
                _ => None,
            }
        })
        .unwrap();
        let listed: std::collections::BTreeSet<String> =
            VARIABLES.iter().map(|v| v.name.to_owned()).collect();
        let read: std::collections::BTreeSet<String> = read
            .into_inner()
            .into_iter()
            // A secret's `<NAME>_FILE` form is that secret; other names end in _FILE as named.
            .map(|n| match n.strip_suffix("_FILE") {
                Some(secret) if SECRET_VARIABLES.contains(&secret) => secret.to_owned(),
                _ => n,
            })
            .collect();
        assert_eq!(read, listed, "VARIABLES and what from_lookup reads differ");
        let reference = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../docs/configuration.md"
        ))
        .unwrap();
        for v in VARIABLES {
            assert!(
                reference.contains(&format!("| `{}` |", v.name)),
                "docs/configuration.md lacks {}",
                v.name
            );
        }
        let help = variables_help();
        assert!(help.contains("TIDEMARK_MASTER_KEY_PREVIOUS*"), "{help}");
    }

    #[test]
    fn the_demo_account_cannot_be_enabled_in_production() {
        let key = MasterKey::generate().to_base64();
        let err = config(&[
            ("TIDEMARK_ENV", "production"),
            ("TIDEMARK_MASTER_KEY", &key),
            ("TIDEMARK_DEV_DEMO", "1"),
        ])
        .unwrap_err();
        assert!(err.to_string().contains("development only"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let dev = config(&[
            ("TIDEMARK_DATA_DIR", dir.path().to_str().unwrap()),
            ("TIDEMARK_DEV_DEMO", "1"),
        ])
        .unwrap();
        assert!(dev.dev_demo);
        assert_eq!(dev.environment, Environment::Development);
    }

    #[test]
    fn bad_values_are_refused_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().to_str().unwrap();
        let key = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
        let cases = [
            ("TIDEMARK_ENV", "staging"),
            ("TIDEMARK_MIGRATE", "sometimes"),
            ("LEPTOS_SITE_ADDR", "nowhere"),
            ("TIDEMARK_BASE_URL", "ftp://x"),
            ("TIDEMARK_DASHBOARD_URL", "dashboard"),
            ("TIDEMARK_MASTER_KEY", "c2hvcnQ="),
            ("TIDEMARK_WRITES_PER_MINUTE", "0"),
            ("TIDEMARK_RESEND_PER_MINUTE", "three"),
            ("TIDEMARK_RESEND_BAN_SECONDS", "-5"),
            ("TIDEMARK_TRUSTED_PROXIES", "10.0.0.0/8, nonsense"),
            ("TIDEMARK_SMTP_URL", "http://mail"),
            ("TIDEMARK_MAIL_FROM", "not a mailbox"),
            ("TIDEMARK_PUSH_BUDGET_MIB", "8"),
            ("TIDEMARK_DB_MAX_CONNECTIONS", "0"),
            ("TIDEMARK_DNS_RESOLVER", "nowhere"),
            ("TIDEMARK_METRICS_ADDR", "9090"),
            ("TIDEMARK_HEADER_TIMEOUT_SECONDS", "31"),
            ("TIDEMARK_HOUSEKEEPING_INTERVAL_MINUTES", "0"),
            ("TIDEMARK_SIGNING_KEY_OVERLAP", "soon"),
            ("TIDEMARK_DEV_DEMO", "maybe"),
        ];
        for (name, value) in cases {
            let mut vars = vec![
                ("TIDEMARK_DATA_DIR", data),
                ("TIDEMARK_MASTER_KEY", key.as_str()),
            ];
            vars.retain(|(k, _)| *k != name);
            vars.push((name, value));
            let err = config(&vars).expect_err(name);
            assert!(err.to_string().contains(name), "{err}");
        }
    }

    #[test]
    fn secrets_are_redacted_in_debug_and_in_the_summary() {
        let key = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
        let c = config(&[
            ("TIDEMARK_MASTER_KEY", key.as_str()),
            ("DATABASE_URL", "postgres://u:hunter2@db/tidemark"),
            ("TIDEMARK_SMTP_URL", "smtps://u:mailpass@mail:465"),
        ])
        .unwrap();
        let debug = format!("{c:?}");
        assert!(!debug.contains("hunter2"), "{debug}");
        assert!(!debug.contains(&key), "{debug}");
        assert!(debug.contains("<redacted>"));
        let summary = c.summary();
        assert_eq!(summary.len(), 12, "one line per concern");
        for (concern, line) in summary {
            for secret in ["hunter2", "mailpass", key.as_str()] {
                assert!(!line.contains(secret), "{concern}: {line}");
            }
        }
    }
}
