//! The development demo account as a newcomer sees it, on both databases: a posture a
//! compliance person would believe (requirements passing, failing, triaged and manual beside
//! each other, on two clouds and three frameworks), a pull request, drift and triage.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use std::collections::HashSet;

use crate::common::TestApp;

tidemark_store::test_each_backend! {
    async fn the_demo_shows_a_posture_a_compliance_person_would_believe(backend) {
        let app = TestApp::spawn_with(backend, &[("TIDEMARK_DEV_DEMO", "1")]).await;
        let db = app.test_db.db.as_ref();
        let licenses = tidemark_store::licenses::licenses_for_email(db, server::operator::demo::DEMO_EMAIL)
            .await
            .unwrap();
        let account = licenses[0].0.account_id.clone();
        let rollup = tidemark_store::posture::read::account_rollup(db, &account).await.unwrap();
        let projects: HashSet<_> = rollup.iter().map(|r| r.label.clone()).collect();
        assert_eq!(projects.len(), 3, "{backend:?}: {rollup:?}");
        let clouds: HashSet<_> = rollup.iter().map(|r| r.cloud.clone()).collect();
        assert_eq!(clouds.len(), 2, "{backend:?}");
        let frameworks: HashSet<_> = rollup.iter().filter_map(|r| r.framework.clone()).collect();
        assert_eq!(
            frameworks,
            HashSet::from(["cis-aws-2.0".to_owned(), "cis-gcp-2.0".to_owned(), "soc2".to_owned()]),
            "{backend:?}"
        );
        // Mostly passing, not perfect: what a real account looks like. Every project fails
        // something, and every framework passes most of its requirements.
        let mut shares = Vec::new();
        for row in &rollup {
            let t = row.tally;
            let evaluated = t.passed + t.failed + t.triaged;
            let share = f64::from(t.passed) / f64::from(evaluated);
            assert!((0.5..=1.0).contains(&share), "{backend:?}: {} {:?} {t:?}", row.label, row.framework);
            shares.push(share);
        }
        for label in &projects {
            let failed: u32 = rollup.iter().filter(|r| &r.label == label).map(|r| r.tally.failed).sum();
            assert!(failed > 0, "{backend:?}: {label} fails nothing");
        }
        assert!(shares.iter().filter(|s| **s < 1.0).count() >= 4, "{backend:?}: {shares:?}");
        // Manual checks are skipped (not evaluated), and the teammate's triage holds.
        assert!(rollup.iter().any(|r| r.tally.not_evaluated > 0), "{backend:?}");
        assert!(rollup.iter().any(|r| r.tally.triaged > 0), "{backend:?}");
        // The pull requests and the drift the demo tells of are there.
        let pulls: i64 = app.count_where("branches", "pr_number IS NOT NULL").await;
        assert_eq!(pulls, 2, "{backend:?}");
        let drifted: i64 = app.count_where("scans", "drifted IS NOT NULL").await;
        assert!(drifted > 0, "{backend:?}");
        assert_eq!(app.count("scans").await, 3 * 45 + 3, "{backend:?}");
        // CIS AWS 2.0's whole catalogue is published: its 64 requirements, every rule the
        // demo's scans check among them, so its page lists the unchecked ones as such.
        let catalogue = tidemark_store::catalogues::find_catalogue(db, "cis-aws-2.0").await.unwrap().unwrap().1;
        assert_eq!(catalogue.requirements.len(), 64, "{backend:?}");
        assert_eq!(catalogue.manual(), 9);
        let listed: HashSet<&str> = catalogue.requirements.iter().map(|r| r.rule_id.as_str()).collect();
        for check in server::operator::demo::catalogue::CIS_AWS {
            assert!(listed.contains(check.rule), "{} is not in the catalogue", check.rule);
        }
    }
}
