//! The `tidemark` command. [`run`] does all the work and takes its environment, clock and
//! secret input as arguments, so tests drive it in-process; `main.rs` only wires in the real
//! process environment.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Parser, Subcommand};

use crate::client::{Client, ClientError, DEFAULT_MAX_WAIT};
use crate::credential::{credential, Credential};
use crate::credentials::{self};
pub use crate::env::{Env, GitRunner, NotAuthorized};

pub const DEFAULT_URL: &str = "http://127.0.0.1:3000";

pub use crate::exit;

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
    /// A project's compliance posture per framework: requirements passed, failed, triaged and
    /// not evaluated now, the share passing and its trend, and what drifted.
    Posture(crate::posture::PostureArgs),
    /// The account's custom frameworks: its own controls mapped to scanned rules, kept as code
    /// (`frameworks set FILE`).
    #[command(subcommand)]
    Frameworks(crate::frameworks::FrameworksCommand),
    /// Compliance reports: `report verify FILE` checks a signed report's signature and
    /// integrity (offline with --keys).
    #[command(subcommand)]
    Report(crate::report::ReportCommand),
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

use crate::activate::{activate, activate_offline, status};
pub use crate::push::GitArgs;
use crate::push::{pull_bundle, push, FailOn, PushOptions};

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
        Command::Posture(args) => crate::posture::posture(&client, env, out, args).await,
        Command::Frameworks(command) => {
            crate::frameworks::frameworks(&client, env, out, command).await
        }
        Command::Report(command) => crate::report::report(&client, out, command).await,
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
}
