//! What the dashboard's pages show: the serialisable types every server function returns and
//! every view renders, the chart's geometry and ranges, and how severities look. Plain data,
//! compiled into the server and the browser alike; nothing here reaches the database.

pub use tidemark_wire::{GateResult, GateStatus, Severity, SeverityCounts};

/// Rows per page of a scan's findings table.
pub const PAGE_SIZE: i64 = 50;
/// Rows per page of a project's scans: twenty a page keeps the page short as cards on a
/// phone (45 scans as cards made it 14,000 px tall), and the chart above shows every scan.
pub const SCANS_PAGE_SIZE: i64 = 20;
/// The most points a chart draws.
pub const CHART_POINTS: usize = 400;
/// Time buckets the database reduces a history to (up to four scans each) before LTTB.
pub const HISTORY_BUCKETS: i64 = 500;

mod admin;
mod inbox;
mod lines;
mod posture;
mod projects;
mod scans;

pub use admin::*;
pub use inbox::*;
pub use lines::*;
pub use posture::*;
pub use projects::*;
pub use scans::*;
