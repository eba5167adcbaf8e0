//! Licences a page at a time, oldest first, by keyset (created, id): a page reads only its
//! rows whatever page it is, and a licence made meanwhile never shifts one already read.

use tidemark_domain::Millis;
use tidemark_wire::Tier;

use super::{License, LicenseRow, LICENSE_COLUMNS};
use crate::stmt::Stmt;
use crate::tx::read_all;
use crate::{AccountId, Db, StoreError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LicenseStateFilter {
    Active,
    Expired,
    Suspended,
}

/// Which licences a list holds: every filter given must match.
#[derive(Debug, Clone, Default)]
pub struct LicenseFilter {
    pub state: Option<LicenseStateFilter>,
    pub tier: Option<Tier>,
    /// Case-insensitive, exact.
    pub email: Option<String>,
    pub account_id: Option<AccountId>,
    /// Only licences expiring before this moment (and not yet expired, with `state` active).
    pub expires_before: Option<Millis>,
}

/// Up to `limit` licences after `after` (a licence's created time and id), oldest first.
pub async fn page_licenses(
    db: &Db,
    filter: &LicenseFilter,
    after: Option<(Millis, &str)>,
    limit: i64,
    now: Millis,
) -> Result<Vec<License>, StoreError> {
    let mut sql = format!("SELECT {LICENSE_COLUMNS} FROM licenses l WHERE 1 = 1");
    let mut args: Vec<crate::stmt::Arg> = Vec::new();
    let next = |arg: crate::stmt::Arg, args: &mut Vec<crate::stmt::Arg>| {
        args.push(arg);
        args.len()
    };
    // Suspension wins over expiry, as `LicenseState::at` decides.
    match filter.state {
        None => {}
        Some(LicenseStateFilter::Suspended) => sql.push_str(" AND l.suspended_at IS NOT NULL"),
        Some(LicenseStateFilter::Active) => {
            let n = next(now.into(), &mut args);
            sql.push_str(&format!(
                " AND l.suspended_at IS NULL AND l.expires_at > ${n}"
            ));
        }
        Some(LicenseStateFilter::Expired) => {
            let n = next(now.into(), &mut args);
            sql.push_str(&format!(
                " AND l.suspended_at IS NULL AND l.expires_at <= ${n}"
            ));
        }
    }
    if let Some(tier) = filter.tier {
        let n = next(tier.as_str().into(), &mut args);
        sql.push_str(&format!(" AND l.tier = ${n}"));
    }
    if let Some(email) = &filter.email {
        let n = next(email.to_lowercase().into(), &mut args);
        sql.push_str(&format!(" AND LOWER(l.email) = ${n}"));
    }
    if let Some(account) = &filter.account_id {
        let n = next(account.into(), &mut args);
        sql.push_str(&format!(" AND l.account_id = ${n}"));
    }
    if let Some(before) = filter.expires_before {
        let n = next(before.into(), &mut args);
        sql.push_str(&format!(" AND l.expires_at < ${n}"));
    }
    if let Some((created, id)) = after {
        // Each placeholder once, in order (`Stmt`'s rule): the time is bound twice.
        let c = next(created.into(), &mut args);
        let c2 = next(created.into(), &mut args);
        let i = next(id.into(), &mut args);
        sql.push_str(&format!(
            " AND (l.created_at > ${c} OR (l.created_at = ${c2} AND l.id > ${i}))"
        ));
    }
    let n = next(limit.into(), &mut args);
    sql.push_str(&format!(" ORDER BY l.created_at, l.id LIMIT ${n}"));
    let mut stmt = Stmt::new(sql);
    for arg in args {
        stmt = stmt.bind(arg);
    }
    let rows: Vec<LicenseRow> = read_all(db, stmt).await?;
    rows.into_iter().map(License::try_from).collect()
}
