//! Keyless CI: with no API key configured, a job in GitHub Actions or GitLab CI proves who it
//! is with its own OpenID Connect token and gets a 15-minute push token for it. The push
//! token is kept in the job's temporary directory (mode 0600) until it nearly expires, so
//! `whoami` and `push` in one job exchange once (GitLab hands a job one token, and a token
//! is exchanged only once).
//!
//! The GitHub request is the one `@actions/core`'s `getIDToken` makes. The `ambient-id` crate
//! does the same, but names GitLab's variable after the audience (`<AUDIENCE>_ID_TOKEN`)
//! where our contract says `TIDEMARK_ID_TOKEN`, and its current release needs a second major
//! version of reqwest in the scanner: the twenty lines are kept here instead.

use std::path::PathBuf;

use anyhow::Context as _;
use sha2::{Digest as _, Sha256};
use tidemark_wire::OidcExchangeResponse;

use crate::client::Client;
use crate::env::{Env, NotAuthorized};

/// GitLab: the `id_tokens:` entry the job declares, with `aud` set to Tidemark's audience.
pub const GITLAB_TOKEN_VARIABLE: &str = "TIDEMARK_ID_TOKEN";

/// Where the job's token comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobToken {
    /// GitHub Actions, with `permissions: id-token: write`.
    GitHub {
        request_url: String,
        request_token: String,
    },
    /// GitLab CI's `TIDEMARK_ID_TOKEN`.
    GitLab { token: String },
}

/// The CI's job token source, if this is a CI job that offers one. A GitHub job without
/// `id-token: write` (or a pull request from a fork, which never gets a token) is an error
/// that says so, when `needed`.
pub fn detect(env: &Env) -> Result<Option<JobToken>, NotAuthorized> {
    if env.var("GITHUB_ACTIONS").as_deref() == Some("true") {
        return match (
            env.var("ACTIONS_ID_TOKEN_REQUEST_URL"),
            env.var("ACTIONS_ID_TOKEN_REQUEST_TOKEN"),
        ) {
            (Some(request_url), Some(request_token)) => Ok(Some(JobToken::GitHub {
                request_url,
                request_token,
            })),
            _ => Err(NotAuthorized(
                "no API key (TIDEMARK_API_KEY) and no OpenID Connect token for keyless CI: \
                 give the job `permissions: id-token: write`. Pull requests from forks never \
                 get a token: push from a workflow on the base repository, or use an API key \
                 secret there (docs/ci.md)."
                    .into(),
            )),
        };
    }
    if env.var("GITLAB_CI").as_deref() == Some("true") {
        return match env.var(GITLAB_TOKEN_VARIABLE) {
            Some(token) => Ok(Some(JobToken::GitLab { token })),
            None => Err(NotAuthorized(format!(
                "no API key (TIDEMARK_API_KEY) and no {GITLAB_TOKEN_VARIABLE} for keyless CI: \
                 add `id_tokens: {{{GITLAB_TOKEN_VARIABLE}: {{aud: <Tidemark URL>}}}}` to the \
                 job (docs/ci.md)."
            ))),
        };
    }
    Ok(None)
}

/// The audience to ask for: `TIDEMARK_OIDC_AUDIENCE`, else the service URL (the server's
/// default).
pub fn audience(env: &Env, url: &str) -> String {
    env.var("TIDEMARK_OIDC_AUDIENCE")
        .unwrap_or_else(|| url.trim_end_matches('/').to_owned())
}

/// A push token for this job: the one kept from an earlier exchange in this job while it has
/// more than a minute left, else a new exchange.
pub async fn push_token(
    client: &Client,
    env: &Env,
    source: &JobToken,
) -> anyhow::Result<OidcExchangeResponse> {
    let cache = cache_path(env, client.base_url(), source);
    if let Some(kept) = read_cached(&cache, env) {
        return Ok(kept);
    }
    let job_token = match source {
        JobToken::GitHub {
            request_url,
            request_token,
        } => client
            .github_job_token(
                request_url,
                request_token,
                &audience(env, client.base_url()),
            )
            .await
            .context("could not get the job's OpenID Connect token from GitHub")?,
        JobToken::GitLab { token } => token.clone(),
    };
    let answer = client
        .exchange_oidc(&job_token, env.var("TIDEMARK_ACCOUNT").as_deref())
        .await
        .context("the job's OpenID Connect token was not exchanged for a push token")?;
    write_cached(&cache, &answer);
    Ok(answer)
}

/// One line saying who the service matched.
pub fn describe(answer: &OidcExchangeResponse) -> String {
    let id = &answer.identity;
    let mut out = format!("{} {}", id.provider, id.repository);
    if let Some(w) = &id.workflow {
        out.push_str(&format!(", {w}"));
    }
    if let Some(r) = &id.git_ref {
        out.push_str(&format!(", {r}"));
    }
    if let Some(e) = &id.environment {
        out.push_str(&format!(", environment {e}"));
    }
    let projects = answer.projects.as_ref().map_or_else(
        || "every project".to_owned(),
        |p| format!("project {}", p.join(", ")),
    );
    format!(
        "{out}; may push to {projects} of account {} until {}",
        answer.account_id, answer.expires_at
    )
}

/// In the job's own temporary directory, named by a hash of what identifies the job's token
/// (never the token itself).
fn cache_path(env: &Env, url: &str, source: &JobToken) -> PathBuf {
    let dir = env
        .var("RUNNER_TEMP")
        .or_else(|| env.var("TMPDIR"))
        .map_or_else(std::env::temp_dir, PathBuf::from);
    let secret = match source {
        JobToken::GitHub { request_token, .. } => request_token,
        JobToken::GitLab { token } => token,
    };
    let mut hash = Sha256::new();
    hash.update(url.as_bytes());
    hash.update([0]);
    hash.update(secret.as_bytes());
    dir.join(format!(
        "tidemark-ci-{}.json",
        &hex::encode(hash.finalize())[..24]
    ))
}

fn read_cached(path: &PathBuf, env: &Env) -> Option<OidcExchangeResponse> {
    let kept: OidcExchangeResponse = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    let expires = chrono::DateTime::parse_from_rfc3339(&kept.expires_at).ok()?;
    (expires > env.now + chrono::Duration::seconds(60)).then_some(kept)
}

/// Best effort: without it the next command exchanges again (and on GitLab is refused as a
/// replay, which says to use one command per job or an API key).
fn write_cached(path: &PathBuf, answer: &OidcExchangeResponse) {
    let Ok(bytes) = serde_json::to_vec(answer) else {
        return;
    };
    #[cfg(unix)]
    {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        let _ = std::fs::remove_file(path);
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
        {
            let _ = f.write_all(&bytes);
        }
    }
    #[cfg(not(unix))]
    {
        let _ = std::fs::write(path, bytes);
    }
}
