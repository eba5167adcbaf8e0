//! Where the scan was taken: the push body's `git` object, filled from the CI's own variables
//! (GitHub Actions, GitLab CI), else from `git` in the working directory, and overridden by
//! the command line's flags.

use serde_json::{json, Map, Value};

/// A pull (merge) request as the CI describes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PullRequest {
    pub number: u64,
    pub base_branch: String,
    pub title: Option<String>,
    pub url: Option<String>,
    /// The commit of the request's head (GitHub's `GITHUB_SHA` is a merge commit that no one
    /// sees; statuses belong on the head).
    pub head_sha: Option<String>,
}

/// What is known of the scan's place in its repository.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitInfo {
    pub branch: Option<String>,
    pub default_branch: Option<String>,
    pub commit: Option<String>,
    pub repository_url: Option<String>,
    pub pull_request: Option<PullRequest>,
    /// Where this came from, for the job log ("GitHub Actions", "GitLab CI", "git").
    pub source: &'static str,
}

/// Which forge a CI job runs on, with what its API needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Forge {
    GitHub {
        api_url: String,
        /// `owner/repo`.
        repository: String,
    },
    GitLab {
        api_url: String,
        project_id: String,
    },
}

/// The command line's overrides (each wins over what was detected).
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub branch: Option<String>,
    pub commit: Option<String>,
    pub pull_request: Option<u64>,
    pub base_branch: Option<String>,
    pub default_branch: Option<String>,
}

impl GitInfo {
    /// From the CI's variables (`var` reads one, empty as unset), reading GitHub's event
    /// payload through `read_file`; `None` outside a CI this knows.
    pub fn from_ci(
        var: &dyn Fn(&str) -> Option<String>,
        read_file: &dyn Fn(&str) -> Option<String>,
    ) -> Option<GitInfo> {
        if var("GITHUB_ACTIONS").as_deref() == Some("true") {
            return Some(github(var, read_file));
        }
        if var("GITLAB_CI").as_deref() == Some("true") {
            return Some(gitlab(var));
        }
        None
    }

    /// From `git` in the working directory (`run` runs git with these arguments and returns
    /// its trimmed standard output when it succeeded).
    pub fn from_git(run: &dyn Fn(&[&str]) -> Option<String>) -> Option<GitInfo> {
        let commit = run(&["rev-parse", "HEAD"])?;
        // A detached HEAD has no branch.
        let branch = run(&["rev-parse", "--abbrev-ref", "HEAD"]).filter(|b| b != "HEAD");
        let default_branch = run(&["symbolic-ref", "--short", "refs/remotes/origin/HEAD"])
            .map(|r| r.strip_prefix("origin/").unwrap_or(&r).to_owned());
        Some(GitInfo {
            branch,
            default_branch,
            commit: Some(commit),
            repository_url: None,
            pull_request: None,
            source: "git",
        })
    }

    pub fn apply(&mut self, o: &Overrides) {
        if let Some(b) = &o.branch {
            self.branch = Some(b.clone());
        }
        if let Some(c) = &o.commit {
            self.commit = Some(c.clone());
        }
        if let Some(d) = &o.default_branch {
            self.default_branch = Some(d.clone());
        }
        if let Some(n) = o.pull_request {
            let pr = self.pull_request.get_or_insert_with(PullRequest::default);
            pr.number = n;
        }
        if let Some(base) = &o.base_branch {
            if let Some(pr) = self.pull_request.as_mut() {
                pr.base_branch = base.clone();
            }
        }
        if let Some(pr) = &self.pull_request {
            if pr.base_branch.is_empty() {
                // A pull request named on the command line without its base targets the
                // repository's default branch.
                let base = self.default_branch.clone();
                if let (Some(base), Some(pr)) = (base, self.pull_request.as_mut()) {
                    pr.base_branch = base;
                }
            }
        }
    }

    /// Takes the fields a push body's own `git` object sets (they win over what was
    /// detected).
    pub fn overlay_json(&mut self, git: &Value) {
        let text = |k: &str| git[k].as_str().map(str::to_owned);
        if let Some(b) = text("branch") {
            self.branch = Some(b);
        }
        if let Some(d) = text("default_branch") {
            self.default_branch = Some(d);
        }
        if let Some(c) = text("commit") {
            self.commit = Some(c);
        }
        if let Some(u) = text("repository_url") {
            self.repository_url = Some(u);
        }
        let pr = &git["pull_request"];
        if let Some(number) = pr["number"].as_u64() {
            let head_sha = self.pull_request.as_ref().and_then(|p| p.head_sha.clone());
            self.pull_request = Some(PullRequest {
                number,
                base_branch: pr["base_branch"].as_str().unwrap_or_default().to_owned(),
                title: pr["title"].as_str().map(str::to_owned),
                url: pr["url"].as_str().map(str::to_owned),
                head_sha,
            });
        }
    }

    /// Nothing is known.
    pub fn is_empty(&self) -> bool {
        self.to_json().as_object().is_none_or(Map::is_empty)
    }

    /// The commit a status belongs on: a pull request's head, else the commit scanned.
    pub fn status_sha(&self) -> Option<&str> {
        self.pull_request
            .as_ref()
            .and_then(|p| p.head_sha.as_deref())
            .or(self.commit.as_deref())
    }

    /// The push body's `git` object.
    pub fn to_json(&self) -> Value {
        let mut git = Map::new();
        let mut put = |k: &str, v: &Option<String>| {
            if let Some(v) = v {
                git.insert(k.to_owned(), Value::String(v.clone()));
            }
        };
        put("branch", &self.branch);
        put("default_branch", &self.default_branch);
        put("commit", &self.commit);
        put("repository_url", &self.repository_url);
        if let Some(pr) = self
            .pull_request
            .as_ref()
            .filter(|p| !p.base_branch.is_empty())
        {
            let mut obj = json!({"number": pr.number, "base_branch": pr.base_branch});
            if let Some(t) = &pr.title {
                obj["title"] = json!(t.chars().take(512).collect::<String>());
            }
            if let Some(u) = &pr.url {
                obj["url"] = json!(u);
            }
            git.insert("pull_request".into(), obj);
        }
        Value::Object(git)
    }
}

impl Forge {
    /// The forge of the CI job, from its variables.
    pub fn from_ci(var: &dyn Fn(&str) -> Option<String>) -> Option<Forge> {
        if var("GITHUB_ACTIONS").as_deref() == Some("true") {
            return Some(Forge::GitHub {
                api_url: var("GITHUB_API_URL").unwrap_or_else(|| "https://api.github.com".into()),
                repository: var("GITHUB_REPOSITORY")?,
            });
        }
        if var("GITLAB_CI").as_deref() == Some("true") {
            return Some(Forge::GitLab {
                api_url: var("CI_API_V4_URL")?,
                project_id: var("CI_PROJECT_ID")?,
            });
        }
        None
    }
}

fn github(
    var: &dyn Fn(&str) -> Option<String>,
    read_file: &dyn Fn(&str) -> Option<String>,
) -> GitInfo {
    let event: Value = var("GITHUB_EVENT_PATH")
        .and_then(|p| read_file(&p))
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    let text = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
    let repository_url = match (var("GITHUB_SERVER_URL"), var("GITHUB_REPOSITORY")) {
        (Some(server), Some(repo)) => Some(format!("{}/{repo}", server.trim_end_matches('/'))),
        _ => None,
    };
    // GITHUB_HEAD_REF and GITHUB_BASE_REF are set only for pull_request(_target) events.
    let pull_request = match (var("GITHUB_HEAD_REF"), var("GITHUB_BASE_REF")) {
        (Some(_), Some(base)) => {
            let pr = &event["pull_request"];
            let number = pr["number"]
                .as_u64()
                .or_else(|| event["number"].as_u64())
                .or_else(|| {
                    // refs/pull/<n>/merge
                    var("GITHUB_REF")?
                        .strip_prefix("refs/pull/")?
                        .split('/')
                        .next()?
                        .parse()
                        .ok()
                });
            number.map(|number| PullRequest {
                number,
                base_branch: base,
                title: text(&pr["title"]),
                url: text(&pr["html_url"]),
                head_sha: text(&pr["head"]["sha"]),
            })
        }
        _ => None,
    };
    let branch = match &pull_request {
        Some(_) => var("GITHUB_HEAD_REF"),
        // A tag push names no branch.
        None if var("GITHUB_REF_TYPE").as_deref() == Some("tag") => None,
        None => var("GITHUB_REF_NAME"),
    };
    GitInfo {
        branch,
        default_branch: text(&event["repository"]["default_branch"]),
        commit: var("GITHUB_SHA"),
        repository_url,
        pull_request,
        source: "GitHub Actions",
    }
}

fn gitlab(var: &dyn Fn(&str) -> Option<String>) -> GitInfo {
    let project_url = var("CI_PROJECT_URL");
    let pull_request = match (
        var("CI_MERGE_REQUEST_IID").and_then(|n| n.parse::<u64>().ok()),
        var("CI_MERGE_REQUEST_TARGET_BRANCH_NAME"),
    ) {
        (Some(number), Some(base)) => Some(PullRequest {
            number,
            base_branch: base,
            title: var("CI_MERGE_REQUEST_TITLE"),
            url: project_url
                .as_ref()
                .map(|u| format!("{}/-/merge_requests/{number}", u.trim_end_matches('/'))),
            head_sha: var("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA").or_else(|| var("CI_COMMIT_SHA")),
        }),
        _ => None,
    };
    let branch = match &pull_request {
        Some(_) => var("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME"),
        None => var("CI_COMMIT_BRANCH"),
    };
    GitInfo {
        branch,
        default_branch: var("CI_DEFAULT_BRANCH"),
        commit: var("CI_COMMIT_SHA"),
        repository_url: project_url,
        pull_request,
        source: "GitLab CI",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k: &str| map.get(k).filter(|v| !v.is_empty()).cloned()
    }

    const EVENT: &str = r#"{"number": 42, "pull_request": {"number": 42, "title": "Enforce TLS",
        "html_url": "https://github.com/acme/api/pull/42", "head": {"sha": "1111111111111111111111111111111111111111"}},
        "repository": {"default_branch": "main"}}"#;

    #[test]
    fn github_pull_requests_come_from_the_event_payload() {
        let var = vars(&[
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_EVENT_NAME", "pull_request"),
            ("GITHUB_EVENT_PATH", "/event.json"),
            ("GITHUB_REF", "refs/pull/42/merge"),
            ("GITHUB_REF_NAME", "42/merge"),
            ("GITHUB_HEAD_REF", "feature/tls"),
            ("GITHUB_BASE_REF", "main"),
            ("GITHUB_SHA", "2222222222222222222222222222222222222222"),
            ("GITHUB_SERVER_URL", "https://github.com"),
            ("GITHUB_REPOSITORY", "acme/api"),
        ]);
        let read = |p: &str| (p == "/event.json").then(|| EVENT.to_owned());
        let info = GitInfo::from_ci(&var, &read).unwrap();
        assert_eq!(
            info.branch.as_deref(),
            Some("feature/tls"),
            "the head, not 42/merge"
        );
        assert_eq!(info.default_branch.as_deref(), Some("main"));
        assert_eq!(
            info.status_sha(),
            Some("1111111111111111111111111111111111111111")
        );
        assert_eq!(
            info.to_json(),
            json!({"branch": "feature/tls", "default_branch": "main",
                   "commit": "2222222222222222222222222222222222222222",
                   "repository_url": "https://github.com/acme/api",
                   "pull_request": {"number": 42, "base_branch": "main", "title": "Enforce TLS",
                                    "url": "https://github.com/acme/api/pull/42"}})
        );
        // Without the payload, the number comes from the ref.
        let info = GitInfo::from_ci(&var, &|_| None).unwrap();
        assert_eq!(info.pull_request.unwrap().number, 42);
        assert_eq!(
            Forge::from_ci(&var),
            Some(Forge::GitHub {
                api_url: "https://api.github.com".into(),
                repository: "acme/api".into()
            })
        );
    }

    #[test]
    fn github_branch_and_tag_pushes() {
        let var = vars(&[
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_REF_NAME", "main"),
            ("GITHUB_REF_TYPE", "branch"),
            ("GITHUB_SHA", "abcdef1"),
        ]);
        let info = GitInfo::from_ci(&var, &|_| None).unwrap();
        assert_eq!(
            (info.branch.as_deref(), info.pull_request),
            (Some("main"), None)
        );
        let tag = vars(&[
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_REF_NAME", "v1.0"),
            ("GITHUB_REF_TYPE", "tag"),
        ]);
        assert_eq!(GitInfo::from_ci(&tag, &|_| None).unwrap().branch, None);
    }

    #[test]
    fn gitlab_merge_requests_and_branches() {
        let var = vars(&[
            ("GITLAB_CI", "true"),
            ("CI_MERGE_REQUEST_IID", "7"),
            ("CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "main"),
            ("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", "fix/iam"),
            ("CI_MERGE_REQUEST_TITLE", "Narrow IAM"),
            ("CI_COMMIT_SHA", "3333333"),
            ("CI_DEFAULT_BRANCH", "main"),
            ("CI_PROJECT_URL", "https://gitlab.example.com/acme/api"),
            ("CI_API_V4_URL", "https://gitlab.example.com/api/v4"),
            ("CI_PROJECT_ID", "99"),
        ]);
        let info = GitInfo::from_ci(&var, &|_| None).unwrap();
        assert_eq!(info.branch.as_deref(), Some("fix/iam"));
        let pr = info.pull_request.clone().unwrap();
        assert_eq!((pr.number, pr.base_branch.as_str()), (7, "main"));
        assert_eq!(
            pr.url.as_deref(),
            Some("https://gitlab.example.com/acme/api/-/merge_requests/7")
        );
        assert_eq!(info.status_sha(), Some("3333333"));
        assert_eq!(
            Forge::from_ci(&var),
            Some(Forge::GitLab {
                api_url: "https://gitlab.example.com/api/v4".into(),
                project_id: "99".into()
            })
        );
        let branch = vars(&[
            ("GITLAB_CI", "true"),
            ("CI_COMMIT_BRANCH", "main"),
            ("CI_COMMIT_SHA", "4444444"),
        ]);
        let info = GitInfo::from_ci(&branch, &|_| None).unwrap();
        assert_eq!(
            (info.branch.as_deref(), info.pull_request),
            (Some("main"), None)
        );
        assert_eq!(GitInfo::from_ci(&vars(&[]), &|_| None), None);
    }

    #[test]
    fn flags_override_what_was_detected() {
        let mut info = GitInfo {
            branch: Some("a".into()),
            default_branch: Some("trunk".into()),
            ..GitInfo::default()
        };
        info.apply(&Overrides {
            branch: Some("b".into()),
            pull_request: Some(9),
            ..Overrides::default()
        });
        assert_eq!(info.branch.as_deref(), Some("b"));
        let pr = info.pull_request.clone().unwrap();
        assert_eq!(
            (pr.number, pr.base_branch.as_str()),
            (9, "trunk"),
            "the base defaults to the default branch"
        );
        info.apply(&Overrides {
            base_branch: Some("release".into()),
            ..Overrides::default()
        });
        assert_eq!(info.to_json()["pull_request"]["base_branch"], "release");
    }

    #[test]
    fn git_in_the_working_directory() {
        let run = |args: &[&str]| match args {
            ["rev-parse", "HEAD"] => Some("5555555555".to_owned()),
            ["rev-parse", "--abbrev-ref", "HEAD"] => Some("HEAD".to_owned()),
            ["symbolic-ref", ..] => Some("origin/main".to_owned()),
            _ => None,
        };
        let info = GitInfo::from_git(&run).unwrap();
        assert_eq!(info.branch, None, "a detached HEAD names no branch");
        assert_eq!(info.default_branch.as_deref(), Some("main"));
        assert_eq!(GitInfo::from_git(&|_| None), None, "not a repository");
    }
}
