//! The operator subcommands of the real `tidemark-server` binary.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use std::process::Command;

use serde_json::Value;

fn cli(data_dir: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    run(
        data_dir,
        &[("TIDEMARK_BASE_URL", "https://tidemark.example.com")],
        args,
    )
}

/// `cli` as the OS user `user` (the audit log's operator name).
fn cli_as(user: &str, data_dir: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    run(data_dir, &[("USER", user)], args)
}

/// The real binary with the data directory and `env`.
fn run(data_dir: &std::path::Path, env: &[(&str, &str)], args: &[&str]) -> (bool, String, String) {
    let data = data_dir.to_str().unwrap();
    let mut all = vec![("TIDEMARK_DATA_DIR", data)];
    all.extend_from_slice(env);
    crate::common::tidemark_server(&all, args)
}

/// `--json`'s standard output: exactly one JSON document on one line, and nothing else.
fn only_json(stdout: &str) -> Value {
    assert_eq!(
        stdout.lines().count(),
        1,
        "one line of standard output: {stdout}"
    );
    assert!(stdout.ends_with('\n'));
    serde_json::from_str(stdout).expect("one JSON document")
}

#[test]
fn licenses_are_created_listed_suspended_resumed_and_extended() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, out, err) = cli(
        dir.path(),
        &[
            "license",
            "create",
            "--email",
            "ops@example.com",
            "--tier",
            "agency",
            "--max-projects",
            "7",
            "--json",
        ],
    );
    assert!(ok, "{err}");
    let created = only_json(&out);
    let key = created["license_key"].as_str().unwrap();
    assert!(key.starts_with("lic_"));
    let id = created["license_id"].as_str().unwrap().to_owned();
    assert!(created["account_id"].as_str().unwrap().starts_with("acct_"));
    assert!(!err.contains(key), "the key never reaches the log");

    let (ok, out, _) = cli(dir.path(), &["license", "list", "--json"]);
    assert!(ok);
    let list = only_json(&out);
    assert_eq!(list["licenses"][0]["tier"], "agency");
    assert_eq!(list["licenses"][0]["state"], "active");
    assert_eq!(list["licenses"][0]["max_projects"], 7);
    assert!(!out.contains(key), "list never shows keys");

    let (ok, out, _) = cli(dir.path(), &["license", "suspend", "--id", &id, "--json"]);
    assert!(ok);
    assert_eq!(only_json(&out)["state"], "suspended");
    let (ok, out, _) = cli(dir.path(), &["license", "resume", "--id", &id, "--json"]);
    assert!(ok);
    assert_eq!(only_json(&out)["state"], "active");
    let (ok, out, _) = cli(
        dir.path(),
        &[
            "license",
            "extend",
            "--id",
            &id,
            "--expires",
            "2020-01-01T00:00:00Z",
            "--json",
        ],
    );
    assert!(ok);
    let extended = only_json(&out);
    assert_eq!(extended["state"], "expired");
    assert_eq!(extended["expires"], "2020-01-01T00:00:00Z");

    let (ok, _, err) = cli(dir.path(), &["license", "suspend", "--id", "lcn_nope"]);
    assert!(!ok);
    assert!(err.contains("no license with id lcn_nope"), "{err}");
    let (ok, _, err) = cli(
        dir.path(),
        &["license", "create", "--email", "not-mail", "--tier", "team"],
    );
    assert!(!ok);
    assert!(err.contains("email"), "{err}");
    let (ok, _, err) = cli(
        dir.path(),
        &[
            "license",
            "create",
            "--email",
            "a@b.example",
            "--tier",
            "gold",
        ],
    );
    assert!(!ok);
    assert!(err.contains("gold"), "{err}");
}

#[test]
fn bundle_publish_prints_url_and_checksum() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("profiles.tar");
    std::fs::write(&file, b"bundle bytes").unwrap();
    let (ok, out, err) = cli(
        dir.path(),
        &["bundle", "publish", file.to_str().unwrap(), "--json"],
    );
    assert!(ok, "{err}");
    let published = only_json(&out);
    assert_eq!(
        published["bundle_checksum"],
        format!(
            "sha256:{}",
            tidemark_domain::secrets::sha256_hex(b"bundle bytes")
        )
    );
    let url = published["bundle_url"].as_str().unwrap();
    assert!(
        url.starts_with("https://tidemark.example.com/v1/bundles/bnd_"),
        "{url}"
    );
    let (ok, _, err) = cli(dir.path(), &["bundle", "publish", "/no/such/file"]);
    assert!(!ok);
    assert!(err.contains("could not read"), "{err}");
}

#[test]
fn members_are_added_listed_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, out, err) = cli(
        dir.path(),
        &[
            "license",
            "create",
            "--email",
            "Boss@Example.com",
            "--tier",
            "team",
            "--json",
        ],
    );
    assert!(ok, "{err}");
    let account = only_json(&out)["account_id"].as_str().unwrap().to_owned();

    let add = [
        "member",
        "add",
        "--account",
        &account,
        "--email",
        "dev@example.com",
        "--json",
    ];
    let (ok, out, err) = cli(dir.path(), &add);
    assert!(ok, "{err}");
    assert_eq!(only_json(&out)["role"], "member");
    let (ok, _, err) = cli(dir.path(), &add);
    assert!(!ok && err.contains("already a member"), "{err}");
    let (ok, _, err) = cli(
        dir.path(),
        &[
            "member",
            "add",
            "--account",
            "acct_nope",
            "--email",
            "x@example.com",
        ],
    );
    assert!(!ok && err.contains("no account"), "{err}");
    let (ok, _, err) = cli(
        dir.path(),
        &[
            "member",
            "add",
            "--account",
            &account,
            "--email",
            "not-an-address",
        ],
    );
    assert!(!ok && err.contains("valid e-mail"), "{err}");

    let (ok, out, _) = cli(
        dir.path(),
        &["member", "list", "--account", &account, "--json"],
    );
    assert!(ok);
    let list = only_json(&out);
    let people: Vec<(String, String)> = list["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["email"].as_str().unwrap().into(),
                m["role"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        people,
        [
            ("boss@example.com".into(), "admin".into()),
            ("dev@example.com".into(), "member".into())
        ],
        "the license e-mail is the first admin"
    );

    let (ok, _, err) = cli(
        dir.path(),
        &[
            "member",
            "remove",
            "--account",
            &account,
            "--email",
            "boss@example.com",
        ],
    );
    assert!(!ok && err.contains("at least one admin"), "{err}");
    let (ok, _, err) = cli(
        dir.path(),
        &[
            "member",
            "remove",
            "--account",
            &account,
            "--email",
            "dev@example.com",
        ],
    );
    assert!(ok, "{err}");
    let (_, out, _) = cli(
        dir.path(),
        &["member", "list", "--account", &account, "--json"],
    );
    assert_eq!(only_json(&out)["members"].as_array().unwrap().len(), 1);
}

#[test]
fn sso_domains_are_set_listed_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, out, err) = cli(
        dir.path(),
        &[
            "license",
            "create",
            "--email",
            "it@corp.example",
            "--tier",
            "enterprise",
            "--json",
        ],
    );
    assert!(ok, "{err}");
    let account = only_json(&out)["account_id"].as_str().unwrap().to_owned();
    let cert = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../end2end/idp/saml-idp-cert.pem"
    ))
    .unwrap();
    let der: String = cert.lines().filter(|l| !l.starts_with("-----")).collect();
    let metadata = |key: &str| {
        format!(
            r#"<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://idp.corp.example/md"><IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">{key}<SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp.corp.example/sso"/></IDPSSODescriptor></EntityDescriptor>"#
        )
    };
    let with_key = metadata(&format!(
        r#"<KeyDescriptor use="signing"><ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:X509Data><ds:X509Certificate>{der}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></KeyDescriptor>"#
    ));
    let good = dir.path().join("idp.xml");
    let keyless = dir.path().join("keyless.xml");
    std::fs::write(&good, with_key).unwrap();
    std::fs::write(&keyless, metadata("")).unwrap();

    let set = |file: &std::path::Path, extra: &[&str]| {
        let mut args = vec![
            "sso",
            "set",
            "--account",
            &account,
            "--domain",
            "Corp.Example",
        ];
        args.extend_from_slice(&["--idp-metadata", file.to_str().unwrap()]);
        args.extend_from_slice(extra);
        cli(dir.path(), &args)
    };
    let (ok, _, err) = set(&keyless, &[]);
    assert!(!ok && err.contains("no signing certificate"), "{err}");
    let (ok, out, err) = set(&good, &["--enforce", "--json"]);
    assert!(ok, "{err}");
    let view = only_json(&out);
    assert_eq!(view["domain"], "corp.example");
    assert_eq!(view["idp_sso_url"], "https://idp.corp.example/sso");
    assert_eq!(view["signing_certificates"], 1);
    assert_eq!(view["enforce"], true);
    // The operator vouches for the domain: verified at once, and the command says so.
    assert_eq!(view["state"], "verified");
    // Under --json the sentence for people goes to standard error.
    assert!(err.contains("corp.example is verified for"), "{err}");

    let (ok, out, err) = cli(dir.path(), &["sso", "list", "--json"]);
    assert!(ok);
    let listed = only_json(&out)["claims"].clone();
    assert_eq!(listed[0]["idp_entity_id"], "https://idp.corp.example/md");
    assert_eq!(listed[0]["state"], "verified");
    assert!(err.contains("verified"), "{err}");
    // A public mail provider cannot be claimed here either.
    let (ok, _, err) = cli(
        dir.path(),
        &[
            "sso",
            "set",
            "--account",
            &account,
            "--domain",
            "gmail.com",
            "--idp-metadata",
            good.to_str().unwrap(),
        ],
    );
    assert!(!ok && err.contains("public mail provider"), "{err}");
    let (ok, _, err) = cli(dir.path(), &["sso", "remove", "--domain", "corp.example"]);
    assert!(ok, "{err}");
    let (ok, _, err) = cli(dir.path(), &["sso", "remove", "--domain", "corp.example"]);
    assert!(!ok && err.contains("no SAML configuration"), "{err}");
}

#[test]
fn operator_commands_that_change_data_are_in_the_audit_log() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (ok, out, err) = cli_as(
        "alice",
        d,
        &[
            "license",
            "create",
            "--email",
            "ops@example.com",
            "--tier",
            "team",
            "--json",
        ],
    );
    assert!(ok, "{err}");
    let created = only_json(&out);
    let (account, id) = (
        created["account_id"].as_str().unwrap().to_owned(),
        created["license_id"].as_str().unwrap().to_owned(),
    );
    let (ok, _, err) = cli_as(
        "bob",
        d,
        &[
            "member",
            "add",
            "--account",
            &account,
            "--email",
            "dev@example.com",
        ],
    );
    assert!(ok, "{err}");
    assert!(cli_as("bob", d, &["license", "suspend", "--id", &id]).0);
    // Reading changes nothing, so it is not recorded.
    assert!(cli_as("carol", d, &["member", "list", "--account", &account]).0);

    let (ok, out, err) = cli_as(
        "carol",
        d,
        &["audit", "list", "--account", &account, "--json"],
    );
    assert!(ok, "{err}");
    assert_eq!(out.lines().count(), 1, "exactly one JSON document: {out}");
    let events = only_json(&out)["events"].clone();
    let got: Vec<(&str, &str, &str)> = events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["actor"].as_str().unwrap(),
                e["action"].as_str().unwrap(),
                e["target"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("operator:bob", "license.suspended", id.as_str()),
            ("operator:bob", "member.added", "dev@example.com"),
            ("operator:alice", "license.created", id.as_str()),
        ]
    );
    assert_eq!(events[0]["before"], "active");
    assert_eq!(events[0]["after"], "suspended");
    assert!(events[2]["after"]
        .as_str()
        .unwrap()
        .starts_with("team for ops@example.com"));
    assert!(
        !out.contains(created["license_key"].as_str().unwrap()),
        "never a key"
    );

    let only = |args: &[&str]| {
        let mut all = vec!["audit", "list", "--account", account.as_str(), "--json"];
        all.extend_from_slice(args);
        let (ok, out, err) = cli_as("carol", d, &all);
        assert!(ok, "{err}");
        only_json(&out)["events"].as_array().unwrap().len()
    };
    assert_eq!(only(&["--actor", "operator:alice"]), 1);
    assert_eq!(only(&["--action", "member.added"]), 1);
    assert_eq!(only(&["--since", "2100-01-01T00:00:00Z"]), 0);
    let (ok, _, err) = cli_as("carol", d, &["audit", "list", "--action", "keys.stolen"]);
    assert!(!ok);
    assert!(
        err.contains("unknown action \"keys.stolen\"") && err.contains("keys.rotated"),
        "{err}"
    );
}

/// Read-only commands never migrate; with `TIDEMARK_MIGRATE=never` no command but `migrate`
/// does; either refuses a schema that is not current and says what to run.
#[test]
fn read_only_commands_never_migrate() {
    let dir = tempfile::tempdir().unwrap();
    let migrations = |dir: &std::path::Path| -> Option<i64> {
        let db = dir.join("tidemark.db");
        let out = Command::new("python3")
            .args([
                "-c",
                "import sqlite3, sys\ntry:\n    print(sqlite3.connect(sys.argv[1]).execute('SELECT COUNT(*) FROM _sqlx_migrations').fetchone()[0])\nexcept sqlite3.OperationalError:\n    print('none')",
            ])
            .arg(db)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    };

    for read in [
        &["license", "list", "--json"][..],
        &["audit", "list", "--json"],
        &["sso", "list"],
    ] {
        let (ok, _, err) = cli(dir.path(), read);
        assert!(!ok, "{read:?} on an empty database must refuse");
        assert!(err.contains("run `tidemark-server migrate` first"), "{err}");
        assert_eq!(migrations(dir.path()), None, "{read:?} migrated");
    }
    let (ok, _, err) = run(
        dir.path(),
        &[("TIDEMARK_MIGRATE", "never")],
        &[
            "license",
            "create",
            "--email",
            "a@example.com",
            "--tier",
            "team",
        ],
    );
    assert!(!ok && err.contains("migrations are pending"), "{err}");
    assert_eq!(migrations(dir.path()), None);

    let (ok, _, err) = run(dir.path(), &[("TIDEMARK_MIGRATE", "never")], &["migrate"]);
    assert!(ok, "{err}");
    let applied = migrations(dir.path()).expect("migrated");
    assert!(applied > 5, "{applied}");
    let (ok, out, err) = cli(dir.path(), &["license", "list", "--json"]);
    assert!(ok, "{err}");
    assert_eq!(only_json(&out)["licenses"], serde_json::json!([]));

    let (ok, _, err) = run(
        dir.path(),
        &[("TIDEMARK_MIGRATE", "sometimes")],
        &["migrate"],
    );
    assert!(
        !ok && err.contains("TIDEMARK_MIGRATE") && err.contains("auto or never"),
        "{err}"
    );
}

#[test]
fn prune_takes_an_age_says_what_it_removed_and_refuses_a_bad_age() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, out, err) = cli(dir.path(), &["prune", "--dry-run", "--json"]);
    assert!(ok, "{err}");
    let report = only_json(&out);
    assert_eq!(report["dry_run"], true);
    assert_eq!(report["pruned"], serde_json::json!([]));
    // The documented default: 90 days before now.
    let cutoff = chrono::DateTime::parse_from_rfc3339(report["cutoff"].as_str().unwrap()).unwrap();
    let days = (chrono::Utc::now() - cutoff.with_timezone(&chrono::Utc)).num_hours() as f64 / 24.0;
    assert!((days - 90.0).abs() < 0.1, "{days}");

    let (ok, out, _) = cli(dir.path(), &["prune", "--branches-older-than", "2w"]);
    assert!(ok);
    assert!(
        out.starts_with("removed 0 lines with no push since "),
        "{out}"
    );

    let (ok, _, err) = cli(dir.path(), &["prune", "--branches-older-than", "90"]);
    assert!(!ok);
    assert!(err.contains("\"90\" is not an age"), "{err}");
}
