//! Signs licence verdicts and the key set with the service's Ed25519 keys.
//!
//! Which key signs is decided by time from the stored schedule (`domain::signing`), so every
//! replica reading the same rows signs with the same key at the same moment; each replica
//! reads the rows again every [`REFRESH`], far inside the overlap a rotation waits before its
//! key signs.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use base64::Engine as _;
use ring::signature::KeyPair as _;
use serde::Serialize;
use tidemark_domain::audit::{Actor, AuditContext};
use tidemark_domain::signing::{KeyStage, Schedule};
use tidemark_domain::{ids, now_millis, Millis};
use tidemark_store::signing_keys::{self, StoredKey};
use tidemark_store::{Db, Writer};
use tidemark_wire::verdict::{
    KeyIntroduction, KeySet, KeySetClaims, PublicKey, VerdictClaims, KEY_INTRO_TYP, KEY_SET_TYP,
    VERDICT_AUDIENCE,
};

use crate::crypto::{Keyring, SecretBox, SIGNING_KEY_PURPOSE};

/// How often a replica reads the keys again.
pub const REFRESH: Duration = Duration::from_secs(30);

/// A private key, opened once per load. Signing is done here rather than through
/// `jsonwebtoken::encode`, which parses the PKCS#8 document (a scalar multiplication) on
/// every call: validation signs a verdict per request.
struct OpenKey {
    kid: String,
    pair: ring::signature::Ed25519KeyPair,
}

impl OpenKey {
    fn open(secrets: &SecretBox, key: &StoredKey) -> anyhow::Result<Self> {
        let pkcs8 = secrets.open(&key.private_sealed).with_context(|| {
            format!(
                "could not open the private half of signing key {}",
                key.window.kid
            )
        })?;
        let pair = ring::signature::Ed25519KeyPair::from_pkcs8(&pkcs8)
            .map_err(|_| anyhow::anyhow!("signing key {} is not an Ed25519 key", key.window.kid))?;
        Ok(OpenKey {
            kid: key.window.kid.clone(),
            pair,
        })
    }

    /// A compact JWS (RFC 7515) of `claims`, `alg` EdDSA (RFC 8037).
    fn sign<T: Serialize>(&self, typ: &str, claims: &T) -> anyhow::Result<String> {
        #[derive(Serialize)]
        struct JwsHeader<'a> {
            alg: &'static str,
            typ: &'a str,
            kid: &'a str,
        }
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let header = serde_json::to_vec(&JwsHeader {
            alg: "EdDSA",
            typ,
            kid: &self.kid,
        })?;
        let payload = serde_json::to_vec(claims)?;
        let mut jws = b64.encode(header);
        jws.push('.');
        b64.encode_string(payload, &mut jws);
        let signature = self.pair.sign(jws.as_bytes());
        jws.push('.');
        b64.encode_string(signature.as_ref(), &mut jws);
        Ok(jws)
    }
}

struct Loaded {
    schedule: Schedule,
    open: Vec<OpenKey>,
    /// The published key set, signed, as served.
    key_set: Arc<KeySet>,
    /// The moment after which `key_set` names other keys (a key retires or starts signing).
    key_set_until: Millis,
    loaded_at: Instant,
}

pub struct Signer {
    issuer: String,
    secrets: SecretBox,
    loaded: RwLock<Option<Arc<Loaded>>>,
    reload: tokio::sync::Mutex<()>,
}

/// A new key pair: its stored form (private half sealed) and nothing else kept.
pub fn generate_key(
    secrets: &SecretBox,
    generation: i64,
    published_at: Millis,
    signs_from: Millis,
) -> anyhow::Result<StoredKey> {
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = ring::signature::Ed25519KeyPair::generate_pkcs8(&rng)
        .map_err(|_| anyhow::anyhow!("could not generate an Ed25519 key"))?;
    let pair = ring::signature::Ed25519KeyPair::from_pkcs8(pkcs8.as_ref())
        .map_err(|_| anyhow::anyhow!("could not read the generated key"))?;
    Ok(StoredKey {
        window: tidemark_domain::signing::KeyWindow {
            kid: ids::new_signing_kid(),
            generation,
            published_at,
            signs_from,
            longest_exp: 0,
        },
        public_key: base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(pair.public_key().as_ref()),
        private_sealed: secrets.seal(pkcs8.as_ref()),
    })
}

/// The key set's public form of `key`.
pub fn public_jwk(schedule: &Schedule, key: &StoredKey) -> PublicKey {
    let secs = |ms: Millis| ms.div_euclid(1000);
    PublicKey {
        kty: "OKP".into(),
        crv: "Ed25519".into(),
        x: key.public_key.clone(),
        kid: key.window.kid.clone(),
        alg: "EdDSA".into(),
        use_: "sig".into(),
        published_at: secs(key.window.published_at),
        signs_from: secs(key.window.signs_from),
        signs_until: schedule.signs_until(&key.window).map(secs),
        retires_at: schedule.retires_at(&key.window).map(secs),
    }
}

/// Creates the first key unless one exists (replicas starting together create one).
pub async fn ensure_first_key(db: &Writer, secrets: &SecretBox) -> anyhow::Result<()> {
    if !signing_keys::list_keys(db).await?.is_empty() {
        return Ok(());
    }
    let now = now_millis();
    let key = generate_key(secrets, 1, now, now)?;
    let audit = AuditContext {
        actor: Actor::System {
            name: "first-start".into(),
        },
        client_ip: None,
        at: now,
    };
    if signing_keys::add_key(db, &key, None, &audit).await? {
        tracing::info!(kid = %key.window.kid, "created the first verdict-signing key");
    }
    Ok(())
}

/// Adds a successor that signs after `overlap`, introduced by the newest key. The new key.
pub async fn rotate(
    db: &Writer,
    secrets: &SecretBox,
    issuer: &str,
    overlap: Millis,
    audit: &AuditContext,
) -> anyhow::Result<StoredKey> {
    let now = audit.at;
    let keys = signing_keys::list_keys(db).await?;
    let schedule = signing_keys::schedule(&keys);
    let predecessor = keys
        .last()
        .context("there is no key to rotate yet (start the server once)")?;
    let key = generate_key(
        secrets,
        schedule.next_generation(),
        now,
        schedule.next_signs_from(now, overlap),
    )?;
    let introduction = OpenKey::open(secrets, predecessor)?.sign(
        KEY_INTRO_TYP,
        &KeyIntroduction {
            iss: issuer.to_owned(),
            iat: now.div_euclid(1000),
            generation: key.window.generation,
            kid: key.window.kid.clone(),
            x: key.public_key.clone(),
        },
    )?;
    if !signing_keys::add_key(db, &key, Some(&introduction), audit).await? {
        anyhow::bail!("another rotation added a key at the same moment; list the keys and retry");
    }
    Ok(key)
}

impl Signer {
    pub fn new(keys: &Keyring, issuer: &str) -> Self {
        Self {
            issuer: issuer.to_owned(),
            secrets: SecretBox::new(keys, SIGNING_KEY_PURPOSE),
            loaded: RwLock::new(None),
            reload: tokio::sync::Mutex::new(()),
        }
    }

    pub fn secrets(&self) -> &SecretBox {
        &self.secrets
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    fn current(&self) -> Option<Arc<Loaded>> {
        self.loaded.read().ok().and_then(|l| l.clone())
    }

    /// The keys as this replica last read them, read again when older than [`REFRESH`] or
    /// when the schedule has moved on since.
    async fn fresh(&self, db: &Db) -> anyhow::Result<Arc<Loaded>> {
        let now = now_millis();
        let usable = |l: &Loaded| l.loaded_at.elapsed() < REFRESH && now < l.key_set_until;
        if let Some(loaded) = self.current().filter(|l| usable(l)) {
            return Ok(loaded);
        }
        let _one = self.reload.lock().await;
        if let Some(loaded) = self.current().filter(|l| usable(l)) {
            return Ok(loaded);
        }
        let loaded = Arc::new(self.load(db, now).await?);
        if let Ok(mut slot) = self.loaded.write() {
            *slot = Some(loaded.clone());
        }
        Ok(loaded)
    }

    /// Forgets what was read, so the next use reads the keys again (after a rotation).
    pub fn invalidate(&self) {
        if let Ok(mut slot) = self.loaded.write() {
            *slot = None;
        }
    }

    async fn load(&self, db: &Db, now: Millis) -> anyhow::Result<Loaded> {
        let mut stored = signing_keys::list_keys(db).await?;
        if stored.is_empty() {
            let secrets = self.secrets.clone();
            db.detached(|db| async move { Ok(ensure_first_key(&db, &secrets).await) })
                .await?
                .context("could not create the first verdict-signing key")?;
            stored = signing_keys::list_keys(db).await?;
        }
        let schedule = signing_keys::schedule(&stored);
        let public: Vec<StoredKey> = stored
            .into_iter()
            .filter(|k| schedule.stage(&k.window, now) != KeyStage::Retired)
            .collect();
        let open = public
            .iter()
            .map(|k| OpenKey::open(&self.secrets, k))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let chain = signing_keys::list_chain(db).await?;
        let jwks: Vec<PublicKey> = public.iter().map(|k| public_jwk(&schedule, k)).collect();
        let claims = KeySetClaims {
            iss: self.issuer.clone(),
            iat: now.div_euclid(1000),
            keys: jwks.clone(),
        };
        let signatures = open
            .iter()
            .map(|k| k.sign(KEY_SET_TYP, &claims))
            .collect::<anyhow::Result<Vec<_>>>()?;
        // The next moment a key changes stage: the document is rebuilt then.
        let key_set_until = schedule
            .keys()
            .iter()
            .flat_map(|k| [Some(k.signs_from), schedule.retires_at(k)])
            .flatten()
            .filter(|&t| t > now)
            .min()
            .unwrap_or(Millis::MAX);
        Ok(Loaded {
            schedule,
            open,
            key_set: Arc::new(KeySet {
                keys: jwks,
                signatures,
                chain,
            }),
            key_set_until,
            loaded_at: Instant::now(),
        })
    }

    /// The published key set.
    pub async fn key_set(&self, db: &Db) -> anyhow::Result<Arc<KeySet>> {
        Ok(self.fresh(db).await?.key_set.clone())
    }

    /// `claims` signed by the key whose turn it is, with JWS `typ`. The key's id too.
    pub async fn sign<T: Serialize>(
        &self,
        db: &Db,
        typ: &str,
        claims: &T,
    ) -> anyhow::Result<(String, String)> {
        let loaded = self.fresh(db).await?;
        let now = now_millis();
        let kid = loaded
            .schedule
            .signer(now)
            .map(|k| k.kid.clone())
            .context("no signing key is due to sign (the keys table is empty?)")?;
        let key = loaded
            .open
            .iter()
            .find(|k| k.kid == kid)
            .context("the signing key's private half was not loaded")?;
        Ok((key.sign(typ, claims)?, kid))
    }
}

/// The payload of a verdict on what `answer` says, issued at `now` and trusted until `exp`.
pub fn verdict_claims(
    issuer: &str,
    lookup_hash: &str,
    status: &str,
    answer: &tidemark_wire::ValidateResponse,
    machine: Option<tidemark_domain::signing::MachineFingerprint>,
    now: Millis,
    exp: Millis,
) -> VerdictClaims {
    VerdictClaims {
        iss: issuer.to_owned(),
        aud: VERDICT_AUDIENCE.to_owned(),
        // The lookup hash: names the licence, and is no credential for it.
        sub: format!("sha256:{lookup_hash}"),
        iat: now.div_euclid(1000),
        exp: exp.div_euclid(1000),
        jti: ids::new_verdict_id(),
        valid: answer.valid,
        status: status.to_owned(),
        tier: answer.tier,
        features: answer.features.clone(),
        expiry: answer.expiry.clone(),
        bundle_url: answer.bundle_url.clone(),
        bundle_sha256: answer.bundle_checksum.clone(),
        machine: machine.map(|m| m.as_str().to_owned()),
    }
}
