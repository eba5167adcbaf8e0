//! SCIM 2.0 provisioning rules (RFC 7643/7644) as plain functions: filters evaluated over a
//! resource's SCIM representation, and the PATCH dialects of the big identity providers
//! reduced to one set of changes. Storage and HTTP live in `store` and `server`.

pub mod filter;
pub mod patch;

use std::fmt;

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
