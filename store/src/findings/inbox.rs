//! The findings inbox: tracked findings across the account's live projects, filtered and
//! keyset-paged in the same order as one line's list (most severe first, then oldest, then
//! by id), so a page goes on after the previous one's last key whatever was pushed since.

use tidemark_domain::findings::FindingsCursor;
use tidemark_domain::Millis;
use tidemark_wire::findings::{FindingState, TriageState};
use tidemark_wire::Severity;

use super::{state_condition, TrackedRow, SEVERITY_RANK, TRACKED_COLUMNS};
use crate::stmt::Stmt;
use crate::tx::read_all;
use crate::{AccountId, Db, ProjectId, StoreError};

/// Which lines of each project the inbox reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Lines {
    /// Each project's default branch (what it ships).
    #[default]
    Default,
    /// The branch of this name (`pr:<n>`: that pull request) in each project that has one.
    Named(String),
    /// Every branch and pull request.
    All,
}

/// A triage filter: none, one state (holding), or a lapsed one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TriageFilter {
    /// Never triaged, or undone.
    None,
    /// Set to this state and holding.
    State(TriageState),
    /// Its expiry has passed: it counts as open again.
    Lapsed,
}

/// What the inbox lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InboxQuery {
    pub project: Option<ProjectId>,
    pub lines: Lines,
    /// A framework id: rules named `<framework>-…`.
    pub framework: Option<String>,
    pub rule_id: Option<String>,
    /// The cloud account of the line's latest scan.
    pub cloud_account: Option<String>,
    pub severity: Option<Severity>,
    /// `None`: open and set aside (not fixed).
    pub state: Option<FindingState>,
    pub triage: Option<TriageFilter>,
    /// Only findings first seen at or before this time (older than an age).
    pub seen_before: Option<Millis>,
    pub after: Option<FindingsCursor>,
    pub limit: i64,
}

/// A row of the inbox: the tracked finding and its project's label.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct InboxRow {
    #[sqlx(flatten)]
    pub finding: TrackedRow,
    pub project_label: String,
}

/// `LIKE` text matching `prefix` literally, then anything.
fn like_prefix(prefix: &str) -> String {
    let mut out = String::with_capacity(prefix.len() + 2);
    for c in prefix.chars() {
        if matches!(c, '\\' | '%' | '_') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push_str("-%");
    out
}

/// A page of the inbox as of `now`.
pub async fn list_inbox(
    db: &Db,
    account_id: &AccountId,
    q: &InboxQuery,
    now: Millis,
) -> Result<Vec<InboxRow>, StoreError> {
    let mut n = 0;
    let mut next = || {
        n += 1;
        format!("${n}")
    };
    let mut conditions = vec![format!("tf.account_id = {}", next())];
    let mut binds: Vec<crate::stmt::Arg> = vec![account_id.to_string().into()];
    if let Some(project) = &q.project {
        conditions.push(format!("tf.project_id = {}", next()));
        binds.push(project.to_string().into());
    }
    match &q.lines {
        Lines::Default => conditions.push("tf.branch_id = p.default_branch_id".into()),
        Lines::Named(name) => {
            let key = match name.strip_prefix("pr:") {
                Some(_) => name.clone(),
                None => format!("branch:{name}"),
            };
            conditions.push(format!("lb.ref_key = {}", next()));
            binds.push(key.into());
        }
        Lines::All => {}
    }
    if let Some(framework) = &q.framework {
        conditions.push(format!("tf.rule_id LIKE {} ESCAPE '\\'", next()));
        binds.push(like_prefix(framework).into());
    }
    if let Some(rule) = &q.rule_id {
        conditions.push(format!("tf.rule_id = {}", next()));
        binds.push(rule.clone().into());
    }
    if let Some(cloud_account) = &q.cloud_account {
        conditions.push(format!(
            "EXISTS (SELECT 1 FROM scans hs WHERE hs.project_id = tf.project_id \
             AND hs.seq = lb.head_seq AND hs.cloud_account_id = {})",
            next()
        ));
        binds.push(cloud_account.clone().into());
    }
    if let Some(severity) = q.severity {
        conditions.push(format!("tf.severity = {}", next()));
        binds.push(severity.as_str().into());
    }
    let holds_at =
        |n: String| format!("(tf.triage_expires_at IS NULL OR tf.triage_expires_at > {n})");
    match q.state {
        Some(state) => {
            let at = next();
            conditions.push(state_condition(state, &at));
            binds.push(now.into());
        }
        None => conditions.push("tf.fixed_seq IS NULL".into()),
    }
    match q.triage {
        None => {}
        Some(TriageFilter::None) => conditions.push("tf.triage_state IS NULL".into()),
        Some(TriageFilter::State(state)) => {
            conditions.push(format!("tf.triage_state = {}", next()));
            binds.push(state.as_str().into());
            conditions.push(holds_at(next()));
            binds.push(now.into());
        }
        Some(TriageFilter::Lapsed) => {
            conditions.push(format!(
                "tf.triage_state IS NOT NULL AND tf.triage_expires_at <= {}",
                next()
            ));
            binds.push(now.into());
        }
    }
    if let Some(before) = q.seen_before {
        conditions.push(format!("tf.first_seen_at <= {}", next()));
        binds.push(before.into());
    }
    if let Some(after) = &q.after {
        let (a, b, c) = (next(), next(), next());
        conditions.push(format!(
            "({SEVERITY_RANK}, tf.first_seen_at, tf.id) > ({a}, {b}, {c})"
        ));
        binds.push(after.rank.into());
        binds.push(after.first_seen_at.into());
        binds.push(after.finding_id.to_string().into());
    }
    let limit = next();
    binds.push(q.limit.into());
    // The page's rows are chosen first (as one line's list does), then each looks up its
    // scans and names.
    let sql = format!(
        "WITH tf AS MATERIALIZED (SELECT tf.* FROM tracked_findings tf \
         JOIN projects p ON p.id = tf.project_id AND p.archived_at IS NULL \
         JOIN branches lb ON lb.id = tf.branch_id \
         WHERE {} ORDER BY {SEVERITY_RANK}, tf.first_seen_at, tf.id LIMIT {limit}) \
         SELECT {TRACKED_COLUMNS}, p.label AS project_label FROM tf \
         JOIN branches b ON b.id = tf.branch_id JOIN projects p ON p.id = tf.project_id \
         ORDER BY {SEVERITY_RANK}, tf.first_seen_at, tf.id",
        conditions.join(" AND ")
    );
    let mut stmt = Stmt::new(sql);
    for arg in binds {
        stmt = stmt.bind(arg);
    }
    read_all(db, stmt).await
}

/// The project of each of the account's findings in `ids` (another account's are left out).
pub async fn projects_of(
    db: &Db,
    account_id: &AccountId,
    ids: &[crate::FindingId],
) -> Result<Vec<(crate::FindingId, ProjectId)>, StoreError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let list: Vec<String> = (0..ids.len()).map(|i| format!("${}", i + 2)).collect();
    let mut stmt = Stmt::new(format!(
        "SELECT id, project_id FROM tracked_findings WHERE account_id = $1 AND id IN ({})",
        list.join(", ")
    ))
    .bind(account_id.to_string());
    for id in ids {
        stmt = stmt.bind(id.to_string());
    }
    read_all(db, stmt).await
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_framework_prefix_is_matched_literally() {
        assert_eq!(super::like_prefix("cis-aws-2.0"), "cis-aws-2.0-%");
        assert_eq!(super::like_prefix("a_b%c"), "a\\_b\\%c-%");
    }
}
