//! A project's lines (its branches and pull requests), and the one a page or a request names.

use tidemark_store::branches;
pub use tidemark_store::branches::Line;
/// A line as a request names it: its id and name, no scans.
pub use tidemark_store::findings::Line as LineRef;
use tidemark_store::Db;
use tidemark_wire::ids::{AccountId, ProjectId};

use crate::ServiceError;

/// Which line is wanted: the default branch, a branch by name, or a pull request by number.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum LineWanted {
    #[default]
    Default,
    Branch(String),
    PullRequest(i64),
}

impl LineWanted {
    fn is(&self, line: &Line) -> bool {
        match self {
            LineWanted::Default => line.is_default,
            LineWanted::Branch(name) => {
                line.pull_request.is_none() && line.name.as_deref() == Some(name.as_str())
            }
            LineWanted::PullRequest(n) => {
                line.pull_request.as_ref().is_some_and(|p| p.number == *n)
            }
        }
    }
}

/// The project's lines, and the one wanted among them ("not found" when it has no such line,
/// or when the project is not the account's).
pub async fn choose(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
    wanted: &LineWanted,
) -> Result<(Line, Vec<Line>), ServiceError> {
    let lines = branches::list_lines(db, account_id, project_id).await?;
    match lines.iter().find(|l| wanted.is(l)) {
        Some(line) => Ok((line.clone(), lines)),
        None => Err(ServiceError::NotFound),
    }
}

/// Why a line a request names was not found: the project is not the account's, or it has no
/// such branch (`/v1` says which).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoLine {
    Project,
    Branch,
}

/// The line `branch` names (`pr:<n>` for a pull request, `None` for the default branch), as
/// `/v1`'s project reads name it.
pub async fn named(
    db: &Db,
    account_id: &AccountId,
    project_id: &ProjectId,
    branch: Option<&str>,
) -> Result<Result<LineRef, NoLine>, ServiceError> {
    if let Some(line) =
        tidemark_store::findings::find_line(db, account_id, project_id, branch).await?
    {
        return Ok(Ok(line));
    }
    let project = tidemark_store::dashboard::find_project(db, account_id, project_id).await?;
    Ok(Err(match project {
        Some(_) => NoLine::Branch,
        None => NoLine::Project,
    }))
}
