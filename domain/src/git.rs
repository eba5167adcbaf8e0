//! Where in a repository a scan was taken: branch names, commits, pull requests, and the line
//! of history ("the project's default branch", "branch X", "pull request N") a push belongs to.
//!
//! Parse, don't validate: a [`GitTarget`] can only hold names that follow the rules, so the
//! store and the dashboard never see a control character or a `javascript:` link.

use tidemark_wire::{GitContext, PullRequestRef};

use crate::input::{bounded_text, FieldError};

/// Longest branch name, in characters, once a leading `refs/heads/` is removed.
pub const MAX_BRANCH_CHARS: usize = 255;
/// Longest pull-request title.
pub const MAX_TITLE_CHARS: usize = 512;
/// Longest repository or pull-request address.
pub const MAX_URL_CHARS: usize = 2_000;
/// Largest pull-request number (far above any real repository's, and exact in a JSON double).
pub const MAX_PULL_REQUEST: u64 = 1_000_000_000_000;

/// A branch name: 1–255 characters, no control characters, without `refs/heads/`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BranchName(String);

impl BranchName {
    /// `field` names the JSON field in the error (`git.branch`, `git.pull_request.base_branch`).
    pub fn parse(field: &str, raw: &str) -> Result<BranchName, FieldError> {
        let name = raw.strip_prefix("refs/heads/").unwrap_or(raw);
        if name.is_empty() {
            return Err(FieldError::new(
                field,
                format!("{field} must name a branch (1 to {MAX_BRANCH_CHARS} characters)"),
            ));
        }
        bounded_text(field, name, MAX_BRANCH_CHARS)?;
        Ok(BranchName(name.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A commit's object name: 7–64 hexadecimal characters, stored lower-case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitSha(String);

impl CommitSha {
    pub fn parse(raw: &str) -> Result<CommitSha, FieldError> {
        if !(7..=64).contains(&raw.len()) || !raw.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(FieldError::new(
                "git.commit",
                "git.commit must be a commit's object name: 7 to 64 hexadecimal characters".into(),
            ));
        }
        Ok(CommitSha(raw.to_ascii_lowercase()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first 7 characters, as people read commits.
    pub fn short(&self) -> &str {
        &self.0[..7]
    }
}

/// An `http` or `https` address that the dashboard may link to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebUrl(String);

impl WebUrl {
    pub fn parse(field: &str, raw: &str) -> Result<WebUrl, FieldError> {
        let refuse = || {
            FieldError::new(
                field,
                format!(
                    "{field} must be an http or https address of at most {MAX_URL_CHARS} characters"
                ),
            )
        };
        if raw.len() > MAX_URL_CHARS || raw.chars().any(char::is_control) {
            return Err(refuse());
        }
        let url = url::Url::parse(raw).map_err(|_| refuse())?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(refuse());
        }
        // Credentials in a link would be shown to every reader of the dashboard.
        if !url.username().is_empty() || url.password().is_some() {
            return Err(FieldError::new(
                field,
                format!("{field} must not contain a user name or password"),
            ));
        }
        Ok(WebUrl(raw.trim_end_matches('/').to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A pull (merge) request as a push names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequest {
    pub number: u64,
    pub base_branch: BranchName,
    pub title: Option<String>,
    pub url: Option<WebUrl>,
}

impl PullRequest {
    pub fn parse(raw: &PullRequestRef) -> Result<PullRequest, FieldError> {
        if !(1..=MAX_PULL_REQUEST).contains(&raw.number) {
            return Err(FieldError::new(
                "git.pull_request.number",
                format!("git.pull_request.number must be between 1 and {MAX_PULL_REQUEST}"),
            ));
        }
        let base_branch = BranchName::parse("git.pull_request.base_branch", &raw.base_branch)?;
        let title = match raw.title.as_deref() {
            None | Some("") => None,
            Some(title) => {
                bounded_text("git.pull_request.title", title, MAX_TITLE_CHARS)?;
                Some(title.to_owned())
            }
        };
        let url = raw
            .url
            .as_deref()
            .map(|u| WebUrl::parse("git.pull_request.url", u))
            .transpose()?;
        Ok(PullRequest {
            number: raw.number,
            base_branch,
            title,
            url,
        })
    }
}

/// A push's git context, parsed. [`GitTarget::default`] is a push without one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitTarget {
    pub branch: Option<BranchName>,
    pub default_branch: Option<BranchName>,
    pub commit: Option<CommitSha>,
    pub repository_url: Option<WebUrl>,
    pub pull_request: Option<PullRequest>,
}

impl GitTarget {
    pub fn parse(raw: Option<&GitContext>) -> Result<GitTarget, FieldError> {
        let Some(raw) = raw else {
            return Ok(GitTarget::default());
        };
        Ok(GitTarget {
            branch: raw
                .branch
                .as_deref()
                .map(|b| BranchName::parse("git.branch", b))
                .transpose()?,
            default_branch: raw
                .default_branch
                .as_deref()
                .map(|b| BranchName::parse("git.default_branch", b))
                .transpose()?,
            commit: raw.commit.as_deref().map(CommitSha::parse).transpose()?,
            repository_url: raw
                .repository_url
                .as_deref()
                .map(|u| WebUrl::parse("git.repository_url", u))
                .transpose()?,
            pull_request: raw
                .pull_request
                .as_ref()
                .map(PullRequest::parse)
                .transpose()?,
        })
    }

    /// The line of history the push belongs to.
    pub fn line(&self) -> LineKey {
        match (&self.pull_request, &self.branch) {
            (Some(pr), _) => LineKey::PullRequest(pr.number),
            (None, Some(branch)) => LineKey::Branch(branch.clone()),
            (None, None) => LineKey::Default,
        }
    }

    /// The branch that names a project's default line while it has no name: the one the CI
    /// says is the repository's default, else the branch pushed (for a pull request, its
    /// base). `None` for a push without a branch.
    pub fn default_name(&self) -> Option<&BranchName> {
        self.default_branch
            .as_ref()
            .or(self.base())
            .or(self.branch.as_ref())
    }

    /// For a pull request, the branch it is judged against.
    pub fn base(&self) -> Option<&BranchName> {
        self.pull_request.as_ref().map(|pr| &pr.base_branch)
    }
}

/// A line of a project's history. Each has its own sequence, deltas and replays.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LineKey {
    /// The project's default branch, whatever it is called (a push without a branch).
    Default,
    Branch(BranchName),
    PullRequest(u64),
}

impl LineKey {
    /// How the line is looked up in storage (`branches.ref_key`); `None` for
    /// [`LineKey::Default`], which is found through the project instead.
    pub fn stored(&self) -> Option<String> {
        match self {
            LineKey::Default => None,
            LineKey::Branch(name) => Some(branch_ref_key(name)),
            LineKey::PullRequest(n) => Some(format!("pr:{n}")),
        }
    }
}

/// The stored key of branch `name`.
pub fn branch_ref_key(name: &BranchName) -> String {
    format!("branch:{}", name.as_str())
}

/// A link to `commit` in the repository at `repository_url`: GitLab's pages live under `/-/`.
pub fn commit_url(repository_url: &str, commit: &str) -> String {
    let base = repository_url.trim_end_matches('/');
    if base.contains("gitlab") {
        format!("{base}/-/commit/{commit}")
    } else {
        format!("{base}/commit/{commit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pr(number: u64, base: &str) -> PullRequestRef {
        PullRequestRef {
            number,
            base_branch: base.into(),
            title: None,
            url: None,
        }
    }

    #[test]
    fn branch_names_lose_refs_heads_and_keep_everything_else() {
        assert_eq!(
            BranchName::parse("git.branch", "refs/heads/feature/x")
                .unwrap()
                .as_str(),
            "feature/x"
        );
        assert_eq!(BranchName::parse("b", "main").unwrap().as_str(), "main");
        // Only the prefix is removed, once.
        assert_eq!(
            BranchName::parse("b", "refs/heads/refs/heads/a")
                .unwrap()
                .as_str(),
            "refs/heads/a"
        );
        assert_eq!(BranchName::parse("b", "héllo").unwrap().as_str(), "héllo");
    }

    #[test]
    fn bad_branch_names_are_refused_by_field() {
        for bad in ["", "refs/heads/", "a\nb", "tab\there", "nul\0"] {
            let err = BranchName::parse("git.branch", bad).unwrap_err();
            assert_eq!(err.field, "git.branch", "{bad:?}");
        }
        assert!(BranchName::parse("b", &"x".repeat(255)).is_ok());
        let long = BranchName::parse("b", &"x".repeat(256)).unwrap_err();
        assert!(long.message.contains("at most 255"), "{}", long.message);
        // The limit applies to the name, not the prefix.
        assert!(BranchName::parse("b", &format!("refs/heads/{}", "x".repeat(255))).is_ok());
    }

    #[test]
    fn commits_are_hex_of_a_sane_length() {
        assert_eq!(CommitSha::parse("ABCDEF1").unwrap().as_str(), "abcdef1");
        assert_eq!(
            CommitSha::parse(&"a".repeat(64)).unwrap().short(),
            "aaaaaaa"
        );
        for bad in ["abc", "ghijklm", &"a".repeat(65), "abcdef1 "] {
            assert_eq!(CommitSha::parse(bad).unwrap_err().field, "git.commit");
        }
    }

    #[test]
    fn only_plain_web_links_are_kept() {
        assert_eq!(
            WebUrl::parse("u", "https://github.com/acme/api/")
                .unwrap()
                .as_str(),
            "https://github.com/acme/api"
        );
        // Whatever the OpenAPI pattern admits is accepted.
        for ok in [
            "http://a",
            "https://a-b.c9:8080/!~",
            "http://x.y/%zz\\q#f",
            "http://a.1b",
        ] {
            assert!(WebUrl::parse("u", ok).is_ok(), "{ok}");
        }
        for bad in [
            "javascript:alert(1)",
            "data:text/html,x",
            "ftp://example.com/x",
            "https://user:pw@github.com/acme",
            "not a url",
            "https://exa\nmple.com",
        ] {
            assert!(WebUrl::parse("u", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_pull_request_is_its_own_line_judged_against_its_base() {
        let ctx = GitContext {
            branch: Some("feature".into()),
            default_branch: None,
            commit: Some("abcdef12".into()),
            repository_url: None,
            pull_request: Some(pr(42, "refs/heads/main")),
        };
        let target = GitTarget::parse(Some(&ctx)).unwrap();
        assert_eq!(target.line(), LineKey::PullRequest(42));
        assert_eq!(target.line().stored().as_deref(), Some("pr:42"));
        assert_eq!(target.base().unwrap().as_str(), "main");

        let branch = GitTarget {
            pull_request: None,
            ..target.clone()
        };
        assert_eq!(branch.line().stored().as_deref(), Some("branch:feature"));
        assert_eq!(GitTarget::parse(None).unwrap().line(), LineKey::Default);
        assert_eq!(GitTarget::default().line().stored(), None);
    }

    #[test]
    fn pull_request_fields_are_checked_by_name() {
        let mut bad = pr(0, "main");
        assert_eq!(
            PullRequest::parse(&bad).unwrap_err().field,
            "git.pull_request.number"
        );
        bad.number = 1;
        bad.base_branch = String::new();
        assert_eq!(
            PullRequest::parse(&bad).unwrap_err().field,
            "git.pull_request.base_branch"
        );
        bad.base_branch = "main".into();
        bad.title = Some("x\u{7}".into());
        assert_eq!(
            PullRequest::parse(&bad).unwrap_err().field,
            "git.pull_request.title"
        );
        bad.title = Some(String::new());
        bad.url = Some("javascript:x".into());
        assert_eq!(
            PullRequest::parse(&bad).unwrap_err().field,
            "git.pull_request.url"
        );
        bad.url = None;
        assert_eq!(PullRequest::parse(&bad).unwrap().title, None);
    }

    #[test]
    fn commit_links_follow_the_forge() {
        assert_eq!(
            commit_url("https://github.com/acme/api", "abc1234"),
            "https://github.com/acme/api/commit/abc1234"
        );
        assert_eq!(
            commit_url("https://gitlab.example.com/acme/api/", "abc1234"),
            "https://gitlab.example.com/acme/api/-/commit/abc1234"
        );
    }
}
