//! SAML 2.0 Web Browser SSO, SP-initiated: an HTTP-Redirect `AuthnRequest` out, the signed
//! response back by HTTP-POST at `/saml/acs`. `samael` (with xmlsec) verifies signatures and
//! the standard conditions; this module adds what it leaves to the application:
//!
//! - a signature is required always: IdP metadata without a signing certificate is refused
//!   when configured and again at use, so samael can never take its "no certificate, no
//!   check" path; only the configured certificates are trusted (never one in the message);
//! - SHA-1 (and any algorithm not listed) is refused;
//! - `InResponseTo` must name the request of *this* browser's sign-in attempt, which is
//!   consumed on use (no unsolicited responses, no second use);
//! - each assertion id is accepted once (a replay cache in the database, for all replicas);
//! - the SP entity id and ACS URL are explicit, so audience, recipient and destination are
//!   checked against them;
//! - documents with a DOCTYPE (entity expansion), or whose XML declaration names an encoding
//!   other than UTF-8 (the bytes were decoded as UTF-8; a parser told otherwise would read
//!   different text than the signature covers), are refused before any XML parsing;
//! - the address asserted must belong to the domain the IdP is configured for;
//! - only a *verified* connection (the account proved it owns the domain) is used, and it
//!   signs people in to its own account only; its identities are its own namespace.

use std::str::FromStr as _;
use tidemark_domain::time::{DAY_MS, HOUR_MS, MINUTE_MS};
use tidemark_services::ports::IdpMetadata;

use axum::extract::{ConnectInfo, Form, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use base64::Engine as _;
use samael::crypto::AllowedSignatureAlgorithm;
use samael::metadata::EntityDescriptor;
use samael::schema::Assertion;
use samael::service_provider::{ServiceProvider, ServiceProviderBuilder};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use tidemark_domain::saml as saml_input;
use tidemark_domain::saml::{assertion_count, declares_utf8, has_doctype};
use tidemark_domain::sso::{ClaimState, NAMEID_TRANSIENT};
use tidemark_domain::text::Email;
use tidemark_domain::{ids, now_millis};
use tidemark_store::access::{self, IdentityOutcome, IdentityProvider, Subject};
use tidemark_store::sessions;
use tidemark_store::sso::SsoConnection;
use tower_sessions::cookie::SameSite;
use tower_sessions::Session;

use super::{attempt, complete_sign_in, sign_in_failed, Landing};
use app::auth::SignInRefusal;

use crate::state::AppState;

const HTTP_REDIRECT: &str = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect";
/// The largest SAMLResponse form accepted at the ACS.
pub const MAX_ACS_BODY: usize = 256 * 1024;

/// The SAML code the use cases read IdP metadata with.
pub struct SamlMetadata;

impl tidemark_services::ports::IdpMetadataReader for SamlMetadata {
    fn read(&self, xml: &str) -> Result<IdpMetadata, String> {
        parse_idp_metadata(xml)
    }
}

/// Checks IdP metadata: parseable, an entity id, an HTTP-Redirect SSO endpoint, and at least
/// one signing certificate.
pub fn parse_idp_metadata(xml: &str) -> Result<IdpMetadata, String> {
    if has_doctype(xml) {
        return Err("metadata with a DOCTYPE or entity declarations is refused".into());
    }
    if !declares_utf8(xml) {
        return Err("metadata must be UTF-8 (its XML declaration names another encoding)".into());
    }
    let descriptor =
        EntityDescriptor::from_str(xml).map_err(|e| format!("not SAML 2.0 IdP metadata: {e}"))?;
    let entity_id = descriptor
        .entity_id
        .clone()
        .filter(|id| !id.is_empty())
        .ok_or("the metadata has no entityID")?;
    let sso_url = descriptor
        .idp_sso_descriptors
        .iter()
        .flatten()
        .flat_map(|d| &d.single_sign_on_services)
        .find(|s| s.binding == HTTP_REDIRECT)
        .map(|s| s.location.clone())
        .ok_or("the metadata has no SingleSignOnService with the HTTP-Redirect binding")?;
    let probe = ServiceProviderBuilder::default()
        .idp_metadata(descriptor)
        .build()
        .map_err(|e| e.to_string())?;
    let certs = probe
        .idp_signing_certs()
        .map_err(|e| format!("a signing certificate could not be read: {e}"))?
        .ok_or("the metadata has no signing certificate; responses could not be verified")?;
    Ok(IdpMetadata {
        entity_id,
        sso_url,
        signing_certs: certs
            .iter()
            .map(|c| base64::engine::general_purpose::STANDARD.encode(c.der_data()))
            .collect(),
    })
}

pub fn sp_entity_id(base_url: &str) -> String {
    format!("{base_url}/saml/metadata")
}

pub fn acs_url(base_url: &str) -> String {
    format!("{base_url}/saml/acs")
}

fn service_provider(
    base_url: &str,
    idp: Option<EntityDescriptor>,
) -> Result<ServiceProvider, String> {
    let mut builder = ServiceProviderBuilder::default();
    builder
        .entity_id(Some(sp_entity_id(base_url)))
        .metadata_url(Some(sp_entity_id(base_url)))
        .acs_url(Some(acs_url(base_url)))
        .slo_url(None)
        .allow_idp_initiated(false)
        .max_clock_skew(chrono::Duration::seconds(60))
        .allowed_signature_algorithms(Some(vec![
            AllowedSignatureAlgorithm::RsaSha256,
            AllowedSignatureAlgorithm::RsaSha384,
            AllowedSignatureAlgorithm::RsaSha512,
            AllowedSignatureAlgorithm::EcdsaSha256,
            AllowedSignatureAlgorithm::EcdsaSha384,
            AllowedSignatureAlgorithm::EcdsaSha512,
        ]));
    if let Some(idp) = idp {
        builder.idp_metadata(idp);
    }
    builder.build().map_err(|e| e.to_string())
}

/// `GET /saml/metadata`: this service provider, for IdP administrators. Written out rather
/// than generated: samael's generator insists on a single-logout endpoint we do not offer.
pub async fn metadata(State(state): State<AppState>) -> Response {
    let entity_id =
        html_escape::encode_double_quoted_attribute(&sp_entity_id(&state.config.http.base_url))
            .into_owned();
    let acs = html_escape::encode_double_quoted_attribute(&acs_url(&state.config.http.base_url))
        .into_owned();
    let xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <md:EntityDescriptor xmlns:md=\"urn:oasis:names:tc:SAML:2.0:metadata\" \
         entityID=\"{entity_id}\">\n  \
         <md:SPSSODescriptor AuthnRequestsSigned=\"false\" WantAssertionsSigned=\"true\" \
         protocolSupportEnumeration=\"urn:oasis:names:tc:SAML:2.0:protocol\">\n    \
         <md:NameIDFormat>urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress</md:NameIDFormat>\n    \
         <md:AssertionConsumerService Binding=\"urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST\" \
         Location=\"{acs}\" index=\"0\" isDefault=\"true\"/>\n  \
         </md:SPSSODescriptor>\n</md:EntityDescriptor>\n"
    );
    (
        [(header::CONTENT_TYPE, "application/samlmetadata+xml")],
        xml,
    )
        .into_response()
}

#[derive(Serialize, Deserialize)]
struct SamlAttempt {
    request_id: String,
    /// The connection the request went out for: only its IdP may answer.
    connection_id: String,
    domain: String,
    next: String,
}

/// Sends the browser to its company's IdP with a fresh AuthnRequest.
pub async fn start(
    state: &AppState,
    sso: &SsoConnection,
    next: &str,
) -> Result<Response, SignInRefusal> {
    let idp =
        EntityDescriptor::from_str(&sso.metadata_xml).map_err(|_| SignInRefusal::SamlInvalid)?;
    let sp = service_provider(&state.config.http.base_url, Some(idp))
        .map_err(|_| SignInRefusal::SamlInvalid)?;
    let mut request = sp
        .make_authentication_request(&sso.idp_sso_url)
        .map_err(|_| SignInRefusal::SamlInvalid)?;
    // samael's ids carry 32 random bits; ours carry 256 (and must not start with a digit).
    request.id = format!(
        "_{}",
        hex::encode(Sha256::digest(ids::new_opaque_token().as_bytes()))
    );
    let url = request
        .redirect("")
        .ok()
        .flatten()
        .ok_or(SignInRefusal::SamlInvalid)?;
    let record = SamlAttempt {
        request_id: request.id.clone(),
        connection_id: sso.id.clone(),
        domain: sso.domain.clone(),
        next: next.to_owned(),
    };
    // The IdP answers with a cross-site POST: only a `SameSite=None` cookie comes with it.
    let cookie = attempt::begin(state, "saml", &record, SameSite::None)
        .await
        .map_err(|err| {
            tracing::error!(%err, "could not record a sign-in attempt");
            SignInRefusal::Unavailable
        })?;
    Ok((cookie, Redirect::to(url.as_str())).into_response())
}

#[derive(Deserialize)]
pub struct AcsForm {
    #[serde(rename = "SAMLResponse", default)]
    saml_response: String,
}

/// `POST /saml/acs`.
pub async fn acs(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<std::net::SocketAddr>,
    session: Session,
    headers: HeaderMap,
    Form(form): Form<AcsForm>,
) -> Response {
    if let Err(refused) = super::flood::admit(&state, peer.ip(), &headers).await {
        return refused;
    }
    let xml = match saml_input::decode_post_binding(&form.saml_response) {
        Ok(xml) => xml,
        Err(refusal) => {
            tracing::warn!(%refusal, "SAML response refused before parsing");
            return (StatusCode::BAD_REQUEST, refusal.to_string()).into_response();
        }
    };
    let wrapped = assertion_count(&xml) != 1;
    let attempt: SamlAttempt = match attempt::take(&state, &headers, "saml").await {
        Ok(attempt) => attempt,
        Err(code) => {
            tracing::warn!("SAML response without a sign-in attempt of this browser refused");
            return attempt::refused(sign_in_failed(code, "/"));
        }
    };
    let next = attempt.next.clone();
    if wrapped {
        tracing::warn!("SAML response without exactly one assertion refused");
        return attempt::refused(sign_in_failed(SignInRefusal::SamlInvalid, &next));
    }
    match verify(&state, &attempt, &xml).await {
        Ok((user_id, account_id)) => {
            complete_sign_in(
                &state,
                &session,
                &user_id,
                "saml",
                &next,
                Landing::Only(&account_id),
                attempt::clear_cookie(),
            )
            .await
        }
        Err(code) => attempt::refused(sign_in_failed(code, &next)),
    }
}

/// Verifies the response for this attempt; returns the user and the connection's account.
async fn verify(
    state: &AppState,
    attempt: &SamlAttempt,
    xml: &str,
) -> Result<(String, tidemark_wire::ids::AccountId), SignInRefusal> {
    // The connection must still be the domain's verified one: one removed, replaced or
    // ended while the person was at the IdP signs nobody in.
    let sso = tidemark_store::sso::find_connection(&state.db, &attempt.connection_id)
        .await
        .map_err(|_| SignInRefusal::Unavailable)?
        .filter(|c| c.state == ClaimState::Verified && c.domain == attempt.domain)
        .ok_or(SignInRefusal::SamlInvalid)?;
    let idp =
        EntityDescriptor::from_str(&sso.metadata_xml).map_err(|_| SignInRefusal::SamlInvalid)?;
    let sp = service_provider(&state.config.http.base_url, Some(idp))
        .map_err(|_| SignInRefusal::SamlInvalid)?;
    // Never let samael take its unsigned path.
    if !matches!(sp.idp_signing_certs(), Ok(Some(ref certs)) if !certs.is_empty()) {
        return Err(SignInRefusal::SamlInvalid);
    }
    let assertion = sp
        .parse_xml_response(xml, Some(&[attempt.request_id.as_str()]))
        .map_err(|err| {
            tracing::warn!(err = %err, domain = %attempt.domain, "SAML response refused");
            SignInRefusal::SamlInvalid
        })?;
    if assertion.issuer.value.as_deref() != Some(sso.idp_entity_id.as_str()) {
        return Err(SignInRefusal::SamlInvalid);
    }
    // When only the assertion is signed, samael checks only the assertion. The envelope
    // around it still has to agree: success status, our ACS, our request, this IdP.
    envelope_agrees(
        xml,
        &state.config.http.base_url,
        &attempt.request_id,
        &sso.idp_entity_id,
    )
    .map_err(|why| {
        tracing::warn!(why, domain = %attempt.domain, "SAML response envelope refused");
        SignInRefusal::SamlInvalid
    })?;
    // Each assertion is accepted once, until it would have expired anyway.
    let now = now_millis();
    let until = assertion
        .conditions
        .as_ref()
        .and_then(|c| c.not_on_or_after)
        .map(|t| t.timestamp_millis())
        .unwrap_or(now + HOUR_MS)
        .clamp(now + MINUTE_MS, now + DAY_MS);
    let id_hash = hex::encode(Sha256::digest(format!(
        "{}\n{}",
        sso.idp_entity_id, assertion.id
    )));
    let fresh = state
        .db
        .detached(|db| async move { sessions::remember_assertion(&db, &id_hash, until).await })
        .await
        .map_err(|_| SignInRefusal::Unavailable)?;
    if !fresh {
        tracing::warn!(domain = %attempt.domain, "replayed SAML assertion refused");
        return Err(SignInRefusal::SamlInvalid);
    }

    let (subject, email) = subject_and_email(&assertion).ok_or(SignInRefusal::SamlInvalid)?;
    if email.domain() != sso.domain {
        tracing::warn!(domain = %sso.domain, "IdP asserted an address outside its domain");
        return Err(SignInRefusal::SamlInvalid);
    }
    // The IdP is authoritative for its own (verified) domain: its address counts as verified.
    // Identities live in the connection's namespace, never in an OpenID issuer's. Run to
    // completion even if the browser goes away: a write must not stop half-way.
    let connection_id = sso.id.clone();
    let outcome = state
        .db
        .detached(|db| async move {
            let subject = match &subject {
                NameId::Transient => Subject::Transient,
                NameId::Stable(id) => Subject::Stable(id),
            };
            let provider = IdentityProvider::Saml {
                connection_id: &connection_id,
            };
            access::resolve_identity(&db, provider, subject, Some(&email), now).await
        })
        .await
        .map_err(|_| SignInRefusal::Unavailable)?;
    match outcome {
        IdentityOutcome::User(user_id) => Ok((user_id, sso.account_id)),
        IdentityOutcome::UnknownEmail => Err(SignInRefusal::NoAccess),
        IdentityOutcome::BoundElsewhere => Err(SignInRefusal::BoundElsewhere),
        IdentityOutcome::EmailUnverified => Err(SignInRefusal::EmailUnverified),
    }
}

/// Checks the (possibly unsigned) `Response` element around a verified assertion.
fn envelope_agrees(
    xml: &str,
    base_url: &str,
    request_id: &str,
    idp_entity_id: &str,
) -> Result<(), &'static str> {
    let response: samael::schema::Response = xml.parse().map_err(|_| "not a SAML Response")?;
    let status = response
        .status
        .as_ref()
        .and_then(|s| s.status_code.value.as_deref())
        .ok_or("no status")?;
    if status != "urn:oasis:names:tc:SAML:2.0:status:Success" {
        return Err("status is not Success");
    }
    if response
        .destination
        .as_deref()
        .is_some_and(|d| d != acs_url(base_url))
    {
        return Err("destination is not our ACS");
    }
    if response.in_response_to.as_deref() != Some(request_id) {
        return Err("InResponseTo is not this browser's request");
    }
    if response
        .issuer
        .as_ref()
        .and_then(|i| i.value.as_deref())
        .is_some_and(|issuer| issuer != idp_entity_id)
    {
        return Err("issuer is not the configured IdP");
    }
    Ok(())
}

/// How the IdP named the person.
#[derive(Debug, Clone, PartialEq, Eq)]
enum NameId {
    /// Persistent, e-mail or unspecified: the same person gets the same value every time.
    Stable(String),
    /// New at every sign-in: nothing to bind to.
    Transient,
}

/// The NameID, and the e-mail address from the NameID or a mail attribute.
fn subject_and_email(assertion: &Assertion) -> Option<(NameId, Email)> {
    let name_id = assertion.subject.as_ref()?.name_id.as_ref()?;
    let value = name_id.value.trim().to_owned();
    if value.is_empty() {
        return None;
    }
    let from_attributes = || {
        assertion
            .attribute_statements
            .iter()
            .flatten()
            .flat_map(|s| &s.attributes)
            .find_map(|a| {
                let name = a.name.as_deref().unwrap_or("").to_ascii_lowercase();
                let is_mail = name == "email"
                    || name == "mail"
                    || name.ends_with("/emailaddress")
                    || name == "urn:oid:0.9.2342.19200300.100.1.3";
                if is_mail {
                    a.values
                        .iter()
                        .find_map(|v| v.value.as_deref().and_then(|v| Email::parse(v).ok()))
                } else {
                    None
                }
            })
    };
    let email = Email::parse(&value).ok().or_else(from_attributes)?;
    let transient = name_id.format.as_deref().map(str::trim) == Some(NAMEID_TRANSIENT);
    let name_id = if transient {
        NameId::Transient
    } else {
        NameId::Stable(value)
    };
    Some((name_id, email))
}
