//! The row the head statement reads, in typed parts: the account's budget and listeners, the
//! label's project, its lines, the push line's latest scan, a pull request's base, and the
//! finding sets the statement builds as JSON, decoded at the row's edge (by sqlx on
//! PostgreSQL, by rusqlite in the SQLite writer: the same column names either way).

use std::collections::HashSet;
use std::sync::Arc;

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ValueRef};
use tidemark_domain::frameworks::ValidFramework;

use super::line_state::LineState;
use super::{
    base_comparison, gate_from_columns, verdict_from_columns, BaseHead, BaseScan, Head, LastScan,
    LineHead, LineRef, Listeners, ProjectHead, PushHead,
};
use crate::findings::OpenTracked;
use crate::spans::LiveSpan;
use crate::{ProjectId, ScanId, StoreError};

/// A column the head statement builds as JSON or as packed rows ([`crate::packed`]), or null,
/// parsed into `T` as the row is read.
pub(super) struct JsonColumn<T>(Option<T>);

pub(super) trait FromJsonColumn: Sized {
    fn from_json(text: &str) -> Result<Self, StoreError>;
}

/// `[[rule, resource], …]`: open, triaged or set-aside findings by key.
impl FromJsonColumn for HashSet<(String, String)> {
    fn from_json(text: &str) -> Result<Self, StoreError> {
        crate::gates::parse_open_set(text)
    }
}

impl FromJsonColumn for OpenTracked {
    fn from_json(text: &str) -> Result<Self, StoreError> {
        crate::findings::parse_open_tracked(text)
    }
}

impl FromJsonColumn for Vec<LiveSpan> {
    fn from_json(text: &str) -> Result<Self, StoreError> {
        crate::spans::parse_live_spans(text)
    }
}

/// The account's custom frameworks; one no longer valid is skipped, never an error.
impl FromJsonColumn for Vec<ValidFramework> {
    fn from_json(text: &str) -> Result<Self, StoreError> {
        Ok(crate::posture::parse_customs(Some(text)))
    }
}

impl<'r, DB: sqlx::Database, T: FromJsonColumn> sqlx::Decode<'r, DB> for JsonColumn<T>
where
    Option<&'r str>: sqlx::Decode<'r, DB>,
{
    fn decode(
        value: <DB as sqlx::Database>::ValueRef<'r>,
    ) -> Result<Self, sqlx::error::BoxDynError> {
        let text = <Option<&'r str> as sqlx::Decode<'r, DB>>::decode(value)?;
        Ok(Self(text.map(T::from_json).transpose()?))
    }
}

impl<DB: sqlx::Database, T> sqlx::Type<DB> for JsonColumn<T>
where
    str: sqlx::Type<DB>,
{
    fn type_info() -> DB::TypeInfo {
        <str as sqlx::Type<DB>>::type_info()
    }

    fn compatible(ty: &DB::TypeInfo) -> bool {
        <str as sqlx::Type<DB>>::compatible(ty)
    }
}

impl<T: FromJsonColumn> FromSql for JsonColumn<T> {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        match value {
            ValueRef::Null => Ok(Self(None)),
            other => T::from_json(other.as_str()?)
                .map(|parsed| Self(Some(parsed)))
                .map_err(|err| FromSqlError::Other(Box::new(err))),
        }
    }
}

impl<T: Default> JsonColumn<T> {
    fn or_empty(self) -> T {
        self.0.unwrap_or_default()
    }
}

/// Reads a part by column name from the SQLite writer's row (the names sqlx's `FromRow` reads);
/// ids are text there, and trusted as the database's own.
macro_rules! read_part {
    ($row:ident, $part:ident { $($field:ident),* $(,)? } $(ids { $($id:ident: $ty:ty),* $(,)? })?) => {
        $part {
            $($field: $row.get(stringify!($field))?,)*
            $($($id: $row.get::<_, Option<String>>(stringify!($id))?.map(<$ty>::trusted),)*)?
        }
    };
}

/// The account: its key and license, its write budget, its projects, who follows its pushes.
#[derive(sqlx::FromRow)]
pub(super) struct AccountPart {
    key_live: i64,
    license_live: i64,
    writes: i64,
    oldest_write: Option<i64>,
    active: i64,
    webhooks: i64,
    alerts: i64,
    custom_frameworks: JsonColumn<Vec<ValidFramework>>,
}

/// The label's project (all null when the label is new).
#[derive(sqlx::FromRow)]
pub(super) struct ProjectPart {
    id: Option<ProjectId>,
    archived_at: Option<i64>,
    scan_count: Option<i64>,
    gate_min_score: Option<f64>,
    gate_max_drop: Option<f64>,
    gate_new_severity: Option<String>,
    same_second: i64,
}

/// The project's default line and the push's line.
#[derive(sqlx::FromRow)]
pub(super) struct LinesPart {
    default_id: Option<String>,
    default_name: Option<String>,
    line_id: Option<String>,
    line_name: Option<String>,
    line_pr: Option<i64>,
    line_count: Option<i64>,
    line_head_seq: Option<i64>,
    line_head_at: Option<i64>,
}

/// The push line's latest scan: what a replay answers and the next delta starts from.
#[derive(sqlx::FromRow)]
pub(super) struct LastScanPart {
    last_score: Option<f64>,
    last_scan_id: Option<ScanId>,
    last_delta: Option<f64>,
    last_body_hash: Option<String>,
    last_gate_status: Option<String>,
    last_gate_reasons: Option<String>,
    last_base_branch: Option<String>,
    last_base_scan_id: Option<String>,
    last_base_score: Option<f64>,
    last_base_new: Option<i64>,
    last_base_fixed: Option<i64>,
}

/// A pull request's base line and its latest scan.
#[derive(sqlx::FromRow)]
pub(super) struct BasePart {
    base_id: Option<String>,
    base_scan_id: Option<ScanId>,
    base_score: Option<f64>,
    base_seq: Option<i64>,
}

/// The finding sets the gate, the tracker and posture compare the push with.
#[derive(sqlx::FromRow)]
pub(super) struct FindingSets {
    previous_open: JsonColumn<HashSet<(String, String)>>,
    base_open: JsonColumn<HashSet<(String, String)>>,
    triaged: JsonColumn<HashSet<(String, String)>>,
    set_aside: JsonColumn<HashSet<(String, String)>>,
    open_tracked: JsonColumn<OpenTracked>,
    live_spans: JsonColumn<Vec<LiveSpan>>,
    /// 1 when the line's state is the one the push said it keeps (and so was not read).
    state_kept: i64,
}

/// What [`super::head_statement`] reads: all null (and 0 scans in the second) past the
/// account's part when the label is new.
#[derive(sqlx::FromRow)]
pub(super) struct HeadRow {
    #[sqlx(flatten)]
    account: AccountPart,
    #[sqlx(flatten)]
    project: ProjectPart,
    #[sqlx(flatten)]
    lines: LinesPart,
    #[sqlx(flatten)]
    last: LastScanPart,
    #[sqlx(flatten)]
    base: BasePart,
    #[sqlx(flatten)]
    sets: FindingSets,
}

impl HeadRow {
    /// The same row from the SQLite writer's statement.
    pub(super) fn from_sqlite(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            account: read_part!(
                row,
                AccountPart {
                    key_live,
                    license_live,
                    writes,
                    oldest_write,
                    active,
                    webhooks,
                    alerts,
                    custom_frameworks,
                }
            ),
            project: read_part!(row, ProjectPart {
                archived_at, scan_count, gate_min_score, gate_max_drop, gate_new_severity,
                same_second,
            } ids { id: ProjectId }),
            lines: read_part!(
                row,
                LinesPart {
                    default_id,
                    default_name,
                    line_id,
                    line_name,
                    line_pr,
                    line_count,
                    line_head_seq,
                    line_head_at,
                }
            ),
            last: read_part!(row, LastScanPart {
                last_score, last_delta, last_body_hash, last_gate_status, last_gate_reasons,
                last_base_branch, last_base_scan_id, last_base_score, last_base_new,
                last_base_fixed,
            } ids { last_scan_id: ScanId }),
            base: read_part!(row, BasePart { base_id, base_score, base_seq } ids { base_scan_id: ScanId }),
            sets: read_part!(
                row,
                FindingSets {
                    previous_open,
                    base_open,
                    triaged,
                    set_aside,
                    open_tracked,
                    live_spans,
                    state_kept,
                }
            ),
        })
    }

    /// The rules' view of the head, who follows the account's pushes, and what a gate on new
    /// findings compares with. `kept` is the line state the push said it keeps: used when the
    /// row says it is still the line's.
    pub(super) fn into_head(self, kept: Option<Arc<LineState>>) -> Head {
        let HeadRow {
            account,
            project,
            lines,
            last,
            base,
            sets,
        } = self;
        let line = lines.line_id.clone().map(|id| LineHead {
            id,
            scan_count: lines.line_count.unwrap_or(0),
            last_score: last.last_score,
            last_scan: last.into_last_scan(),
        });
        let base_head = base.base_id.map(|id| BaseHead {
            id,
            last: base
                .base_scan_id
                .zip(base.base_score)
                .map(|(scan_id, score)| BaseScan { scan_id, score }),
        });
        let default_line = lines.default_id.map(|id| LineRef {
            id,
            name: lines.default_name.clone(),
        });
        let rules = PushHead {
            key_live: account.key_live > 0,
            license_live: account.license_live > 0,
            writes_in_window: u32::try_from(account.writes).unwrap_or(u32::MAX),
            oldest_write: account.oldest_write,
            active_projects: u64::try_from(account.active).unwrap_or(0),
            project: project.id.map(|id| ProjectHead {
                id,
                archived: project.archived_at.is_some(),
                scan_count: project.scan_count.unwrap_or(0),
                scans_in_same_second: u32::try_from(project.same_second).unwrap_or(u32::MAX - 1),
                gate: gate_from_columns(
                    project.gate_min_score,
                    project.gate_max_drop,
                    project.gate_new_severity.as_deref(),
                ),
                default_line,
                line,
                base: base_head,
            }),
        };
        Head {
            rules,
            listeners: Listeners {
                webhooks: account.webhooks > 0,
                alerts: account.alerts > 0,
            },
            previous_open: sets.previous_open.0,
            base_open: sets.base_open.0,
            triaged: sets.triaged.0,
            set_aside: sets.set_aside.0,
            state: match kept {
                Some(state) if sets.state_kept == 1 => state,
                _ => Arc::new(LineState {
                    live_spans: sets.live_spans.or_empty(),
                    open_tracked: sets.open_tracked.or_empty(),
                }),
            },
            customs: account.custom_frameworks.or_empty(),
            line_head: lines.line_head_seq.zip(lines.line_head_at),
            line_name: lines.line_name,
            line_pr: lines.line_pr.and_then(|n| u64::try_from(n).ok()),
            default_name: lines.default_name,
            base_seq: base.base_seq,
        }
    }
}

impl LastScanPart {
    fn into_last_scan(self) -> Option<LastScan> {
        let (scan_id, score_delta, body_hash) =
            (self.last_scan_id?, self.last_delta?, self.last_body_hash?);
        let last_score = self.last_score.unwrap_or_default();
        let counts = self
            .last_base_new
            .zip(self.last_base_fixed)
            .map(|(n, f)| (u64::try_from(n).unwrap_or(0), u64::try_from(f).unwrap_or(0)));
        let base_scan = self.last_base_scan_id.zip(self.last_base_score);
        Some(LastScan {
            scan_id,
            score_delta,
            body_hash,
            gate: verdict_from_columns(
                self.last_gate_status.as_deref(),
                self.last_gate_reasons.as_deref(),
            ),
            base: self
                .last_base_branch
                .map(|branch| base_comparison(&branch, base_scan, last_score, counts)),
        })
    }
}
