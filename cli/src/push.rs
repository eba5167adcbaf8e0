//! `push` and `bundle pull`: a scan sent with its git context (and, with `--comment`, told
//! back on the pull request), and the rule bundle fetched.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context as _};

use crate::activate::checked_license;
use crate::client::{Client, RetryPolicy};
use crate::credential::{credential, explain, Credential};
pub use crate::env::{Env, GitRunner, NotAuthorized};
use crate::exit;
use crate::license::{self, Mode};

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

pub(crate) struct PushOptions {
    pub(crate) label: Option<String>,
    pub(crate) fail_on: FailOn,
    pub(crate) max_retries: u32,
    pub(crate) retry_for: u64,
    pub(crate) json: bool,
    pub(crate) git: GitArgs,
}

/// Which verdicts make `push` exit with [`exit::VERDICT`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct FailOn {
    pub(crate) regression: bool,
    pub(crate) gate: bool,
}

/// The body's project label, which the push names to the proxy too.
fn pushed_label(body: &serde_json::Value) -> Option<String> {
    let label = body.get("project_label")?.as_str()?;
    Some(label.to_owned())
}

pub(crate) async fn push(
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
        .push(
            &api_key,
            &bytes,
            pushed_label(&body).as_deref(),
            policy,
            |why, attempt, delay| {
                let _ = writeln!(
                    human,
                    "{why}; waiting {:.1} s before retry {attempt} of at most {max_retries}.",
                    delay.as_secs_f64()
                );
                let _ = human.flush();
            },
        )
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

pub(crate) async fn pull_bundle(
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

#[cfg(test)]
mod tests {
    use super::pushed_label;
    use serde_json::json;

    #[test]
    fn the_proxy_is_told_the_bodys_label_and_nothing_else() {
        assert_eq!(
            pushed_label(&json!({"project_label": "payments-api", "score": 1})).as_deref(),
            Some("payments-api")
        );
        assert_eq!(pushed_label(&json!({"project_label": 7})), None);
        assert_eq!(pushed_label(&json!({"score": 1})), None);
    }
}
