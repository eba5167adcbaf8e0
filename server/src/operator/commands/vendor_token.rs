//! `vendor-token`: tokens for the vendor's admin API, on the use cases `/admin/v1/tokens`
//! calls.

use serde_json::json;
use tidemark_domain::audit::AuditContext;
use tidemark_domain::to_rfc3339;
use tidemark_domain::vendor::{TokenName, VendorRole};
use tidemark_services::vendor;
use tidemark_services::ServiceError;
use tidemark_store::Writer;

use super::Report;
use crate::operator::cli::{parse_timestamp, VendorTokenCommand};

pub async fn run(
    command: VendorTokenCommand,
    db: &Writer,
    audit: &AuditContext,
) -> anyhow::Result<Report> {
    match command {
        VendorTokenCommand::Create {
            name,
            role,
            expires,
        } => {
            let name = TokenName::parse(&name).map_err(|e| anyhow::anyhow!(e))?;
            let role = VendorRole::parse(&role).ok_or_else(|| {
                anyhow::anyhow!("--role must be admin, sales, support, billing or read")
            })?;
            let expires_at = expires.as_deref().map(parse_timestamp).transpose()?;
            let made = vendor::create_token(db, &name, role, expires_at, audit)
                .await
                .map_err(|e| match e {
                    ServiceError::Conflict(text) | ServiceError::Invalid(text) => {
                        anyhow::anyhow!(text)
                    }
                    other => other.into(),
                })?;
            let row = &made.row;
            Report::new(
                &json!({
                    "id": row.id, "name": row.name, "role": row.role.as_str(),
                    "prefix": row.prefix, "token": made.token.expose(),
                    "expires_at": row.expires_at.map(to_rfc3339),
                }),
                format!(
                    "{}\n(the {} token {:?}, {}: shown once; send it as Authorization: Bearer …)\n",
                    made.token.expose(),
                    row.role.as_str(),
                    row.name,
                    row.id
                ),
            )
            .map(|r| {
                r.beside_json(format!(
                    "made the {} token {:?} ({}…)\n",
                    row.role.as_str(),
                    row.name,
                    row.prefix
                ))
            })
        }
        VendorTokenCommand::List => {
            let tokens = vendor::list_tokens(db).await?;
            let rows: Vec<_> = tokens
                .iter()
                .map(|t| {
                    json!({
                        "id": t.id, "name": t.name, "role": t.role.as_str(), "prefix": t.prefix,
                        "created_at": to_rfc3339(t.created_at), "created_by": t.created_by,
                        "expires_at": t.expires_at.map(to_rfc3339),
                        "last_used_at": t.last_used_at.map(to_rfc3339),
                        "revoked_at": t.revoked_at.map(to_rfc3339),
                    })
                })
                .collect();
            let human: String = tokens
                .iter()
                .map(|t| {
                    format!(
                        "{}  {:<24} {:<8} {}…  {}\n",
                        t.id,
                        t.name,
                        t.role.as_str(),
                        t.prefix,
                        match (t.revoked_at, t.last_used_at) {
                            (Some(at), _) => format!("revoked {}", to_rfc3339(at)),
                            (None, Some(at)) => format!("last used {}", to_rfc3339(at)),
                            (None, None) => "never used".to_owned(),
                        }
                    )
                })
                .collect();
            Report::new(&json!({ "tokens": rows }), human)
        }
        VendorTokenCommand::Revoke { id } => {
            vendor::revoke_token(db, &id, audit)
                .await
                .map_err(|e| match e {
                    ServiceError::NotFound => anyhow::anyhow!("no live vendor token {id}"),
                    other => other.into(),
                })?;
            Report::new(
                &json!({ "id": id, "revoked": true }),
                format!("revoked {id}; its next call gets 401\n"),
            )
        }
    }
}
