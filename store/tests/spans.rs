//! A scan's findings stored as spans of its branch (issue 36), on both backends: over random
//! push sequences on two branches, every scan's findings read back exactly as pushed (order,
//! duplicates, statuses, severities and texts), and every read (pages, counts, diffs) is
//! the same for scans stored as spans and for the same scans stored one row per finding, as
//! releases before spans stored them.
#![allow(clippy::unwrap_used)]

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use tidemark_domain::push::ValidPush;
use tidemark_store::dashboard::{
    diff_scans, find_scan, finding_counts, finding_key, framework_counts, list_findings,
    list_findings_from, FindingFilter, FindingRow, FindingSort, PageStart, ScanDiff, SortDirection,
};
use tidemark_store::pushes::record_push;
use tidemark_store::spans::moving::{move_all, move_batch, scans_as_rows};
use tidemark_store::testing::{appended, fresh, insert_pushing_account, push_context};
use tidemark_store::{on_db, Writer};

type Pushed = (String, String, String, String, String, String);

fn random_finding(rng: &mut StdRng) -> Pushed {
    let rule = format!("cis-{}", rng.gen_range(0..25));
    (
        rule.clone(),
        format!("bucket-{}", rng.gen_range(0..3)),
        ["PASS", "FAIL", "WARN", "ERROR", "SKIP"][rng.gen_range(0..5)].to_owned(),
        ["critical", "high", "medium", "low"][rng.gen_range(0..4)].to_owned(),
        // Texts shared between findings, and some that change.
        format!("{rule}: public access {}", rng.gen_range(0..2)),
        format!("Turn it off ({})", rng.gen_range(0..2)),
    )
}

fn push(second: i64, findings: &[Pushed], branch: &str) -> ValidPush {
    let at = tidemark_domain::to_rfc3339((1_795_000_000 + second) * 1000);
    let findings: Vec<Value> = findings
        .iter()
        .map(|(rule, resource, status, severity, message, remediation)| {
            json!({"rule_id": rule, "resource": resource, "status": status,
                   "severity": severity, "message": message, "remediation": remediation})
        })
        .collect();
    let body = json!({
        "project_label": "api", "cloud": "aws", "cloud_account_id": "123456789012",
        "frameworks": ["cis", "soc2"], "score": 70.0, "passed": 1, "failed": 1,
        "severity_counts": {"critical": 0, "high": 1, "medium": 0, "low": 0},
        "findings": findings, "state_source": "ci", "scanned_at": at,
        "git": {"branch": branch, "default_branch": "main"},
    });
    ValidPush::parse(body.to_string().as_bytes()).unwrap()
}

/// Everything the dashboard and the exports read of one scan.
#[derive(Debug, PartialEq)]
struct Reads {
    in_order: Vec<FindingRow>,
    by_severity: Vec<FindingRow>,
    failing: Vec<FindingRow>,
    counts: Vec<(String, String, i64)>,
    frameworks: Vec<(String, String, String, i64)>,
    diff: Option<ScanDiff>,
}

async fn reads(
    db: &Writer,
    project: &tidemark_store::ProjectId,
    scan_id: &tidemark_store::ScanId,
) -> Reads {
    let (scan, previous) = find_scan(db.as_ref(), &acct("acct_a"), project, scan_id)
        .await
        .unwrap()
        .unwrap();
    let page = |filter: FindingFilter| async move {
        list_findings(db.as_ref(), project, scan.seq, &filter, 0, 10_000)
            .await
            .unwrap()
            .0
    };
    let mut counts = finding_counts(db.as_ref(), project, scan.seq)
        .await
        .unwrap();
    counts.sort();
    let mut frameworks = framework_counts(db.as_ref(), project, scan.seq, &scan.frameworks)
        .await
        .unwrap();
    frameworks.sort();
    let diff = match previous {
        Some(p) => Some(
            diff_scans(db.as_ref(), project, scan.seq, p.seq, 10_000)
                .await
                .unwrap(),
        ),
        None => None,
    };
    Reads {
        in_order: page(FindingFilter::default()).await,
        by_severity: page(FindingFilter {
            sort: FindingSort::Severity,
            ..FindingFilter::default()
        })
        .await,
        failing: page(FindingFilter {
            status: Some("FAIL".into()),
            text: Some("access 1".into()),
            ..FindingFilter::default()
        })
        .await,
        counts,
        frameworks,
        diff,
    }
}

/// The ordinals are where each layout keeps the scanner's order; what is read is the rest.
fn without_ordinals(mut reads: Reads) -> Reads {
    for rows in [
        &mut reads.in_order,
        &mut reads.by_severity,
        &mut reads.failing,
    ] {
        rows.iter_mut().for_each(|r| r.ordinal = 0);
    }
    if let Some(d) = reads.diff.as_mut() {
        d.new
            .iter_mut()
            .chain(d.fixed.iter_mut())
            .for_each(|r| r.ordinal = 0);
    }
    reads
}

tidemark_store::test_each_backend! {
    async fn every_scan_reads_back_exactly_as_pushed_in_either_layout(backend) {
        let t = fresh(backend).await;
        let db = t.writer();
        insert_pushing_account(&db, &acct("acct_a")).await;
        let mut rng = StdRng::seed_from_u64(36);
        let mut lines: Vec<(&str, Vec<Pushed>)> = vec![
            ("main", (0..30).map(|_| random_finding(&mut rng)).collect()),
            ("feature/x", Vec::new()),
        ];
        let mut pushed: Vec<(tidemark_store::ScanId, Vec<Pushed>)> = Vec::new();
        let mut project = tidemark_store::ProjectId::default();
        for second in 0..40 {
            // Mostly main; the branch starts from main's findings.
            let which = usize::from(rng.gen_range(0..4) == 0);
            if which == 1 && lines[1].1.is_empty() {
                lines[1].1 = lines[0].1.clone();
            }
            let branch = lines[which].0;
            let findings = &mut lines[which].1;
            for _ in 0..rng.gen_range(0..5) {
                match rng.gen_range(0..5) {
                    0 if !findings.is_empty() => {
                        let i = rng.gen_range(0..findings.len());
                        findings[i].2 = ["PASS", "FAIL"][rng.gen_range(0..2)].to_owned();
                    }
                    1 if !findings.is_empty() => {
                        findings.remove(rng.gen_range(0..findings.len()));
                    }
                    2 => {
                        let i = rng.gen_range(0..=findings.len());
                        findings.insert(i, random_finding(&mut rng));
                    }
                    3 if !findings.is_empty() => {
                        // The same finding listed twice.
                        let i = rng.gen_range(0..findings.len());
                        findings.insert(i, findings[i].clone());
                    }
                    _ if findings.len() > 1 => {
                        let moved = findings.remove(rng.gen_range(0..findings.len()));
                        findings.insert(rng.gen_range(0..findings.len()), moved);
                    }
                    _ => {}
                }
            }
            let mut ctx = push_context(&acct("acct_a"));
            ctx.now = 1_795_000_000_000 + second * 1000;
            let stored = appended(
                record_push(&db, ctx, push(second, findings, branch)).await.unwrap(),
            );
            project = stored.project_id;
            pushed.push((stored.scan_id, findings.clone()));
        }

        let mut as_spans = Vec::new();
        for (scan_id, findings) in &pushed {
            let got = reads(&db, &project, scan_id).await;
            let rows: Vec<Pushed> = got
                .in_order
                .iter()
                .map(|r| (r.rule_id.clone(), r.resource.clone(), r.status.clone(),
                          r.severity.clone(), r.message.clone(), r.remediation.clone()))
                .collect();
            assert_eq!(&rows, findings, "{backend:?}: scan {scan_id}");
            as_spans.push(without_ordinals(got));
        }
        // Far fewer spans than findings pushed: only what changed was written.
        let (spans, pushed_rows): (i64, usize) = (
            on_db!(&db, pool => {
                sqlx::query_scalar("SELECT COUNT(*) FROM finding_spans").fetch_one(pool).await
            })
            .unwrap(),
            pushed.iter().map(|(_, f)| f.len()).sum(),
        );
        assert!(spans * 3 < pushed_rows as i64, "{backend:?}: {spans} spans for {pushed_rows} findings");

        // The same scans stored one row per finding read the same.
        tidemark_store::testing::store_as_rows(&db).await;
        for ((scan_id, _), expected) in pushed.iter().zip(&as_spans) {
            let got = without_ordinals(reads(&db, &project, scan_id).await);
            assert_eq!(&got, expected, "{backend:?}: scan {scan_id} as rows");
        }

        // Moved back to spans online, a few scans a batch, with pushes in between and a
        // restart from the beginning half-way (as after a kill): the same again, and compact.
        let mut cursor = None;
        for _ in 0..6 {
            cursor = move_batch(&db, &cursor, 60).await.unwrap().cursor;
        }
        assert!(cursor.is_some(), "half-way");
        assert!(scans_as_rows(db.as_ref()).await.unwrap() > 0);
        let mut ctx = push_context(&acct("acct_a"));
        ctx.now = 1_795_000_100_000;
        let late = appended(record_push(&db, ctx, push(100, &lines[0].1, "main")).await.unwrap());
        pushed.push((late.scan_id.clone(), lines[0].1.clone()));
        as_spans.push(without_ordinals(reads(&db, &project, &late.scan_id).await));
        let report = move_all(&db, 60).await.unwrap();
        assert_eq!(report.left, 0, "{report:?}");
        assert_eq!(scans_as_rows(db.as_ref()).await.unwrap(), 0);
        for ((scan_id, _), expected) in pushed.iter().zip(&as_spans) {
            let got = without_ordinals(reads(&db, &project, scan_id).await);
            assert_eq!(&got, expected, "{backend:?}: scan {scan_id} moved");
        }
        let moved_spans: i64 = on_db!(&db, pool => {
            sqlx::query_scalar("SELECT COUNT(*) FROM finding_spans").fetch_one(pool).await
        })
        .unwrap();
        let rows_left: i64 = on_db!(&db, pool => {
            sqlx::query_scalar("SELECT COUNT(*) FROM findings").fetch_one(pool).await
        })
        .unwrap();
        assert_eq!(rows_left, 0);
        // The move joins what each line's scans share, as pushes do (one more line start
        // where the late push's spans begin).
        assert!(moved_spans < spans * 2, "{backend:?}: {moved_spans} spans moved, {spans} pushed");
    }
}

tidemark_store::test_each_backend! {
    async fn a_scan_a_previous_release_wrote_between_pushes_stays_as_rows(backend) {
        let t = fresh(backend).await;
        let db = t.writer();
        insert_pushing_account(&db, &acct("acct_a")).await;
        let mut rng = StdRng::seed_from_u64(7);
        let mut findings: Vec<Pushed> = (0..12).map(|_| random_finding(&mut rng)).collect();
        let mut scans = Vec::new();
        for second in 0..3 {
            findings[second as usize].2 = "FAIL".into();
            findings.swap(3, 4);
            let mut ctx = push_context(&acct("acct_a"));
            ctx.now = 1_795_000_000_000 + second * 1000;
            scans.push(appended(record_push(&db, ctx, push(second, &findings, "main")).await.unwrap()));
        }
        let project = scans[0].project_id.clone();
        let before: Vec<Reads> = futures_reads(&db, &project, &scans).await;
        let (middle, _) = find_scan(db.as_ref(), &acct("acct_a"), &project, &scans[1].scan_id).await.unwrap().unwrap();
        tidemark_store::testing::store_scan_as_rows(&db, &project, middle.seq).await;
        assert_eq!(futures_reads(&db, &project, &scans).await, before, "{backend:?}: read as rows");
        let report = move_all(&db, 1_000).await.unwrap();
        assert_eq!((report.moved, report.left), (0, 1), "{backend:?}");
        assert_eq!(futures_reads(&db, &project, &scans).await, before, "{backend:?}: left as rows");
    }
}

async fn futures_reads(
    db: &Writer,
    project: &tidemark_store::ProjectId,
    scans: &[tidemark_store::pushes::StoredScan],
) -> Vec<Reads> {
    let mut out = Vec::new();
    for s in scans {
        out.push(without_ordinals(reads(db, project, &s.scan_id).await));
    }
    out
}

tidemark_store::test_each_backend! {
    async fn pages_reached_by_key_are_the_pages_by_number_in_every_order(backend) {
        let t = fresh(backend).await;
        let db = t.writer();
        insert_pushing_account(&db, &acct("acct_a")).await;
        let mut rng = StdRng::seed_from_u64(48);
        // Few rules and resources: many ties, which only the scanner's order breaks.
        let findings: Vec<Pushed> = (0..97).map(|_| random_finding(&mut rng)).collect();
        let stored = appended(
            record_push(&db, push_context(&acct("acct_a")), push(0, &findings, "main"))
                .await
                .unwrap(),
        );
        let project = stored.project_id;
        let (scan, _) = find_scan(db.as_ref(), &acct("acct_a"), &project, &stored.scan_id)
            .await
            .unwrap()
            .unwrap();
        let read = |filter: FindingFilter, start: PageStart, limit: i64| {
            let (db, project) = (db.clone(), project.clone());
            async move {
                list_findings_from(db.as_ref(), &project, scan.seq, &filter, &start, limit)
                    .await
                    .unwrap()
            }
        };
        let key = |ordinal: i64| {
            let (db, project) = (db.clone(), project.clone());
            async move {
                finding_key(db.as_ref(), &project, scan.seq, ordinal)
                    .await
                    .unwrap()
                    .expect("a finding of the scan")
            }
        };
        const SIZE: i64 = 7;
        let filters = [
            FindingFilter::default(),
            FindingFilter { status: Some("FAIL".into()), ..FindingFilter::default() },
            FindingFilter { text: Some("bucket-1".into()), ..FindingFilter::default() },
        ];
        for sort in FindingSort::ALL {
            for direction in [SortDirection::Ascending, SortDirection::Descending] {
                for base in &filters {
                    let filter = FindingFilter { sort, direction, ..base.clone() };
                    let what = format!("{backend:?} {sort:?} {direction:?} {base:?}");
                    let (all, total) = read(filter.clone(), PageStart::Offset(0), 10_000).await;
                    assert_eq!(total, all.len() as i64, "{what}");
                    assert!(all.len() > 2 * SIZE as usize, "{what}: enough for three pages");
                    // Forwards: each page starts after the last row of the one before.
                    let mut walked: Vec<FindingRow> = Vec::new();
                    let mut page = 0;
                    loop {
                        let start = match walked.last() {
                            None => PageStart::Offset(0),
                            Some(last) => PageStart::After(key(last.ordinal).await),
                        };
                        let (rows, counted) = read(filter.clone(), start, SIZE).await;
                        assert_eq!(counted, total, "{what}: page {page}'s total");
                        let (by_number, _) =
                            read(filter.clone(), PageStart::Offset(page * SIZE), SIZE).await;
                        assert_eq!(rows, by_number, "{what}: page {page}");
                        if rows.is_empty() {
                            break;
                        }
                        walked.extend(rows);
                        page += 1;
                    }
                    assert_eq!(walked, all, "{what}: forwards");
                    // Backwards: each page ends before the first row of the one after.
                    let mut back: Vec<FindingRow> = Vec::new();
                    let mut first = all.last().unwrap().ordinal;
                    let (last_page, _) =
                        read(filter.clone(), PageStart::After(key(all[all.len() - 2].ordinal).await), SIZE).await;
                    assert_eq!(last_page, all[all.len() - 1..], "{what}: after the last but one");
                    back.push(last_page[0].clone());
                    loop {
                        let (rows, _) = read(filter.clone(), PageStart::Before(key(first).await), SIZE).await;
                        if rows.is_empty() {
                            break;
                        }
                        first = rows[0].ordinal;
                        back.splice(0..0, rows);
                    }
                    assert_eq!(back, all, "{what}: backwards");
                }
            }
        }
    }
}

/// A test account's id (tests name theirs `acct_a`, `acct_b`).
fn acct(s: &str) -> tidemark_store::AccountId {
    tidemark_store::AccountId::trusted(s)
}
