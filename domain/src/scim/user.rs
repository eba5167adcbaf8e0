//! The SCIM User resource as Tidemark keeps it: what a POST or PUT body means, how a PATCH's
//! changes apply, and the JSON a GET answers.

use serde_json::{json, Value};

use super::filter::field;
use super::patch::{
    boolean, optional_string, required_string, work_email, EmailEntry, Op, UserChange,
};
use super::{invalid, Meta, ScimError, ScimType, USER_SCHEMA};
use crate::text::Email;

/// Longest string attribute kept; IdPs send far shorter ones.
pub const MAX_TEXT: usize = 256;

/// The attributes of a provisioned person Tidemark keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRecord {
    pub user_name: String,
    pub external_id: Option<String>,
    pub display_name: Option<String>,
    pub given_name: Option<String>,
    pub family_name: Option<String>,
    pub work_email: Option<String>,
    /// The kept e-mail's `type` and `primary`, as sent (answered back as they came).
    pub email_type: Option<String>,
    pub email_primary: Option<bool>,
    /// `None`: not stated (SCIM's default, active).
    pub active: Option<bool>,
}

impl UserRecord {
    /// A POST or PUT body: `userName` is required, attributes Tidemark does not keep are
    /// ignored.
    pub fn from_resource(body: &Value) -> Result<UserRecord, ScimError> {
        if !body.is_object() {
            return Err(ScimError::new(
                ScimType::InvalidSyntax,
                "the body must be a SCIM User object",
            ));
        }
        let name = field(body, "name");
        let part = |key| name.and_then(|n| field(n, key));
        let record = UserRecord {
            user_name: required_string(Op::Add, field(body, "userName"), "userName")?,
            external_id: optional_string(Op::Add, field(body, "externalId"), "externalId")?,
            display_name: optional_string(Op::Add, field(body, "displayName"), "displayName")?,
            given_name: optional_string(Op::Add, part("givenName"), "name.givenName")?,
            family_name: optional_string(Op::Add, part("familyName"), "name.familyName")?,
            work_email: None,
            email_type: None,
            email_primary: None,
            active: match field(body, "active") {
                None | Some(Value::Null) => None,
                value => Some(boolean(value, "active")?),
            },
        };
        let email = match field(body, "emails") {
            None => None,
            Some(emails) => work_email(emails)?,
        };
        let mut record = record;
        record.set_email(email);
        record.checked()
    }

    fn set_email(&mut self, email: Option<EmailEntry>) {
        match email {
            Some(e) => {
                self.work_email = Some(e.value);
                self.email_type = e.kind;
                self.email_primary = e.primary;
            }
            None => {
                self.work_email = None;
                self.email_type = None;
                self.email_primary = None;
            }
        }
    }

    /// Applies a PATCH's changes to the person with `id`, in order.
    /// A refused patch leaves the record as it was.
    pub fn apply(&mut self, id: &str, changes: &[UserChange]) -> Result<(), ScimError> {
        let mut next = self.clone();
        for change in changes {
            match change {
                UserChange::Id(new) if new == id => {}
                UserChange::Id(_) => {
                    return Err(ScimError::new(ScimType::Mutability, "id is read-only"))
                }
                UserChange::Active(active) => next.active = *active,
                UserChange::UserName(name) => next.user_name.clone_from(name),
                UserChange::ExternalId(v) => next.external_id.clone_from(v),
                UserChange::DisplayName(v) => next.display_name.clone_from(v),
                UserChange::GivenName(v) => next.given_name.clone_from(v),
                UserChange::FamilyName(v) => next.family_name.clone_from(v),
                UserChange::WorkEmail(Some(v)) => {
                    // A value set through `emails[type eq "work"]` is the work address.
                    if next.work_email.is_none() {
                        next.email_type = Some("work".into());
                    }
                    next.work_email = Some(v.clone());
                }
                UserChange::WorkEmail(None) => next.set_email(None),
                UserChange::Email(e) => next.set_email(e.clone()),
            }
        }
        *self = next.checked()?;
        Ok(())
    }

    fn checked(self) -> Result<UserRecord, ScimError> {
        for (name, value) in [
            ("userName", Some(&self.user_name)),
            ("externalId", self.external_id.as_ref()),
            ("displayName", self.display_name.as_ref()),
            ("name.givenName", self.given_name.as_ref()),
            ("name.familyName", self.family_name.as_ref()),
            ("emails", self.work_email.as_ref()),
            ("emails.type", self.email_type.as_ref()),
        ] {
            if value.is_some_and(|v| v.chars().count() > MAX_TEXT || v.contains('\0')) {
                return Err(invalid(format!(
                    "{name} must be at most {MAX_TEXT} characters"
                )));
            }
        }
        self.address()?;
        Ok(self)
    }

    /// Whether the person may be a member: SCIM's `active`, true unless stated otherwise.
    pub fn is_active(&self) -> bool {
        self.active.unwrap_or(true)
    }

    /// The address the person signs in to Tidemark with: the work e-mail, or the userName
    /// when it is an address (Okta's default, and Entra's UPN). `None`: neither is one, so
    /// the person is kept for the IdP but has no membership until an address arrives. A work
    /// e-mail that is not an address is refused.
    pub fn address(&self) -> Result<Option<Email>, ScimError> {
        match &self.work_email {
            Some(email) => Email::parse(email).map(Some).map_err(|_| {
                invalid(format!(
                    "the work e-mail {email:?} is not an e-mail address"
                ))
            }),
            None => Ok(Email::parse(&self.user_name).ok()),
        }
    }

    /// The key userName is unique by: case-insensitive, as RFC 7643 declares it.
    pub fn user_name_key(&self) -> String {
        self.user_name.to_lowercase()
    }

    /// The resource a GET answers, with the groups the person is in (`(id, displayName)`).
    pub fn to_resource(&self, id: &str, groups: &[(String, String)], meta: &Meta) -> Value {
        let mut user = json!({
            "schemas": [USER_SCHEMA],
            "id": id,
            "userName": self.user_name,
            "meta": meta.to_json("User", id),
        });
        let obj = user.as_object_mut().expect("a JSON object");
        if let Some(active) = self.active {
            obj.insert("active".into(), json!(active));
        }
        if let Some(v) = &self.external_id {
            obj.insert("externalId".into(), json!(v));
        }
        if let Some(v) = &self.display_name {
            obj.insert("displayName".into(), json!(v));
        }
        if self.given_name.is_some() || self.family_name.is_some() {
            let mut name = serde_json::Map::new();
            if let Some(v) = &self.given_name {
                name.insert("givenName".into(), json!(v));
            }
            if let Some(v) = &self.family_name {
                name.insert("familyName".into(), json!(v));
            }
            obj.insert("name".into(), Value::Object(name));
        }
        if let Some(v) = &self.work_email {
            let mut email = serde_json::Map::new();
            email.insert("value".into(), json!(v));
            if let Some(t) = &self.email_type {
                email.insert("type".into(), json!(t));
            }
            if let Some(p) = self.email_primary {
                email.insert("primary".into(), json!(p));
            }
            obj.insert("emails".into(), json!([email]));
        }
        if !groups.is_empty() {
            let base = meta.base_url.trim_end_matches('/');
            let groups: Vec<Value> = groups
                .iter()
                .map(|(gid, display)| {
                    json!({
                        "value": gid,
                        "display": display,
                        "$ref": format!("{base}/Groups/{gid}"),
                        "type": "direct",
                    })
                })
                .collect();
            obj.insert("groups".into(), Value::Array(groups));
        }
        user
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scim::patch::user_patch;

    fn okta_user() -> Value {
        json!({
            "schemas": [USER_SCHEMA],
            "userName": "Alice@Example.com",
            "name": {"givenName": "Alice", "familyName": "Liddell"},
            "emails": [{"primary": true, "value": "alice@example.com", "type": "work"}],
            "displayName": "Alice Liddell",
            "locale": "en-US",
            "externalId": "00u1",
            "groups": [],
            "password": "ignored",
            "active": true
        })
    }

    #[test]
    fn a_post_body_becomes_a_record_and_renders_back() {
        let record = UserRecord::from_resource(&okta_user()).unwrap();
        assert_eq!(record.user_name, "Alice@Example.com");
        assert_eq!(record.user_name_key(), "alice@example.com");
        assert_eq!(record.work_email.as_deref(), Some("alice@example.com"));
        assert_eq!(
            record.address().unwrap().unwrap().as_str(),
            "alice@example.com"
        );
        assert!(record.is_active());
        let meta = Meta {
            base_url: "https://t.example/scim/v2".into(),
            created: 0,
            last_modified: 1_000,
            version: 3,
        };
        let resource = record.to_resource("scu_1", &[("scg_1".into(), "Admins".into())], &meta);
        assert_eq!(resource["name"]["familyName"], "Liddell");
        assert_eq!(
            resource["groups"][0]["$ref"],
            "https://t.example/scim/v2/Groups/scg_1"
        );
        assert_eq!(
            resource["meta"]["location"],
            "https://t.example/scim/v2/Users/scu_1"
        );
        assert_eq!(resource["meta"]["version"], "W/\"3\"");
        assert!(resource.get("password").is_none());
        // What it renders reads back as the same record.
        assert_eq!(UserRecord::from_resource(&resource).unwrap(), record);
    }

    #[test]
    fn entra_string_booleans_and_missing_active_default() {
        let mut body = okta_user();
        body["active"] = json!("False");
        assert!(!UserRecord::from_resource(&body).unwrap().is_active());
        body.as_object_mut().unwrap().remove("active");
        let unstated = UserRecord::from_resource(&body).unwrap();
        assert_eq!(unstated.active, None);
        assert!(unstated.is_active());
    }

    #[test]
    fn bodies_tidemark_cannot_keep_are_refused_with_their_type() {
        let cases = [
            (json!([]), ScimType::InvalidSyntax),
            (json!({"active": true}), ScimType::InvalidValue),
            (json!({"userName": "   "}), ScimType::InvalidValue),
            (json!({"userName": 7}), ScimType::InvalidValue),
            (
                json!({"userName": "alice", "emails": [{"value": "nope"}]}),
                ScimType::InvalidValue,
            ),
            (
                json!({"userName": "a@example.com", "active": "maybe"}),
                ScimType::InvalidValue,
            ),
            (
                json!({"userName": format!("{}@example.com", "a".repeat(300))}),
                ScimType::InvalidValue,
            ),
        ];
        for (body, want) in cases {
            let err = UserRecord::from_resource(&body).unwrap_err();
            assert_eq!(err.scim_type, Some(want), "{body}: {err}");
        }
        // A plain userName with a work address is fine (Entra's UPN need not be one).
        let ok = UserRecord::from_resource(&json!({
            "userName": "alice", "emails": [{"value": "alice@example.com", "type": "work"}]
        }))
        .unwrap();
        assert_eq!(ok.address().unwrap().unwrap().as_str(), "alice@example.com");
        // Neither an address nor a work e-mail: kept, with nobody to sign in as.
        let none = UserRecord::from_resource(&json!({"userName": "alice"})).unwrap();
        assert_eq!(none.address().unwrap(), None);
    }

    #[test]
    fn patches_apply_in_order_and_keep_the_record_valid() {
        let mut record = UserRecord::from_resource(&okta_user()).unwrap();
        let patch = user_patch(&json!({
            "schemas": [crate::scim::patch::PATCH_OP_SCHEMA],
            "Operations": [
                {"op": "Replace", "path": "active", "value": "False"},
                {"op": "replace", "value": {"displayName": "A. L.", "id": "scu_1"}}
            ]
        }))
        .unwrap();
        record.apply("scu_1", &patch.changes).unwrap();
        assert!(!record.is_active());
        assert_eq!(record.display_name.as_deref(), Some("A. L."));

        let other_id = user_patch(&json!({
            "Operations": [{"op": "replace", "path": "id", "value": "scu_2"}]
        }))
        .unwrap();
        let err = record.apply("scu_1", &other_id.changes).unwrap_err();
        assert_eq!(err.scim_type, Some(ScimType::Mutability));

        // A refused patch leaves the record unchanged.
        let mut plain = UserRecord::from_resource(&json!({
            "userName": "alice", "emails": [{"value": "alice@example.com", "type": "work"}]
        }))
        .unwrap();
        let before = plain.clone();
        let bad = user_patch(&json!({
            "Operations": [
                {"op": "replace", "path": "displayName", "value": "A"},
                {"op": "replace", "path": "emails[type eq \"work\"].value", "value": "nope"}
            ]
        }))
        .unwrap();
        assert!(plain.apply("scu_1", &bad.changes).is_err());
        assert_eq!(plain, before);
        // Removing `active` leaves it unstated, which reads as active.
        let remove = user_patch(&json!({
            "Operations": [{"op": "remove", "path": "active"}]
        }))
        .unwrap();
        record.apply("scu_1", &remove.changes).unwrap();
        assert_eq!(record.active, None);
        assert!(record.is_active());
    }
}
