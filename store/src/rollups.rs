//! Per-day roll-ups the push keeps (issue 48), so that the projects page's overview (open
//! findings by severity per day across an account's default branches) reads one row per day
//! however many projects the account has, not every scan of the window.
//!
//! `line_days` holds each line's latest scan of each UTC day (by the scan's own time; the
//! later push breaks a tie). `account_days` holds, per account and day, by how much the sum
//! over its active projects' default lines of each line's latest counts changed that day: the
//! sum of the rows up to a day is that day's total. A push to a default line changes its day
//! (from what the line said that day before to what it says now) and takes the same change
//! back on the line's next recorded day, which it does not change: that day still says what it
//! said. Whatever changes which lines count (archiving, another default branch, a pruned line)
//! sums the account again from `line_days` ([`rebuild_account_days!`]).

use tidemark_domain::Millis;

use crate::stmt::Stmt;
use crate::{on_db, AccountId, Db, StoreError};

use tidemark_domain::time::DAY_MS as DAY;

/// One scan as the roll-ups see it.
pub(crate) struct DayScan<'a> {
    pub account_id: &'a str,
    pub line_id: &'a str,
    pub on_default_line: bool,
    pub scanned_at: Millis,
    pub seq: i64,
    /// Critical, high, medium, low.
    pub counts: [i64; 4],
    /// Where the account's change goes: `None` adds it to `account_days` (SQLite), a scan
    /// reference inserts it as that scan's own rows in `account_day_changes` (PostgreSQL).
    pub change_of: Option<&'a str>,
}

/// Nothing newer is recorded for the scan's line and day (the placeholders that follow).
const NEWEST_OF_ITS_DAY: &str = "NOT EXISTS (SELECT 1 FROM line_days WHERE branch_id = $ \
     AND utc_day = $ AND (scanned_at > $ OR (scanned_at = $ AND seq > $)))";

/// What the line said on the day, before this push: its latest day up to it.
const LINE_BEFORE: &str = "(SELECT sev_critical, sev_high, sev_medium, sev_low FROM line_days \
     WHERE branch_id = $ AND utc_day <= $ ORDER BY utc_day DESC LIMIT 1)";

const ADD_CHANGE: &str = "ON CONFLICT (account_id, utc_day) DO UPDATE SET \
     d_critical = account_days.d_critical + excluded.d_critical, \
     d_high = account_days.d_high + excluded.d_high, \
     d_medium = account_days.d_medium + excluded.d_medium, \
     d_low = account_days.d_low + excluded.d_low";

/// The push's statements, in this order: the account's change on the scan's day and its
/// taking back on the line's next day (a default line's scan only), then the line's day.
pub(crate) fn push_statements(scan: &DayScan<'_>) -> Vec<Stmt> {
    let day = scan.scanned_at.div_euclid(DAY);
    let [c, h, m, l] = scan.counts;
    let newest = |stmt: Stmt| {
        stmt.bind(scan.line_id)
            .bind(day)
            .bind(scan.scanned_at)
            .bind(scan.scanned_at)
            .bind(scan.seq)
    };
    let mut writes = Vec::new();
    if scan.on_default_line {
        // The kept row takes the change; a change row is the push's own (no conflict).
        let (into, key, add) = match scan.change_of {
            None => ("account_days (account_id,", "", ADD_CHANGE),
            Some(_) => ("account_day_changes (account_id, scan_ref,", "$, ", ""),
        };
        let change_of = |stmt: Stmt| match scan.change_of {
            Some(scan_ref) => stmt.bind(scan_ref),
            None => stmt,
        };
        let on_its_day = Stmt::new(numbered(&format!(
            "INSERT INTO {into} utc_day, d_critical, d_high, d_medium, d_low) \
             SELECT $, {key}$, $ - COALESCE(b.sev_critical, 0), $ - COALESCE(b.sev_high, 0), \
             $ - COALESCE(b.sev_medium, 0), $ - COALESCE(b.sev_low, 0) \
             FROM (SELECT 1 AS one) o LEFT JOIN {LINE_BEFORE} b ON TRUE \
             WHERE {NEWEST_OF_ITS_DAY} {add}"
        )))
        .bind(scan.account_id);
        let on_its_day = change_of(on_its_day)
            .bind(day)
            .bind(c)
            .bind(h)
            .bind(m)
            .bind(l)
            .bind(scan.line_id)
            .bind(day);
        writes.push(newest(on_its_day));
        let taken_back = Stmt::new(numbered(&format!(
            "INSERT INTO {into} utc_day, d_critical, d_high, d_medium, d_low) \
             SELECT $, {key}n.utc_day, COALESCE(b.sev_critical, 0) - $, \
             COALESCE(b.sev_high, 0) - $, COALESCE(b.sev_medium, 0) - $, \
             COALESCE(b.sev_low, 0) - $ \
             FROM (SELECT MIN(utc_day) AS utc_day FROM line_days WHERE branch_id = $ AND utc_day > $) n \
             LEFT JOIN {LINE_BEFORE} b ON TRUE \
             WHERE n.utc_day IS NOT NULL AND {NEWEST_OF_ITS_DAY} {add}"
        )))
        .bind(scan.account_id);
        let taken_back = change_of(taken_back)
            .bind(c)
            .bind(h)
            .bind(m)
            .bind(l)
            .bind(scan.line_id)
            .bind(day)
            .bind(scan.line_id)
            .bind(day);
        writes.push(newest(taken_back));
    }
    writes.push(
        Stmt::new(
            "INSERT INTO line_days (branch_id, utc_day, scanned_at, seq, sev_critical, sev_high, \
             sev_medium, sev_low) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
             ON CONFLICT (branch_id, utc_day) DO UPDATE SET scanned_at = excluded.scanned_at, \
             seq = excluded.seq, sev_critical = excluded.sev_critical, \
             sev_high = excluded.sev_high, sev_medium = excluded.sev_medium, \
             sev_low = excluded.sev_low \
             WHERE excluded.scanned_at > line_days.scanned_at \
             OR (excluded.scanned_at = line_days.scanned_at AND excluded.seq > line_days.seq)",
        )
        .bind(scan.line_id)
        .bind(day)
        .bind(scan.scanned_at)
        .bind(scan.seq)
        .bind(c)
        .bind(h)
        .bind(m)
        .bind(l),
    );
    writes
}

/// `$` placeholders numbered in order (`$1`, `$2`, …), as [`Stmt`] wants them: the
/// fragments above are shared between statements, so they cannot number their own.
fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut n = 0;
    for (i, part) in sql.split('$').enumerate() {
        if i > 0 {
            n += 1;
            out.push_str(&format!("${n}"));
        }
        out.push_str(part);
    }
    out
}

/// Forgets an account's `account_days` and sums them again from the `line_days` of its
/// active projects' default lines.
#[doc(hidden)]
pub const REBUILD_SQL: [&str; 3] = [
    "DELETE FROM account_day_changes WHERE account_id = $1",
    "DELETE FROM account_days WHERE account_id = $1",
    "INSERT INTO account_days (account_id, utc_day, d_critical, d_high, d_medium, d_low) \
     SELECT account_id, utc_day, SUM(d_critical), SUM(d_high), SUM(d_medium), SUM(d_low) FROM ( \
     SELECT p.account_id, ld.utc_day, \
     ld.sev_critical - COALESCE(LAG(ld.sev_critical) OVER w, 0) AS d_critical, \
     ld.sev_high - COALESCE(LAG(ld.sev_high) OVER w, 0) AS d_high, \
     ld.sev_medium - COALESCE(LAG(ld.sev_medium) OVER w, 0) AS d_medium, \
     ld.sev_low - COALESCE(LAG(ld.sev_low) OVER w, 0) AS d_low \
     FROM projects p JOIN line_days ld ON ld.branch_id = p.default_branch_id \
     WHERE p.account_id = $1 AND p.archived_at IS NULL \
     WINDOW w AS (PARTITION BY ld.branch_id ORDER BY ld.utc_day)) changes \
     GROUP BY account_id, utc_day",
];

/// Sums `$account`'s overview again, on `$exec` (the transaction that changed which lines
/// count). A macro so that one text serves both backends' executors.
macro_rules! rebuild_account_days {
    ($exec:expr, $account:expr) => {{
        let account: &str = $account;
        let mut result = Ok(());
        for sql in $crate::rollups::REBUILD_SQL {
            if let Err(err) = sqlx::query(sql).bind(account).execute(&mut *$exec).await {
                result = Err(err);
                break;
            }
        }
        result
    }};
}
pub(crate) use rebuild_account_days;

/// The account's open findings by severity on each of the `days` days up to `now`'s (UTC),
/// oldest first: each day's date (midnight UTC) and its totals (critical, high, medium, low).
pub async fn open_by_day(
    db: &Db,
    account_id: &AccountId,
    days: usize,
    now: Millis,
) -> Result<Vec<(Millis, [i64; 4])>, StoreError> {
    let last = now.div_euclid(DAY);
    let first = last - days as i64 + 1;
    // Every day before the window as one sum, then one row per day of it; the kept rows and
    // the changes not folded into them yet.
    let rows: Vec<(i64, i64, i64, i64, i64)> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT CASE WHEN utc_day < $1 THEN $2 - 1 ELSE utc_day END AS d, \
             CAST(SUM(d_critical) AS BIGINT), CAST(SUM(d_high) AS BIGINT), \
             CAST(SUM(d_medium) AS BIGINT), CAST(SUM(d_low) AS BIGINT) FROM ( \
             SELECT utc_day, d_critical, d_high, d_medium, d_low FROM account_days \
             WHERE account_id = $3 AND utc_day <= $4 UNION ALL \
             SELECT utc_day, d_critical, d_high, d_medium, d_low FROM account_day_changes \
             WHERE account_id = $5 AND utc_day <= $6) kept \
             GROUP BY d ORDER BY d",
        )
        .bind(first)
        .bind(first)
        .bind(account_id)
        .bind(last)
        .bind(account_id)
        .bind(last)
        .fetch_all(pool)
        .await
    })?;
    let changes: Vec<(i64, [i64; 4])> = rows
        .into_iter()
        .map(|(day, c, h, m, l)| (day, [c, h, m, l]))
        .collect();
    Ok(
        tidemark_domain::overview::running_totals(&changes, first, days)
            .into_iter()
            .map(|(day, counts)| (day * DAY, counts))
            .collect(),
    )
}
