//! SAML single sign-on claims on e-mail domains: Settings → Single sign-on (pending until the
//! domain's DNS record is found), the operator's `sso` commands (vouched for out of band) and
//! the server's rechecks of pending claims.

use tidemark_domain::audit::{Actor, AuditContext};
use tidemark_domain::now_millis;
use tidemark_domain::sso::{
    judge_txt, CheckVerdict, ClaimState, ClaimableDomain, RECHECK_EVERY_MS, RECHECK_FOR_MS,
};
use tidemark_store::sso::{self, ClaimOutcome, NewClaim, VerifyOutcome};
pub use tidemark_store::sso::{SsoConnection, Vouched};
use tidemark_store::{Db, StoreError, Writer};
use tidemark_wire::ids::AccountId;

use crate::ports::{IdpMetadataReader, TxtLookup};
use crate::{ServiceError, Services};

/// What a claim asks for.
pub struct ClaimRequest<'a> {
    pub account_id: &'a AccountId,
    pub domain: &'a str,
    pub metadata_xml: &'a str,
    pub enforce: bool,
}

/// Claims the domain for an enterprise account with the IdP its metadata describes:
/// verified at once when the operator vouches, pending until its DNS record is found when an
/// admin asks. A second claim by the same account replaces its IdP.
pub async fn claim(
    db: &Db,
    metadata: &dyn IdpMetadataReader,
    request: &ClaimRequest<'_>,
    vouched: Vouched,
    audit: &AuditContext,
) -> Result<SsoConnection, ServiceError> {
    let domain = ClaimableDomain::parse(request.domain).map_err(ServiceError::invalid)?;
    let license = tidemark_store::licenses::find_license_for_account(db, request.account_id)
        .await?
        .ok_or_else(|| ServiceError::Invalid(format!("no account {}", request.account_id)))?;
    if !tidemark_domain::tier::allows_sso(license.tier) {
        return Err(ServiceError::Invalid(format!(
            "SAML single sign-on needs an enterprise license (this account is {})",
            license.tier.as_str()
        )));
    }
    let idp = metadata
        .read(request.metadata_xml)
        .map_err(|e| ServiceError::Invalid(format!("IdP metadata refused: {e}")))?;
    let (account_id, metadata_xml) = (request.account_id.clone(), request.metadata_xml.to_owned());
    let (enforce, audit) = (request.enforce, audit.clone());
    let outcome = db
        .detached(|db| async move {
            sso::claim(
                &db,
                &NewClaim {
                    account_id: &account_id,
                    domain: &domain,
                    idp_entity_id: &idp.entity_id,
                    idp_sso_url: &idp.sso_url,
                    signing_certs: &idp.signing_certs,
                    enforce,
                    metadata_xml: &metadata_xml,
                    now: audit.at,
                },
                vouched,
                &audit,
            )
            .await
            .map(|outcome| (outcome, domain))
        })
        .await?;
    match outcome {
        (ClaimOutcome::Stored(connection), _) => Ok(*connection),
        (ClaimOutcome::VerifiedByAnotherAccount, domain) => Err(ServiceError::Invalid(format!(
            "{} is already verified by another account",
            domain.as_str()
        ))),
    }
}

/// The claims of one account, or of every account.
pub async fn list(
    db: &Db,
    account_id: Option<&AccountId>,
) -> Result<Vec<SsoConnection>, ServiceError> {
    Ok(sso::list_connections(db, account_id).await?)
}

/// The operator's `sso remove`: every claim on the domain, whichever account made it;
/// sessions end if one was verified.
pub async fn remove_domain(
    db: &Db,
    domain: &str,
    audit: &AuditContext,
) -> Result<u64, ServiceError> {
    let domain = ClaimableDomain::parse(domain).map_err(ServiceError::invalid)?;
    let audit = audit.clone();
    let removed = db
        .detached(|db| async move { sso::remove(&db, domain.as_str(), None, &audit).await })
        .await?;
    if removed == 0 {
        return Err(ServiceError::NotFound);
    }
    Ok(removed)
}

async fn own_claim(
    db: &Db,
    account_id: &AccountId,
    domain: &str,
) -> Result<SsoConnection, ServiceError> {
    let domain = ClaimableDomain::parse(domain).map_err(ServiceError::invalid)?;
    sso::list_connections(db, Some(account_id))
        .await?
        .into_iter()
        .find(|c| c.domain == domain.as_str())
        .ok_or(ServiceError::NotFound)
}

impl Services {
    /// An admin's claim from Settings: pending until the DNS record is found.
    pub async fn claim_sso(
        &self,
        request: &ClaimRequest<'_>,
        audit: &AuditContext,
    ) -> Result<SsoConnection, ServiceError> {
        claim(
            &self.db,
            self.idp_metadata.as_ref(),
            request,
            Vouched::ByDnsRecord,
            audit,
        )
        .await
    }

    /// "Verify now": looks the claim's DNS record up at once; returns what the check left.
    pub async fn verify_sso(
        &self,
        account_id: &AccountId,
        domain: &str,
        audit: &AuditContext,
    ) -> Result<SsoConnection, ServiceError> {
        let claim = own_claim(&self.db, account_id, domain).await?;
        if claim.state == ClaimState::Pending {
            let (dns, pending, audit) = (self.dns.clone(), claim.clone(), audit.clone());
            self.db
                .detached(
                    |db| async move { check_claim(&db, dns.as_ref(), &pending, &audit).await },
                )
                .await?;
        }
        sso::find_connection(&self.db, &claim.id)
            .await?
            .ok_or(ServiceError::NotFound)
    }

    /// Removes the account's own claim on the domain.
    pub async fn remove_sso(
        &self,
        account_id: &AccountId,
        domain: &str,
        audit: &AuditContext,
    ) -> Result<(), ServiceError> {
        let claim = own_claim(&self.db, account_id, domain).await?;
        let audit = audit.clone();
        let removed = self
            .db
            .detached(|db| async move {
                sso::remove(&db, &claim.domain, Some(&claim.account_id), &audit).await
            })
            .await?;
        if removed == 0 {
            return Err(ServiceError::NotFound);
        }
        Ok(())
    }
}

/// What one check of a claim concluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckOutcome {
    Verified(Box<SsoConnection>),
    /// Still pending; why, in words for the admin.
    NotYet(String),
    LostToAnotherAccount,
    NotPending,
}

/// Looks the claim's record up and records what was found: verified, or why not yet.
pub async fn check_claim(
    db: &Writer,
    dns: &dyn TxtLookup,
    claim: &SsoConnection,
    audit: &AuditContext,
) -> Result<CheckOutcome, StoreError> {
    let answer = dns
        .lookup_txt(&tidemark_domain::sso::challenge_name(&claim.domain))
        .await;
    let now = audit.at;
    match judge_txt(&claim.domain, &claim.challenge_token, &answer) {
        CheckVerdict::Verified => Ok(match sso::verify(db, &claim.id, audit).await? {
            VerifyOutcome::Verified(connection) => {
                tracing::info!(domain = %connection.domain, account_id = %connection.account_id, "SSO domain verified");
                CheckOutcome::Verified(connection)
            }
            VerifyOutcome::LostToAnotherAccount => CheckOutcome::LostToAnotherAccount,
            VerifyOutcome::NotPending => CheckOutcome::NotPending,
        }),
        CheckVerdict::NotYet(message) => {
            let next = (now < claim.created_at + RECHECK_FOR_MS).then_some(now + RECHECK_EVERY_MS);
            sso::record_failed_check(db, &claim.id, now, &message, next).await?;
            Ok(CheckOutcome::NotYet(message))
        }
    }
}

/// A taken check belongs to its replica this long (it may crash mid-look-up).
const CHECK_LEASE_MS: i64 = 5 * 60 * 1000;

/// One pass of the server's rechecks: takes up to `batch` due pending claims (each by one
/// replica, with a conditional update) and checks each. Returns how many were checked.
pub async fn recheck_due(
    db: &Db,
    dns: &std::sync::Arc<dyn TxtLookup>,
    batch: i64,
) -> Result<usize, StoreError> {
    let now = now_millis();
    let due = db
        .detached(move |db| async move {
            sso::take_due_checks(&db, now, now + CHECK_LEASE_MS, now - RECHECK_FOR_MS, batch).await
        })
        .await?;
    let checked = due.len();
    for claim in due {
        let dns = dns.clone();
        // Detached: stopping the worker at shutdown never cuts a write short.
        let outcome = db
            .detached(|db| async move {
                // The server's own re-check: recorded as such.
                let audit = AuditContext {
                    actor: Actor::System {
                        name: "domain-check".to_owned(),
                    },
                    client_ip: None,
                    at: now_millis(),
                };
                check_claim(&db, dns.as_ref(), &claim, &audit).await
            })
            .await;
        if let Err(err) = outcome {
            tracing::warn!(%err, "SSO domain check failed");
        }
    }
    Ok(checked)
}
