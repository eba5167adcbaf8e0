//! SCIM filters (RFC 7644 §3.4.2.2) evaluated against a resource's own SCIM representation.
//!
//! The parser is `scim_v2`'s; this evaluates its tree over the JSON a resource is answered
//! with, so a filter sees exactly what a `GET` shows. Attribute names compare
//! case-insensitively, as SCIM requires. String values compare case-insensitively too, except
//! for the attributes whose schema says `caseExact` (`id`, `externalId`, group member ids).
//! An attribute the resource does not have matches nothing (`pr` is false, `ne` is true).

use scim_v2::filter::{AttrExp, AttrPath, CompValue, CompareOp, Filter, ValFilter};
use serde_json::Value;

use super::{ScimError, ScimType};

/// Parses a `filter` query parameter; a malformed one is `400 invalidFilter`.
///
/// Identity providers also send `emails[type eq "work"].value eq "…"`, a sub-attribute after
/// a value filter, which RFC 7644's grammar allows only in PATCH paths; it means
/// `emails[type eq "work" and value eq "…"]` and is read so.
pub fn parse_filter(raw: &str) -> Result<Filter, ScimError> {
    if !within_limits(raw) {
        return Err(ScimError::new(
            ScimType::InvalidFilter,
            format!(
                "a filter may be at most {MAX_EXPRESSION} bytes long and nest ( and [ at most \
                 {MAX_NESTING} deep"
            ),
        ));
    }
    let mut text = raw.to_owned();
    // Each pass folds one `[…].sub op value`; a filter has few.
    for _ in 0..16 {
        match fold_sub_attribute(&text) {
            Some(folded) => text = folded,
            None => break,
        }
    }
    text.parse::<Filter>().map_err(|e| {
        ScimError::new(
            ScimType::InvalidFilter,
            format!("the filter {raw:?} is not a SCIM filter: {e}"),
        )
    })
}

/// Longest filter or PATCH path read, and deepest nesting of `(` and `[`: the parser
/// recurses once per level, so an unbounded one could exhaust a thread's stack. IdPs send a
/// few dozen bytes.
pub const MAX_EXPRESSION: usize = 4096;
pub const MAX_NESTING: usize = 32;

/// Whether `raw` is short and shallow enough to parse (brackets inside strings count too).
pub(super) fn within_limits(raw: &str) -> bool {
    if raw.len() > MAX_EXPRESSION {
        return false;
    }
    let (mut depth, mut deepest) = (0usize, 0usize);
    for b in raw.bytes() {
        match b {
            b'(' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b')' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest <= MAX_NESTING
}

/// Rewrites the first `attr[filter].sub op value` in `raw` as `attr[filter and sub op value]`.
fn fold_sub_attribute(raw: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b']' if bytes.get(i + 1) == Some(&b'.') => {
                let rest = &raw[i + 2..];
                let sub_len = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                    .unwrap_or(rest.len());
                let (sub, after_sub) = rest.split_at(sub_len);
                let after_sub_trimmed = after_sub.trim_start();
                let op_len = after_sub_trimmed
                    .find(|c: char| !c.is_ascii_alphabetic())
                    .unwrap_or(after_sub_trimmed.len());
                let (op, after_op) = after_sub_trimmed.split_at(op_len);
                if sub.is_empty() || op.is_empty() {
                    return None;
                }
                let (value, tail) = if op.eq_ignore_ascii_case("pr") {
                    ("", after_op)
                } else {
                    split_value(after_op.trim_start())?
                };
                let value = if value.is_empty() {
                    String::new()
                } else {
                    format!(" {value}")
                };
                return Some(format!("{} and {sub} {op}{value}]{tail}", &raw[..i]));
            }
            _ => {}
        }
    }
    None
}

/// A comparison value at the start of `text` (a JSON string, or a bare token) and the rest.
fn split_value(text: &str) -> Option<(&str, &str)> {
    if let Some(body) = text.strip_prefix('"') {
        let mut escaped = false;
        for (i, c) in body.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => return Some(text.split_at(i + 2)),
                _ => {}
            }
        }
        None
    } else {
        let end = text
            .find(|c: char| c.is_whitespace() || c == ')')
            .unwrap_or(text.len());
        (end > 0).then(|| text.split_at(end))
    }
}

/// Whether `resource` (its SCIM JSON) matches `filter`.
pub fn matches(filter: &Filter, resource: &Value) -> bool {
    match filter {
        Filter::Attr(exp) => attr_matches(exp, resource),
        Filter::ValuePath(vp) => elements(resource, &vp.attr)
            .iter()
            .any(|element| val_matches(&vp.filter, element)),
        Filter::Not(inner) => !matches(inner, resource),
        Filter::And(items) => items.as_slice().iter().all(|f| matches(f, resource)),
        Filter::Or(items) => items.as_slice().iter().any(|f| matches(f, resource)),
    }
}

/// A value-path filter, applied to one element of a multi-valued attribute.
fn val_matches(filter: &ValFilter, element: &Value) -> bool {
    match filter {
        ValFilter::Attr(exp) => attr_matches(exp, element),
        ValFilter::Not(inner) => !val_matches(inner, element),
        ValFilter::And(items) => items.as_slice().iter().all(|f| val_matches(f, element)),
        ValFilter::Or(items) => items.as_slice().iter().any(|f| val_matches(f, element)),
    }
}

fn attr_matches(exp: &AttrExp, resource: &Value) -> bool {
    match exp {
        AttrExp::Present(path) => values(resource, path).iter().any(|v| {
            !v.is_null() && v.as_str() != Some("") && v.as_array().is_none_or(|a| !a.is_empty())
        }),
        AttrExp::Comparison(path, op, expected) => {
            let found = values(resource, path);
            let exact = case_exact(path);
            match op {
                // "ne" matches when no value equals (and when the attribute is absent).
                CompareOp::Ne => !found
                    .iter()
                    .any(|v| compare(v, &CompareOp::Eq, expected, exact)),
                op => found.iter().any(|v| compare(v, op, expected, exact)),
            }
        }
    }
}

/// `id`, `externalId` and member ids are case-exact in the SCIM core schema.
fn case_exact(path: &AttrPath) -> bool {
    let name = path.name.to_ascii_lowercase();
    match path.sub_attr.as_deref() {
        None => name == "id" || name == "externalid",
        Some(sub) => (name == "members" || name == "groups") && sub.eq_ignore_ascii_case("value"),
    }
}

fn compare(actual: &Value, op: &CompareOp, expected: &CompValue, exact: bool) -> bool {
    match (actual, expected) {
        (Value::String(a), CompValue::Str(e)) => {
            let (a, e) = if exact {
                (a.clone(), e.clone())
            } else {
                (a.to_lowercase(), e.to_lowercase())
            };
            match op {
                CompareOp::Eq => a == e,
                CompareOp::Ne => a != e,
                CompareOp::Co => a.contains(&e),
                CompareOp::Sw => a.starts_with(&e),
                CompareOp::Ew => a.ends_with(&e),
                CompareOp::Gt => a > e,
                CompareOp::Ge => a >= e,
                CompareOp::Lt => a < e,
                CompareOp::Le => a <= e,
            }
        }
        (Value::Bool(a), CompValue::True) => matches!(op, CompareOp::Eq) == *a,
        (Value::Bool(a), CompValue::False) => matches!(op, CompareOp::Eq) != *a,
        (Value::Null, CompValue::Null) => matches!(op, CompareOp::Eq),
        (Value::Number(a), CompValue::Number(e)) => match (a.as_f64(), e.as_f64()) {
            (Some(a), Some(e)) => match op {
                CompareOp::Eq => a == e,
                CompareOp::Ne => a != e,
                CompareOp::Gt => a > e,
                CompareOp::Ge => a >= e,
                CompareOp::Lt => a < e,
                CompareOp::Le => a <= e,
                CompareOp::Co | CompareOp::Sw | CompareOp::Ew => false,
            },
            _ => false,
        },
        _ => false,
    }
}

/// The member of `object` named `name`, compared case-insensitively.
pub(super) fn field<'a>(object: &'a Value, name: &str) -> Option<&'a Value> {
    object
        .as_object()?
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v)
}

/// The resource's object for a schema URI prefix (`urn:…:enterprise:2.0:User:department`
/// reads the extension's object), or the resource itself for core attributes.
fn scope<'a>(resource: &'a Value, path: &AttrPath) -> Option<&'a Value> {
    match &path.uri {
        None => Some(resource),
        Some(uri)
            if uri
                .to_ascii_lowercase()
                .starts_with("urn:ietf:params:scim:schemas:core:") =>
        {
            Some(resource)
        }
        Some(uri) => field(resource, uri),
    }
}

/// The elements of a multi-valued attribute (or the one value of a single-valued one).
fn elements<'a>(resource: &'a Value, path: &AttrPath) -> Vec<&'a Value> {
    match scope(resource, path).and_then(|s| field(s, &path.name)) {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(Value::Null) | None => Vec::new(),
        Some(one) => vec![one],
    }
}

/// Every value `path` names: `emails.value` is each email's `value`.
fn values<'a>(resource: &'a Value, path: &AttrPath) -> Vec<&'a Value> {
    let top = elements(resource, path);
    match &path.sub_attr {
        None => top,
        Some(sub) => top.into_iter().filter_map(|e| field(e, sub)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user() -> Value {
        json!({
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
            "id": "usr_Abc",
            "externalId": "00u1ABC",
            "userName": "Ada.Lovelace@Example.com",
            "name": {"givenName": "Ada", "familyName": "Lovelace"},
            "displayName": "Ada Lovelace",
            "active": true,
            "emails": [
                {"value": "ada@example.com", "type": "work", "primary": true},
                {"value": "ada@home.example", "type": "home"}
            ]
        })
    }

    fn check(filter: &str) -> bool {
        matches(&parse_filter(filter).unwrap(), &user())
    }

    #[test]
    fn the_filters_idps_send_match_as_scim_says() {
        // Okta and Entra look a person up by userName, externalId or work e-mail.
        assert!(
            check(r#"userName eq "ada.lovelace@example.com""#),
            "userName is not case-exact"
        );
        assert!(
            check(r#"USERNAME Eq "Ada.Lovelace@Example.com""#),
            "attribute names neither"
        );
        assert!(check(r#"externalId eq "00u1ABC""#));
        assert!(
            !check(r#"externalId eq "00u1abc""#),
            "externalId is case-exact"
        );
        assert!(check(
            r#"emails[type eq "work"].value eq "ada@example.com""#
        ));
        assert!(!check(
            r#"emails[type eq "home"].value eq "ada@example.com""#
        ));
        assert!(check(
            r#"emails[type eq "work" and value eq "ADA@example.com"]"#
        ));
        assert!(!check(
            r#"emails[type eq "home" and value eq "ada@example.com"]"#
        ));
        assert!(check(r#"emails.value eq "ada@home.example""#));
        assert!(check(r#"name.familyName sw "love""#));
        assert!(check(r#"active eq true"#));
        assert!(!check(r#"active eq false"#));
        assert!(check(r#"userName eq "nobody" or externalId eq "00u1ABC""#));
        assert!(!check(
            r#"userName eq "nobody" and externalId eq "00u1ABC""#
        ));
        assert!(check(r#"not (userName eq "nobody")"#));
        assert!(check(r#"displayName co "lace""#));
        assert!(check(r#"title ne "x""#), "absent: ne matches");
        assert!(!check(r#"title pr"#));
        assert!(!check(r#"title eq "x""#));
        assert!(check(
            r#"urn:ietf:params:scim:schemas:core:2.0:User:userName ew "example.com""#
        ));
        assert!(check(
            r#"emails[type eq "work"].value eq "a]." or emails[type eq "work"].value pr"#
        ));
        assert!(check(
            r#"(emails[type eq "work"].value eq "ada@example.com") and active eq true"#
        ));
    }

    #[test]
    fn filters_too_long_or_too_deep_are_refused_before_parsing() {
        let deep = format!(
            "{}userName eq \"a\"{}",
            "(".repeat(100_000),
            ")".repeat(100_000)
        );
        assert_eq!(
            parse_filter(&deep).unwrap_err().scim_type,
            Some(ScimType::InvalidFilter)
        );
        let long = format!("userName eq \"{}\"", "a".repeat(MAX_EXPRESSION));
        assert!(parse_filter(&long).is_err());
        let nested = format!(
            "{}userName eq \"a\"{}",
            "(".repeat(MAX_NESTING),
            ")".repeat(MAX_NESTING)
        );
        assert!(
            parse_filter(&nested).is_ok(),
            "{MAX_NESTING} levels are fine"
        );
    }

    #[test]
    fn a_malformed_filter_is_invalid_filter() {
        for raw in [
            r#"userName eq"#,
            r#"userName xx "a""#,
            r#"(userName eq "a""#,
            "",
        ] {
            let err = parse_filter(raw).unwrap_err();
            assert_eq!(err.scim_type, Some(ScimType::InvalidFilter), "{raw}");
        }
    }
}
