//! The vendor's console: who on the vendor's staff may open it, and with what roles.
//!
//! Staff sign in through the vendor's own identity provider; their roles come from its group
//! claim, mapped in configuration (`TIDEMARK_CONSOLE_ROLES=vendor-admins=admin,…`). The roles
//! are the admin API's ([`VendorRole`]), so one role table decides both; `billing` is a
//! checkout's role, never a person's. Someone in several mapped groups holds each role they
//! map to (a person in sales and support may both change a tier and resend); someone in none
//! has no console.

use crate::access::SessionPolicy;
use crate::time::{HOUR_MS, MINUTE_MS};
use crate::vendor::{Permission, VendorRole};

/// A staff session's lifetimes: shorter than a customer's (24 h idle, 7 days at most), as
/// a session that can change any customer's licence should be.
pub const STAFF_SESSION: SessionPolicy = SessionPolicy {
    idle_ms: 30 * MINUTE_MS,
    absolute_ms: 8 * HOUR_MS,
};

/// The configured map from the provider's group names to console roles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupRoles(Vec<(String, VendorRole)>);

impl GroupRoles {
    /// `group=role` pairs separated by commas; a group may appear once, a role may be named
    /// by several groups. `billing` is refused: no person acts as the checkout.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut pairs: Vec<(String, VendorRole)> = Vec::new();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let Some((group, role)) = item.split_once('=') else {
                return Err(format!("{item:?} is not group=role"));
            };
            let (group, role) = (group.trim(), role.trim());
            if group.is_empty() || group.len() > 256 || group.chars().any(char::is_control) {
                return Err(format!("{group:?} is not a group name"));
            }
            let role = match VendorRole::parse(role) {
                Some(VendorRole::Billing) | None => {
                    return Err(format!(
                        "{role:?} is not a staff role (admin, sales, support or read)"
                    ))
                }
                Some(role) => role,
            };
            if pairs.iter().any(|(g, _)| g == group) {
                return Err(format!("the group {group:?} is mapped twice"));
            }
            pairs.push((group.to_owned(), role));
        }
        if pairs.is_empty() {
            return Err("map at least one group to a role".into());
        }
        Ok(GroupRoles(pairs))
    }

    /// The roles `groups` hold, most powerful first; empty when no group is mapped.
    pub fn roles_of<'a>(&self, groups: impl IntoIterator<Item = &'a str>) -> StaffRoles {
        let groups: Vec<&str> = groups.into_iter().collect();
        let roles = VendorRole::ALL
            .into_iter()
            .filter(|role| {
                self.0
                    .iter()
                    .any(|(group, r)| r == role && groups.contains(&group.as_str()))
            })
            .collect();
        StaffRoles(roles)
    }
}

/// The roles one staff member holds now (most powerful first, each once).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StaffRoles(Vec<VendorRole>);

impl StaffRoles {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn may(&self, permission: Permission) -> bool {
        self.0.iter().any(|role| role.may(permission))
    }

    /// The first of `needed` that none of the roles has.
    pub fn missing(&self, needed: &[Permission]) -> Option<Permission> {
        needed.iter().copied().find(|p| !self.may(*p))
    }

    pub fn roles(&self) -> &[VendorRole] {
        &self.0
    }

    /// The console roles that have `permission`, as a refusal names them ("admin or
    /// sales"): `billing` is the checkout's, never a person's, so it is not offered.
    pub fn who_may(permission: Permission) -> String {
        let names: Vec<&str> = permission
            .roles()
            .iter()
            .filter(|r| **r != VendorRole::Billing)
            .map(|r| r.as_str())
            .collect();
        match names.split_last() {
            Some((last, [])) => (*last).to_owned(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    }

    /// "sales, support": as the console's header names them.
    pub fn in_words(&self) -> String {
        let names: Vec<&str> = self.0.iter().map(|r| r.as_str()).collect();
        names.join(", ")
    }
}

/// What the console's one search box was given, recognised by its shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchTerm {
    /// `lcn_…`
    LicenseId(String),
    /// `acct_…`
    AccountId(String),
    /// `svc_api_` and up to four more characters: what Settings and the CLI show of a key. A
    /// whole key pasted by mistake is cut to this, so nothing past it is ever looked at.
    ApiKeyPrefix(String),
    /// An address, lower-cased: licences mailed to it and accounts it is a member of.
    Email(String),
    /// `@example.com`: every address at that domain.
    EmailDomain(String),
    /// Anything else: a machine's `X-Machine-Fingerprint`.
    Fingerprint(String),
}

/// The longest search accepted (an e-mail address's limit).
pub const SEARCH_MAX_CHARS: usize = 320;

impl SearchTerm {
    pub fn parse(text: &str) -> Result<SearchTerm, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err(
                "Type an e-mail address or @domain, a licence or account id, an API \
                        key's first characters or a machine fingerprint."
                    .into(),
            );
        }
        if text.chars().count() > SEARCH_MAX_CHARS || text.chars().any(char::is_control) {
            return Err(format!(
                "A search is one line of at most {SEARCH_MAX_CHARS} characters."
            ));
        }
        let id_like = |t: &str| t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        Ok(if text.starts_with("lcn_") && id_like(text) {
            SearchTerm::LicenseId(text.to_owned())
        } else if text.starts_with("acct_") && id_like(text) {
            SearchTerm::AccountId(text.to_owned())
        } else if let Some(rest) = text.strip_prefix(crate::secrets::API_KEY_PREFIX) {
            if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_alphanumeric()) {
                return Err("An API key's prefix is svc_api_ and the characters after it.".into());
            }
            let shown: String = text
                .chars()
                .take(crate::secrets::API_KEY_DISPLAY_LEN)
                .collect();
            SearchTerm::ApiKeyPrefix(shown)
        } else if let Some(domain) = text.strip_prefix('@') {
            if domain.is_empty() || domain.contains('@') || domain.contains(char::is_whitespace) {
                return Err(format!("{text:?} is not @ and a domain."));
            }
            SearchTerm::EmailDomain(domain.to_lowercase())
        } else if text.contains('@') {
            if text.contains(char::is_whitespace) {
                return Err(format!("{text:?} is not an e-mail address."));
            }
            SearchTerm::Email(text.to_lowercase())
        } else {
            SearchTerm::Fingerprint(text.to_owned())
        })
    }

    /// What the results page says was searched.
    pub fn describe(&self) -> String {
        match self {
            SearchTerm::LicenseId(id) => format!("licence {id}"),
            SearchTerm::AccountId(id) => format!("account {id}"),
            SearchTerm::ApiKeyPrefix(p) => format!("API keys starting {p}"),
            SearchTerm::Email(e) => format!("the address {e}"),
            SearchTerm::EmailDomain(d) => format!("addresses at {d}"),
            SearchTerm::Fingerprint(f) => format!("the machine fingerprint {f}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_console_roles_that_may_never_billing() {
        assert_eq!(StaffRoles::who_may(Permission::SetExpiry), "admin or sales");
        assert_eq!(StaffRoles::who_may(Permission::Suspend), "admin or support");
        assert_eq!(StaffRoles::who_may(Permission::Administer), "admin");
    }

    #[test]
    fn a_search_is_recognised_by_its_shape() {
        use SearchTerm::*;
        let parse = |t: &str| SearchTerm::parse(t).unwrap();
        assert_eq!(parse(" lcn_ABC234 "), LicenseId("lcn_ABC234".into()));
        assert_eq!(parse("acct_XYZ"), AccountId("acct_XYZ".into()));
        assert_eq!(parse("svc_api_Ab"), ApiKeyPrefix("svc_api_Ab".into()));
        // A whole key is cut to what Settings shows: the rest is never looked at.
        assert_eq!(
            parse("svc_api_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
            ApiKeyPrefix("svc_api_AbCd".into())
        );
        assert_eq!(parse("Ops@Acme.EXAMPLE"), Email("ops@acme.example".into()));
        assert_eq!(parse("@Acme.example"), EmailDomain("acme.example".into()));
        assert_eq!(
            parse("fp-9f86d081884c7d65"),
            Fingerprint("fp-9f86d081884c7d65".into())
        );
        // An id with other characters is a fingerprint, not an id (machines name themselves).
        assert_eq!(parse("lcn_a b"), Fingerprint("lcn_a b".into()));
        for bad in [
            "",
            "   ",
            "svc_api_",
            "svc_api_a-b",
            "@",
            "@a@b",
            "a b@c",
            "x\ny",
        ] {
            assert!(SearchTerm::parse(bad).is_err(), "{bad:?} was accepted");
        }
        assert!(SearchTerm::parse(&"a".repeat(321)).is_err());
        assert!(SearchTerm::parse(&"a".repeat(320)).is_ok());
        assert_eq!(
            parse("@acme.example").describe(),
            "addresses at acme.example"
        );
    }

    #[test]
    fn a_map_names_each_group_once_and_staff_roles_only() {
        let map =
            GroupRoles::parse(" vendor-admins=admin, sales=sales ,support = support,").unwrap();
        assert_eq!(map.0.len(), 3);
        for bad in [
            "",
            " , ",
            "admins",
            "=admin",
            "admins=owner",
            "checkout=billing",
            "a=admin,a=read",
        ] {
            assert!(GroupRoles::parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn several_groups_hold_each_role_they_map_and_no_group_holds_none() {
        let map = GroupRoles::parse("ops=admin,sales=sales,help=support,all-staff=read").unwrap();
        let roles = map.roles_of(["help", "sales", "unrelated"]);
        assert_eq!(roles.roles(), [VendorRole::Sales, VendorRole::Support]);
        assert!(roles.may(Permission::SetTier), "sales changes a tier");
        assert!(roles.may(Permission::Resend), "support resends");
        assert!(!roles.may(Permission::Administer));
        assert_eq!(
            roles.missing(&[Permission::Read, Permission::Administer]),
            Some(Permission::Administer)
        );
        assert_eq!(roles.in_words(), "sales, support");
        assert!(map.roles_of(["unrelated"]).is_empty());
        assert!(map.roles_of([]).is_empty());
        // Group names match exactly: no prefix, no case folding.
        assert!(map.roles_of(["Ops", "ops-team"]).is_empty());
        let read = map.roles_of(["all-staff"]);
        assert!(read.may(Permission::Read) && !read.may(Permission::Resend));
    }
}
