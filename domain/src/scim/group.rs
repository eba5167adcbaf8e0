//! The SCIM Group resource: a POST or PUT body, PATCH changes applied to a group's member
//! set, and the JSON a GET answers.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::filter::field;
use super::patch::{member_ids, optional_string, required_string, GroupChange, Op};
use super::user::MAX_TEXT;
use super::{invalid, Meta, ScimError, ScimType, GROUP_SCHEMA};

/// The attributes of a provisioned group Tidemark keeps (members are kept beside it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupRecord {
    pub display_name: String,
    pub external_id: Option<String>,
}

impl GroupRecord {
    /// A POST or PUT body, and the member ids it names.
    pub fn from_resource(body: &Value) -> Result<(GroupRecord, Vec<String>), ScimError> {
        if !body.is_object() {
            return Err(ScimError::new(
                ScimType::InvalidSyntax,
                "the body must be a SCIM Group object",
            ));
        }
        let record = GroupRecord {
            display_name: required_string(Op::Add, field(body, "displayName"), "displayName")?,
            external_id: optional_string(Op::Add, field(body, "externalId"), "externalId")?,
        };
        let members = member_ids(field(body, "members"))?;
        Ok((record.checked()?, members))
    }

    fn checked(self) -> Result<GroupRecord, ScimError> {
        for (name, value) in [
            ("displayName", Some(&self.display_name)),
            ("externalId", self.external_id.as_ref()),
        ] {
            if value.is_some_and(|v| v.chars().count() > MAX_TEXT || v.contains('\0')) {
                return Err(invalid(format!(
                    "{name} must be at most {MAX_TEXT} characters"
                )));
            }
        }
        Ok(self)
    }

    /// The key displayName is unique by within an account (case-insensitive).
    pub fn display_name_key(&self) -> String {
        self.display_name.to_lowercase()
    }

    /// Applies a PATCH's changes to the group with `id` and its member ids, in order. A
    /// refused patch leaves both as they were.
    pub fn apply(
        &mut self,
        id: &str,
        members: &mut BTreeSet<String>,
        changes: &[GroupChange],
    ) -> Result<(), ScimError> {
        let mut next = self.clone();
        let mut next_members = members.clone();
        for change in changes {
            match change {
                GroupChange::Id(new) if new == id => {}
                GroupChange::Id(_) => {
                    return Err(ScimError::new(ScimType::Mutability, "id is read-only"))
                }
                GroupChange::DisplayName(v) => next.display_name.clone_from(v),
                GroupChange::ExternalId(v) => next.external_id.clone_from(v),
                GroupChange::AddMembers(ids) => next_members.extend(ids.iter().cloned()),
                GroupChange::RemoveMembers(ids) => {
                    for m in ids {
                        next_members.remove(m);
                    }
                }
                GroupChange::RemoveAllMembers => next_members.clear(),
                GroupChange::ReplaceMembers(ids) => {
                    next_members = ids.iter().cloned().collect();
                }
            }
        }
        *self = next.checked()?;
        *members = next_members;
        Ok(())
    }

    /// The resource a GET answers; `members` (`(id, userName)`) is left out when `None`.
    /// Members carry no `display`: a PATCH's members come back exactly as they were sent.
    pub fn to_resource(
        &self,
        id: &str,
        members: Option<&[(String, String)]>,
        meta: &Meta,
    ) -> Value {
        let mut group = json!({
            "schemas": [GROUP_SCHEMA],
            "id": id,
            "displayName": self.display_name,
            "meta": meta.to_json("Group", id),
        });
        let obj = group.as_object_mut().expect("a JSON object");
        if let Some(v) = &self.external_id {
            obj.insert("externalId".into(), json!(v));
        }
        if let Some(members) = members {
            let base = meta.base_url.trim_end_matches('/');
            let members: Vec<Value> = members
                .iter()
                .map(|(uid, _)| {
                    json!({
                        "value": uid,
                        "$ref": format!("{base}/Users/{uid}"),
                        "type": "User",
                    })
                })
                .collect();
            obj.insert("members".into(), Value::Array(members));
        }
        group
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scim::patch::group_patch;

    #[test]
    fn bodies_and_patches_of_groups() {
        let (mut group, ids) = GroupRecord::from_resource(&json!({
            "schemas": [GROUP_SCHEMA],
            "displayName": "Tidemark Admins",
            "externalId": "g-1",
            "members": [{"value": "scu_a"}, {"value": "scu_b", "display": "Bob"}]
        }))
        .unwrap();
        assert_eq!(group.display_name_key(), "tidemark admins");
        let mut members: BTreeSet<String> = ids.into_iter().collect();

        let patch = group_patch(&json!({
            "Operations": [
                {"op": "Add", "path": "members", "value": [{"value": "scu_c"}]},
                {"op": "Remove", "path": "members[value eq \"scu_a\"]"},
                {"op": "Replace", "path": "displayName", "value": "Admins"}
            ]
        }))
        .unwrap();
        group.apply("scg_1", &mut members, &patch.changes).unwrap();
        assert_eq!(group.display_name, "Admins");
        assert_eq!(
            members.iter().map(String::as_str).collect::<Vec<_>>(),
            ["scu_b", "scu_c"]
        );

        let replace = group_patch(&json!({
            "Operations": [{"op": "replace", "path": "members", "value": [{"value": "scu_z"}]}]
        }))
        .unwrap();
        group
            .apply("scg_1", &mut members, &replace.changes)
            .unwrap();
        assert_eq!(members.len(), 1);

        // A refused patch changes neither the group nor its members.
        let (before, before_members) = (group.clone(), members.clone());
        let refused = group_patch(&json!({
            "Operations": [
                {"op": "add", "path": "members", "value": [{"value": "scu_y"}]},
                {"op": "replace", "path": "id", "value": "scg_2"}
            ]
        }))
        .unwrap();
        let err = group
            .apply("scg_1", &mut members, &refused.changes)
            .unwrap_err();
        assert_eq!(err.scim_type, Some(ScimType::Mutability));
        assert_eq!((group, members), (before, before_members));
    }

    #[test]
    fn a_group_without_a_name_or_with_bad_members_is_refused() {
        for body in [
            json!({"members": []}),
            json!({"displayName": ""}),
            json!({"displayName": "x", "members": "scu_a"}),
            json!({"displayName": "x", "members": [{"display": "no id"}]}),
            json!("Admins"),
        ] {
            assert!(GroupRecord::from_resource(&body).is_err(), "{body}");
        }
    }

    #[test]
    fn members_can_be_left_out_of_the_resource() {
        let group = GroupRecord {
            display_name: "Eng".into(),
            external_id: None,
        };
        let meta = Meta {
            base_url: "http://t/scim/v2/".into(),
            created: 0,
            last_modified: 0,
            version: 1,
        };
        let with = group.to_resource("scg_1", Some(&[("scu_a".into(), "a@x.io".into())]), &meta);
        assert_eq!(with["members"][0]["$ref"], "http://t/scim/v2/Users/scu_a");
        assert_eq!(with["meta"]["location"], "http://t/scim/v2/Groups/scg_1");
        let without = group.to_resource("scg_1", None, &meta);
        assert!(without.get("members").is_none());
    }
}
