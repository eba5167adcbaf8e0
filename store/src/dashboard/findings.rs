//! A scan's findings as the dashboard filters, sorts, counts and compares them.

use crate::spans::{scan_findings, texts_of, Texts};
use crate::ProjectId;

use super::*;
use crate::{on_db, Db, StoreError};

/// Which findings of a scan to show.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FindingFilter {
    /// The order of the rows (default: the scanner's, which exports keep).
    pub sort: FindingSort,
    pub direction: SortDirection,
    pub severity: Option<String>,
    pub status: Option<String>,
    /// A framework id: rule ids are "<framework>-<rule number>".
    pub framework: Option<String>,
    /// Case-insensitive text in rule id, resource or message.
    pub text: Option<String>,
}

/// How a scan's findings are ordered. Every order ends with the scanner's, so pages are
/// stable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FindingSort {
    /// As the scanner listed them (exports).
    #[default]
    Scanner,
    /// Most severe first, then by status (failing first), rule and resource: the dashboard's
    /// default, so what needs fixing is on top.
    Severity,
    /// Failing first, then by severity, rule and resource.
    Status,
    Rule,
    Resource,
}

/// Whether the chosen column's order is reversed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SortDirection {
    #[default]
    Ascending,
    Descending,
}

const SEVERITY_RANK: &str = "CASE severity WHEN 'critical' THEN 0 WHEN 'high' THEN 1 \
     WHEN 'medium' THEN 2 WHEN 'low' THEN 3 ELSE 4 END";
const STATUS_RANK: &str = "CASE status WHEN 'FAIL' THEN 0 WHEN 'ERROR' THEN 1 WHEN 'WARN' THEN 2 \
     WHEN 'SKIP' THEN 3 ELSE 4 END";

/// One column of an order: the expression over a finding row, and the same over a bound
/// key value (`over_value` of its placeholder), so a key compares exactly as rows sort.
#[derive(Clone, Copy)]
enum KeyColumn {
    SeverityRank,
    StatusRank,
    Rule,
    Resource,
    Ordinal,
}

impl KeyColumn {
    fn over_row(self) -> &'static str {
        match self {
            KeyColumn::SeverityRank => SEVERITY_RANK,
            KeyColumn::StatusRank => STATUS_RANK,
            KeyColumn::Rule => "rule_id",
            KeyColumn::Resource => "resource",
            KeyColumn::Ordinal => "ordinal",
        }
    }

    fn over_value(self, placeholder: &str) -> String {
        match self {
            KeyColumn::SeverityRank => SEVERITY_RANK.replacen("severity", placeholder, 1),
            KeyColumn::StatusRank => STATUS_RANK.replacen("status", placeholder, 1),
            _ => placeholder.to_owned(),
        }
    }
}

/// Where a page of a scan's findings starts: by number (an offset: a page asked for by its
/// number), or next to a finding of the page before or after it (a keyset: what the pager's
/// links carry, so a deep page costs what the first does).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageStart {
    Offset(i64),
    /// The rows right after this one, in the filter's order.
    After(FindingKey),
    /// The rows right before this one (returned in the filter's order).
    Before(FindingKey),
}

/// A finding's place in every order a scan's findings are listed in ([`finding_key`]).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct FindingKey {
    pub ordinal: i64,
    pub rule_id: String,
    pub resource: String,
    pub status: String,
    pub severity: String,
}

impl FindingSort {
    pub const ALL: [FindingSort; 5] = [
        FindingSort::Severity,
        FindingSort::Status,
        FindingSort::Rule,
        FindingSort::Resource,
        FindingSort::Scanner,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FindingSort::Scanner => "scanner",
            FindingSort::Severity => "severity",
            FindingSort::Status => "status",
            FindingSort::Rule => "rule",
            FindingSort::Resource => "resource",
        }
    }

    pub fn parse(text: &str) -> Option<FindingSort> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// The order's columns: the first in the chosen direction, the rest ascending, the
    /// scanner's order last (unique within a scan).
    fn columns(self) -> &'static [KeyColumn] {
        use KeyColumn::*;
        match self {
            FindingSort::Scanner => &[Ordinal],
            FindingSort::Severity => &[SeverityRank, StatusRank, Rule, Resource, Ordinal],
            FindingSort::Status => &[StatusRank, SeverityRank, Rule, Resource, Ordinal],
            FindingSort::Rule => &[Rule, Resource, Ordinal],
            FindingSort::Resource => &[Resource, Rule, Ordinal],
        }
    }

    /// The ORDER BY clause (fixed texts only: nothing from the request reaches the SQL);
    /// `reversed` lists the same order backwards.
    fn order_by(self, direction: SortDirection, reversed: bool) -> String {
        let (first, rest) = match (direction, reversed) {
            (SortDirection::Ascending, false) => ("ASC", "ASC"),
            (SortDirection::Descending, false) => ("DESC", "ASC"),
            (SortDirection::Ascending, true) => ("DESC", "DESC"),
            (SortDirection::Descending, true) => ("ASC", "DESC"),
        };
        self.columns()
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{} {}", c.over_row(), if i == 0 { first } else { rest }))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The rows after (or, `before`, before) a key bound from placeholder `$first` on: the
    /// key's values in [`key_values`] order. Row values compare in order (SQLite 3.15+,
    /// PostgreSQL), so an ascending order is one comparison; a first column reversed is
    /// compared alone, then the rest as a row.
    fn keyset_condition(self, direction: SortDirection, before: bool, first: usize) -> String {
        let columns = self.columns();
        let value = |i: usize| columns[i].over_value(&format!("${}", first + i));
        let row = |from: usize| {
            let rows: Vec<_> = columns[from..].iter().map(|c| c.over_row()).collect();
            let values: Vec<_> = (from..columns.len()).map(value).collect();
            (rows.join(", "), values.join(", "))
        };
        let (later, earlier) = if before { ("<", ">") } else { (">", "<") };
        match direction {
            SortDirection::Ascending => {
                let (rows, values) = row(0);
                format!("({rows}) {later} ({values})")
            }
            SortDirection::Descending if columns.len() == 1 => {
                format!("{} {earlier} {}", columns[0].over_row(), value(0))
            }
            SortDirection::Descending => {
                let (c0, v0) = (columns[0].over_row(), value(0));
                let (rows, values) = row(1);
                format!("({c0} {earlier} {v0} OR ({c0} = {v0} AND ({rows}) {later} ({values})))")
            }
        }
    }
}

/// The values a key binds for `sort`'s columns, in order.
fn key_values(sort: FindingSort, key: &FindingKey) -> Vec<KeyValue<'_>> {
    sort.columns()
        .iter()
        .map(|c| match c {
            KeyColumn::SeverityRank => KeyValue::Text(&key.severity),
            KeyColumn::StatusRank => KeyValue::Text(&key.status),
            KeyColumn::Rule => KeyValue::Text(&key.rule_id),
            KeyColumn::Resource => KeyValue::Text(&key.resource),
            KeyColumn::Ordinal => KeyValue::Int(key.ordinal),
        })
        .collect()
}

enum KeyValue<'a> {
    Text(&'a str),
    Int(i64),
}

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct FindingRow {
    pub ordinal: i64,
    pub rule_id: String,
    pub resource: String,
    pub status: String,
    pub severity: String,
    pub message: String,
    pub remediation: String,
}

fn like_pattern(text: &str) -> String {
    let escaped = text
        .to_lowercase()
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_");
    format!("%{escaped}%")
}

/// Over `scan_findings("$1", "$2", …)`.
const FINDING_FILTER: &str = "($3 IS NULL OR severity = $3) \
     AND ($4 IS NULL OR status = $4) \
     AND ($5 IS NULL OR substr(rule_id, 1, length($5) + 1) = $5 || '-') \
     AND ($6 IS NULL OR lower(rule_id) LIKE $6 ESCAPE '\\' OR lower(resource) LIKE $6 ESCAPE '\\' \
          OR lower(message) LIKE $6 ESCAPE '\\')";

/// A page of a scan's findings (in `filter.sort` order) and how many match in all.
pub async fn list_findings(
    db: &Db,
    project_id: &ProjectId,
    scan_seq: i64,
    filter: &FindingFilter,
    offset: i64,
    limit: i64,
) -> Result<(Vec<FindingRow>, i64), StoreError> {
    list_findings_from(
        db,
        project_id,
        scan_seq,
        filter,
        &PageStart::Offset(offset),
        limit,
    )
    .await
}

/// [`list_findings`] from where `start` says: an offset, or next to a finding's key.
pub async fn list_findings_from(
    db: &Db,
    project_id: &ProjectId,
    scan_seq: i64,
    filter: &FindingFilter,
    start: &PageStart,
    limit: i64,
) -> Result<(Vec<FindingRow>, i64), StoreError> {
    let text = filter
        .text
        .as_deref()
        .filter(|t| !t.trim().is_empty())
        .map(|t| like_pattern(t.trim()));
    let filtered = filter.severity.is_some()
        || filter.status.is_some()
        || filter.framework.is_some()
        || text.is_some();
    let (offset, key, reversed) = match start {
        PageStart::Offset(offset) => (*offset, None, false),
        PageStart::After(key) => (0, Some(key), false),
        PageStart::Before(key) => (0, Some(key), true),
    };
    // Unfiltered, the page stops after `limit` rows and the total is an index-only count.
    // Filtered from an offset, both need a pass over the scan's findings, so the total comes
    // with the page (a window count) in that one pass; from a key the window would count only
    // the rows past it, so the total is counted on its own.
    let windowed = filtered && key.is_none();
    let total_column = if windowed {
        "COUNT(*) OVER ()"
    } else {
        "CAST(0 AS BIGINT)"
    };
    let keyset = key
        .map(|_| {
            format!(
                " AND {}",
                filter.sort.keyset_condition(filter.direction, reversed, 9)
            )
        })
        .unwrap_or_default();
    // Searching reads every finding's texts; otherwise only the page's rows get theirs.
    let order = filter.sort.order_by(filter.direction, false);
    let fetch_order = filter.sort.order_by(filter.direction, reversed);
    let texts = if text.is_some() {
        Texts::Joined
    } else {
        Texts::Keys
    };
    let inner = format!(
        "SELECT f.*, {total_column} AS total FROM {} f \
         WHERE {FINDING_FILTER}{keyset} ORDER BY {fetch_order} LIMIT $7 OFFSET $8",
        scan_findings("$1", "$2", texts)
    );
    let page_sql = if texts == Texts::Joined {
        format!(
            "SELECT ordinal, rule_id, resource, status, severity, message, remediation, total \
             FROM ({inner}) p ORDER BY {order}"
        )
    } else {
        let (columns, join) = texts_of("p", "$1");
        format!(
            "SELECT p.ordinal, p.rule_id, p.resource, p.status, p.severity, {columns}, p.total \
             FROM ({inner}) p {join} ORDER BY {order}"
        )
    };
    let count_sql = format!(
        "SELECT COUNT(*) FROM {} f WHERE {FINDING_FILTER}",
        scan_findings("$1", "$2", texts)
    );
    let rows: Vec<FindingPageRow> = on_db!(db, pool => {
        let mut q = sqlx::query_as(&page_sql)
            .bind(project_id)
            .bind(scan_seq)
            .bind(filter.severity.as_deref())
            .bind(filter.status.as_deref())
            .bind(filter.framework.as_deref())
            .bind(text.as_deref())
            .bind(limit)
            .bind(offset);
        for value in key.map(|k| key_values(filter.sort, k)).unwrap_or_default() {
            q = match value {
                KeyValue::Text(t) => q.bind(t),
                KeyValue::Int(i) => q.bind(i),
            };
        }
        q.fetch_all(pool).await
    })?;
    let total = match rows.first() {
        Some(first) if windowed => first.total,
        // A page past the end has no row to carry the total.
        _ if !windowed || offset > 0 => {
            let (total,): (i64,) = on_db!(db, pool => {
                sqlx::query_as(&count_sql)
                    .bind(project_id)
                    .bind(scan_seq)
                    .bind(filter.severity.as_deref())
                    .bind(filter.status.as_deref())
                    .bind(filter.framework.as_deref())
                    .bind(text.as_deref())
                    .fetch_one(pool)
                    .await
            })?;
            total
        }
        _ => 0,
    };
    let rows = rows.into_iter().map(|r| r.finding).collect();
    Ok((rows, total))
}

/// The key of the scan's finding at `ordinal` (the scanner's order), if it has one: where a
/// pager's link starts its page.
pub async fn finding_key(
    db: &Db,
    project_id: &ProjectId,
    scan_seq: i64,
    ordinal: i64,
) -> Result<Option<FindingKey>, StoreError> {
    let sql = format!(
        "SELECT ordinal, rule_id, resource, status, severity FROM {} f WHERE ordinal = $3",
        scan_findings("$1", "$2", Texts::None)
    );
    let key = on_db!(db, pool => {
        sqlx::query_as(&sql)
            .bind(project_id)
            .bind(scan_seq)
            .bind(ordinal)
            .fetch_optional(pool)
            .await
    })?;
    Ok(key)
}

/// How many of the scan's findings have each (severity, status): what the filters' choices
/// say they hold. One index range of the scan.
pub async fn finding_counts(
    db: &Db,
    project_id: &ProjectId,
    scan_seq: i64,
) -> Result<Vec<(String, String, i64)>, StoreError> {
    let sql = format!(
        "SELECT severity, status, COUNT(*) FROM {} f GROUP BY severity, status",
        scan_findings("$1", "$2", Texts::None)
    );
    let rows = on_db!(db, pool => {
        sqlx::query_as(&sql)
        .bind(project_id)
        .bind(scan_seq)
        .fetch_all(pool)
        .await
    })?;
    Ok(rows)
}

/// [`finding_counts`] per framework of the scan: (framework, severity, status, count), a
/// finding belonging to a framework as the framework filter reads it (its rule id starts
/// with `<framework>-`). One statement, a branch of a `UNION ALL` per framework.
pub async fn framework_counts(
    db: &Db,
    project_id: &ProjectId,
    scan_seq: i64,
    frameworks: &[String],
) -> Result<Vec<(String, String, String, i64)>, StoreError> {
    if frameworks.is_empty() {
        return Ok(Vec::new());
    }
    let sql = (0..frameworks.len())
        .map(|i| {
            let f = i + 3;
            format!(
                "SELECT CAST(${f} AS TEXT), severity, status, COUNT(*) FROM {} f \
                 WHERE substr(rule_id, 1, length(${f}) + 1) = ${f} || '-' GROUP BY severity, status",
                scan_findings("$1", "$2", Texts::None)
            )
        })
        .collect::<Vec<_>>()
        .join(" UNION ALL ");
    let rows = on_db!(db, pool => {
        let mut query = sqlx::query_as(&sql).bind(project_id).bind(scan_seq);
        for framework in frameworks {
            query = query.bind(framework);
        }
        query.fetch_all(pool).await
    })?;
    Ok(rows)
}

/// Open findings (FAIL, WARN, ERROR) compared with the previous scan, by rule id + resource.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanDiff {
    pub new: Vec<FindingRow>,
    pub fixed: Vec<FindingRow>,
    pub new_count: i64,
    pub fixed_count: i64,
    pub unchanged_count: i64,
}

const OPEN: &str = "status IN ('FAIL', 'WARN', 'ERROR')";

/// The diff between scan `seq` and `base_seq` (any two scans of the project), with at most
/// `limit` rows of each list: open findings (FAIL, WARN, ERROR) by rule id and resource.
///
/// Each scan's open findings are read once as keys, in the scanner's order, and compared here;
/// then only the rows shown are read whole. An anti-join in SQL of two scans' findings has no
/// index on `(rule_id, resource)` and SQLite compared every row with every row (more than a
/// minute for two scans of 50,000 findings).
pub async fn diff_scans(
    db: &Db,
    project_id: &ProjectId,
    seq: i64,
    base_seq: i64,
    limit: i64,
) -> Result<ScanDiff, StoreError> {
    use std::collections::HashSet;
    let keys_sql = format!(
        "SELECT ordinal, rule_id, resource FROM {} f WHERE {OPEN} ORDER BY ordinal",
        scan_findings("$1", "$2", Texts::None)
    );
    type Key = (i64, String, String);
    let (now, then): (Vec<Key>, Vec<Key>) = on_db!(db, pool => {
        let now = sqlx::query_as(&keys_sql).bind(project_id).bind(seq).fetch_all(pool).await?;
        let then = sqlx::query_as(&keys_sql).bind(project_id).bind(base_seq).fetch_all(pool).await?;
        Ok::<_, sqlx::Error>((now, then))
    })?;
    let set = |rows: &[Key]| -> HashSet<(String, String)> {
        rows.iter()
            .map(|(_, r, x)| (r.clone(), x.clone()))
            .collect()
    };
    let (now_set, then_set) = (set(&now), set(&then));
    let only = |rows: &[Key], other: &HashSet<(String, String)>| -> Vec<i64> {
        rows.iter()
            .filter(|(_, r, x)| !other.contains(&(r.clone(), x.clone())))
            .map(|(ordinal, _, _)| *ordinal)
            .collect()
    };
    let (new, fixed) = (only(&now, &then_set), only(&then, &now_set));
    let keep = usize::try_from(limit).unwrap_or(0);
    Ok(ScanDiff {
        new: rows_at(db, project_id, seq, &new[..new.len().min(keep)]).await?,
        fixed: rows_at(db, project_id, base_seq, &fixed[..fixed.len().min(keep)]).await?,
        new_count: new.len() as i64,
        fixed_count: fixed.len() as i64,
        unchanged_count: (now.len() - new.len()) as i64,
    })
}

/// Which of `keys` (rule id, resource) are open findings (FAIL, WARN, ERROR) of the project's
/// scan `seq`: what a pull request's scan page tells apart from its base with, reading only
/// the rows it shows (at most 200 keys are looked up).
pub async fn open_among(
    db: &Db,
    project_id: &ProjectId,
    seq: i64,
    keys: &[(&str, &str)],
) -> Result<std::collections::HashSet<(String, String)>, StoreError> {
    use std::fmt::Write as _;
    let keys = &keys[..keys.len().min(200)];
    if keys.is_empty() {
        return Ok(Default::default());
    }
    let mut sql = format!(
        "SELECT rule_id, resource FROM {} f WHERE {OPEN} AND (",
        scan_findings("$1", "$2", Texts::None)
    );
    for i in 0..keys.len() {
        let n = 3 + 2 * i;
        let _ = write!(
            sql,
            "{}(f.rule_id = ${n} AND f.resource = ${})",
            if i == 0 { "" } else { " OR " },
            n + 1
        );
    }
    sql.push(')');
    let rows: Vec<(String, String)> = on_db!(db, pool => {
        let mut q = sqlx::query_as(&sql).bind(project_id).bind(seq);
        for (rule, resource) in keys {
            q = q.bind(*rule).bind(*resource);
        }
        q.fetch_all(pool).await
    })?;
    Ok(rows.into_iter().collect())
}

/// The findings of the project's scan `seq` at `ordinals`, whole, in the scanner's order.
async fn rows_at(
    db: &Db,
    project_id: &ProjectId,
    seq: i64,
    ordinals: &[i64],
) -> Result<Vec<FindingRow>, StoreError> {
    if ordinals.is_empty() {
        return Ok(Vec::new());
    }
    // Integers read from the database, never text from a request.
    let list = ordinals
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let (texts, join) = texts_of("k", "$1");
    let sql = format!(
        "SELECT k.ordinal, k.rule_id, k.resource, k.status, k.severity, {texts} \
         FROM (SELECT * FROM {} f WHERE f.ordinal IN ({list})) k {join} ORDER BY k.ordinal",
        scan_findings("$1", "$2", Texts::Keys)
    );
    let rows = on_db!(db, pool => {
        sqlx::query_as(&sql).bind(project_id).bind(seq).fetch_all(pool).await
    })?;
    Ok(rows)
}
