//! A project's lines: its branches and pull requests.

use serde::{Deserialize, Serialize};

use super::*;

/// Which line of a project's history a page shows: `?branch=<name>`, `?pr=<number>`, or
/// neither for the default branch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum LineChoice {
    #[default]
    Default,
    Branch(String),
    PullRequest(i64),
}

impl LineChoice {
    /// From the page's query; a `pr` that is not a number is the default line (the page then
    /// says nothing is there rather than failing).
    pub fn from_query(branch: Option<String>, pr: Option<String>) -> LineChoice {
        if let Some(pr) = pr.filter(|p| !p.is_empty()) {
            return match pr.parse::<i64>() {
                Ok(n) if n > 0 => LineChoice::PullRequest(n),
                _ => LineChoice::PullRequest(0),
            };
        }
        match branch.filter(|b| !b.is_empty()) {
            Some(b) => LineChoice::Branch(b),
            None => LineChoice::Default,
        }
    }

    /// The query parameters that name it, each followed by `&` (empty for the default).
    pub fn query(&self) -> String {
        match self {
            LineChoice::Default => String::new(),
            LineChoice::Branch(b) => format!("branch={}&", crate::links::query_value(b)),
            LineChoice::PullRequest(n) => format!("pr={n}&"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineSummary {
    /// `None`: the default line of a project never told a branch name.
    pub name: Option<String>,
    pub is_default: bool,
    pub pull_request: Option<PullSummary>,
    pub scan_count: i64,
    pub last_push: Option<String>,
    pub head: Option<LineHeadSummary>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullSummary {
    pub number: i64,
    pub title: Option<String>,
    pub url: Option<String>,
    pub base_branch: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineHeadSummary {
    pub scan_id: tidemark_wire::ids::ScanId,
    pub score: f64,
    pub score_delta: f64,
    pub gate: GateStatus,
    /// Pull requests: compared with a base scan, and what they add.
    pub compared: bool,
    pub new_findings: Option<i64>,
    pub fixed_findings: Option<i64>,
    /// Pull requests: the score minus the base scan's.
    #[serde(default)]
    pub base_score_delta: Option<f64>,
}

impl LineSummary {
    /// How the line is named on the page.
    pub fn label(&self) -> String {
        match (&self.pull_request, &self.name) {
            (Some(pr), _) => format!("#{}", pr.number),
            (None, Some(name)) => name.clone(),
            (None, None) => "default branch".to_owned(),
        }
    }

    pub fn choice(&self) -> LineChoice {
        match (&self.pull_request, &self.name, self.is_default) {
            (Some(pr), _, _) => LineChoice::PullRequest(pr.number),
            (None, _, true) => LineChoice::Default,
            (None, Some(name), false) => LineChoice::Branch(name.clone()),
            (None, None, false) => LineChoice::Default,
        }
    }
}
