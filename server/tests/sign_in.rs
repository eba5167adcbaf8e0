//! Dashboard sign-in with OpenID Connect, sessions and CSRF, on both databases, against a
//! scripted provider that can misbehave on purpose (see `common::oidc`).
#![allow(clippy::unwrap_used)]

use crate::common;

use common::browser::{location, refusal, Browser};
use common::oidc::{Alg, Script, ScriptedProvider};
use common::{backends, TestApp};
use reqwest::StatusCode;
use tidemark_wire::Tier;

async fn app_with_provider(
    backend: tidemark_store::Backend,
    extra: &[(&str, &str)],
) -> (TestApp, ScriptedProvider) {
    let provider = ScriptedProvider::start().await;
    let env = provider.env();
    let mut all: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    all.extend_from_slice(extra);
    (TestApp::spawn_with(backend, &all).await, provider)
}

/// Starts a sign-in, lets the provider answer, and returns the callback's response.
async fn sign_in(browser: &mut Browser, email: &str, next: Option<&str>) -> reqwest::Response {
    let mut form = vec![("email", email)];
    if let Some(next) = next {
        form.push(("next", next));
    }
    let start = browser.post_form("/auth/signin", &form).await;
    assert_eq!(start.status(), StatusCode::SEE_OTHER, "sign-in start");
    let to_provider = location(&start);
    assert!(to_provider.contains("/authorize?"), "{to_provider}");
    for required in [
        "code_challenge=",
        "code_challenge_method=S256",
        "state=",
        "nonce=",
    ] {
        assert!(
            to_provider.contains(required),
            "{required} in {to_provider}"
        );
    }
    let from_provider = browser.get(&to_provider).await;
    let callback = location(&from_provider);
    assert!(callback.contains("/auth/oidc/callback?"), "{callback}");
    browser.get(&callback).await
}

fn refresh_target(body: &str) -> String {
    let start = body.find("url=").unwrap() + 4;
    body[start..]
        .split('"')
        .next()
        .unwrap()
        .replace("&amp;", "&")
}

tidemark_store::test_each_backend! {
    async fn a_member_signs_in_and_reaches_the_dashboard(backend) {
        let (app, provider) = app_with_provider(backend, &[]).await;
        let license = app.create_license(Tier::Team).await;
        provider.script(Script::user(&license.email));
        let mut browser = Browser::new(&app.base_url);

        // Before: the landing page; the dashboard sends the browser to sign in, remembering
        // where it was going.
        assert_eq!(browser.get(&app.url("/")).await.status(), StatusCode::OK);
        let before = browser.get(&app.url("/projects?range=30d")).await;
        assert_eq!(before.status(), StatusCode::SEE_OTHER);
        assert_eq!(location(&before), "/signin?next=/projects%3Frange%3D30d");

        let done = sign_in(&mut browser, &license.email.to_uppercase(), None).await;
        assert_eq!(done.status(), StatusCode::OK, "{backend:?}");
        let cookies: Vec<String> = done
            .headers()
            .get_all("set-cookie")
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect();
        let session = cookies
            .iter()
            .find(|c| c.starts_with("__Host-tidemark_session="))
            .expect("session cookie");
        for attribute in ["HttpOnly", "Secure", "SameSite=Strict", "Path=/"] {
            assert!(session.contains(attribute), "{attribute} in {session}");
        }
        assert!(
            !session.to_ascii_lowercase().contains("domain="),
            "{session}"
        );
        assert!(
            cookies
                .iter()
                .any(|c| c.starts_with("__Host-tidemark_login=;")
                    || c.starts_with("__Host-tidemark_login=") && c.contains("Max-Age=0")),
            "the sign-in attempt cookie is cleared: {cookies:?}"
        );
        let body = done.text().await.unwrap();
        assert_eq!(refresh_target(&body), "/projects");

        // Signed in, the landing page is skipped.
        let home = browser.get(&app.url("/")).await;
        assert_eq!(home.status(), StatusCode::SEE_OTHER);
        assert_eq!(location(&home), "/projects");
        let page = browser.get(&app.url("/projects")).await;
        assert_eq!(page.status(), StatusCode::OK);
        let html = page.text().await.unwrap();
        assert!(
            html.contains(&license.email),
            "the dashboard names the member"
        );

        // The session id is not in the database in usable form.
        let cookie_value = browser.jar["__Host-tidemark_session"].clone();
        let rows: Vec<(String,)> = tidemark_store::on_db!(&app.db, pool => {
            sqlx::query_as("SELECT id_hash FROM sessions").fetch_all(pool).await
        })
        .unwrap();
        assert_eq!(rows.len(), 1);
        assert!(!rows[0].0.contains(&cookie_value));
    }
}

tidemark_store::test_each_backend! {
    async fn state_must_be_present_matching_and_unused(backend) {
        let (app, provider) = app_with_provider(backend, &[]).await;
        let license = app.create_license(Tier::Team).await;

        // A callback in a browser that never started a sign-in.
        let mut stranger = Browser::new(&app.base_url);
        let res = stranger
            .get(&app.url("/auth/oidc/callback?code=x&state=y"))
            .await;
        assert_eq!(refusal(&res), "sign_in_expired", "{backend:?}");

        // The provider (or an attacker) answers with another state.
        provider.script(Script {
            state: Some("forged".into()),
            ..Script::user(&license.email)
        });
        let mut browser = Browser::new(&app.base_url);
        assert_eq!(
            refusal(&sign_in(&mut browser, &license.email, None).await),
            "state_mismatch"
        );
        assert!(!browser.jar.contains_key("__Host-tidemark_session"));

        // Missing state.
        provider.script(Script {
            state: Some(String::new()),
            ..Script::user(&license.email)
        });
        assert_eq!(
            refusal(&sign_in(&mut browser, &license.email, None).await),
            "state_mismatch"
        );

        // A good callback works once; replaying it (same URL, same attempt cookie) does not.
        provider.script(Script::user(&license.email));
        let start = browser
            .post_form("/auth/signin", &[("email", &license.email)])
            .await;
        let attempt_cookie = browser.jar["__Host-tidemark_login"].clone();
        let callback = location(&browser.get(&location(&start)).await);
        assert_eq!(browser.get(&callback).await.status(), StatusCode::OK);
        let mut replayer = Browser::new(&app.base_url);
        replayer
            .jar
            .insert("__Host-tidemark_login".into(), attempt_cookie);
        assert_eq!(refusal(&replayer.get(&callback).await), "sign_in_expired");
        assert_eq!(
            app.count("login_attempts").await,
            0,
            "attempts are consumed"
        );
    }
}

tidemark_store::test_each_backend! {
    async fn id_tokens_that_fail_verification_are_refused(backend) {
        let (app, provider) = app_with_provider(backend, &[]).await;
        let license = app.create_license(Tier::Team).await;
        let good = Script::user(&license.email);
        let cases = [
            (
                "wrong audience",
                Script {
                    audience: "someone-else".into(),
                    ..good.clone()
                },
            ),
            (
                "wrong issuer",
                Script {
                    issuer: Some("http://localhost:1/evil".into()),
                    ..good.clone()
                },
            ),
            (
                "expired",
                Script {
                    expires_in: -60,
                    ..good.clone()
                },
            ),
            (
                "wrong nonce",
                Script {
                    nonce: Some("replayed-nonce".into()),
                    ..good.clone()
                },
            ),
            (
                "alg none",
                Script {
                    alg: Alg::None,
                    ..good.clone()
                },
            ),
            (
                "HMAC",
                Script {
                    alg: Alg::Hs256,
                    ..good.clone()
                },
            ),
        ];
        for (name, script) in cases {
            provider.script(script);
            let mut browser = Browser::new(&app.base_url);
            let res = sign_in(&mut browser, &license.email, None).await;
            assert_eq!(refusal(&res), "token_invalid", "{backend:?}: {name}");
            assert!(
                !browser.jar.contains_key("__Host-tidemark_session"),
                "{name}"
            );
        }
        assert_eq!(app.count("sessions").await, 0);
        // The same provider with a correct token signs in: the refusals were the tokens'.
        provider.script(good);
        let mut browser = Browser::new(&app.base_url);
        assert_eq!(
            sign_in(&mut browser, &license.email, None).await.status(),
            StatusCode::OK
        );
    }
}

#[tokio::test]
async fn the_token_request_never_follows_a_redirect() {
    let backend = backends()[0];
    let (app, provider) = app_with_provider(backend, &[]).await;
    let license = app.create_license(Tier::Team).await;
    provider.script(Script {
        redirect_token_request: true,
        ..Script::user(&license.email)
    });
    let mut browser = Browser::new(&app.base_url);
    assert_eq!(
        refusal(&sign_in(&mut browser, &license.email, None).await),
        "provider_refused"
    );
    assert_eq!(app.count("sessions").await, 0);
}

tidemark_store::test_each_backend! {
    async fn unverified_addresses_and_strangers_do_not_get_in(backend) {
        let (app, provider) = app_with_provider(backend, &[]).await;
        let license = app.create_license(Tier::Team).await;
        let mut browser = Browser::new(&app.base_url);

        provider.script(Script {
            email_verified: Some(false),
            ..Script::user(&license.email)
        });
        assert_eq!(
            refusal(&sign_in(&mut browser, &license.email, None).await),
            "email_unverified"
        );
        provider.script(Script {
            email_verified: None,
            ..Script::user(&license.email)
        });
        assert_eq!(
            refusal(&sign_in(&mut browser, &license.email, None).await),
            "email_unverified"
        );

        provider.script(Script::user("stranger@example.com"));
        assert_eq!(
            refusal(&sign_in(&mut browser, "stranger@example.com", None).await),
            "no_access",
            "{backend:?}"
        );
        let page = browser
            .get(&app.url("/signin?error=no_access"))
            .await
            .text()
            .await
            .unwrap();
        assert!(
            page.contains("not a member of any Tidemark account"),
            "a clear page"
        );
        assert_eq!(app.count("sessions").await, 0);
        assert_eq!(
            app.count("identities").await,
            0,
            "nothing is bound for a stranger"
        );
        let (users,): (i64,) = tidemark_store::on_db!(&app.db, pool => {
            sqlx::query_as("SELECT COUNT(*) FROM users WHERE email = 'stranger@example.com'")
                .fetch_one(pool).await
        })
        .unwrap();
        assert_eq!(users, 0, "signing in never creates a user");
    }
}

#[tokio::test]
async fn return_paths_never_leave_the_site() {
    let backend = backends()[0];
    let (app, provider) = app_with_provider(backend, &[]).await;
    let license = app.create_license(Tier::Team).await;
    provider.script(Script::user(&license.email));
    for evil in [
        "//evil.com",
        "/\\evil.com",
        "/%2F%2Fevil.com",
        "https:evil.com",
        "javascript:alert(1)",
    ] {
        let mut browser = Browser::new(&app.base_url);
        let res = sign_in(&mut browser, &license.email, Some(evil)).await;
        assert_eq!(res.status(), StatusCode::OK, "{evil}");
        assert_eq!(refresh_target(&res.text().await.unwrap()), "/", "{evil}");
    }
    let mut browser = Browser::new(&app.base_url);
    let res = sign_in(
        &mut browser,
        &license.email,
        Some("/projects/prj_x?range=7d"),
    )
    .await;
    assert_eq!(
        refresh_target(&res.text().await.unwrap()),
        "/projects/prj_x?range=7d"
    );
}

tidemark_store::test_each_backend! {
    async fn bad_cookies_mean_signed_out_and_logout_is_final(backend) {
        let (app, provider) = app_with_provider(backend, &[]).await;
        let license = app.create_license(Tier::Team).await;
        provider.script(Script::user(&license.email));
        let mut browser = Browser::new(&app.base_url);
        assert_eq!(
            sign_in(&mut browser, &license.email, None).await.status(),
            StatusCode::OK
        );
        let cookie = browser.jar["__Host-tidemark_session"].clone();

        // Tampered and foreign cookies: signed out, never an error page.
        let mut tampered = cookie.clone().into_bytes();
        let i = tampered.len() / 2;
        tampered[i] = if tampered[i] == b'A' { b'B' } else { b'A' };
        for value in [
            String::from_utf8(tampered).unwrap(),
            "not-even-base64!".into(),
            "a".repeat(4000),
        ] {
            let mut other = Browser::new(&app.base_url);
            other.jar.insert("__Host-tidemark_session".into(), value);
            let res = other.get(&app.url("/projects")).await;
            assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend:?}");
            assert!(location(&res).starts_with("/signin"));
            assert_eq!(other.get(&app.url("/")).await.status(), StatusCode::OK);
        }

        // Signing in again gets a new id; the one sent along stops working.
        assert_eq!(
            sign_in(&mut browser, &license.email, None).await.status(),
            StatusCode::OK
        );
        let second = browser.jar["__Host-tidemark_session"].clone();
        assert_ne!(second, cookie, "a new session id at sign-in");
        let mut old = Browser::new(&app.base_url);
        old.jar
            .insert("__Host-tidemark_session".into(), cookie.clone());
        assert_eq!(
            old.get(&app.url("/projects")).await.status(),
            StatusCode::SEE_OTHER
        );
        let cookie = second;

        // Logout deletes the record; the old cookie replayed is refused.
        let res = browser.post_form("/auth/logout", &[]).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER);
        assert_eq!(location(&res), "/signin?signed_out=1");
        assert_eq!(app.count("sessions").await, 0, "{backend:?}");
        let mut replay = Browser::new(&app.base_url);
        replay.jar.insert("__Host-tidemark_session".into(), cookie);
        let res = replay.get(&app.url("/projects")).await;
        assert_eq!(
            res.status(),
            StatusCode::SEE_OTHER,
            "a logged-out cookie is refused"
        );
        assert_eq!(
            app.count("sessions").await,
            0,
            "and does not bring the session back"
        );
    }
}

tidemark_store::test_each_backend! {
    async fn sessions_end_after_inactivity_and_at_their_absolute_limit(backend) {
        let (app, provider) = app_with_provider(
            backend,
            &[
                ("TIDEMARK_SESSION_IDLE_SECONDS", "2"),
                ("TIDEMARK_SESSION_MAX_SECONDS", "5"),
            ],
        )
        .await;
        let license = app.create_license(Tier::Team).await;
        provider.script(Script::user(&license.email));
        let mut browser = Browser::new(&app.base_url);
        sign_in(&mut browser, &license.email, None).await;
        let ok = |res: &reqwest::Response| res.status() == StatusCode::OK;

        // Reads are activity: a read every 1.2 s keeps a 2 s session alive past 2 s...
        for _ in 0..3 {
            tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
            assert!(
                ok(&browser.get(&app.url("/projects")).await),
                "{backend:?}: still signed in"
            );
        }
        // ...but not past the 5 s absolute limit.
        tokio::time::sleep(std::time::Duration::from_millis(1700)).await;
        assert!(
            !ok(&browser.get(&app.url("/projects")).await),
            "{backend:?}: absolute limit"
        );

        // Inactivity: a fresh session left alone for longer than 2 s ends.
        let mut idle = Browser::new(&app.base_url);
        sign_in(&mut idle, &license.email, None).await;
        assert!(ok(&idle.get(&app.url("/projects")).await));
        tokio::time::sleep(std::time::Duration::from_millis(2300)).await;
        assert!(
            !ok(&idle.get(&app.url("/projects")).await),
            "{backend:?}: inactivity"
        );
    }
}

tidemark_store::test_each_backend! {
    async fn cross_origin_state_changes_are_refused(backend) {
        let (app, provider) = app_with_provider(backend, &[]).await;
        let license = app.create_license(Tier::Team).await;
        provider.script(Script::user(&license.email));
        let mut browser = Browser::new(&app.base_url);
        sign_in(&mut browser, &license.email, None).await;

        // Our own page may call a server function.
        let own = browser.post_form("/api/viewer", &[]).await;
        assert_eq!(own.status(), StatusCode::OK, "{backend:?}");
        assert!(own.text().await.unwrap().contains(&license.email));

        for origin in [Some("http://evil.example"), Some("null"), None] {
            let res = browser.post_form_from("/api/viewer", &[], origin).await;
            assert_eq!(res.status(), StatusCode::FORBIDDEN, "{origin:?}");
            let res = browser.post_form_from("/auth/logout", &[], origin).await;
            assert_eq!(res.status(), StatusCode::FORBIDDEN, "{origin:?}");
        }
        assert_eq!(
            app.count("sessions").await,
            1,
            "the cross-site logout changed nothing"
        );
    }
}

tidemark_store::test_each_backend! {
    async fn removing_a_member_ends_their_session(backend) {
        let (app, provider) = app_with_provider(backend, &[]).await;
        let license = app.create_license(Tier::Team).await;
        let dev = tidemark_domain::text::Email::parse("dev@example.com").unwrap();
        let member = tidemark_store::access::add_member(
            &app.db,
            &license.account_id,
            &dev,
            tidemark_domain::access::Role::Member,
            &tidemark_store::testing::audit(),
        )
        .await
        .unwrap()
        .unwrap();
        provider.script(Script::user("dev@example.com"));
        let mut browser = Browser::new(&app.base_url);
        assert_eq!(
            sign_in(&mut browser, "dev@example.com", None)
                .await
                .status(),
            StatusCode::OK
        );
        let viewer = browser
            .post_form("/api/viewer", &[])
            .await
            .text()
            .await
            .unwrap();
        assert!(viewer.contains("\"is_admin\":false"), "{viewer}");

        tidemark_store::access::change_member(&app.db, &license.account_id, &member.user_id, None, &tidemark_store::testing::audit())
            .await
            .unwrap()
            .unwrap();
        let res = browser.get(&app.url("/projects")).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend:?}");
    }
}

#[tokio::test]
async fn development_seeds_a_demo_account_once_whose_admin_can_sign_in() {
    let backend = backends()[0];
    let (app, provider) = app_with_provider(backend, &[("TIDEMARK_DEV_DEMO", "1")]).await;
    assert_eq!(app.count("projects").await, 3);
    assert_eq!(app.count("scans").await, 3 * 45 + 3);
    provider.script(Script::user(server::operator::demo::DEMO_EMAIL));
    let mut browser = Browser::new(&app.base_url);
    assert_eq!(
        sign_in(&mut browser, server::operator::demo::DEMO_EMAIL, None)
            .await
            .status(),
        StatusCode::OK
    );
    let viewer = browser
        .post_form("/api/viewer", &[])
        .await
        .text()
        .await
        .unwrap();
    assert!(viewer.contains("\"is_admin\":true"), "{viewer}");
    // A restart finds the demo and adds nothing.
    let app = app.restart(&[]).await;
    assert_eq!(app.count("scans").await, 3 * 45 + 3);
    assert_eq!(app.count("licenses").await, 1);
}

tidemark_store::test_each_backend! {
    /// A sign-in flood from one address is refused (`429`, from a read once the ban is on),
    /// the SAML ACS shares the budget, another address is unaffected, and pushes go on.
    async fn a_sign_in_flood_is_limited_per_address(backend) {
        let app = TestApp::spawn_with(
            backend,
            &[
                ("TIDEMARK_SIGNIN_PER_MINUTE", "5"),
                ("TIDEMARK_TRUSTED_PROXIES", "127.0.0.1"),
            ],
        )
        .await;
        let (_, key) = app.with_key(tidemark_wire::Tier::Team).await;
        let mut browser = common::browser::Browser::new(&app.base_url);
        for i in 0..5 {
            let res = browser.post_form("/auth/signin", &[("email", "flood@example.com")]).await;
            assert_ne!(res.status(), StatusCode::TOO_MANY_REQUESTS, "{backend:?} attempt {i}");
        }
        for path in ["/auth/signin", "/saml/acs"] {
            let res = browser
                .post_form(path, &[("email", "flood@example.com"), ("SAMLResponse", "x")])
                .await;
            assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS, "{backend:?} {path}");
            let wait: u64 = res.headers()["retry-after"].to_str().unwrap().parse().unwrap();
            assert!((1..=60).contains(&wait), "{wait}");
            assert!(res.text().await.unwrap().contains("Too many sign-in attempts"));
        }
        // Behind the trusted proxy, another client has its own budget.
        let res = app
            .client
            .post(app.url("/auth/signin"))
            .header("Origin", &app.base_url)
            .header("Sec-Fetch-Site", "same-origin")
            .header("X-Forwarded-For", "198.51.100.7")
            .form(&[("email", "other@example.com")])
            .send()
            .await
            .unwrap();
        assert_ne!(res.status(), StatusCode::TOO_MANY_REQUESTS, "{backend:?}");
        // Pushes are not sign-ins.
        let res = app
            .push(&key, &common::sample_push("web", 70.0, "2026-11-20T10:00:00Z"))
            .await;
        assert_eq!(res.status(), StatusCode::CREATED);
        // Only the allowed steps were counted: the refused ones wrote nothing.
        let events = tidemark_store::on_db!(&app.db, pool => {
            sqlx::query_as::<_, (i64,)>("SELECT COUNT(*) FROM rate_events WHERE bucket LIKE 'signin:%'")
                .fetch_one(pool)
                .await
        })
        .unwrap()
        .0;
        assert_eq!(events, 6, "{backend:?}");
        // The metrics name the limit that refused, and count the push that went through.
        assert_eq!(app.metric(r#"tidemark_rate_limited_total{limit="signin"}"#).await, Some(2.0));
        assert_eq!(app.metric(r#"tidemark_pushes_total{outcome="created",code=""}"#).await, Some(1.0));
    }
}
