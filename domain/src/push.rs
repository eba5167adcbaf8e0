//! Parsing a push body into a [`ValidPush`]: a value that satisfies every rule of the
//! contract, or the one error that names what is wrong.

use chrono::{DateTime, Utc};
use sha2::{Digest as _, Sha256};
use tidemark_wire::PushRequest;

use crate::git::GitTarget;
use crate::input::{
    bounded_text, line_at, non_blank_at, parse_json, prose_at, FieldError, JsonError,
};

/// Largest accepted push body.
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;
/// Most findings in one push.
pub const MAX_FINDINGS: usize = 50_000;
pub const MAX_LABEL_CHARS: usize = 128;
const MAX_SLUG_CHARS: usize = 64;
/// Largest count (`passed`, `failed`, each severity): far above any real scan, and small
/// enough that no sum of counts overflows in a store, a chart or a client.
pub const MAX_COUNT: u64 = 1_000_000_000;
/// Longest finding `rule_id`, in characters.
pub const MAX_RULE_ID_CHARS: usize = 256;
/// Longest finding `resource` (long cloud resource names fit).
pub const MAX_RESOURCE_CHARS: usize = 2_048;
/// Longest finding `message` or `remediation`.
pub const MAX_PROSE_CHARS: usize = 16_384;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushError {
    Json(JsonError),
    /// More findings than [`MAX_FINDINGS`] (413 `payload_too_large`).
    TooManyFindings(usize),
}

impl From<FieldError> for PushError {
    fn from(e: FieldError) -> Self {
        PushError::Json(JsonError::Shape(e))
    }
}

/// A push that satisfies every rule. Only [`ValidPush::parse`] makes one.
#[derive(Debug, Clone)]
pub struct ValidPush {
    request: PushRequest,
    scanned_at: DateTime<Utc>,
    body_hash: String,
    git: GitTarget,
}

impl ValidPush {
    pub fn parse(bytes: &[u8]) -> Result<ValidPush, PushError> {
        let request: PushRequest = parse_json(bytes).map_err(PushError::Json)?;
        Self::from_request(request)
    }

    pub fn from_request(mut request: PushRequest) -> Result<ValidPush, PushError> {
        bounded_text("project_label", &request.project_label, MAX_LABEL_CHARS)?;
        bounded_text("cloud_account_id", &request.cloud_account_id, 256)?;
        if request.frameworks.is_empty() {
            return Err(FieldError::new(
                "frameworks",
                "frameworks must list at least one framework ID".into(),
            )
            .into());
        }
        for (i, framework) in request.frameworks.iter().enumerate() {
            bounded_text(&format!("frameworks[{i}]"), framework, 128)?;
        }
        if !request.score.is_finite() || !(0.0..=100.0).contains(&request.score) {
            return Err(FieldError::new("score", "score must be between 0 and 100".into()).into());
        }
        // JSON has one zero: store -0 as 0 so deltas never print as -0.
        request.score += 0.0;
        let counts = [
            ("passed", request.passed),
            ("failed", request.failed),
            ("severity_counts.critical", request.severity_counts.critical),
            ("severity_counts.high", request.severity_counts.high),
            ("severity_counts.medium", request.severity_counts.medium),
            ("severity_counts.low", request.severity_counts.low),
        ];
        for (field, n) in counts {
            if n > MAX_COUNT {
                return Err(FieldError::new(
                    field,
                    format!("{field} must be at most {MAX_COUNT} (got {n})"),
                )
                .into());
            }
        }
        if request.findings.len() > MAX_FINDINGS {
            return Err(PushError::TooManyFindings(request.findings.len()));
        }
        for (i, f) in request.findings.iter().enumerate() {
            let at = |name: &'static str| move || format!("findings[{i}].{name}");
            non_blank_at(at("rule_id"), &f.rule_id)?;
            line_at(at("rule_id"), &f.rule_id, MAX_RULE_ID_CHARS)?;
            non_blank_at(at("resource"), &f.resource)?;
            line_at(at("resource"), &f.resource, MAX_RESOURCE_CHARS)?;
            prose_at(at("message"), &f.message, MAX_PROSE_CHARS)?;
            prose_at(at("remediation"), &f.remediation, MAX_PROSE_CHARS)?;
        }
        let scanned_at = DateTime::parse_from_rfc3339(request.scanned_at.trim())
            .map_err(|_| {
                FieldError::new(
                    "scanned_at",
                    "scanned_at must be an RFC 3339 timestamp with an offset, \
                     e.g. 2026-11-22T10:15:00Z"
                        .into(),
                )
            })?
            .with_timezone(&Utc);
        let git = GitTarget::parse(request.git.as_ref())?;
        let body_hash = canonical_hash(&request);
        Ok(ValidPush {
            request,
            scanned_at,
            body_hash,
            git,
        })
    }

    pub fn request(&self) -> &PushRequest {
        &self.request
    }

    /// The request back, to be changed and parsed again (keyless CI fills in its git context).
    pub fn into_request(self) -> PushRequest {
        self.request
    }

    pub fn label(&self) -> &str {
        &self.request.project_label
    }

    /// Where in the repository the scan was taken (empty without a `git` object).
    pub fn git(&self) -> &GitTarget {
        &self.git
    }

    pub fn scanned_at(&self) -> DateTime<Utc> {
        self.scanned_at
    }

    /// Identifies the push's JSON value (not its bytes): a retried push has the same hash.
    pub fn body_hash(&self) -> &str {
        &self.body_hash
    }

    /// The `scan_id` before any `-2`, `-3` suffix.
    pub fn scan_id_base(&self) -> String {
        scan_id_base(self.scanned_at, self.label())
    }
}

/// The hash of the request re-serialised from its parsed form, so whitespace, key order and
/// ignored unknown fields do not make two equal pushes differ.
fn canonical_hash(request: &PushRequest) -> String {
    let mut hasher = Sha256::new();
    // Serialising plain data into a hasher cannot fail.
    let _ = serde_json::to_writer(&mut hasher, request);
    hex::encode(hasher.finalize())
}

/// The label lower-cased, every run of characters outside `[a-z0-9]` turned into one `-`,
/// trimmed, at most 64 characters. A label with no such characters at all becomes `project`.
pub fn label_slug(label: &str) -> String {
    let mut slug = String::with_capacity(label.len().min(MAX_SLUG_CHARS));
    let mut pending_dash = false;
    for c in label.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            if pending_dash && !slug.is_empty() {
                slug.push('-');
            }
            pending_dash = false;
            slug.push(c);
        } else {
            pending_dash = true;
        }
        if slug.len() >= MAX_SLUG_CHARS {
            break;
        }
    }
    slug.truncate(MAX_SLUG_CHARS);
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() {
        "project".to_owned()
    } else {
        slug.to_owned()
    }
}

/// `YYYYMMDD-HHMMSS-<label-slug>` from the scan time in UTC.
pub fn scan_id_base(scanned_at: DateTime<Utc>, label: &str) -> String {
    format!(
        "{}-{}",
        scanned_at.format("%Y%m%d-%H%M%S"),
        label_slug(label)
    )
}

/// The `n`-th candidate for a scan id: the base itself, then `base-2`, `base-3`, …
pub fn scan_id_candidate(base: &str, n: u32) -> crate::ids::ScanId {
    crate::ids::ScanId::trusted(if n <= 1 {
        base.to_owned()
    } else {
        format!("{base}-{n}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_context_must_be_an_object() {
        let body = |git: &str| {
            format!(
                r#"{{"project_label":"a","cloud":"aws","cloud_account_id":"1","frameworks":["f"],
                "score":1,"passed":0,"failed":0,"severity_counts":{{"critical":0,"high":0,"medium":0,"low":0}},
                "findings":[],"state_source":"ci","scanned_at":"2026-11-22T10:00:00Z","git":{git}}}"#
            )
        };
        for bad in [
            "[null, null]",
            "\"main\"",
            r#"{"pull_request": [1, "main"]}"#,
        ] {
            match ValidPush::parse(body(bad).as_bytes()) {
                Err(PushError::Json(JsonError::Shape(e))) => {
                    assert!(e.field.starts_with("git"), "{bad}: {e:?}")
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
        for good in ["null", "{}", r#"{"pull_request": null}"#] {
            let push = ValidPush::parse(body(good).as_bytes()).unwrap();
            assert_eq!(push.git().line(), crate::git::LineKey::Default, "{good}");
        }
        let pr = ValidPush::parse(
            body(r#"{"branch":"b","pull_request":{"number":3,"base_branch":"main"}}"#).as_bytes(),
        )
        .unwrap();
        assert_eq!(pr.git().line(), crate::git::LineKey::PullRequest(3));
    }
    use serde_json::{json, Value};

    fn sample() -> Value {
        json!({
            "project_label": "Payments API (prod)",
            "cloud": "gcp",
            "cloud_account_id": "acme-prod-123",
            "frameworks": ["cis-gcp-2.0"],
            "score": 87.5,
            "passed": 140,
            "failed": 20,
            "severity_counts": {"critical": 1, "high": 4, "medium": 10, "low": 5},
            "findings": [{
                "rule_id": "cis-gcp-2.0-4.1",
                "resource": "google_compute_instance.web",
                "status": "FAIL",
                "severity": "high",
                "message": "Default service account in use",
                "remediation": "Use a dedicated service account"
            }],
            "state_source": "ci",
            "scanned_at": "2026-11-22T11:15:30+01:00"
        })
    }

    fn parse(v: &Value) -> Result<ValidPush, PushError> {
        ValidPush::parse(&serde_json::to_vec(v).unwrap())
    }

    fn field_of(err: PushError) -> String {
        match err {
            PushError::Json(JsonError::Shape(f)) => f.field,
            other => panic!("expected a field error, got {other:?}"),
        }
    }

    #[test]
    fn a_sample_push_parses_and_gets_its_scan_id_in_utc() {
        let p = parse(&sample()).unwrap();
        assert_eq!(p.scan_id_base(), "20261122-101530-payments-api-prod");
        assert_eq!(p.body_hash().len(), 64);
    }

    #[test]
    fn equal_json_values_hash_the_same_and_unknown_fields_are_ignored() {
        let a = parse(&sample()).unwrap();
        let mut v = sample();
        v["future_field"] = json!({"x": 1});
        v["findings"][0]["confidence"] = json!(0.9);
        let pretty = serde_json::to_vec_pretty(&v).unwrap();
        let b = ValidPush::parse(&pretty).unwrap();
        assert_eq!(a.body_hash(), b.body_hash());
        v["score"] = json!(87.6);
        assert_ne!(parse(&v).unwrap().body_hash(), a.body_hash());
    }

    #[test]
    fn each_bad_field_is_named() {
        let cases: Vec<(&str, Value, &str)> = vec![
            ("project_label", json!(null), "project_label"),
            ("project_label", json!(""), "project_label"),
            ("project_label", json!("x".repeat(129)), "project_label"),
            ("project_label", json!("a\nb"), "project_label"),
            ("cloud", json!("ibm"), "cloud"),
            ("frameworks", json!([]), "frameworks"),
            ("frameworks", json!(["ok", ""]), "frameworks[1]"),
            ("score", json!(100.01), "score"),
            ("score", json!(-1), "score"),
            ("score", json!("90"), "score"),
            ("passed", json!(-1), "passed"),
            ("passed", json!(1.5), "passed"),
            ("failed", json!(null), "failed"),
            (
                "severity_counts",
                json!({"critical": 1, "high": 1, "medium": 1}),
                "severity_counts.low",
            ),
            (
                "severity_counts",
                json!({"critical": 1, "high": 1, "medium": 1, "low": 1, "info": 1}),
                "severity_counts",
            ),
            ("state_source", json!("laptop"), "state_source"),
            ("scanned_at", json!("2026-11-22 10:00:00"), "scanned_at"),
            ("scanned_at", json!("2026-11-22T10:00:00"), "scanned_at"),
        ];
        for (key, value, expected_field) in cases {
            let mut v = sample();
            v[key] = value.clone();
            let err = parse(&v).expect_err(&format!("{key}={value}"));
            let field = field_of(err);
            assert!(
                field.starts_with(expected_field),
                "{key}={value}: named {field:?}, expected {expected_field:?}"
            );
        }
        let mut v = sample();
        v.as_object_mut().unwrap().remove("scanned_at");
        assert_eq!(field_of(parse(&v).unwrap_err()), "scanned_at");
        let mut v = sample();
        v["findings"][0]["status"] = json!("fail");
        assert_eq!(field_of(parse(&v).unwrap_err()), "findings[0].status");
        let mut v = sample();
        v["findings"][0]["severity"] = json!("info");
        assert_eq!(field_of(parse(&v).unwrap_err()), "findings[0].severity");
        let mut v = sample();
        v["findings"][0]
            .as_object_mut()
            .unwrap()
            .remove("remediation");
        assert_eq!(field_of(parse(&v).unwrap_err()), "findings[0].remediation");
    }

    #[test]
    fn control_characters_are_refused_in_every_text_but_tab_and_line_breaks_in_prose() {
        for field in ["rule_id", "resource", "message", "remediation"] {
            for bad in ["a\u{0}b", "\u{1b}[31mred", "a\u{7f}", "a\u{85}b"] {
                let mut v = sample();
                v["findings"][0][field] = json!(bad);
                assert_eq!(
                    field_of(parse(&v).unwrap_err()),
                    format!("findings[0].{field}"),
                    "{field}={bad:?}"
                );
            }
        }
        for field in ["message", "remediation"] {
            let mut v = sample();
            v["findings"][0][field] = json!("line one\r\n\tline two\n");
            assert!(parse(&v).is_ok(), "{field}");
            v["findings"][0][field] = json!("");
            assert!(parse(&v).is_ok(), "empty {field}");
        }
        for field in ["rule_id", "resource"] {
            let mut v = sample();
            v["findings"][0][field] = json!("a\tb");
            assert!(parse(&v).is_err(), "{field} with a tab");
        }
        let mut v = sample();
        v["cloud_account_id"] = json!("acme\u{0}");
        match parse(&v).unwrap_err() {
            PushError::Json(JsonError::Shape(f)) => {
                assert_eq!(f.field, "cloud_account_id");
                assert!(f.message.contains("NUL"), "{}", f.message);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn finding_texts_have_length_limits() {
        let cases = [
            ("rule_id", MAX_RULE_ID_CHARS),
            ("resource", MAX_RESOURCE_CHARS),
            ("message", MAX_PROSE_CHARS),
            ("remediation", MAX_PROSE_CHARS),
        ];
        for (field, max) in cases {
            let mut v = sample();
            // Multi-byte characters: the limit counts characters, not bytes.
            v["findings"][0][field] = json!("é".repeat(max));
            assert!(parse(&v).is_ok(), "{field} at its limit");
            v["findings"][0][field] = json!("é".repeat(max + 1));
            assert_eq!(
                field_of(parse(&v).unwrap_err()),
                format!("findings[0].{field}")
            );
        }
    }

    #[test]
    fn counts_are_bounded_and_numbers_that_fit_no_field_are_field_errors() {
        let mut v = sample();
        v["passed"] = json!(MAX_COUNT);
        assert!(parse(&v).is_ok());
        let body = |passed: &str| {
            serde_json::to_string(&sample())
                .unwrap()
                .replace("\"passed\":140", &format!("\"passed\":{passed}"))
        };
        for passed in [
            "1000000001",
            "18446744073709551616",
            "1e30",
            "1e400",
            "-1e400",
            "9223372036854775808",
        ] {
            let err = ValidPush::parse(body(passed).as_bytes()).unwrap_err();
            assert_eq!(field_of(err), "passed", "passed={passed}");
        }
        let body = serde_json::to_string(&sample())
            .unwrap()
            .replace("\"score\":87.5", "\"score\":1e400");
        assert_eq!(
            field_of(ValidPush::parse(body.as_bytes()).unwrap_err()),
            "score"
        );
        let mut v = sample();
        v["severity_counts"]["low"] = json!(MAX_COUNT + 1);
        assert_eq!(field_of(parse(&v).unwrap_err()), "severity_counts.low");
    }

    #[test]
    fn counts_written_as_whole_floats_are_the_same_counts() {
        let body = serde_json::to_string(&sample()).unwrap();
        let plain = ValidPush::parse(body.as_bytes()).unwrap();
        for spelling in ["140.0", "1.4e2", "14e1"] {
            let b = body.replace("\"passed\":140", &format!("\"passed\":{spelling}"));
            let parsed = ValidPush::parse(b.as_bytes()).unwrap();
            assert_eq!(parsed.request().passed, 140, "{spelling}");
            // The same JSON value: a retry that spells a count differently is still a replay.
            assert_eq!(parsed.body_hash(), plain.body_hash(), "{spelling}");
        }
        for bad in ["140.5", "-1.0", "1e19", "2e20"] {
            let b = body.replace("\"passed\":140", &format!("\"passed\":{bad}"));
            let err = ValidPush::parse(b.as_bytes()).unwrap_err();
            assert_eq!(field_of(err), "passed", "passed={bad}");
        }
    }

    #[test]
    fn a_valid_push_written_out_again_is_the_same_push() {
        // More digits than a double holds: parsed to the nearest double, so writing the push
        // out and reading it again changes nothing (found by fuzzing, before exact parsing).
        let body = serde_json::to_string(&sample())
            .unwrap()
            .replace("\"score\":87.5", "\"score\":21.56666666666666666666666");
        let push = ValidPush::parse(body.as_bytes()).unwrap();
        assert_eq!(push.request().score, 21.566666666666666);
        let again = ValidPush::parse(&serde_json::to_vec(push.request()).unwrap()).unwrap();
        assert_eq!(again.body_hash(), push.body_hash());
    }

    #[test]
    fn impossible_dates_are_refused() {
        for bad in [
            "2024-02-30T10:00:00Z",
            "2023-02-29T10:00:00Z",
            "2026-13-01T10:00:00Z",
            "2026-11-22T24:00:01Z",
            "2026-11-22T10:00:00+25:00",
        ] {
            let mut v = sample();
            v["scanned_at"] = json!(bad);
            assert_eq!(field_of(parse(&v).unwrap_err()), "scanned_at", "{bad}");
        }
        let mut v = sample();
        v["scanned_at"] = json!("2024-02-29T10:00:00Z");
        assert!(parse(&v).is_ok());
    }

    #[test]
    fn a_key_given_twice_is_refused_where_the_contract_names_it() {
        let body = serde_json::to_string(&sample()).unwrap();
        let twice = body.replacen("{", "{\"score\":10,", 1);
        assert_eq!(
            field_of(ValidPush::parse(twice.as_bytes()).unwrap_err()),
            "score"
        );
        let twice = body.replace("\"critical\":1", "\"critical\":1,\"critical\":2");
        assert!(field_of(ValidPush::parse(twice.as_bytes()).unwrap_err())
            .starts_with("severity_counts"));
        let twice = body.replace(
            "\"status\":\"FAIL\"",
            "\"status\":\"FAIL\",\"status\":\"PASS\"",
        );
        assert!(
            field_of(ValidPush::parse(twice.as_bytes()).unwrap_err()).starts_with("findings[0]")
        );
        // Unknown fields are ignored, however often they appear.
        let unknown = body.replacen("{", "{\"x\":1,\"x\":2,", 1);
        assert!(ValidPush::parse(unknown.as_bytes()).is_ok());
    }

    #[test]
    fn the_score_message_states_the_range() {
        let mut v = sample();
        v["score"] = json!(101);
        match parse(&v).unwrap_err() {
            PushError::Json(JsonError::Shape(f)) => {
                assert_eq!(f.message, "score must be between 0 and 100")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn syntax_errors_are_not_shape_errors() {
        for bad in [&b""[..], b"{", b"{\"a\":}", b"{} trailing", b"nul"] {
            assert!(
                matches!(
                    ValidPush::parse(bad),
                    Err(PushError::Json(JsonError::Syntax(_)))
                ),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        assert!(matches!(
            ValidPush::parse(b"[]"),
            Err(PushError::Json(JsonError::Shape(_)))
        ));
    }

    #[test]
    fn too_many_findings_is_its_own_error() {
        let mut v = sample();
        let one = v["findings"][0].clone();
        v["findings"] = Value::Array(vec![one; MAX_FINDINGS + 1]);
        assert_eq!(
            parse(&v).unwrap_err(),
            PushError::TooManyFindings(MAX_FINDINGS + 1)
        );
    }

    #[test]
    fn slugs_follow_the_decided_rule() {
        assert_eq!(label_slug("Payments API (prod)"), "payments-api-prod");
        assert_eq!(label_slug("--a__b--"), "a-b");
        assert_eq!(label_slug("ÄBC"), "bc");
        assert_eq!(label_slug("!!!"), "project");
        let long = "a".repeat(63) + "-bcd";
        assert_eq!(label_slug(&long), "a".repeat(63));
        assert_eq!(label_slug(&"z".repeat(100)).len(), 64);
        assert_eq!(scan_id_candidate("x", 1), "x");
        assert_eq!(scan_id_candidate("x", 3), "x-3");
    }
}
