//! SSO claims on every backend: a pending claim routes nobody, the first verifier wins and
//! ends the others, claims and verifications race safely, identities keep to their namespace,
//! and an upgrade leaves no unproven configuration routing anybody.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use tidemark_domain::access::Role;
use tidemark_domain::sso::{ClaimState, ClaimableDomain};
use tidemark_domain::text::Email;
use tidemark_store::access::{self, IdentityOutcome, IdentityProvider, Subject};
use tidemark_store::sso::{self, ClaimOutcome, NewClaim, SsoConnection, VerifyOutcome, Vouched};
use tidemark_store::testing::{fresh, insert_account};
use tidemark_store::{Db, Writer};

const DOMAIN: &str = "victim.example";

fn domain() -> ClaimableDomain {
    ClaimableDomain::parse(DOMAIN).unwrap()
}

async fn claim_as(
    db: &Writer,
    account: &tidemark_store::AccountId,
    entity: &str,
    vouched: Vouched,
) -> ClaimOutcome {
    let certs = vec![format!("cert-of-{entity}")];
    sso::claim(
        db,
        &NewClaim {
            account_id: account,
            domain: &domain(),
            idp_entity_id: entity,
            idp_sso_url: "https://idp.example/sso",
            signing_certs: &certs,
            enforce: true,
            metadata_xml: "<EntityDescriptor/>",
            now: 1_000,
        },
        vouched,
        &tidemark_store::testing::audit(),
    )
    .await
    .unwrap()
}

fn stored(outcome: ClaimOutcome) -> SsoConnection {
    match outcome {
        ClaimOutcome::Stored(c) => *c,
        other => panic!("expected a stored claim, got {other:?}"),
    }
}

tidemark_store::test_each_backend! {
    async fn pending_claims_route_nobody_and_the_first_verifier_wins(backend) {
        let t = fresh(backend).await;
        for account in ["acct_owner", &acct("acct_attacker"), &acct("acct_third")] {
            insert_account(&t.db, account).await;
        }
        let attacker = stored(claim_as(&t.db, &acct("acct_attacker"), "evil", Vouched::ByDnsRecord).await);
        let owner = stored(claim_as(&t.db, &acct("acct_owner"), "good", Vouched::ByDnsRecord).await);
        let third = stored(claim_as(&t.db, &acct("acct_third"), "other", Vouched::ByDnsRecord).await);
        for c in [&attacker, &owner, &third] {
            assert_eq!(c.state, ClaimState::Pending, "{backend:?}");
            assert_eq!(c.challenge_token.len(), 32);
        }
        assert_ne!(attacker.challenge_token, owner.challenge_token);
        assert_eq!(
            sso::find_verified(&t.db, DOMAIN).await.unwrap(),
            None,
            "{backend:?}: a pending claim routes nobody"
        );

        let VerifyOutcome::Verified(won) = sso::verify(&t.db, &owner.id, &tidemark_store::audit::operator_context("tests", 2_000)).await.unwrap()
        else {
            panic!("{backend:?}: the owner's verification did not win");
        };
        assert_eq!(won.state, ClaimState::Verified);
        assert_eq!(won.verified_at, Some(2_000));
        assert_eq!(
            sso::find_verified(&t.db, DOMAIN)
                .await
                .unwrap()
                .map(|c| c.account_id),
            Some(acct("acct_owner"))
        );
        // Everybody else's claim is over, and says why.
        for loser in [&attacker, &third] {
            let after = sso::find_connection(&t.db, &loser.id)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(after.state, ClaimState::Ended, "{backend:?}");
            assert!(
                after
                    .ended_reason
                    .as_deref()
                    .unwrap()
                    .contains("Another account"),
                "{after:?}"
            );
            assert_eq!(
                sso::verify(&t.db, &loser.id, &tidemark_store::testing::audit()).await.unwrap(),
                VerifyOutcome::NotPending
            );
        }
        // Nobody else can claim (or re-claim) the domain now.
        assert_eq!(
            claim_as(&t.db, &acct("acct_attacker"), "evil", Vouched::ByDnsRecord).await,
            ClaimOutcome::VerifiedByAnotherAccount,
            "{backend:?}"
        );
        assert_eq!(
            claim_as(&t.db, &acct("acct_third"), "other", Vouched::ByOperator).await,
            ClaimOutcome::VerifiedByAnotherAccount
        );
        // The owner may replace its IdP: still verified, still the only one.
        let replaced = stored(claim_as(&t.db, &acct("acct_owner"), "good-2", Vouched::ByDnsRecord).await);
        assert_eq!(replaced.state, ClaimState::Verified);
        assert_eq!(replaced.idp_entity_id, "good-2");
        assert_eq!(replaced.id, owner.id);

        // Removing the verified claim frees the domain for a new, again pending, claim.
        assert_eq!(
            sso::remove(&t.db, DOMAIN, Some(&acct("acct_owner")), &tidemark_store::testing::audit())
                .await
                .unwrap(),
            1
        );
        let again = stored(claim_as(&t.db, &acct("acct_attacker"), "evil", Vouched::ByDnsRecord).await);
        assert_eq!(again.state, ClaimState::Pending, "{backend:?}");
        assert_ne!(
            again.challenge_token, attacker.challenge_token,
            "a revived claim gets a new token"
        );
        assert_eq!(again.ended_reason, None);
        assert_eq!(sso::find_verified(&t.db, DOMAIN).await.unwrap(), None);
    }
}

tidemark_store::test_each_backend! {
    async fn the_operator_vouches_at_once_and_ends_pending_claims(backend) {
        let t = fresh(backend).await;
        insert_account(&t.db, &acct("acct_owner")).await;
        insert_account(&t.db, &acct("acct_attacker")).await;
        let attacker = stored(claim_as(&t.db, &acct("acct_attacker"), "evil", Vouched::ByDnsRecord).await);
        let owner = stored(claim_as(&t.db, &acct("acct_owner"), "good", Vouched::ByOperator).await);
        assert_eq!(owner.state, ClaimState::Verified, "{backend:?}");
        assert_eq!(owner.next_check_at, None);
        let attacker = sso::find_connection(&t.db, &attacker.id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(attacker.state, ClaimState::Ended, "{backend:?}");
        // A pending claim of a verified domain found when it checks: lost, and ended.
        insert_account(&t.db, &acct("acct_late")).await;
        assert_eq!(
            claim_as(&t.db, &acct("acct_late"), "late", Vouched::ByDnsRecord).await,
            ClaimOutcome::VerifiedByAnotherAccount
        );
    }
}

tidemark_store::test_each_backend! {
    async fn concurrent_claims_and_verifications_leave_one_owner(backend) {
        let t = fresh(backend).await;
        let accounts: Vec<_> = (0..6).map(|i| acct(&format!("acct_racer_{i}"))).collect();
        for a in &accounts {
            insert_account(&t.db, a).await;
        }
        // Six accounts verify pending claims of one domain at the same moment.
        let mut pending = Vec::new();
        for a in &accounts {
            pending.push(stored(claim_as(&t.db, a, a, Vouched::ByDnsRecord).await));
        }
        let mut racers = tokio::task::JoinSet::new();
        for claim in pending.clone() {
            let db = t.writer();
            racers.spawn(async move { sso::verify(&db, &claim.id, &tidemark_store::testing::audit()).await.unwrap() });
        }
        let mut verified = 0;
        while let Some(outcome) = racers.join_next().await {
            if matches!(outcome.unwrap(), VerifyOutcome::Verified(_)) {
                verified += 1;
            }
        }
        assert_eq!(verified, 1, "{backend:?}: exactly one verification wins");
        let all = sso::list_connections(&t.db, None).await.unwrap();
        assert_eq!(
            all.iter()
                .filter(|c| c.state == ClaimState::Verified)
                .count(),
            1
        );
        assert_eq!(
            all.iter().filter(|c| c.state == ClaimState::Ended).count(),
            5
        );

        // Then operators of two accounts vouch for another domain at the same moment: one
        // wins, the other is told the domain is taken; never one account's IdP in the
        // other's row.
        let second = ClaimableDomain::parse("contested.example").unwrap();
        let mut racers = tokio::task::JoinSet::new();
        for (i, a) in accounts.iter().take(2).enumerate() {
            let (db, a, d) = (t.writer(), a.clone(), second.clone());
            racers.spawn(async move {
                for round in 0..5 {
                    let certs = vec![format!("cert-{i}")];
                    let entity = format!("idp-of-{a}");
                    let out = sso::claim(
                        &db,
                        &NewClaim {
                            account_id: &a,
                            domain: &d,
                            idp_entity_id: &entity,
                            idp_sso_url: "https://idp.example/sso",
                            signing_certs: &certs,
                            enforce: false,
                            metadata_xml: "<x/>",
                            now: 6_000 + round,
                        },
                        Vouched::ByOperator,
                        &tidemark_store::testing::audit(),
                    )
                    .await
                    .unwrap();
                    if let ClaimOutcome::Stored(c) = out {
                        assert_eq!(c.account_id, a);
                        assert_eq!(c.idp_entity_id, format!("idp-of-{a}"));
                    }
                }
            });
        }
        while let Some(done) = racers.join_next().await {
            done.unwrap();
        }
        let owners: Vec<SsoConnection> = sso::list_connections(&t.db, None)
            .await
            .unwrap()
            .into_iter()
            .filter(|c| c.domain == "contested.example" && c.state == ClaimState::Verified)
            .collect();
        assert_eq!(owners.len(), 1, "{backend:?}: {owners:?}");
        assert_eq!(
            owners[0].idp_entity_id,
            format!("idp-of-{}", owners[0].account_id)
        );
    }
}

tidemark_store::test_each_backend! {
    async fn saml_and_oidc_identities_never_meet(backend) {
        let t = fresh(backend).await;
        insert_account(&t.db, &acct("acct_a")).await;
        let add = |address: &'static str| {
            let db = t.writer();
            async move {
                access::add_member(
                    &db,
                    &acct("acct_a"),
                    &Email::parse(address).unwrap(),
                    Role::Member,
                    &tidemark_store::testing::audit(),
                )
                .await
                .unwrap()
                .unwrap()
                .user_id
            }
        };
        let oidc_user = add("owner@other.example").await;
        let saml_user = add("someone@victim.example").await;
        let issuer = "http://localhost:4455";
        let oidc = IdentityProvider::Oidc { issuer };
        let owner_email = Email::parse("owner@other.example").unwrap();
        assert_eq!(
            access::resolve_identity(
                &t.db,
                oidc,
                Subject::Stable("sub-42"),
                Some(&owner_email),
                1
            )
            .await
            .unwrap(),
            IdentityOutcome::User(oidc_user.clone())
        );
        // A SAML connection whose id is (even) the issuer's URL, asserting the same subject,
        // reaches its own namespace only: it binds its own person, never the OIDC user.
        let saml = IdentityProvider::Saml {
            connection_id: issuer,
        };
        let someone = Email::parse("someone@victim.example").unwrap();
        assert_eq!(
            access::resolve_identity(&t.db, saml, Subject::Stable("sub-42"), Some(&someone), 2)
                .await
                .unwrap(),
            IdentityOutcome::User(saml_user.clone()),
            "{backend:?}"
        );
        // ...and with no e-mail of its own it finds nobody.
        let other = IdentityProvider::Saml {
            connection_id: "sso_elsewhere",
        };
        assert_eq!(
            access::resolve_identity(&t.db, other, Subject::Stable("sub-42"), None, 3)
                .await
                .unwrap(),
            IdentityOutcome::EmailUnverified
        );
        // Transient NameIDs are matched by e-mail each time and never bound.
        let before = count_identities(&t.db).await;
        for at in [4, 5] {
            assert_eq!(
                access::resolve_identity(&t.db, other, Subject::Transient, Some(&someone), at)
                    .await
                    .unwrap(),
                IdentityOutcome::User(saml_user.clone())
            );
        }
        assert_eq!(count_identities(&t.db).await, before, "{backend:?}");
    }
}

async fn count_identities(db: &Db) -> i64 {
    let (n,): (i64,) = tidemark_store::on_db!(db, pool => {
        sqlx::query_as("SELECT COUNT(*) FROM identities").fetch_one(pool).await
    })
    .unwrap();
    n
}

tidemark_store::test_each_backend! {
    async fn replacing_a_connections_idp_unbinds_its_identities(backend) {
        let t = fresh(backend).await;
        insert_account(&t.db, &acct("acct_a")).await;
        let c = stored(claim_as(&t.db, &acct("acct_a"), "idp-1", Vouched::ByOperator).await);
        access::add_member(
            &t.db,
            &acct("acct_a"),
            &Email::parse("p@victim.example").unwrap(),
            Role::Member,
            &tidemark_store::testing::audit(),
        )
        .await
        .unwrap()
        .unwrap();
        let p = Email::parse("p@victim.example").unwrap();
        let saml = IdentityProvider::Saml {
            connection_id: &c.id,
        };
        access::resolve_identity(&t.db, saml, Subject::Stable("n-1"), Some(&p), 1)
            .await
            .unwrap();
        // The same IdP saved again keeps the binding...
        claim_as(&t.db, &acct("acct_a"), "idp-1", Vouched::ByOperator).await;
        assert_eq!(count_identities(&t.db).await, 1, "{backend:?}");
        // ...another IdP (entity id or certificate) drops it.
        claim_as(&t.db, &acct("acct_a"), "idp-2", Vouched::ByOperator).await;
        assert_eq!(count_identities(&t.db).await, 0, "{backend:?}");
    }
}

tidemark_store::test_each_backend! {
    async fn due_checks_are_taken_once_and_stop_after_their_window(backend) {
        let t = fresh(backend).await;
        insert_account(&t.db, &acct("acct_a")).await;
        insert_account(&t.db, &acct("acct_b")).await;
        let a = stored(claim_as(&t.db, &acct("acct_a"), "a", Vouched::ByDnsRecord).await);
        assert_eq!(a.next_check_at, Some(1_000));
        // Two replicas look at the same moment: each claim goes to one of them.
        let first = sso::take_due_checks(&t.db, 1_500, 9_000, 0, 10)
            .await
            .unwrap();
        let second = sso::take_due_checks(&t.db, 1_500, 9_000, 0, 10)
            .await
            .unwrap();
        assert_eq!((first.len(), second.len()), (1, 0), "{backend:?}");
        sso::record_failed_check(&t.db, &a.id, 1_600, "no TXT record yet", Some(2_000))
            .await
            .unwrap();
        let after = sso::find_connection(&t.db, &a.id).await.unwrap().unwrap();
        assert_eq!(after.check_message.as_deref(), Some("no TXT record yet"));
        assert_eq!(after.checked_at, Some(1_600));
        // Past the window (claims made before `made_after`), background checks stop.
        let late = sso::take_due_checks(&t.db, 3_000, 9_000, 1_001, 10)
            .await
            .unwrap();
        assert!(late.is_empty(), "{backend:?}");
        let stopped = sso::find_connection(&t.db, &a.id).await.unwrap().unwrap();
        assert_eq!(stopped.next_check_at, None);
        assert_eq!(stopped.state, ClaimState::Pending, "Verify now still works");
    }
}

tidemark_store::test_each_backend! {
    async fn sign_in_lands_in_the_account_used_last(backend) {
        let t = fresh(backend).await;
        for a in ["acct_1_old", &acct("acct_2_new")] {
            insert_account(&t.db, a).await;
        }
        let who = Email::parse("multi@example.com").unwrap();
        let user = access::add_member(&t.db, &acct("acct_1_old"), &who, Role::Admin, &tidemark_store::testing::audit())
            .await
            .unwrap()
            .unwrap()
            .user_id;
        access::add_member(&t.db, &acct("acct_2_new"), &who, Role::Member, &tidemark_store::testing::audit())
            .await
            .unwrap()
            .unwrap();
        // Never used: the oldest (same creation time here, so by id).
        let first = |db: Db, user: String| async move {
            access::memberships_of(&db, &user).await.unwrap()[0]
                .0
                .clone()
        };
        assert_eq!(first(t.db.clone(), user.clone()).await, &acct("acct_1_old"));
        access::mark_account_used(&t.db, &acct("acct_2_new"), &user, 10)
            .await
            .unwrap();
        assert_eq!(
            first(t.db.clone(), user.clone()).await,
            "acct_2_new",
            "{backend:?}"
        );
        access::mark_account_used(&t.db, &acct("acct_1_old"), &user, 20)
            .await
            .unwrap();
        assert_eq!(first(t.db.clone(), user.clone()).await, &acct("acct_1_old"));
        let listed = access::accounts_of(&t.db, &user).await.unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].account_id, &acct("acct_1_old"));
        assert_eq!(listed[1].role, Role::Member);
    }
}

tidemark_store::test_each_backend! {
    async fn upgrading_ends_unproven_configurations(backend) {
        use std::borrow::Cow;
        let t = tidemark_store::testing::fresh_unmigrated(backend).await;
        let all = &tidemark_store::MIGRATOR;
        let before_claims = all
            .iter()
            .take_while(|m| m.description != "sso claims")
            .count();
        let mut old = sqlx::migrate::Migrator {
            migrations: Cow::Owned(all.iter().take(before_claims).cloned().collect()),
            ..sqlx::migrate::Migrator::DEFAULT
        };
        old.set_locking(true);
        tidemark_store::on_db_write!(&t.db, pool => old.run(pool).await).unwrap();
        tidemark_store::on_db_write!(&t.db, pool => {
            for q in [
                "INSERT INTO accounts (id, created_at) VALUES ('acct_x', 0)",
                "INSERT INTO users (id, email, created_at) VALUES ('usr_x', 'x@victim.example', 0)",
                "INSERT INTO sso_domains (domain, account_id, idp_entity_id, idp_sso_url, \
                 signing_certs, enforce, metadata_xml, updated_at) VALUES ('victim.example', \
                 'acct_x', 'http://localhost:4455', 'https://idp/sso', 'c', TRUE, '<x/>', 7)",
                // An OIDC identity whose issuer an IdP also declared, and an honest one.
                "INSERT INTO identities (issuer, subject, user_id, created_at, last_login_at) \
                 VALUES ('http://localhost:4455', 's', 'usr_x', 0, 0)",
                "INSERT INTO identities (issuer, subject, user_id, created_at, last_login_at) \
                 VALUES ('https://accounts.example', 's', 'usr_x', 0, 0)",
            ] {
                sqlx::query(q).execute(pool).await.unwrap();
            }
        });
        t.db.migrate().await.unwrap();
        let claims = sso::list_connections(&t.db, None).await.unwrap();
        assert_eq!(claims.len(), 1, "{backend:?}");
        assert_eq!(claims[0].state, ClaimState::Ended);
        assert!(claims[0]
            .ended_reason
            .as_deref()
            .unwrap()
            .contains("Save the domain again"));
        assert_eq!(sso::find_verified(&t.db, DOMAIN).await.unwrap(), None);
        assert_eq!(count_identities(&t.db).await, 1, "{backend:?}");
        let honest = IdentityProvider::Oidc {
            issuer: "https://accounts.example",
        };
        assert_eq!(
            access::resolve_identity(&t.db, honest, Subject::Stable("s"), None, 1)
                .await
                .unwrap(),
            IdentityOutcome::User("usr_x".into())
        );
    }
}

/// A test account's id (tests name theirs `acct_a`, `acct_b`).
fn acct(s: &str) -> tidemark_store::AccountId {
    tidemark_store::AccountId::trusted(s)
}
