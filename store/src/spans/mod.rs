//! A scan's findings as spans of its branch (issue 36, `domain::spans`): how a push writes
//! them, and the one derived table every read of a scan's findings goes through. Scans
//! stored before spans are moved to them by [`moving`].

use crate::ProjectId;
pub mod moving;

use std::fmt::Write as _;

use tidemark_domain::spans::{plan_spans, text_hash, SpanKey, OPEN_END};
use tidemark_wire::Finding;

use crate::stmt::Stmt;
use crate::{Backend, StoreError};

/// Spans in one statement at most (nine placeholders each, within SQLite's 32,766).
const SPANS_PER_STATEMENT: usize = 3_000;

/// `scans.findings_stored` of a scan whose findings are spans.
pub const STORED_AS_SPANS: &str = "spans";
/// `scans.findings_stored` of a scan whose findings housekeeping removed.
pub const THINNED: &str = "thinned";

/// Which columns [`scan_findings`] gives beyond `ordinal` (the scanner's order), `rule_id`,
/// `resource`, `status` and `severity`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Texts {
    /// Nothing more: for counts and comparisons.
    None,
    /// `message` and `remediation`, joined for every row: for reads that filter on them.
    Joined,
    /// `text_hash` with `message` and `remediation` left NULL (a scan stored as spans), or
    /// `text_hash` NULL with them filled in (a scan stored as rows): a read that keeps a few
    /// rows joins their texts afterwards ([`texts_of`]), not every row's.
    Keys,
}

/// A derived table of the findings of the project's scan at storage position `seq` (`project`
/// and `seq` are SQL expressions, evaluated once each per branch of the union). Scans stored
/// as spans read their branch's spans; scans stored before them read their rows in
/// `findings`, until moved.
///
/// Each part reads only what the scan's `findings_stored` says: rows left behind by a move
/// or by housekeeping (deleted a step at a time after the scan is marked) are never read.
pub(crate) fn scan_findings(project: &str, seq: &str, texts: Texts) -> String {
    let (span_texts, text_join, row_texts) = match texts {
        Texts::None => ("", "", ""),
        Texts::Joined => (
            ", tx.message, tx.remediation",
            " JOIN finding_texts tx ON tx.project_id = sc.project_id AND tx.hash = sp.text_hash",
            ", message, remediation",
        ),
        Texts::Keys => (
            ", sp.text_hash, CAST(NULL AS TEXT) AS message, CAST(NULL AS TEXT) AS remediation",
            "",
            ", CAST(NULL AS TEXT) AS text_hash, message, remediation",
        ),
    };
    format!(
        "(SELECT sp.position AS ordinal, sp.rule_id, sp.resource, sp.status, sp.severity\
         {span_texts} FROM scans sc \
         JOIN finding_spans sp ON sp.branch_id = sc.branch_id AND sp.to_seq > sc.seq \
         AND sp.from_seq <= sc.seq{text_join} \
         WHERE sc.project_id = {project} AND sc.seq = {seq} AND sc.findings_stored = '{STORED_AS_SPANS}' \
         UNION ALL \
         SELECT ordinal, rule_id, resource, status, severity{row_texts} FROM findings \
         WHERE project_id = {project} AND scan_seq = {seq} AND EXISTS (SELECT 1 FROM scans lx \
           WHERE lx.project_id = {project} AND lx.seq = {seq} AND lx.findings_stored IS NULL))"
    )
}

/// For rows `alias` of a [`Texts::Keys`] table of `project`'s scan: the `message` and
/// `remediation` select list, and the join that fills them in.
pub(crate) fn texts_of(alias: &str, project: &str) -> (String, String) {
    (
        format!(
            "COALESCE({alias}.message, tx.message) AS message, \
             COALESCE({alias}.remediation, tx.remediation) AS remediation"
        ),
        format!(
            "LEFT JOIN finding_texts tx ON tx.project_id = {project} AND tx.hash = {alias}.text_hash"
        ),
    )
}

/// A stored span as a plan reads it: one the branch's latest scan has (a push), or one the
/// previous scan stored as spans has (a move).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub(crate) struct LiveSpan {
    position: i64,
    rule_id: String,
    resource: String,
    status: String,
    severity: String,
    text: String,
}

impl LiveSpan {
    #[cfg(test)]
    pub(crate) fn for_tests(
        position: i64,
        rule_id: &str,
        resource: &str,
        status: tidemark_wire::FindingStatus,
    ) -> Self {
        LiveSpan {
            position,
            rule_id: rule_id.to_owned(),
            resource: resource.to_owned(),
            status: status.as_str().to_owned(),
            severity: "high".to_owned(),
            text: String::new(),
        }
    }

    pub(crate) fn position(&self) -> i64 {
        self.position
    }

    /// Roughly its bytes in memory (kept line states are bounded by it).
    pub(crate) fn weight(&self) -> usize {
        8 + 5 * 24
            + self.rule_id.len()
            + self.resource.len()
            + self.status.len()
            + self.severity.len()
            + self.text.len()
    }

    /// Its position and content, as `plan_spans` takes them.
    pub(crate) fn key(&self) -> (i64, SpanKey<'_>) {
        (
            self.position,
            SpanKey {
                rule_id: &self.rule_id,
                resource: &self.resource,
                status: &self.status,
                severity: &self.severity,
                text: &self.text,
            },
        )
    }
}

/// A column of the push head: the spans of line `line` (an SQL expression) that its latest
/// scan has (position, rule id, resource, status, severity, text hash; [`crate::packed`]), read
/// only when `when` holds.
pub(crate) fn live_spans_column(backend: Backend, when: &str, line: &str) -> String {
    let rows = crate::packed::packed_rows(
        backend,
        &[
            "v.position",
            "v.rule_id",
            "v.resource",
            "v.status",
            "v.severity",
            "v.text_hash",
        ],
    );
    format!(
        "CASE WHEN {when} THEN (SELECT {rows} FROM finding_spans v \
         WHERE v.branch_id = {line} AND v.to_seq = {OPEN_END}) END"
    )
}

/// [`live_spans_column`]'s value.
pub(crate) fn parse_live_spans(packed: &str) -> Result<Vec<LiveSpan>, StoreError> {
    let mut fields = crate::packed::Fields::new(packed, "live finding spans");
    let mut spans = Vec::new();
    while !fields.is_done() {
        spans.push(LiveSpan {
            position: fields.int()?,
            rule_id: fields.text()?.to_owned(),
            resource: fields.text()?.to_owned(),
            status: fields.text()?.to_owned(),
            severity: fields.text()?.to_owned(),
            text: fields.text()?.to_owned(),
        });
    }
    Ok(spans)
}

/// Where a scan's spans go.
pub(crate) struct SpanScan<'a> {
    pub project_id: &'a ProjectId,
    pub line_id: &'a str,
    pub seq: i64,
}

/// What a scan's spans write, and (when asked for) the line's live spans after it.
pub(crate) struct SpanWrites {
    pub writes: Vec<Stmt>,
    pub live_after: Option<Vec<LiveSpan>>,
}

/// The statements that store a scan's findings against its branch's live spans: the texts it
/// brings that the project does not have yet, the spans it no longer has ended at it, and
/// new spans for what changed. A scan like the previous one writes nothing here. With
/// `want_live`, also the spans the scan leaves live, in position order: the kept ones and the
/// started ones.
pub(crate) fn span_writes(
    scan: &SpanScan<'_>,
    findings: &[Finding],
    live: &[LiveSpan],
    want_live: bool,
) -> SpanWrites {
    let texts: Vec<String> = findings
        .iter()
        .map(|f| text_hash(&f.message, &f.remediation))
        .collect();
    let keys: Vec<SpanKey<'_>> = findings
        .iter()
        .zip(&texts)
        .map(|(f, text)| SpanKey {
            rule_id: &f.rule_id,
            resource: &f.resource,
            status: f.status.as_str(),
            severity: f.severity.as_str(),
            text,
        })
        .collect();
    let current: Vec<(i64, SpanKey<'_>)> = live.iter().map(LiveSpan::key).collect();
    let plan = plan_spans(&current, &keys);
    let mut writes = texts_statements(
        scan.project_id,
        plan.started.iter().map(|&(f, _)| {
            let finding = &findings[f];
            (
                texts[f].as_str(),
                finding.message.as_str(),
                finding.remediation.as_str(),
            )
        }),
    );
    let ended: Vec<i64> = plan.ended.iter().map(|&s| live[s].position).collect();
    for chunk in ended.chunks(SPANS_PER_STATEMENT) {
        let mut sql = format!(
            "UPDATE finding_spans SET to_seq = $1 WHERE branch_id = $2 AND to_seq = {OPEN_END} \
             AND position IN ("
        );
        let mut stmt = Stmt::new(String::new()).bind(scan.seq).bind(scan.line_id);
        for (i, &position) in chunk.iter().enumerate() {
            let _ = write!(sql, "{}${}", if i == 0 { "" } else { "," }, 3 + i);
            stmt = stmt.bind(position);
        }
        sql.push(')');
        stmt.sql = sql;
        writes.push(stmt);
    }
    let started: Vec<NewSpan<'_>> = plan
        .started
        .iter()
        .map(|&(f, position)| NewSpan::of(&findings[f], position, &texts[f]))
        .collect();
    writes.extend(insert_spans(scan.line_id, scan.seq, OPEN_END, &started));
    let live_after = want_live.then(|| {
        let mut after: Vec<LiveSpan> = plan.kept.iter().map(|&s| live[s].clone()).collect();
        after.extend(started.iter().map(|s| LiveSpan {
            position: s.position,
            rule_id: s.rule_id.to_owned(),
            resource: s.resource.to_owned(),
            status: s.status.to_owned(),
            severity: s.severity.to_owned(),
            text: s.text.to_owned(),
        }));
        after.sort_unstable_by_key(|s| s.position);
        after
    });
    SpanWrites { writes, live_after }
}

/// A span about to be stored.
pub(crate) struct NewSpan<'a> {
    pub position: i64,
    pub rule_id: &'a str,
    pub resource: &'a str,
    pub status: &'a str,
    pub severity: &'a str,
    pub text: &'a str,
}

impl<'a> NewSpan<'a> {
    fn of(finding: &'a Finding, position: i64, text: &'a str) -> Self {
        NewSpan {
            position,
            rule_id: &finding.rule_id,
            resource: &finding.resource,
            status: finding.status.as_str(),
            severity: finding.severity.as_str(),
            text,
        }
    }
}

/// Stores each of `texts` (hash, message, remediation) once for the project: a text the
/// project has already is left as it is.
pub(crate) fn texts_statements<'a>(
    project_id: &ProjectId,
    texts: impl IntoIterator<Item = (&'a str, &'a str, &'a str)>,
) -> Vec<Stmt> {
    let mut unique: Vec<(&str, &str, &str)> = texts.into_iter().collect();
    unique.sort_by_key(|t| t.0);
    unique.dedup_by_key(|t| t.0);
    let mut writes = Vec::new();
    for chunk in unique.chunks(SPANS_PER_STATEMENT * 2) {
        let mut sql = String::from(
            "INSERT INTO finding_texts (project_id, hash, message, remediation) \
             SELECT c.p, v.column1, v.column2, v.column3 FROM (SELECT $1 AS p) c CROSS JOIN (VALUES ",
        );
        let mut stmt = Stmt::new(String::new()).bind(project_id);
        for (i, (hash, message, remediation)) in chunk.iter().enumerate() {
            let n = 2 + 3 * i;
            let _ = write!(
                sql,
                "{}(${n},${},${})",
                if i == 0 { "" } else { "," },
                n + 1,
                n + 2
            );
            stmt = stmt.bind(*hash).bind(*message).bind(*remediation);
        }
        // SQLite reads `ON CONFLICT` after a SELECT only past a WHERE clause.
        sql.push_str(") v WHERE 1 = 1 ON CONFLICT (project_id, hash) DO NOTHING");
        stmt.sql = sql;
        writes.push(stmt);
    }
    writes
}

/// Inserts `spans` on line `line_id`, covering its scans from `from_seq` to before `to_seq`.
pub(crate) fn insert_spans(
    line_id: &str,
    from_seq: i64,
    to_seq: i64,
    spans: &[NewSpan<'_>],
) -> Vec<Stmt> {
    let mut writes = Vec::new();
    for chunk in spans.chunks(SPANS_PER_STATEMENT) {
        let mut sql = String::from(
            "INSERT INTO finding_spans (branch_id, to_seq, position, from_seq, rule_id, resource, \
             status, severity, text_hash) \
             SELECT c.b, c.t, v.column1, c.s, v.column2, v.column3, v.column4, v.column5, \
             v.column6 FROM (SELECT $1 AS b, $2 AS s, $3 AS t) c CROSS JOIN (VALUES ",
        );
        let mut stmt = Stmt::new(String::new())
            .bind(line_id)
            .bind(from_seq)
            .bind(to_seq);
        for (i, span) in chunk.iter().enumerate() {
            let n = 4 + 6 * i;
            let _ = write!(
                sql,
                "{}(CAST(${n} AS BIGINT),${},${},${},${},${})",
                if i == 0 { "" } else { "," },
                n + 1,
                n + 2,
                n + 3,
                n + 4,
                n + 5
            );
            stmt = stmt
                .bind(span.position)
                .bind(span.rule_id)
                .bind(span.resource)
                .bind(span.status)
                .bind(span.severity)
                .bind(span.text);
        }
        sql.push_str(") v");
        stmt.sql = sql;
        writes.push(stmt);
    }
    writes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(rule: &str, status: &str) -> Finding {
        serde_json::from_value(serde_json::json!({
            "rule_id": rule, "resource": "r", "status": status, "severity": "high",
            "message": "m", "remediation": "fix"
        }))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    fn live_after(findings: &[Finding]) -> Vec<LiveSpan> {
        findings
            .iter()
            .enumerate()
            .map(|(i, f)| LiveSpan {
                position: (i as i64 + 1) << 32,
                rule_id: f.rule_id.clone(),
                resource: f.resource.clone(),
                status: f.status.as_str().to_owned(),
                severity: f.severity.as_str().to_owned(),
                text: text_hash(&f.message, &f.remediation),
            })
            .collect()
    }

    static PROJECT: std::sync::LazyLock<ProjectId> =
        std::sync::LazyLock::new(|| ProjectId::trusted("prj_1"));

    fn scan() -> SpanScan<'static> {
        SpanScan {
            project_id: &PROJECT,
            line_id: "br_1",
            seq: 7,
        }
    }

    #[test]
    fn a_scan_like_the_last_writes_nothing() {
        let findings = [finding("a", "FAIL"), finding("b", "PASS")];
        assert!(
            span_writes(&scan(), &findings, &live_after(&findings), false)
                .writes
                .is_empty()
        );
    }

    #[test]
    fn a_first_scan_writes_its_texts_once_and_a_span_per_finding() {
        let findings = [finding("a", "FAIL"), finding("b", "PASS")];
        let writes = span_writes(&scan(), &findings, &[], false).writes;
        assert_eq!(writes.len(), 2, "{writes:?}");
        assert!(writes[0].sql.starts_with("INSERT INTO finding_texts"));
        assert_eq!(writes[0].sql.matches("($").count(), 1, "one text for both");
        assert!(writes[1].sql.starts_with("INSERT INTO finding_spans"));
        assert_eq!(writes[1].sql.matches("(CAST(").count(), 2);
    }

    #[test]
    fn a_changed_status_ends_one_span_and_starts_one() {
        let before = [finding("a", "FAIL"), finding("b", "FAIL")];
        let after = [finding("a", "FAIL"), finding("b", "PASS")];
        let writes = span_writes(&scan(), &after, &live_after(&before), false).writes;
        // The text is the project's already, but a new span may bring one: it is offered, and
        // kept once.
        assert_eq!(writes.len(), 3, "{writes:?}");
        assert!(writes[0].sql.starts_with("INSERT INTO finding_texts"));
        assert!(writes[1].sql.starts_with("UPDATE finding_spans"));
        assert!(writes[2].sql.starts_with("INSERT INTO finding_spans"));
        assert_eq!(writes[1].sql.matches('$').count(), 3);
    }
}
