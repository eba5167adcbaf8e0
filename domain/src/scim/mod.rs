//! SCIM 2.0 provisioning rules (RFC 7643/7644) as plain functions: filters evaluated over a
//! resource's SCIM representation, and the PATCH dialects of the big identity providers
//! reduced to one set of changes. Storage and HTTP live in `store` and `server`.

pub mod filter;
pub mod group;
pub mod patch;
pub mod user;

use std::fmt;

use serde_json::{json, Value};

use crate::access::Role;
use crate::Millis;

pub const USER_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:User";
pub const GROUP_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:Group";
pub const LIST_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:ListResponse";
pub const ERROR_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:Error";

/// Most resources one list answer holds (`ServiceProviderConfig`'s `filter.maxResults`).
pub const MAX_RESULTS: usize = 1000;
/// What a list answers without `count`.
pub const DEFAULT_COUNT: usize = 100;

/// A resource's `meta`, and where its resources live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    /// `…/scim/v2`, as clients reach it.
    pub base_url: String,
    pub created: Millis,
    pub last_modified: Millis,
    /// Bumped by every change; answered as the weak ETag `W/"<n>"`.
    pub version: i64,
}

impl Meta {
    pub fn to_json(&self, resource_type: &str, id: &str) -> Value {
        json!({
            "resourceType": resource_type,
            "created": crate::to_rfc3339(self.created),
            "lastModified": crate::to_rfc3339(self.last_modified),
            "location": format!("{}/{resource_type}s/{id}", self.base_url.trim_end_matches('/')),
            "version": self.etag(),
        })
    }

    pub fn etag(&self) -> String {
        format!("W/\"{}\"", self.version)
    }
}

/// One page of a list: `startIndex` is 1-based; RFC 7644 §3.4.2.4 reads a `startIndex` below 1
/// as 1 and a negative `count` as 0. A `count` above [`MAX_RESULTS`] is cut to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub start_index: usize,
    pub count: usize,
}

impl Page {
    pub fn parse(start_index: Option<&str>, count: Option<&str>) -> Result<Page, ScimError> {
        let number = |raw: Option<&str>, name: &str| -> Result<Option<i64>, ScimError> {
            raw.map(|r| {
                r.trim().parse::<i64>().map_err(|_| {
                    ScimError::new(ScimType::InvalidValue, format!("{name} must be an integer"))
                })
            })
            .transpose()
        };
        let start = number(start_index, "startIndex")?.unwrap_or(1).max(1);
        let count = number(count, "count")?.map_or(DEFAULT_COUNT as i64, |c| c.max(0));
        Ok(Page {
            start_index: usize::try_from(start).unwrap_or(usize::MAX),
            count: usize::try_from(count).unwrap_or(0).min(MAX_RESULTS),
        })
    }

    /// The part of `items` this page shows.
    pub fn slice<T>(&self, items: &[T]) -> std::ops::Range<usize> {
        let from = (self.start_index - 1).min(items.len());
        from..(from + self.count).min(items.len())
    }
}

/// A list answer (`ListResponse`).
pub fn list_response(total: usize, page: &Page, resources: Vec<Value>) -> Value {
    json!({
        "schemas": [LIST_SCHEMA],
        "totalResults": total,
        "startIndex": page.start_index,
        "itemsPerPage": resources.len(),
        "Resources": resources,
    })
}

/// Names in an `attributes` or `excludedAttributes` list (comma-separated), each as
/// `(attribute, sub-attribute)` in lower case, with a core schema's URN prefix dropped.
pub fn attribute_names(raw: &str) -> Vec<(String, Option<String>)> {
    raw.split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(|name| {
            let lower = name.to_ascii_lowercase();
            let bare = match lower.strip_prefix("urn:ietf:params:scim:schemas:core:2.0:") {
                Some(rest) => rest
                    .split_once(':')
                    .map_or(rest, |(_, attr)| attr)
                    .to_owned(),
                None => lower,
            };
            match bare.split_once('.') {
                Some((attr, sub)) => (attr.to_owned(), Some(sub.to_owned())),
                None => (bare, None),
            }
        })
        .collect()
}

/// Cuts a resource down to what the client asked for (RFC 7644 §3.4.2.5): with `attributes`,
/// only those (and `id`, `schemas` and `meta`, which are always returned); without, all but
/// the `excluded` ones.
pub fn project(
    resource: &mut Value,
    attributes: &[(String, Option<String>)],
    excluded: &[(String, Option<String>)],
) {
    const ALWAYS: [&str; 3] = ["id", "schemas", "meta"];
    let Some(obj) = resource.as_object_mut() else {
        return;
    };
    if !attributes.is_empty() {
        obj.retain(|key, value| {
            let key = key.to_ascii_lowercase();
            if ALWAYS.contains(&key.as_str()) {
                return true;
            }
            let wanted: Vec<&Option<String>> = attributes
                .iter()
                .filter(|(a, _)| *a == key)
                .map(|(_, sub)| sub)
                .collect();
            if wanted.is_empty() {
                return false;
            }
            if !wanted.iter().any(|s| s.is_none()) {
                keep_subs(value, &wanted);
            }
            true
        });
    }
    for (attr, sub) in excluded {
        if ALWAYS.contains(&attr.as_str()) {
            continue;
        }
        let key = obj.keys().find(|k| k.eq_ignore_ascii_case(attr)).cloned();
        let Some(key) = key else { continue };
        match sub {
            None => {
                obj.remove(&key);
            }
            Some(sub) => drop_sub(obj.get_mut(&key), sub),
        }
    }
}

fn keep_subs(value: &mut Value, subs: &[&Option<String>]) {
    let keep = |o: &mut serde_json::Map<String, Value>| {
        o.retain(|k, _| {
            let k = k.to_ascii_lowercase();
            subs.iter().any(|s| s.as_deref() == Some(k.as_str()))
        })
    };
    match value {
        Value::Object(o) => keep(o),
        Value::Array(items) => items
            .iter_mut()
            .filter_map(Value::as_object_mut)
            .for_each(keep),
        _ => {}
    }
}

fn drop_sub(value: Option<&mut Value>, sub: &str) {
    let drop =
        |o: &mut serde_json::Map<String, Value>| o.retain(|k, _| !k.eq_ignore_ascii_case(sub));
    match value {
        Some(Value::Object(o)) => drop(o),
        Some(Value::Array(items)) => items
            .iter_mut()
            .filter_map(Value::as_object_mut)
            .for_each(drop),
        _ => {}
    }
}

/// Where a provisioned person stands with the account's admin groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdminGroups {
    /// No group of the account is marked as giving the admin role: SCIM leaves roles alone.
    NoneMarked,
    /// The person is in a group marked so.
    InOne,
    /// Groups are marked, and the person is in none of them.
    InNone,
}

/// The membership a provisioned person has in the account: none while deactivated. Once an
/// admin marks a group as the admins' group, the groups decide the role; until then the role
/// the person had (`kept`: a new person's is member) stays, so connecting an IdP to an account
/// never demotes the admins it already has.
pub fn provisioned_role(active: bool, kept: Role, groups: AdminGroups) -> Option<Role> {
    if !active {
        return None;
    }
    Some(match groups {
        AdminGroups::NoneMarked => kept,
        AdminGroups::InOne => Role::Admin,
        AdminGroups::InNone => Role::Member,
    })
}

pub(crate) fn invalid(detail: String) -> ScimError {
    ScimError::new(ScimType::InvalidValue, detail)
}

/// `urn:ietf:params:scim:api:messages:2.0:Error`'s `scimType` (RFC 7644 §3.12).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScimType {
    InvalidFilter,
    TooMany,
    Uniqueness,
    Mutability,
    InvalidSyntax,
    InvalidPath,
    NoTarget,
    InvalidValue,
}

impl ScimType {
    pub fn as_str(self) -> &'static str {
        match self {
            ScimType::InvalidFilter => "invalidFilter",
            ScimType::TooMany => "tooMany",
            ScimType::Uniqueness => "uniqueness",
            ScimType::Mutability => "mutability",
            ScimType::InvalidSyntax => "invalidSyntax",
            ScimType::InvalidPath => "invalidPath",
            ScimType::NoTarget => "noTarget",
            ScimType::InvalidValue => "invalidValue",
        }
    }

    /// The HTTP status RFC 7644 §3.12 gives each type.
    pub fn status(self) -> u16 {
        match self {
            ScimType::Uniqueness => 409,
            _ => 400,
        }
    }
}

/// A refusal in SCIM's terms: its `scimType` (if any) and words for the IdP's admin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScimError {
    pub scim_type: Option<ScimType>,
    pub detail: String,
}

impl ScimError {
    pub fn new(scim_type: ScimType, detail: impl Into<String>) -> Self {
        ScimError {
            scim_type: Some(scim_type),
            detail: detail.into(),
        }
    }
}

impl fmt::Display for ScimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.scim_type {
            Some(t) => write!(f, "{}: {}", t.as_str(), self.detail),
            None => f.write_str(&self.detail),
        }
    }
}

impl std::error::Error for ScimError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_follow_rfc_7644() {
        let page = |s, c| Page::parse(s, c).unwrap();
        assert_eq!(
            page(None, None),
            Page {
                start_index: 1,
                count: DEFAULT_COUNT
            }
        );
        assert_eq!(
            page(Some("0"), Some("-5")),
            Page {
                start_index: 1,
                count: 0
            }
        );
        assert_eq!(page(Some("3"), Some("99999")).count, MAX_RESULTS);
        assert!(Page::parse(Some("x"), None).is_err());
        assert!(Page::parse(None, Some("1.5")).is_err());
        let items = [1, 2, 3, 4, 5];
        assert_eq!(page(Some("2"), Some("2")).slice(&items), 1..3);
        assert_eq!(page(Some("5"), Some("10")).slice(&items), 4..5);
        assert_eq!(page(Some("9"), Some("10")).slice(&items), 5..5);
        assert_eq!(page(None, Some("0")).slice(&items), 0..0);
    }

    #[test]
    fn resources_are_cut_to_the_attributes_asked_for() {
        let user = json!({
            "schemas": [USER_SCHEMA], "id": "scu_1", "meta": {"version": "W/\"1\""},
            "userName": "a@x.io", "displayName": "A",
            "name": {"givenName": "A", "familyName": "B"},
            "emails": [{"value": "a@x.io", "type": "work"}]
        });
        let cut = |attributes: &str, excluded: &str| {
            let mut u = user.clone();
            project(
                &mut u,
                &attribute_names(attributes),
                &attribute_names(excluded),
            );
            u
        };
        let only = cut("userName,name.familyName", "");
        assert_eq!(
            only,
            json!({"schemas": [USER_SCHEMA], "id": "scu_1", "meta": {"version": "W/\"1\""},
                   "userName": "a@x.io", "name": {"familyName": "B"}})
        );
        let urn = cut(&format!("{USER_SCHEMA}:displayName"), "");
        assert_eq!(urn["displayName"], "A");
        assert!(urn.get("userName").is_none());
        let without = cut("", "displayName, emails.type,id");
        assert!(without.get("displayName").is_none());
        assert_eq!(without["emails"], json!([{"value": "a@x.io"}]));
        assert_eq!(without["id"], "scu_1");
        assert_eq!(cut("", ""), user);
    }

    #[test]
    fn groups_decide_roles_only_once_one_is_marked() {
        use AdminGroups::*;
        assert_eq!(provisioned_role(false, Role::Admin, InOne), None);
        assert_eq!(
            provisioned_role(true, Role::Admin, NoneMarked),
            Some(Role::Admin)
        );
        assert_eq!(
            provisioned_role(true, Role::Member, NoneMarked),
            Some(Role::Member)
        );
        assert_eq!(
            provisioned_role(true, Role::Member, InOne),
            Some(Role::Admin)
        );
        assert_eq!(
            provisioned_role(true, Role::Admin, InNone),
            Some(Role::Member)
        );
    }
}
