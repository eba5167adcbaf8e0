//! Framework catalogues: every requirement of a framework, with its title, description and
//! section, whether or not a scan evaluated it. The vendor publishes one per framework,
//! written as Prowler's compliance-framework JSON (`Framework`, `Version`, `Provider`,
//! `Requirements[]` with `Id`, `Name`, `Description`, `Attributes[]`, `Checks[]`), read as is,
//! so a vendor can start from Prowler's published catalogues.
//!
//! The mapping to Tidemark's rules: a requirement `Id` of framework `F` is the rule `F-Id`
//! (`2.1.4` of `cis-aws-2.0` is `cis-aws-2.0-2.1.4`), the way posture splits a rule id. `F` is
//! given by the publisher, or made from the document: `Framework`, `Provider` and `Version`
//! lower-cased and joined by dashes (Prowler's `cis_2.0_aws.json` is `cis-aws-2.0`).

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::input::{line_at, non_blank_at, parse_json, prose_at, FieldError, JsonError};
use tidemark_wire::admin::{ProwlerCatalogue, ProwlerRequirement};

/// The largest document taken (Prowler's largest catalogues are about 1 MiB).
pub const MAX_BYTES: usize = 8 * 1024 * 1024;
// The limits `ProwlerCatalogue`'s schema states: the two must say the same.
const MAX_REQUIREMENTS: usize = 5_000;
const MAX_ID: usize = 64;
const MAX_FRAMEWORK: usize = 300;
const MAX_VERSION: usize = 100;
const MAX_TITLE: usize = 1_000;
const MAX_DESCRIPTION: usize = 20_000;
const MAX_SECTION: usize = 300;
const MAX_CHECKS: usize = 200;
const MAX_CHECK: usize = 200;
/// The attributes read, each text or null, with its limit and whether it may span lines.
const ATTRIBUTES: [(&str, usize, bool); 4] = [
    ("Section", MAX_SECTION, false),
    ("Description", MAX_DESCRIPTION, true),
    ("Profile", MAX_SECTION, false),
    ("AssessmentStatus", MAX_VERSION, false),
];

/// A catalogue that passed every rule: ids unique and usable in a rule id, text bounded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Catalogue {
    /// Tidemark's framework id (`cis-aws-2.0`).
    pub framework: String,
    /// What people read: `CIS 2.0 (AWS)`, or the document's `Name`.
    pub name: String,
    pub version: String,
    pub provider: Option<String>,
    pub description: Option<String>,
    /// In the document's order.
    pub requirements: Vec<CatalogueRequirement>,
}

/// One requirement of a catalogue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogueRequirement {
    /// The document's `Id` (`2.1.4`).
    pub number: String,
    /// The Tidemark rule it is (`cis-aws-2.0-2.1.4`).
    pub rule_id: String,
    /// `Name`, or else `Description` (CIS documents put the title there).
    pub title: String,
    /// The first attribute's `Description` when it says more than the title, else the
    /// requirement's `Description` when the title came from `Name`.
    pub description: Option<String>,
    /// The first attribute's `Section`, else the id up to its first dot (posture's rule).
    pub section: String,
    /// The first attribute's `Profile` (`Level 1`).
    pub profile: Option<String>,
    /// `AssessmentStatus: Manual`: no scan can evaluate it.
    pub manual: bool,
    /// Prowler's check names, kept for the CSV's `CHECKID`.
    pub checks: Vec<String>,
}

/// `Framework-Provider-Version`, lower-cased, spaces and underscores as dashes.
pub fn default_framework_id(framework: &str, provider: Option<&str>, version: &str) -> String {
    [Some(framework), provider, Some(version)]
        .into_iter()
        .flatten()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-")
        .to_lowercase()
        .replace([' ', '_'], "-")
}

/// Whether `id` can name a scanned framework: 1 to 64 of `a-z`, `0-9`, `.`, `_`, `-`,
/// starting with a letter or digit (as a custom framework's).
pub fn is_framework_id(id: &str) -> bool {
    crate::frameworks::is_framework_id(id)
}

fn shape(field: impl Into<String>, message: String) -> JsonError {
    JsonError::Shape(FieldError {
        field: field.into(),
        message,
    })
}

fn field(e: FieldError) -> JsonError {
    JsonError::Shape(e)
}

/// An optional one-line text: may be empty, no control characters, at most `max`.
fn optional_line(at: &str, text: Option<&str>, max: usize) -> Result<(), JsonError> {
    match text {
        Some(t) if !t.is_empty() => line_at(|| at.to_owned(), t, max).map_err(field),
        _ => Ok(()),
    }
}

/// Every rule of the document's schema that serde has not already enforced, on the text as
/// sent (trimmed only afterwards), so what the schema accepts is taken and nothing else.
fn check_document(doc: &ProwlerCatalogue) -> Result<(), JsonError> {
    non_blank_at(|| "Framework".into(), &doc.framework).map_err(field)?;
    line_at(|| "Framework".into(), &doc.framework, MAX_FRAMEWORK).map_err(field)?;
    optional_line("Name", doc.name.as_deref(), MAX_FRAMEWORK)?;
    optional_line("Version", Some(&doc.version), MAX_VERSION)?;
    optional_line("Provider", doc.provider.as_deref(), MAX_VERSION)?;
    if let Some(d) = &doc.description {
        prose_at(|| "Description".into(), d, MAX_DESCRIPTION).map_err(field)?;
    }
    if doc.requirements.is_empty() || doc.requirements.len() > MAX_REQUIREMENTS {
        return Err(shape(
            "Requirements",
            format!(
                "Requirements: 1 to {MAX_REQUIREMENTS} requirements, not {}",
                doc.requirements.len()
            ),
        ));
    }
    for (i, r) in doc.requirements.iter().enumerate() {
        check_requirement(i, r)?;
    }
    Ok(())
}

fn check_requirement(i: usize, r: &ProwlerRequirement) -> Result<(), JsonError> {
    let at = |field: &str| format!("Requirements[{i}].{field}");
    let usable = !r.id.is_empty()
        && r.id.len() <= MAX_ID
        && r.id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if !usable {
        return Err(shape(
            at("Id"),
            format!(
                "{}: 1 to {MAX_ID} of letters, digits, '.', '_' and '-' (it becomes part of a \
                 rule id), not {:?}",
                at("Id"),
                r.id
            ),
        ));
    }
    optional_line(&at("Name"), r.name.as_deref(), MAX_TITLE)?;
    if let Some(d) = &r.description {
        prose_at(|| at("Description"), d, MAX_DESCRIPTION).map_err(field)?;
    }
    if r.checks.len() > MAX_CHECKS {
        return Err(shape(
            at("Checks"),
            format!("{}: at most {MAX_CHECKS} checks", at("Checks")),
        ));
    }
    for (j, check) in r.checks.iter().enumerate() {
        line_at(|| at(&format!("Checks[{j}]")), check, MAX_CHECK).map_err(field)?;
    }
    for (j, attributes) in r.attributes.iter().enumerate() {
        for (key, max, lines) in ATTRIBUTES {
            let place = || at(&format!("Attributes[{j}].{key}"));
            match attributes.get(key) {
                None | Some(serde_json::Value::Null) => {}
                Some(serde_json::Value::String(t)) if t.is_empty() => {}
                Some(serde_json::Value::String(t)) if lines => {
                    prose_at(place, t, max).map_err(field)?
                }
                Some(serde_json::Value::String(t)) => line_at(place, t, max).map_err(field)?,
                Some(_) => {
                    let place = place();
                    return Err(shape(place.clone(), format!("{place}: must be text")));
                }
            }
        }
    }
    Ok(())
}

/// A title at most [`MAX_TITLE`] characters: a CIS requirement is titled by its
/// `Description`, which may run longer (the whole text stays the description).
fn headline(text: &str) -> (String, bool) {
    if text.chars().count() <= MAX_TITLE {
        return (text.to_owned(), false);
    }
    let mut cut: String = text.chars().take(MAX_TITLE - 1).collect();
    cut.push('…');
    (cut, true)
}

fn text_attribute(
    attributes: &serde_json::Map<String, serde_json::Value>,
    key: &str,
) -> Option<String> {
    attributes
        .get(key)
        .and_then(|v| v.as_str())
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

impl Catalogue {
    /// The catalogue in `bytes` (Prowler's JSON) as framework `framework` (none: made from
    /// the document). Refuses what is not JSON (`Syntax`) and a document of the wrong shape,
    /// an id given twice, an id that cannot be part of a rule id, or overlong text (`Shape`,
    /// naming the field's path: `Requirements[3].Id`).
    pub fn parse_prowler(bytes: &[u8], framework: Option<&str>) -> Result<Catalogue, JsonError> {
        if bytes.len() > MAX_BYTES {
            return Err(shape(
                ".",
                format!(
                    "the document is larger than {} MiB",
                    MAX_BYTES / 1024 / 1024
                ),
            ));
        }
        let doc: ProwlerCatalogue = parse_json(bytes)?;
        check_document(&doc)?;
        let framework = match framework {
            Some(f) => f.trim().to_owned(),
            None => default_framework_id(&doc.framework, doc.provider.as_deref(), &doc.version),
        };
        if !is_framework_id(&framework) {
            return Err(shape(
                "framework",
                format!(
                    "framework: {framework:?} cannot name a framework (1 to 64 of a-z, 0-9, '.', \
                     '_' and '-', starting with a letter or digit); give one explicitly"
                ),
            ));
        }
        let mut seen = HashSet::new();
        let mut requirements = Vec::with_capacity(doc.requirements.len());
        for (i, r) in doc.requirements.into_iter().enumerate() {
            requirements.push(requirement(i, r, &framework, &mut seen)?);
        }
        let name = match doc.name.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
            Some(name) => name.to_owned(),
            None => {
                let base = format!("{} {}", doc.framework.trim(), doc.version.trim());
                match doc
                    .provider
                    .as_deref()
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                {
                    Some(p) => format!("{} ({p})", base.trim()),
                    None => base.trim().to_owned(),
                }
            }
        };
        Ok(Catalogue {
            framework,
            name,
            version: doc.version.trim().to_owned(),
            provider: doc
                .provider
                .map(|p| p.trim().to_owned())
                .filter(|p| !p.is_empty()),
            description: doc.description.filter(|d| !d.trim().is_empty()),
            requirements,
        })
    }

    /// How many requirements no scan can evaluate (`AssessmentStatus: Manual`).
    pub fn manual(&self) -> usize {
        self.requirements.iter().filter(|r| r.manual).count()
    }

    /// The distinct sections, in the document's order.
    pub fn sections(&self) -> Vec<&str> {
        let mut seen = HashSet::new();
        self.requirements
            .iter()
            .map(|r| r.section.as_str())
            .filter(|s| seen.insert(*s))
            .collect()
    }
}

fn requirement(
    i: usize,
    r: ProwlerRequirement,
    framework: &str,
    seen: &mut HashSet<String>,
) -> Result<CatalogueRequirement, JsonError> {
    let at = |field: &str| format!("Requirements[{i}].{field}");
    let number = r.id.clone();
    if !seen.insert(number.clone()) {
        return Err(shape(
            at("Id"),
            format!("{}: {number:?} is given twice", at("Id")),
        ));
    }
    let first = r.attributes.first();
    let attr = |key: &str| first.and_then(|a| text_attribute(a, key));
    let own_description = r
        .description
        .as_deref()
        .map(str::trim)
        .filter(|d| !d.is_empty());
    let name = r.name.as_deref().map(str::trim).filter(|n| !n.is_empty());
    let (title, shortened) = headline(name.or(own_description).unwrap_or(number.as_str()));
    let description = attr("Description").filter(|d| *d != title).or_else(|| {
        (name.is_some() || shortened)
            .then_some(own_description)
            .flatten()
            .map(str::to_owned)
    });
    let section = attr("Section").unwrap_or_else(|| crate::posture::section_of(&number).to_owned());
    Ok(CatalogueRequirement {
        rule_id: format!("{framework}-{number}"),
        manual: attr("AssessmentStatus").is_some_and(|s| s.eq_ignore_ascii_case("manual")),
        profile: attr("Profile"),
        number,
        title,
        description,
        section,
        checks: r.checks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two requirements as Prowler writes CIS (no `Name`: the title is `Description`) and one
    /// as it writes ENS (a `Name`, no `Section`), with the extra keys Prowler adds.
    const DOC: &str = r#"{
      "Framework": "CIS", "Version": "2.0", "Provider": "AWS",
      "Description": "The CIS Amazon Web Services Foundations Benchmark",
      "Requirements": [
        {"Id": "1.1", "Description": "Maintain current contact details",
         "Checks": ["account_maintain_current_contact_details"],
         "Attributes": [{"Section": "1. Identity and Access Management", "Profile": "Level 1",
           "AssessmentStatus": "Manual", "Description": "Ensure contact email and telephone details are current.",
           "RationaleStatement": "x", "References": "https://example.com"}]},
        {"Id": "2.1.4", "Description": "Ensure that S3 Buckets are configured with 'Block public access'",
         "Checks": ["s3_bucket_level_public_access_block", "s3_account_level_public_access_blocks"],
         "Attributes": [{"Section": "2.1. Simple Storage Service (S3)", "Profile": "Level 1",
           "AssessmentStatus": "Automated", "Description": "Amazon S3 provides Block public access."}]},
        {"Id": "op.acc.1", "Name": "Identification", "Description": "Users are identified.",
         "Attributes": [{"IdGrupoControl": "op.acc", "Marco": "operacional"}], "Checks": []}
      ]
    }"#;

    #[test]
    fn prowler_documents_are_read_as_they_are() {
        let c = Catalogue::parse_prowler(DOC.as_bytes(), None).unwrap();
        assert_eq!(c.framework, "cis-aws-2.0");
        assert_eq!(c.name, "CIS 2.0 (AWS)");
        assert_eq!(c.requirements.len(), 3);
        let r = &c.requirements[1];
        assert_eq!(r.rule_id, "cis-aws-2.0-2.1.4");
        assert_eq!(
            r.title,
            "Ensure that S3 Buckets are configured with 'Block public access'"
        );
        assert_eq!(
            r.description.as_deref(),
            Some("Amazon S3 provides Block public access.")
        );
        assert_eq!(r.section, "2.1. Simple Storage Service (S3)");
        assert_eq!(r.checks.len(), 2);
        assert!(!r.manual);
        assert!(c.requirements[0].manual);
        assert_eq!(c.manual(), 1);
        let ens = &c.requirements[2];
        assert_eq!(
            (ens.title.as_str(), ens.description.as_deref()),
            ("Identification", Some("Users are identified."))
        );
        assert_eq!(ens.section, "op", "no Section: the id up to its first dot");
        assert_eq!(
            c.sections(),
            [
                "1. Identity and Access Management",
                "2.1. Simple Storage Service (S3)",
                "op"
            ]
        );
    }

    #[test]
    fn the_framework_id_can_be_given() {
        let c = Catalogue::parse_prowler(DOC.as_bytes(), Some("cis-aws")).unwrap();
        assert_eq!(c.requirements[0].rule_id, "cis-aws-1.1");
        let err = Catalogue::parse_prowler(DOC.as_bytes(), Some("CIS AWS")).unwrap_err();
        assert!(matches!(err, JsonError::Shape(f) if f.field == "framework"));
        assert_eq!(
            default_framework_id("ISO27001", Some("AWS"), "2013"),
            "iso27001-aws-2013"
        );
        assert_eq!(
            default_framework_id("AWS Well Architected", None, "1_0"),
            "aws-well-architected-1-0"
        );
    }

    #[test]
    fn bad_documents_are_refused_naming_the_field() {
        let refused = |doc: &str| match Catalogue::parse_prowler(doc.as_bytes(), None) {
            Err(JsonError::Shape(f)) => f.message,
            Err(JsonError::Syntax(s)) => format!("syntax: {s}"),
            Ok(_) => "accepted".into(),
        };
        assert!(refused("{").starts_with("syntax:"));
        assert!(
            refused(r#"{"Framework":"CIS","Version":"1","Requirements":[]}"#)
                .contains("Requirements: 1 to")
        );
        let twice =
            r#"{"Framework":"CIS","Version":"1","Requirements":[{"Id":"1.1"},{"Id":"1.1"}]}"#;
        assert!(
            refused(twice).contains("Requirements[1].Id: \"1.1\" is given twice"),
            "{}",
            refused(twice)
        );
        let spaced = r#"{"Framework":"CIS","Version":"1","Requirements":[{"Id":"1 1"}]}"#;
        assert!(refused(spaced).contains("Requirements[0].Id"));
        let no_framework = r#"{"Version":"1","Requirements":[{"Id":"1"}]}"#;
        assert!(
            refused(no_framework).contains("Framework"),
            "{}",
            refused(no_framework)
        );
        let with = |requirement: &str| {
            format!(r#"{{"Framework":"CIS","Version":"1","Requirements":[{requirement}]}}"#)
        };
        let too_long = with(&format!(
            r#"{{"Id":"1","Description":"{}"}}"#,
            "x".repeat(20_001)
        ));
        assert!(refused(&too_long)
            .contains("Requirements[0].Description must be at most 20000 characters"));
        let nul = with(r#"{"Id":"1","Name":"a\u0000b"}"#);
        assert!(refused(&nul).contains("Requirements[0].Name must not contain NUL"));
        let padded = with(r#"{"Id":" 1"}"#);
        assert!(refused(&padded).contains("Requirements[0].Id"));
        let number = with(r#"{"Id":"1","Attributes":[{},{"Section":5}]}"#);
        assert_eq!(
            refused(&number),
            "Requirements[0].Attributes[1].Section: must be text"
        );
        let blank = r#"{"Framework":" ","Version":"1","Requirements":[{"Id":"1"}]}"#;
        assert!(refused(blank).contains("Framework must not be empty"));
    }

    /// A CIS requirement is titled by its `Description`: a long one is shortened for the
    /// title and kept whole as the description; other attribute keys and types are ignored.
    #[test]
    fn long_descriptions_are_shortened_for_the_title() {
        let text = "y".repeat(1_500);
        let doc = format!(
            r#"{{"Framework":"CIS","Version":"1","Requirements":[
              {{"Id":"1","Description":"{text}","Attributes":[{{"Section":null,"Level":3}}]}}]}}"#
        );
        let c = Catalogue::parse_prowler(doc.as_bytes(), None).unwrap();
        let r = &c.requirements[0];
        assert_eq!(r.title.chars().count(), 1_000);
        assert!(r.title.ends_with('…'));
        assert_eq!(r.description.as_deref(), Some(text.as_str()));
        assert_eq!(r.section, "1");
    }
}
