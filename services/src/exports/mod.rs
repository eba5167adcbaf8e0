//! Exports: a scan's findings as CSV or SARIF 2.1.0, a project's score history as CSV, and a
//! scan's compliance report (`report`). The formats are plain functions from stored rows to
//! bytes; the loaders find the rows within one account, so the dashboard's links and `/v1`
//! answer the same files. A file says how it is served (type, name, inline, its page policy);
//! the server turns it into a response.

pub(crate) mod csv;
pub mod report;
mod sarif;

use futures_util::stream::BoxStream;
use tidemark_domain::push::MAX_FINDINGS;
use tidemark_store::dashboard::{
    find_project, find_scan, list_findings, scans_after, FindingFilter, ProjectRow, ScanRow,
};
use tidemark_store::{Db, StoreError};
use tidemark_wire::ids::{AccountId, ProjectId, ScanId};

pub use self::csv::{
    findings_csv, history_csv, table_csv, FINDINGS_CSV_HEADER, HISTORY_CSV_HEADER,
};
pub use self::sarif::{findings_sarif, SarifLog, Triaged, SARIF_SCHEMA};

/// History rows read per query while streaming a history export.
const HISTORY_PAGE: i64 = 2_000;

/// What a findings export is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FindingsFormat {
    Csv,
    Sarif,
}

/// A file's bytes: whole, or a page at a time (a long history starts arriving at once).
pub enum FileBody {
    Bytes(Vec<u8>),
    /// Chunks in order; an error cuts the download short (its status is already sent).
    Stream(BoxStream<'static, std::io::Result<Vec<u8>>>),
}

/// A file to download, and how it is to be served.
pub struct File {
    pub content_type: &'static str,
    pub filename: String,
    pub body: FileBody,
    /// Shown in the browser (a page to read or print) rather than saved.
    pub inline: bool,
    /// The page's own Content-Security-Policy (otherwise the site's: nothing allowed).
    pub policy: Option<String>,
}

impl File {
    pub fn new(content_type: &'static str, filename: String, bytes: Vec<u8>) -> Self {
        File {
            content_type,
            filename,
            body: FileBody::Bytes(bytes),
            inline: false,
            policy: None,
        }
    }
}

/// A project label as part of a file name: labels may hold `/` and spaces.
pub fn file_stem(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// What a findings export finds.
pub enum ScanFindings {
    File(File),
    /// The account has no such project or scan (ids that cannot exist are not looked up).
    Missing,
    /// Housekeeping removed the scan's findings; its row in the history stays.
    Thinned,
}

/// What a thinned scan's finding endpoints say (`410 Gone`).
pub use tidemark_domain::housekeeping::THINNED_MESSAGE;

/// The project and scan a file is about, or why there is none: the account has no such
/// project or scan, or housekeeping removed the scan's findings.
pub(crate) async fn scan_of(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
    scan_id: &ScanId,
) -> Result<Result<(ProjectRow, ScanRow), ScanFindings>, StoreError> {
    let Some(project) = find_project(db, account_id, project_id).await? else {
        return Ok(Err(ScanFindings::Missing));
    };
    let Some((scan, _previous)) = find_scan(db, account_id, project_id, scan_id).await? else {
        return Ok(Err(ScanFindings::Missing));
    };
    if scan.thinned {
        return Ok(Err(ScanFindings::Thinned));
    }
    Ok(Ok((project, scan)))
}

/// A scan's findings in `format`.
pub async fn scan_findings(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
    scan_id: &ScanId,
    format: FindingsFormat,
    dashboard_url: &str,
) -> Result<ScanFindings, StoreError> {
    let (project, scan) = match scan_of(db, account_id, project_id, scan_id).await? {
        Ok(found) => found,
        Err(none) => return Ok(none),
    };
    let limit = i64::try_from(MAX_FINDINGS).unwrap_or(i64::MAX);
    let (findings, _) = list_findings(
        db,
        project_id,
        scan.seq,
        &FindingFilter::default(),
        0,
        limit,
    )
    .await?;
    let stem = format!("{}-{}", file_stem(&project.label), scan.scan_id);
    Ok(ScanFindings::File(match format {
        FindingsFormat::Csv => File::new(
            "text/csv; charset=utf-8",
            format!("{stem}-findings.csv"),
            findings_csv(&findings),
        ),
        FindingsFormat::Sarif => {
            let target = ExportProject {
                id: &project.id,
                label: &project.label,
            };
            let triaged = match &scan.line_id {
                Some(line) => {
                    tidemark_store::findings::triaged_on_line(
                        db,
                        line,
                        tidemark_domain::now_millis(),
                    )
                    .await?
                }
                None => Default::default(),
            };
            let log = findings_sarif(&target, &scan, &findings, &triaged, dashboard_url);
            File::new(
                "application/sarif+json",
                format!("{stem}.sarif"),
                serde_json::to_vec(&log).unwrap_or_default(),
            )
        }
    }))
}

/// The project's whole history as CSV, oldest first, streamed a page at a time (a project
/// may have hundreds of thousands of scans); `None` when the account has no such project.
pub async fn project_history(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
) -> Result<Option<File>, StoreError> {
    let Some(project) = find_project(db, account_id, project_id).await? else {
        return Ok(None);
    };
    struct Cursor {
        db: Db,
        account_id: AccountId,
        project_id: ProjectId,
        after_seq: i64,
        first: bool,
        done: bool,
    }
    let start = Cursor {
        db: db.clone(),
        account_id: account_id.to_owned(),
        project_id: project_id.to_owned(),
        after_seq: 0,
        first: true,
        done: false,
    };
    let pages = futures_util::stream::unfold(start, |mut c| async move {
        if c.done {
            return None;
        }
        let page = match scans_after(
            &c.db,
            &c.account_id,
            &c.project_id,
            c.after_seq,
            HISTORY_PAGE,
        )
        .await
        {
            Ok(page) => page,
            Err(err) => {
                // The status has been sent: all that is left is to cut the body short,
                // which the client sees as an incomplete download.
                tracing::error!(%err, "history export stopped");
                c.done = true;
                return Some((Err(std::io::Error::other("history export stopped")), c));
            }
        };
        c.done = i64::try_from(page.len()).unwrap_or(0) < HISTORY_PAGE;
        c.after_seq = page.last().map_or(c.after_seq, |s| s.seq);
        let chunk = history_csv(&page, c.first);
        c.first = false;
        Some((Ok::<_, std::io::Error>(chunk), c))
    });
    Ok(Some(File {
        content_type: "text/csv; charset=utf-8",
        filename: format!("{}-history.csv", file_stem(&project.label)),
        // Fused: a body may be polled again after its end (the compression layer does), and
        // an `unfold` stream panics when it is.
        body: FileBody::Stream(Box::pin(futures_util::StreamExt::fuse(pages))),
        inline: false,
        policy: None,
    }))
}

/// The project a file is about (named in the file and its download name).
pub struct ExportProject<'a> {
    pub id: &'a ProjectId,
    pub label: &'a str,
}
