//! What an account holds, as its Settings pages read it: its license, keys, members and their
//! provisioning, single sign-on, storage and SCIM; and the accounts a person belongs to.

use std::collections::BTreeSet;
use std::time::Duration;

use tidemark_domain::housekeeping::Policy;
use tidemark_domain::now_millis;
pub use tidemark_store::access::AccountOfUser;
use tidemark_store::access::Member;
use tidemark_store::licenses::{KeyRow, License};
use tidemark_store::scim::{ScimGroup, ScimUser, TokenInfo};
use tidemark_store::sso::SsoConnection;
pub use tidemark_store::usage::ProjectBytes;
use tidemark_store::usage::{refresh_stale, Allowance};
use tidemark_store::Db;
use tidemark_wire::ids::AccountId;

use crate::ServiceError;

/// Settings' main page.
pub struct SettingsOverview {
    pub license: Option<License>,
    pub active_projects: u64,
    pub keys: Vec<KeyRow>,
    pub members: Vec<Member>,
    /// The members the account's identity provider provisions (SCIM), by user id.
    pub managed: BTreeSet<String>,
    pub sso: Vec<SsoConnection>,
}

pub async fn settings(db: &Db, account_id: &AccountId) -> Result<SettingsOverview, ServiceError> {
    let projects = tidemark_store::dashboard::list_projects(db, account_id).await?;
    Ok(SettingsOverview {
        license: tidemark_store::licenses::find_license_for_account(db, account_id).await?,
        active_projects: projects.iter().filter(|p| p.archived_at.is_none()).count() as u64,
        keys: tidemark_store::licenses::list_api_keys(db, account_id).await?,
        members: tidemark_store::access::list_members(db, account_id).await?,
        managed: tidemark_store::scim::managed_user_ids(db, account_id).await?,
        sso: tidemark_store::sso::list_connections(db, Some(account_id)).await?,
    })
}

/// The account's license, if it has one.
pub async fn license(db: &Db, account_id: &AccountId) -> Result<Option<License>, ServiceError> {
    Ok(tidemark_store::licenses::find_license_for_account(db, account_id).await?)
}

/// The accounts `user_id` belongs to, named the way people know them.
pub async fn accounts_of(db: &Db, user_id: &str) -> Result<Vec<AccountOfUser>, ServiceError> {
    Ok(tidemark_store::access::accounts_of(db, user_id).await?)
}

/// Settings → Storage: each project's bytes, and the account's own housekeeping policy.
pub struct StorageOverview {
    pub projects: Vec<ProjectBytes>,
    pub own_policy: Option<Policy>,
}

/// What one read of Settings → Storage may measure first: enough for a small account to see
/// its last push; a large one reads what the `project_usage` worker measured.
const MEASURE_ON_READ: Allowance = Allowance {
    projects: 5,
    time: Duration::from_millis(40),
    settle: Duration::ZERO,
};

pub async fn storage(db: &Db, account_id: &AccountId) -> Result<StorageOverview, ServiceError> {
    let account = account_id.clone();
    // Best effort: with the disk full or the writer busy past the deadline, the page still
    // shows the figures measured before.
    let measured = db
        .detached(move |w| async move {
            refresh_stale(&w, Some(&account), now_millis(), MEASURE_ON_READ).await
        })
        .await;
    if let Err(error) = measured {
        tracing::warn!(%error, "Settings → Storage read the sizes measured before");
    }
    Ok(StorageOverview {
        projects: tidemark_store::usage::project_bytes(db, account_id).await?,
        own_policy: tidemark_store::housekeeping::account_policy(db, account_id)
            .await?
            .flatten(),
    })
}

/// Settings → Provisioning: whether SCIM is open to the account, and what it has provisioned.
pub struct ProvisioningOverview {
    pub enterprise: bool,
    pub verified_domain: bool,
    pub token: Option<TokenInfo>,
    pub users: Vec<ScimUser>,
    pub groups: Vec<ScimGroup>,
}

pub async fn provisioning(
    db: &Db,
    account_id: &AccountId,
) -> Result<ProvisioningOverview, ServiceError> {
    let license = tidemark_store::licenses::find_license_for_account(db, account_id).await?;
    Ok(ProvisioningOverview {
        enterprise: license.is_some_and(|l| tidemark_domain::tier::allows_sso(l.tier)),
        verified_domain: tidemark_store::sso::has_verified_domain(db, account_id).await?,
        token: tidemark_store::scim::token_info(db, account_id).await?,
        users: tidemark_store::scim::list_users(db, account_id).await?,
        groups: tidemark_store::scim::list_groups(db, account_id, true).await?,
    })
}

pub use tidemark_store::inventory::AccountRow;

/// A page of every account (its licence and counts, never its data) after `after` (an
/// account's creation time and id), oldest first, and whether more follow.
pub async fn page(
    db: &Db,
    after: Option<(tidemark_domain::Millis, &AccountId)>,
    limit: i64,
) -> Result<(Vec<AccountRow>, bool), ServiceError> {
    let mut rows = tidemark_store::inventory::page_accounts(db, after, limit + 1).await?;
    let more = rows.len() as i64 > limit;
    rows.truncate(usize::try_from(limit).unwrap_or(0));
    Ok((rows, more))
}

/// One account with its licence and counts, or "not found".
pub async fn summary(db: &Db, account_id: &AccountId) -> Result<AccountRow, ServiceError> {
    tidemark_store::inventory::find_account(db, account_id)
        .await?
        .ok_or(ServiceError::NotFound)
}
