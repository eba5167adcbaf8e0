#![allow(clippy::unwrap_used)]

use serde_json::json;

use super::*;
use tidemark_wire::{GitContext, PullRequestRef};

const AUD: &str = "https://tidemark.example";
const NOW: i64 = 1_800_000_000;

/// A GitHub Actions token's claims for a push to `main`, as GitHub documents them.
fn github_claims() -> serde_json::Value {
    json!({
        "jti": "example-id",
        "sub": "repo:acme/api:ref:refs/heads/main",
        "aud": AUD,
        "ref": "refs/heads/main",
        "sha": "a3f1c9e0b7d24c8e9f1a2b3c4d5e6f708192a3b4",
        "repository": "acme/api",
        "repository_owner": "acme",
        "repository_owner_id": "1001",
        "repository_id": "2002",
        "repository_visibility": "private",
        "run_id": "9000000001",
        "run_number": "12",
        "run_attempt": "1",
        "actor": "octocat",
        "workflow": "CI",
        "workflow_ref": "acme/api/.github/workflows/ci.yml@refs/heads/main",
        "job_workflow_ref": "acme/shared/.github/workflows/scan.yml@refs/tags/v1",
        "event_name": "push",
        "ref_type": "branch",
        "iss": GITHUB_ISSUER,
        "nbf": NOW - 10,
        "exp": NOW + 290,
        "iat": NOW - 10
    })
}

/// A GitLab CI ID token's claims, as GitLab documents them.
fn gitlab_claims() -> serde_json::Value {
    json!({
        "namespace_id": "72",
        "namespace_path": "acme",
        "project_id": "20",
        "project_path": "acme/api",
        "user_id": "1",
        "user_login": "sam",
        "pipeline_id": "574",
        "pipeline_source": "push",
        "job_id": "302",
        "ref": "main",
        "ref_type": "branch",
        "ref_path": "refs/heads/main",
        "ref_protected": "true",
        "environment": "production",
        "sha": "a3f1c9e0b7d24c8e9f1a2b3c4d5e6f708192a3b4",
        "ci_config_ref_uri": "gitlab.com/acme/api//.gitlab-ci.yml@refs/heads/main",
        "ci_config_sha": "a3f1c9e0b7d24c8e9f1a2b3c4d5e6f708192a3b4",
        "jti": "235b3a54-b797-45c7-ae9a-f72d7bc6ef5b",
        "iss": GITLAB_ISSUER,
        "iat": NOW - 10,
        "nbf": NOW - 15,
        "exp": NOW + 3590,
        "sub": "project_path:acme/api:ref_type:branch:ref:main",
        "aud": AUD
    })
}

fn claims(v: serde_json::Value) -> Claims {
    Claims::new(v.as_object().unwrap().clone())
}

fn with(mut v: serde_json::Value, key: &str, value: serde_json::Value) -> Claims {
    v[key] = value;
    claims(v)
}

fn github_spec() -> PublisherSpec {
    PublisherSpec::parse(
        &PublisherDraft {
            provider: "github".into(),
            repository: Some("acme/api".into()),
            owner_id: Some("1001".into()),
            repository_id: Some("2002".into()),
            workflow: Some("ci.yml".into()),
            ..Default::default()
        },
        false,
    )
    .unwrap()
}

fn gitlab_spec() -> PublisherSpec {
    PublisherSpec::parse(
        &PublisherDraft {
            provider: "gitlab".into(),
            repository: Some("acme/api".into()),
            environment: Some("production".into()),
            ref_pattern: Some("refs/heads/main".into()),
            project: Some("api".into()),
            ..Default::default()
        },
        false,
    )
    .unwrap()
}

#[test]
fn registered_claims_pass_and_give_the_jti() {
    let (jti, exp) = check_registered(&claims(github_claims()), GITHUB_ISSUER, AUD, NOW).unwrap();
    assert_eq!((jti.as_str(), exp), ("example-id", NOW + 290));
    // One audience in an array is one audience.
    let one = with(github_claims(), "aud", json!([AUD]));
    assert!(check_registered(&one, GITHUB_ISSUER, AUD, NOW).is_ok());
}

#[test]
fn each_registered_claim_refusal_names_its_claim() {
    let cases: Vec<(&str, Claims, i64)> = vec![
        (
            "iss",
            with(github_claims(), "iss", json!("https://evil.example")),
            NOW,
        ),
        (
            "aud",
            with(github_claims(), "aud", json!("https://github.com/acme")),
            NOW,
        ),
        (
            "aud",
            with(
                github_claims(),
                "aud",
                json!([AUD, "https://other.example"]),
            ),
            NOW,
        ),
        ("aud", with(github_claims(), "aud", json!([])), NOW),
        ("exp", claims(github_claims()), NOW + 290 + LEEWAY_SECS + 1),
        (
            "nbf",
            with(github_claims(), "nbf", json!(NOW + LEEWAY_SECS + 5)),
            NOW,
        ),
        (
            "iat",
            with(github_claims(), "iat", json!(NOW + LEEWAY_SECS + 5)),
            NOW,
        ),
        ("exp", with(github_claims(), "exp", json!("tomorrow")), NOW),
        ("jti", with(github_claims(), "jti", json!("")), NOW),
    ];
    for (claim, c, now) in cases {
        let refusal = check_registered(&c, GITHUB_ISSUER, AUD, now).unwrap_err();
        assert_eq!(refusal.claim, claim, "{refusal}");
        assert!(refusal.to_string().contains(&format!("`{claim}`")));
    }
    let several = with(
        github_claims(),
        "aud",
        json!([AUD, "https://other.example"]),
    );
    let msg = check_registered(&several, GITHUB_ISSUER, AUD, NOW)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("2 audiences"), "{msg}");
    // Within the leeway is still valid.
    assert!(check_registered(
        &claims(github_claims()),
        GITHUB_ISSUER,
        AUD,
        NOW + 290 + LEEWAY_SECS
    )
    .is_ok());
}

#[test]
fn github_identity_matches_by_ids_name_and_caller_workflow() {
    let m = match_publisher(&github_spec(), &claims(github_claims())).unwrap();
    assert_eq!(m.pin, None);
    let id = m.identity;
    assert_eq!(id.repository, "acme/api");
    assert_eq!(id.repository_id.as_deref(), Some("2002"));
    // The caller's workflow, not the reusable one (`job_workflow_ref`).
    assert_eq!(id.workflow.as_deref(), Some(".github/workflows/ci.yml"));
    assert_eq!(id.git_ref.as_deref(), Some("refs/heads/main"));
    assert_eq!(
        id.run_url.as_deref(),
        Some("https://github.com/acme/api/actions/runs/9000000001")
    );
}

#[test]
fn github_refusals_name_the_claim() {
    let spec = github_spec();
    let cases = [
        ("repository_id", "repository_id", json!("3003")),
        ("repository_owner_id", "repository_owner_id", json!("1")),
        ("repository", "repository", json!("acme/web")),
        (
            "workflow_ref",
            "workflow_ref",
            json!("acme/api/.github/workflows/release.yml@refs/heads/main"),
        ),
    ];
    for (key, claim, value) in cases {
        let refusal =
            match_publisher(&spec, &with(github_claims(), key, value.clone())).unwrap_err();
        assert_eq!(refusal.claim, claim, "{refusal}");
        assert!(
            refusal.to_string().contains(&value.to_string()),
            "{refusal}"
        );
    }
    // A re-created repository: same name, new id; the message says why.
    let recreated = with(github_claims(), "repository_id", json!("9999"));
    let msg = match_publisher(&spec, &recreated).unwrap_err().to_string();
    assert!(msg.contains("created again"), "{msg}");

    let mut narrow = spec.clone();
    narrow.environment = Some("production".into());
    let r = match_publisher(&narrow, &claims(github_claims())).unwrap_err();
    assert_eq!(r.claim, "environment");
    let r = match_publisher(
        &narrow,
        &with(github_claims(), "environment", json!("staging")),
    )
    .unwrap_err();
    assert_eq!((r.claim, r.found.as_str()), ("environment", "\"staging\""));
    assert!(match_publisher(
        &narrow,
        &with(github_claims(), "environment", json!("Production"))
    )
    .is_ok());

    narrow.environment = None;
    narrow.ref_pattern = Some(RefPattern::parse("refs/tags/v*").unwrap());
    let r = match_publisher(&narrow, &claims(github_claims())).unwrap_err();
    assert_eq!(r.claim, "ref");
    assert!(match_publisher(
        &narrow,
        &with(github_claims(), "ref", json!("refs/tags/v1.2.0"))
    )
    .is_ok());
}

#[test]
fn a_publisher_without_ids_pins_the_first_tokens() {
    let mut spec = github_spec();
    spec.owner_id = None;
    spec.repository_id = None;
    let m = match_publisher(&spec, &claims(github_claims())).unwrap();
    assert_eq!(m.pin, Some(("1001".into(), "2002".into())));
    // Names compare without case, as GitHub's do.
    assert!(match_publisher(
        &spec,
        &with(github_claims(), "repository", json!("ACME/Api"))
    )
    .is_ok());
}

#[test]
fn enterprise_server_runs_link_to_its_host() {
    let mut spec = github_spec();
    spec.issuer = Issuer::parse("https://ghe.acme.example/_services/token", false).unwrap();
    let m = match_publisher(&spec, &claims(github_claims())).unwrap();
    assert_eq!(
        m.identity.run_url.as_deref(),
        Some("https://ghe.acme.example/acme/api/actions/runs/9000000001")
    );
}

#[test]
fn gitlab_identity_and_refusals() {
    let spec = gitlab_spec();
    let m = match_publisher(&spec, &claims(gitlab_claims())).unwrap();
    assert_eq!(m.pin, Some(("72".into(), "20".into())));
    assert_eq!(m.identity.workflow.as_deref(), Some(".gitlab-ci.yml"));
    assert_eq!(
        m.identity.run_url.as_deref(),
        Some("https://gitlab.com/acme/api/-/jobs/302")
    );
    let cases = [
        ("ref_path", json!("refs/heads/feature")),
        ("environment", json!("review/x")),
        ("project_path", json!("acme/other")),
        (
            "ci_config_ref_uri",
            json!("gitlab.com/acme/api//ci/other.yml@refs/heads/main"),
        ),
    ];
    for (claim, value) in cases {
        let r = match_publisher(&spec, &with(gitlab_claims(), claim, value)).unwrap_err();
        assert_eq!(r.claim, claim, "{r}");
    }
}

#[test]
fn custom_issuers_match_the_subject() {
    let spec = PublisherSpec::parse(
        &PublisherDraft {
            provider: "custom".into(),
            issuer: Some("https://ci.acme.example/".into()),
            subject: Some("pipeline:api:main".into()),
            ..Default::default()
        },
        false,
    )
    .unwrap();
    assert_eq!(spec.issuer.as_str(), "https://ci.acme.example");
    let c = claims(json!({"sub": "pipeline:api:main", "iss": "https://ci.acme.example"}));
    assert!(match_publisher(&spec, &c).is_ok());
    let c = claims(json!({"sub": "pipeline:api:dev"}));
    assert_eq!(match_publisher(&spec, &c).unwrap_err().claim, "sub");
}

#[test]
fn drafts_are_checked_field_by_field() {
    let bad = |draft: PublisherDraft, field: &str| {
        let err = PublisherSpec::parse(&draft, false).unwrap_err();
        assert_eq!(err.field, field, "{}", err.message);
    };
    let gh = |f: fn(&mut PublisherDraft)| {
        let mut d = PublisherDraft {
            provider: "github".into(),
            repository: Some("acme/api".into()),
            workflow: Some("ci.yml".into()),
            ..Default::default()
        };
        f(&mut d);
        d
    };
    bad(gh(|d| d.provider = "jenkins".into()), "provider");
    bad(gh(|d| d.repository = Some("api".into())), "repository");
    bad(gh(|d| d.workflow = None), "workflow");
    bad(gh(|d| d.workflow = Some("ci.sh".into())), "workflow");
    bad(
        gh(|d| d.repository_id = Some("12a".into())),
        "repository_id",
    );
    bad(gh(|d| d.ref_pattern = Some("main".into())), "ref_pattern");
    bad(
        gh(|d| d.issuer = Some("http://ghe.example/_services/token".into())),
        "issuer",
    );
    bad(
        gh(|d| d.issuer = Some("https://ghe.example/?a=1".into())),
        "issuer",
    );
    bad(gh(|d| d.project = Some("a\u{7}b".into())), "project");
    bad(
        PublisherDraft {
            provider: "custom".into(),
            ..Default::default()
        },
        "issuer",
    );
    let spec = PublisherSpec::parse(
        &gh(|d| d.workflow = Some(".github/workflows/ci.yml".into())),
        false,
    )
    .unwrap();
    assert_eq!(spec.workflow.as_deref(), Some("ci.yml"));
    assert_eq!(spec.projects, ProjectScope::All);
    assert!(PublisherSpec::parse(
        &gh(|d| d.issuer = Some("http://127.0.0.1:9/_services/token".into())),
        true
    )
    .is_ok());
}

#[test]
fn ref_patterns_glob_with_stars() {
    let p = |s: &str| RefPattern::parse(s).unwrap();
    assert!(p("refs/tags/v*").matches("refs/tags/v1.0.0"));
    assert!(!p("refs/tags/v*").matches("refs/heads/v1"));
    assert!(p("refs/heads/main").matches("refs/heads/main"));
    assert!(!p("refs/heads/main").matches("refs/heads/main2"));
    assert!(p("refs/heads/release/*").matches("refs/heads/release/2026/q4"));
    assert!(p("refs/*/x*y").matches("refs/a/b/xzzy"));
    assert!(!p("refs/*/x*y").matches("refs/a/b/xzzyz"));
    // No exponential backtracking on many stars.
    let many = format!("refs/{}b", "*a".repeat(40));
    assert!(!RefPattern::parse(&many)
        .unwrap()
        .matches(&format!("refs/{}", "a".repeat(200))));
}

#[test]
fn github_git_context_comes_from_the_claims() {
    let push = trusted_git(Provider::GitHub, &claims(github_claims()));
    assert_eq!(push.branch, Some(Some("main".into())));
    assert_eq!(push.pull_request, Some(None));
    let filled = apply_trusted_git(&push, None).unwrap().unwrap();
    assert_eq!(filled.branch.as_deref(), Some("main"));
    assert_eq!(
        filled.commit.as_deref(),
        Some("a3f1c9e0b7d24c8e9f1a2b3c4d5e6f708192a3b4")
    );

    let mut pr = github_claims();
    pr["ref"] = json!("refs/pull/42/merge");
    pr["event_name"] = json!("pull_request");
    pr["head_ref"] = json!("feature/tls");
    pr["base_ref"] = json!("main");
    let trusted = trusted_git(Provider::GitHub, &claims(pr));
    assert_eq!(trusted.pull_request, Some(Some((42, "main".into()))));
    let filled = apply_trusted_git(&trusted, None).unwrap().unwrap();
    assert_eq!(filled.pull_request.as_ref().map(|p| p.number), Some(42));
    assert_eq!(filled.branch.as_deref(), Some("feature/tls"));

    let body = |f: fn(&mut GitContext)| {
        let mut g = GitContext {
            branch: Some("feature/tls".into()),
            commit: Some("a3f1c9e".into()),
            pull_request: Some(PullRequestRef {
                number: 42,
                base_branch: "main".into(),
                title: Some("TLS".into()),
                url: None,
            }),
            ..Default::default()
        };
        f(&mut g);
        Some(g)
    };
    // A body that agrees keeps its extras (title) and gets the full sha.
    let ok = apply_trusted_git(&trusted, body(|_| {})).unwrap().unwrap();
    assert_eq!(ok.pull_request.unwrap().title.as_deref(), Some("TLS"));
    assert_eq!(ok.commit.unwrap().len(), 40);
    for (field, f) in [
        (
            "git.branch",
            (|g: &mut GitContext| g.branch = Some("main".into())) as fn(&mut GitContext),
        ),
        ("git.commit", |g| g.commit = Some("ffffff1".into())),
        ("git.pull_request.number", |g| {
            if let Some(p) = g.pull_request.as_mut() {
                p.number = 43
            }
        }),
        ("git.pull_request.base_branch", |g| {
            if let Some(p) = g.pull_request.as_mut() {
                p.base_branch = "develop".into()
            }
        }),
    ] {
        let err = apply_trusted_git(&trusted, body(f)).unwrap_err();
        assert_eq!(err.field, field, "{}", err.message);
    }
    // A push event's token refuses a body that claims a pull request.
    let err = apply_trusted_git(&push, body(|g| g.branch = Some("main".into()))).unwrap_err();
    assert!(
        err.field == "git.commit" || err.field == "git.pull_request",
        "{}",
        err.field
    );
}

#[test]
fn gitlab_git_context_leaves_merge_requests_to_the_body() {
    let mut mr = gitlab_claims();
    mr["pipeline_source"] = json!("merge_request_event");
    mr["ref"] = json!("feature/tls");
    let trusted = trusted_git(Provider::GitLab, &claims(mr));
    assert_eq!(trusted.pull_request, None);
    let git = GitContext {
        pull_request: Some(PullRequestRef {
            number: 7,
            base_branch: "main".into(),
            title: None,
            url: None,
        }),
        ..Default::default()
    };
    let filled = apply_trusted_git(&trusted, Some(git)).unwrap().unwrap();
    assert_eq!(filled.branch.as_deref(), Some("feature/tls"));
    assert_eq!(filled.pull_request.unwrap().number, 7);
    let mut tag = gitlab_claims();
    tag["ref_type"] = json!("tag");
    let trusted = trusted_git(Provider::GitLab, &claims(tag));
    let err = apply_trusted_git(
        &trusted,
        Some(GitContext {
            branch: Some("main".into()),
            ..Default::default()
        }),
    )
    .unwrap_err();
    assert_eq!(err.field, "git.branch");
}

#[test]
fn workflow_paths_come_from_the_reference() {
    assert_eq!(
        workflow_path(
            Provider::GitHub,
            "acme/api/.github/workflows/ci.yml@refs/pull/1/merge"
        )
        .as_deref(),
        Some(".github/workflows/ci.yml")
    );
    assert_eq!(
        workflow_path(
            Provider::GitLab,
            "gitlab.example/g/sub/p//ci/scan.yml@refs/heads/main"
        )
        .as_deref(),
        Some("ci/scan.yml")
    );
    assert_eq!(workflow_path(Provider::GitHub, "nonsense"), None);
}

#[test]
fn trusted_git_survives_storage_with_its_two_kinds_of_nothing() {
    let tag = TrustedGit {
        branch: Some(None),
        commit: Some("abc1234".into()),
        pull_request: Some(None),
    };
    for t in [tag, TrustedGit::default()] {
        let back: TrustedGit = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
        assert_eq!(back, t);
    }
}
