//! Pull-request decoration: one comment on the pull (merge) request, found again by a hidden
//! marker and updated on every later push, and a commit status with the verdict, through
//! GitHub's or GitLab's REST API with the CI job's token.

use anyhow::{bail, Context as _};
use serde_json::{json, Value};
use tidemark_wire::{GateStatus, PushResponse};

use crate::git::{Forge, GitInfo};

/// How the job authenticates to its forge.
#[derive(Clone)]
pub enum Token {
    /// GitHub's `GITHUB_TOKEN` (or any token), sent as a bearer token.
    Bearer(String),
    /// A GitLab personal, project or group access token (`PRIVATE-TOKEN`).
    GitLabPrivate(String),
    /// GitLab's `CI_JOB_TOKEN` (`JOB-TOKEN`): enough for statuses on some instances, not for
    /// notes; a project access token is the documented choice.
    GitLabJob(String),
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(redacted)")
    }
}

impl Token {
    /// The token for `forge` from the job's variables: `TIDEMARK_FORGE_TOKEN` first, then
    /// GitHub's `GITHUB_TOKEN`, or GitLab's `TIDEMARK_GITLAB_TOKEN`, `GITLAB_TOKEN`,
    /// `CI_JOB_TOKEN`.
    pub fn from_vars(forge: &Forge, var: &dyn Fn(&str) -> Option<String>) -> Option<Token> {
        match forge {
            Forge::GitHub { .. } => var("TIDEMARK_FORGE_TOKEN")
                .or_else(|| var("GITHUB_TOKEN"))
                .map(Token::Bearer),
            Forge::GitLab { .. } => var("TIDEMARK_FORGE_TOKEN")
                .or_else(|| var("TIDEMARK_GITLAB_TOKEN"))
                .or_else(|| var("GITLAB_TOKEN"))
                .map(Token::GitLabPrivate)
                .or_else(|| var("CI_JOB_TOKEN").map(Token::GitLabJob)),
        }
    }
}

/// What was done, for the job log.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Decorated {
    /// `created` or `updated`, with the comment's address when the forge gave one.
    pub comment: Option<(String, Option<String>)>,
    pub status: Option<String>,
}

/// The hidden line that finds this project's comment again on a later push.
pub fn marker(project_id: &str) -> String {
    format!("<!-- tidemark:report project={project_id} -->")
}

/// The comment's Markdown.
pub fn comment_body(label: &str, score: Option<f64>, answer: &PushResponse) -> String {
    let verdict = match answer.gate.status {
        GateStatus::Failed => "❌ quality gate failed",
        GateStatus::Passed => "✅ quality gate passed",
        GateStatus::None => "no quality gate",
    };
    let mut md = format!(
        "{}\n### Tidemark: {} — {verdict}\n\n",
        marker(&answer.project_id),
        escape(label)
    );
    let score = score.map(|s| format!("{s}")).unwrap_or_else(|| "–".into());
    match &answer.base {
        Some(base) => match (base.score_delta, base.new_findings, base.fixed_findings) {
            (Some(delta), Some(new), Some(fixed)) => md.push_str(&format!(
                "| Score | vs `{}` | New findings | Fixed |\n|---|---|---|---|\n| {score} | {delta:+.2} | {new} | {fixed} |\n",
                escape(&base.branch)
            )),
            _ => md.push_str(&format!(
                "| Score |\n|---|\n| {score} |\n\n`{}` has no scan yet, so this pull request was judged on its own.\n",
                escape(&base.branch)
            )),
        },
        None => md.push_str(&format!(
            "| Score | Change |\n|---|---|\n| {score} | {:+.2} |\n",
            answer.score_delta
        )),
    }
    if !answer.gate.reasons.is_empty() {
        md.push('\n');
        for reason in &answer.gate.reasons {
            md.push_str(&format!("- {}\n", escape(reason)));
        }
    }
    md.push_str(&format!(
        "\n[Open scan {} in Tidemark]({}) · updated on every push\n",
        answer.scan_id, answer.dashboard_url
    ));
    md
}

/// The status's one line (forges cut descriptions at 140 characters).
pub fn status_description(answer: &PushResponse) -> String {
    let gate = match answer.gate.status {
        GateStatus::Failed => "Gate failed",
        GateStatus::Passed => "Gate passed",
        GateStatus::None => "No gate",
    };
    let detail = match &answer.base {
        Some(b) => match b.new_findings {
            Some(n) => format!(
                "{n} new finding{} vs {}",
                if n == 1 { "" } else { "s" },
                b.branch
            ),
            None => format!("{} not scanned yet", b.branch),
        },
        None => format!("score {:+.2}", answer.score_delta),
    };
    let mut text = format!("{gate} · {detail}");
    if text.chars().count() > 140 {
        text = text.chars().take(139).collect::<String>() + "…";
    }
    text
}

/// Markdown's active characters in text that came from elsewhere (labels, reasons).
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(
            c,
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '#'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Comments on the pull request (creating or updating this project's one comment) and sets
/// the commit status.
pub async fn decorate(
    forge: &Forge,
    token: &Token,
    git: &GitInfo,
    label: &str,
    score: Option<f64>,
    answer: &PushResponse,
) -> anyhow::Result<Decorated> {
    let http = reqwest::Client::builder()
        .user_agent(concat!("tidemark-cli/", env!("CARGO_PKG_VERSION")))
        .timeout(std::time::Duration::from_secs(30))
        .build()?;
    let api = Api { http, forge, token };
    let mut done = Decorated::default();
    if let Some(pr) = &git.pull_request {
        let body = comment_body(label, score, answer);
        done.comment = Some(
            api.upsert_comment(pr.number, &answer.project_id, &body)
                .await?,
        );
    }
    if let Some(sha) = git.status_sha() {
        let failed = answer.gate.status == GateStatus::Failed;
        let context: String = format!("tidemark/{label}").chars().take(100).collect();
        api.set_status(
            sha,
            failed,
            &context,
            &status_description(answer),
            &answer.dashboard_url,
        )
        .await?;
        done.status = Some(format!(
            "{} on {}",
            if failed { "failure" } else { "success" },
            sha.get(..7).unwrap_or(sha)
        ));
    }
    Ok(done)
}

struct Api<'a> {
    http: reqwest::Client,
    forge: &'a Forge,
    token: &'a Token,
}

impl Api<'_> {
    fn request(&self, method: reqwest::Method, url: &str) -> reqwest::RequestBuilder {
        let req = self.http.request(method, url);
        match (self.forge, self.token) {
            (Forge::GitHub { .. }, token) => {
                let secret = match token {
                    Token::Bearer(t) | Token::GitLabPrivate(t) | Token::GitLabJob(t) => t,
                };
                req.bearer_auth(secret)
                    .header("Accept", "application/vnd.github+json")
                    .header("X-GitHub-Api-Version", "2022-11-28")
            }
            (Forge::GitLab { .. }, Token::GitLabJob(t)) => req.header("JOB-TOKEN", t),
            (Forge::GitLab { .. }, Token::GitLabPrivate(t) | Token::Bearer(t)) => {
                req.header("PRIVATE-TOKEN", t)
            }
        }
    }

    async fn send(&self, req: reqwest::RequestBuilder, what: &str) -> anyhow::Result<Value> {
        let res = req
            .send()
            .await
            .with_context(|| format!("could not {what}"))?;
        let status = res.status();
        let text = res.text().await.unwrap_or_default();
        if !status.is_success() {
            let detail: String = text.chars().take(300).collect();
            bail!("could not {what}: HTTP {status}: {detail}");
        }
        Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// Paths of the pull request's comments (notes), and of one of them.
    fn comments_url(&self, number: u64) -> String {
        match self.forge {
            Forge::GitHub {
                api_url,
                repository,
            } => {
                format!(
                    "{}/repos/{repository}/issues/{number}/comments",
                    trim(api_url)
                )
            }
            Forge::GitLab {
                api_url,
                project_id,
            } => format!(
                "{}/projects/{}/merge_requests/{number}/notes",
                trim(api_url),
                encode(project_id)
            ),
        }
    }

    fn comment_url(&self, number: u64, id: &str) -> String {
        match self.forge {
            Forge::GitHub {
                api_url,
                repository,
            } => {
                format!("{}/repos/{repository}/issues/comments/{id}", trim(api_url))
            }
            Forge::GitLab { .. } => format!("{}/{id}", self.comments_url(number)),
        }
    }

    /// This project's comment on the pull request, if one was made before.
    async fn find_comment(&self, number: u64, marker: &str) -> anyhow::Result<Option<String>> {
        let base = self.comments_url(number);
        // At most 20 pages of 100: a pull request with more comments than that is rare, and
        // a new comment is the worst that happens then.
        for page in 1..=20 {
            let url = format!("{base}?per_page=100&page={page}");
            let list = self
                .send(
                    self.request(reqwest::Method::GET, &url),
                    "list the pull request's comments",
                )
                .await?;
            let items = list.as_array().cloned().unwrap_or_default();
            for c in &items {
                if c["body"].as_str().is_some_and(|b| b.contains(marker)) {
                    let id = match &c["id"] {
                        Value::Number(n) => n.to_string(),
                        Value::String(s) => s.clone(),
                        _ => continue,
                    };
                    return Ok(Some(id));
                }
            }
            if items.len() < 100 {
                break;
            }
        }
        Ok(None)
    }

    async fn upsert_comment(
        &self,
        number: u64,
        project_id: &str,
        body: &str,
    ) -> anyhow::Result<(String, Option<String>)> {
        let payload = json!({ "body": body });
        let (made, answer) = match self.find_comment(number, &marker(project_id)).await? {
            Some(id) => {
                let method = match self.forge {
                    Forge::GitHub { .. } => reqwest::Method::PATCH,
                    Forge::GitLab { .. } => reqwest::Method::PUT,
                };
                let req = self
                    .request(method, &self.comment_url(number, &id))
                    .json(&payload);
                (
                    "updated",
                    self.send(req, "update the pull request comment").await?,
                )
            }
            None => {
                let req = self
                    .request(reqwest::Method::POST, &self.comments_url(number))
                    .json(&payload);
                (
                    "created",
                    self.send(req, "comment on the pull request").await?,
                )
            }
        };
        let link = answer["html_url"].as_str().map(str::to_owned);
        Ok((made.to_owned(), link))
    }

    async fn set_status(
        &self,
        sha: &str,
        failed: bool,
        context: &str,
        description: &str,
        target_url: &str,
    ) -> anyhow::Result<()> {
        let (url, body) = match self.forge {
            Forge::GitHub {
                api_url,
                repository,
            } => (
                format!("{}/repos/{repository}/statuses/{sha}", trim(api_url)),
                json!({
                    "state": if failed { "failure" } else { "success" },
                    "target_url": target_url,
                    "description": description,
                    "context": context,
                }),
            ),
            Forge::GitLab {
                api_url,
                project_id,
            } => (
                format!(
                    "{}/projects/{}/statuses/{sha}",
                    trim(api_url),
                    encode(project_id)
                ),
                json!({
                    "state": if failed { "failed" } else { "success" },
                    "target_url": target_url,
                    "description": description,
                    "name": context,
                }),
            ),
        };
        let req = self.request(reqwest::Method::POST, &url).json(&body);
        self.send(req, "set the commit status").await?;
        Ok(())
    }
}

fn trim(url: &str) -> &str {
    url.trim_end_matches('/')
}

/// A GitLab project id may be a path (`group/project`): it goes into the URL encoded.
fn encode(id: &str) -> String {
    id.replace('%', "%25").replace('/', "%2F")
}

#[cfg(test)]
mod tests {
    use super::*;
    use tidemark_wire::{BaseComparison, GateResult};

    fn answer(base: Option<BaseComparison>, gate: GateStatus) -> PushResponse {
        PushResponse {
            project_id: "prj_a".into(),
            scan_id: "20261122-100000-api".into(),
            score_delta: -1.5,
            dashboard_url: "https://t.example/projects/prj_a/scans/20261122-100000-api".into(),
            gate: GateResult {
                status: gate,
                reasons: if gate == GateStatus::Failed {
                    vec![
                        "1 new open finding at high severity or above; the gate allows none".into(),
                    ]
                } else {
                    vec![]
                },
            },
            branch: Some("feature".into()),
            pull_request: Some(4),
            base,
        }
    }

    #[test]
    fn the_comment_carries_its_marker_the_verdict_and_the_comparison() {
        let base = BaseComparison {
            branch: "main".into(),
            scan_id: Some("s".into()),
            score: Some(80.0),
            score_delta: Some(-2.0),
            new_findings: Some(1),
            fixed_findings: Some(0),
            message: String::new(),
        };
        let body = comment_body(
            "pay|ments",
            Some(78.0),
            &answer(Some(base), GateStatus::Failed),
        );
        assert!(body.starts_with("<!-- tidemark:report project=prj_a -->\n"));
        assert!(
            body.contains("### Tidemark: pay\\|ments — ❌ quality gate failed"),
            "{body}"
        );
        assert!(body.contains("| 78 | -2.00 | 1 | 0 |"), "{body}");
        assert!(body.contains("- 1 new open finding at high severity"));
        assert!(body.contains("(https://t.example/projects/prj_a/scans/20261122-100000-api)"));
        let no_base = BaseComparison {
            scan_id: None,
            score: None,
            score_delta: None,
            new_findings: None,
            fixed_findings: None,
            ..BaseComparison {
                branch: "main".into(),
                scan_id: None,
                score: None,
                score_delta: None,
                new_findings: None,
                fixed_findings: None,
                message: String::new(),
            }
        };
        let body = comment_body(
            "api",
            Some(78.0),
            &answer(Some(no_base.clone()), GateStatus::Passed),
        );
        assert!(body.contains("`main` has no scan yet"), "{body}");
        assert_eq!(
            status_description(&answer(Some(no_base), GateStatus::Passed)),
            "Gate passed · main not scanned yet"
        );
        assert_eq!(
            status_description(&answer(None, GateStatus::None)),
            "No gate · score -1.50"
        );
    }

    #[test]
    fn tokens_are_chosen_per_forge_and_never_printed() {
        let gitlab = Forge::GitLab {
            api_url: "x".into(),
            project_id: "1".into(),
        };
        let only_job = |k: &str| (k == "CI_JOB_TOKEN").then(|| "job".to_owned());
        assert!(matches!(
            Token::from_vars(&gitlab, &only_job),
            Some(Token::GitLabJob(_))
        ));
        let both = |k: &str| match k {
            "CI_JOB_TOKEN" => Some("job".to_owned()),
            "GITLAB_TOKEN" => Some("glpat".to_owned()),
            _ => None,
        };
        assert!(
            matches!(Token::from_vars(&gitlab, &both), Some(Token::GitLabPrivate(t)) if t == "glpat")
        );
        assert_eq!(
            format!("{:?}", Token::Bearer("ghs_secret".into())),
            "Token(redacted)"
        );
        assert_eq!(encode("group/sub/project"), "group%2Fsub%2Fproject");
    }
}
