//! The console's search: licences found by what a customer tells support (an address, an
//! id, a key's first characters, a machine's fingerprint). Each way of matching is one
//! statement by an index or a small table; the first way that found a licence names it.

use tidemark_domain::console::SearchTerm;

use super::{License, LicenseRow, LICENSE_COLUMNS};
use crate::stmt::Stmt;
use crate::tx::read_all;
use crate::{Db, StoreError};

/// How a licence was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FoundBy {
    LicenseId,
    AccountId,
    /// The licence is mailed to the address.
    LicenseEmail,
    /// The address is a member of the licence's account.
    MemberEmail,
    ApiKey,
    Machine,
}

impl FoundBy {
    pub fn as_words(self) -> &'static str {
        match self {
            FoundBy::LicenseId => "licence id",
            FoundBy::AccountId => "account id",
            FoundBy::LicenseEmail => "licence e-mail",
            FoundBy::MemberEmail => "member e-mail",
            FoundBy::ApiKey => "API key",
            FoundBy::Machine => "machine",
        }
    }
}

/// `LIKE` with `\` escaping the pattern's own wildcards.
fn like_escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '\\' | '%' | '_') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Up to `limit` licences `term` finds, oldest first within each way of matching.
pub async fn search_licenses(
    db: &Db,
    term: &SearchTerm,
    limit: i64,
) -> Result<Vec<(License, FoundBy)>, StoreError> {
    let member_of = |cond: &str| {
        format!(
            "l.account_id IN (SELECT m.account_id FROM members m \
             JOIN users u ON u.id = m.user_id WHERE {cond})"
        )
    };
    let ways: Vec<(FoundBy, String, String)> = match term {
        SearchTerm::LicenseId(id) => vec![(FoundBy::LicenseId, "l.id = $1".into(), id.clone())],
        SearchTerm::AccountId(id) => {
            vec![(FoundBy::AccountId, "l.account_id = $1".into(), id.clone())]
        }
        SearchTerm::Email(email) => vec![
            (
                FoundBy::LicenseEmail,
                "LOWER(l.email) = $1".into(),
                email.clone(),
            ),
            (
                FoundBy::MemberEmail,
                member_of("LOWER(u.email) = $1"),
                email.clone(),
            ),
        ],
        SearchTerm::EmailDomain(domain) => {
            let pattern = format!("%@{}", like_escaped(domain));
            vec![
                (
                    FoundBy::LicenseEmail,
                    "LOWER(l.email) LIKE $1 ESCAPE '\\'".into(),
                    pattern.clone(),
                ),
                (
                    FoundBy::MemberEmail,
                    member_of("LOWER(u.email) LIKE $1 ESCAPE '\\'"),
                    pattern,
                ),
            ]
        }
        SearchTerm::ApiKeyPrefix(prefix) => vec![(
            FoundBy::ApiKey,
            "l.account_id IN (SELECT k.account_id FROM api_keys k \
             WHERE k.prefix LIKE $1 ESCAPE '\\')"
                .into(),
            format!("{}%", like_escaped(prefix)),
        )],
        SearchTerm::Fingerprint(fingerprint) => vec![(
            FoundBy::Machine,
            "l.id IN (SELECT m.license_id FROM machines m WHERE m.machine_key = $1)".into(),
            format!("fp:{fingerprint}"),
        )],
    };
    let mut found: Vec<(License, FoundBy)> = Vec::new();
    for (how, cond, arg) in ways {
        let sql = format!(
            "SELECT {LICENSE_COLUMNS} FROM licenses l WHERE {cond} \
             ORDER BY l.created_at, l.id LIMIT $2"
        );
        let rows: Vec<LicenseRow> = read_all(db, Stmt::new(sql).bind(arg).bind(limit)).await?;
        for row in rows {
            let license = License::try_from(row)?;
            let known = found.iter().any(|(l, _)| l.id == license.id);
            if !known && (found.len() as i64) < limit {
                found.push((license, how));
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_patterns_wildcards_are_its_own_characters() {
        assert_eq!(super::like_escaped("svc_api_a%\\"), "svc\\_api\\_a\\%\\\\");
    }
}
