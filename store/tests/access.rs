//! Dashboard access data on every backend: membership, identity binding, sessions that logout
//! really ends, single-use sign-in attempts and the SAML replay cache.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use tidemark_domain::access::Role;
use tidemark_domain::text::Email;
use tidemark_store::access::{self, IdentityOutcome, IdentityProvider, MembershipError, Subject};
use tidemark_store::sessions::{self, SessionOwner};
use tidemark_store::testing::{fresh, insert_license};

fn email(s: &str) -> Email {
    Email::parse(s).unwrap()
}

tidemark_store::test_each_backend! {
    async fn a_license_email_is_its_accounts_first_admin(backend) {
        let t = fresh(backend).await;
        let account = insert_license(&t.db, "Owner@Example.com").await;
        let members = access::list_members(&t.db, &account).await.unwrap();
        assert_eq!(members.len(), 1, "{backend:?}");
        assert_eq!(members[0].email, "owner@example.com");
        assert_eq!(members[0].role, Role::Admin);
        // A second license for the same address reuses the user.
        let second = insert_license(&t.db, "owner@example.com").await;
        let user = &members[0].user_id;
        let accounts = access::memberships_of(&t.db, user).await.unwrap();
        let mut found: Vec<_> = accounts.into_iter().map(|(a, _)| a).collect();
        let mut expected = vec![account, second];
        found.sort();
        expected.sort();
        assert_eq!(found, expected);
    }
}

tidemark_store::test_each_backend! {
    async fn members_are_added_once_and_the_last_admin_stays(backend) {
        let t = fresh(backend).await;
        let account = insert_license(&t.db, "owner@example.com").await;
        let added = access::add_member(&t.db, &account, &email("dev@example.com"), Role::Member, &tidemark_store::testing::audit())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(added.role, Role::Member);
        assert_eq!(
            access::add_member(&t.db, &account, &email("DEV@example.com"), Role::Admin, &tidemark_store::testing::audit())
                .await
                .unwrap(),
            Err(MembershipError::AlreadyMember("dev@example.com".into())),
            "{backend:?}"
        );
        let owner = access::find_member_by_email(&t.db, &account, &email("owner@example.com"))
            .await
            .unwrap()
            .unwrap();
        for change in [None, Some(Role::Member)] {
            assert_eq!(
                access::change_member(&t.db, &account, &owner.user_id, change, &tidemark_store::testing::audit())
                    .await
                    .unwrap(),
                Err(MembershipError::LastAdmin),
                "{backend:?}"
            );
        }
        // With a second admin the first may step down.
        access::change_member(&t.db, &account, &added.user_id, Some(Role::Admin), &tidemark_store::testing::audit())
            .await
            .unwrap()
            .unwrap();
        access::change_member(&t.db, &account, &owner.user_id, Some(Role::Member), &tidemark_store::testing::audit())
            .await
            .unwrap()
            .unwrap();
        let roles: Vec<(String, Role)> = access::list_members(&t.db, &account)
            .await
            .unwrap()
            .into_iter()
            .map(|m| (m.email, m.role))
            .collect();
        assert_eq!(
            roles,
            vec![
                ("dev@example.com".into(), Role::Admin),
                ("owner@example.com".into(), Role::Member)
            ]
        );
    }
}

tidemark_store::test_each_backend! {
    async fn identities_bind_by_issuer_and_subject(backend) {
        let t = fresh(backend).await;
        let account = insert_license(&t.db, "owner@example.com").await;
        let owner = access::list_members(&t.db, &account)
            .await
            .unwrap()
            .remove(0);
        let iss = IdentityProvider::Oidc {
            issuer: "https://idp.example",
        };

        assert_eq!(
            access::resolve_identity(&t.db, iss, Subject::Stable("sub-1"), None, 10)
                .await
                .unwrap(),
            IdentityOutcome::EmailUnverified
        );
        assert_eq!(
            access::resolve_identity(
                &t.db,
                iss,
                Subject::Stable("sub-x"),
                Some(&email("stranger@example.com")),
                10
            )
            .await
            .unwrap(),
            IdentityOutcome::UnknownEmail
        );
        assert_eq!(
            access::resolve_identity(
                &t.db,
                iss,
                Subject::Stable("sub-1"),
                Some(&email("owner@example.com")),
                10
            )
            .await
            .unwrap(),
            IdentityOutcome::User(owner.user_id.clone()),
            "{backend:?}"
        );
        // Once bound, the pair decides; the e-mail is not consulted (even a changed one).
        assert_eq!(
            access::resolve_identity(
                &t.db,
                iss,
                Subject::Stable("sub-1"),
                Some(&email("new@example.com")),
                20
            )
            .await
            .unwrap(),
            IdentityOutcome::User(owner.user_id.clone())
        );
        // Another subject at the same issuer cannot take over the address.
        assert_eq!(
            access::resolve_identity(
                &t.db,
                iss,
                Subject::Stable("sub-2"),
                Some(&email("owner@example.com")),
                30
            )
            .await
            .unwrap(),
            IdentityOutcome::BoundElsewhere
        );
        let member = access::find_member(&t.db, &account, &owner.user_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(member.last_login_at, Some(20));
    }
}

fn owner<'a>(user: &'a str, account: &'a str) -> SessionOwner<'a> {
    SessionOwner {
        user_id: Some(user),
        account_id: Some(account),
    }
}

tidemark_store::test_each_backend! {
    async fn sessions_slide_stop_at_their_absolute_end_and_stay_deleted(backend) {
        let t = fresh(backend).await;
        let db = &t.db;
        assert!(
            sessions::create_session(db, "h1", owner("u", "a"), "{}", 0, 100, 1_000)
                .await
                .unwrap()
        );
        assert!(
            !sessions::create_session(db, "h1", owner("u", "a"), "{}", 0, 100, 1_000)
                .await
                .unwrap(),
            "{backend:?}: an id hash is never reused"
        );
        assert_eq!(
            sessions::load_session(db, "h1", 50)
                .await
                .unwrap()
                .unwrap()
                .expires_at,
            100
        );
        // Activity moves the expiry, but only once it has fallen behind by the slack.
        sessions::save_session(db, "h1", owner("u", "a"), "{}", 130, 60)
            .await
            .unwrap();
        assert_eq!(
            sessions::load_session(db, "h1", 50)
                .await
                .unwrap()
                .unwrap()
                .expires_at,
            100
        );
        sessions::save_session(db, "h1", owner("u", "a"), "{}", 170, 60)
            .await
            .unwrap();
        assert_eq!(
            sessions::load_session(db, "h1", 50)
                .await
                .unwrap()
                .unwrap()
                .expires_at,
            170
        );
        // Changed data is always written.
        sessions::save_session(db, "h1", owner("u", "a"), "{\"k\":1}", 171, 60)
            .await
            .unwrap();
        assert_eq!(
            sessions::load_session(db, "h1", 50)
                .await
                .unwrap()
                .unwrap()
                .data,
            "{\"k\":1}"
        );
        // Never past the absolute end.
        sessions::save_session(db, "h1", owner("u", "a"), "{}", 5_000, 60)
            .await
            .unwrap();
        assert_eq!(
            sessions::load_session(db, "h1", 50)
                .await
                .unwrap()
                .unwrap()
                .expires_at,
            1_000
        );
        assert!(sessions::load_session(db, "h1", 1_000)
            .await
            .unwrap()
            .is_none());
        // Idle expiry.
        assert!(sessions::load_session(db, "h1", 999)
            .await
            .unwrap()
            .is_some());
        sessions::create_session(db, "h2", owner("u", "a"), "{}", 0, 100, 1_000)
            .await
            .unwrap();
        assert!(sessions::load_session(db, "h2", 100)
            .await
            .unwrap()
            .is_none());

        // Logout, then a request still in flight saves: the record stays deleted.
        sessions::delete_session(db, "h1").await.unwrap();
        sessions::save_session(db, "h1", owner("u", "a"), "{\"late\":1}", 500, 0)
            .await
            .unwrap();
        assert!(
            sessions::load_session(db, "h1", 50)
                .await
                .unwrap()
                .is_none(),
            "{backend:?}"
        );

        assert_eq!(sessions::count_user_sessions(db, "u").await.unwrap(), 1);
        assert_eq!(sessions::prune_expired(db, 1_000).await.unwrap(), 1);
        assert_eq!(sessions::count_user_sessions(db, "u").await.unwrap(), 0);
    }
}

tidemark_store::test_each_backend! {
    async fn removing_a_member_ends_their_sessions_on_that_account(backend) {
        let t = fresh(backend).await;
        let account = insert_license(&t.db, "owner@example.com").await;
        let other = insert_license(&t.db, "other@example.com").await;
        let dev = email("dev@example.com");
        let member = access::add_member(&t.db, &account, &dev, Role::Member, &tidemark_store::testing::audit())
            .await
            .unwrap()
            .unwrap();
        access::add_member(&t.db, &other, &dev, Role::Member, &tidemark_store::testing::audit())
            .await
            .unwrap()
            .unwrap();
        let uid = member.user_id.as_str();
        sessions::create_session(&t.db, "s1", owner(uid, &account), "{}", 0, 100, 1_000)
            .await
            .unwrap();
        sessions::create_session(&t.db, "s2", owner(uid, &other), "{}", 0, 100, 1_000)
            .await
            .unwrap();
        access::change_member(&t.db, &account, uid, None, &tidemark_store::testing::audit())
            .await
            .unwrap()
            .unwrap();
        assert!(
            sessions::load_session(&t.db, "s1", 1)
                .await
                .unwrap()
                .is_none(),
            "{backend:?}"
        );
        assert!(sessions::load_session(&t.db, "s2", 1)
            .await
            .unwrap()
            .is_some());
        assert!(access::find_member(&t.db, &account, uid)
            .await
            .unwrap()
            .is_none());
    }
}

tidemark_store::test_each_backend! {
    async fn sign_in_attempts_are_single_use_and_expire(backend) {
        let t = fresh(backend).await;
        sessions::insert_login_attempt(&t.db, "a1", "oidc", "p1", 100)
            .await
            .unwrap();
        assert_eq!(
            sessions::take_login_attempt(&t.db, "a1", "saml", 1)
                .await
                .unwrap(),
            None
        );
        assert_eq!(
            sessions::take_login_attempt(&t.db, "a1", "oidc", 1)
                .await
                .unwrap()
                .as_deref(),
            Some("p1"),
            "{backend:?}"
        );
        assert_eq!(
            sessions::take_login_attempt(&t.db, "a1", "oidc", 1)
                .await
                .unwrap(),
            None
        );
        sessions::insert_login_attempt(&t.db, "a2", "oidc", "p2", 100)
            .await
            .unwrap();
        assert_eq!(
            sessions::take_login_attempt(&t.db, "a2", "oidc", 100)
                .await
                .unwrap(),
            None
        );

        assert!(sessions::remember_assertion(&t.db, "as1", 100)
            .await
            .unwrap());
        assert!(
            !sessions::remember_assertion(&t.db, "as1", 100)
                .await
                .unwrap(),
            "{backend:?}"
        );
    }
}

tidemark_store::test_each_backend! {
    async fn upgrading_makes_existing_license_emails_admins(backend) {
        use std::borrow::Cow;
        let t = tidemark_store::testing::fresh_unmigrated(backend).await;
        let all = &tidemark_store::MIGRATOR;
        let mut core = sqlx::migrate::Migrator {
            migrations: Cow::Owned(all.iter().take(1).cloned().collect()),
            ..sqlx::migrate::Migrator::DEFAULT
        };
        core.set_locking(true);
        let run = tidemark_store::on_db_write!(&t.db, pool => core.run(pool).await);
        run.unwrap();
        tidemark_store::on_db_write!(&t.db, pool => {
            for (id, acct, mail) in [("lcn_aaaaaaaaaaaaaaaaaaaa", &acct("acct_a"), "A@x.example"),
                                     ("lcn_bbbbbbbbbbbbbbbbbbbb", &acct("acct_b"), "a@x.example")] {
                sqlx::query("INSERT INTO accounts (id, created_at) VALUES ($1, 0)")
                    .bind(acct).execute(pool).await.unwrap();
                sqlx::query(
                    "INSERT INTO licenses (id, account_id, email, tier, lookup_hash, \
                     key_ciphertext, expires_at, created_at) \
                     VALUES ($1, $2, $3, 'team', $1, 'c', 0, 0)",
                )
                .bind(id).bind(acct).bind(mail).execute(pool).await.unwrap();
            }
        });
        t.db.migrate().await.unwrap();
        for id in ["acct_a", "acct_b"] {
            let acct = &acct(id);
            let members = access::list_members(&t.db, acct).await.unwrap();
            assert_eq!(members.len(), 1, "{backend:?}");
            assert_eq!(members[0].email, "a@x.example");
            assert_eq!(members[0].role, Role::Admin);
            assert_eq!(members[0].user_id, "usr_aaaaaaaaaaaaaaaaaaaa");
        }
    }
}

/// A test account's id (tests name theirs `acct_a`, `acct_b`).
fn acct(s: &str) -> tidemark_store::AccountId {
    tidemark_store::AccountId::trusted(s)
}
