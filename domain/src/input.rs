//! The general pieces every input is parsed with: a field error that names its field, JSON
//! parsing that tells syntax from shape, and the common text rules.

use serde::de::DeserializeOwned;

/// A field that is missing, of the wrong type or out of range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: &str, message: String) -> Self {
        Self {
            field: field.to_owned(),
            message,
        }
    }
}

/// Why a JSON body could not become the request type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonError {
    /// Not JSON at all (400 `invalid_json`).
    Syntax(String),
    /// JSON, but not the right shape (422 `invalid_request`).
    Shape(FieldError),
}

/// Deserialises `bytes` as `T`, telling syntax errors apart from shape errors, and naming the
/// path of the offending field (`findings[3].severity`).
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, JsonError> {
    let syntax =
        |e: &serde_json::Error| JsonError::Syntax(format!("The body is not valid JSON: {e}"));
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        // A number JSON allows but no field can hold (`1e400`) is the field's fault, not
        // the syntax's: serde_json reports it as a syntax error.
        let out_of_range = inner.to_string().starts_with("number out of range");
        if inner.classify() != serde_json::error::Category::Data && !out_of_range {
            return syntax(&inner);
        }
        // A shape error may come before a syntax error later in the body (`{} trailing`):
        // on this error path only, make sure the body is JSON at all.
        if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
            return syntax(&e);
        }
        let text = strip_position(&inner.to_string());
        // serde reports a missing or repeated field at its parent: name the field itself.
        let named = text
            .strip_prefix("missing field `")
            .or_else(|| text.strip_prefix("duplicate field `"));
        let field = match (named, path.as_str()) {
            (Some(rest), ".") => rest.trim_end_matches('`').to_owned(),
            (Some(rest), parent) => format!("{parent}.{}", rest.trim_end_matches('`')),
            (None, p) => p.to_owned(),
        };
        let message = if path == "." {
            text
        } else {
            format!("{path}: {text}")
        };
        JsonError::Shape(FieldError { field, message })
    })?;
    // Anything after the value (`{} trailing`) makes the body not JSON.
    de.end().map_err(|e| syntax(&e))?;
    // Every request body is an object: serde would also take a struct's fields from an array
    // (`[null, null]`), which no client means.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(JsonError::Shape(FieldError::new(
            ".",
            "the body must be a JSON object".into(),
        )));
    }
    Ok(value)
}

/// serde_json appends " at line 1 column 42"; the path already says where.
fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_owned(),
        None => msg.to_owned(),
    }
}

/// Checks that a required text field is not blank.
pub fn non_empty(field: &str, value: &str) -> Result<(), FieldError> {
    non_blank_at(|| field.to_owned(), value)
}

/// Checks a required one-line text field: 1 to `max` characters, no control characters.
pub fn bounded_text(field: &str, value: &str, max: usize) -> Result<(), FieldError> {
    line_at(|| field.to_owned(), value, max)
}

/// Checks a free-text field: at most `max` characters, possibly empty; tab and line breaks
/// (LF, CR) are the only control characters allowed.
pub fn prose(field: &str, value: &str, max: usize) -> Result<(), FieldError> {
    prose_at(|| field.to_owned(), value, max)
}

/// [`non_empty`] for a field whose name is only worth building when it is wrong (one of
/// 50,000 findings).
pub fn non_blank_at(field: impl FnOnce() -> String, value: &str) -> Result<(), FieldError> {
    if value.trim().is_empty() {
        let field = field();
        return Err(FieldError {
            message: format!("{field} must not be empty"),
            field,
        });
    }
    Ok(())
}

/// [`bounded_text`] with a lazily built field name.
pub fn line_at(field: impl FnOnce() -> String, value: &str, max: usize) -> Result<(), FieldError> {
    if value.is_empty() {
        let field = field();
        return Err(FieldError {
            message: format!("{field} must not be empty"),
            field,
        });
    }
    checked_text(field, value, max, |_| false)
}

/// [`prose`] with a lazily built field name.
pub fn prose_at(field: impl FnOnce() -> String, value: &str, max: usize) -> Result<(), FieldError> {
    checked_text(field, value, max, |c| matches!(c, '\t' | '\n' | '\r'))
}

/// Length in characters and control characters: one rule on both databases (PostgreSQL
/// cannot store NUL in text at all; SQLite could, and would then hand it to every reader).
fn checked_text(
    field: impl FnOnce() -> String,
    value: &str,
    max: usize,
    allowed_control: impl Fn(char) -> bool,
) -> Result<(), FieldError> {
    // Bytes bound characters from above: only long values need counting.
    let len = if value.len() > max {
        value.chars().count()
    } else {
        0
    };
    if len > max {
        let field = field();
        return Err(FieldError {
            message: format!("{field} must be at most {max} characters (got {len})"),
            field,
        });
    }
    if value.chars().any(|c| c.is_control() && !allowed_control(c)) {
        let what = if value.contains('\0') {
            "NUL or other control characters"
        } else {
            "control characters"
        };
        let field = field();
        return Err(FieldError {
            message: format!("{field} must not contain {what}"),
            field,
        });
    }
    Ok(())
}

/// Rows to skip for the 0-based `page` of `size` rows: a negative page is the first, and a
/// page too far to count lies past any end (it saturates, never overflows).
pub fn page_offset(page: i64, size: i64) -> i64 {
    page.max(0).saturating_mul(size.max(0))
}

/// A search or filter value from a URL: control characters dropped, at most `max`
/// characters; blank means none.
pub fn query_text(value: Option<String>, max: usize) -> Option<String> {
    let value = value?;
    let cleaned: String = value
        .chars()
        .filter(|c| !c.is_control())
        .take(max)
        .collect();
    (!cleaned.trim().is_empty()).then_some(cleaned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_never_overflow() {
        assert_eq!(page_offset(-5, 50), 0);
        assert_eq!(page_offset(2, 50), 100);
        assert_eq!(page_offset(i64::MAX, 50), i64::MAX);
        assert_eq!(page_offset(i64::MIN, 50), 0);
    }

    #[test]
    fn query_text_is_bounded_and_clean() {
        assert_eq!(query_text(None, 10), None);
        assert_eq!(query_text(Some("  ".into()), 10), None);
        assert_eq!(
            query_text(Some("a\u{0}b\nc".into()), 10).as_deref(),
            Some("abc")
        );
        assert_eq!(
            query_text(Some("é".repeat(20)), 5).as_deref(),
            Some("ééééé")
        );
    }

    #[test]
    fn a_body_is_an_object_never_an_array_taken_for_one() {
        #[derive(serde::Deserialize, Debug)]
        struct Both {
            #[allow(dead_code)]
            a: Option<u8>,
            #[allow(dead_code)]
            b: Option<u8>,
        }
        assert!(parse_json::<Both>(b" {\"a\": 1}").is_ok());
        match parse_json::<Both>(b"[null, null]") {
            Err(JsonError::Shape(e)) => assert_eq!(e.message, "the body must be a JSON object"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse_json::<Both>(b"[null"),
            Err(JsonError::Syntax(_))
        ));
    }

    #[test]
    fn text_rules() {
        assert!(bounded_text("f", "", 3).is_err());
        assert!(bounded_text("f", "abc", 3).is_ok());
        assert!(bounded_text("f", "abcd", 3).is_err());
        assert!(bounded_text("f", "a\tb", 3).is_err());
        assert!(prose("f", "", 3).is_ok());
        assert!(prose("f", "a\tb", 3).is_ok());
        assert!(prose("f", "a\u{0}", 3).is_err());
        assert!(non_empty("f", " ").is_err());
    }
}
