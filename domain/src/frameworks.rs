//! Custom frameworks (issue 47): an account's own control set as code, each control mapped to
//! rule ids of the frameworks its scans cover. [`ValidFramework::parse`] turns an author's JSON
//! or YAML into a framework that can only be valid; [`ValidFramework::judge`] turns a scan's
//! requirements (rules) into its controls', which posture then counts like a scanned
//! framework's rules.

use std::collections::{BTreeMap, HashSet};

use serde::de::DeserializeOwned;
use tidemark_wire::frameworks::{ControlDocument, FrameworkDocument};

use crate::input::{bounded_text, parse_json, prose, FieldError, JsonError};
use crate::posture::Requirement;

/// How posture names a custom framework: this, then its id. A framework a scan names with
/// this prefix is no framework of its posture, so the two never share a name.
pub const POSTURE_PREFIX: &str = "custom:";
/// The largest document taken.
pub const MAX_BYTES: usize = 256 * 1024;
const MAX_ID: usize = 64;
const MAX_TITLE: usize = 200;
const MAX_DESCRIPTION: usize = 2_000;
const MAX_CONTROLS: usize = 1_000;
const MAX_RULES: usize = 100;
const MAX_RULE_ID: usize = 255;

/// What the document is written in (from its Content-Type, or a file's extension).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Yaml,
}

/// Why a document is not a framework: not JSON or YAML at all (400 `invalid_json`), or not
/// the right shape or values (422 `invalid_request`, naming the field).
pub type FrameworkError = JsonError;

/// Whether `id` can name a custom framework: 1 to 64 of `a-z`, `0-9`, `.`, `_`, `-`, starting
/// with a letter or digit.
pub fn is_framework_id(id: &str) -> bool {
    id.len() <= MAX_ID
        && id
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
}

fn is_control_id(id: &str) -> bool {
    id.len() <= MAX_ID
        && id.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// A custom framework that passed every rule below; its document's `id` is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidFramework {
    document: FrameworkDocument,
}

fn shape(field: String, message: String) -> FrameworkError {
    JsonError::Shape(FieldError { field, message })
}

fn parse_yaml<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, FrameworkError> {
    // Syntax first (400), then shape (422), naming the field's path.
    let value: serde_yaml_ng::Value = serde_yaml_ng::from_slice(bytes)
        .map_err(|e| JsonError::Syntax(format!("The body is not valid YAML: {e}")))?;
    if !value.is_mapping() {
        return Err(shape(".".into(), "the document must be a mapping".into()));
    }
    serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        let text = err.into_inner().to_string();
        let message = if path == "." {
            text
        } else {
            format!("{path}: {text}")
        };
        shape(path, message)
    })
}

/// The `id` a document declares, when it reads as a mapping with a string `id` (the
/// dashboard's upload takes the framework's id from there, as `tidemark frameworks set` does).
pub fn declared_id(bytes: &[u8], format: Format) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Id {
        id: Option<String>,
    }
    let read: Option<Id> = match format {
        Format::Json => serde_json::from_slice(bytes).ok(),
        Format::Yaml => serde_yaml_ng::from_slice(bytes).ok(),
    };
    read.and_then(|d| d.id)
}

impl ValidFramework {
    /// The framework `path_id` from `bytes`. Unknown fields, a missing or overlong title, no
    /// controls, a control id given twice, a control without rules and an `id` that differs
    /// from `path_id` are refused.
    pub fn parse(path_id: &str, bytes: &[u8], format: Format) -> Result<Self, FrameworkError> {
        if bytes.len() > MAX_BYTES {
            return Err(shape(
                ".".into(),
                format!("the document is larger than {} KiB", MAX_BYTES / 1024),
            ));
        }
        let mut document: FrameworkDocument = match format {
            Format::Json => parse_json(bytes)?,
            Format::Yaml => parse_yaml(bytes)?,
        };
        if !is_framework_id(path_id) {
            return Err(shape(
                "framework_id".into(),
                format!(
                    "a framework id is 1 to {MAX_ID} of a-z, 0-9, '.', '_' and '-', starting \
                     with a letter or digit; {path_id:?} is not"
                ),
            ));
        }
        if let Some(id) = &document.id {
            if id != path_id {
                return Err(shape(
                    "id".into(),
                    format!("id: the document says {id:?}, the path {path_id:?}"),
                ));
            }
        }
        document.id = Some(path_id.to_owned());
        check(&document)?;
        Ok(ValidFramework { document })
    }

    /// A framework as stored (by [`ValidFramework::stored`]): it was valid when it was set.
    pub fn from_stored(json: &str) -> Option<Self> {
        let document: FrameworkDocument = serde_json::from_str(json).ok()?;
        document.id.as_deref().filter(|id| is_framework_id(id))?;
        Some(ValidFramework { document })
    }

    /// The document as stored: JSON, with its id.
    pub fn stored(&self) -> String {
        serde_json::to_string(&self.document).unwrap_or_default()
    }

    pub fn id(&self) -> &str {
        self.document.id.as_deref().unwrap_or_default()
    }

    pub fn document(&self) -> &FrameworkDocument {
        &self.document
    }

    /// `custom:<id>`.
    pub fn posture_name(&self) -> String {
        format!("{POSTURE_PREFIX}{}", self.id())
    }

    /// Each control with its requirement judged from a scan's rules, in the document's order.
    pub fn judge_controls<'s>(
        &'s self,
        rules: &'s BTreeMap<&str, Requirement>,
    ) -> impl Iterator<Item = (&'s ControlDocument, Requirement)> + 's {
        self.document.controls.iter().map(move |c| {
            let mapped = c.rules.iter().map(|r| rules.get(r.as_str()).copied());
            (c, control_requirement(mapped))
        })
    }

    /// Its controls judged from a scan's requirements, each named as posture counts a rule:
    /// `custom:<id>-<control id>`, so its section is the control id up to its first dot.
    pub fn judge(&self, rules: &BTreeMap<&str, Requirement>) -> BTreeMap<String, Requirement> {
        let name = self.posture_name();
        self.judge_controls(rules)
            .map(|(c, r)| (format!("{name}-{}", c.id), r))
            .collect()
    }
}

/// A control from its mapped rules' requirements (`None`: the scan did not check that rule):
/// failed when one failed; else triaged when one is set aside; passed when every one passed;
/// otherwise not evaluated.
pub fn control_requirement(mapped: impl IntoIterator<Item = Option<Requirement>>) -> Requirement {
    let (mut failed, mut triaged, mut all_passed) = (false, false, true);
    for r in mapped {
        match r {
            Some(Requirement::Failed) => failed = true,
            Some(Requirement::Triaged) => triaged = true,
            Some(Requirement::Passed) => {}
            Some(Requirement::NotEvaluated) | None => all_passed = false,
        }
    }
    if failed {
        Requirement::Failed
    } else if triaged {
        Requirement::Triaged
    } else if all_passed {
        Requirement::Passed
    } else {
        Requirement::NotEvaluated
    }
}

fn check(document: &FrameworkDocument) -> Result<(), FrameworkError> {
    let field = |e: FieldError| JsonError::Shape(e);
    bounded_text("title", &document.title, MAX_TITLE).map_err(field)?;
    if let Some(description) = &document.description {
        prose("description", description, MAX_DESCRIPTION).map_err(field)?;
    }
    if document.controls.is_empty() || document.controls.len() > MAX_CONTROLS {
        return Err(shape(
            "controls".into(),
            format!(
                "controls: 1 to {MAX_CONTROLS} controls, not {}",
                document.controls.len()
            ),
        ));
    }
    let mut ids = HashSet::new();
    for (i, control) in document.controls.iter().enumerate() {
        check_control(i, control)?;
        if !ids.insert(control.id.as_str()) {
            return Err(shape(
                format!("controls[{i}].id"),
                format!(
                    "controls[{i}].id: {:?} is given to an earlier control",
                    control.id
                ),
            ));
        }
    }
    Ok(())
}

fn check_control(i: usize, control: &ControlDocument) -> Result<(), FrameworkError> {
    if !is_control_id(&control.id) {
        return Err(shape(
            format!("controls[{i}].id"),
            format!(
                "controls[{i}].id: 1 to {MAX_ID} of letters, digits, '.', '_' and '-', \
                 starting with a letter or digit; {:?} is not",
                control.id
            ),
        ));
    }
    bounded_text(&format!("controls[{i}].title"), &control.title, MAX_TITLE)
        .map_err(JsonError::Shape)?;
    if control.rules.is_empty() || control.rules.len() > MAX_RULES {
        return Err(shape(
            format!("controls[{i}].rules"),
            format!(
                "controls[{i}].rules: 1 to {MAX_RULES} rule ids, not {}",
                control.rules.len()
            ),
        ));
    }
    let mut seen = HashSet::new();
    for (j, rule) in control.rules.iter().enumerate() {
        let name = format!("controls[{i}].rules[{j}]");
        bounded_text(&name, rule, MAX_RULE_ID).map_err(JsonError::Shape)?;
        if !seen.insert(rule.as_str()) {
            return Err(shape(
                name.clone(),
                format!("{name}: {rule:?} is listed twice"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use Requirement::*;

    const YAML: &str = "title: Acme baseline\n\
        controls:\n\
        \x20 - id: AC.1\n\
        \x20   title: Storage is encrypted\n\
        \x20   rules: [cis-aws-2.0-2.1.1, soc2-cc6.1]\n\
        \x20 - id: AC.2\n\
        \x20   title: No public buckets\n\
        \x20   rules: [cis-aws-2.0-2.1.5]\n";

    fn refused(id: &str, body: &str, format: Format) -> String {
        match ValidFramework::parse(id, body.as_bytes(), format) {
            Err(JsonError::Shape(e)) => e.message,
            other => panic!("{body}: {other:?}"),
        }
    }

    #[test]
    fn a_document_in_yaml_or_json_is_the_same_framework() {
        let yaml = ValidFramework::parse("acme", YAML.as_bytes(), Format::Yaml).unwrap();
        let json = serde_json::to_string(yaml.document()).unwrap();
        let again = ValidFramework::parse("acme", json.as_bytes(), Format::Json).unwrap();
        assert_eq!(yaml, again);
        assert_eq!(yaml.id(), "acme");
        assert_eq!(yaml.posture_name(), "custom:acme");
        assert_eq!(ValidFramework::from_stored(&yaml.stored()), Some(yaml));
    }

    #[test]
    fn what_is_not_a_framework_is_refused_naming_the_field() {
        let unknown = YAML.replace("title: Acme", "titel: x\ntitle: Acme");
        assert!(refused("acme", &unknown, Format::Yaml).contains("unknown field `titel`"));
        let control_field = YAML.replace("    rules: [cis-aws-2.0-2.1.5]", "    rule: [x]");
        assert!(refused("acme", &control_field, Format::Yaml).contains("controls[1]"));
        assert!(refused("Acme", YAML, Format::Yaml).contains("framework id"));
        let other_id = format!("id: other\n{YAML}");
        assert!(refused("acme", &other_id, Format::Yaml).contains("the path \"acme\""));
        let twice = YAML.replace("id: AC.2", "id: AC.1");
        assert!(refused("acme", &twice, Format::Yaml).contains("earlier control"));
        let no_rules = r#"{"title": "t", "controls": [{"id": "a", "title": "t", "rules": []}]}"#;
        assert!(refused("acme", no_rules, Format::Json).contains("controls[0].rules"));
        let none = r#"{"title": "t", "controls": []}"#;
        assert!(refused("acme", none, Format::Json).contains("1 to 1000 controls"));
        let bad_control =
            r#"{"title": "t", "controls": [{"id": "a b", "title": "t", "rules": ["r"]}]}"#;
        assert!(refused("acme", bad_control, Format::Json).contains("controls[0].id"));
        let rule_twice =
            r#"{"title": "t", "controls": [{"id": "a", "title": "t", "rules": ["r", "r"]}]}"#;
        assert!(refused("acme", rule_twice, Format::Json).contains("listed twice"));
        assert!(refused("acme", "- a\n- b\n", Format::Yaml).contains("mapping"));
        assert!(matches!(
            ValidFramework::parse("acme", b"title: [unclosed", Format::Yaml),
            Err(JsonError::Syntax(_))
        ));
        assert!(matches!(
            ValidFramework::parse("acme", b"{", Format::Json),
            Err(JsonError::Syntax(_))
        ));
        let big = vec![b' '; MAX_BYTES + 1];
        assert!(ValidFramework::parse("acme", &big, Format::Json).is_err());
    }

    #[test]
    fn a_control_passes_only_when_every_mapped_rule_passed() {
        assert_eq!(control_requirement([Some(Passed), Some(Passed)]), Passed);
        assert_eq!(control_requirement([Some(Passed), Some(Failed)]), Failed);
        assert_eq!(control_requirement([Some(Triaged), Some(Failed)]), Failed);
        assert_eq!(control_requirement([Some(Triaged), Some(Passed)]), Triaged);
        assert_eq!(control_requirement([Some(Passed), None]), NotEvaluated);
        assert_eq!(control_requirement([Some(NotEvaluated)]), NotEvaluated);
        assert_eq!(control_requirement([None, Some(Triaged)]), Triaged);
    }

    #[test]
    fn controls_are_counted_by_section_like_rules() {
        let framework = ValidFramework::parse("acme", YAML.as_bytes(), Format::Yaml).unwrap();
        let rules: BTreeMap<&str, Requirement> = [
            ("cis-aws-2.0-2.1.1", Passed),
            ("soc2-cc6.1", Passed),
            ("cis-aws-2.0-2.1.5", Failed),
        ]
        .into_iter()
        .collect();
        let controls = framework.judge(&rules);
        assert_eq!(controls["custom:acme-AC.1"], Passed);
        assert_eq!(controls["custom:acme-AC.2"], Failed);
        let borrowed: BTreeMap<&str, Requirement> =
            controls.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        let posture = crate::posture::posture(&[framework.posture_name()], &borrowed);
        assert_eq!((posture[0].tally.passed, posture[0].tally.failed), (1, 1));
        assert_eq!(posture[0].sections.len(), 1);
        assert_eq!(posture[0].sections[0].0, "AC");
    }

    #[test]
    fn a_declared_id_is_read_from_either_format() {
        assert_eq!(
            declared_id(b"id: acme\ntitle: x\n", Format::Yaml).as_deref(),
            Some("acme")
        );
        assert_eq!(
            declared_id(br#"{"id":"b","x":1}"#, Format::Json).as_deref(),
            Some("b")
        );
        assert_eq!(declared_id(b"title: x\n", Format::Yaml), None);
        assert_eq!(declared_id(b"[1, 2]", Format::Json), None);
        assert_eq!(declared_id(b"id: [1]", Format::Yaml), None);
    }
}
