//! What a verified CI token says about the git context, and how it overrides what the push
//! body claims: the token is the witness, the body only a claim.

use tidemark_wire::{GitContext, PullRequestRef};

use super::*;

/// What the token says about the git context, where it says anything.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(from = "StoredTrustedGit", into = "StoredTrustedGit")]
pub struct TrustedGit {
    /// `Some(None)`: the job is not on a branch (a tag); `None`: the token does not say.
    pub branch: Option<Option<String>>,
    pub commit: Option<String>,
    /// `Some(None)`: the job is not for a pull request; `None`: the token does not say which
    /// (GitLab merge-request pipelines carry no request number).
    pub pull_request: Option<Option<(u64, String)>>,
}

/// [`TrustedGit`] as stored: JSON has one null, so "not on a branch" and "the token does not
/// say" need a flag each.
#[derive(serde::Serialize, serde::Deserialize)]
struct StoredTrustedGit {
    branch_known: bool,
    branch: Option<String>,
    commit: Option<String>,
    pull_request_known: bool,
    pull_request: Option<(u64, String)>,
}

impl From<StoredTrustedGit> for TrustedGit {
    fn from(s: StoredTrustedGit) -> Self {
        TrustedGit {
            branch: s.branch_known.then_some(s.branch),
            commit: s.commit,
            pull_request: s.pull_request_known.then_some(s.pull_request),
        }
    }
}

impl From<TrustedGit> for StoredTrustedGit {
    fn from(t: TrustedGit) -> Self {
        StoredTrustedGit {
            branch_known: t.branch.is_some(),
            branch: t.branch.flatten(),
            commit: t.commit,
            pull_request_known: t.pull_request.is_some(),
            pull_request: t.pull_request.flatten(),
        }
    }
}

/// The git context a provider's claims vouch for.
pub fn trusted_git(provider: Provider, claims: &Claims) -> TrustedGit {
    let sha = claims.text("sha").filter(|s| !s.is_empty());
    match provider {
        Provider::GitHub => {
            let git_ref = claims.text("ref").unwrap_or_default();
            let event = claims.text("event_name").unwrap_or_default();
            let head = claims.text("head_ref").filter(|s| !s.is_empty());
            let base = claims.text("base_ref").filter(|s| !s.is_empty());
            let pr_number = git_ref
                .strip_prefix("refs/pull/")
                .and_then(|rest| rest.split('/').next())
                .and_then(|n| n.parse::<u64>().ok());
            let (branch, pull_request) = match (pr_number, head, base) {
                (Some(n), Some(head), Some(base)) => (Some(Some(head)), Some(Some((n, base)))),
                // `pull_request_target` runs on the base branch's ref: which request it is for
                // is not in the token.
                _ if event == "pull_request_target" => (None, None),
                _ => match git_ref.strip_prefix("refs/heads/") {
                    Some(b) => (Some(Some(b.to_owned())), Some(None)),
                    None if git_ref.starts_with("refs/tags/") => (Some(None), Some(None)),
                    None => (None, None),
                },
            };
            TrustedGit {
                branch,
                commit: sha,
                pull_request,
            }
        }
        Provider::GitLab => {
            let git_ref = claims.text("ref").filter(|s| !s.is_empty());
            let is_mr = claims.text("pipeline_source").as_deref() == Some("merge_request_event");
            let branch = match claims.text("ref_type").as_deref() {
                Some("branch") => Some(git_ref),
                Some("tag") => Some(None),
                _ => None,
            };
            TrustedGit {
                branch,
                commit: sha,
                pull_request: if is_mr { None } else { Some(None) },
            }
        }
        Provider::Custom => TrustedGit::default(),
    }
}

/// The push's `git` object with what the token vouches for filled in; a field that
/// contradicts the token is refused, naming it.
pub fn apply_trusted_git(
    trusted: &TrustedGit,
    git: Option<GitContext>,
) -> Result<Option<GitContext>, FieldError> {
    if *trusted == TrustedGit::default() {
        return Ok(git);
    }
    let mut git = git.unwrap_or_default();
    let said_by = "the CI job's token";
    match &trusted.branch {
        Some(Some(branch)) => {
            let given = git
                .branch
                .as_deref()
                .map(|b| b.trim_start_matches("refs/heads/"));
            if given.is_some_and(|g| g != branch) {
                return Err(FieldError::new(
                    "git.branch",
                    format!(
                        "git.branch is {:?}, but {said_by} says the job runs on branch {branch:?}",
                        git.branch.unwrap_or_default()
                    ),
                ));
            }
            git.branch = Some(branch.clone());
        }
        Some(None) => {
            if let Some(given) = &git.branch {
                return Err(FieldError::new(
                    "git.branch",
                    format!("git.branch is {given:?}, but {said_by} says the job is not on a branch (a tag)"),
                ));
            }
        }
        None => {}
    }
    if let Some(sha) = &trusted.commit {
        match &git.commit {
            Some(given)
                if !(given.len() <= sha.len()
                    && sha
                        .get(..given.len())
                        .is_some_and(|p| p.eq_ignore_ascii_case(given))) =>
            {
                return Err(FieldError::new(
                    "git.commit",
                    format!(
                        "git.commit is {given:?}, but {said_by} says the job runs on commit {sha}"
                    ),
                ));
            }
            _ => git.commit = Some(sha.clone()),
        }
    }
    match &trusted.pull_request {
        Some(Some((number, base))) => match &mut git.pull_request {
            Some(pr) if pr.number != *number => {
                return Err(FieldError::new(
                    "git.pull_request.number",
                    format!(
                        "git.pull_request.number is {}, but {said_by} is for pull request {number}",
                        pr.number
                    ),
                ))
            }
            Some(pr) if pr.base_branch.trim_start_matches("refs/heads/") != base => {
                return Err(FieldError::new(
                    "git.pull_request.base_branch",
                    format!(
                        "git.pull_request.base_branch is {:?}, but {said_by} says the request \
                         merges into {base:?}",
                        pr.base_branch
                    ),
                ))
            }
            Some(_) => {}
            None => {
                git.pull_request = Some(PullRequestRef {
                    number: *number,
                    base_branch: base.clone(),
                    title: None,
                    url: None,
                })
            }
        },
        Some(None) => {
            if let Some(pr) = &git.pull_request {
                return Err(FieldError::new(
                    "git.pull_request",
                    format!(
                        "git.pull_request names request {}, but {said_by} is not for a pull request",
                        pr.number
                    ),
                ));
            }
        }
        None => {}
    }
    Ok(Some(git))
}
