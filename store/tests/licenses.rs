//! Licences as the vendor's API changes them, on both backends: one audited change per call
//! with a version that guards it, overrides that cannot contradict themselves, keyset pages,
//! idempotent creation, and vendor tokens.
#![allow(clippy::unwrap_used)]

use tidemark_domain::audit::{Action, Actor, AuditContext};
use tidemark_domain::vendor::{VendorRole, VendorToken};
use tidemark_store::licenses::{
    create_license, find_license, find_license_for_account, page_licenses, update_license,
    CreateOutcome, IdempotencyClaim, LicenseEdit, LicenseFilter, LicenseStateFilter, NewLicense,
    UpdateOutcome,
};
use tidemark_store::testing::{audit, fresh, insert_license};
use tidemark_store::vendor_tokens::{self, NewVendorToken};
use tidemark_store::Writer;
use tidemark_wire::{Feature, Tier};

fn new_license(email: &str, now: i64) -> NewLicense {
    NewLicense {
        account_id: tidemark_domain::ids::new_account_id(),
        license_id: tidemark_domain::ids::new_license_id(),
        email: email.to_owned(),
        tier: Tier::Team,
        lookup: tidemark_domain::secrets::LicenseKey::generate()
            .client_hash()
            .lookup(),
        key_ciphertext: "sealed".into(),
        expires_at: now + 1_000_000,
        max_projects: None,
        max_machines: None,
        features_added: vec![Feature::CustomFrameworks],
        features_removed: Vec::new(),
        now,
    }
}

async fn audit_actions(db: &Writer, target: &str) -> Vec<(String, Option<String>)> {
    let query = tidemark_store::audit::AuditQuery {
        limit: 100,
        ..Default::default()
    };
    let page = tidemark_store::audit::list_audit(db, &query).await.unwrap();
    page.into_iter()
        .filter(|e| e.target == target)
        .map(|e| (e.action, e.after_summary))
        .collect()
}

tidemark_store::test_each_backend! {
    async fn a_change_is_one_audited_step_guarded_by_the_licences_version(backend) {
        let t = fresh(backend).await;
        let account = insert_license(&t.db, "ops@example.com").await;
        let license = find_license_for_account(&t.db, &account).await.unwrap().unwrap();
        assert_eq!(license.version, 1);
        assert!(license.features().contains(&Feature::DriftDetection));

        // Tier, overrides and a suspension with its reason, in one call.
        let edit = LicenseEdit {
            tier: Some(Tier::Agency),
            features_added: Some(vec![Feature::PrioritySupport]),
            features_removed: Some(vec![Feature::DriftDetection]),
            suspended: Some((true, Some("payment failed".into()))),
            ..LicenseEdit::default()
        };
        let UpdateOutcome::Updated(after) = update_license(&t.db, &license.id, Some(1), &edit, &audit()).await.unwrap() else {
            panic!("not updated");
        };
        assert_eq!(after.version, 2);
        assert_eq!(after.features(), vec![Feature::HostedDashboard, Feature::CustomFrameworks, Feature::PrioritySupport]);
        assert!(after.suspended_at.is_some());
        assert_eq!(find_license(&t.db, &license.id).await.unwrap().unwrap(), after, "as stored");
        let actions = audit_actions(&t.db, &license.id).await;
        assert!(actions.contains(&("license.suspended".into(), Some("suspended (payment failed)".into()))), "{actions:?}");
        assert!(actions.iter().any(|(a, after)| a == "license.updated"
            && after.as_deref() == Some("tier agency, features +priority_support -drift_detection")), "{actions:?}");

        // The old version is stale: nothing changes, and the licence as it is comes back.
        let later = LicenseEdit { expires_at: Some(after.expires_at + 1), ..LicenseEdit::default() };
        assert_eq!(update_license(&t.db, &license.id, Some(1), &later, &audit()).await.unwrap(), UpdateOutcome::Stale(after.clone()));
        // The same values again change nothing and keep the version.
        assert_eq!(update_license(&t.db, &license.id, Some(2), &edit, &audit()).await.unwrap(), UpdateOutcome::Updated(after.clone()));
        // A feature both added and removed is refused whole.
        let both = LicenseEdit { features_added: Some(vec![Feature::DriftDetection]), tier: Some(Tier::Enterprise), ..LicenseEdit::default() };
        assert!(matches!(update_license(&t.db, &license.id, None, &both, &audit()).await.unwrap(), UpdateOutcome::Invalid(why) if why.contains("drift_detection")));
        assert_eq!(find_license(&t.db, &license.id).await.unwrap().unwrap().tier, Tier::Agency);
        assert_eq!(update_license(&t.db, "lcn_missing", None, &later, &audit()).await.unwrap(), UpdateOutcome::NotFound);
    }
}

tidemark_store::test_each_backend! {
    async fn pages_follow_the_keyset_and_every_filter(backend) {
        let t = fresh(backend).await;
        let now = tidemark_domain::now_millis();
        let mut made = Vec::new();
        for i in 0..7 {
            let mut new = new_license(&format!("buyer{}@example.com", i % 2), now + i / 3);
            if i == 5 {
                new.tier = Tier::Enterprise;
            }
            if i == 6 {
                new.expires_at = now - 1;
            }
            create_license(&t.db, &new, None, &audit()).await.unwrap();
            made.push(new.license_id);
        }
        let filter = LicenseFilter::default();
        let mut seen = Vec::new();
        let mut after: Option<(i64, String)> = None;
        loop {
            let page = page_licenses(&t.db, &filter, after.as_ref().map(|(c, id)| (*c, id.as_str())), 3, now).await.unwrap();
            if page.is_empty() {
                break;
            }
            after = page.last().map(|l| (l.created_at, l.id.clone()));
            seen.extend(page.into_iter().map(|l| l.id));
        }
        let mut expected = made.clone();
        expected.sort_by_key(|id| (made.iter().position(|m| m == id).unwrap() as i64 / 3, id.clone()));
        assert_eq!(seen, expected, "every licence once, in (created, id) order");

        let db = &t.db;
        let only = |f: LicenseFilter| async move {
            page_licenses(db, &f, None, 100, now).await.unwrap().into_iter().map(|l| l.id).collect::<Vec<_>>()
        };
        assert_eq!(only(LicenseFilter { tier: Some(Tier::Enterprise), ..Default::default() }).await, vec![made[5].clone()]);
        assert_eq!(only(LicenseFilter { state: Some(LicenseStateFilter::Expired), ..Default::default() }).await, vec![made[6].clone()]);
        assert_eq!(only(LicenseFilter { state: Some(LicenseStateFilter::Active), email: Some("BUYER1@example.com".into()), ..Default::default() }).await.len(), 3);
        assert!(only(LicenseFilter { state: Some(LicenseStateFilter::Suspended), ..Default::default() }).await.is_empty());
    }
}

tidemark_store::test_each_backend! {
    async fn an_idempotency_key_makes_one_licence(backend) {
        let t = fresh(backend).await;
        let now = tidemark_domain::now_millis();
        let claim = IdempotencyClaim { token_id: "vtk_1".into(), key: "order-42".into(), request_sha256: "aa".into() };
        let first = new_license("a@example.com", now);
        assert_eq!(create_license(&t.db, &first, Some(&claim), &audit()).await.unwrap(), CreateOutcome::Created);
        let retry = new_license("a@example.com", now);
        assert_eq!(
            create_license(&t.db, &retry, Some(&claim), &audit()).await.unwrap(),
            CreateOutcome::Earlier { license_id: first.license_id.clone(), request_sha256: "aa".into() }
        );
        assert!(find_license(&t.db, &retry.license_id).await.unwrap().is_none(), "the retry made nothing");
        // Another token's key of the same name is its own.
        let other = IdempotencyClaim { token_id: "vtk_2".into(), ..claim };
        assert_eq!(create_license(&t.db, &retry, Some(&other), &audit()).await.unwrap(), CreateOutcome::Created);
        assert_eq!(find_license(&t.db, &first.license_id).await.unwrap().unwrap().features_added, vec![Feature::CustomFrameworks]);
    }
}

tidemark_store::test_each_backend! {
    async fn vendor_tokens_are_named_once_expire_and_revoke(backend) {
        let t = fresh(backend).await;
        let now = tidemark_domain::now_millis();
        let (a, b) = (VendorToken::generate(), VendorToken::generate());
        let (ha, hb) = (a.hash(), b.hash());
        let new = |id: &'static str, hash, expires_at| NewVendorToken {
            id, name: "billing", role: VendorRole::Billing, hash, prefix: "tmk_vendor_abcdef", expires_at,
        };
        assert!(vendor_tokens::create(&t.db, &new("vtk_a", &ha, None), &audit()).await.unwrap());
        assert!(!vendor_tokens::create(&t.db, &new("vtk_b", &hb, None), &audit()).await.unwrap(), "the name is taken");
        let found = vendor_tokens::authenticate(&t.db, &ha, now).await.unwrap().unwrap();
        assert_eq!((found.id.as_str(), found.role), ("vtk_a", VendorRole::Billing));
        assert_eq!(found.created_by, "operator:tests");
        assert_eq!(vendor_tokens::list(&t.db).await.unwrap()[0].last_used_at, Some(now), "its use is noted");
        assert!(vendor_tokens::authenticate(&t.db, &hb, now).await.unwrap().is_none());

        assert!(vendor_tokens::revoke(&t.db, "vtk_a", &audit()).await.unwrap());
        assert!(!vendor_tokens::revoke(&t.db, "vtk_a", &audit()).await.unwrap());
        assert!(vendor_tokens::authenticate(&t.db, &ha, now).await.unwrap().is_none(), "revoked");
        // The name is free again; this one has run out.
        assert!(vendor_tokens::create(&t.db, &new("vtk_b", &hb, Some(now - 1)), &audit()).await.unwrap());
        assert!(vendor_tokens::authenticate(&t.db, &hb, now).await.unwrap().is_none(), "expired");
        let vendor = AuditContext { actor: Actor::Vendor { token_name: "crm".into() }, client_ip: None, at: now };
        assert!(vendor_tokens::revoke(&t.db, "vtk_b", &vendor).await.unwrap());
        let actions = audit_actions(&t.db, "vtk_b").await;
        assert_eq!(actions.iter().filter(|(a, _)| a == Action::VendorTokenCreated.as_str()).count(), 1);
    }
}
