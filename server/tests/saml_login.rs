//! SAML single sign-on against a real samlify IdP (Node), on both databases: the round trip,
//! and every response the contract says must be refused.
#![allow(clippy::unwrap_used)]

use crate::common;

use common::browser::{location, refusal, Browser};
use common::oidc::{Script, ScriptedProvider};
use common::saml::SamlIdp;
use common::{backends, TestApp};
use reqwest::StatusCode;
use serde_json::json;
use tidemark_domain::access::Role;
use tidemark_domain::text::Email;
use tidemark_wire::Tier;

const DOMAIN: &str = "sso-corp.example";
const ALICE: &str = "alice@sso-corp.example";
const BOB: &str = "bob@sso-corp.example";

struct Setup {
    app: TestApp,
    idp: SamlIdp,
    provider: ScriptedProvider,
    account: tidemark_wire::ids::AccountId,
}

async fn setup(backend: tidemark_store::Backend, enforce: bool) -> Setup {
    let (app, provider) = TestApp::spawn_with_oidc(backend).await;
    let license = app.create_license(Tier::Enterprise).await;
    for (email, role) in [(ALICE, Role::Member), (BOB, Role::Admin)] {
        tidemark_store::access::add_member(
            &app.db,
            &license.account_id,
            &Email::parse(email).unwrap(),
            role,
            &tidemark_store::testing::audit(),
        )
        .await
        .unwrap()
        .unwrap();
    }
    let idp = SamlIdp::start(&app.base_url).await;
    server::operator::commands::sso::set_sso(
        &app.db,
        &license.account_id,
        DOMAIN,
        &idp.metadata().await,
        enforce,
        &tidemark_store::testing::audit(),
    )
    .await
    .unwrap();
    Setup {
        app,
        idp,
        provider,
        account: license.account_id,
    }
}

/// Starts a sign-in for `email` and returns the IdP URL and the request id it received.
async fn start(s: &Setup, browser: &mut Browser, email: &str) -> String {
    let res = browser.post_form("/auth/signin", &[("email", email)]).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let to_idp = location(&res);
    assert!(
        to_idp.starts_with(&format!("{}/sso?SAMLRequest=", s.idp.base)),
        "{to_idp}"
    );
    let cookie = res
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .find(|c| c.starts_with("__Host-tidemark_login="))
        .expect("attempt cookie");
    // The IdP posts back cross-site: only SameSite=None comes along.
    for attr in ["SameSite=None", "Secure", "HttpOnly", "Path=/"] {
        assert!(cookie.contains(attr), "{attr} in {cookie}");
    }
    s.idp.request_id(&to_idp).await
}

/// POSTs a SAMLResponse to the ACS the way the IdP's page does (cross-site).
async fn post_acs(s: &Setup, browser: &mut Browser, response: &str) -> reqwest::Response {
    let idp_origin = s.idp.base.clone();
    browser
        .post_form_from(
            "/saml/acs",
            &[("SAMLResponse", response)],
            Some(&idp_origin),
        )
        .await
}

tidemark_store::test_each_backend! {
    async fn a_member_signs_in_through_their_company_idp(backend) {
        let s = setup(backend, false).await;
        let mut browser = Browser::new(&s.app.base_url);
        let rid = start(&s, &mut browser, ALICE).await;
        let response = s
            .idp
            .forge(json!({"email": ALICE, "inResponseTo": rid}))
            .await;
        let done = post_acs(&s, &mut browser, &response).await;
        assert_eq!(
            done.status(),
            StatusCode::OK,
            "{backend:?}: {}",
            location(&done)
        );
        assert!(browser.jar.contains_key("__Host-tidemark_session"));
        let viewer = browser
            .post_form("/api/viewer", &[])
            .await
            .text()
            .await
            .unwrap();
        assert!(
            viewer.contains(ALICE) && viewer.contains(s.account.as_str()),
            "{viewer}"
        );
        // A SAML session stays in the account whose IdP vouched for it, even for someone
        // who is a member elsewhere too.
        let elsewhere = s.app.create_license(Tier::Team).await;
        s.app.add_member(&elsewhere.account_id, ALICE, Role::Admin).await;
        let res = browser
            .post_form("/auth/switch", &[("account_id", &elsewhere.account_id)])
            .await;
        assert_eq!(location(&res), "/projects?switch=saml_bound", "{backend:?}");
        let viewer = browser
            .post_form("/api/viewer", &[])
            .await
            .text()
            .await
            .unwrap();
        assert!(viewer.contains(s.account.as_str()), "{viewer}");
        assert!(viewer.contains("\"via_saml\":true"), "{viewer}");

        // SP metadata names the entity id and ACS the IdP must use.
        let md = s.app.get("/saml/metadata").await.text().await.unwrap();
        assert!(
            md.contains(&format!("entityID=\"{}/saml/metadata\"", s.app.base_url)),
            "{md}"
        );
        assert!(md.contains("WantAssertionsSigned=\"true\""), "{md}");
        assert!(
            md.contains(&format!("Location=\"{}/saml/acs\"", s.app.base_url)),
            "{md}"
        );
    }
}

tidemark_store::test_each_backend! {
    async fn spoiled_responses_are_refused(backend) {
        let s = setup(backend, false).await;
        // `target` is who an attacker wants to be; Alice's own response is the raw material.
        for variant in [
            "unsigned",
            "stripped",
            "tampered",
            "xsw",
            "foreign-signer",
            "sha1",
            "expired",
            "wrong-audience",
            "wrong-recipient",
            "failed-status",
        ] {
            let mut browser = Browser::new(&s.app.base_url);
            let rid = start(&s, &mut browser, ALICE).await;
            let response = s
                .idp
                .forge(
                    json!({"email": ALICE, "inResponseTo": rid, "variant": variant, "target": BOB}),
                )
                .await;
            let res = post_acs(&s, &mut browser, &response).await;
            assert_eq!(
                res.status(),
                StatusCode::SEE_OTHER,
                "{backend:?}: {variant} was accepted"
            );
            assert_eq!(refusal(&res), "saml_invalid", "{backend:?}: {variant}");
            assert!(
                !browser.jar.contains_key("__Host-tidemark_session"),
                "{variant}"
            );
        }
        assert_eq!(s.app.count("sessions").await, 0, "{backend:?}");
    }
}

tidemark_store::test_each_backend! {
    async fn responses_are_single_use_and_never_unsolicited(backend) {
        let s = setup(backend, false).await;

        // Unsolicited: a valid response, but this browser started no sign-in.
        let mut stranger = Browser::new(&s.app.base_url);
        let response = s
            .idp
            .forge(json!({"email": ALICE, "inResponseTo": ""}))
            .await;
        assert_eq!(
            refusal(&post_acs(&s, &mut stranger, &response).await),
            "sign_in_expired"
        );

        // Answering another attempt's request.
        let mut other = Browser::new(&s.app.base_url);
        let other_rid = start(&s, &mut other, ALICE).await;
        let mut browser = Browser::new(&s.app.base_url);
        start(&s, &mut browser, ALICE).await;
        let response = s
            .idp
            .forge(json!({"email": ALICE, "inResponseTo": other_rid}))
            .await;
        assert_eq!(
            refusal(&post_acs(&s, &mut browser, &response).await),
            "saml_invalid"
        );

        // A good response works once...
        let mut browser = Browser::new(&s.app.base_url);
        let rid = start(&s, &mut browser, ALICE).await;
        let response = s
            .idp
            .forge(
                json!({"email": ALICE, "inResponseTo": rid, "assertionId": "_fixed-assertion-1"}),
            )
            .await;
        let attempt = browser.jar["__Host-tidemark_login"].clone();
        assert_eq!(
            post_acs(&s, &mut browser, &response).await.status(),
            StatusCode::OK
        );
        // ...replayed with the same attempt cookie, the attempt is gone...
        let mut replay = Browser::new(&s.app.base_url);
        replay.jar.insert("__Host-tidemark_login".into(), attempt);
        assert_eq!(
            refusal(&post_acs(&s, &mut replay, &response).await),
            "sign_in_expired"
        );
        // ...and the same assertion id in a new, matching response is a replay.
        let mut again = Browser::new(&s.app.base_url);
        let rid = start(&s, &mut again, ALICE).await;
        let response = s
            .idp
            .forge(
                json!({"email": ALICE, "inResponseTo": rid, "assertionId": "_fixed-assertion-1"}),
            )
            .await;
        assert_eq!(
            refusal(&post_acs(&s, &mut again, &response).await),
            "saml_invalid",
            "{backend:?}"
        );
    }
}

#[tokio::test]
async fn doctype_documents_are_refused_before_parsing() {
    let s = setup(backends()[0], false).await;
    let mut browser = Browser::new(&s.app.base_url);
    let rid = start(&s, &mut browser, ALICE).await;
    let response = s
        .idp
        .forge(json!({"email": ALICE, "inResponseTo": rid, "variant": "doctype"}))
        .await;
    let began = std::time::Instant::now();
    let res = post_acs(&s, &mut browser, &response).await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    assert!(
        began.elapsed() < std::time::Duration::from_secs(1),
        "{:?}",
        began.elapsed()
    );
    assert!(res.text().await.unwrap().contains("DOCTYPE"));
    // The attempt survives a refused document: the real response can still come.
    let good = s
        .idp
        .forge(json!({"email": ALICE, "inResponseTo": rid}))
        .await;
    assert_eq!(
        post_acs(&s, &mut browser, &good).await.status(),
        StatusCode::OK
    );
}

/// Decodes a base64 SAMLResponse, edits its XML text, encodes it again. The signature is
/// untouched: what it covers is exactly the question.
fn edit_response(response: &str, edit: impl FnOnce(String) -> String) -> String {
    use base64::Engine as _;
    let engine = base64::engine::general_purpose::STANDARD;
    let xml = String::from_utf8(engine.decode(response).unwrap()).unwrap();
    let edited = edit(xml.clone());
    assert_ne!(edited, xml, "the edit changed nothing");
    engine.encode(edited)
}

#[tokio::test]
async fn documents_in_another_encoding_are_refused_before_parsing() {
    let s = setup(backends()[0], false).await;
    let mut browser = Browser::new(&s.app.base_url);
    let rid = start(&s, &mut browser, ALICE).await;
    let good = s
        .idp
        .forge(json!({"email": ALICE, "inResponseTo": rid}))
        .await;
    for encoding in ["ISO-8859-1", "UTF-16", "UTF-7"] {
        let declared = edit_response(&good, |xml| {
            let body = match xml.strip_prefix("<?xml") {
                Some(rest) => rest.split_once("?>").unwrap().1.to_owned(),
                None => xml,
            };
            format!("<?xml version=\"1.0\" encoding=\"{encoding}\"?>{body}")
        });
        let res = post_acs(&s, &mut browser, &declared).await;
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{encoding}");
        assert!(res.text().await.unwrap().contains("UTF-8"), "{encoding}");
    }
    // Nothing was consumed: the same response, as signed, still signs Alice in.
    assert_eq!(
        post_acs(&s, &mut browser, &good).await.status(),
        StatusCode::OK
    );
}

/// The 2018 comment-injection attack: comments are outside what the signature covers, so
/// `alice@sso-corp.example<!---->.evil.example` still verifies; a reader that stops at the
/// comment would see Alice. samael must read the whole NameID, or refuse it.
#[tokio::test]
async fn a_comment_in_the_name_id_never_shortens_it() {
    let s = setup(backends()[0], false).await;
    let mut browser = Browser::new(&s.app.base_url);
    let rid = start(&s, &mut browser, ALICE).await;
    let longer = format!("{ALICE}.evil.example");
    let signed = s
        .idp
        .forge(json!({"email": longer, "inResponseTo": rid}))
        .await;
    let injected = edit_response(&signed, |xml| {
        xml.replace(
            &format!(">{longer}<"),
            &format!(">{ALICE}<!---->.evil.example<"),
        )
    });
    let res = post_acs(&s, &mut browser, &injected).await;
    assert_ne!(
        res.status(),
        StatusCode::OK,
        "the injected response must not sign anyone in: {}",
        location(&res)
    );
    // And nobody is signed in afterwards.
    let page = browser.get(&s.app.url("/projects")).await;
    assert_ne!(page.status(), StatusCode::OK, "no session was made");
}

#[tokio::test]
async fn strangers_and_foreign_domains_do_not_get_in() {
    let s = setup(backends()[0], false).await;
    let mut browser = Browser::new(&s.app.base_url);
    let rid = start(&s, &mut browser, "carol@sso-corp.example").await;
    let response = s
        .idp
        .forge(json!({"email": "carol@sso-corp.example", "inResponseTo": rid}))
        .await;
    assert_eq!(
        refusal(&post_acs(&s, &mut browser, &response).await),
        "no_access"
    );

    // The IdP of sso-corp.example may not vouch for another domain's address.
    let mut browser = Browser::new(&s.app.base_url);
    let rid = start(&s, &mut browser, ALICE).await;
    let owner = s.app.count("licenses").await;
    let _ = owner;
    let response = s
        .idp
        .forge(json!({"email": "boss@elsewhere.example", "inResponseTo": rid}))
        .await;
    assert_eq!(
        refusal(&post_acs(&s, &mut browser, &response).await),
        "saml_invalid"
    );
}

tidemark_store::test_each_backend! {
    async fn enforcing_saml_refuses_openid_connect_and_ends_sessions(backend) {
        let s = setup(backend, false).await;
        s.provider.script(Script::user(ALICE));
        // Alice had signed in with OpenID Connect before SSO was enforced; another OIDC
        // round trip is under way when the operator enforces it.
        tidemark_store::sso::remove(&s.app.db, DOMAIN, None, &tidemark_store::testing::audit())
            .await
            .unwrap();
        let mut before = Browser::new(&s.app.base_url);
        let started = before.post_form("/auth/signin", &[("email", ALICE)]).await;
        let callback = location(&before.get(&location(&started)).await);
        assert_eq!(
            before.get(&callback).await.status(),
            StatusCode::OK,
            "OIDC before enforcing"
        );

        let mut racing = Browser::new(&s.app.base_url);
        let started = racing.post_form("/auth/signin", &[("email", ALICE)]).await;
        let callback = location(&racing.get(&location(&started)).await);

        server::operator::commands::sso::set_sso(&s.app.db, &s.account, DOMAIN, &s.idp.metadata().await, true, &tidemark_store::testing::audit())
            .await
            .unwrap();
        assert_eq!(
            s.app.count("sessions").await,
            0,
            "{backend:?}: changing SSO ends sessions"
        );
        assert_eq!(
            refusal(&racing.get(&callback).await),
            "saml_required",
            "{backend:?}"
        );
        let page = before.get(&s.app.url("/projects")).await;
        assert_eq!(
            page.status(),
            StatusCode::SEE_OTHER,
            "the old session is gone"
        );
    }
}

#[tokio::test]
async fn only_enterprise_accounts_with_signing_certificates_configure_sso() {
    let backend = backends()[0];
    let s = setup(backend, false).await;
    let metadata = s.idp.metadata().await;
    let team = s.app.create_license(Tier::Team).await;
    let err = server::operator::commands::sso::set_sso(
        &s.app.db,
        &team.account_id,
        "team.example",
        &metadata,
        false,
        &tidemark_store::testing::audit(),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("enterprise"), "{err}");

    let unsigned = regex_remove(&metadata, "<KeyDescriptor", "</KeyDescriptor>");
    let err = server::operator::commands::sso::set_sso(
        &s.app.db,
        &s.account,
        "other.example",
        &unsigned,
        false,
        &tidemark_store::testing::audit(),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("no signing certificate"), "{err}");

    let doctype = format!("<!DOCTYPE x [<!ENTITY a \"b\">]>{metadata}");
    let err = server::operator::commands::sso::set_sso(
        &s.app.db,
        &s.account,
        "other.example",
        &doctype,
        false,
        &tidemark_store::testing::audit(),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("DOCTYPE"), "{err}");

    // A domain belongs to one account.
    let other = s.app.create_license(Tier::Enterprise).await;
    let err = server::operator::commands::sso::set_sso(
        &s.app.db,
        &other.account_id,
        DOMAIN,
        &metadata,
        false,
        &tidemark_store::testing::audit(),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("another account"), "{err}");
    assert_eq!(
        tidemark_services::sso::list(&s.app.db, None)
            .await
            .unwrap()
            .len(),
        1
    );
}

/// `text` without every `start…end` section.
fn regex_remove(text: &str, start: &str, end: &str) -> String {
    let mut out = text.to_owned();
    while let Some(i) = out.find(start) {
        let j = out[i..].find(end).map(|j| i + j + end.len()).unwrap();
        out.replace_range(i..j, "");
    }
    out
}

tidemark_store::test_each_backend! {
    async fn saml_signs_in_only_to_the_account_that_owns_the_domain(backend) {
        let s = setup(backend, false).await;
        // Dave's address is at the SSO domain, but he is a member only of another account.
        let other = s.app.create_license(Tier::Team).await;
        let dave = "dave@sso-corp.example";
        s.app.add_member(&other.account_id, dave, Role::Admin).await;
        let mut browser = Browser::new(&s.app.base_url);
        let rid = start(&s, &mut browser, dave).await;
        let response = s
            .idp
            .forge(json!({"email": dave, "inResponseTo": rid}))
            .await;
        let res = post_acs(&s, &mut browser, &response).await;
        assert_eq!(
            refusal(&res),
            "no_access",
            "{backend:?}: fell back to another membership"
        );
        assert!(!browser.jar.contains_key("__Host-tidemark_session"));
        assert_eq!(s.app.count("sessions").await, 0, "{backend:?}");
    }
}

tidemark_store::test_each_backend! {
    async fn an_idp_declaring_the_openid_issuer_cannot_reach_openid_identities(backend) {
        let (app, provider) = TestApp::spawn_with_oidc(backend).await;
        // The victim signs in with OpenID Connect; the provider's subject is opaque.
        let victim = app.create_license(Tier::Enterprise).await;
        let mut script = Script::user(&victim.email);
        script.subject = "opaque-subject-7".into();
        provider.script(script);
        let mut browser = Browser::new(&app.base_url);
        assert_eq!(
            browser.sign_in_with_oidc(&victim.email).await.status(),
            StatusCode::OK
        );

        // An enterprise account that really owns evil.example (the operator vouched) points
        // it at an IdP that declares the OpenID issuer as its entity id and asserts the
        // victim's subject as NameID, with an address of its own domain.
        let attacker = app.create_license(Tier::Enterprise).await;
        let mallory = "mallory@evil.example";
        app.add_member(&attacker.account_id, mallory, Role::Member).await;
        let idp = SamlIdp::start_as(&app.base_url, Some(provider.issuer())).await;
        server::operator::commands::sso::set_sso(
            &app.db,
            &attacker.account_id,
            "evil.example",
            &idp.metadata().await,
            false,
            &tidemark_store::testing::audit(),
        )
        .await
        .unwrap();
        let s = Setup {
            app,
            idp,
            provider,
            account: attacker.account_id.clone(),
        };
        let mut browser = Browser::new(&s.app.base_url);
        let rid = start(&s, &mut browser, mallory).await;
        let response = s
            .idp
            .forge(json!({
                "email": mallory,
                "nameId": "opaque-subject-7",
                "nameIdFormat": "urn:oasis:names:tc:SAML:2.0:nameid-format:persistent",
                "emailAttribute": mallory,
                "inResponseTo": rid,
            }))
            .await;
        let done = post_acs(&s, &mut browser, &response).await;
        assert_eq!(done.status(), StatusCode::OK, "{}", location(&done));
        let viewer = browser
            .post_form("/api/viewer", &[])
            .await
            .text()
            .await
            .unwrap();
        // Mallory is Mallory, in Mallory's account: never the victim.
        assert!(viewer.contains(mallory), "{backend:?}: {viewer}");
        assert!(
            !viewer.contains(&victim.email),
            "{backend:?}: took over {viewer}"
        );
        assert!(viewer.contains(s.account.as_str()), "{viewer}");
    }
}

#[tokio::test]
async fn transient_name_ids_are_matched_by_address_each_time_and_never_bound() {
    let s = setup(backends()[0], false).await;
    for round in 0..2 {
        let mut browser = Browser::new(&s.app.base_url);
        let rid = start(&s, &mut browser, ALICE).await;
        let response = s
            .idp
            .forge(json!({
                "email": ALICE,
                "nameId": format!("_transient-{round}"),
                "nameIdFormat": "urn:oasis:names:tc:SAML:2.0:nameid-format:transient",
                "emailAttribute": ALICE,
                "inResponseTo": rid,
            }))
            .await;
        let done = post_acs(&s, &mut browser, &response).await;
        assert_eq!(
            done.status(),
            StatusCode::OK,
            "round {round}: {}",
            location(&done)
        );
    }
    assert_eq!(s.app.count("identities").await, 0);
}
