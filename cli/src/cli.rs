//! The `tidemark` command. [`run`] does all the work and takes its environment, clock and
//! secret input as arguments, so tests drive it in-process; `main.rs` only wires in the real
//! process environment.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context as _};
use chrono::{DateTime, Utc};
use clap::{Parser, Subcommand};

use crate::client::{Client, ClientError, RetryPolicy, DEFAULT_MAX_WAIT};
use crate::credential::{credential, explain, Credential};
use crate::credentials::{self, Credentials};
pub use crate::env::{Env, GitRunner, NotAuthorized};
use crate::license::{self, Mode};
use crate::verdict::TrustedKeys;

pub const DEFAULT_URL: &str = "http://127.0.0.1:3000";

/// The exit statuses, by class, so a CI step can tell "fix the key" from "try again later".
pub mod exit {
    pub const OK: u8 = 0;
    /// Anything not below: a bad push body, a file that cannot be read, a refused push
    /// (`422`, `409`…), an answer the client does not understand.
    pub const FAILURE: u8 = 1;
    /// Authentication or license: not activated, unlicensed, the API key or the license
    /// refused (`401`, `403`, `404 license_not_found`).
    pub const AUTH: u8 = 2;
    /// `--fail-on-regression` saw the score drop, or `--fail-on-gate` a failed quality gate.
    pub const VERDICT: u8 = 3;
    /// The service could not be reached, after the retries (connection failure, timeout,
    /// 5xx), or its TLS certificate is not trusted (not retried).
    pub const NETWORK: u8 = 4;
    /// Still rate limited (`429`), busy (`503 server_busy`), or the service's database
    /// unavailable or its storage full (`503 database_unavailable`, `507 storage_full`) after
    /// the retries: the service is there and will be back; run the job again later.
    pub const THROTTLED: u8 = 5;
    /// The command line itself is wrong (sysexits' EX_USAGE).
    pub const USAGE: u8 = 64;
}

/// The exit status for an error from [`run`]: its class, from the first cause that has one.
pub fn exit_status(err: &anyhow::Error) -> u8 {
    for cause in err.chain() {
        if cause.downcast_ref::<NotAuthorized>().is_some() {
            return exit::AUTH;
        }
        if let Some(client) = cause.downcast_ref::<ClientError>() {
            return match client {
                ClientError::Unreachable { .. } | ClientError::Untrusted { .. } => exit::NETWORK,
                ClientError::Api { status: 429, .. } => exit::THROTTLED,
                ClientError::Api { code, .. }
                    if matches!(
                        code.as_str(),
                        "server_busy" | "database_unavailable" | "storage_full"
                    ) =>
                {
                    exit::THROTTLED
                }
                ClientError::ServerFault { .. } => exit::FAILURE,
                ClientError::Api {
                    status: 401 | 403, ..
                } => exit::AUTH,
                ClientError::Api { code, .. }
                    if code == "license_not_found" || code == "invalid_license_hash" =>
                {
                    exit::AUTH
                }
                ClientError::Api { .. } | ClientError::Protocol(_) => exit::FAILURE,
            };
        }
    }
    exit::FAILURE
}

#[derive(Debug, Parser)]
#[command(
    name = "tidemark",
    version,
    about = "Tidemark scanner client: activate, check the license, push scans, pull bundles"
)]
pub struct Cli {
    /// The Tidemark service (default http://127.0.0.1:3000; or TIDEMARK_URL).
    #[arg(long, global = true)]
    pub url: Option<String>,
    /// Also trust the CA certificates in this PEM file (or TIDEMARK_CA_CERT), for a server
    /// behind an internal certificate authority. The platform's store is always trusted.
    #[arg(long, global = true, value_name = "FILE")]
    pub ca_cert: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Activate this machine: asks for the license key (never echoed, never sent; only its
    /// SHA-256 is) and stores an API key in the credentials file (mode 0600).
    Activate {
        /// Read the license key from this file instead of asking.
        #[arg(long)]
        license_key_file: Option<PathBuf>,
        /// Name of this machine or CI secret (default: the host name).
        #[arg(long)]
        machine: Option<String>,
        /// Print the new API key (once) instead of storing it: for a CI secret store.
        #[arg(long)]
        print_key: bool,
        /// Install an offline licence file (an air-gapped machine: no service is called).
        /// The license key is still asked for: the file must be for that licence.
        #[arg(long, value_name = "FILE", conflicts_with = "print_key")]
        offline: Option<PathBuf>,
    },
    /// Print this machine's fingerprint (for an offline licence file bound to it).
    Fingerprint,
    /// Show the license mode: tier, features, expiry, cache age, offline grace left.
    Status {
        /// Print one JSON object on standard output instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Push scan results (a JSON push body) to the dashboard. In GitHub Actions it also
    /// writes the step outputs (scan_id, score, delta, gate) and a step summary.
    ///
    /// Exit status: 0 pushed, 1 other failure, 2 authentication or license, 3 regression or
    /// failed gate (with --fail-on-…), 4 service unreachable after retries, 5 still rate
    /// limited or busy after retries, 64 wrong command line.
    Push {
        /// The push body's file, or `-` to read it from standard input.
        file: PathBuf,
        /// Use this project label instead of the file's `project_label`.
        #[arg(long)]
        label: Option<String>,
        /// Exit with status 3 when the score dropped since the previous scan.
        #[arg(long)]
        fail_on_regression: bool,
        /// Exit with status 3 when the project's quality gate failed (the reasons are printed).
        #[arg(long)]
        fail_on_gate: bool,
        /// How many times to wait and retry when the write rate is exceeded, the server is
        /// busy, its database is unavailable or its storage full (503, 507), or it does not
        /// answer (connection failure, timeout, 502, 503, 504).
        #[arg(long, default_value_t = 40)]
        max_retries: u32,
        /// The most seconds to spend waiting between retries in all: the default rides out
        /// a managed database's failover (typically 60 to 120 s).
        #[arg(long, default_value_t = DEFAULT_MAX_WAIT.as_secs())]
        retry_for: u64,
        /// Print the service's answer as one JSON object on standard output (messages for
        /// people go to standard error).
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        git: GitArgs,
    },
    /// Compliance-profile bundles.
    #[command(subcommand)]
    Bundle(BundleCommand),
    /// A project's findings, followed across scans per branch, and their triage.
    #[command(subcommand)]
    Findings(crate::manage::FindingsCommand),
    /// A project's quality gate: keep it beside the workflow that pushes (`gate set`).
    #[command(subcommand)]
    Gate(crate::manage::GateCommand),
    /// Say who pushes from here: the API key in use, or (keyless CI, with no API key in a
    /// GitHub Actions or GitLab CI job) the CI identity the service matched and what it may
    /// push to.
    Whoami,
    /// Forget this machine's activation: removes the credentials file (the API key in it
    /// stays valid on the service until an admin revokes or rotates it).
    Logout,
    /// Print a shell completion script (for example `tidemark completions bash >
    /// /etc/bash_completion.d/tidemark`).
    Completions {
        /// The shell to complete in.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): `tidemark man > tidemark.1`.
    Man,
}

/// Where the scan was taken. Detected from GitHub Actions or GitLab CI variables, else from
/// `git` in the working directory; a push body's own `git` object wins over that, and these
/// flags over both.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct GitArgs {
    /// The branch scanned (for a pull request, its source branch).
    #[arg(long, value_name = "NAME")]
    pub branch: Option<String>,
    /// The commit scanned.
    #[arg(long, value_name = "SHA")]
    pub commit: Option<String>,
    /// The pull (merge) request's number: the scan is judged against its base branch.
    #[arg(long = "pr", value_name = "NUMBER")]
    pub pull_request: Option<u64>,
    /// The branch the pull request targets (default: the repository's default branch).
    #[arg(long, value_name = "NAME")]
    pub base_branch: Option<String>,
    /// The repository's default branch (names the project's default branch the first time).
    #[arg(long, value_name = "NAME")]
    pub default_branch: Option<String>,
    /// Send no git context at all: the scan goes to the project's default branch.
    #[arg(long, conflicts_with_all = ["branch", "commit", "pull_request", "base_branch", "default_branch"])]
    pub no_git: bool,
    /// Comment on the pull request (one comment per project, updated on later pushes) and
    /// set a commit status with the verdict. Needs GITHUB_TOKEN (GitHub Actions), or
    /// TIDEMARK_GITLAB_TOKEN / GITLAB_TOKEN (a token with the api scope) or CI_JOB_TOKEN
    /// (GitLab CI); TIDEMARK_FORGE_TOKEN overrides either.
    #[arg(long)]
    pub comment: bool,
}

#[derive(Debug, Subcommand)]
pub enum BundleCommand {
    /// Download the latest bundle, verify its checksum, and replace the local copy.
    Pull {
        /// Where to keep it (default: the tidemark configuration directory).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

/// Runs one command; returns the process exit status. Messages for people go to `out`.
pub async fn run(cli: Cli, env: &Env, out: &mut (dyn Write + Send)) -> anyhow::Result<u8> {
    let url = cli
        .url
        .or_else(|| env.var("TIDEMARK_URL"))
        .unwrap_or_else(|| DEFAULT_URL.to_owned());
    // The generated documents need no service.
    match cli.command {
        Command::Completions { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut command, "tidemark", out);
            return Ok(0);
        }
        Command::Man => {
            clap_mangen::Man::new(<Cli as clap::CommandFactory>::command()).render(out)?;
            return Ok(0);
        }
        _ => {}
    }
    let ca_cert = cli
        .ca_cert
        .or_else(|| env.var("TIDEMARK_CA_CERT").map(PathBuf::from));
    let ca_pem = match &ca_cert {
        Some(path) => Some(
            std::fs::read(path)
                .with_context(|| format!("could not read the CA certificate {}", path.display()))?,
        ),
        None => None,
    };
    let client = Client::new(&url, ca_pem.as_deref())
        .with_context(|| match &ca_cert {
            Some(path) => format!("could not use the CA certificate {}", path.display()),
            None => "could not set up the HTTP client".to_owned(),
        })?
        .with_retry(env.retry_policy());
    match cli.command {
        Command::Activate {
            license_key_file,
            offline: Some(file),
            ..
        } => activate_offline(env, out, license_key_file, &file),
        Command::Activate {
            license_key_file,
            machine,
            print_key,
            offline: None,
        } => activate(&client, env, out, license_key_file, machine, print_key).await,
        Command::Fingerprint => {
            writeln!(out, "{}", crate::machine::fingerprint(env))?;
            Ok(0)
        }
        Command::Status { json } => status(&client, env, out, json).await,
        Command::Push {
            file,
            label,
            fail_on_regression,
            fail_on_gate,
            max_retries,
            retry_for,
            json,
            git,
        } => {
            let fail_on = FailOn {
                regression: fail_on_regression,
                gate: fail_on_gate,
            };
            let options = PushOptions {
                label,
                fail_on,
                max_retries,
                retry_for,
                json,
                git,
            };
            push(&client, env, out, &file, options).await
        }
        Command::Bundle(BundleCommand::Pull { dir }) => pull_bundle(&client, env, out, dir).await,
        Command::Findings(command) => crate::manage::findings(&client, env, out, command).await,
        Command::Gate(command) => crate::manage::gate(&client, env, out, command).await,
        Command::Logout => logout(env, out),
        Command::Whoami => whoami(&client, env, out).await,
        // Answered above, before a client exists.
        Command::Completions { .. } | Command::Man => Ok(0),
    }
}

async fn whoami(client: &Client, env: &Env, out: &mut (dyn Write + Send)) -> anyhow::Result<u8> {
    let shown = |key: &str| key.chars().take(12).collect::<String>();
    match credential(client, env).await? {
        Credential::ApiKey { key } => {
            writeln!(out, "API key {}… from TIDEMARK_API_KEY", shown(&key))?
        }
        Credential::Keyless(answer) => {
            writeln!(out, "Keyless CI: {}", crate::keyless::describe(&answer))?
        }
        Credential::Activation => {
            let path = env.credentials_path()?;
            let creds = credentials::load(&path)?.ok_or_else(|| {
                NotAuthorized(
                    "not activated: run `tidemark activate`, set TIDEMARK_API_KEY, or push \
                     keyless from CI (docs/ci.md)"
                        .into(),
                )
            })?;
            writeln!(
                out,
                "API key {}… from {} (activated for {})",
                shown(&creds.api_key),
                path.display(),
                creds.url
            )?
        }
    }
    Ok(0)
}

fn logout(env: &Env, out: &mut (dyn Write + Send)) -> anyhow::Result<u8> {
    let path = env.credentials_path()?;
    match std::fs::remove_file(&path) {
        Ok(()) => writeln!(
            out,
            "Removed {}. The API key in it still works until an admin rotates or revokes it in Settings.",
            path.display()
        )?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            writeln!(out, "Not activated: {} does not exist.", path.display())?
        }
        Err(e) => return Err(e).with_context(|| format!("could not remove {}", path.display())),
    }
    Ok(0)
}

fn read_license_key(env: &Env, key_file: Option<PathBuf>) -> anyhow::Result<String> {
    let key = match key_file {
        Some(f) => std::fs::read_to_string(&f)
            .with_context(|| format!("could not read {}", f.display()))?,
        None => (env.read_license_key)().context("could not read the license key")?,
    };
    let key = key.trim();
    if key.is_empty() {
        bail!("no license key given; it is in your license e-mail (ask for it again with the form on the website)");
    }
    Ok(crate::license_key_hash(key))
}

async fn activate(
    client: &Client,
    env: &Env,
    out: &mut (dyn Write + Send),
    key_file: Option<PathBuf>,
    machine: Option<String>,
    print_key: bool,
) -> anyhow::Result<u8> {
    let path = env.credentials_path()?;
    if !print_key {
        // Refuse to go on over a file with loose permissions rather than silently replace it.
        credentials::load(&path)?;
    }
    let hash = read_license_key(env, key_file)?;
    let machine = machine
        .or_else(|| env.var("HOSTNAME"))
        .unwrap_or_else(|| "scanner".to_owned());
    let fingerprint = crate::machine::fingerprint(env);
    let activated = client
        .activate(&hash, &machine, &fingerprint)
        .await
        .map_err(explain)?;
    if print_key {
        writeln!(out, "{}", activated.api_key)?;
        return Ok(0);
    }
    // The signing keys are pinned here, from the service itself (over TLS in production).
    let set = client.keys().await.map_err(explain)?;
    let mut trusted = TrustedKeys::pin(&set)
        .context("the service's key set could not be trusted; activation stopped")?;
    let outcome = client
        .verified(activated.verdict, &hash, &fingerprint, &mut trusted)
        .await;
    let (verdict, mode) = license::after_validation(env.now, Ok(None), env.now, outcome);
    credentials::save(
        &path,
        &Credentials {
            url: client.base_url().to_owned(),
            api_key: activated.api_key,
            license_key_hash: hash,
            validation: verdict.map(|v| v.to_cache(v.issued_at())),
            trusted_keys: Some(trusted),
        },
    )?;
    writeln!(
        out,
        "Activated {machine} on the {} tier (account {}).",
        activated.tier.as_str(),
        activated.account_id
    )?;
    writeln!(out, "Credentials saved to {} (mode 0600).", path.display())?;
    print_mode(out, env.now, &mode)?;
    Ok(0)
}

/// `activate --offline FILE`: an air-gapped machine installs a signed licence file.
fn activate_offline(
    env: &Env,
    out: &mut (dyn Write + Send),
    key_file: Option<PathBuf>,
    file: &std::path::Path,
) -> anyhow::Result<u8> {
    use crate::license::{Kind, Verdict};
    let path = env.credentials_path()?;
    let existing = credentials::load(&path)?;
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("could not read {}", file.display()))?;
    let licence: tidemark_wire::verdict::OfflineLicenceFile = serde_json::from_str(&text)
        .with_context(|| format!("{} is not an offline licence file", file.display()))?;
    if licence.format != tidemark_wire::verdict::OFFLINE_FILE_FORMAT {
        bail!("{} is not an offline licence file", file.display());
    }
    let hash = read_license_key(env, key_file)?;
    let fingerprint = crate::machine::fingerprint(env);
    // Keys this machine already trusts (it was online once, or the build's anchor) decide
    // which of the file's keys count; a first activation pins the file's own.
    let first = existing
        .as_ref()
        .and_then(|c| c.trusted_keys.clone())
        .or_else(TrustedKeys::anchor);
    let mut trusted = match first {
        Some(mut t) => {
            t.learn(&licence.keys).context(
                "the licence file's keys are not vouched for by the keys this machine trusts",
            )?;
            t
        }
        None => {
            let pinned = TrustedKeys::pin(&licence.keys)
                .context("the licence file's key set does not verify")?;
            let kids: Vec<&str> = pinned.keys.iter().map(|k| k.kid.as_str()).collect();
            writeln!(
                out,
                "Trusting signing key(s) {} from the file (compare with Settings → Licence or \
                 `tidemark-server signing-key list`).",
                kids.join(", ")
            )?;
            pinned
        }
    };
    let claims = trusted
        .verify(&licence.verdict, Kind::OfflineFile.typ())
        .map_err(|e| NotAuthorized(format!("the offline licence file: {e}")))?;
    crate::verdict::Expect::for_licence(&hash, &fingerprint)
        .check(&claims)
        .map_err(NotAuthorized)?;
    let verdict = Verdict {
        claims,
        jws: licence.verdict,
        kind: Kind::OfflineFile,
    };
    license::judge(env.now, &verdict, env.now).map_err(NotAuthorized)?;
    let (url, api_key) = existing
        .map(|c| (c.url, c.api_key))
        .unwrap_or_else(|| (verdict.claims.iss.clone(), String::new()));
    credentials::save(
        &path,
        &Credentials {
            url,
            api_key,
            license_key_hash: hash,
            validation: Some(verdict.to_cache(env.now)),
            trusted_keys: Some(std::mem::take(&mut trusted)),
        },
    )?;
    writeln!(
        out,
        "Installed the offline licence from {}; credentials saved to {} (mode 0600).",
        file.display(),
        path.display()
    )?;
    print_mode(
        out,
        env.now,
        &Mode::Licensed {
            verdict: Box::new(verdict),
            offline: true,
        },
    )?;
    Ok(0)
}

/// The cached verdict, verified: `Ok(None)` when there is none, `Err` saying why it cannot
/// be trusted.
fn open_cache(creds: &Credentials, fingerprint: &str) -> Result<Option<license::Verdict>, String> {
    let Some(cache) = &creds.validation else {
        return Ok(None);
    };
    let trusted = creds
        .trusted_keys
        .as_ref()
        .ok_or("the cached licence verdict cannot be checked: no signing key is pinned")?;
    let claims = trusted
        .verify(&cache.verdict, cache.kind.typ())
        .map_err(|e| format!("the cached licence verdict is not trustworthy: {e}"))?;
    crate::verdict::Expect::for_licence(&creds.license_key_hash, fingerprint).check(&claims)?;
    Ok(Some(license::Verdict {
        claims,
        jws: cache.verdict.clone(),
        kind: cache.kind,
    }))
}

/// The stored credentials, revalidated if the cache is stale or untrustworthy; saves what
/// changed.
async fn checked_license(
    client: &Client,
    env: &Env,
    explicit: bool,
) -> anyhow::Result<(Credentials, Mode)> {
    let path = env.credentials_path()?;
    let mut creds = credentials::load(&path)?.ok_or_else(|| {
        NotAuthorized(format!(
            "this machine is not activated ({} does not exist); run `tidemark activate`",
            path.display()
        ))
    })?;
    let stored = creds.clone();
    let fingerprint = crate::machine::fingerprint(env);
    let opened = open_cache(&creds, &fingerprint);
    let offline_file = creds
        .validation
        .as_ref()
        .is_some_and(|c| c.kind == license::Kind::OfflineFile);
    let newest_seen = creds
        .validation
        .as_ref()
        .map_or(DateTime::<Utc>::MIN_UTC, |c| c.newest_seen);
    let needs = match &opened {
        Ok(v) => license::needs_validation(env.now, v.as_ref(), explicit),
        Err(_) => !offline_file,
    };
    let cache_view = opened.as_ref().map(Option::as_ref).map_err(String::as_str);
    let (verdict, mode, newest) = if needs {
        let mut trusted = creds.trusted_keys.clone();
        let outcome = match &mut trusted {
            Some(t) => {
                client
                    .validation_outcome(&creds.license_key_hash, &fingerprint, t)
                    .await
            }
            // Activated before signed verdicts: pin from the service now.
            None => match client.keys().await {
                Ok(set) => match TrustedKeys::pin(&set) {
                    Ok(mut t) => {
                        let outcome = client
                            .validation_outcome(&creds.license_key_hash, &fingerprint, &mut t)
                            .await;
                        trusted = Some(t);
                        outcome
                    }
                    Err(e) => license::Outcome::Unreachable(format!("the service's key set: {e}")),
                },
                Err(e) => license::Outcome::Unreachable(e.to_string()),
            },
        };
        // A fresh verdict carries the service's time: the clock guard starts again from it.
        let fresh = matches!(outcome, license::Outcome::Answered(_));
        let (verdict, mode) = license::after_validation(env.now, cache_view, newest_seen, outcome);
        creds.trusted_keys = trusted;
        let newest = match &verdict {
            Some(v) if fresh => v.issued_at(),
            _ => newest_seen,
        };
        (verdict, mode, newest)
    } else {
        let mode = license::from_cache(env.now, cache_view, newest_seen);
        (opened.clone().ok().flatten(), mode, newest_seen)
    };
    // The clock guard moves forward with this machine's clock, never past what the verdict
    // allows (a clock set far ahead by mistake must not lock the licence out once fixed).
    let newest = match (&verdict, mode.is_licensed()) {
        (Some(v), true) => newest.max(env.now.min(v.good_until())),
        _ => newest,
    };
    // Written when the verdict changed, or the guard moved an hour or more: not on every run.
    let cache = verdict.map(|v| v.to_cache(newest));
    let worth_writing = match (&cache, &creds.validation) {
        (Some(new), Some(old)) => {
            new.verdict != old.verdict
                || new.newest_seen - old.newest_seen >= chrono::Duration::hours(1)
        }
        (new, old) => new.is_some() != old.is_some(),
    };
    if worth_writing {
        creds.validation = cache;
    }
    if creds != stored {
        credentials::save(&path, &creds)?;
    }
    Ok((creds, mode))
}

async fn status(
    client: &Client,
    env: &Env,
    out: &mut (dyn Write + Send),
    json: bool,
) -> anyhow::Result<u8> {
    let (_, mode) = checked_license(client, env, false).await?;
    if json {
        writeln!(
            out,
            "{}",
            serde_json::to_string(&mode_json(env.now, &mode))?
        )?;
    } else {
        print_mode(out, env.now, &mode)?;
    }
    Ok(if mode.is_licensed() {
        exit::OK
    } else {
        exit::AUTH
    })
}

/// `status --json`: the license mode as data.
fn mode_json(now: DateTime<Utc>, mode: &Mode) -> serde_json::Value {
    match mode {
        Mode::Licensed { verdict, offline } => serde_json::json!({
            "licensed": true,
            "tier": verdict.claims.tier,
            "features": verdict.claims.features,
            "expiry": verdict.claims.expiry,
            "validated_at": verdict.issued_at().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "offline": offline,
            "offline_file": verdict.kind == license::Kind::OfflineFile,
            "offline_grace_left_seconds": license::grace_left(now, verdict).num_seconds().max(0),
            "signed_by": crate::verdict::jws_kid(&verdict.jws),
        }),
        Mode::Unlicensed { reason } => serde_json::json!({
            "licensed": false,
            "reason": reason,
        }),
    }
}

fn print_mode(out: &mut (dyn Write + Send), now: DateTime<Utc>, mode: &Mode) -> anyhow::Result<()> {
    match mode {
        Mode::Licensed { verdict, offline } => {
            let r = &verdict.claims;
            writeln!(out, "License:    licensed ({} tier)", r.tier.as_str())?;
            let features: Vec<&str> = r.features.iter().map(|f| f.as_str()).collect();
            writeln!(
                out,
                "Features:   {}",
                if features.is_empty() {
                    "none".into()
                } else {
                    features.join(", ")
                }
            )?;
            writeln!(out, "Expires:    {}", r.expiry)?;
            if verdict.kind == license::Kind::OfflineFile {
                writeln!(
                    out,
                    "Offline licence file: valid until {} ({} left)",
                    verdict
                        .good_until()
                        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                    human(license::grace_left(now, verdict))
                )?;
                return Ok(());
            }
            writeln!(
                out,
                "Validated:  {} ago{}",
                human(now - verdict.issued_at()),
                if *offline {
                    " (service unreachable: using the cached validation)"
                } else {
                    ""
                }
            )?;
            writeln!(
                out,
                "Offline grace left: {}",
                human(license::grace_left(now, verdict))
            )?;
        }
        Mode::Unlicensed { reason } => {
            writeln!(out, "License:    unlicensed: {reason}")?;
        }
    }
    Ok(())
}

fn human(d: chrono::Duration) -> String {
    let mins = d.num_minutes().max(0);
    match (mins / (24 * 60), (mins / 60) % 24, mins % 60) {
        (0, 0, m) => format!("{m}m"),
        (0, h, m) => format!("{h}h {m}m"),
        (days, h, _) => format!("{days}d {h}h"),
    }
}

struct PushOptions {
    label: Option<String>,
    fail_on: FailOn,
    max_retries: u32,
    retry_for: u64,
    json: bool,
    git: GitArgs,
}

/// Which verdicts make `push` exit with [`exit::VERDICT`].
#[derive(Debug, Clone, Copy)]
struct FailOn {
    regression: bool,
    gate: bool,
}

async fn push(
    client: &Client,
    env: &Env,
    out: &mut (dyn Write + Send),
    file: &std::path::Path,
    options: PushOptions,
) -> anyhow::Result<u8> {
    let PushOptions {
        label,
        fail_on,
        max_retries,
        retry_for,
        json,
        git: git_args,
    } = options;
    // With --json, standard output carries the JSON answer only.
    let mut stderr = std::io::stderr();
    let human: &mut (dyn Write + Send) = if json { &mut stderr } else { &mut *out };
    let from_stdin = file.as_os_str() == "-";
    let source = if from_stdin {
        "standard input".to_owned()
    } else {
        file.display().to_string()
    };
    let text = if from_stdin {
        (env.read_stdin)().context("could not read standard input")?
    } else {
        std::fs::read_to_string(file).with_context(|| format!("could not read {source}"))?
    };
    let mut body: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{source} is not JSON"))?;
    if let Some(label) = label {
        let obj = body
            .as_object_mut()
            .context("the push body must be a JSON object")?;
        obj.insert("project_label".into(), serde_json::Value::String(label));
    }
    let git = (!git_args.no_git).then(|| git_context(env, &body, &git_args));
    if let Some(git) = git.as_ref().filter(|g| !g.is_empty()) {
        let obj = body
            .as_object_mut()
            .context("the push body must be a JSON object")?;
        obj.insert("git".into(), git.to_json());
        writeln!(human, "{}", describe_git(git))?;
    }
    let api_key = match credential(client, env).await? {
        Credential::Keyless(answer) => {
            writeln!(human, "Keyless CI: {}", crate::keyless::describe(&answer))?;
            answer.token
        }
        Credential::ApiKey { key, .. } => key,
        Credential::Activation => {
            let (creds, mode) = checked_license(client, env, false).await?;
            if let Mode::Unlicensed { reason } = mode {
                return Err(
                    NotAuthorized(format!("cannot push while unlicensed: {reason}")).into(),
                );
            }
            creds.api_key
        }
    };
    if !(api_key.starts_with("svc_api_") || api_key.starts_with("tmk_ci_")) {
        return Err(NotAuthorized("the API key is malformed (every key starts with svc_api_); run `tidemark activate` again, or fix TIDEMARK_API_KEY".into()).into());
    }
    let bytes = serde_json::to_vec(&body)?;
    let policy = RetryPolicy {
        max_retries,
        max_wait: Duration::from_secs(retry_for),
        ..env.retry_policy()
    };
    // Each wait is said as it begins: a CI log shows what the job is waiting for.
    let result = client
        .push(&api_key, &bytes, policy, |why, attempt, delay| {
            let _ = writeln!(
                human,
                "{why}; waiting {:.1} s before retry {attempt} of at most {max_retries}.",
                delay.as_secs_f64()
            );
            let _ = human.flush();
        })
        .await;
    let answer = result.map_err(explain)?;
    writeln!(human, "Pushed: {}", answer.dashboard_url)?;
    writeln!(human, "Score delta: {:+.2}", answer.score_delta)?;
    if let Some(base) = &answer.base {
        writeln!(human, "Against {}: {}", base.branch, base.message)?;
    }
    writeln!(human, "Quality gate: {}", answer.gate.status.as_str())?;
    for reason in &answer.gate.reasons {
        writeln!(human, "  - {reason}")?;
    }
    let score = body.get("score").and_then(serde_json::Value::as_f64);
    github_outputs(env, &answer, score)?;
    if git_args.comment {
        let label = body["project_label"]
            .as_str()
            .unwrap_or("project")
            .to_owned();
        decorate_forge(env, human, git.as_ref(), &label, score, &answer).await?;
    }
    let mut status = 0;
    if fail_on.regression && answer.score_delta < 0.0 {
        writeln!(human, "The score regressed since the previous scan.")?;
        status = exit::VERDICT;
    }
    if fail_on.gate && answer.gate.status == tidemark_wire::GateStatus::Failed {
        writeln!(human, "The project's quality gate failed.")?;
        status = exit::VERDICT;
    }
    if json {
        writeln!(out, "{}", serde_json::to_string(&answer)?)?;
    }
    Ok(status)
}

/// The push's git context: detected (CI variables, else `git`), then the body's own `git`
/// object, then the flags.
fn git_context(env: &Env, body: &serde_json::Value, flags: &GitArgs) -> crate::git::GitInfo {
    use crate::git::{GitInfo, Overrides};
    let var = |k: &str| env.var(k);
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let mut info = GitInfo::from_ci(&var, &read)
        .or_else(|| GitInfo::from_git(&*env.run_git))
        .unwrap_or_default();
    if body["git"].is_object() {
        info.overlay_json(&body["git"]);
    }
    info.apply(&Overrides {
        branch: flags.branch.clone(),
        commit: flags.commit.clone(),
        pull_request: flags.pull_request,
        base_branch: flags.base_branch.clone(),
        default_branch: flags.default_branch.clone(),
    });
    info
}

fn describe_git(git: &crate::git::GitInfo) -> String {
    let from = if git.source.is_empty() {
        String::new()
    } else {
        format!(" (from {})", git.source)
    };
    match (&git.pull_request, &git.branch) {
        (Some(pr), _) if !pr.base_branch.is_empty() => {
            format!("Pull request #{} into {}{from}", pr.number, pr.base_branch)
        }
        (_, Some(branch)) => format!("Branch {branch}{from}"),
        _ => format!("The project's default branch{from}"),
    }
}

/// `--comment`: the pull-request comment and the commit status. A forge that refuses (a
/// token without the right scope, say) is reported but does not fail the push, which was
/// stored.
async fn decorate_forge(
    env: &Env,
    human: &mut (dyn Write + Send),
    git: Option<&crate::git::GitInfo>,
    label: &str,
    score: Option<f64>,
    answer: &tidemark_wire::PushResponse,
) -> anyhow::Result<()> {
    use crate::decorate::{decorate, Token};
    use crate::git::Forge;
    let var = |k: &str| env.var(k);
    let (Some(forge), Some(git)) = (Forge::from_ci(&var), git) else {
        writeln!(
            human,
            "--comment: not in GitHub Actions or GitLab CI; nothing to comment on."
        )?;
        return Ok(());
    };
    let Some(token) = Token::from_vars(&forge, &var) else {
        writeln!(
            human,
            "--comment: no token; set GITHUB_TOKEN (GitHub) or TIDEMARK_GITLAB_TOKEN (GitLab)."
        )?;
        return Ok(());
    };
    match decorate(&forge, &token, git, label, score, answer).await {
        Ok(done) => {
            if let Some((how, link)) = done.comment {
                writeln!(
                    human,
                    "Pull request comment {how}{}",
                    link.map(|l| format!(": {l}")).unwrap_or_default()
                )?;
            }
            if let Some(status) = done.status {
                writeln!(human, "Commit status: {status}")?;
            }
        }
        Err(e) => writeln!(human, "warning: could not decorate the pull request: {e:#}")?,
    }
    Ok(())
}

/// In GitHub Actions (`GITHUB_OUTPUT`, `GITHUB_STEP_SUMMARY` set): the step outputs
/// `scan_id`, `score`, `delta`, `gate` and `dashboard_url`, and a summary table for the run's
/// page. Appended, as the runner expects; nothing happens outside Actions.
fn github_outputs(
    env: &Env,
    answer: &tidemark_wire::PushResponse,
    score: Option<f64>,
) -> anyhow::Result<()> {
    let append = |path: String, text: String| -> anyhow::Result<()> {
        use std::io::Write as _;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("could not open {path}"))?;
        f.write_all(text.as_bytes())
            .with_context(|| format!("could not write {path}"))
    };
    let score_text = score.map(|s| format!("{s}")).unwrap_or_default();
    if let Some(path) = env.var("GITHUB_OUTPUT") {
        append(
            path,
            format!(
                "scan_id={}\nscore={score_text}\ndelta={}\ngate={}\ndashboard_url={}\nbranch={}\nnew_findings={}\n",
                answer.scan_id,
                answer.score_delta,
                answer.gate.status.as_str(),
                answer.dashboard_url,
                answer.branch.as_deref().unwrap_or(""),
                answer
                    .base
                    .as_ref()
                    .and_then(|b| b.new_findings)
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ),
        )?;
    }
    if let Some(path) = env.var("GITHUB_STEP_SUMMARY") {
        let mut md = format!(
            "### Tidemark scan [{}]({})\n\n| Score | Change | Quality gate |\n|---|---|---|\n| {score_text} | {:+.2} | {} |\n",
            answer.scan_id,
            answer.dashboard_url,
            answer.score_delta,
            answer.gate.status.as_str()
        );
        if let Some(base) = &answer.base {
            md.push_str(&format!(
                "\n**Against `{}`:** {}\n",
                base.branch, base.message
            ));
        }
        for reason in &answer.gate.reasons {
            md.push_str(&format!("\n- {reason}"));
        }
        md.push('\n');
        append(path, md)?;
    }
    Ok(())
}

async fn pull_bundle(
    client: &Client,
    env: &Env,
    out: &mut (dyn Write + Send),
    dir: Option<PathBuf>,
) -> anyhow::Result<u8> {
    // A pull is explicit: always ask for the latest bundle.
    let (creds, mode) = checked_license(client, env, true).await?;
    let verdict = match mode {
        Mode::Licensed { verdict, offline: false } if verdict.kind == license::Kind::Validation => verdict,
        Mode::Licensed { offline: false, .. } => bail!("this machine runs from an offline licence file; bundles come with it from your admin"),
        Mode::Licensed { offline: true, .. } => bail!("the license service is unreachable, so the latest bundle is unknown; try again when online"),
        Mode::Unlicensed { reason } => {
            return Err(NotAuthorized(format!("cannot pull bundles while unlicensed: {reason}")).into())
        }
    };
    // The checksum comes from the signed verdict: the bundle is authentic, not just intact.
    let (Some(url), Some(checksum)) = (verdict.claims.bundle_url, verdict.claims.bundle_sha256)
    else {
        writeln!(out, "No bundle has been published yet.")?;
        return Ok(0);
    };
    let dir = match dir {
        Some(d) => d,
        None => env
            .credentials_path()?
            .parent()
            .map(|p| p.join("bundles"))
            .context("no configuration directory")?,
    };
    let bytes = client
        .download(&url, &creds.license_key_hash)
        .await
        .map_err(explain)?;
    let path = crate::bundle::install(&dir, "profile-bundle", &bytes, &checksum)?;
    writeln!(
        out,
        "Bundle verified ({checksum}) and saved to {}.",
        path.display()
    )?;
    Ok(0)
}

/// The options and arguments of `command` and its subcommands that `--help` leaves
/// unexplained, as "subcommand … argument". Both commands' tests (`tidemark`,
/// `tidemark-server`) require none.
pub fn undocumented_args(command: &clap::Command) -> Vec<String> {
    fn walk(command: &clap::Command, path: &str, out: &mut Vec<String>) {
        for arg in command.get_arguments() {
            let builtin = matches!(arg.get_id().as_str(), "help" | "version");
            if !builtin && arg.get_help().is_none() && arg.get_long_help().is_none() {
                out.push(format!("{path} {}", arg.get_id()));
            }
        }
        for sub in command.get_subcommands() {
            walk(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }
    let mut out = Vec::new();
    walk(command, command.get_name(), &mut out);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_option_has_help() {
        use clap::CommandFactory as _;
        let missing = super::undocumented_args(&super::Cli::command());
        assert!(missing.is_empty(), "without help text: {missing:#?}");
    }

    #[test]
    fn durations_read_naturally() {
        use chrono::Duration;
        assert_eq!(super::human(Duration::minutes(5)), "5m");
        assert_eq!(super::human(Duration::minutes(125)), "2h 5m");
        assert_eq!(super::human(Duration::hours(50)), "2d 2h");
    }
}
