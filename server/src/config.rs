//! Every setting the server reads from its environment, parsed in this one place.
//! The README's configuration table documents the same variables.

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use base64::Engine as _;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Environment {
    Development,
    Production,
}

/// The 32-byte key that encrypts stored secrets and session cookies. Never printed.
#[derive(Clone)]
pub struct MasterKey([u8; 32]);

impl MasterKey {
    pub fn parse_base64(text: &str) -> Result<Self, ConfigError> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|_| ConfigError::MasterKeyFormat)?;
        let key: [u8; 32] = bytes.try_into().map_err(|_| ConfigError::MasterKeyFormat)?;
        Ok(Self(key))
    }

    pub fn generate() -> Self {
        let mut key = [0u8; 32];
        rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut key);
        Self(key)
    }

    pub fn expose(&self) -> &[u8; 32] {
        &self.0
    }

    fn to_base64(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(self.0)
    }
}

tidemark_domain::redacted_debug!(MasterKey);

/// Where the master key came from, so start-up can warn about a development key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MasterKeySource {
    Environment,
    /// Generated (or re-read) in development at this path.
    DevelopmentFile(PathBuf),
}

/// `TIDEMARK_MIGRATE`: `auto` (the default) applies pending migrations at start; `never` leaves
/// the schema to `tidemark-server migrate` (a deploy step of its own), and `serve` answers
/// `/readyz` with 503 until the schema is current.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigratePolicy {
    Auto,
    Never,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub environment: Environment,
    /// Whether `serve` and the commands that write apply pending migrations.
    pub migrate: MigratePolicy,
    pub database_url: DatabaseUrl,
    pub site_addr: SocketAddr,
    pub base_url: String,
    pub dashboard_url: String,
    pub data_dir: PathBuf,
    pub master_key: MasterKey,
    pub master_key_source: MasterKeySource,
    /// `TIDEMARK_MASTER_KEY_PREVIOUS`: decrypts what the previous key sealed, never seals.
    /// Set while a rotation is under way (see `rotate-master-key`).
    pub master_key_previous: Option<MasterKey>,
    /// Directory of the compiled site (`/pkg`, favicon, …).
    pub site_root: String,
    /// Dashboard writes (appended scans) per rolling minute per account.
    pub writes_per_minute: u32,
    /// Resend requests per rolling minute per source IP before a ban.
    pub resend_per_minute: u32,
    pub resend_ban_seconds: u32,
    /// Peers whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// SMTP server for outgoing mail; without it mail is written as `.eml` files.
    pub smtp_url: Option<SmtpUrl>,
    pub mail_from: String,
    /// How long a replica may answer `validate` from memory; 0 turns the cache off.
    pub validation_cache_ms: u32,
    /// The OpenID Connect provider browsers sign in with, if configured.
    pub oidc: Option<OidcConfig>,
    /// Dashboard session inactivity limit and absolute lifetime.
    pub session_idle_seconds: u32,
    pub session_max_seconds: u32,
    /// Development only: seed a demo account whose admin can sign in at once.
    pub dev_demo: bool,
    /// The one nameserver SSO domain-verification look-ups ask (`host:port`); the system's
    /// resolvers (`/etc/resolv.conf`) when unset.
    pub dns_resolver: Option<SocketAddr>,
    /// How long a client may take to send a request's headers, and how long a kept-alive
    /// connection may sit idle before its next request (`TIDEMARK_HEADER_TIMEOUT_SECONDS`).
    pub header_timeout_seconds: u32,
    /// How long a request body may pause between two chunks
    /// (`TIDEMARK_BODY_TIMEOUT_SECONDS`).
    pub body_timeout_seconds: u32,
    /// The longest a `/v1` request may take in all (`TIDEMARK_API_TIMEOUT_SECONDS`).
    pub api_timeout_seconds: u32,
    /// Sign-in steps (`POST /auth/signin`, the SAML ACS) per rolling minute per client address
    /// (`TIDEMARK_SIGNIN_PER_MINUTE`); over it, the address is refused for a minute.
    pub signin_per_minute: u32,
    /// SCIM requests per rolling minute per account token (`TIDEMARK_SCIM_PER_MINUTE`),
    /// shared by replicas; over it, `429` with `Retry-After`.
    pub scim_per_minute: u32,
    /// Where `/metrics` is served instead of the main address (`TIDEMARK_METRICS_ADDR`), so it
    /// need not be public; unset: on the main address.
    pub metrics_addr: Option<SocketAddr>,
    /// License mails one address receives per hour at most (`TIDEMARK_RESEND_PER_RECIPIENT_PER_HOUR`);
    /// further requests are answered alike and dropped at delivery.
    pub resend_per_recipient_per_hour: u32,
    /// The installation's housekeeping policy (`TIDEMARK_HOUSEKEEPING`: `name=age` pairs over
    /// the defaults, e.g. `keep_all=2d,monthly_after=104w`, see `domain::housekeeping`), or
    /// `None` when housekeeping is off (`TIDEMARK_HOUSEKEEPING=off`).
    pub housekeeping: Option<tidemark_domain::housekeeping::Policy>,
    /// Minutes between housekeeping passes (`TIDEMARK_HOUSEKEEPING_INTERVAL_MINUTES`,
    /// default 60); one replica at a time runs them.
    pub housekeeping_interval_minutes: u32,
    /// Connections this replica's database pool opens at most (`TIDEMARK_DB_MAX_CONNECTIONS`,
    /// default 16; on SQLite, readers beside the one writer).
    pub db_max_connections: u32,
    /// How long a request waits for a database connection before it is answered `503
    /// database_unavailable` (`TIDEMARK_DB_ACQUIRE_TIMEOUT_SECONDS`, default 3).
    pub db_acquire_timeout_seconds: u32,
    /// How long a request waits on one database call of a connection it holds
    /// (`TIDEMARK_DB_STATEMENT_TIMEOUT_SECONDS`, default 8); a write goes on behind the
    /// answer, and its retry is answered as a replay.
    pub db_statement_timeout_seconds: u32,
    /// Push body bytes, in MiB, this replica holds at once (`TIDEMARK_PUSH_BUDGET_MIB`); past
    /// it pushes are answered `503 server_busy`. At least 16 (one push of the largest size).
    pub push_budget_mib: u32,
    /// `serve` starts even though stored secrets are sealed under a master key it was not
    /// given (`TIDEMARK_ALLOW_UNKNOWN_MASTER_KEYS=1`): for a deliberate partial recovery,
    /// where what the lost key sealed is given up.
    pub allow_unknown_master_keys: bool,
    /// Webhooks may go to loopback, private and link-local addresses
    /// (`TIDEMARK_WEBHOOK_ALLOW_PRIVATE=1`): for a receiver on the operator's own network,
    /// and for tests. Off by default, so a webhook URL cannot reach into that network.
    pub webhook_allow_private: bool,
    /// The pause before a failed webhook delivery's first retry, in milliseconds
    /// (`TIDEMARK_WEBHOOK_RETRY_BASE_MS`, default 10 000); each next pause is three times
    /// longer, at most four hours, for at least a day.
    pub webhook_retry_base_ms: u32,
    /// How long a webhook receiver has to answer (`TIDEMARK_WEBHOOK_TIMEOUT_SECONDS`,
    /// default 10, at most 30).
    pub webhook_timeout_seconds: u32,
    /// The one audience a CI job's token must carry to be exchanged
    /// (`TIDEMARK_OIDC_AUDIENCE`, default the base URL).
    pub oidc_audience: String,
    /// Trusted publishers may name `http://` issuers on loopback or private addresses
    /// (`TIDEMARK_OIDC_ALLOW_PRIVATE_ISSUERS=1`): for a lab issuer and for tests. Off by
    /// default, so an issuer URL cannot reach into the operator's network.
    pub oidc_allow_private_issuers: bool,
    /// More certificate authorities the CI token issuers' keys are fetched with
    /// (`TIDEMARK_OIDC_CA_FILE`, a PEM bundle), beside the system's trust store: a
    /// self-hosted issuer (GitHub Enterprise Server, self-managed GitLab) on a private CA.
    pub oidc_ca_pem: Option<Vec<u8>>,
    /// How long a rotated-in verdict-signing key is published before it signs
    /// (`TIDEMARK_SIGNING_KEY_OVERLAP`, default 7d), in milliseconds.
    pub signing_key_overlap_ms: tidemark_domain::Millis,
}

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
    pub fn expose(&self) -> &str {
        &self.0
    }
}

tidemark_domain::redacted_debug!(ClientSecret);

/// An SMTP URL may carry a password: keep it out of logs.
#[derive(Clone)]
pub struct SmtpUrl(String);

impl SmtpUrl {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

tidemark_domain::redacted_debug!(SmtpUrl);

/// A database URL may carry a password: keep it out of logs.
#[derive(Clone)]
pub struct DatabaseUrl(String);

impl DatabaseUrl {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

// Not `redacted_debug!`: the scheme says which backend without giving anything away.
impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = self.0.split(':').next().unwrap_or("");
        write!(f, "DatabaseUrl({scheme}://<redacted>)")
    }
}

/// `name=age` pairs (comma-separated) over the default housekeeping policy, checked once
/// after every pair is applied.
pub fn parse_housekeeping(pairs: &str) -> Result<tidemark_domain::housekeeping::Policy, String> {
    tidemark_domain::housekeeping::Policy::default().with_pairs(pairs)
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

/// One environment variable the server reads, as `--help` and `config check` name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variable {
    pub name: &'static str,
    pub default: &'static str,
    pub about: &'static str,
    /// Its value is never printed; `<NAME>_FILE` may give it instead.
    pub secret: bool,
}

const fn setting(name: &'static str, default: &'static str, about: &'static str) -> Variable {
    Variable {
        name,
        default,
        about,
        secret: false,
    }
}

const fn secret(name: &'static str, default: &'static str, about: &'static str) -> Variable {
    Variable {
        name,
        default,
        about,
        secret: true,
    }
}

/// Every variable [`Config::from_lookup`] reads (a test holds the two together, and the
/// README's table to this one).
pub const VARIABLES: &[Variable] = &[
    secret(
        "DATABASE_URL",
        "sqlite://$TIDEMARK_DATA_DIR/tidemark.db",
        "sqlite://… or postgres://…",
    ),
    setting(
        "LEPTOS_SITE_ADDR",
        "127.0.0.1:3000",
        "address the server listens on",
    ),
    setting(
        "LEPTOS_SITE_ROOT",
        "target/site",
        "the built site (WASM, CSS, favicon)",
    ),
    setting("TIDEMARK_ENV", "development", "development or production"),
    setting(
        "TIDEMARK_BASE_URL",
        "http://$LEPTOS_SITE_ADDR",
        "public address of the API",
    ),
    setting(
        "TIDEMARK_DASHBOARD_URL",
        "$TIDEMARK_BASE_URL",
        "public address of the dashboard",
    ),
    setting(
        "TIDEMARK_DATA_DIR",
        "data",
        "SQLite file, development master key, mail files",
    ),
    secret(
        "TIDEMARK_MASTER_KEY",
        "(development: $TIDEMARK_DATA_DIR/master.key)",
        "base64 of 32 random bytes; required in production",
    ),
    secret(
        "TIDEMARK_MASTER_KEY_PREVIOUS",
        "",
        "the key being rotated away from (decrypt only)",
    ),
    setting(
        "TIDEMARK_ALLOW_UNKNOWN_MASTER_KEYS",
        "",
        "1: serve although stored secrets are sealed under a key not given",
    ),
    setting(
        "TIDEMARK_MIGRATE",
        "auto",
        "auto or never (migrations left to `migrate`)",
    ),
    setting(
        "TIDEMARK_WRITES_PER_MINUTE",
        "5",
        "dashboard writes per minute per account",
    ),
    setting(
        "TIDEMARK_RESEND_PER_MINUTE",
        "3",
        "license resend requests per minute per client address",
    ),
    setting(
        "TIDEMARK_RESEND_PER_RECIPIENT_PER_HOUR",
        "3",
        "license mails one address receives per hour",
    ),
    setting(
        "TIDEMARK_RESEND_BAN_SECONDS",
        "900",
        "ban after exceeding the resend rate",
    ),
    setting(
        "TIDEMARK_TRUSTED_PROXIES",
        "",
        "CIDRs of reverse proxies whose forwarding headers are believed",
    ),
    setting(
        "TIDEMARK_OIDC_ISSUER",
        "",
        "OpenID Connect issuer URL for dashboard sign-in",
    ),
    setting(
        "TIDEMARK_OIDC_CLIENT_ID",
        "",
        "the client registered at that provider",
    ),
    secret("TIDEMARK_OIDC_CLIENT_SECRET", "", "its secret"),
    setting(
        "TIDEMARK_DNS_RESOLVER",
        "(system resolvers)",
        "ip:port of the nameserver for SSO domain checks",
    ),
    setting(
        "TIDEMARK_SESSION_IDLE_SECONDS",
        "86400",
        "sessions end after this much inactivity",
    ),
    setting("TIDEMARK_SESSION_MAX_SECONDS", "604800", "and at this age"),
    setting(
        "TIDEMARK_DEV_DEMO",
        "",
        "1: seed the demo account (development only)",
    ),
    secret(
        "TIDEMARK_SMTP_URL",
        "(mail written as .eml files)",
        "smtp://, smtp://…?tls=required or smtps://",
    ),
    setting(
        "TIDEMARK_VALIDATION_CACHE_MS",
        "2000",
        "how long a replica answers validate from memory",
    ),
    setting(
        "TIDEMARK_MAIL_FROM",
        "Tidemark <no-reply@tidemark.localhost>",
        "sender of outgoing mail",
    ),
    setting(
        "TIDEMARK_SIGNIN_PER_MINUTE",
        "60",
        "sign-in steps per minute per client address",
    ),
    setting(
        "TIDEMARK_SCIM_PER_MINUTE",
        "600",
        "SCIM requests per minute per account token",
    ),
    setting(
        "TIDEMARK_METRICS_ADDR",
        "(the main address)",
        "ip:port to serve /metrics on instead",
    ),
    setting(
        "TIDEMARK_HEADER_TIMEOUT_SECONDS",
        "30",
        "time to send request headers; keep-alive idle time",
    ),
    setting(
        "TIDEMARK_BODY_TIMEOUT_SECONDS",
        "30",
        "longest pause inside a request body",
    ),
    setting(
        "TIDEMARK_DB_MAX_CONNECTIONS",
        "16",
        "database connections one replica opens at most",
    ),
    setting(
        "TIDEMARK_HOUSEKEEPING",
        "keep_all=1d,weekly_after=30d,monthly_after=365d,pull_request_after=30d,inactive_branch_after=30d",
        "how long scans keep their findings (name=age pairs), or off",
    ),
    setting(
        "TIDEMARK_HOUSEKEEPING_INTERVAL_MINUTES",
        "60",
        "minutes between housekeeping passes (one replica at a time)",
    ),
    setting(
        "TIDEMARK_DB_ACQUIRE_TIMEOUT_SECONDS",
        "3",
        "wait for a database connection before 503",
    ),
    setting(
        "TIDEMARK_DB_STATEMENT_TIMEOUT_SECONDS",
        "8",
        "wait on one database call before 503",
    ),
    setting(
        "TIDEMARK_PUSH_BUDGET_MIB",
        "64",
        "push body bytes one replica holds at once",
    ),
    setting("TIDEMARK_API_TIMEOUT_SECONDS", "60", "longest /v1 request"),
    setting(
        "TIDEMARK_WEBHOOK_ALLOW_PRIVATE",
        "",
        "1: webhooks may go to private addresses",
    ),
    setting(
        "TIDEMARK_WEBHOOK_RETRY_BASE_MS",
        "10000",
        "pause before a failed delivery's first retry",
    ),
    setting(
        "TIDEMARK_WEBHOOK_TIMEOUT_SECONDS",
        "10",
        "how long a webhook receiver has to answer",
    ),
    setting(
        "TIDEMARK_OIDC_AUDIENCE",
        "the base URL",
        "the one audience a CI job's token must carry (keyless CI)",
    ),
    setting(
        "TIDEMARK_OIDC_ALLOW_PRIVATE_ISSUERS",
        "",
        "1: CI token issuers may be http:// and on private addresses (a lab)",
    ),
    setting(
        "TIDEMARK_OIDC_CA_FILE",
        "",
        "a PEM file of certificate authorities CI token issuers may be signed by, beside the system's",
    ),
    setting(
        "TIDEMARK_SIGNING_KEY_OVERLAP",
        "7d",
        "how long a rotated-in verdict-signing key is published before it signs (h, d, w; 0: at once)",
    ),
];

/// A signing-key overlap: an age (`7d`, `48h`, `2w`), or `0` for a key that signs at once
/// (when the current key is compromised).
pub fn parse_overlap(text: &str) -> Result<tidemark_domain::Millis, String> {
    if text.trim() == "0" {
        return Ok(0);
    }
    tidemark_domain::retention::Age::parse(text).map(|a| a.millis())
}

/// The `--help` text that lists [`VARIABLES`].
pub fn variables_help() -> String {
    let mut out = String::from(
        "Environment variables (secrets marked *, each may be given as <NAME>_FILE):\n",
    );
    for v in VARIABLES {
        let star = if v.secret { "*" } else { "" };
        let default = if v.default.is_empty() {
            String::new()
        } else {
            format!(" [default: {}]", v.default)
        };
        out.push_str(&format!(
            "  {}{star}\n          {}{default}\n",
            v.name, v.about
        ));
    }
    out.push_str("  RUST_LOG\n          log filter [default: info]\n");
    out
}

/// The settings that hold secrets. Each may instead be given as `<NAME>_FILE`, the path of a
/// file holding the value (the container convention: Docker and Kubernetes secrets are
/// mounted as files, which keeps them out of the process environment and `docker inspect`).
pub const SECRET_VARIABLES: [&str; 5] = [
    "DATABASE_URL",
    "TIDEMARK_MASTER_KEY",
    "TIDEMARK_MASTER_KEY_PREVIOUS",
    "TIDEMARK_OIDC_CLIENT_SECRET",
    "TIDEMARK_SMTP_URL",
];

/// The secret settings given as `<NAME>_FILE`, read (one trailing line break dropped). Both
/// forms at once is an error rather than a silent choice. Errors name the variable and the
/// path, never the content.
fn secrets_from_files(
    lookup: &impl Fn(&str) -> Option<String>,
) -> Result<std::collections::HashMap<&'static str, String>, ConfigError> {
    let set = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
    let mut values = std::collections::HashMap::new();
    for name in SECRET_VARIABLES {
        let file_var = format!("{name}_FILE");
        let Some(path) = set(&file_var) else {
            continue;
        };
        if set(name).is_some() {
            return Err(ConfigError::Invalid {
                name,
                reason: format!("set {name} or {file_var}, not both"),
            });
        }
        let text = std::fs::read_to_string(&path).map_err(|e| ConfigError::Invalid {
            name,
            reason: format!("could not read {file_var} ({path}): {e}"),
        })?;
        let value = text
            .strip_suffix('\n')
            .map(|t| t.strip_suffix('\r').unwrap_or(t))
            .unwrap_or(&text);
        values.insert(name, value.to_owned());
    }
    Ok(values)
}

impl Config {
    /// How this replica's pools wait for the database.
    pub fn pool_settings(&self) -> tidemark_store::PoolSettings {
        tidemark_store::PoolSettings {
            max_connections: self.db_max_connections,
            acquire_timeout: std::time::Duration::from_secs(self.db_acquire_timeout_seconds.into()),
        }
    }

    /// How long a request waits on one database call (see `tidemark_store::fault`).
    pub fn db_statement_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.db_statement_timeout_seconds.into())
    }

    /// Reads the configuration from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the configuration through `lookup` (the environment, or a map in tests).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let from_files = secrets_from_files(&lookup)?;
        let var = |name: &str| {
            from_files
                .get(name)
                .cloned()
                .or_else(|| lookup(name))
                .filter(|v| !v.trim().is_empty())
        };

        let environment = match var("TIDEMARK_ENV").as_deref() {
            None | Some("development") => Environment::Development,
            Some("production") => Environment::Production,
            Some(other) => {
                return Err(ConfigError::Invalid {
                    name: "TIDEMARK_ENV",
                    reason: format!("expected development or production, got {other:?}"),
                })
            }
        };
        let migrate = match var("TIDEMARK_MIGRATE").as_deref() {
            None | Some("auto") => MigratePolicy::Auto,
            Some("never") => MigratePolicy::Never,
            Some(other) => {
                return Err(ConfigError::Invalid {
                    name: "TIDEMARK_MIGRATE",
                    reason: format!("expected auto or never, got {other:?}"),
                })
            }
        };
        let data_dir = PathBuf::from(var("TIDEMARK_DATA_DIR").unwrap_or_else(|| "data".into()));
        let database_url = DatabaseUrl(
            var("DATABASE_URL")
                .unwrap_or_else(|| format!("sqlite://{}", data_dir.join("tidemark.db").display())),
        );
        let site_addr: SocketAddr = var("LEPTOS_SITE_ADDR")
            .unwrap_or_else(|| "127.0.0.1:3000".into())
            .parse()
            .map_err(|e: std::net::AddrParseError| ConfigError::Invalid {
                name: "LEPTOS_SITE_ADDR",
                reason: e.to_string(),
            })?;
        let base_url = match var("TIDEMARK_BASE_URL") {
            Some(url) => parse_url("TIDEMARK_BASE_URL", &url)?,
            None => format!("http://{site_addr}"),
        };
        let dashboard_url = match var("TIDEMARK_DASHBOARD_URL") {
            Some(url) => parse_url("TIDEMARK_DASHBOARD_URL", &url)?,
            None => base_url.clone(),
        };
        let (master_key, master_key_source) = match var("TIDEMARK_MASTER_KEY") {
            Some(text) => (
                MasterKey::parse_base64(&text)?,
                MasterKeySource::Environment,
            ),
            None if environment == Environment::Production => {
                return Err(ConfigError::MasterKeyMissing)
            }
            None => {
                let path = data_dir.join("master.key");
                let key = load_or_create_dev_key(&path)?;
                (key, MasterKeySource::DevelopmentFile(path))
            }
        };
        let master_key_previous = match var("TIDEMARK_MASTER_KEY_PREVIOUS") {
            None => None,
            Some(text) => {
                let previous =
                    MasterKey::parse_base64(&text).map_err(|_| ConfigError::Invalid {
                        name: "TIDEMARK_MASTER_KEY_PREVIOUS",
                        reason: "must be the base64 encoding of exactly 32 bytes".into(),
                    })?;
                // Almost certainly a copy of the wrong value: the rotation would look done
                // while nothing changed.
                if previous.expose() == master_key.expose() {
                    return Err(ConfigError::Invalid {
                        name: "TIDEMARK_MASTER_KEY_PREVIOUS",
                        reason: "is the same key as TIDEMARK_MASTER_KEY".into(),
                    });
                }
                Some(previous)
            }
        };
        let site_root = var("LEPTOS_SITE_ROOT").unwrap_or_else(|| "target/site".into());
        let writes_per_minute = parse_number(&var, "TIDEMARK_WRITES_PER_MINUTE", 5)?;
        let resend_per_minute = parse_number(&var, "TIDEMARK_RESEND_PER_MINUTE", 3)?;
        let resend_ban_seconds = parse_number(&var, "TIDEMARK_RESEND_BAN_SECONDS", 900)?;
        let trusted_proxies = match var("TIDEMARK_TRUSTED_PROXIES") {
            None => Vec::new(),
            Some(list) => list
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(parse_cidr)
                .collect::<Result<_, _>>()?,
        };
        let smtp_url = match var("TIDEMARK_SMTP_URL") {
            Some(url) if url.starts_with("smtp://") || url.starts_with("smtps://") => {
                Some(SmtpUrl(url))
            }
            Some(_) => {
                return Err(ConfigError::Invalid {
                    name: "TIDEMARK_SMTP_URL",
                    reason: "expected smtp://host:port or smtps://host:port".into(),
                })
            }
            None => None,
        };
        let validation_cache_ms = match var("TIDEMARK_VALIDATION_CACHE_MS") {
            None => 2000,
            Some(text) => text
                .trim()
                .parse::<u32>()
                .map_err(|_| ConfigError::Invalid {
                    name: "TIDEMARK_VALIDATION_CACHE_MS",
                    reason: format!("expected milliseconds (0 turns the cache off), got {text:?}"),
                })?,
        };
        let mail_from = var("TIDEMARK_MAIL_FROM")
            .unwrap_or_else(|| "Tidemark <no-reply@tidemark.localhost>".into());
        if mail_from.parse::<lettre::message::Mailbox>().is_err() {
            return Err(ConfigError::Invalid {
                name: "TIDEMARK_MAIL_FROM",
                reason: "expected a mailbox such as Tidemark <no-reply@example.com>".into(),
            });
        }

        let oidc = match (
            var("TIDEMARK_OIDC_ISSUER"),
            var("TIDEMARK_OIDC_CLIENT_ID"),
            var("TIDEMARK_OIDC_CLIENT_SECRET"),
        ) {
            (None, None, None) => None,
            (Some(issuer), Some(client_id), Some(secret)) => Some(OidcConfig {
                issuer: parse_url("TIDEMARK_OIDC_ISSUER", &issuer)?,
                client_id,
                client_secret: ClientSecret(secret),
            }),
            _ => {
                return Err(ConfigError::Invalid {
                    name: "TIDEMARK_OIDC_ISSUER",
                    reason: "set TIDEMARK_OIDC_ISSUER, TIDEMARK_OIDC_CLIENT_ID and \
                             TIDEMARK_OIDC_CLIENT_SECRET together (or none of them)"
                        .into(),
                })
            }
        };
        let session_idle_seconds = parse_number(&var, "TIDEMARK_SESSION_IDLE_SECONDS", 86_400)?;
        let session_max_seconds = parse_number(&var, "TIDEMARK_SESSION_MAX_SECONDS", 604_800)?;
        let dev_demo = match var("TIDEMARK_DEV_DEMO").as_deref() {
            None | Some("0") | Some("false") => false,
            Some("1") | Some("true") if environment == Environment::Production => {
                return Err(ConfigError::Invalid {
                    name: "TIDEMARK_DEV_DEMO",
                    reason: "the demo account is for development only; it cannot be enabled \
                             with TIDEMARK_ENV=production"
                        .into(),
                })
            }
            Some("1") | Some("true") => true,
            Some(other) => {
                return Err(ConfigError::Invalid {
                    name: "TIDEMARK_DEV_DEMO",
                    reason: format!("expected 1 or 0, got {other:?}"),
                })
            }
        };

        let dns_resolver = parse_socket_addr(&var, "TIDEMARK_DNS_RESOLVER", "127.0.0.1:53")?;
        let metrics_addr = parse_socket_addr(&var, "TIDEMARK_METRICS_ADDR", "127.0.0.1:9090")?;
        let header_timeout_seconds = parse_number(&var, "TIDEMARK_HEADER_TIMEOUT_SECONDS", 30)?;
        let body_timeout_seconds = parse_number(&var, "TIDEMARK_BODY_TIMEOUT_SECONDS", 30)?;
        let api_timeout_seconds = parse_number(&var, "TIDEMARK_API_TIMEOUT_SECONDS", 60)?;
        if header_timeout_seconds > 30 {
            return Err(ConfigError::Invalid {
                name: "TIDEMARK_HEADER_TIMEOUT_SECONDS",
                reason: format!(
                    "at most 30 seconds (a longer wait only helps slow-header attacks), got \
                     {header_timeout_seconds}"
                ),
            });
        }
        let signin_per_minute = parse_number(&var, "TIDEMARK_SIGNIN_PER_MINUTE", 60)?;
        let scim_per_minute = parse_number(&var, "TIDEMARK_SCIM_PER_MINUTE", 600)?;
        let resend_per_recipient_per_hour =
            parse_number(&var, "TIDEMARK_RESEND_PER_RECIPIENT_PER_HOUR", 3)?;
        let housekeeping = match var("TIDEMARK_HOUSEKEEPING").as_deref().map(str::trim) {
            Some("off") => None,
            None | Some("") => Some(tidemark_domain::housekeeping::Policy::default()),
            Some(pairs) => {
                Some(
                    parse_housekeeping(pairs).map_err(|reason| ConfigError::Invalid {
                        name: "TIDEMARK_HOUSEKEEPING",
                        reason,
                    })?,
                )
            }
        };
        let housekeeping_interval_minutes =
            parse_number(&var, "TIDEMARK_HOUSEKEEPING_INTERVAL_MINUTES", 60)?;
        if housekeeping_interval_minutes == 0 {
            return Err(ConfigError::Invalid {
                name: "TIDEMARK_HOUSEKEEPING_INTERVAL_MINUTES",
                reason: "at least 1 (TIDEMARK_HOUSEKEEPING=off turns housekeeping off)".into(),
            });
        }
        let db_max_connections = parse_number(&var, "TIDEMARK_DB_MAX_CONNECTIONS", 16)?;
        if !(1..=1000).contains(&db_max_connections) {
            return Err(ConfigError::Invalid {
                name: "TIDEMARK_DB_MAX_CONNECTIONS",
                reason: format!("between 1 and 1000, got {db_max_connections}"),
            });
        }
        let db_acquire_timeout_seconds =
            parse_number(&var, "TIDEMARK_DB_ACQUIRE_TIMEOUT_SECONDS", 3)?;
        let db_statement_timeout_seconds =
            parse_number(&var, "TIDEMARK_DB_STATEMENT_TIMEOUT_SECONDS", 8)?;
        for (name, value) in [
            (
                "TIDEMARK_DB_ACQUIRE_TIMEOUT_SECONDS",
                db_acquire_timeout_seconds,
            ),
            (
                "TIDEMARK_DB_STATEMENT_TIMEOUT_SECONDS",
                db_statement_timeout_seconds,
            ),
        ] {
            // Past a minute a CI job or a load balancer has given up long before the answer.
            if value > 60 {
                return Err(ConfigError::Invalid {
                    name,
                    reason: format!("at most 60 seconds, got {value}"),
                });
            }
        }
        let push_budget_mib = parse_number(&var, "TIDEMARK_PUSH_BUDGET_MIB", 64)?;
        if push_budget_mib < 16 {
            return Err(ConfigError::Invalid {
                name: "TIDEMARK_PUSH_BUDGET_MIB",
                reason: format!("at least 16 (one push may be 16 MiB), got {push_budget_mib}"),
            });
        }
        let webhook_allow_private = parse_flag(&var, "TIDEMARK_WEBHOOK_ALLOW_PRIVATE")?;
        let allow_unknown_master_keys = parse_flag(&var, "TIDEMARK_ALLOW_UNKNOWN_MASTER_KEYS")?;
        let webhook_retry_base_ms = parse_number(&var, "TIDEMARK_WEBHOOK_RETRY_BASE_MS", 10_000)?;
        let webhook_timeout_seconds = parse_number(&var, "TIDEMARK_WEBHOOK_TIMEOUT_SECONDS", 10)?;
        if webhook_timeout_seconds > 30 {
            return Err(ConfigError::Invalid {
                name: "TIDEMARK_WEBHOOK_TIMEOUT_SECONDS",
                reason: format!("at most 30 seconds, got {webhook_timeout_seconds}"),
            });
        }
        let oidc_audience = var("TIDEMARK_OIDC_AUDIENCE")
            .map(|a| a.trim().to_owned())
            .filter(|a| !a.is_empty())
            .unwrap_or_else(|| base_url.clone());
        if oidc_audience.len() > 255 || oidc_audience.chars().any(char::is_control) {
            return Err(ConfigError::Invalid {
                name: "TIDEMARK_OIDC_AUDIENCE",
                reason: "at most 255 characters, no control characters".into(),
            });
        }
        let oidc_allow_private_issuers = parse_flag(&var, "TIDEMARK_OIDC_ALLOW_PRIVATE_ISSUERS")?;
        let oidc_ca_pem = match var("TIDEMARK_OIDC_CA_FILE").filter(|p| !p.trim().is_empty()) {
            None => None,
            Some(path) => Some(read_ca_file(&path).map_err(|reason| ConfigError::Invalid {
                name: "TIDEMARK_OIDC_CA_FILE",
                reason,
            })?),
        };
        let signing_key_overlap_ms = parse_overlap(
            var("TIDEMARK_SIGNING_KEY_OVERLAP")
                .as_deref()
                .unwrap_or(tidemark_domain::signing::DEFAULT_OVERLAP),
        )
        .map_err(|reason| ConfigError::Invalid {
            name: "TIDEMARK_SIGNING_KEY_OVERLAP",
            reason,
        })?;
        Ok(Config {
            signing_key_overlap_ms,
            oidc_audience,
            oidc_allow_private_issuers,
            oidc_ca_pem,
            allow_unknown_master_keys,
            webhook_allow_private,
            webhook_retry_base_ms,
            webhook_timeout_seconds,
            push_budget_mib,
            housekeeping,
            housekeeping_interval_minutes,
            db_max_connections,
            db_acquire_timeout_seconds,
            db_statement_timeout_seconds,
            resend_per_recipient_per_hour,
            metrics_addr,
            signin_per_minute,
            scim_per_minute,
            header_timeout_seconds,
            body_timeout_seconds,
            api_timeout_seconds,
            dns_resolver,
            oidc,
            session_idle_seconds,
            session_max_seconds,
            dev_demo,
            environment,
            migrate,
            database_url,
            site_addr,
            base_url,
            dashboard_url,
            data_dir,
            master_key,
            master_key_source,
            master_key_previous,
            site_root,
            writes_per_minute,
            resend_per_minute,
            resend_ban_seconds,
            trusted_proxies,
            smtp_url,
            mail_from,
            validation_cache_ms,
        })
    }
}

/// `1`/`true` or `0`/`false`; unset is off.
fn parse_flag(
    var: &impl Fn(&str) -> Option<String>,
    name: &'static str,
) -> Result<bool, ConfigError> {
    match var(name).as_deref().map(str::trim) {
        None | Some("0") | Some("false") => Ok(false),
        Some("1") | Some("true") => Ok(true),
        Some(other) => Err(ConfigError::Invalid {
            name,
            reason: format!("expected 1 or 0, got {other:?}"),
        }),
    }
}

/// A positive whole number, or `default` when unset.
/// An optional `ip:port` setting; `example` shows the expected form in the error.
fn parse_socket_addr(
    var: &impl Fn(&str) -> Option<String>,
    name: &'static str,
    example: &str,
) -> Result<Option<SocketAddr>, ConfigError> {
    var(name)
        .map(|text| {
            text.trim()
                .parse::<SocketAddr>()
                .map_err(|_| ConfigError::Invalid {
                    name,
                    reason: format!("expected ip:port such as {example}, got {text:?}"),
                })
        })
        .transpose()
}

fn parse_number(
    var: &impl Fn(&str) -> Option<String>,
    name: &'static str,
    default: u32,
) -> Result<u32, ConfigError> {
    match var(name) {
        None => Ok(default),
        Some(text) => match text.trim().parse::<u32>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(ConfigError::Invalid {
                name,
                reason: format!("expected a positive whole number, got {text:?}"),
            }),
        },
    }
}

/// A CIDR (`10.0.0.0/8`) or a single address (`10.1.2.3`).
fn parse_cidr(text: &str) -> Result<ipnet::IpNet, ConfigError> {
    text.parse::<ipnet::IpNet>()
        .or_else(|_| text.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| ConfigError::Invalid {
            name: "TIDEMARK_TRUSTED_PROXIES",
            reason: format!("{text:?} is not an IP address or CIDR"),
        })
}

/// Accepts an absolute http(s) URL and drops a trailing slash, so paths can be appended.
fn parse_url(name: &'static str, value: &str) -> Result<String, ConfigError> {
    let value = value.trim().trim_end_matches('/');
    let rest = value
        .strip_prefix("https://")
        .or_else(|| value.strip_prefix("http://"));
    match rest {
        Some(host) if !host.is_empty() && !host.contains(char::is_whitespace) => {
            Ok(value.to_string())
        }
        _ => Err(ConfigError::Invalid {
            name,
            reason: "expected an absolute http:// or https:// URL".into(),
        }),
    }
}

/// Development convenience: a key generated once and kept in the data directory (mode 0600),
/// so sessions and stored secrets survive restarts.
fn load_or_create_dev_key(path: &Path) -> Result<MasterKey, ConfigError> {
    let io_err = |source| ConfigError::MasterKeyFile {
        path: path.display().to_string(),
        source,
    };
    match std::fs::read_to_string(path) {
        Ok(text) => MasterKey::parse_base64(&text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(io_err)?;
            }
            let key = MasterKey::generate();
            write_private_file(path, key.to_base64().as_bytes()).map_err(io_err)?;
            Ok(key)
        }
        Err(e) => Err(io_err(e)),
    }
}

fn write_private_file(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(contents)?;
    file.sync_all()
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

    /// Issue 44: `keep_all=45d,weekly_after=90d` is a valid policy; checked pair by pair over
    /// the defaults (weekly_after 30d) it stopped the server at start.
    #[test]
    fn a_housekeeping_policy_is_checked_whole_whatever_the_order_of_its_pairs() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().display().to_string();
        let config = |pairs: &str| {
            super::Config::from_lookup(|name| match name {
                "TIDEMARK_DATA_DIR" => Some(data.clone()),
                "TIDEMARK_HOUSEKEEPING" => Some(pairs.to_owned()),
                _ => None,
            })
        };
        for pairs in [
            "keep_all=45d,weekly_after=90d",
            "weekly_after=90d, keep_all=45d",
        ] {
            let policy = config(pairs).unwrap().housekeeping.unwrap();
            assert_eq!(
                (policy.keep_all, policy.weekly_after),
                (45 * 86_400_000, 90 * 86_400_000),
                "{pairs}"
            );
        }
        let refused = config("weekly_after=90d,keep_all=100d").err().unwrap();
        assert_eq!(
            refused.to_string(),
            "TIDEMARK_HOUSEKEEPING is not valid: keep_all (100d) must not be longer than \
             weekly_after (90d)"
        );
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
        let readme =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
        for v in VARIABLES {
            assert!(
                readme.contains(&format!("| `{}` |", v.name)),
                "README lacks {}",
                v.name
            );
        }
        let help = variables_help();
        assert!(help.contains("TIDEMARK_MASTER_KEY_PREVIOUS*"), "{help}");
    }

    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn production_refuses_to_start_without_a_master_key() {
        let dir = tempfile::tempdir().unwrap();
        let err = config(&[
            ("TIDEMARK_ENV", "production"),
            ("TIDEMARK_DATA_DIR", dir.path().to_str().unwrap()),
        ])
        .unwrap_err();
        assert!(matches!(err, ConfigError::MasterKeyMissing), "{err}");
        assert!(!dir.path().join("master.key").exists());
    }

    #[test]
    fn development_generates_a_private_key_once_and_reuses_it() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().to_str().unwrap();
        let first = config(&[("TIDEMARK_DATA_DIR", data)]).unwrap();
        let second = config(&[("TIDEMARK_DATA_DIR", data)]).unwrap();
        assert_eq!(first.master_key.expose(), second.master_key.expose());
        let mode = std::fs::metadata(dir.path().join("master.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(matches!(
            first.master_key_source,
            MasterKeySource::DevelopmentFile(_)
        ));
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
    }

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
        let oidc = c.oidc.as_ref().unwrap();
        assert_eq!(oidc.issuer, "https://idp.example");
        assert!(!format!("{c:?}").contains("s3cr3t-value"));
    }

    #[test]
    fn defaults_put_sqlite_in_the_data_dir() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().to_str().unwrap();
        let c = config(&[("TIDEMARK_DATA_DIR", data)]).unwrap();
        assert_eq!(
            c.database_url.expose(),
            format!("sqlite://{data}/tidemark.db")
        );
        assert_eq!(c.base_url, "http://127.0.0.1:3000");
        assert_eq!(c.dashboard_url, c.base_url);
        assert_eq!(c.environment, Environment::Development);
        assert_eq!(c.writes_per_minute, 5);
        assert_eq!(c.resend_per_minute, 3);
        assert_eq!(c.resend_ban_seconds, 900);
        assert!(c.trusted_proxies.is_empty());
        assert!(c.smtp_url.is_none());
    }

    #[test]
    fn trusted_proxies_take_cidrs_and_addresses() {
        let dir = tempfile::tempdir().unwrap();
        let c = config(&[
            ("TIDEMARK_DATA_DIR", dir.path().to_str().unwrap()),
            ("TIDEMARK_TRUSTED_PROXIES", "10.0.0.0/8, 192.168.1.7,::1"),
        ])
        .unwrap();
        assert_eq!(c.trusted_proxies.len(), 3);
        assert!(c.trusted_proxies[0].contains(&"10.2.3.4".parse::<std::net::IpAddr>().unwrap()));
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
    fn secrets_may_come_from_files() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().to_str().unwrap();
        let key = base64::engine::general_purpose::STANDARD.encode([9u8; 32]);
        let key_file = dir.path().join("master_key");
        std::fs::write(&key_file, format!("{key}\n")).unwrap();
        let secret_file = dir.path().join("oidc_secret");
        std::fs::write(&secret_file, "s3cret-from-a-file").unwrap();
        let key_path = key_file.to_str().unwrap();
        let secret_path = secret_file.to_str().unwrap();
        let from_files = config(&[
            ("TIDEMARK_DATA_DIR", data),
            ("TIDEMARK_MASTER_KEY_FILE", key_path),
            ("TIDEMARK_OIDC_ISSUER", "https://id.example.com"),
            ("TIDEMARK_OIDC_CLIENT_ID", "tidemark"),
            ("TIDEMARK_OIDC_CLIENT_SECRET_FILE", secret_path),
        ])
        .unwrap();
        assert_eq!(from_files.master_key.expose(), &[9u8; 32]);
        assert_eq!(
            from_files.oidc.as_ref().unwrap().client_secret.expose(),
            "s3cret-from-a-file"
        );

        let both = config(&[
            ("TIDEMARK_DATA_DIR", data),
            ("TIDEMARK_MASTER_KEY", key.as_str()),
            ("TIDEMARK_MASTER_KEY_FILE", key_path),
        ])
        .unwrap_err()
        .to_string();
        assert!(both.contains("not both"), "{both}");
        let missing = config(&[
            ("TIDEMARK_DATA_DIR", data),
            ("TIDEMARK_MASTER_KEY_FILE", "/nonexistent/key"),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            missing.contains("TIDEMARK_MASTER_KEY_FILE") && missing.contains("/nonexistent/key"),
            "{missing}"
        );
        // A file with the wrong content is refused without showing it.
        std::fs::write(&key_file, "not-a-key-at-all").unwrap();
        let bad = config(&[
            ("TIDEMARK_DATA_DIR", data),
            ("TIDEMARK_MASTER_KEY_FILE", key_path),
        ])
        .unwrap_err()
        .to_string();
        assert!(!bad.contains("not-a-key-at-all"), "{bad}");
    }

    #[test]
    fn secrets_are_redacted_in_debug() {
        let key = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
        let c = config(&[
            ("TIDEMARK_MASTER_KEY", key.as_str()),
            ("DATABASE_URL", "postgres://u:hunter2@db/tidemark"),
        ])
        .unwrap();
        let debug = format!("{c:?}");
        assert!(!debug.contains("hunter2"), "{debug}");
        assert!(!debug.contains(&key), "{debug}");
        assert!(debug.contains("<redacted>"));
    }
}
