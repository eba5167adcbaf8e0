//! The written upgrade policy (docs/operations.md), pinned: a migration only *expands* the
//! schema, so the previous release keeps working on it during a rolling upgrade. Dropping or
//! renaming something, changing a column, or adding a NOT NULL column without a default
//! breaks the previous release; such a step ("contract") needs a `-- contract:` line saying
//! which release stopped using what it removes.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

/// Migrations written before the policy existed (the SSO claims rework replaced two tables).
const BEFORE_THE_POLICY: &[&str] = &["20261123000001_sso_claims.sql"];

/// The statements of `sql` that would break the previous release, upper-cased.
fn breaking(sql: &str) -> Vec<String> {
    let code: String = sql
        .lines()
        .map(|line| line.split("--").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    code.split(';')
        .map(|stmt| {
            stmt.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_uppercase()
        })
        .filter(|stmt| {
            stmt.contains("DROP TABLE")
                || stmt.contains("DROP COLUMN")
                || stmt.contains("RENAME")
                || stmt.contains("ALTER COLUMN")
                || (stmt.contains("ADD COLUMN")
                    && stmt.contains("NOT NULL")
                    && !stmt.contains("DEFAULT"))
        })
        .collect()
}

#[test]
fn every_migration_keeps_the_previous_release_working() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../migrations");
    let mut checked = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".sql") || BEFORE_THE_POLICY.contains(&name.as_str()) {
            continue;
        }
        let sql = std::fs::read_to_string(&path).unwrap();
        let bad = breaking(&sql);
        assert!(
            bad.is_empty() || sql.contains("-- contract:"),
            "{name} would break the previous release during a rolling upgrade: {bad:?} \
             (see docs/operations.md, or add a `-- contract:` line naming the release that \
             stopped using it)"
        );
        checked += 1;
    }
    assert!(checked >= 8, "found only {checked} migrations under {dir}");
}

#[test]
fn the_check_sees_what_breaks() {
    assert!(breaking("ALTER TABLE a ADD COLUMN b TEXT;").is_empty());
    assert!(breaking("ALTER TABLE a ADD COLUMN b BIGINT NOT NULL DEFAULT 0;").is_empty());
    assert!(breaking("-- DROP TABLE a is only a comment\nCREATE INDEX i ON a (b);").is_empty());
    assert_eq!(
        breaking("alter table a\n  add column b text not null;").len(),
        1
    );
    assert_eq!(
        breaking("DROP TABLE a; ALTER TABLE b RENAME TO a;").len(),
        2
    );
    assert_eq!(breaking("ALTER TABLE a DROP COLUMN b").len(), 1);
    assert_eq!(
        breaking("ALTER TABLE a ALTER COLUMN b TYPE BIGINT").len(),
        1
    );
}
