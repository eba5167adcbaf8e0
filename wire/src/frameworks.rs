//! Custom frameworks (issue 47): an account's own control set, each control mapped to rule ids
//! of the frameworks its scans cover. `PUT /v1/frameworks/{framework_id}` takes a
//! [`FrameworkDocument`] as JSON or YAML; the reads answer [`CustomFramework`].

use serde::{Deserialize, Serialize};

#[cfg(feature = "openapi")]
use utoipa::ToSchema;

/// A custom framework as its author writes it. Unknown fields are refused, so a misspelt
/// field is an error rather than a control silently mapped to nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct FrameworkDocument {
    /// The framework's id; when given it must equal the id in the path (`tidemark frameworks
    /// set FILE` takes it from here). Lower-case letters, digits, `.`, `_` and `-`, starting
    /// with a letter or digit, at most 64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(min_length = 1, max_length = 64, pattern = "^[a-z0-9][a-z0-9._-]*$")
    )]
    pub id: Option<String>,
    /// What people read, at most 200 characters.
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 200))]
    pub title: String,
    /// At most 2,000 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(max_length = 2000))]
    pub description: Option<String>,
    /// 1 to 1,000 controls, ids unique.
    #[cfg_attr(feature = "openapi", schema(min_items = 1, max_items = 1000))]
    pub controls: Vec<ControlDocument>,
}

/// One control: it passes when every rule mapped to it passed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ControlDocument {
    /// Letters, digits, `.`, `_` and `-`, starting with a letter or digit, at most 64. Its
    /// section is the id up to its first dot (`AC` of `AC.1`).
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 64,
            pattern = "^[A-Za-z0-9][A-Za-z0-9._-]*$"
        )
    )]
    pub id: String,
    /// At most 200 characters.
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 200))]
    pub title: String,
    /// 1 to 100 rule ids as scans report them (`cis-aws-2.0-2.1.1`).
    #[cfg_attr(feature = "openapi", schema(min_items = 1, max_items = 100))]
    pub rules: Vec<String>,
}

/// A custom framework as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct CustomFramework {
    pub id: String,
    /// How posture names it: `custom:<id>`, so it never shares a name with a framework a
    /// scanner names.
    pub posture_name: String,
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub controls: Vec<ControlDocument>,
    /// RFC 3339.
    pub created_at: String,
    pub updated_at: String,
    /// Who set it last: a member's e-mail address or `api-key:<prefix>`.
    pub updated_by: String,
}

/// The answer to a `PUT`: the framework, and how many branches' latest scans were judged
/// against it at once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct FrameworkSet {
    pub framework: CustomFramework,
    /// `true` when it did not exist before.
    pub created: bool,
    /// Latest scans (one per branch or pull request) whose posture now includes it.
    pub judged_scans: u64,
}

/// `GET /v1/frameworks`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct FrameworkList {
    /// By id.
    pub frameworks: Vec<CustomFramework>,
}
