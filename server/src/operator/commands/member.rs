//! `member add|list|remove`.

use serde_json::json;
use tidemark_domain::audit::AuditContext;
use tidemark_domain::text::Email;
use tidemark_services::{members, ServiceError};
use tidemark_store::access::Member;
use tidemark_store::Writer;

use super::{account_arg, lines, Report};
use crate::operator::cli::MemberCommand;

/// A member as operator commands print it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct MemberView {
    pub email: String,
    pub role: &'static str,
    pub added_at: String,
    pub last_login_at: Option<String>,
}

impl From<Member> for MemberView {
    fn from(m: Member) -> Self {
        MemberView {
            email: m.email,
            role: m.role.as_str(),
            added_at: tidemark_domain::to_rfc3339(m.added_at),
            last_login_at: m.last_login_at.map(tidemark_domain::to_rfc3339),
        }
    }
}

fn email_arg(text: &str) -> anyhow::Result<Email> {
    Email::parse(text).map_err(|e| anyhow::anyhow!(e.message))
}

/// The account's members as operators print them.
pub async fn list(
    db: &Writer,
    account: &tidemark_wire::ids::AccountId,
) -> anyhow::Result<Vec<MemberView>> {
    Ok(members::list(db, account)
        .await?
        .into_iter()
        .map(MemberView::from)
        .collect())
}

pub async fn run(
    command: MemberCommand,
    db: &Writer,
    audit: &AuditContext,
) -> anyhow::Result<Report> {
    match command {
        MemberCommand::Add {
            account,
            email,
            role,
        } => {
            let email = email_arg(&email)?;
            let member =
                members::add(db, &account_arg(&account)?, &email, role.into(), audit).await?;
            let member = MemberView::from(member);
            let human = format!("{} is now {} of {account}\n", member.email, member.role);
            Report::new(&member, human)
        }
        MemberCommand::List { account } => {
            let members = list(db, &account_arg(&account)?).await?;
            let human = lines(&members, |m| {
                format!(
                    "{:<40}  {:<6}  last sign-in {}",
                    m.email,
                    m.role,
                    m.last_login_at.as_deref().unwrap_or("never")
                )
            });
            Report::new(&json!({ "members": members }), human)
        }
        MemberCommand::Remove { account, email } => {
            let parsed = email_arg(&email)?;
            members::change(db, &account_arg(&account)?, &parsed, None, audit)
                .await
                .map_err(|err| match err {
                    ServiceError::NotFound => {
                        anyhow::anyhow!("{} is not a member of {account}", parsed.as_str())
                    }
                    other => other.into(),
                })?;
            Report::new(
                &json!({ "account_id": account, "email": email, "removed": true }),
                format!("{email} removed from {account}; their sessions there have ended\n"),
            )
        }
    }
}
