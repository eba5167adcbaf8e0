//! A job token's signature: the header read before anything is trusted (only RS256 and
//! ES256, a `kid` required), the issuer read from the unverified payload only to pick whose
//! keys to check it with, then the signature checked with that key. The claims are the
//! domain's to judge once the signature holds.

use base64::Engine as _;
use jsonwebtoken::{Algorithm, Validation};
use serde_json::{Map, Value};
use tidemark_domain::ci_identity::{Claims, Issuer, Refusal, ALGORITHMS};

use super::jwks::{KeyError, KeySets};

/// The longest job token read (GitHub's are about 1.5 KB, GitLab's about 1 KB).
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// What a token says of itself before its signature is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unverified {
    pub alg: Algorithm,
    pub kid: String,
    /// `iss`, exactly as written.
    pub issuer: String,
}

/// Why a token could not be verified.
#[derive(Debug)]
pub enum VerifyError {
    Refused(Refusal),
    /// The issuer's keys could not be had: not the token's fault.
    IssuerUnreachable(String),
    /// The token's key was not in the set fetched less than a minute ago; the set can be
    /// fetched again after this many seconds.
    KeyNotYetFetched {
        kid: String,
        retry_after_secs: u64,
    },
}

fn refusal(claim: &'static str, expected: &str, found: impl Into<String>) -> Refusal {
    Refusal {
        claim,
        expected: expected.to_owned(),
        found: found.into(),
    }
}

/// Reads the header and the issuer; refuses anything but a compact JWS signed with RS256 or
/// ES256 and naming its key.
pub fn peek(raw: &str) -> Result<Unverified, Refusal> {
    let format = || {
        refusal(
            "token",
            "a signed JWT (three base64url parts separated by dots)",
            "something else",
        )
    };
    if raw.len() > MAX_TOKEN_BYTES {
        return Err(refusal(
            "token",
            "at most 16 KiB",
            format!("{} bytes", raw.len()),
        ));
    }
    let mut parts = raw.split('.');
    let (Some(header), Some(payload), Some(_sig), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(format());
    };
    let decode = |part: &str| -> Option<Map<String, Value>> {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(part.trim_end_matches('='))
            .ok()?;
        serde_json::from_slice(&bytes).ok()
    };
    let header = decode(header).ok_or_else(format)?;
    let payload = decode(payload).ok_or_else(format)?;
    let alg_text = header
        .get("alg")
        .and_then(Value::as_str)
        .unwrap_or("nothing");
    let alg = match alg_text {
        "RS256" => Algorithm::RS256,
        "ES256" => Algorithm::ES256,
        other => {
            return Err(refusal(
                "alg",
                &ALGORITHMS.join(" or "),
                format!("{:?}", truncate(other)),
            ))
        }
    };
    let kid = header
        .get("kid")
        .and_then(Value::as_str)
        .filter(|k| !k.is_empty() && k.len() <= 256)
        .ok_or_else(|| refusal("kid", "the id of the issuer's signing key", "nothing"))?;
    let issuer = payload
        .get("iss")
        .and_then(Value::as_str)
        .ok_or_else(|| refusal("iss", "the issuer's URL", "nothing"))?;
    Ok(Unverified {
        alg,
        kid: kid.to_owned(),
        issuer: issuer.to_owned(),
    })
}

/// Checks the signature with the issuer's key and returns the claims (none of them judged).
pub async fn verify(
    keys: &KeySets,
    raw: &str,
    head: &Unverified,
    issuer: &Issuer,
) -> Result<Claims, VerifyError> {
    let key = keys
        .key(issuer, &head.kid, head.alg)
        .await
        .map_err(|err| match err {
            KeyError::UnknownKid(kid) => VerifyError::Refused(refusal(
                "kid",
                &format!("a key {} publishes", issuer.as_str()),
                format!("{:?}", truncate(&kid)),
            )),
            KeyError::Unreachable(why) => VerifyError::IssuerUnreachable(why),
            KeyError::NotYetRefetched { kid, retry_in } => VerifyError::KeyNotYetFetched {
                kid: truncate(&kid),
                // Whole seconds, rounded up: a retry then is past the minute.
                retry_after_secs: retry_in.as_secs() + 1,
            },
        })?;
    let mut validation = Validation::new(head.alg);
    // Every claim is judged by the domain rules, which name the claim that fails.
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    validation.required_spec_claims.clear();
    let data = jsonwebtoken::decode::<Map<String, Value>>(raw, &key, &validation).map_err(|e| {
        VerifyError::Refused(refusal(
            "signature",
            &format!("a valid {:?} signature by key {:?}", head.alg, head.kid),
            format!("a signature that does not verify ({e})"),
        ))
    })?;
    Ok(Claims::new(data.claims))
}

fn truncate(s: &str) -> String {
    s.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn b64(v: &str) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v)
    }

    #[test]
    fn only_rs256_and_es256_with_a_kid_get_past_the_header() {
        let payload = b64(r#"{"iss":"https://token.actions.githubusercontent.com"}"#);
        let token = |header: &str| format!("{}.{payload}.c2ln", b64(header));
        let ok = peek(&token(r#"{"alg":"RS256","kid":"k1"}"#)).unwrap();
        assert_eq!(ok.alg, Algorithm::RS256);
        assert_eq!(ok.issuer, "https://token.actions.githubusercontent.com");
        for (header, claim) in [
            (r#"{"alg":"none"}"#, "alg"),
            (r#"{"alg":"HS256","kid":"k1"}"#, "alg"),
            (r#"{"alg":"RS512","kid":"k1"}"#, "alg"),
            (r#"{"alg":"ES256"}"#, "kid"),
        ] {
            assert_eq!(peek(&token(header)).unwrap_err().claim, claim, "{header}");
        }
        for bad in [
            "",
            "a.b",
            "a.b.c.d",
            "!!.??.c",
            &"a".repeat(MAX_TOKEN_BYTES + 1),
        ] {
            assert_eq!(peek(bad).unwrap_err().claim, "token");
        }
    }
}
