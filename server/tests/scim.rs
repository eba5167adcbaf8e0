//! SCIM 2.0 provisioning (`/scim/v2`), on both databases: who may call it, Users and Groups
//! with their filters, uniqueness and PATCH dialects, deprovisioning that ends sessions at
//! once, the last admin, admin groups, hand edits refused, recorded Okta and Entra sequences
//! replayed, another account's token reaching nothing, rate limits, metrics and the audit log.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;

use crate::common;

use common::{browser::location, TestApp, TestLicense};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tidemark_domain::access::Role;
use tidemark_domain::sso::ClaimableDomain;
use tidemark_store::sso::{NewClaim, Vouched};
use tidemark_wire::Tier;

const USER: &str = "urn:ietf:params:scim:schemas:core:2.0:User";
const PATCH: &str = "urn:ietf:params:scim:api:messages:2.0:PatchOp";

/// An identity provider's view of one account: its token and the SCIM base URL.
struct Idp {
    client: reqwest::Client,
    base: String,
    token: String,
    license: TestLicense,
}

impl Idp {
    /// An enterprise account with `domain` verified and a SCIM token made as an operator would.
    async fn for_new_account(app: &TestApp, domain: &str) -> Idp {
        let license = app.create_license(Tier::Enterprise).await;
        verify_domain(app, &license.account_id, domain).await;
        let token = make_token(app, &license.account_id).await;
        Idp {
            client: reqwest::Client::new(),
            base: app.url("/scim/v2"),
            token,
            license,
        }
    }

    async fn call(&self, method: &str, path: &str, body: Option<&Value>) -> (StatusCode, Value) {
        let url = format!("{}{path}", self.base);
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut req = self
            .client
            .request(method, url)
            .bearer_auth(&self.token)
            .header("accept", "application/scim+json");
        if let Some(body) = body {
            req = req
                .header("content-type", "application/scim+json")
                .body(body.to_string());
        }
        let res = req.send().await.unwrap();
        let status = res.status();
        if status != StatusCode::NO_CONTENT {
            assert_eq!(
                res.headers()["content-type"],
                "application/scim+json",
                "{path}"
            );
        }
        let text = res.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.call("GET", path, None).await
    }

    async fn post(&self, path: &str, body: &Value) -> (StatusCode, Value) {
        self.call("POST", path, Some(body)).await
    }

    async fn patch(&self, path: &str, body: &Value) -> (StatusCode, Value) {
        self.call("PATCH", path, Some(body)).await
    }

    /// Provisions `email` the way Okta does; returns the SCIM id.
    async fn provision(&self, email: &str) -> String {
        let (status, body) = self.post("/Users", &okta_user(email)).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body["id"].as_str().unwrap().to_owned()
    }
}

fn okta_user(email: &str) -> Value {
    let local = email.split('@').next().unwrap();
    json!({
        "schemas": [USER],
        "userName": email,
        "name": {"givenName": local, "familyName": "Example"},
        "emails": [{"primary": true, "value": email, "type": "work"}],
        "displayName": format!("{local} Example"),
        "locale": "en-US",
        "externalId": format!("00u{local}"),
        "groups": [],
        "password": "never-kept",
        "active": true
    })
}

fn ops(operations: Value) -> Value {
    json!({"schemas": [PATCH], "Operations": operations})
}

async fn verify_domain(app: &TestApp, account_id: &str, domain: &str) {
    let account_id = &tidemark_wire::ids::AccountId::trusted(account_id);
    let domain = ClaimableDomain::parse(domain).unwrap();
    tidemark_store::sso::claim(
        &app.db,
        &NewClaim {
            account_id,
            domain: &domain,
            idp_entity_id: &format!("https://idp.{}/", domain.as_str()),
            idp_sso_url: &format!("https://idp.{}/sso", domain.as_str()),
            signing_certs: &["MIIB".to_owned()],
            enforce: false,
            metadata_xml: "<EntityDescriptor/>",
            now: tidemark_domain::now_millis(),
        },
        Vouched::ByOperator,
        &tidemark_store::testing::audit(),
    )
    .await
    .unwrap();
}

/// `tidemark-server scim token --account …`, through the operator command.
async fn make_token(app: &TestApp, account_id: &str) -> String {
    let (ok, out, err) = app
        .command(&["scim", "token", "--account", account_id, "--json"], &[])
        .await;
    assert!(ok, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert!(
        !err.contains(report["token"].as_str().unwrap()),
        "token on stderr: {err}"
    );
    report["token"].as_str().unwrap().to_owned()
}

async fn role_of(app: &TestApp, account_id: &str, email: &str) -> Option<Role> {
    let account_id = &tidemark_wire::ids::AccountId::trusted(account_id);
    let email = tidemark_domain::text::Email::parse(email).unwrap();
    tidemark_store::access::find_member_by_email(&app.db, account_id, &email)
        .await
        .unwrap()
        .map(|m| m.role)
}

async fn sessions_of(app: &TestApp, account_id: &str) -> i64 {
    let sql = "SELECT COUNT(*) FROM sessions WHERE account_id = $1 AND user_id IS NOT NULL";
    let (n,): (i64,) = tidemark_store::on_db!(&app.db, pool => {
        sqlx::query_as(sql).bind(account_id).fetch_one(pool).await
    })
    .unwrap();
    n
}

tidemark_store::test_each_backend! {
    async fn only_enterprise_accounts_with_a_verified_domain_and_their_token_get_in(backend) {
        let app = TestApp::spawn(backend).await;
        let client = reqwest::Client::new();
        let spc = app.url("/scim/v2/ServiceProviderConfig");
        for auth in [None, Some("Bearer tmk_scim_nope"), Some("Basic dXNlcjpwYXNz")] {
            let mut req = client.get(&spc);
            if let Some(auth) = auth {
                req = req.header("authorization", auth);
            }
            let res = req.send().await.unwrap();
            assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{auth:?}");
            assert!(res.headers().contains_key("www-authenticate"));
            let body: Value = res.json().await.unwrap();
            assert_eq!(body["status"], "401");
            assert_eq!(body["schemas"][0], "urn:ietf:params:scim:api:messages:2.0:Error");
        }

        // A team account, and an enterprise one before its domain is verified: 403.
        let team = app.create_license(Tier::Team).await;
        let team_token = make_token(&app, &team.account_id).await;
        let pending = app.create_license(Tier::Enterprise).await;
        let pending_token = make_token(&app, &pending.account_id).await;
        for token in [&team_token, &pending_token] {
            let res = client.get(&spc).bearer_auth(token).send().await.unwrap();
            assert_eq!(res.status(), StatusCode::FORBIDDEN);
        }
        verify_domain(&app, &pending.account_id, "pending.example").await;
        let res = client.get(&spc).bearer_auth(&pending_token).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        let config: Value = res.json().await.unwrap();
        assert_eq!(config["patch"]["supported"], true);
        assert_eq!(config["filter"]["supported"], true);

        // A rotated token ends the old one; a revoked one ends both.
        let rotated = make_token(&app, &pending.account_id).await;
        let old = client.get(&spc).bearer_auth(&pending_token).send().await.unwrap();
        assert_eq!(old.status(), StatusCode::UNAUTHORIZED);
        let (ok, _, err) = app
            .command(&["scim", "token", "--account", &pending.account_id, "--revoke"], &[])
            .await;
        assert!(ok, "{err}");
        let gone = client.get(&spc).bearer_auth(&rotated).send().await.unwrap();
        assert_eq!(gone.status(), StatusCode::UNAUTHORIZED);
        // Tokens are stored hashed: no raw token in the table.
        assert_eq!(app.count("scim_tokens WHERE token_hash LIKE 'tmk_scim_%'").await, 0);
    }
}

tidemark_store::test_each_backend! {
    async fn discovery_describes_users_and_groups(backend) {
        let app = TestApp::spawn(backend).await;
        let idp = Idp::for_new_account(&app, "corp.example").await;
        let (status, types) = idp.get("/ResourceTypes").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(types["totalResults"], 2);
        let (status, user) = idp.get("/ResourceTypes/User").await;
        assert_eq!((status, user["endpoint"].as_str()), (StatusCode::OK, Some("/Users")));
        let (status, schemas) = idp.get("/Schemas").await;
        assert_eq!(status, StatusCode::OK);
        let user_schema = &schemas["Resources"][0];
        let user_name = user_schema["attributes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == "userName")
            .unwrap();
        assert_eq!(user_name["uniqueness"], "server");
        let (status, _) = idp.get(&format!("/Schemas/{USER}")).await;
        assert_eq!(status, StatusCode::OK);
        let (status, body) = idp.get("/Nothing").await;
        assert_eq!((status, body["status"].as_str()), (StatusCode::NOT_FOUND, Some("404")));
    }
}

tidemark_store::test_each_backend! {
    async fn users_are_created_found_by_filters_replaced_and_deleted(backend) {
        let app = TestApp::spawn(backend).await;
        let idp = Idp::for_new_account(&app, "corp.example").await;
        let account = idp.license.account_id.clone();

        let (status, alice) = idp.post("/Users", &okta_user("Alice@corp.example")).await;
        assert_eq!(status, StatusCode::CREATED, "{alice}");
        let id = alice["id"].as_str().unwrap().to_owned();
        assert!(id.starts_with("scu_"));
        assert_eq!(alice["meta"]["location"], app.url(&format!("/scim/v2/Users/{id}")));
        assert!(alice.get("password").is_none());
        assert_eq!(role_of(&app, &account, "alice@corp.example").await, Some(Role::Member));
        idp.provision("bob@corp.example").await;
        idp.provision("carol@corp.example").await;

        // The same person again, or their userName in another case: 409 uniqueness.
        for again in [okta_user("Alice@corp.example"), okta_user("ALICE@CORP.EXAMPLE")] {
            let (status, body) = idp.post("/Users", &again).await;
            assert_eq!(status, StatusCode::CONFLICT, "{body}");
            assert_eq!(body["scimType"], "uniqueness");
            assert_eq!(body["status"], "409");
        }
        assert_eq!(app.count("scim_users").await, 3);

        assert_eq!(found(&idp, "userName eq \"alice@CORP.example\"").await, ["Alice@corp.example"]);
        assert_eq!(found(&idp, "externalId eq \"00ubob\"").await, ["bob@corp.example"]);
        assert!(found(&idp, "externalId eq \"00UBOB\"").await.is_empty(), "externalId is caseExact");
        assert_eq!(
            found(&idp, "emails[type eq \"work\"].value eq \"carol@corp.example\"").await,
            ["carol@corp.example"]
        );
        assert_eq!(
            found(&idp, "userName eq \"bob@corp.example\" or externalId eq \"00ucarol\"").await,
            ["bob@corp.example", "carol@corp.example"]
        );
        assert_eq!(
            found(&idp, "userName sw \"bob\" and active eq true").await,
            ["bob@corp.example"]
        );
        let (status, bad) = idp.get(&format!("/Users?filter={}", urlencode("userName eq"))).await;
        assert_eq!((status, bad["scimType"].as_str()), (StatusCode::BAD_REQUEST, Some("invalidFilter")));

        // Pages: 1-based, totalResults counts every match.
        let (_, page) = idp.get("/Users?startIndex=2&count=1").await;
        assert_eq!((page["totalResults"].as_u64(), page["itemsPerPage"].as_u64()), (Some(3), Some(1)));
        assert_eq!(page["startIndex"], 2);
        assert_eq!(page["Resources"][0]["userName"], "bob@corp.example");

        // PUT replaces; the work address moving moves the membership with it.
        let mut replaced = okta_user("alice@corp.example");
        replaced["emails"] = json!([{"value": "alice.l@corp.example", "type": "work"}]);
        replaced["displayName"] = json!("Alice L.");
        let (status, after) = idp.call("PUT", &format!("/Users/{id}"), Some(&replaced)).await;
        assert_eq!(status, StatusCode::OK, "{after}");
        assert_eq!(after["displayName"], "Alice L.");
        assert_eq!(role_of(&app, &account, "alice@corp.example").await, None);
        assert_eq!(role_of(&app, &account, "alice.l@corp.example").await, Some(Role::Member));

        let (status, _) = idp.call("DELETE", &format!("/Users/{id}"), None).await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        let (status, _) = idp.get(&format!("/Users/{id}")).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_eq!(role_of(&app, &account, "alice.l@corp.example").await, None);

        // Bodies Tidemark cannot keep change nothing.
        for (body, scim_type) in [
            (json!({"schemas": [USER]}), "invalidValue"),
            (json!({"userName": "ivan@corp.example", "emails": [{"value": "not-an-address"}]}), "invalidValue"),
            (json!(["not", "an", "object"]), "invalidSyntax"),
        ] {
            let (status, refusal) = idp.post("/Users", &body).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
            assert_eq!(refusal["scimType"], scim_type, "{body}");
        }
        let res = reqwest::Client::new()
            .post(app.url("/scim/v2/Users"))
            .bearer_auth(&idp.token)
            .body("{not json")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::BAD_REQUEST);
        assert_eq!(app.count("scim_users").await, 2);

        // A userName that is no address, and no e-mail: kept for the IdP, with no membership
        // until an address arrives; then the membership follows it.
        let members_before = app.count("members").await;
        let (status, plain) = idp.post("/Users", &json!({"schemas": [USER], "userName": "jdoe"})).await;
        assert_eq!(status, StatusCode::CREATED, "{plain}");
        assert!(plain.get("active").is_none(), "unstated stays unstated: {plain}");
        assert_eq!(app.count("members").await, members_before);
        let plain_id = plain["id"].as_str().unwrap();
        let add_email = ops(json!([{"op": "add", "path": "emails", "value": [{"value": "jdoe@corp.example", "type": "work", "primary": false}]}]));
        let (status, with_email) = idp.patch(&format!("/Users/{plain_id}"), &add_email).await;
        assert_eq!(status, StatusCode::OK, "{with_email}");
        assert_eq!(with_email["emails"], json!([{"value": "jdoe@corp.example", "type": "work", "primary": false}]));
        assert_eq!(role_of(&app, &account, "jdoe@corp.example").await, Some(Role::Member));

        // attributes / excludedAttributes, and POST /Users/.search.
        let (_, cut) = idp.get(&format!("/Users/{plain_id}?attributes=userName")).await;
        assert_eq!(cut.as_object().unwrap().keys().collect::<Vec<_>>(), ["id", "meta", "schemas", "userName"]);
        let search = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:SearchRequest"],
            "filter": "userName eq \"jdoe\"", "excludedAttributes": ["emails"], "count": 5});
        let (status, found) = idp.post("/Users/.search", &search).await;
        assert_eq!(status, StatusCode::OK, "{found}");
        assert_eq!(found["totalResults"], 1);
        assert!(found["Resources"][0].get("emails").is_none());
    }
}

tidemark_store::test_each_backend! {
    async fn deactivation_ends_sessions_at_once_and_reactivation_restores_the_role(backend) {
        let (app, provider) = TestApp::spawn_with_oidc(backend).await;
        let idp = Idp::for_new_account(&app, "corp.example").await;
        let account = idp.license.account_id.clone();
        // Dana signs in with OpenID Connect (corp.example's people would be sent to its SAML
        // IdP). Dana also belongs to another account, which SCIM here must not touch.
        let other = app.create_license(Tier::Team).await;
        app.add_member(&other.account_id, "dana@partner.example", Role::Member).await;

        let dana = idp.provision("dana@partner.example").await;
        // Marking a group as the admins' one makes its members admins.
        let (status, group) = idp
            .post("/Groups", &json!({"displayName": "Tidemark Admins", "members": [{"value": dana}]}))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{group}");
        let group_id = group["id"].as_str().unwrap().to_owned();
        assert_eq!(group["members"][0]["value"], dana.as_str());
        tidemark_store::scim::set_group_admin(&app.db, &account, &group_id, true, &tidemark_store::testing::audit())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(role_of(&app, &account, "dana@partner.example").await, Some(Role::Admin));

        let mut browser = app.signed_in(&provider, "dana@partner.example").await;
        let switched = browser
            .post_form("/auth/switch", &[("account", account.as_str())])
            .await;
        assert!(switched.status().is_redirection() || switched.status().is_success());
        let page = browser.get(&app.url("/settings")).await;
        assert_eq!(page.status(), StatusCode::OK);
        assert!(sessions_of(&app, &account).await >= 1);

        // Okta deactivates without a path.
        let (status, body) = idp
            .patch(&format!("/Users/{dana}"), &ops(json!([{"op": "replace", "value": {"active": false}}])))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["active"], false);
        assert_eq!(role_of(&app, &account, "dana@partner.example").await, None);
        assert_eq!(sessions_of(&app, &account).await, 0);
        let next = browser.get(&app.url("/settings")).await;
        assert!(location(&next).starts_with("/signin"), "{}", location(&next));
        // The other account is untouched.
        assert_eq!(role_of(&app, &other.account_id, "dana@partner.example").await, Some(Role::Member));

        // Entra reactivates with a capitalised op and a string boolean: the role comes back.
        let (status, body) = idp
            .patch(&format!("/Users/{dana}"), &ops(json!([{"op": "Replace", "path": "active", "value": "True"}])))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(role_of(&app, &account, "dana@partner.example").await, Some(Role::Admin));
        assert_eq!(body["groups"][0]["display"], "Tidemark Admins");

        // Leaving the admins' group makes a member.
        let erin = idp.provision("erin@partner.example").await;
        let (status, _) = idp
            .patch(&format!("/Groups/{group_id}"), &ops(json!([
                {"op": "add", "path": "members", "value": [{"value": erin}]},
                {"op": "remove", "path": format!("members[value eq \"{dana}\"]")}
            ])))
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(role_of(&app, &account, "dana@partner.example").await, Some(Role::Member));
        assert_eq!(role_of(&app, &account, "erin@partner.example").await, Some(Role::Admin));

        // Every change is audited under the token's prefix.
        let events = tidemark_store::audit::list_audit(&app.db, &tidemark_store::audit::AuditQuery {
            account_id: Some(account.clone()),
            limit: 500,
            ..Default::default()
        })
        .await
        .unwrap();
        let prefix = &idp.token[..15];
        let by_scim: Vec<&str> = events
            .iter()
            .filter(|e| e.actor == format!("scim:{prefix}"))
            .map(|e| e.action.as_str())
            .collect();
        for action in ["scim.user_provisioned", "scim.user_deactivated", "scim.user_reactivated", "member.removed", "member.added", "scim.group_created"] {
            assert!(by_scim.contains(&action), "{action} in {by_scim:?}");
        }
    }
}

tidemark_store::test_each_backend! {
    async fn the_last_admin_is_never_removed_and_hand_edits_are_refused(backend) {
        let app = TestApp::spawn(backend).await;
        let idp = Idp::for_new_account(&app, "example.com").await;
        let account = idp.license.account_id.clone();
        // The licence holder is the account's only admin; the IdP takes them over.
        let owner = idp.provision(&idp.license.email).await;
        assert_eq!(role_of(&app, &account, &idp.license.email).await, Some(Role::Admin));

        let (status, body) = idp
            .patch(&format!("/Users/{owner}"), &ops(json!([{"op": "replace", "path": "active", "value": false}])))
            .await;
        assert_eq!(status, StatusCode::CONFLICT, "{body}");
        assert!(body["detail"].as_str().unwrap().contains("without an admin"), "{body}");
        let (status, _) = idp.call("DELETE", &format!("/Users/{owner}"), None).await;
        assert_eq!(status, StatusCode::CONFLICT);
        assert_eq!(role_of(&app, &account, &idp.license.email).await, Some(Role::Admin));
        let (_, still) = idp.get(&format!("/Users/{owner}")).await;
        assert_eq!(still["active"], true);

        // A marked admins' group without the owner would demote them: refused too.
        let (_, group) = idp.post("/Groups", &json!({"displayName": "Admins"})).await;
        let refused = tidemark_store::scim::set_group_admin(
            &app.db, &account, group["id"].as_str().unwrap(), true, &tidemark_store::testing::audit(),
        )
        .await
        .unwrap();
        assert!(matches!(refused, Err(tidemark_store::scim::Refusal::LastAdmin(_))), "{refused:?}");

        // Hand edits of a provisioned person are refused with a pointer to the IdP.
        let frank = idp.provision("frank@example.com").await;
        let member = tidemark_store::access::find_member_by_email(
            &app.db, &account, &tidemark_domain::text::Email::parse("frank@example.com").unwrap(),
        )
        .await
        .unwrap()
        .unwrap();
        let edit = tidemark_store::access::change_member(
            &app.db, &account, &member.user_id, Some(Role::Admin), &tidemark_store::testing::audit(),
        )
        .await
        .unwrap();
        let refusal = edit.unwrap_err().to_string();
        assert!(refusal.contains("identity provider"), "{refusal}");
        // Deactivated, they cannot be added back by hand either.
        idp.patch(&format!("/Users/{frank}"), &ops(json!([{"op": "replace", "value": {"active": false}}]))).await;
        let add = tidemark_store::access::add_member(
            &app.db, &account, &tidemark_domain::text::Email::parse("frank@example.com").unwrap(),
            Role::Member, &tidemark_store::testing::audit(),
        )
        .await
        .unwrap();
        assert!(matches!(add, Err(tidemark_store::access::MembershipError::ManagedByScim(_))));
    }
}

tidemark_store::test_each_backend! {
    async fn another_accounts_token_reaches_nothing(backend) {
        let app = TestApp::spawn(backend).await;
        let a = Idp::for_new_account(&app, "a-corp.example").await;
        let b = Idp::for_new_account(&app, "b-corp.example").await;
        let user = a.provision("gina@a-corp.example").await;
        let (_, group) = a.post("/Groups", &json!({"displayName": "Eng", "members": [{"value": user}]})).await;
        let group = group["id"].as_str().unwrap().to_owned();

        for path in [format!("/Users/{user}"), format!("/Groups/{group}")] {
            assert_eq!(b.get(&path).await.0, StatusCode::NOT_FOUND, "{path}");
            let patch = ops(json!([{"op": "replace", "path": "displayName", "value": "x"}]));
            assert_eq!(b.patch(&path, &patch).await.0, StatusCode::NOT_FOUND, "{path}");
            assert_eq!(b.call("DELETE", &path, None).await.0, StatusCode::NOT_FOUND, "{path}");
        }
        let (_, list) = b.get("/Users").await;
        assert_eq!(list["totalResults"], 0);
        let (_, list) = b.get("/Groups").await;
        assert_eq!(list["totalResults"], 0);
        // B's group cannot name A's person.
        let (status, body) = b.post("/Groups", &json!({"displayName": "Eng", "members": [{"value": user}]})).await;
        assert_eq!((status, body["scimType"].as_str()), (StatusCode::BAD_REQUEST, Some("invalidValue")));
        // A is as it was.
        let (_, still) = a.get(&format!("/Users/{user}")).await;
        assert_eq!(still["active"], true);
        assert_eq!(still["groups"][0]["value"], group.as_str());
    }
}

tidemark_store::test_each_backend! {
    async fn groups_are_filtered_renamed_and_deleted(backend) {
        let app = TestApp::spawn(backend).await;
        let idp = Idp::for_new_account(&app, "corp.example").await;
        let u1 = idp.provision("hal@corp.example").await;
        let (status, _) = idp.post("/Groups", &json!({"displayName": "Engineering", "members": [{"value": u1}]})).await;
        assert_eq!(status, StatusCode::CREATED);
        let (status, dup) = idp.post("/Groups", &json!({"displayName": "ENGINEERING"})).await;
        assert_eq!((status, dup["scimType"].as_str()), (StatusCode::CONFLICT, Some("uniqueness")));
        idp.post("/Groups", &json!({"displayName": "Sales"})).await;

        let filter = urlencode("displayName eq \"engineering\"");
        let (_, list) = idp.get(&format!("/Groups?filter={filter}&excludedAttributes=members")).await;
        assert_eq!(list["totalResults"], 1);
        assert!(list["Resources"][0].get("members").is_none(), "{list}");
        let id = list["Resources"][0]["id"].as_str().unwrap().to_owned();
        let (_, one) = idp.get(&format!("/Groups/{id}")).await;
        assert_eq!(one["members"][0]["value"], u1.as_str());

        // Entra without aadOptscim062020 removes members by a value list.
        let (status, after) = idp
            .patch(&format!("/Groups/{id}"), &ops(json!([
                {"op": "Remove", "path": "members", "value": [{"value": u1}]},
                {"op": "Replace", "path": "displayName", "value": "Platform"}
            ])))
            .await;
        assert_eq!(status, StatusCode::OK, "{after}");
        assert_eq!(after["displayName"], "Platform");
        assert_eq!(after["members"], json!([]));
        let (status, _) = idp.call("DELETE", &format!("/Groups/{id}"), None).await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        let (_, list) = idp.get("/Groups").await;
        assert_eq!(list["totalResults"], 1);
        // The person stays a member of the account.
        assert_eq!(role_of(&app, &idp.license.account_id, "hal@corp.example").await, Some(Role::Member));
    }
}

tidemark_store::test_each_backend! {
    async fn a_token_over_its_budget_waits_and_metrics_count_outcomes(backend) {
        let app = TestApp::spawn_with(backend, &[("TIDEMARK_SCIM_PER_MINUTE", "4")]).await;
        let idp = Idp::for_new_account(&app, "corp.example").await;
        for _ in 0..4 {
            assert_eq!(idp.get("/Users").await.0, StatusCode::OK);
        }
        let res = reqwest::Client::new()
            .get(app.url("/scim/v2/Users"))
            .bearer_auth(&idp.token)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
        assert!(res.headers().contains_key("retry-after"));
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["scimType"], "tooMany");
        let ok = app.metric("tidemark_scim_requests_total{resource=\"Users\",outcome=\"ok\"}").await;
        let limited = app.metric("tidemark_scim_requests_total{resource=\"Users\",outcome=\"limited\"}").await;
        assert_eq!((ok, limited), (Some(4.0), Some(1.0)));
    }
}

/// One step of a recorded provisioning run: what the IdP sent and what it was answered.
#[derive(serde::Deserialize)]
struct Step {
    method: String,
    path: String,
    #[serde(default)]
    body: Option<Value>,
    status: u16,
    /// Names the created resource's id, for later steps' `{name}` placeholders.
    #[serde(default)]
    save_id: Option<String>,
}

#[derive(serde::Deserialize)]
struct Recording {
    steps: Vec<Step>,
    /// E-mail address → role (or null: no membership) once the run is over.
    members: HashMap<String, Option<Role>>,
    /// Group displayName → member count once the run is over.
    groups: HashMap<String, usize>,
}

fn fill(text: &str, ids: &HashMap<String, String>) -> String {
    ids.iter().fold(text.to_owned(), |t, (name, id)| {
        t.replace(&format!("{{{name}}}"), id)
    })
}

async fn replay(app: &TestApp, idp: &Idp, file: &str) {
    let raw = std::fs::read_to_string(format!(
        "{}/tests/fixtures/scim/{file}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let recording: Recording = serde_json::from_str(&raw).unwrap();
    let mut ids = HashMap::new();
    for (n, step) in recording.steps.iter().enumerate() {
        let path = fill(&step.path, &ids);
        let body = step
            .body
            .as_ref()
            .map(|b| serde_json::from_str::<Value>(&fill(&b.to_string(), &ids)).unwrap());
        let (status, answer) = idp.call(&step.method, &path, body.as_ref()).await;
        assert_eq!(
            status.as_u16(),
            step.status,
            "{file} step {n}: {} {path}: {answer}",
            step.method
        );
        if let Some(name) = &step.save_id {
            ids.insert(name.clone(), answer["id"].as_str().unwrap().to_owned());
        }
    }
    let account = &idp.license.account_id;
    for (email, role) in &recording.members {
        assert_eq!(&role_of(app, account, email).await, role, "{file}: {email}");
    }
    let groups = tidemark_store::scim::list_groups(&app.db, account, true)
        .await
        .unwrap();
    for (name, count) in &recording.groups {
        let group = groups
            .iter()
            .find(|g| &g.record.display_name == name)
            .unwrap();
        assert_eq!(group.members.len(), *count, "{file}: {name}");
    }
}

tidemark_store::test_each_backend! {
    async fn recorded_okta_and_entra_runs_replay_cleanly(backend) {
        let app = TestApp::spawn(backend).await;
        for (file, domain) in [
            ("okta.json", "okta-corp.example"),
            ("entra.json", "entra-corp.example"),
            ("entra-aadoptscim062020.json", "entra-flag.example"),
        ] {
            let idp = Idp::for_new_account(&app, domain).await;
            replay(&app, &idp, file).await;
        }
    }
}

/// The userNames a filter finds.
async fn found(idp: &Idp, filter: &str) -> Vec<String> {
    let (status, list) = idp
        .get(&format!("/Users?filter={}", urlencode(filter)))
        .await;
    assert_eq!(status, StatusCode::OK, "{filter}: {list}");
    list["Resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["userName"].as_str().unwrap().to_owned())
        .collect()
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

tidemark_store::test_each_backend! {
    async fn settings_makes_a_token_for_admins_only_and_marks_admin_groups(backend) {
        let (app, provider) = TestApp::spawn_with_oidc(backend).await;
        let license = app.create_license(Tier::Enterprise).await;
        let account = license.account_id.clone();
        verify_domain(&app, &account, "corp.example").await;
        app.add_member(&account, "mo@partner.example", Role::Member).await;
        let path = "/settings/provisioning/change";

        // A member is refused; nothing is made.
        let mut member = app.signed_in(&provider, "mo@partner.example").await;
        let res = member.post_form(path, &[("action", "create_token")]).await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN);
        assert_eq!(app.count("scim_tokens").await, 0);

        // The admin's form is answered by a redirect a reload cannot repeat; the section it
        // names shows the token once, kept out of caches, and never again.
        let mut admin = app.signed_in(&provider, &license.email).await;
        let once = tidemark_domain::handover::new_token();
        let res = admin.post_form(path, &[("action", "create_token"), ("once", &once)]).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER);
        assert_eq!(location(&res), format!("/settings/provisioning?shown={once}"));
        // The same form sent again (a double click) makes nothing more.
        let again = admin.post_form(path, &[("action", "create_token"), ("once", &once)]).await;
        assert_eq!((again.status(), location(&again)), (StatusCode::SEE_OTHER, location(&res)));
        assert_eq!(app.count("scim_tokens").await, 1);
        assert_eq!(app.count("audit_events WHERE action = 'scim.token_created'").await, 1);
        let res = admin.get(&app.url(&location(&res))).await;
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(res.headers()["cache-control"], "no-store");
        let page = res.text().await.unwrap();
        let reloaded = admin.get(&app.url(&format!("/settings/provisioning?shown={once}"))).await.text().await.unwrap();
        assert!(!reloaded.contains("new-scim-token\"") && reloaded.contains("shown-already"), "{reloaded}");
        let start = page.find("tmk_scim_").unwrap();
        let token: String = page[start..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        let idp = Idp { client: reqwest::Client::new(), base: app.url("/scim/v2"), token, license: license.clone() };
        let dana = idp.provision("dana@partner.example").await;
        let (_, group) = idp.post("/Groups", &json!({"displayName": "Admins", "members": [{"value": dana}]})).await;
        let group_id = group["id"].as_str().unwrap();

        // Marking the group comes back to the section with a notice code, and takes effect.
        let res = admin.post_form(path, &[("action", "give_admin"), ("group_id", group_id)]).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER);
        assert_eq!(location(&res), "/settings/provisioning?done=saved");
        assert_eq!(role_of(&app, &account, "dana@partner.example").await, Some(Role::Admin));
        // The licence holder is not in the group but was an admin before any group was
        // marked, and is not provisioned: they keep their role.
        assert_eq!(role_of(&app, &account, &license.email).await, Some(Role::Admin));
        let res = admin.post_form(path, &[("action", "give_admin"), ("group_id", "scg_nope")]).await;
        assert_eq!(location(&res), "/settings/provisioning?refused=not_found");
        let res = admin.post_form(path, &[("action", "launch")]).await;
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);

        let res = admin.post_form(path, &[("action", "revoke_token")]).await;
        assert_eq!(location(&res), "/settings/provisioning?done=revoked");
        assert_eq!(idp.get("/Users").await.0, StatusCode::UNAUTHORIZED);
    }
}
