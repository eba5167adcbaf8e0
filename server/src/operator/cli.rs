//! Operator subcommands of `tidemark-server`.

use clap::{Parser, Subcommand, ValueEnum};
use tidemark_wire::Tier;

#[derive(Debug, Parser)]
#[command(
    name = "tidemark-server",
    version,
    about = "Tidemark back end and operator tools"
)]
pub struct Cli {
    /// Print exactly one JSON document, compact on one line, on standard output (what is
    /// otherwise printed for people goes to standard error). On failure the document is
    /// `{"error":{"message":…}}` and the exit status is 1.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the dashboard and the /v1 API (the default).
    Serve,
    /// Apply pending database migrations and exit.
    Migrate,
    /// Ask a running server's /healthz (on LEPTOS_SITE_ADDR, loopback for a wildcard) and exit
    /// 0 only if it answers 2xx: the container image's HEALTHCHECK. Reads no other setting.
    Healthcheck {
        /// Ask this URL instead.
        #[arg(long, value_name = "URL")]
        url: Option<String>,
    },
    /// Create and manage licenses.
    #[command(subcommand)]
    License(LicenseCommand),
    /// Publish compliance-profile bundles.
    #[command(subcommand)]
    Bundle(BundleCommand),
    /// Publish framework catalogues: every requirement of a scanned framework, read from
    /// Prowler's compliance-framework JSON (docs/vendor-api.md, "Framework catalogues").
    #[command(subcommand)]
    Catalogue(CatalogueCommand),
    /// Manage who may sign in to an account's dashboard.
    #[command(subcommand)]
    Member(MemberCommand),
    /// Configure SAML single sign-on for e-mail domains (enterprise accounts).
    #[command(subcommand)]
    Sso(SsoCommand),
    /// Read the audit log: admin actions and operator commands that changed data.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// List accounts with their license and what they hold.
    #[command(subcommand)]
    Account(AccountCommand),
    /// List an account's projects.
    #[command(subcommand)]
    Project(ProjectCommand),
    /// List a project's scans.
    #[command(subcommand)]
    Scan(ScanCommand),
    /// List and revoke scanner API keys.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Trusted publishers: the CI identities (GitHub Actions, GitLab CI, other OpenID Connect
    /// issuers) that may push to an account with no stored key.
    #[command(subcommand)]
    Publisher(PublisherCommand),
    /// SCIM provisioning: the bearer token an identity provider (Okta, Entra) uses for
    /// /scim/v2 (docs/scim.md).
    #[command(subcommand)]
    Scim(ScimCommand),
    /// The Ed25519 keys that sign licence verdicts (see docs/api.md, "Signed licence verdicts").
    #[command(subcommand)]
    SigningKey(SigningKeyCommand),
    /// Tokens for the vendor's admin API, /admin/v1 (docs/vendor-api.md): the first admin
    /// token comes from here; an admin token makes the others over the API.
    #[command(subcommand)]
    VendorToken(VendorTokenCommand),
    /// Check the configuration this command sees.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Re-encrypt every stored secret under TIDEMARK_MASTER_KEY, opening those sealed under
    /// TIDEMARK_MASTER_KEY_PREVIOUS (see docs/operations.md, "Rotating the master key").
    /// Safe while servers run, and to run again.
    RotateMasterKey,
    /// Write an online, consistent copy of the SQLite database to a new file while the server
    /// runs (PostgreSQL: use pg_dump).
    Backup {
        /// The new file (never overwritten).
        #[arg(long, value_name = "FILE")]
        to: std::path::PathBuf,
    },
    /// Remove branches and pull requests that have seen no push for a while (merged or
    /// closed ones), with their scans and findings. Default branches always stay.
    Prune {
        /// Remove lines whose last push is older than this: a whole number and h, d or w.
        #[arg(long, value_name = "AGE", default_value = tidemark_domain::retention::DEFAULT_BRANCH_AGE)]
        branches_older_than: String,
        /// Only list what would be removed.
        #[arg(long)]
        dry_run: bool,
    },
    /// Housekeeping now, as the server does in the background (docs/storage.md): move scans
    /// stored one row per finding to spans, then thin old scans' findings as the policy says
    /// (their rows stay in the history). Waits for no server: it takes the same lease.
    Housekeeping {
        /// Only say what would be thinned, per project and line.
        #[arg(long)]
        dry_run: bool,
        /// Take the lease from the holder named when this command is refused, instead of
        /// waiting until it lapses (at most 10 minutes): only when that holder is known to be
        /// dead (a killed pass). A live holder stops at its next line.
        #[arg(long, conflicts_with = "dry_run")]
        force: bool,
        #[command(subcommand)]
        command: Option<HousekeepingCommand>,
    },
    /// Replace the SQLite database with a backup, after checking it; refused while a server
    /// serves the database. The replaced files are kept beside it.
    Restore {
        /// The backup to put in place.
        #[arg(long, value_name = "FILE")]
        from: std::path::PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum HousekeepingCommand {
    /// Show an account's housekeeping policy, or give it its own: `--set name=age` for
    /// keep_all, weekly_after, monthly_after, pull_request_after, inactive_branch_after.
    Policy {
        /// The account's id (acct_…; `account list` shows them).
        #[arg(long)]
        account: String,
        /// Replace one age of the account's policy (repeatable).
        #[arg(long, value_name = "NAME=AGE")]
        set: Vec<String>,
        /// Drop the account's own policy: the installation's applies again.
        #[arg(long, conflicts_with = "set")]
        reset: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// List audit events, newest first.
    List {
        /// Only this account's events (without it: every account's, and those of no account,
        /// such as published bundles).
        #[arg(long)]
        account: Option<String>,
        /// Only events at or after this RFC 3339 time.
        #[arg(long)]
        since: Option<String>,
        /// Only this actor: an e-mail address, `operator:<user>`, `system:<task>` or
        /// `scim:<token prefix>`.
        #[arg(long)]
        actor: Option<String>,
        /// Only this action, such as `keys.rotated` or `member.removed`.
        #[arg(long)]
        action: Option<String>,
        /// At most this many events, the newest.
        #[arg(long, default_value_t = 100)]
        limit: i64,
    },
}

#[derive(Debug, Subcommand)]
pub enum SsoCommand {
    /// Route the domain's users to the IdP in the metadata file. The operator vouches for the
    /// account's ownership of the domain (checked out of band), so the domain is verified at
    /// once; other accounts' pending claims on it end. Its users' sessions end.
    Set {
        /// The account's id (acct_…; `account list` shows them).
        #[arg(long)]
        account: String,
        /// The e-mail domain its users sign in with (example.com).
        #[arg(long)]
        domain: String,
        /// The IdP's SAML 2.0 metadata XML (it must name a signing certificate).
        #[arg(long)]
        idp_metadata: std::path::PathBuf,
        /// Refuse OpenID Connect sign-in for the domain.
        #[arg(long)]
        enforce: bool,
    },
    /// List SSO claims with their state (pending, verified, ended) and, for pending ones,
    /// the DNS record they wait for.
    List {
        /// Only this account's claims (without it: every account's).
        #[arg(long)]
        account: Option<String>,
    },
    /// Remove every SAML claim on a domain. If one was verified, its users' sessions end.
    Remove {
        /// The e-mail domain (example.com).
        #[arg(long)]
        domain: String,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum RoleArg {
    Admin,
    Member,
}

impl From<RoleArg> for tidemark_domain::access::Role {
    fn from(r: RoleArg) -> Self {
        match r {
            RoleArg::Admin => tidemark_domain::access::Role::Admin,
            RoleArg::Member => tidemark_domain::access::Role::Member,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum MemberCommand {
    /// Add a person (by e-mail address) to an account; they can then sign in.
    Add {
        /// The account's id (acct_…; `account list` shows them).
        #[arg(long)]
        account: String,
        /// Their e-mail address: the one their identity provider signs them in with.
        #[arg(long)]
        email: String,
        /// member (reads everything) or admin (changes things too).
        #[arg(long, value_enum, default_value = "member")]
        role: RoleArg,
    },
    /// List an account's members.
    List {
        /// The account's id (acct_…; `account list` shows them).
        #[arg(long)]
        account: String,
    },
    /// Remove a member; their sessions on the account end at once.
    Remove {
        /// The account's id (acct_…; `account list` shows them).
        #[arg(long)]
        account: String,
        /// Their e-mail address.
        #[arg(long)]
        email: String,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TierArg {
    Individual,
    Team,
    Agency,
    Enterprise,
}

impl From<TierArg> for Tier {
    fn from(t: TierArg) -> Tier {
        match t {
            TierArg::Individual => Tier::Individual,
            TierArg::Team => Tier::Team,
            TierArg::Agency => Tier::Agency,
            TierArg::Enterprise => Tier::Enterprise,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum LicenseCommand {
    /// Create an account with a license; prints the license key (shown only here).
    Create {
        /// The licence holder's e-mail address; they become the account's first admin.
        #[arg(long)]
        email: String,
        /// The licence's tier, which sets its features and limits.
        #[arg(long, value_enum)]
        tier: TierArg,
        /// RFC 3339 expiry (default: one year from now).
        #[arg(long)]
        expires: Option<String>,
        /// Override the tier's active-project cap.
        #[arg(long)]
        max_projects: Option<u64>,
        /// Seats: how many machines may be activated at once (default: unlimited).
        #[arg(long)]
        max_machines: Option<u64>,
        /// Entitlement overrides: features beyond the tier's (comma-separated:
        /// hosted_dashboard, drift_detection, custom_frameworks, priority_support).
        #[arg(long, value_name = "FEATURES", value_parser = parse_features, default_value = "")]
        features_added: Features,
        /// Entitlement overrides: the tier's features taken away (comma-separated).
        #[arg(long, value_name = "FEATURES", value_parser = parse_features, default_value = "")]
        features_removed: Features,
    },
    /// Change a license's tier, project cap or entitlement overrides (validate, verdicts and
    /// every feature check follow at once). Only what is given changes.
    Update {
        /// The licence's id (lcn_…).
        #[arg(long)]
        id: String,
        /// The new tier.
        #[arg(long, value_enum)]
        tier: Option<TierArg>,
        /// A new active-project cap.
        #[arg(long, conflicts_with = "tier_max_projects")]
        max_projects: Option<u64>,
        /// Remove the cap override: the tier's cap holds again.
        #[arg(long)]
        tier_max_projects: bool,
        /// Seats: how many machines may be activated at once.
        #[arg(long, conflicts_with = "unlimited_machines")]
        max_machines: Option<u64>,
        /// No seat limit.
        #[arg(long)]
        unlimited_machines: bool,
        /// Replaces the features added beyond the tier's (comma-separated; "" for none).
        #[arg(long, value_name = "FEATURES", value_parser = parse_features)]
        features_added: Option<Features>,
        /// Replaces the tier's features taken away (comma-separated; "" for none).
        #[arg(long, value_name = "FEATURES", value_parser = parse_features)]
        features_removed: Option<Features>,
    },
    /// List licenses, all of them or those matching every filter given.
    List {
        /// Only licences in this state.
        #[arg(long, value_enum)]
        state: Option<LicenseStateArg>,
        /// Only licences of this tier.
        #[arg(long, value_enum)]
        tier: Option<TierArg>,
        /// Only licenses registered to this e-mail address (case-insensitive).
        #[arg(long)]
        email: Option<String>,
    },
    /// Show one license: its state, entitlements, account, members, projects and keys.
    Show {
        /// The licence's id (lcn_…; `license list` shows them, never the key).
        #[arg(long)]
        id: String,
    },
    /// Suspend a license: validation answers valid=false and pushes are refused.
    Suspend {
        /// The licence's id (lcn_…).
        #[arg(long)]
        id: String,
    },
    /// Lift a suspension.
    Resume {
        /// The licence's id (lcn_…).
        #[arg(long)]
        id: String,
    },
    /// Set a new expiry.
    Extend {
        /// The licence's id (lcn_…).
        #[arg(long)]
        id: String,
        /// The new expiry, an RFC 3339 time (2027-12-31T00:00:00Z).
        #[arg(long)]
        expires: String,
    },
    /// Write a signed offline licence file for an air-gapped machine
    /// (`tidemark activate --offline FILE`); it runs until it expires (no revocation).
    File {
        /// The license id.
        #[arg(long)]
        license: String,
        /// Bind the file to one machine (its fingerprint, from `tidemark fingerprint`).
        #[arg(long, value_name = "FINGERPRINT")]
        machine: Option<String>,
        /// How many days the file runs (1 to 400, and never past the license's expiry).
        #[arg(long)]
        days: u32,
        /// The file to write (never overwritten).
        #[arg(long, value_name = "FILE")]
        out: std::path::PathBuf,
    },
}

/// Feature flags given on the command line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Features(pub Vec<tidemark_wire::Feature>);

/// `drift_detection,custom_frameworks` (or nothing) as features; an unknown name is refused.
fn parse_features(text: &str) -> Result<Features, String> {
    let mut out = Vec::new();
    for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let feature = tidemark_wire::Feature::parse(name).ok_or_else(|| {
            format!(
                "unknown feature {name:?}: one of {}",
                tidemark_wire::Feature::ALL.map(|f| f.as_str()).join(", ")
            )
        })?;
        if !out.contains(&feature) {
            out.push(feature);
        }
    }
    Ok(Features(out))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LicenseStateArg {
    Active,
    Expired,
    Suspended,
}

impl From<LicenseStateArg> for tidemark_services::licensing::LicenseStateFilter {
    fn from(state: LicenseStateArg) -> Self {
        use tidemark_services::licensing::LicenseStateFilter as Filter;
        match state {
            LicenseStateArg::Active => Filter::Active,
            LicenseStateArg::Expired => Filter::Expired,
            LicenseStateArg::Suspended => Filter::Suspended,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum AccountCommand {
    /// Every account: license, tier, members, projects, active keys, scans.
    List,
}

#[derive(Debug, Subcommand)]
pub enum ProjectCommand {
    /// The account's projects with their scan count and latest score.
    List {
        /// The account's id (acct_…; `account list` shows them).
        #[arg(long)]
        account: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ScanCommand {
    /// The project's newest scans, newest first.
    List {
        /// The project's id (prj_…) or label.
        #[arg(long)]
        project: String,
        /// At most this many scans, the newest (1-10,000).
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(i64).range(1..=10_000))]
        limit: i64,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// The account's API keys (prefix, machine, created, last used, revoked); never the keys.
    List {
        /// The account's id (acct_…; `account list` shows them).
        #[arg(long)]
        account: String,
    },
    /// Revoke one API key by its id (as `key list` shows it); every replica refuses it at
    /// once (API keys are never cached).
    Revoke {
        /// The key's id (`key list` shows it; never the key itself).
        #[arg(long)]
        id: String,
    },
}

#[derive(Debug, clap::Args)]
pub struct PublisherAdd {
    /// The account's id (acct_…; `account list` shows them).
    #[arg(long)]
    pub account: String,
    /// github, gitlab or custom.
    #[arg(long)]
    pub provider: String,
    /// The token issuer; default https://token.actions.githubusercontent.com (github) or
    /// https://gitlab.com (gitlab). GitHub Enterprise Server: https://HOST/_services/token.
    #[arg(long)]
    pub issuer: Option<String>,
    /// owner/name (GitHub) or the project path (GitLab).
    #[arg(long)]
    pub repository: Option<String>,
    /// The repository owner's numeric id (GitLab: the namespace id); pinned from the
    /// first token when not given.
    #[arg(long)]
    pub owner_id: Option<String>,
    /// The repository's numeric id (GitLab: the project id); pinned from the first token
    /// when not given.
    #[arg(long)]
    pub repository_id: Option<String>,
    /// GitHub: the workflow file under .github/workflows (ci.yml); GitLab: the CI
    /// configuration path (default .gitlab-ci.yml).
    #[arg(long)]
    pub workflow: Option<String>,
    /// Only jobs that run in this deployment environment.
    #[arg(long)]
    pub environment: Option<String>,
    /// Only jobs for refs matching this pattern (refs/heads/main, refs/tags/v*).
    #[arg(long)]
    pub ref_pattern: Option<String>,
    /// A custom issuer's exact subject (sub).
    #[arg(long)]
    pub subject: Option<String>,
    /// The one project label it may push; every project when not given.
    #[arg(long)]
    pub project: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum PublisherCommand {
    /// Trust a CI identity to push to the account's projects (keyless CI, docs/ci.md).
    Add(Box<PublisherAdd>),
    /// The account's trusted publishers.
    List {
        /// The account's id (acct_…; `account list` shows them).
        #[arg(long)]
        account: String,
    },
    /// Stop trusting one; its push tokens stop working at once.
    Remove {
        /// The account's id (acct_…; `account list` shows them).
        #[arg(long)]
        account: String,
        /// The publisher's id (`publisher list` shows it).
        #[arg(long)]
        id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ScimCommand {
    /// Make the account a new SCIM token and print it (once); the one it had stops working.
    /// With --revoke, end the token and make none.
    Token {
        /// The account's id (acct_…; `account list` shows them).
        #[arg(long)]
        account: String,
        /// Revoke the account's SCIM token instead of making a new one.
        #[arg(long)]
        revoke: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum SigningKeyCommand {
    /// Add a new key: published at once, signing only after the overlap; the current key
    /// retires once nothing it signed can still be valid.
    Rotate {
        /// Overrides TIDEMARK_SIGNING_KEY_OVERLAP: an age (48h, 7d, 2w), or 0 to sign with
        /// the new key at once (when the current key is compromised).
        #[arg(long, value_name = "AGE")]
        overlap: Option<String>,
    },
    /// Every published key with its schedule; retires the keys whose time has come.
    List,
}

#[derive(Debug, Subcommand)]
pub enum VendorTokenCommand {
    /// Make a token and print it (once; only its hash is kept).
    Create {
        /// What the vendor calls it (billing-stripe, support-desk): 1 to 64 of a-z, 0-9,
        /// '.', '_' and '-'. The audit log names its calls vendor:<name>.
        #[arg(long)]
        name: String,
        /// admin, sales, support, billing or read.
        #[arg(long)]
        role: String,
        /// RFC 3339 time the token stops working (default: never).
        #[arg(long)]
        expires: Option<String>,
    },
    /// Every token: name, role, prefix, made, last used, expiry, revoked (never the tokens).
    List,
    /// Revoke a token by id (`vendor-token list` shows them): its next call is refused.
    Revoke {
        /// The token's id (vtk_…).
        #[arg(long)]
        id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the effective configuration (secrets redacted) and check the database, the
    /// migrations, the SMTP server and OpenID Connect discovery. Exit status 1 if a check
    /// fails.
    Check,
}

#[derive(Debug, Subcommand)]
pub enum BundleCommand {
    /// Make FILE the latest bundle; prints its URL and checksum.
    Publish {
        /// The bundle file: the compliance profiles scanners download with `tidemark bundle pull`.
        file: std::path::PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum CatalogueCommand {
    /// Make FILE (Prowler's compliance JSON, e.g. `cis_2.0_aws.json`) its framework's
    /// catalogue, replacing the one before.
    Import {
        /// The catalogue: Prowler's compliance-framework JSON, as Prowler publishes it.
        file: std::path::PathBuf,
        /// The Tidemark framework it describes (its requirement `Id`s become the rules
        /// `<framework>-<Id>`). Default: `Framework-Provider-Version` lower-cased
        /// (`cis-aws-2.0`).
        #[arg(long, value_name = "ID")]
        framework: Option<String>,
    },
    /// The published catalogues.
    List,
}

impl Command {
    /// Whether the command only reads: such commands never migrate (an operator looking at
    /// a database must not change its schema), and refuse a schema that is not current.
    pub fn is_read_only(&self) -> bool {
        matches!(
            self,
            Command::Backup { .. }
                | Command::Config(_)
                | Command::Account(_)
                | Command::Project(_)
                | Command::Scan(_)
                | Command::Key(KeyCommand::List { .. })
                | Command::Catalogue(CatalogueCommand::List)
                | Command::Publisher(PublisherCommand::List { .. })
                | Command::License(LicenseCommand::List { .. } | LicenseCommand::Show { .. })
                | Command::Member(MemberCommand::List { .. })
                | Command::Sso(SsoCommand::List { .. })
                | Command::Audit(AuditCommand::List { .. })
        )
    }

    /// What the command does to the schema under `policy` (`TIDEMARK_MIGRATE`).
    pub fn schema(&self, policy: crate::config::MigratePolicy) -> crate::Schema {
        use crate::config::MigratePolicy;
        use crate::Schema;
        match self {
            Command::Migrate => Schema::Migrate,
            Command::Healthcheck { .. } => Schema::Leave,
            Command::Serve => match policy {
                MigratePolicy::Auto => Schema::Migrate,
                MigratePolicy::Never => Schema::Leave,
            },
            read if read.is_read_only() => Schema::RequireCurrent,
            _ => match policy {
                MigratePolicy::Auto => Schema::Migrate,
                MigratePolicy::Never => Schema::RequireCurrent,
            },
        }
    }
}

/// Parses an RFC 3339 timestamp given on the command line.
pub fn parse_timestamp(text: &str) -> anyhow::Result<tidemark_domain::Millis> {
    use anyhow::Context as _;
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.timestamp_millis())
        .with_context(|| {
            format!("{text:?} is not an RFC 3339 timestamp such as 2027-01-31T00:00:00Z")
        })
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_option_has_help() {
        use clap::CommandFactory as _;
        let missing = tidemark_cli::cli::undocumented_args(&super::Cli::command());
        assert!(missing.is_empty(), "without help text: {missing:#?}");
    }
}
