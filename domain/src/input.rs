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
        if inner.classify() != serde_json::error::Category::Data {
            return syntax(&inner);
        }
        // A shape error may come before a syntax error later in the body (`{} trailing`):
        // on this error path only, make sure the body is JSON at all.
        if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
            return syntax(&e);
        }
        let text = strip_position(&inner.to_string());
        // serde reports a missing field at its parent: name the field itself.
        let field = match (text.strip_prefix("missing field `"), path.as_str()) {
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
    if value.trim().is_empty() {
        Err(FieldError::new(field, format!("{field} must not be empty")))
    } else {
        Ok(())
    }
}

/// Checks a required text field: `min..=max` characters, no control characters.
pub fn bounded_text(field: &str, value: &str, max: usize) -> Result<(), FieldError> {
    let len = value.chars().count();
    if len == 0 {
        return Err(FieldError::new(field, format!("{field} must not be empty")));
    }
    if len > max {
        return Err(FieldError::new(
            field,
            format!("{field} must be at most {max} characters (got {len})"),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(FieldError::new(
            field,
            format!("{field} must not contain control characters"),
        ));
    }
    Ok(())
}
