//! Which signing keys this machine trusts, and verdicts checked against them.
//!
//! Trust starts from the keys pinned at `tidemark activate` (fetched over TLS), or from the
//! anchor compiled into this binary (`TIDEMARK_TRUST_ANCHOR` at build time) when there is
//! one. After that a key is trusted only when a key already trusted vouches for it: in the
//! key set's chain of introductions, or in a key-set signature. Nothing read from a file the
//! user can write adds a key by itself: a key list without a trusted signature teaches
//! nothing.

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::{Deserialize, Serialize};
use tidemark_wire::verdict::{
    KeyIntroduction, KeySet, KeySetClaims, PublicKey, VerdictClaims, KEY_INTRO_TYP, KEY_SET_TYP,
    VERDICT_AUDIENCE,
};

/// Clock skew allowed between this machine and the service.
pub const LEEWAY_SECS: i64 = 300;

/// Keys compiled in by the vendor's build (`kid=x,kid=x`), if any.
pub const ANCHOR: Option<&str> = option_env!("TIDEMARK_TRUST_ANCHOR");

/// A key this machine trusts, with the window its signer published for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustedKey {
    pub kid: String,
    pub x: String,
    /// Unix seconds; a window learned only from a signed key list.
    pub signs_from: Option<i64>,
    pub signs_until: Option<i64>,
    pub retires_at: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TrustedKeys {
    pub keys: Vec<TrustedKey>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerdictError {
    #[error("the verdict is not a signed verdict ({0})")]
    Malformed(String),
    #[error(
        "the verdict is signed by key {0}, which this machine does not trust (a key set signed \
         by a trusted key never named it)"
    )]
    UnknownKey(String),
    #[error("the verdict's signature does not verify: it was changed after it was signed")]
    BadSignature,
    #[error(
        "the verdict was signed by key {kid} at {iat}, outside the time that key signs \
         (a retired or not yet active key)"
    )]
    OutsideWindow { kid: String, iat: i64 },
    #[error("the key set is not signed by any key this machine trusts{0}")]
    UntrustedKeySet(String),
    #[error("key {0} appears with another public key than the one trusted")]
    KeyChanged(String),
}

/// The `kid` in a JWS's header, if it has one (for display).
pub fn jws_kid(jws: &str) -> Option<String> {
    jws_header(jws).ok().and_then(|h| h.kid)
}

fn jws_header(jws: &str) -> Result<jsonwebtoken::Header, VerdictError> {
    jsonwebtoken::decode_header(jws).map_err(|e| VerdictError::Malformed(e.to_string()))
}

/// Verifies `jws` (EdDSA, `typ`) with `x`, returning its payload; no claim checked here.
fn verify_with<T: serde::de::DeserializeOwned>(
    jws: &str,
    typ: &str,
    x: &str,
) -> Result<T, VerdictError> {
    let header = jws_header(jws)?;
    if header.alg != Algorithm::EdDSA {
        return Err(VerdictError::Malformed(format!(
            "alg {:?}, not EdDSA",
            header.alg
        )));
    }
    if header.typ.as_deref() != Some(typ) {
        return Err(VerdictError::Malformed(format!(
            "typ {:?}, not {typ}",
            header.typ
        )));
    }
    let key = DecodingKey::from_ed_components(x)
        .map_err(|e| VerdictError::Malformed(format!("a trusted key is damaged: {e}")))?;
    let mut validation = Validation::new(Algorithm::EdDSA);
    // Times are judged by the licence rules, with the clock guard, not here.
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    validation.validate_aud = false;
    jsonwebtoken::decode::<T>(jws, &key, &validation)
        .map(|data| data.claims)
        .map_err(|e| match e.kind() {
            jsonwebtoken::errors::ErrorKind::InvalidSignature => VerdictError::BadSignature,
            _ => VerdictError::Malformed(e.to_string()),
        })
}

impl TrustedKeys {
    /// The compiled-in anchor, if this build has one.
    pub fn anchor() -> Option<TrustedKeys> {
        let text = ANCHOR?.trim();
        let keys: Vec<TrustedKey> = text
            .split(',')
            .filter_map(|pair| pair.split_once('='))
            .map(|(kid, x)| TrustedKey {
                kid: kid.trim().to_owned(),
                x: x.trim().to_owned(),
                signs_from: None,
                signs_until: None,
                retires_at: None,
            })
            .collect();
        (!keys.is_empty()).then_some(TrustedKeys { keys })
    }

    /// Trust pinned from `set` as fetched over TLS at activation: with an anchor compiled
    /// in, only what chains to it; without one, the set's keys, provided they sign it.
    pub fn pin(set: &KeySet) -> Result<TrustedKeys, VerdictError> {
        let mut trusted = match Self::anchor() {
            Some(anchor) => anchor,
            None => TrustedKeys {
                keys: set
                    .keys
                    .iter()
                    .map(|k| TrustedKey {
                        kid: k.kid.clone(),
                        x: k.x.clone(),
                        signs_from: None,
                        signs_until: None,
                        retires_at: None,
                    })
                    .collect(),
            },
        };
        trusted.learn(set)?;
        Ok(trusted)
    }

    pub fn get(&self, kid: &str) -> Option<&TrustedKey> {
        self.keys.iter().find(|k| k.kid == kid)
    }

    /// Learns from `set` what trusted keys vouch for: keys introduced along the chain, then
    /// every key (and window) in a key list signed by a trusted key. The kids newly trusted.
    /// Refused when no signature of the set verifies with a trusted key.
    pub fn learn(&mut self, set: &KeySet) -> Result<Vec<String>, VerdictError> {
        let mut added = Vec::new();
        for statement in &set.chain {
            let Ok(header) = jws_header(statement) else {
                continue;
            };
            let Some(introducer) = header.kid.as_deref().and_then(|k| self.get(k)) else {
                continue;
            };
            let Ok(intro) = verify_with::<KeyIntroduction>(statement, KEY_INTRO_TYP, &introducer.x)
            else {
                continue;
            };
            match self.get(&intro.kid) {
                Some(known) if known.x != intro.x => {
                    return Err(VerdictError::KeyChanged(intro.kid));
                }
                Some(_) => {}
                None => {
                    added.push(intro.kid.clone());
                    self.keys.push(TrustedKey {
                        kid: intro.kid,
                        x: intro.x,
                        signs_from: None,
                        signs_until: None,
                        retires_at: None,
                    });
                }
            }
        }
        let mut vouched: Option<Vec<PublicKey>> = None;
        for signature in &set.signatures {
            let Ok(header) = jws_header(signature) else {
                continue;
            };
            let Some(signer) = header.kid.as_deref().and_then(|k| self.get(k)) else {
                continue;
            };
            if let Ok(claims) = verify_with::<KeySetClaims>(signature, KEY_SET_TYP, &signer.x) {
                vouched = Some(claims.keys);
                break;
            }
        }
        let Some(keys) = vouched else {
            let known: Vec<&str> = self.keys.iter().map(|k| k.kid.as_str()).collect();
            return Err(VerdictError::UntrustedKeySet(format!(
                " (trusted: {})",
                known.join(", ")
            )));
        };
        for key in keys {
            if key.kty != "OKP" || key.crv != "Ed25519" {
                continue;
            }
            let window = TrustedKey {
                kid: key.kid.clone(),
                x: key.x.clone(),
                signs_from: Some(key.signs_from),
                signs_until: key.signs_until,
                retires_at: key.retires_at,
            };
            match self.keys.iter_mut().find(|k| k.kid == key.kid) {
                Some(known) if known.x != key.x => return Err(VerdictError::KeyChanged(key.kid)),
                Some(known) => *known = window,
                None => {
                    added.push(key.kid.clone());
                    self.keys.push(window);
                }
            }
        }
        Ok(added)
    }

    /// The payload of `jws` (of kind `typ`, any signed document: a verdict, a report) if a
    /// trusted key signed it, with the key; the caller checks the time against its window.
    pub fn verify_signed<T: serde::de::DeserializeOwned>(
        &self,
        jws: &str,
        typ: &str,
    ) -> Result<(T, &TrustedKey), VerdictError> {
        let header = jws_header(jws)?;
        let kid = header
            .kid
            .ok_or_else(|| VerdictError::Malformed("no kid".into()))?;
        let key = self.get(&kid).ok_or(VerdictError::UnknownKey(kid))?;
        Ok((verify_with(jws, typ, &key.x)?, key))
    }

    /// The payload of `jws` (a verdict of kind `typ`) if a trusted key signed it within the
    /// time that key signs.
    pub fn verify(&self, jws: &str, typ: &str) -> Result<VerdictClaims, VerdictError> {
        let header = jws_header(jws)?;
        let kid = header
            .kid
            .ok_or_else(|| VerdictError::Malformed("no kid".into()))?;
        let key = self
            .get(&kid)
            .ok_or_else(|| VerdictError::UnknownKey(kid.clone()))?;
        let claims: VerdictClaims = verify_with(jws, typ, &key.x)?;
        if claims.aud != VERDICT_AUDIENCE {
            return Err(VerdictError::Malformed(format!(
                "aud {:?}, not {VERDICT_AUDIENCE}",
                claims.aud
            )));
        }
        let before = key
            .signs_from
            .is_some_and(|from| claims.iat < from - LEEWAY_SECS);
        let after = key
            .signs_until
            .is_some_and(|until| claims.iat > until + LEEWAY_SECS);
        if before || after {
            return Err(VerdictError::OutsideWindow {
                kid,
                iat: claims.iat,
            });
        }
        Ok(claims)
    }
}

/// What a verdict must say about this machine and licence.
#[derive(Debug, Clone)]
pub struct Expect<'a> {
    /// `sha256:` + hex SHA-256 of the licence key hash this machine holds.
    pub sub: String,
    pub machine: &'a str,
}

impl Expect<'_> {
    pub fn for_license<'a>(license_key_hash: &str, machine: &'a str) -> Expect<'a> {
        use sha2::Digest as _;
        Expect {
            sub: format!(
                "sha256:{}",
                hex::encode(sha2::Sha256::digest(license_key_hash.as_bytes()))
            ),
            machine,
        }
    }

    /// Whether the verdict is about this licence and this machine.
    pub fn check(&self, claims: &VerdictClaims) -> Result<(), String> {
        if claims.sub != self.sub {
            return Err(
                "the licence verdict on this machine is for another licence (a copied file?)"
                    .into(),
            );
        }
        if let Some(bound) = &claims.machine {
            if bound != self.machine {
                return Err(format!(
                    "the licence verdict on this machine was issued to another machine \
                     ({bound}, this one is {})",
                    self.machine
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expectations_name_the_license_by_the_hash_of_its_hash() {
        let e = Expect::for_license("abc", "m1");
        assert_eq!(
            e.sub,
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn nothing_is_learned_from_an_unsigned_key_list() {
        let mut trusted = TrustedKeys {
            keys: vec![TrustedKey {
                kid: "k1".into(),
                x: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo".into(),
                signs_from: None,
                signs_until: None,
                retires_at: None,
            }],
        };
        let planted = PublicKey {
            kty: "OKP".into(),
            crv: "Ed25519".into(),
            x: "planted".into(),
            kid: "k2".into(),
            alg: "EdDSA".into(),
            use_: "sig".into(),
            published_at: 0,
            signs_from: 0,
            signs_until: None,
            retires_at: None,
        };
        let set = KeySet {
            keys: vec![planted],
            signatures: vec![],
            chain: vec![],
        };
        assert!(matches!(
            trusted.learn(&set),
            Err(VerdictError::UntrustedKeySet(_))
        ));
        assert_eq!(trusted.keys.len(), 1);
    }
}
