//! The floor Tidemark's push path is measured against: the same rows a push writes (project
//! head update, one scan row, N findings, and the branch's open tracked findings read, with
//! the scan's new ones upserted) inserted straight into SQLite through its C API with
//! prepared statements, on the same schema, WAL and `synchronous=FULL` as the server. By default
//! one transaction per scan; with a group size of 8, eight scans share one transaction (one
//! fsync), which is the ceiling the server's group commit can approach.
//!
//! Usage: sqlite-baseline <scans> <findings-per-scan> <migrations-dir> [scans-per-transaction]

use std::time::Instant;

/// A fresh database in `dir` with the server's schema, settings and one account, project,
/// key and branch to push to.
fn open_seeded(
    dir: &std::path::Path,
    schema: &str,
) -> Result<rusqlite::Connection, Box<dyn std::error::Error>> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join("baseline.db");
    let conn = rusqlite::Connection::open(&path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.execute_batch(schema)?;
    conn.execute(
        "INSERT INTO accounts (id, created_at) VALUES ('acct', 0)",
        [],
    )?;
    conn.execute(
        "INSERT INTO projects (id, account_id, label, created_at) VALUES ('prj', 'acct', 'api', 0)",
        [],
    )?;

    conn.execute(
        "INSERT INTO api_keys (id, account_id, key_hash, prefix, machine, created_at) VALUES ('key', 'acct', 'h', 'p', 'm', 0)",
        [],
    )?;

    conn.execute(
        "INSERT INTO branches (id, account_id, project_id, created_at) VALUES ('br', 'acct', 'prj', 0)",
        [],
    )?;
    Ok(conn)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let scans: i64 = args.get(1).map_or(Ok(2000), |s| s.parse())?;
    let findings: i64 = args.get(2).map_or(Ok(50), |s| s.parse())?;
    // Every migration, in order: the server's indexes cost the baseline's inserts as much.
    let mut files: Vec<_> = std::fs::read_dir(args.get(3).map_or("migrations", String::as_str))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    let group: i64 = args.get(4).map_or(Ok(1), |s| s.parse())?;
    if group < 1 {
        return Err("scans-per-transaction must be at least 1".into());
    }
    files.retain(|p| p.extension().is_some_and(|e| e == "sql"));
    files.sort();
    let schema = files
        .iter()
        .map(std::fs::read_to_string)
        .collect::<Result<Vec<_>, _>>()?
        .join("\n");

    let dir = std::env::temp_dir().join(format!("tidemark-baseline-{}", std::process::id()));
    let mut conn = open_seeded(&dir, &schema)?;

    let started = Instant::now();
    let mut seq = 0;
    while seq < scans {
        let tx = conn.transaction()?;
        for _ in 0..group.min(scans - seq) {
            seq += 1;
            tx.prepare_cached(
                "UPDATE accounts SET write_guard = write_guard + 1 WHERE id = 'acct'",
            )?
            .execute([])?;
            tx.prepare_cached(
            "UPDATE projects SET scan_count = scan_count + 1, last_score = ?2, last_delta = ?2 - COALESCE(last_score, ?2), last_scan_id = ?3, last_body_hash = 'h' WHERE id = ?1 RETURNING scan_count, last_delta",
        )?
        .query_row(rusqlite::params!["prj", 80.0, format!("scan-{seq}")], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?))
        })?;
            tx.prepare_cached(
            "INSERT INTO scans (project_id, seq, scan_id, account_id, score, score_delta, passed, failed, \
             sev_critical, sev_high, sev_medium, sev_low, cloud, cloud_account_id, frameworks, state_source, \
             scanned_at, received_at, finding_count, body_hash) \
             VALUES ('prj', ?1, ?2, 'acct', 80.0, 0.0, 100, 50, 1, 2, 3, 4, 'gcp', 'acme', '[\"cis\"]', 'ci', ?3, ?3, ?4, 'h')",
        )?
        .execute(rusqlite::params![seq, format!("scan-{seq}"), seq, findings])?;
            {
                let mut insert = tx.prepare_cached(
                "INSERT INTO findings (project_id, scan_seq, ordinal, rule_id, resource, status, severity, message, remediation) \
                 VALUES ('prj', ?1, ?2, ?3, ?4, 'FAIL', 'high', ?5, ?6)",
            )?;
                for i in 0..findings {
                    insert.execute(rusqlite::params![
                        seq,
                        i,
                        format!("cis-gcp-2.0-{i}"),
                        format!("google_compute_instance.web_{i}"),
                        "Instance uses the default service account",
                        "Attach a dedicated service account with least privilege",
                    ])?;
                }
            }
            {
                // As `store::findings::tracking_statements`: read the branch's open tracked
                // findings, upsert the scan's findings that are not among them (all of them
                // in the first scan, none after: every scan has the same findings).
                let open: std::collections::HashSet<(String, String)> = tx
                    .prepare_cached(
                        "SELECT rule_id, resource FROM tracked_findings \
                         WHERE branch_id = 'br' AND fixed_seq IS NULL",
                    )?
                    .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<Result<_, _>>()?;
                let mut track = tx.prepare_cached(&format!(
                    "INSERT INTO tracked_findings (id, account_id, project_id, branch_id, rule_id, \
                     resource, severity, first_seq, first_seen_at, last_seq, last_seen_at) \
                     VALUES (?1, 'acct', 'prj', 'br', ?2, ?3, 'high', ?4, ?4, ?4, ?4){}",
                    tidemark_store::findings::TRACK_CONFLICT
                ))?;
                for i in 0..findings {
                    let key = (
                        format!("cis-gcp-2.0-{i}"),
                        format!("google_compute_instance.web_{i}"),
                    );
                    if !open.contains(&key) {
                        track.execute(rusqlite::params![
                            format!("fnd_{seq}_{i}"),
                            key.0,
                            key.1,
                            seq
                        ])?;
                    }
                }
            }
            tx.prepare_cached("UPDATE api_keys SET last_used_at = ?1 WHERE id = 'key'")?
                .execute([seq])?;
        }
        tx.commit()?;
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{{\"scans\": {scans}, \"findings_per_scan\": {findings}, \"scans_per_transaction\": {group}, \"seconds\": {secs:.3}, \"scans_per_second\": {:.1}}}",
        scans as f64 / secs
    );
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
