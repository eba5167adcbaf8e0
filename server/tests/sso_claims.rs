//! SSO tenant isolation, on both databases, against a real DNS server on loopback
//! (`end2end/peers/dns.mjs`): a domain claimed in Settings routes and enforces nothing until
//! its DNS record proves ownership; the first account to prove it wins; public mail domains
//! cannot be claimed; and people in several accounts switch between them.
#![allow(clippy::unwrap_used)]

use crate::common;

use common::browser::{location, Browser};
use common::dns::{free_udp_and_tcp_port, DnsServer};
use common::oidc::{Script, ScriptedProvider};
use common::saml::SamlIdp;
use common::{backends, TestApp};
use reqwest::StatusCode;
use serde_json::Value;
use tidemark_domain::access::Role;
use tidemark_wire::Tier;

const VICTIM: &str = "victim.example";

struct World {
    app: TestApp,
    provider: ScriptedProvider,
    dns: DnsServer,
}

async fn world(backend: tidemark_store::Backend) -> World {
    let provider = ScriptedProvider::start().await;
    let dns = DnsServer::start().await;
    let mut env = provider.env();
    env.push(("TIDEMARK_DNS_RESOLVER", dns.addr.clone()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let app = TestApp::spawn_with(backend, &env).await;
    World { app, provider, dns }
}

async fn signed_in(w: &World, email: &str) -> Browser {
    w.app.signed_in(&w.provider, email).await
}

/// A server function's JSON answer, with its status.
async fn call(browser: &mut Browser, function: &str, form: &[(&str, &str)]) -> (StatusCode, Value) {
    let res = browser.post_form(&format!("/api/{function}"), form).await;
    let status = res.status();
    let text = res.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

async fn claim(admin: &mut Browser, domain: &str, metadata: &str) -> Value {
    let form = [
        ("domain", domain),
        ("metadata_xml", metadata),
        ("enforce", "true"),
    ];
    let (status, body) = call(admin, "configure_sso", &form).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

fn text(v: &Value, field: &str) -> String {
    v[field].as_str().unwrap_or_default().to_owned()
}

tidemark_store::test_each_backend! {
    async fn a_claim_is_pending_until_its_dns_record_verifies_it(backend) {
        let mut w = world(backend).await;
        let idp = SamlIdp::start(&w.app.base_url).await;
        let metadata = idp.metadata().await;
        let owner = w.app.create_license(Tier::Enterprise).await;
        let mut admin = signed_in(&w, &owner.email).await;

        let pending = claim(&mut admin, "Acme.Example", &metadata).await;
        assert_eq!(text(&pending, "state"), "Pending", "{backend:?}: {pending}");
        let name = text(&pending, "record_name");
        let value = text(&pending, "record_value");
        assert_eq!(name, "_tidemark-challenge.acme.example");
        let token = value
            .strip_prefix("tidemark-domain-verification=")
            .unwrap()
            .to_owned();
        assert_eq!(token.len(), 32, "128 random bits in hex: {value}");
        assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));

        // Each of these leaves the claim pending, with a message that says what was found.
        let record = "_tidemark-challenge.acme.example";
        let wrong = "tidemark-domain-verification=00000000000000000000000000000000";
        for words in ["NXDOMAIN", "no TXT record", "different token", "failed"] {
            match words {
                "NXDOMAIN" => w.dns.unpublish(record),
                "no TXT record" => w.dns.publish(record, &[]),
                "different token" => w.dns.publish(record, &[wrong]),
                _ => w.dns.fail(record),
            }
            let (status, after) =
                call(&mut admin, "verify_sso", &[("domain", "acme.example")]).await;
            assert_eq!(status, StatusCode::OK, "{after}");
            assert_eq!(
                text(&after, "state"),
                "Pending",
                "{backend:?} {words}: {after}"
            );
            let message = text(&after, "check_message");
            assert!(
                message.contains(words),
                "{backend:?}: {words:?} not in {message:?}"
            );
            assert!(after["checked_at"].is_string());
            assert!(
                tidemark_store::sso::find_verified(&w.app.db, "acme.example")
                    .await
                    .unwrap()
                    .is_none(),
                "{backend:?}: {words} verified the claim"
            );
        }

        // The right record verifies it.
        w.dns
            .publish("_tidemark-challenge.acme.example", &["v=spf1 -all", &value]);
        let (status, after) = call(&mut admin, "verify_sso", &[("domain", "acme.example")]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(text(&after, "state"), "Verified", "{backend:?}: {after}");
        let verified = tidemark_store::sso::find_verified(&w.app.db, "acme.example")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(verified.account_id, owner.account_id);
        // ...and Settings lists it as verified.
        let (_, settings) = call(&mut admin, "settings", &[]).await;
        assert_eq!(settings["sso"][0]["state"], "Verified", "{settings}");
    }
}

tidemark_store::test_each_backend! {
    async fn the_first_account_to_verify_wins_and_the_others_are_told_why(backend) {
        let mut w = world(backend).await;
        let idp = SamlIdp::start(&w.app.base_url).await;
        let metadata = idp.metadata().await;
        let (first, second) = (
            w.app.create_license(Tier::Enterprise).await,
            w.app.create_license(Tier::Enterprise).await,
        );
        let mut a = signed_in(&w, &first.email).await;
        let mut b = signed_in(&w, &second.email).await;
        let claim_a = claim(&mut a, "shared.example", &metadata).await;
        let claim_b = claim(&mut b, "shared.example", &metadata).await;
        assert_ne!(claim_a["record_value"], claim_b["record_value"]);

        // The domain publishes both tokens (say, a takeover of its DNS was reverted late):
        // whoever verifies first owns it.
        let name = "_tidemark-challenge.shared.example";
        let (va, vb) = (
            text(&claim_a, "record_value"),
            text(&claim_b, "record_value"),
        );
        w.dns.publish(name, &[&va, &vb]);
        let (_, won) = call(&mut a, "verify_sso", &[("domain", "shared.example")]).await;
        assert_eq!(text(&won, "state"), "Verified", "{backend:?}: {won}");
        let (_, lost) = call(&mut b, "verify_sso", &[("domain", "shared.example")]).await;
        assert_eq!(text(&lost, "state"), "Ended", "{backend:?}: {lost}");
        assert!(
            text(&lost, "ended_reason").contains("Another account"),
            "{lost}"
        );
        // An account that holds no claim on a domain can neither check nor remove one there.
        let third = w.app.create_license(Tier::Enterprise).await;
        let mut c = signed_in(&w, &third.email).await;
        let (status, _) = call(&mut c, "verify_sso", &[("domain", "shared.example")]).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{backend:?}");
        let (status, _) = call(&mut c, "remove_sso", &[("domain", "shared.example")]).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{backend:?}");
        assert_eq!(
            tidemark_store::sso::find_verified(&w.app.db, "shared.example")
                .await
                .unwrap()
                .map(|c| c.account_id),
            Some(first.account_id.clone())
        );
        // B's Settings says so, and B cannot claim the domain again.
        let (_, settings) = call(&mut b, "settings", &[]).await;
        assert_eq!(settings["sso"][0]["state"], "Ended", "{settings}");
        let form = [
            ("domain", "shared.example"),
            ("metadata_xml", metadata.as_str()),
        ];
        let (status, body) = call(&mut b, "configure_sso", &form).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert!(body
            .to_string()
            .contains("already verified by another account"));
    }
}

#[tokio::test]
async fn an_unreachable_resolver_leaves_the_claim_pending_with_a_clear_message() {
    let backend = backends()[0];
    let provider = ScriptedProvider::start().await;
    let silent = format!("127.0.0.1:{}", free_udp_and_tcp_port());
    let mut env = provider.env();
    env.push(("TIDEMARK_DNS_RESOLVER", silent));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let app = TestApp::spawn_with(backend, &env).await;
    let w = World {
        app,
        provider,
        dns: DnsServer::start().await,
    };
    let idp = SamlIdp::start(&w.app.base_url).await;
    let owner = w.app.create_license(Tier::Enterprise).await;
    let mut admin = signed_in(&w, &owner.email).await;
    claim(&mut admin, "acme.example", &idp.metadata().await).await;
    let (status, after) = call(&mut admin, "verify_sso", &[("domain", "acme.example")]).await;
    assert_eq!(status, StatusCode::OK, "{after}");
    assert_eq!(text(&after, "state"), "Pending");
    let message = text(&after, "check_message");
    assert!(
        message.contains("look-up") && message.contains("failed"),
        "{message}"
    );
}

tidemark_store::test_each_backend! {
    async fn a_pending_claim_routes_nobody_and_enforces_nothing(backend) {
        let w = world(backend).await;
        let attacker_idp = SamlIdp::start(&w.app.base_url).await;
        // The victim's account, whose admin signs in with OpenID Connect...
        let victim = w.app.create_license(Tier::Enterprise).await;
        let owner = format!("owner@{VICTIM}");
        w.app.add_member(&victim.account_id, &owner, Role::Admin).await;
        let mut victim_browser = signed_in(&w, &owner).await;
        // ...and another enterprise account whose admin claims the victim's domain with
        // an IdP of their own, enforced.
        let attacker = w.app.create_license(Tier::Enterprise).await;
        let mut mallory = signed_in(&w, &attacker.email).await;
        let pending = claim(&mut mallory, VICTIM, &attacker_idp.metadata().await).await;
        assert_eq!(text(&pending, "state"), "Pending");

        // The victim's session survives; a new sign-in goes to OpenID Connect, not to the
        // attacker's IdP, and is not refused as "SAML required".
        let page = victim_browser.get(&w.app.url("/settings")).await;
        assert_eq!(
            page.status(),
            StatusCode::OK,
            "{backend:?}: the session was ended"
        );
        let mut again = Browser::new(&w.app.base_url);
        w.provider.script(Script::user(&owner));
        let start = again.post_form("/auth/signin", &[("email", &owner)]).await;
        let to = location(&start);
        assert!(
            to.starts_with(w.provider.issuer()),
            "{backend:?}: routed to {to}"
        );
        assert!(!to.starts_with(&attacker_idp.base));
        let callback = location(&again.get(&to).await);
        let done = again.get(&callback).await;
        assert_eq!(
            done.status(),
            StatusCode::OK,
            "{backend:?}: {}",
            location(&done)
        );
        let (_, viewer) = call(&mut again, "viewer", &[]).await;
        assert_eq!(viewer["account_id"], victim.account_id.as_str(), "{viewer}");
    }
}

tidemark_store::test_each_backend! {
    async fn public_mail_domains_cannot_be_claimed_on_either_path(backend) {
        let w = world(backend).await;
        let idp = SamlIdp::start(&w.app.base_url).await;
        let metadata = idp.metadata().await;
        let owner = w.app.create_license(Tier::Enterprise).await;
        let mut admin = signed_in(&w, &owner.email).await;
        for domain in ["gmail.com", "Outlook.com", "co.uk", "localhost"] {
            let form = [("domain", domain), ("metadata_xml", metadata.as_str())];
            let (status, body) = call(&mut admin, "configure_sso", &form).await;
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{domain}: {body}");
            let err = server::operator::commands::sso::set_sso(&w.app.db, &owner.account_id, domain, &metadata, false, &tidemark_store::testing::audit())
                .await
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("public") || err.contains("not an e-mail domain"),
                "{domain}: {err}"
            );
        }
        let body = call(
            &mut admin,
            "configure_sso",
            &[("domain", "gmail.com"), ("metadata_xml", &metadata)],
        )
        .await
        .1
        .to_string();
        assert!(body.contains("public mail provider"), "{body}");
        assert!(tidemark_services::sso::list(&w.app.db, None)
            .await
            .unwrap()
            .is_empty());
    }
}

tidemark_store::test_each_backend! {
    async fn people_in_several_accounts_switch_between_them(backend) {
        let w = world(backend).await;
        let first = w.app.create_license(Tier::Team).await;
        let second = w.app.create_license(Tier::Team).await;
        // The first account's admin is also a (read-only) member of the second.
        w.app.add_member(&second.account_id, &first.email, Role::Member).await;
        let mut browser = signed_in(&w, &first.email).await;
        let (_, viewer) = call(&mut browser, "viewer", &[]).await;
        assert_eq!(
            viewer["account_id"],
            first.account_id.as_str(),
            "{backend:?}"
        );
        assert_eq!(viewer["is_admin"], true);
        let (_, accounts) = call(&mut browser, "accounts", &[]).await;
        assert_eq!(accounts.as_array().unwrap().len(), 2, "{accounts}");

        // Switching issues a new session id, and the other account's role applies.
        let before = browser.jar["__Host-tidemark_session"].clone();
        let res = browser
            .post_form("/auth/switch", &[("account_id", &second.account_id)])
            .await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER);
        assert_eq!(location(&res), "/projects");
        let after = browser.jar["__Host-tidemark_session"].clone();
        assert_ne!(before, after, "{backend:?}: the session id was not renewed");
        let (_, viewer) = call(&mut browser, "viewer", &[]).await;
        assert_eq!(viewer["account_id"], second.account_id.as_str(), "{viewer}");
        assert_eq!(viewer["is_admin"], false);
        let (status, _) = call(&mut browser, "rotate_keys", &[]).await;
        assert_eq!(
            status,
            StatusCode::FORBIDDEN,
            "a member of this account cannot rotate"
        );
        // The old session id is worthless now.
        let mut stale = Browser::new(&w.app.base_url);
        stale.jar.insert("__Host-tidemark_session".into(), before);
        let (_, nobody) = call(&mut stale, "viewer", &[]).await;
        assert_eq!(nobody, Value::Null, "{nobody}");

        // An account one is not a member of cannot be switched to.
        let stranger = w.app.create_license(Tier::Team).await;
        let res = browser
            .post_form("/auth/switch", &[("account_id", &stranger.account_id)])
            .await;
        assert_eq!(location(&res), "/projects?switch=not_member");
        let (_, viewer) = call(&mut browser, "viewer", &[]).await;
        assert_eq!(viewer["account_id"], second.account_id.as_str());
        // Nor from another site.
        let res = browser
            .post_form_from(
                "/auth/switch",
                &[("account_id", &first.account_id)],
                Some("https://evil.example"),
            )
            .await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN);

        // The next OpenID Connect sign-in lands in the account used last.
        let mut next_day = signed_in(&w, &first.email).await;
        let (_, viewer) = call(&mut next_day, "viewer", &[]).await;
        assert_eq!(
            viewer["account_id"],
            second.account_id.as_str(),
            "{backend:?}"
        );
    }
}
