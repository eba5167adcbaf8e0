//! `scim token`: an account's SCIM bearer token, for operators.

use super::account_arg;
use serde_json::json;
use tidemark_domain::audit::AuditContext;
use tidemark_domain::secrets::ScimToken;
use tidemark_store::Writer;

use super::Report;
use crate::operator::cli::ScimCommand;

pub async fn run(
    command: ScimCommand,
    db: &Writer,
    audit: &AuditContext,
) -> anyhow::Result<Report> {
    match command {
        ScimCommand::Token { account, revoke } => {
            if tidemark_store::licenses::find_license_for_account(db.db(), &account_arg(&account)?)
                .await?
                .is_none()
            {
                anyhow::bail!("no account with id {account}");
            }
            if revoke {
                if !tidemark_store::scim::revoke_token(db, &account_arg(&account)?, audit).await? {
                    anyhow::bail!("account {account} has no SCIM token");
                }
                return Report::new(
                    &json!({ "account_id": account, "revoked": true }),
                    format!(
                        "revoked the SCIM token of {account}; provisioning calls now get 401\n"
                    ),
                );
            }
            let token = ScimToken::generate();
            let prefix = token.display_prefix();
            tidemark_store::scim::set_token(
                db,
                &account_arg(&account)?,
                &token.hash(),
                &prefix,
                audit,
            )
            .await?;
            Report::new(
                &json!({ "account_id": account, "token": token.expose(), "prefix": prefix }),
                format!(
                    "{}\n(the SCIM token of {account}: shown once; any earlier token stopped \
                     working)\n",
                    token.expose()
                ),
            )
            .map(|r| r.beside_json(format!("made a SCIM token ({prefix}…) for {account}\n")))
        }
    }
}
