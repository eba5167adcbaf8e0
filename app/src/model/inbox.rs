//! The findings inbox (`/findings`): its filters as the address carries them, its rows, and
//! the member's saved views.

use serde::{Deserialize, Serialize};

/// Rows per page of the inbox.
pub const INBOX_PAGE_SIZE: i64 = 50;

/// The inbox's filters, as text from the address (the server checks them).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InboxFilter {
    pub project: String,
    pub branch: String,
    pub framework: String,
    pub rule_id: String,
    pub cloud_account: String,
    pub severity: String,
    pub state: String,
    pub triage: String,
    pub older_than_days: String,
}

impl InboxFilter {
    /// The filters' names and values, in the address's order.
    pub fn pairs(&self) -> [(&'static str, &str); 9] {
        [
            ("project", &self.project),
            ("branch", &self.branch),
            ("framework", &self.framework),
            ("rule_id", &self.rule_id),
            ("cloud_account", &self.cloud_account),
            ("severity", &self.severity),
            ("state", &self.state),
            ("triage", &self.triage),
            ("older_than_days", &self.older_than_days),
        ]
    }

    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Self {
        let v = |k: &str| get(k).unwrap_or_default().trim().to_owned();
        InboxFilter {
            project: v("project"),
            branch: v("branch"),
            framework: v("framework"),
            rule_id: v("rule_id"),
            cloud_account: v("cloud_account"),
            severity: v("severity"),
            state: v("state"),
            triage: v("triage"),
            older_than_days: v("older_than_days"),
        }
    }

    /// The query string of the filters that are set (no `?`, no cursor): a saved view, and
    /// the address a colleague is sent.
    pub fn query(&self) -> String {
        self.pairs()
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| format!("{k}={}", crate::links::query_value(v)))
            .collect::<Vec<_>>()
            .join("&")
    }

    pub fn is_empty(&self) -> bool {
        self.pairs().iter().all(|(_, v)| v.is_empty())
    }
}

/// One finding of the inbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InboxRowView {
    pub finding_id: String,
    pub project_id: String,
    pub project_label: String,
    /// The branch or pull request (`None`: the default line not yet named).
    pub branch: Option<String>,
    pub rule_id: String,
    pub resource: String,
    pub severity: String,
    /// `open`, `triaged` or `fixed`.
    pub state: String,
    /// "12 days", and the first sight in UTC.
    pub age: String,
    pub first_seen: String,
    /// "accepted risk by ana@… until …: reason".
    pub triage: Option<String>,
}

/// A saved view: its name and the address it keeps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedViewLink {
    pub id: String,
    pub name: String,
    pub query: String,
}

/// The inbox page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InboxView {
    pub filter: InboxFilter,
    pub rows: Vec<InboxRowView>,
    /// The next page's cursor.
    pub next_cursor: Option<String>,
    /// This page is not the first.
    pub paged: bool,
    /// The account's live projects, for the filter: (id, label).
    pub projects: Vec<(String, String)>,
    pub saved: Vec<SavedViewLink>,
    pub is_admin: bool,
}
