//! A project's lines (its branches and pull requests), and the one a page or a request names.

use tidemark_store::branches;
pub use tidemark_store::branches::Line;
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
