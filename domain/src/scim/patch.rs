//! SCIM PATCH (RFC 7644 §3.5.2) as the big identity providers send it, reduced to the changes
//! Tidemark keeps.
//!
//! Okta replaces without a path (`{"op": "replace", "value": {"active": false}}`). Microsoft
//! Entra capitalises operation names, uses `Add` and `Replace` for one another on
//! single-valued attributes, sends booleans as the strings `"True"`/`"False"` and removes
//! group members with a `value` list unless the app is registered with the
//! `aadOptscim062020` flag, in which case it sends real booleans and removes members by a
//! filtered path (`members[value eq "…"]`). All of these forms are understood; operation
//! names compare case-insensitively. Attributes Tidemark does not keep (titles, phone
//! numbers, the enterprise extension) are accepted and ignored, and reported as such, so a
//! provisioning run never fails on an attribute mapping nobody asked for.

use scim_v2::filter::{AttrExp, AttrPath, CompValue, CompareOp, PatchPath, ValFilter};
use serde_json::Value;

use super::filter::field;
use super::{invalid, ScimError, ScimType};

pub const PATCH_OP_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
const CORE_USER: &str = "urn:ietf:params:scim:schemas:core:2.0:user:";
const CORE_GROUP: &str = "urn:ietf:params:scim:schemas:core:2.0:group:";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Add,
    Replace,
    Remove,
}

/// One change to a provisioned person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserChange {
    /// The request names the resource's id: the caller refuses it unless it is unchanged.
    Id(String),
    /// `None`: the attribute was removed (it then reads as active, SCIM's default).
    Active(Option<bool>),
    UserName(String),
    ExternalId(Option<String>),
    DisplayName(Option<String>),
    GivenName(Option<String>),
    FamilyName(Option<String>),
    /// The work (or primary) e-mail address's value alone.
    WorkEmail(Option<String>),
    /// The whole work (or primary) e-mail entry.
    Email(Option<EmailEntry>),
}

/// One change to a provisioned group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupChange {
    Id(String),
    DisplayName(String),
    ExternalId(Option<String>),
    AddMembers(Vec<String>),
    RemoveMembers(Vec<String>),
    RemoveAllMembers,
    ReplaceMembers(Vec<String>),
}

/// What a PATCH asks, in order, and the attribute paths it named that Tidemark does not keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch<C> {
    pub changes: Vec<C>,
    pub ignored: Vec<String>,
}

impl<C> Default for Patch<C> {
    fn default() -> Self {
        Patch {
            changes: Vec::new(),
            ignored: Vec::new(),
        }
    }
}

/// One operation of a PatchOp: what to do, where (`None`: the value object names the
/// attributes), and the value.
type Operation<'a> = (Op, Option<String>, Option<&'a Value>);

/// Reads a PatchOp body into its operations.
fn operations(body: &Value) -> Result<Vec<Operation<'_>>, ScimError> {
    let syntax = |detail: &str| ScimError::new(ScimType::InvalidSyntax, detail);
    if !body.is_object() {
        return Err(syntax("a PATCH body is a JSON object with \"Operations\""));
    }
    if let Some(schemas) = field(body, "schemas") {
        let named = schemas
            .as_array()
            .is_some_and(|s| s.iter().any(|s| s.as_str() == Some(PATCH_OP_SCHEMA)));
        if !named {
            return Err(syntax(&format!("\"schemas\" must list {PATCH_OP_SCHEMA}")));
        }
    }
    let ops = field(body, "Operations")
        .and_then(Value::as_array)
        .filter(|ops| !ops.is_empty())
        .ok_or_else(|| syntax("\"Operations\" must be a non-empty array"))?;
    ops.iter()
        .map(|item| {
            let op = match field(item, "op").and_then(Value::as_str) {
                Some(op) if op.eq_ignore_ascii_case("add") => Op::Add,
                Some(op) if op.eq_ignore_ascii_case("replace") => Op::Replace,
                Some(op) if op.eq_ignore_ascii_case("remove") => Op::Remove,
                Some(op) => {
                    return Err(syntax(&format!(
                        "unknown op {op:?}: add, replace or remove"
                    )))
                }
                None => return Err(syntax("every operation needs \"op\"")),
            };
            let path = match field(item, "path") {
                None | Some(Value::Null) => None,
                Some(Value::String(p)) if p.trim().is_empty() => None,
                Some(Value::String(p)) => Some(p.trim().to_owned()),
                Some(_) => {
                    return Err(ScimError::new(
                        ScimType::InvalidPath,
                        "\"path\" must be a string",
                    ))
                }
            };
            Ok((op, path, field(item, "value")))
        })
        .collect()
}

fn parse_path(raw: &str) -> Result<PatchPath, ScimError> {
    if !super::filter::within_limits(raw) {
        return Err(ScimError::new(
            ScimType::InvalidPath,
            format!(
                "a path may be at most {} bytes long and nest [ and ( at most {} deep",
                super::filter::MAX_EXPRESSION,
                super::filter::MAX_NESTING
            ),
        ));
    }
    raw.parse::<PatchPath>().map_err(|e| {
        ScimError::new(
            ScimType::InvalidPath,
            format!("{raw:?} is not a SCIM attribute path: {e}"),
        )
    })
}

/// The attribute a path names, lower-cased, with a core-schema URI prefix dropped; `None`
/// for an extension's attribute (which Tidemark does not keep).
fn core_name(attr: &AttrPath, core: &str) -> Option<(String, Option<String>)> {
    if let Some(uri) = &attr.uri {
        let uri = format!("{}:", uri.to_ascii_lowercase());
        if uri != core {
            return None;
        }
    }
    Some((
        attr.name.to_ascii_lowercase(),
        attr.sub_attr.as_ref().map(|s| s.to_ascii_lowercase()),
    ))
}

fn required<'a>(value: Option<&'a Value>, path: &str) -> Result<&'a Value, ScimError> {
    value
        .filter(|v| !v.is_null())
        .ok_or_else(|| invalid(format!("{path}: a value is required")))
}

/// A string, or null (or a remove) for an optional attribute.
pub(super) fn optional_string(
    op: Op,
    value: Option<&Value>,
    path: &str,
) -> Result<Option<String>, ScimError> {
    if op == Op::Remove {
        return Ok(None);
    }
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_owned())),
        Some(_) => Err(invalid(format!("{path} must be a string"))),
    }
}

pub(super) fn required_string(
    op: Op,
    value: Option<&Value>,
    path: &str,
) -> Result<String, ScimError> {
    if op == Op::Remove {
        return Err(invalid(format!("{path} is required and cannot be removed")));
    }
    match required(value, path)? {
        Value::String(s) if !s.trim().is_empty() => Ok(s.trim().to_owned()),
        _ => Err(invalid(format!("{path} must be a non-empty string"))),
    }
}

/// A boolean, or Entra's `"True"`/`"False"` strings.
pub(super) fn boolean(value: Option<&Value>, path: &str) -> Result<bool, ScimError> {
    match required(value, path)? {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s.eq_ignore_ascii_case("true") => Ok(true),
        Value::String(s) if s.eq_ignore_ascii_case("false") => Ok(false),
        _ => Err(invalid(format!("{path} must be true or false"))),
    }
}

fn id_change(op: Op, value: Option<&Value>) -> Result<String, ScimError> {
    match (op, value) {
        (Op::Remove, _) => Err(ScimError::new(ScimType::Mutability, "id is read-only")),
        (_, Some(Value::String(id))) => Ok(id.clone()),
        _ => Err(ScimError::new(ScimType::Mutability, "id is read-only")),
    }
}

/// The one e-mail entry Tidemark keeps, as the IdP sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmailEntry {
    pub value: String,
    pub kind: Option<String>,
    pub primary: Option<bool>,
}

/// The work address in an `emails` array: the one typed `work`, else the primary one, else
/// the first.
pub(super) fn work_email(value: &Value) -> Result<Option<EmailEntry>, ScimError> {
    let items: Vec<&Value> = match value {
        Value::Array(items) => items.iter().collect(),
        Value::Object(_) => vec![value],
        Value::Null => return Ok(None),
        _ => {
            return Err(invalid(
                "emails must be an array of {\"value\", \"type\"}".into(),
            ))
        }
    };
    let typed = |want: &str| {
        items.iter().copied().find(|e| {
            field(e, "type")
                .and_then(Value::as_str)
                .is_some_and(|t| t.eq_ignore_ascii_case(want))
        })
    };
    let primary = items.iter().copied().find(|e| {
        field(e, "primary").is_some_and(|p| {
            p == &Value::Bool(true) || p.as_str().is_some_and(|s| s.eq_ignore_ascii_case("true"))
        })
    });
    let Some(chosen) = typed("work").or(primary).or(items.first().copied()) else {
        return Ok(None);
    };
    let value = match field(chosen, "value") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) => s.trim().to_owned(),
        Some(_) => return Err(invalid("an e-mail's value must be a string".into())),
    };
    let kind = match field(chosen, "type") {
        None | Some(Value::Null) => None,
        Some(Value::String(t)) => Some(t.trim().to_owned()),
        Some(_) => return Err(invalid("an e-mail's type must be a string".into())),
    };
    let primary = match field(chosen, "primary") {
        None | Some(Value::Null) => None,
        p => Some(boolean(p, "emails.primary")?),
    };
    Ok(Some(EmailEntry {
        value,
        kind,
        primary,
    }))
}

/// Whether a value-path filter selects the work (or primary) e-mail.
fn selects_work_email(filter: &ValFilter) -> bool {
    match filter {
        ValFilter::Attr(AttrExp::Comparison(path, CompareOp::Eq, CompValue::Str(v))) => {
            path.name.eq_ignore_ascii_case("type") && v.eq_ignore_ascii_case("work")
        }
        ValFilter::Attr(AttrExp::Comparison(path, CompareOp::Eq, CompValue::True)) => {
            path.name.eq_ignore_ascii_case("primary")
        }
        ValFilter::And(items) => items.as_slice().iter().any(selects_work_email),
        _ => false,
    }
}

/// The changes a PATCH of a user asks for.
pub fn user_patch(body: &Value) -> Result<Patch<UserChange>, ScimError> {
    patch_with(body, user_path)
}

fn user_path(
    patch: &mut Patch<UserChange>,
    op: Op,
    raw: &str,
    value: Option<&Value>,
) -> Result<(), ScimError> {
    let parsed = parse_path(raw)?;
    let change = match &parsed {
        PatchPath::Attr(attr) => match core_name(attr, CORE_USER) {
            None => None,
            Some((name, sub)) => match (name.as_str(), sub.as_deref()) {
                ("id", None) => Some(UserChange::Id(id_change(op, value)?)),
                ("active", None) if op == Op::Remove => Some(UserChange::Active(None)),
                ("active", None) => Some(UserChange::Active(Some(boolean(value, raw)?))),
                ("username", None) => Some(UserChange::UserName(required_string(op, value, raw)?)),
                ("externalid", None) => {
                    Some(UserChange::ExternalId(optional_string(op, value, raw)?))
                }
                ("displayname", None) => {
                    Some(UserChange::DisplayName(optional_string(op, value, raw)?))
                }
                ("name", Some("givenname")) => {
                    Some(UserChange::GivenName(optional_string(op, value, raw)?))
                }
                ("name", Some("familyname")) => {
                    Some(UserChange::FamilyName(optional_string(op, value, raw)?))
                }
                ("name", None) => {
                    let name = if op == Op::Remove { None } else { value };
                    let part = |key| name.and_then(|n| field(n, key));
                    patch.changes.push(UserChange::GivenName(optional_string(
                        op,
                        part("givenName"),
                        "name.givenName",
                    )?));
                    Some(UserChange::FamilyName(optional_string(
                        op,
                        part("familyName"),
                        "name.familyName",
                    )?))
                }
                ("emails", None) => Some(UserChange::Email(match op {
                    Op::Remove => None,
                    _ => work_email(required(value, raw)?)?,
                })),
                _ => None,
            },
        },
        PatchPath::Value(vp) => match core_name(&vp.attr, CORE_USER) {
            Some((name, None)) if name == "emails" && selects_work_email(&vp.filter) => {
                match vp
                    .sub_attr
                    .as_deref()
                    .map(str::to_ascii_lowercase)
                    .as_deref()
                {
                    Some("value") => Some(UserChange::WorkEmail(optional_string(op, value, raw)?)),
                    None if op == Op::Remove => Some(UserChange::WorkEmail(None)),
                    None => Some(UserChange::Email(
                        value.map(work_email).transpose()?.flatten(),
                    )),
                    Some(_) => None,
                }
            }
            _ => None,
        },
    };
    match change {
        Some(change) => patch.changes.push(change),
        None => patch.ignored.push(raw.to_owned()),
    }
    Ok(())
}

/// The member ids in a `members` value: `[{"value": "…"}]` (or one such object).
pub(super) fn member_ids(value: Option<&Value>) -> Result<Vec<String>, ScimError> {
    let items: Vec<&Value> = match value {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items.iter().collect(),
        Some(one @ Value::Object(_)) => vec![one],
        Some(_) => {
            return Err(invalid(
                "members must be an array of {\"value\": id}".into(),
            ))
        }
    };
    items
        .into_iter()
        .map(|m| match field(m, "value") {
            Some(Value::String(id)) if !id.is_empty() => Ok(id.clone()),
            _ => Err(invalid(
                "each member needs a string \"value\" (its id)".into(),
            )),
        })
        .collect()
}

/// The ids a `members[value eq "…" or value eq "…"]` path selects.
fn filtered_member_ids(filter: &ValFilter, out: &mut Vec<String>) -> Result<(), ScimError> {
    match filter {
        ValFilter::Attr(AttrExp::Comparison(path, CompareOp::Eq, CompValue::Str(id)))
            if path.name.eq_ignore_ascii_case("value") =>
        {
            out.push(id.clone());
            Ok(())
        }
        ValFilter::Or(items) => items
            .as_slice()
            .iter()
            .try_for_each(|f| filtered_member_ids(f, out)),
        _ => Err(ScimError::new(
            ScimType::InvalidFilter,
            "members can be selected by value eq \"<id>\" (joined with or)",
        )),
    }
}

/// The changes a PATCH of a group asks for.
pub fn group_patch(body: &Value) -> Result<Patch<GroupChange>, ScimError> {
    patch_with(body, group_path)
}

/// Applies one operation to one attribute path of a resource kind.
type AtPath<C> = fn(&mut Patch<C>, Op, &str, Option<&Value>) -> Result<(), ScimError>;

/// Applies each operation through `at` (one attribute path at a time): an operation without
/// a path names its attributes as the keys of its value object.
fn patch_with<C>(body: &Value, at: AtPath<C>) -> Result<Patch<C>, ScimError> {
    let mut patch = Patch::default();
    for (op, path, value) in operations(body)? {
        match path {
            Some(path) => at(&mut patch, op, &path, value)?,
            None => {
                if op == Op::Remove {
                    return Err(ScimError::new(
                        ScimType::NoTarget,
                        "remove needs a \"path\"",
                    ));
                }
                let Some(Value::Object(attrs)) = value else {
                    return Err(invalid(
                        "an operation without a path needs an object \"value\"".into(),
                    ));
                };
                for (key, value) in attrs {
                    at(&mut patch, op, key, Some(value))?;
                }
            }
        }
    }
    Ok(patch)
}

fn group_path(
    patch: &mut Patch<GroupChange>,
    op: Op,
    raw: &str,
    value: Option<&Value>,
) -> Result<(), ScimError> {
    let change = match parse_path(raw)? {
        PatchPath::Attr(attr) => match core_name(&attr, CORE_GROUP) {
            None => None,
            Some((name, sub)) => match (name.as_str(), sub.as_deref()) {
                ("id", None) => Some(GroupChange::Id(id_change(op, value)?)),
                ("displayname", None) => {
                    Some(GroupChange::DisplayName(required_string(op, value, raw)?))
                }
                ("externalid", None) => {
                    Some(GroupChange::ExternalId(optional_string(op, value, raw)?))
                }
                ("members", None) => Some(match op {
                    Op::Add => GroupChange::AddMembers(member_ids(value)?),
                    Op::Replace => GroupChange::ReplaceMembers(member_ids(value)?),
                    // Entra without aadOptscim062020 names the members in `value`.
                    Op::Remove => match member_ids(value)? {
                        ids if ids.is_empty() => GroupChange::RemoveAllMembers,
                        ids => GroupChange::RemoveMembers(ids),
                    },
                }),
                _ => None,
            },
        },
        PatchPath::Value(vp) => match core_name(&vp.attr, CORE_GROUP) {
            Some((name, None)) if name == "members" => {
                if op != Op::Remove || vp.sub_attr.is_some() {
                    return Err(ScimError::new(
                        ScimType::InvalidPath,
                        "a filtered members path can only remove members",
                    ));
                }
                let mut ids = Vec::new();
                filtered_member_ids(&vp.filter, &mut ids)?;
                Some(GroupChange::RemoveMembers(ids))
            }
            _ => None,
        },
    };
    match change {
        Some(change) => patch.changes.push(change),
        None => patch.ignored.push(raw.to_owned()),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ops(ops: Value) -> Value {
        json!({"schemas": [PATCH_OP_SCHEMA], "Operations": ops})
    }

    #[test]
    fn okta_deactivates_and_renames_without_a_path() {
        let patch = user_patch(&ops(json!([
            {"op": "replace", "value": {"active": false}},
            {"op": "replace", "value": {"userName": "ada@example.com", "name": {"givenName": "Ada", "familyName": "King"}}}
        ])))
        .unwrap();
        assert_eq!(
            patch.changes,
            vec![
                UserChange::Active(Some(false)),
                // Within one value object, attributes apply in name order.
                UserChange::GivenName(Some("Ada".into())),
                UserChange::FamilyName(Some("King".into())),
                UserChange::UserName("ada@example.com".into()),
            ]
        );
        assert!(patch.ignored.is_empty());
    }

    #[test]
    fn entra_capitalised_ops_string_booleans_and_filtered_email_paths() {
        let patch = user_patch(&ops(json!([
            {"op": "Replace", "path": "active", "value": "False"},
            {"op": "Add", "path": "emails[type eq \"work\"].value", "value": "ada@example.com"},
            {"op": "Add", "path": "name.familyName", "value": "Lovelace"},
            {"op": "Replace", "path": "displayName", "value": "Ada Lovelace"},
            {"op": "Add", "path": "title", "value": "Countess"},
            {"op": "Add", "path": "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department", "value": "Maths"},
            {"op": "Replace", "path": "urn:ietf:params:scim:schemas:core:2.0:User:externalId", "value": "e-1"},
            {"op": "remove", "path": "emails[type eq \"home\"].value"}
        ])))
        .unwrap();
        assert_eq!(
            patch.changes,
            vec![
                UserChange::Active(Some(false)),
                UserChange::WorkEmail(Some("ada@example.com".into())),
                UserChange::FamilyName(Some("Lovelace".into())),
                UserChange::DisplayName(Some("Ada Lovelace".into())),
                UserChange::ExternalId(Some("e-1".into())),
            ]
        );
        assert_eq!(
            patch.ignored,
            vec![
                "title",
                "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department",
                "emails[type eq \"home\"].value"
            ]
        );
        // With aadOptscim062020, real booleans.
        let patch = user_patch(&ops(
            json!([{"op": "replace", "path": "active", "value": true}]),
        ))
        .unwrap();
        assert_eq!(patch.changes, vec![UserChange::Active(Some(true))]);
    }

    #[test]
    fn bad_user_patches_are_refused_with_their_scim_type() {
        let kind = |body: Value| user_patch(&body).unwrap_err().scim_type;
        assert_eq!(kind(json!([])), Some(ScimType::InvalidSyntax));
        assert_eq!(
            kind(json!({"Operations": []})),
            Some(ScimType::InvalidSyntax)
        );
        assert_eq!(
            kind(
                json!({"schemas": ["urn:x"], "Operations": [{"op": "add", "path": "title", "value": "x"}]})
            ),
            Some(ScimType::InvalidSyntax)
        );
        assert_eq!(
            kind(ops(json!([{"op": "merge", "path": "title"}]))),
            Some(ScimType::InvalidSyntax)
        );
        assert_eq!(
            kind(ops(
                json!([{"op": "replace", "path": "active", "value": "maybe"}])
            )),
            Some(ScimType::InvalidValue)
        );
        assert_eq!(
            kind(ops(json!([{"op": "remove", "path": "userName"}]))),
            Some(ScimType::InvalidValue)
        );
        assert_eq!(
            kind(ops(
                json!([{"op": "replace", "path": "userName", "value": 7}])
            )),
            Some(ScimType::InvalidValue)
        );
        assert_eq!(
            kind(ops(json!([{"op": "remove"}]))),
            Some(ScimType::NoTarget)
        );
        assert_eq!(
            kind(ops(
                json!([{"op": "replace", "path": "emails[type eq", "value": "x"}])
            )),
            Some(ScimType::InvalidPath)
        );
        assert_eq!(
            kind(ops(json!([{"op": "remove", "path": "id"}]))),
            Some(ScimType::Mutability)
        );
    }

    #[test]
    fn a_path_too_deep_is_refused_before_parsing() {
        let path = format!(
            "members[{}value eq \"x\"{}]",
            "(".repeat(50_000),
            ")".repeat(50_000)
        );
        let err = group_patch(&ops(json!([{"op": "remove", "path": path}]))).unwrap_err();
        assert_eq!(err.scim_type, Some(ScimType::InvalidPath));
    }

    #[test]
    fn group_members_in_every_dialect() {
        let patch = group_patch(&ops(json!([
            {"op": "Add", "path": "members", "value": [{"value": "u1"}, {"value": "u2"}]},
            {"op": "Remove", "path": "members", "value": [{"value": "u3"}]},
            {"op": "remove", "path": "members[value eq \"u4\" or value eq \"u5\"]"},
            {"op": "replace", "path": "members", "value": [{"value": "u6"}]},
            {"op": "remove", "path": "members"},
            {"op": "replace", "value": {"id": "grp_1", "displayName": "Admins"}},
            {"op": "add", "value": {"members": [{"value": "u7", "display": "Ada"}]}}
        ])))
        .unwrap();
        assert_eq!(
            patch.changes,
            vec![
                GroupChange::AddMembers(vec!["u1".into(), "u2".into()]),
                GroupChange::RemoveMembers(vec!["u3".into()]),
                GroupChange::RemoveMembers(vec!["u4".into(), "u5".into()]),
                GroupChange::ReplaceMembers(vec!["u6".into()]),
                GroupChange::RemoveAllMembers,
                GroupChange::DisplayName("Admins".into()),
                GroupChange::Id("grp_1".into()),
                GroupChange::AddMembers(vec!["u7".into()]),
            ]
        );
        let kind = |body: Value| group_patch(&body).unwrap_err().scim_type;
        assert_eq!(
            kind(ops(
                json!([{"op": "remove", "path": "members[display eq \"Ada\"]"}])
            )),
            Some(ScimType::InvalidFilter)
        );
        assert_eq!(
            kind(ops(
                json!([{"op": "add", "path": "members[value eq \"u1\"]", "value": []}])
            )),
            Some(ScimType::InvalidPath)
        );
        assert_eq!(
            kind(ops(
                json!([{"op": "add", "path": "members", "value": [{"value": 1}]}])
            )),
            Some(ScimType::InvalidValue)
        );
        assert_eq!(
            kind(ops(json!([{"op": "remove", "path": "displayName"}]))),
            Some(ScimType::InvalidValue)
        );
    }
}
