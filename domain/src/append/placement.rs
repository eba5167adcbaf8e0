//! Where an appended scan goes and what it touches beside its own row: which line ids are new,
//! which kind of line it is, the branch name it is reported under, the key a new line is found
//! by, and whether it raises alerts. The store writes what these say.

use crate::git::{branch_ref_key, BranchName, GitTarget, PullRequest};
use crate::webhook::LineKind;

use super::{LinePlan, LineTarget};

/// The ids of the lines a push writes: the default line (existing or new) and the scan's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineIds {
    pub default: Option<String>,
    /// Made by this push.
    pub new_default: bool,
    pub target: String,
    /// Made by this push, and not the default line.
    pub new_target: bool,
}

impl LineIds {
    /// Gives the lines the plan creates fresh ids; a scan on the default line this push
    /// creates shares that line's id, so it is written once.
    pub fn assign(plan: &LinePlan, existing_default: Option<String>) -> LineIds {
        let (default, new_default) = match (&plan.create_default, existing_default) {
            (Some(_), _) => (Some(crate::ids::new_branch_id()), true),
            (None, existing) => (existing, false),
        };
        let (target, new_target) = match &plan.target {
            LineTarget::Existing(id) => (id.clone(), false),
            LineTarget::NewDefault => (default.clone().unwrap_or_default(), false),
            LineTarget::New => (crate::ids::new_branch_id(), true),
        };
        LineIds {
            default,
            new_default,
            target,
            new_target,
        }
    }
}

impl LinePlan {
    /// Which kind of line the scan lands on: what its events and alerts follow.
    pub fn kind(&self, git: &GitTarget) -> LineKind {
        if self.on_default {
            LineKind::Default
        } else if git.pull_request.is_some() {
            LineKind::PullRequest
        } else {
            LineKind::Branch
        }
    }

    /// The branch the scan is reported on: the pushed one; without one (and not a pull
    /// request), the default line's name, as this push may just have given it.
    pub fn scan_branch(&self, git: &GitTarget, default_name: Option<String>) -> Option<String> {
        if let Some(branch) = &git.branch {
            return Some(branch.as_str().to_owned());
        }
        if git.pull_request.is_some() {
            return None;
        }
        self.name_default
            .as_ref()
            .map(|n| n.as_str().to_owned())
            .or(default_name)
            .or_else(|| {
                self.create_default
                    .clone()
                    .flatten()
                    .map(|n| n.as_str().to_owned())
            })
    }
}

/// The key a new line is found by on the next push: `pr:<n>` for a pull request, else its
/// branch's ref key; an unnamed default line has none.
pub fn line_ref_key(name: Option<&BranchName>, pr: Option<&PullRequest>) -> Option<String> {
    match pr {
        Some(pr) => Some(format!("pr:{}", pr.number)),
        None => name.map(branch_ref_key),
    }
}

/// E-mail alerts follow the project's own line only: a branch's or a pull request's
/// half-finished states are not the project's.
pub fn alerts_due(kind: LineKind, someone_listens: bool) -> bool {
    someone_listens && kind == LineKind::Default
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(
        create_default: Option<Option<&str>>,
        target: LineTarget,
        on_default: bool,
    ) -> LinePlan {
        let name = |n: &str| BranchName::parse("git.branch", n).unwrap();
        LinePlan {
            create_default: create_default.map(|n| n.map(name)),
            name_default: None,
            target,
            on_default,
        }
    }

    fn git(branch: Option<&str>, pr: Option<u64>) -> GitTarget {
        GitTarget {
            branch: branch.map(|b| BranchName::parse("git.branch", b).unwrap()),
            pull_request: pr.map(|number| PullRequest {
                number,
                base_branch: BranchName::parse("b", "main").unwrap(),
                title: None,
                url: None,
            }),
            ..GitTarget::default()
        }
    }

    #[test]
    fn a_first_push_makes_one_default_line_and_writes_the_scan_on_it() {
        let ids = LineIds::assign(
            &plan(Some(Some("main")), LineTarget::NewDefault, true),
            None,
        );
        assert!(ids.new_default && !ids.new_target);
        assert_eq!(ids.default.as_deref(), Some(ids.target.as_str()));
        assert!(ids.target.starts_with("br_"));
    }

    #[test]
    fn a_new_branch_gets_its_own_line_beside_the_existing_default() {
        let ids = LineIds::assign(
            &plan(None, LineTarget::New, false),
            Some("br_default".into()),
        );
        assert_eq!(ids.default.as_deref(), Some("br_default"));
        assert!(!ids.new_default && ids.new_target);
        assert_ne!(ids.target, "br_default");
        let existing = LineIds::assign(
            &plan(None, LineTarget::Existing("br_x".into()), false),
            Some("br_default".into()),
        );
        assert_eq!(
            (existing.target.as_str(), existing.new_target),
            ("br_x", false)
        );
    }

    #[test]
    fn kinds_branch_names_keys_and_alerts_follow_the_line() {
        let default = plan(Some(Some("main")), LineTarget::NewDefault, true);
        let feature = plan(None, LineTarget::New, false);
        assert_eq!(default.kind(&git(None, None)), LineKind::Default);
        assert_eq!(feature.kind(&git(Some("f"), None)), LineKind::Branch);
        assert_eq!(
            feature.kind(&git(Some("f"), Some(7))),
            LineKind::PullRequest
        );
        // No branch pushed: the default line's name, the one this push gives first.
        assert_eq!(
            default.scan_branch(&git(None, None), None).as_deref(),
            Some("main")
        );
        assert_eq!(
            default
                .scan_branch(&git(None, None), Some("trunk".into()))
                .as_deref(),
            Some("trunk")
        );
        assert_eq!(
            feature.scan_branch(&git(None, Some(7)), Some("main".into())),
            None
        );
        assert_eq!(
            feature
                .scan_branch(&git(Some("f"), Some(7)), None)
                .as_deref(),
            Some("f")
        );
        let pr = git(Some("f"), Some(7));
        assert_eq!(
            line_ref_key(pr.branch.as_ref(), pr.pull_request.as_ref()).as_deref(),
            Some("pr:7")
        );
        assert_eq!(line_ref_key(None, None), None);
        assert!(alerts_due(LineKind::Default, true));
        assert!(!alerts_due(LineKind::PullRequest, true) && !alerts_due(LineKind::Default, false));
    }
}
