//! What a command needs from the outside world ([`Env`]: variables, clock, secret input, git),
//! and the refusal found before asking the service ([`NotAuthorized`]). Below the command
//! parser: every command module takes these, none takes the parser.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use chrono::{DateTime, Utc};

use crate::client::RetryPolicy;
use crate::credentials;

/// A refusal on authentication or license grounds found before asking the service.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NotAuthorized(pub(crate) String);

/// Everything `run` needs from the outside world.
pub struct Env {
    pub vars: HashMap<String, String>,
    pub now: DateTime<Utc>,
    /// Reads the license key (prompt without echo, or standard input).
    pub read_license_key: Box<dyn Fn() -> std::io::Result<String> + Send + Sync>,
    /// Reads all of standard input (`push -`).
    pub read_stdin: Box<dyn Fn() -> std::io::Result<String> + Send + Sync>,
    /// Jitter added to every wait before a retry (tests use a small one).
    pub max_jitter: Duration,
    /// The first back-off when the service does not answer; it doubles on each retry.
    pub backoff_base: Duration,
    /// Runs `git` with these arguments in the working directory: its trimmed standard output
    /// when it succeeded (tests answer for it).
    pub run_git: Box<GitRunner>,
}

/// Runs `git` with the given arguments (see [`Env::run_git`]).
pub type GitRunner = dyn Fn(&[&str]) -> Option<String> + Send + Sync;

impl Env {
    /// The default retries, with this environment's jitter and back-off.
    pub fn retry_policy(&self) -> RetryPolicy {
        RetryPolicy {
            max_jitter: self.max_jitter,
            backoff_base: self.backoff_base,
            ..RetryPolicy::default()
        }
    }

    pub fn var(&self, name: &str) -> Option<String> {
        self.vars.get(name).filter(|v| !v.is_empty()).cloned()
    }

    pub(crate) fn credentials_path(&self) -> anyhow::Result<PathBuf> {
        credentials::default_path(|k| self.var(k))
            .context("cannot find the configuration directory: set XDG_CONFIG_HOME or HOME")
    }
}
