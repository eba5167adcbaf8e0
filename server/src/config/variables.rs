//! Every variable the server reads, as `--help`, `config check` and docs/configuration.md name them.

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
/// reference table in docs/configuration.md to this one).
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
        "TIDEMARK_CONSOLE_OIDC_ISSUER",
        "",
        "OpenID Connect issuer URL the vendor's staff sign in to the console with",
    ),
    setting(
        "TIDEMARK_CONSOLE_OIDC_CLIENT_ID",
        "",
        "the console's client at that provider",
    ),
    secret("TIDEMARK_CONSOLE_OIDC_CLIENT_SECRET", "", "its secret"),
    setting(
        "TIDEMARK_CONSOLE_ROLES",
        "",
        "group=role pairs (admin, sales, support, read) that open the console",
    ),
    setting(
        "TIDEMARK_CONSOLE_GROUPS_CLAIM",
        "groups",
        "the claim holding a staff member's groups",
    ),
    setting(
        "TIDEMARK_CONSOLE_OIDC_SCOPES",
        "groups",
        "scopes asked for besides openid and email",
    ),
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
        "TIDEMARK_ADMIN_PER_MINUTE",
        "600",
        "admin API calls per minute per vendor token",
    ),
    setting(
        "TIDEMARK_SEAT_RELEASE_AFTER_DAYS",
        "30",
        "days a seat may go unseen before it is freed; 0: never",
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
        "TIDEMARK_SQLITE_PLAN_PUSHES_EARLY",
        "0",
        "SQLite: plan each push on a read snapshot while it waits for the writer (1 or 0)",
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
    secret(
        "TIDEMARK_STRIPE_WEBHOOK_SECRET",
        "",
        "Stripe endpoint signing secrets, comma-separated",
    ),
    secret(
        "TIDEMARK_STRIPE_API_KEY",
        "",
        "reads a checkout's line items",
    ),
    setting(
        "TIDEMARK_STRIPE_PRICES",
        "",
        "price_…=<tier>, comma-separated",
    ),
    setting("TIDEMARK_STRIPE_GRACE_DAYS", "7", "days after a paid period"),
    setting(
        "TIDEMARK_DEFAULT_SEATS",
        "",
        "seats of a new licence per tier, team=3,…",
    ),
    setting(
        "TIDEMARK_STRIPE_API_BASE",
        "https://api.stripe.com",
        "Stripe's API",
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
pub const SECRET_VARIABLES: [&str; 8] = [
    "DATABASE_URL",
    "TIDEMARK_MASTER_KEY",
    "TIDEMARK_MASTER_KEY_PREVIOUS",
    "TIDEMARK_OIDC_CLIENT_SECRET",
    "TIDEMARK_CONSOLE_OIDC_CLIENT_SECRET",
    "TIDEMARK_SMTP_URL",
    "TIDEMARK_STRIPE_WEBHOOK_SECRET",
    "TIDEMARK_STRIPE_API_KEY",
];
