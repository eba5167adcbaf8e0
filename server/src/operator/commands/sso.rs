//! `sso set|list|remove`: the operator checked ownership out of band, so a claim is verified
//! at once (an admin's claim from Settings waits for its DNS record).

use anyhow::Context as _;
use serde_json::json;
use tidemark_domain::audit::AuditContext;
use tidemark_domain::to_rfc3339;
use tidemark_services::sso::{self, ClaimRequest};
use tidemark_services::ServiceError;
use tidemark_store::sso::{SsoConnection, Vouched};
use tidemark_store::Writer;
use tidemark_wire::ids::AccountId;

use super::{account_arg, lines, Report};
use crate::auth::saml::SamlMetadata;
use crate::operator::cli::SsoCommand;

/// An SSO claim as operator commands print it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SsoView {
    pub domain: String,
    pub account_id: AccountId,
    /// `pending` (routes nobody), `verified` (routes and enforces) or `ended`.
    pub state: &'static str,
    pub idp_entity_id: String,
    pub idp_sso_url: String,
    pub signing_certificates: usize,
    pub enforce: bool,
    /// The TXT record a pending claim waits for.
    pub dns_record_name: String,
    pub dns_record_value: String,
    pub verified_at: Option<String>,
    pub last_check: Option<String>,
    pub ended_reason: Option<String>,
    pub updated_at: String,
}

impl From<SsoConnection> for SsoView {
    fn from(s: SsoConnection) -> Self {
        SsoView {
            state: s.state.as_str(),
            signing_certificates: s.signing_certs.len(),
            dns_record_name: tidemark_domain::sso::challenge_name(&s.domain),
            dns_record_value: tidemark_domain::sso::challenge_value(&s.challenge_token),
            domain: s.domain,
            account_id: s.account_id,
            idp_entity_id: s.idp_entity_id,
            idp_sso_url: s.idp_sso_url,
            enforce: s.enforce,
            verified_at: s.verified_at.map(to_rfc3339),
            last_check: s.check_message,
            ended_reason: s.ended_reason,
            updated_at: to_rfc3339(s.updated_at),
        }
    }
}

/// `sso set` without reading the metadata file: the domain is verified at once and its
/// users' sessions end.
pub async fn set_sso(
    db: &Writer,
    account_id: &AccountId,
    domain: &str,
    metadata_xml: &str,
    enforce: bool,
    audit: &AuditContext,
) -> anyhow::Result<SsoView> {
    let request = ClaimRequest {
        account_id,
        domain,
        metadata_xml,
        enforce,
    };
    let claimed = sso::claim(db, &SamlMetadata, &request, Vouched::ByOperator, audit).await?;
    Ok(claimed.into())
}

pub async fn run(command: SsoCommand, db: &Writer, audit: &AuditContext) -> anyhow::Result<Report> {
    match command {
        SsoCommand::Set {
            account,
            domain,
            idp_metadata,
            enforce,
        } => {
            let xml = std::fs::read_to_string(&idp_metadata)
                .with_context(|| format!("could not read {}", idp_metadata.display()))?;
            let sso = set_sso(db, &account_arg(&account)?, &domain, &xml, enforce, audit).await?;
            let human = format!(
                "{} is verified for {account} (the operator vouches for it) and now signs in \
                 with SAML at {} ({} signing certificate(s)){}\n",
                sso.domain,
                sso.idp_sso_url,
                sso.signing_certificates,
                if sso.enforce {
                    "; OpenID Connect refused"
                } else {
                    ""
                }
            );
            Report::new(&sso, human)
        }
        SsoCommand::List { account } => {
            let account = account.as_deref().map(account_arg).transpose()?;
            let list: Vec<SsoView> = sso::list(db, account.as_ref())
                .await?
                .into_iter()
                .map(SsoView::from)
                .collect();
            let human = lines(&list, |s| {
                let mut line = format!(
                    "{:<30}  {}  {:<8}  {}  enforce={}",
                    s.domain, s.account_id, s.state, s.idp_entity_id, s.enforce
                );
                match s.state {
                    "pending" => line.push_str(&format!(
                        "\n    waiting for TXT {} = {}{}",
                        s.dns_record_name,
                        s.dns_record_value,
                        s.last_check
                            .as_deref()
                            .map(|m| format!(" (last check: {m})"))
                            .unwrap_or_default()
                    )),
                    "ended" => line.push_str(&format!(
                        "\n    ended: {}",
                        s.ended_reason.as_deref().unwrap_or("no reason recorded")
                    )),
                    _ => {}
                }
                line
            });
            Report::new(&json!({ "claims": list }), human)
        }
        SsoCommand::Remove { domain } => {
            let removed =
                sso::remove_domain(db, &domain, audit)
                    .await
                    .map_err(|err| match err {
                        ServiceError::NotFound => {
                            anyhow::anyhow!(
                                "{} has no SAML configuration",
                                domain.trim().to_ascii_lowercase()
                            )
                        }
                        other => other.into(),
                    })?;
            Report::new(
                &json!({ "domain": domain, "removed": removed }),
                format!(
                    "{removed} SAML claim(s) removed for {domain}; its users sign in with \
                     OpenID Connect again\n"
                ),
            )
        }
    }
}
