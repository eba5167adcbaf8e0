//! Validation and activation: what a scanner asks with its licence's hash, answered with the
//! licence's state and a verdict signed for the offline grace. `/v1` parses the headers and
//! writes the bytes; the rest is here, once.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tidemark_domain::secrets::LicenseKeyHash;
use tidemark_domain::signing::{MachineFingerprint, VERDICT_LIFETIME};
use tidemark_domain::text::MachineName;
use tidemark_domain::{now_millis, Millis};
use tidemark_store::bundles::latest_bundle;
use tidemark_store::licenses::License;
use tidemark_store::Db;
use tidemark_wire::verdict::VERDICT_TYP;
use tidemark_wire::{ActivateResponse, ValidateResponse};

use super::answer_cache::{AnswerKey, ValidationCache};
use super::license_answer;
use crate::crypto::signing::{verdict_claims, Signer};
use crate::ServiceError;

/// What validation needs for a process: the answer cache, the verdict signer and the
/// address bundle links start with.
pub struct Validator {
    cache: ValidationCache,
    signer: Arc<Signer>,
    base_url: String,
    /// Machines seen validating since the last flush: (licence, machine key) -> when. Their
    /// seats' "last seen" is written a minute at a time, never on the validation's path.
    sightings: std::sync::Mutex<std::collections::HashMap<(String, String), Millis>>,
    /// Each licence's validations and pushes per day, and its machines' clients: counted here
    /// for the vendor's console, written a minute at a time.
    pub activity: crate::activity::Activity,
}

/// Sightings a replica keeps between flushes at most (a flood of invented fingerprints
/// cannot grow it further; the seats it misses are seen at their next validation).
const MAX_SIGHTINGS: usize = 100_000;

/// An activation's answer: the key with the licence's state signed, or no seat.
pub enum Activation {
    Activated(ActivateResponse),
    SeatLimit { limit: u64 },
}

/// A validation's answer, serialised (as kept and as sent).
pub enum Validation {
    Answer(Bytes),
    /// No licence has this key.
    UnknownLicense,
}

/// Which question an answer is for: a licence's lookup hash, and the machine named, if any.
fn answer_key(hash: &LicenseKeyHash, machine: Option<&MachineFingerprint>) -> AnswerKey {
    (
        hash.lookup().as_str().to_owned(),
        machine.map(|m| m.as_str().to_owned()),
    )
}

impl Validator {
    /// `cache_for` is how long a replica may answer from memory (zero: never).
    pub fn new(cache_for: Duration, signer: Arc<Signer>, base_url: String) -> Self {
        Self {
            cache: ValidationCache::new(cache_for),
            signer,
            base_url,
            sightings: Default::default(),
            activity: Default::default(),
        }
    }

    /// Notes that `machine` validated `license` at `at`.
    fn saw(&self, license: &License, machine: &MachineFingerprint, at: Millis) {
        let Ok(mut seen) = self.sightings.lock() else {
            return;
        };
        let key = (license.id.clone(), format!("fp:{}", machine.as_str()));
        if seen.len() < MAX_SIGHTINGS || seen.contains_key(&key) {
            seen.insert(key, at);
        }
    }

    /// The sightings since the last call: (licence id, machine key, when).
    pub fn take_sightings(&self) -> Vec<(String, String, Millis)> {
        let Ok(mut seen) = self.sightings.lock() else {
            return Vec::new();
        };
        std::mem::take(&mut *seen)
            .into_iter()
            .map(|((license, machine), at)| (license, machine, at))
            .collect()
    }

    /// Counts a validation asked with `hash` (answered from the cache or not) by `machine`,
    /// with the client its `User-Agent` names.
    pub fn count(
        &self,
        hash: &LicenseKeyHash,
        machine: Option<&MachineFingerprint>,
        client: Option<tidemark_domain::client_version::ClientVersion>,
    ) {
        self.activity.validated(
            hash.lookup().as_str(),
            machine.map(|m| format!("fp:{}", m.as_str())),
            client,
            now_millis(),
        );
    }

    /// The answer this replica gave to the same question within the cache's window, if any.
    pub fn kept_answer(
        &self,
        hash: &LicenseKeyHash,
        machine: Option<&MachineFingerprint>,
    ) -> Option<Bytes> {
        self.cache.answer(&answer_key(hash, machine))
    }

    /// The licence's state now, its features and the latest bundle when it is in force (an
    /// expired or suspended one answers `valid: false` with neither), and the verdict.
    pub async fn validate(
        &self,
        db: &Db,
        hash: &LicenseKeyHash,
        machine: Option<MachineFingerprint>,
    ) -> Result<Validation, ServiceError> {
        let key = answer_key(hash, machine.as_ref());
        if let Some(body) = self.cache.answer(&key) {
            return Ok(Validation::Answer(body));
        }
        let read = self.cache.license(db, &hash.lookup()).await?;
        let mut oldest_read = read.at;
        let Some(license) = read.value else {
            return Ok(Validation::UnknownLicense);
        };
        let now = now_millis();
        if let Some(machine) = &machine {
            self.saw(&license, machine, now);
        }
        let valid = license.state(now).is_active();
        let bundle = match valid {
            true => {
                let read = self.cache.latest_bundle(db).await?;
                oldest_read = oldest_read.min(read.at);
                read.value
            }
            false => None,
        };
        let mut answer = license_answer(&license, valid, bundle.as_deref(), &self.base_url);
        answer.verdict = Some(
            self.sign_verdict(db, hash, &license, &answer, machine, now)
                .await?,
        );
        let body = Bytes::from(serde_json::to_vec(&answer).map_err(ServiceError::internal)?);
        self.cache.remember_answer(key, body.clone(), oldest_read);
        Ok(Validation::Answer(body))
    }

    /// A new API key for `machine` on an active `license` (the caller has checked both), with
    /// the licence's state signed as at validation.
    pub async fn activate(
        &self,
        db: &Db,
        hash: &LicenseKeyHash,
        license: &License,
        machine: &MachineName,
        fingerprint: Option<MachineFingerprint>,
    ) -> Result<Activation, ServiceError> {
        let now = now_millis();
        let key = match crate::api_keys::issue(db, license, machine, fingerprint.as_ref()).await? {
            crate::api_keys::Issued::Key(key) => key,
            crate::api_keys::Issued::SeatLimit { limit } => {
                return Ok(Activation::SeatLimit { limit })
            }
        };
        let bundle = latest_bundle(db).await?;
        let state_now = license_answer(license, true, bundle.as_ref(), &self.base_url);
        let verdict = self
            .sign_verdict(db, hash, license, &state_now, fingerprint, now)
            .await?;
        Ok(Activation::Activated(ActivateResponse {
            api_key: key.expose().to_owned(),
            account_id: license.account_id.clone().into(),
            tier: license.tier,
            verdict: Some(verdict),
        }))
    }

    /// What `answer` says about `license`, signed, trusted until the offline grace ends.
    async fn sign_verdict(
        &self,
        db: &Db,
        hash: &LicenseKeyHash,
        license: &License,
        answer: &ValidateResponse,
        machine: Option<MachineFingerprint>,
        now: Millis,
    ) -> Result<String, ServiceError> {
        let claims = verdict_claims(
            self.signer.issuer(),
            hash.lookup().as_str(),
            license.state(now).as_str(),
            answer,
            machine,
            now,
            now + VERDICT_LIFETIME,
        );
        let (jws, _kid) = self
            .signer
            .sign(db, VERDICT_TYP, &claims)
            .await
            .map_err(ServiceError::internal)?;
        Ok(jws)
    }
}
