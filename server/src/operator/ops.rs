//! Operator actions behind the `tidemark-server` subcommands. Plain functions over the store,
//! so tests create fixtures exactly the way operators do.

use anyhow::{bail, Context as _};
use serde::Serialize;
use tidemark_domain::audit::AuditContext;
use tidemark_domain::secrets::{sha256_hex, ApiKey, LicenseKey};
use tidemark_domain::sso::ClaimableDomain;
use tidemark_domain::text::Email;
use tidemark_domain::{ids, now_millis, to_rfc3339, Millis};
use tidemark_store::bundles::{self, Bundle};
use tidemark_store::licenses::{self, License, NewLicense};
use tidemark_store::sso::{ClaimOutcome, NewClaim, SsoConnection, Vouched};
use tidemark_store::{Db, Writer};
use tidemark_wire::ids::AccountId;
use tidemark_wire::Tier;

use crate::crypto::SecretBox;

/// What `license create` prints: the only place, besides the resend mail, where the raw
/// license key ever appears.
#[derive(Debug, Serialize)]
pub struct CreatedLicense {
    pub license_key: String,
    pub license_id: String,
    pub account_id: AccountId,
}

pub async fn create_license(
    db: &Writer,
    keys: &SecretBox,
    email: &str,
    tier: Tier,
    expires_at: Option<Millis>,
    max_projects: Option<u64>,
    audit: &AuditContext,
) -> anyhow::Result<CreatedLicense> {
    let email = Email::parse(email).map_err(|e| anyhow::anyhow!(e.message))?;
    let now = now_millis();
    let expires_at = expires_at.unwrap_or(now + 365 * 24 * 60 * 60 * 1000);
    let key = LicenseKey::generate();
    let new = NewLicense {
        account_id: ids::new_account_id(),
        license_id: ids::new_license_id(),
        email: email.as_str().to_owned(),
        tier,
        lookup: key.client_hash().lookup(),
        key_ciphertext: keys.seal(key.expose().as_bytes()),
        expires_at,
        max_projects,
        now,
    };
    licenses::create_license(db, &new, audit).await?;
    Ok(CreatedLicense {
        license_key: key.expose().to_owned(),
        license_id: new.license_id,
        account_id: new.account_id,
    })
}

/// Settings → API Keys → Rotate Key: revokes every active key of the account and issues one
/// new key, in one transaction. Returns the new key (shown once) and how many were revoked.
pub async fn rotate_api_keys(
    db: &Writer,
    account_id: &AccountId,
    machine: &str,
    audit: &AuditContext,
) -> anyhow::Result<(ApiKey, u64)> {
    let key = ApiKey::generate();
    let revoked = licenses::rotate_api_keys(
        db,
        &licenses::NewApiKey {
            id: ids::new_key_id(),
            account_id: account_id.to_owned(),
            hash: key.hash(),
            prefix: key.display_prefix(),
            machine: machine.to_owned(),
            now: audit.at,
        },
        audit,
    )
    .await?;
    Ok((key, revoked))
}

/// A license as operators see it (no key material).
#[derive(Debug, Serialize)]
pub struct LicenseSummary {
    pub license_id: String,
    pub account_id: AccountId,
    pub email: String,
    pub tier: Tier,
    pub state: &'static str,
    pub expires: String,
    pub max_projects: Option<u64>,
    pub features: Vec<tidemark_wire::Feature>,
}

impl From<&License> for LicenseSummary {
    fn from(l: &License) -> Self {
        use tidemark_domain::license::LicenseState::*;
        LicenseSummary {
            license_id: l.id.clone(),
            account_id: l.account_id.clone(),
            email: l.email.clone(),
            tier: l.tier,
            state: match l.state(now_millis()) {
                Active => "active",
                Expired { .. } => "expired",
                Suspended { .. } => "suspended",
            },
            expires: to_rfc3339(l.expires_at),
            max_projects: l.max_projects,
            features: l.features(),
        }
    }
}

pub async fn list_licenses(db: &Db) -> anyhow::Result<Vec<LicenseSummary>> {
    Ok(licenses::list_licenses(db)
        .await?
        .iter()
        .map(LicenseSummary::from)
        .collect())
}

/// Suspends or resumes a license; returns its new summary.
pub async fn set_suspended(
    db: &Writer,
    id: &str,
    suspended: bool,
    audit: &AuditContext,
) -> anyhow::Result<LicenseSummary> {
    if !licenses::set_suspended(db, id, suspended, audit).await? {
        bail!("no license with id {id}");
    }
    show_license(db, id).await
}

pub async fn extend(
    db: &Writer,
    id: &str,
    expires_at: Millis,
    audit: &AuditContext,
) -> anyhow::Result<LicenseSummary> {
    if !licenses::set_expiry(db, id, expires_at, audit).await? {
        bail!("no license with id {id}");
    }
    show_license(db, id).await
}

/// One license by id, or an error naming the id.
pub async fn show_license(db: &Db, id: &str) -> anyhow::Result<LicenseSummary> {
    let license = licenses::find_license(db, id)
        .await?
        .with_context(|| format!("no license with id {id}"))?;
    Ok(LicenseSummary::from(&license))
}

#[derive(Debug, Serialize)]
pub struct PublishedBundle {
    pub bundle_id: String,
    pub bundle_url: String,
    pub bundle_checksum: String,
    pub size_bytes: i64,
}

/// Publishes `bytes` as the latest bundle.
pub async fn publish_bundle(
    db: &Writer,
    base_url: &str,
    file_name: &str,
    bytes: &[u8],
    audit: &AuditContext,
) -> anyhow::Result<PublishedBundle> {
    if bytes.is_empty() {
        bail!("the bundle file is empty");
    }
    let bundle = Bundle {
        id: ids::new_bundle_id(),
        file_name: file_name.to_owned(),
        sha256: sha256_hex(bytes),
        size_bytes: i64::try_from(bytes.len()).context("bundle too large")?,
        published_at: audit.at,
    };
    bundles::publish_bundle(db, &bundle, bytes, audit).await?;
    Ok(PublishedBundle {
        bundle_url: format!("{base_url}/v1/bundles/{}", bundle.id),
        bundle_checksum: format!("sha256:{}", bundle.sha256),
        bundle_id: bundle.id,
        size_bytes: bundle.size_bytes,
    })
}

/// An audit event as `audit list` prints it.
#[derive(Debug, Serialize)]
pub struct AuditView {
    pub id: String,
    pub at: String,
    pub account_id: Option<AccountId>,
    pub actor_kind: String,
    pub actor: String,
    pub client_ip: Option<String>,
    pub action: String,
    pub target: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// `audit list`: the events that match, newest first.
pub async fn list_audit(
    db: &Db,
    account_id: Option<&AccountId>,
    since: Option<&str>,
    actor: Option<&str>,
    action: Option<&str>,
    limit: i64,
) -> anyhow::Result<Vec<AuditView>> {
    let action = action
        .map(|a| {
            tidemark_domain::audit::Action::parse(a).with_context(|| {
                let known: Vec<&str> = tidemark_domain::audit::Action::ALL
                    .iter()
                    .map(|a| a.as_str())
                    .collect();
                format!("unknown action {a:?}; one of: {}", known.join(", "))
            })
        })
        .transpose()?;
    anyhow::ensure!((1..=10_000).contains(&limit), "--limit must be 1 to 10000");
    let query = tidemark_store::audit::AuditQuery {
        account_id: account_id.cloned(),
        actor: actor.map(str::to_owned),
        action,
        since: since.map(parse_timestamp).transpose()?,
        offset: 0,
        limit,
    };
    Ok(tidemark_store::audit::list_audit(db, &query)
        .await?
        .into_iter()
        .map(|e| AuditView {
            id: e.id,
            at: to_rfc3339(e.at),
            account_id: e.account_id,
            actor_kind: e.actor_kind,
            actor: e.actor,
            client_ip: e.client_ip,
            action: e.action,
            target: e.target,
            before: e.before_summary,
            after: e.after_summary,
        })
        .collect())
}

/// Parses an RFC 3339 timestamp given on the command line.
pub fn parse_timestamp(text: &str) -> anyhow::Result<Millis> {
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.timestamp_millis())
        .with_context(|| {
            format!("{text:?} is not an RFC 3339 timestamp such as 2027-01-31T00:00:00Z")
        })
}

/// A member as operator commands print it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct MemberView {
    pub email: String,
    pub role: &'static str,
    pub added_at: String,
    pub last_login_at: Option<String>,
}

impl From<tidemark_store::access::Member> for MemberView {
    fn from(m: tidemark_store::access::Member) -> Self {
        MemberView {
            email: m.email,
            role: m.role.as_str(),
            added_at: tidemark_domain::to_rfc3339(m.added_at),
            last_login_at: m.last_login_at.map(tidemark_domain::to_rfc3339),
        }
    }
}

async fn require_account(db: &Db, account_id: &AccountId) -> anyhow::Result<()> {
    let known = tidemark_store::licenses::list_licenses(db)
        .await?
        .iter()
        .any(|l| l.account_id == *account_id);
    anyhow::ensure!(known, "no account {account_id}");
    Ok(())
}

pub async fn add_member(
    db: &Writer,
    account_id: &AccountId,
    email: &str,
    role: tidemark_domain::access::Role,
    audit: &AuditContext,
) -> anyhow::Result<MemberView> {
    let email = Email::parse(email).map_err(|e| anyhow::anyhow!(e.message))?;
    require_account(db, account_id).await?;
    let member = tidemark_store::access::add_member(db, account_id, &email, role, audit)
        .await?
        .map_err(|e| anyhow::anyhow!(e))?;
    Ok(member.into())
}

pub async fn list_members(db: &Db, account_id: &AccountId) -> anyhow::Result<Vec<MemberView>> {
    require_account(db, account_id).await?;
    Ok(tidemark_store::access::list_members(db, account_id)
        .await?
        .into_iter()
        .map(MemberView::from)
        .collect())
}

pub async fn remove_member(
    db: &Writer,
    account_id: &AccountId,
    email: &str,
    audit: &AuditContext,
) -> anyhow::Result<()> {
    let email = Email::parse(email).map_err(|e| anyhow::anyhow!(e.message))?;
    let member = tidemark_store::access::find_member_by_email(db, account_id, &email)
        .await?
        .ok_or_else(|| anyhow::anyhow!("{} is not a member of {account_id}", email.as_str()))?;
    tidemark_store::access::change_member(db, account_id, &member.user_id, None, audit)
        .await?
        .map_err(|e| anyhow::anyhow!(e))?;
    Ok(())
}

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

/// Why a claim was not stored, in words for whoever asked.
#[derive(Debug, thiserror::Error)]
pub enum SsoRefusal {
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Store(#[from] tidemark_store::StoreError),
}

/// Claims `domain` for an enterprise account with the IdP in `metadata_xml`: verified at once
/// when the operator vouches, pending until its DNS record is found when an admin does.
pub async fn claim_sso(
    db: &Writer,
    account_id: &AccountId,
    domain: &str,
    metadata_xml: &str,
    enforce: bool,
    vouched: Vouched,
    audit: &AuditContext,
) -> Result<SsoConnection, SsoRefusal> {
    let refused = |text: String| SsoRefusal::Refused(text);
    let domain = ClaimableDomain::parse(domain).map_err(|e| refused(e.to_string()))?;
    let license = licenses::find_license_for_account(db, account_id)
        .await?
        .ok_or_else(|| refused(format!("no account {account_id}")))?;
    if !tidemark_domain::tier::allows_sso(license.tier) {
        return Err(refused(format!(
            "SAML single sign-on needs an enterprise license (this account is {})",
            license.tier.as_str()
        )));
    }
    let idp = crate::auth::saml::parse_idp_metadata(metadata_xml)
        .map_err(|e| refused(format!("IdP metadata refused: {e}")))?;
    let outcome = tidemark_store::sso::claim(
        db,
        &NewClaim {
            account_id,
            domain: &domain,
            idp_entity_id: &idp.entity_id,
            idp_sso_url: &idp.sso_url,
            signing_certs: &idp.signing_certs,
            enforce,
            metadata_xml,
            now: audit.at,
        },
        vouched,
        audit,
    )
    .await?;
    match outcome {
        ClaimOutcome::Stored(connection) => Ok(*connection),
        ClaimOutcome::VerifiedByAnotherAccount => Err(refused(format!(
            "{} is already verified by another account",
            domain.as_str()
        ))),
    }
}

/// `sso set`: the operator checked ownership out of band, so the domain is verified at once;
/// its users' sessions end.
pub async fn set_sso(
    db: &Writer,
    account_id: &AccountId,
    domain: &str,
    metadata_xml: &str,
    enforce: bool,
    audit: &AuditContext,
) -> anyhow::Result<SsoView> {
    let connection = claim_sso(
        db,
        account_id,
        domain,
        metadata_xml,
        enforce,
        Vouched::ByOperator,
        audit,
    )
    .await?;
    Ok(connection.into())
}

pub async fn list_sso(db: &Db, account_id: Option<&AccountId>) -> anyhow::Result<Vec<SsoView>> {
    Ok(tidemark_store::sso::list_connections(db, account_id)
        .await?
        .into_iter()
        .map(SsoView::from)
        .collect())
}

/// Removes every claim on the domain (verified or not); sessions end if one was verified.
pub async fn remove_sso(db: &Writer, domain: &str, audit: &AuditContext) -> anyhow::Result<u64> {
    let domain = ClaimableDomain::parse(domain).map_err(|e| anyhow::anyhow!(e))?;
    let removed = tidemark_store::sso::remove(db, domain.as_str(), None, audit).await?;
    anyhow::ensure!(removed > 0, "{} has no SAML configuration", domain.as_str());
    Ok(removed)
}

/// Settings' SSO controls, for the dashboard's server functions.
pub struct DashboardSso {
    pub db: Db,
    pub dns: crate::auth::domain_verification::DnsVerifier,
}

type SsoFuture<T> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<T, app::api::settings::SsoAdminError>> + Send>,
>;

/// Store failures are logged here and reach the browser only as "unavailable".
fn unavailable(err: impl std::fmt::Display) -> app::api::settings::SsoAdminError {
    tracing::error!(error = %err, "SSO administration failed");
    app::api::settings::SsoAdminError::Unavailable
}

impl DashboardSso {
    async fn own_claim(
        db: &Db,
        account_id: &AccountId,
        domain: &str,
    ) -> Result<SsoConnection, app::api::settings::SsoAdminError> {
        let domain = ClaimableDomain::parse(domain)
            .map_err(|e| app::api::settings::SsoAdminError::Refused(e.to_string()))?;
        tidemark_store::sso::list_connections(db, Some(account_id))
            .await
            .map_err(unavailable)?
            .into_iter()
            .find(|c| c.domain == domain.as_str())
            .ok_or(app::api::settings::SsoAdminError::NotFound)
    }
}

impl app::api::settings::SsoAdmin for DashboardSso {
    fn configure(
        &self,
        account_id: AccountId,
        domain: String,
        metadata_xml: String,
        enforce: bool,
        audit: AuditContext,
    ) -> SsoFuture<app::model::SsoSummary> {
        let db = self.db.clone();
        Box::pin(async move {
            // A refusal is an answer, not a failure: it travels inside the detached write.
            let claimed = db
                .detached(|db| async move {
                    Ok(claim_sso(
                        &db,
                        &account_id,
                        &domain,
                        &metadata_xml,
                        enforce,
                        Vouched::ByDnsRecord,
                        &audit,
                    )
                    .await)
                })
                .await
                .map_err(unavailable)?;
            match claimed {
                Ok(connection) => Ok(connection.into()),
                Err(SsoRefusal::Refused(text)) => {
                    Err(app::api::settings::SsoAdminError::Refused(text))
                }
                Err(SsoRefusal::Store(err)) => Err(unavailable(err)),
            }
        })
    }

    fn verify(
        &self,
        account_id: AccountId,
        domain: String,
        audit: AuditContext,
    ) -> SsoFuture<app::model::SsoSummary> {
        let (db, dns) = (self.db.clone(), self.dns.clone());
        Box::pin(async move {
            let claim = Self::own_claim(&db, &account_id, &domain).await?;
            if claim.state == tidemark_domain::sso::ClaimState::Pending {
                let claim = claim.clone();
                db.detached(|db| async move {
                    crate::auth::domain_verification::check_claim(&db, &dns, &claim, &audit).await
                })
                .await
                .map_err(unavailable)?;
            }
            // What the check left behind, as Settings shows it.
            let after = tidemark_store::sso::find_connection(&db, &claim.id)
                .await
                .map_err(unavailable)?
                .ok_or(app::api::settings::SsoAdminError::NotFound)?;
            Ok(after.into())
        })
    }

    fn remove(&self, account_id: AccountId, domain: String, audit: AuditContext) -> SsoFuture<()> {
        let db = self.db.clone();
        Box::pin(async move {
            let claim = Self::own_claim(&db, &account_id, &domain).await?;
            let removed = db
                .detached(|db| async move {
                    tidemark_store::sso::remove(&db, &claim.domain, Some(&claim.account_id), &audit)
                        .await
                })
                .await
                .map_err(unavailable)?;
            if removed == 0 {
                return Err(app::api::settings::SsoAdminError::NotFound);
            }
            Ok(())
        })
    }
}

/// What the dashboard's webhook functions need from the server: its master-key encryption
/// and its sender's wake-up.
pub struct DashboardWebhooks {
    pub secrets: crate::crypto::SecretBox,
    pub wakeup: std::sync::Arc<tokio::sync::Notify>,
}

impl app::api::webhooks::WebhookOutbox for DashboardWebhooks {
    fn seal(&self, plaintext: &[u8]) -> String {
        self.secrets.seal(plaintext)
    }

    fn wake(&self) {
        self.wakeup.notify_one();
    }
}
