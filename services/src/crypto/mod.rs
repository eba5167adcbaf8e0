//! Encryption of secrets the server must be able to read back (the raw license key, for the
//! resend mail). XChaCha20-Poly1305 under a key derived from the master key per purpose, so
//! one master key never encrypts two kinds of data directly.

pub mod signing;

use base64::Engine as _;
use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng};
use chacha20poly1305::XChaCha20Poly1305;

/// The 32-byte key that encrypts stored secrets and session cookies. Never printed.
#[derive(Clone)]
pub struct MasterKey([u8; 32]);

/// Text that is not a base64-encoded 32-byte key.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a base64-encoded 32-byte key")]
pub struct MasterKeyFormat;

impl MasterKey {
    pub fn parse_base64(text: &str) -> Result<Self, MasterKeyFormat> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|_| MasterKeyFormat)?;
        let key: [u8; 32] = bytes.try_into().map_err(|_| MasterKeyFormat)?;
        Ok(Self(key))
    }

    pub fn generate() -> Self {
        let mut key = [0u8; 32];
        rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut key);
        Self(key)
    }

    pub fn expose(&self) -> &[u8; 32] {
        &self.0
    }

    pub fn to_base64(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(self.0)
    }
}

tidemark_domain::redacted_debug!(MasterKey);

/// Sealed before ciphertexts named their key (still read; a rotation rewrites them).
const FORMAT_V1: &str = "v1:";
const FORMAT_V2: &str = "v2:";
/// HKDF purpose of the key that encrypts stored license keys.
pub const LICENSE_KEY_PURPOSE: &str = "license-key";
/// HKDF purpose of the key that encrypts sign-in attempts kept between redirect and callback.
pub const LOGIN_ATTEMPT_PURPOSE: &str = "login-attempt";
/// HKDF purpose of the key that encrypts webhook URLs and signing secrets.
pub const WEBHOOK_PURPOSE: &str = "webhook";
/// HKDF purpose of the key that encrypts the private halves of verdict-signing keys.
pub const SIGNING_KEY_PURPOSE: &str = "signing-key";
/// HKDF purpose of the key that encrypts and authenticates the session cookie.
pub const SESSION_COOKIE_PURPOSE: &str = "session-cookie";
/// HKDF purpose of the key that encrypts a secret a form made, between its redirect and the
/// page that shows it once.
pub const HANDOVER_PURPOSE: &str = "secret-handover";
/// HKDF purpose of the key that encrypts a staff member's provider access token in their
/// console session.
pub const STAFF_TOKEN_PURPOSE: &str = "staff-token";
/// HKDF purpose of the key that seals a refused form's error in its page's address.
pub const FORM_SEAL_PURPOSE: &str = "form-seal";

/// The keys that seal a refused form's error in its page's address
/// (`tidemark_domain::form_seal`): the current one, and during a rotation the previous one.
#[derive(Clone)]
pub struct FormSealKeys {
    pub current: [u8; 32],
    pub previous: Option<[u8; 32]>,
}

tidemark_domain::redacted_debug!(FormSealKeys);

impl FormSealKeys {
    /// Whether `sig` seals `err` for `path` under either key, so that a redirect another
    /// replica sealed a moment before a rotation still shows.
    pub fn verify(&self, path: &str, err: &str, sig: &str) -> bool {
        use tidemark_domain::form_seal::is_sealed;
        is_sealed(&self.current, path, err, sig)
            || self
                .previous
                .is_some_and(|key| is_sealed(&key, path, err, sig))
    }
}

pub fn form_seal_keys(keys: &Keyring) -> FormSealKeys {
    FormSealKeys {
        current: derive_key(&keys.current, FORM_SEAL_PURPOSE),
        previous: keys
            .previous
            .as_ref()
            .map(|key| derive_key(key, FORM_SEAL_PURPOSE)),
    }
}

/// `N` bytes derived from the master key for one purpose.
pub fn derive_key<const N: usize>(master: &MasterKey, purpose: &str) -> [u8; N] {
    let hk = hkdf::Hkdf::<sha2::Sha256>::new(Some(b"tidemark"), master.expose());
    let mut key = [0u8; N];
    // Any N up to 255 * 32 bytes is a valid HKDF-SHA256 output length.
    let _ = hk.expand(purpose.as_bytes(), &mut key);
    key
}

/// The keys the server holds: the current master key, which seals, and during a rotation the
/// previous one, which only opens what it sealed before.
#[derive(Clone)]
pub struct Keyring {
    pub current: MasterKey,
    pub previous: Option<MasterKey>,
}

/// The public name of a master key, written into every ciphertext it seals so a rotation
/// can tell which rows still need re-encrypting: 8 hex digits derived from the key (one-way,
/// so it reveals nothing of it).
pub fn key_id(master: &MasterKey) -> String {
    let id: [u8; 4] = derive_key(master, "key-id");
    hex::encode(id)
}

#[derive(Clone)]
struct SealingKey {
    id: String,
    cipher: XChaCha20Poly1305,
}

impl SealingKey {
    fn new(master: &MasterKey, purpose: &str) -> Self {
        let key: [u8; 32] = derive_key(master, purpose);
        Self {
            id: key_id(master),
            cipher: XChaCha20Poly1305::new(&key.into()),
        }
    }

    fn open(&self, encoded: &str) -> Result<Vec<u8>, OpenError> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|_| OpenError::Damaged)?;
        if bytes.len() < 24 {
            return Err(OpenError::Damaged);
        }
        let (nonce, ciphertext) = bytes.split_at(24);
        self.cipher
            .decrypt(nonce.into(), ciphertext)
            .map_err(|_| OpenError::Damaged)
    }
}

/// Seals and opens one purpose's secrets.
#[derive(Clone)]
pub struct SecretBox {
    current: SealingKey,
    previous: Option<SealingKey>,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    #[error("stored secret could not be decrypted (wrong master key or damaged data)")]
    Damaged,
    /// Sealed under a key the server does not hold: a rotation whose previous key was
    /// dropped too early, or a database from another installation.
    #[error(
        "stored secret was sealed under master key {0}, which is neither TIDEMARK_MASTER_KEY \
         nor TIDEMARK_MASTER_KEY_PREVIOUS"
    )]
    UnknownKey(String),
}

/// What a rotation makes of one stored ciphertext.
#[derive(Debug, PartialEq, Eq)]
pub enum Reseal {
    /// Already sealed under the current key.
    Current,
    /// The same plaintext sealed under the current key.
    Resealed(String),
}

impl SecretBox {
    pub fn new(keys: &Keyring, purpose: &str) -> Self {
        Self {
            current: SealingKey::new(&keys.current, purpose),
            previous: keys.previous.as_ref().map(|k| SealingKey::new(k, purpose)),
        }
    }

    /// `v2:` + key id + `:` + base64(24-byte random nonce ‖ ciphertext ‖ tag).
    pub fn seal(&self, plaintext: &[u8]) -> String {
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        // Encryption into a Vec only fails on absurd lengths.
        let ciphertext = self
            .current
            .cipher
            .encrypt(&nonce, plaintext)
            .unwrap_or_default();
        let mut out = nonce.to_vec();
        out.extend_from_slice(&ciphertext);
        format!(
            "{FORMAT_V2}{}:{}",
            self.current.id,
            base64::engine::general_purpose::STANDARD.encode(out)
        )
    }

    pub fn open(&self, sealed: &str) -> Result<Vec<u8>, OpenError> {
        if let Some(rest) = sealed.strip_prefix(FORMAT_V2) {
            let (id, encoded) = rest.split_once(':').ok_or(OpenError::Damaged)?;
            let key = [Some(&self.current), self.previous.as_ref()]
                .into_iter()
                .flatten()
                .find(|k| k.id == id)
                .ok_or_else(|| OpenError::UnknownKey(id.chars().take(8).collect()))?;
            return key.open(encoded);
        }
        // Sealed before ciphertexts carried a key id: whichever key opens it.
        let encoded = sealed.strip_prefix(FORMAT_V1).ok_or(OpenError::Damaged)?;
        self.current
            .open(encoded)
            .or_else(|err| match &self.previous {
                Some(previous) => previous.open(encoded),
                None => Err(err),
            })
    }

    /// Whether `sealed` is under the current key in the current format.
    pub fn is_current(&self, sealed: &str) -> bool {
        sealed
            .strip_prefix(FORMAT_V2)
            .and_then(|rest| rest.split_once(':'))
            .is_some_and(|(id, _)| id == self.current.id)
    }

    /// For `rotate-master-key`: `sealed` opened and sealed again under the current key.
    pub fn reseal(&self, sealed: &str) -> Result<Reseal, OpenError> {
        if self.is_current(sealed) {
            return Ok(Reseal::Current);
        }
        Ok(Reseal::Resealed(self.seal(&self.open(sealed)?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(current: &MasterKey, previous: Option<&MasterKey>) -> Keyring {
        Keyring {
            current: current.clone(),
            previous: previous.cloned(),
        }
    }

    /// How secrets were sealed before they named their key.
    fn seal_v1(master: &MasterKey, purpose: &str, plaintext: &[u8]) -> String {
        let sealed = SecretBox::new(&ring(master, None), purpose).seal(plaintext);
        let encoded = sealed.rsplit_once(':').unwrap().1;
        format!("v1:{encoded}")
    }

    #[test]
    fn seals_and_opens_and_refuses_tampering_or_another_key() {
        let master = MasterKey::generate();
        let sb = SecretBox::new(&ring(&master, None), "license-key");
        let sealed = sb.seal(b"lic_secret");
        assert!(!sealed.contains("lic_secret"));
        assert!(sealed.starts_with(&format!("v2:{}:", key_id(&master))));
        assert_ne!(sealed, sb.seal(b"lic_secret"), "fresh nonce each time");
        assert_eq!(sb.open(&sealed).unwrap(), b"lic_secret");

        let mut tampered = sealed.clone().into_bytes();
        let last = tampered.len() - 3;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        assert_eq!(
            sb.open(std::str::from_utf8(&tampered).unwrap()),
            Err(OpenError::Damaged)
        );
        let stranger = MasterKey::generate();
        assert_eq!(
            SecretBox::new(&ring(&stranger, None), "license-key").open(&sealed),
            Err(OpenError::UnknownKey(key_id(&master)))
        );
        assert_eq!(
            SecretBox::new(&ring(&master, None), "other-purpose").open(&sealed),
            Err(OpenError::Damaged)
        );
        for junk in ["", "v2:", "v2:abc", "v1:!!", "v3:x:y"] {
            assert!(sb.open(junk).is_err(), "{junk:?}");
        }
    }

    #[test]
    fn key_ids_differ_per_key_and_reveal_nothing_of_it() {
        let (a, b) = (MasterKey::generate(), MasterKey::generate());
        assert_eq!(key_id(&a), key_id(&a));
        assert_ne!(key_id(&a), key_id(&b));
        assert_eq!(key_id(&a).len(), 8);
        assert!(!hex::encode(a.expose()).contains(&key_id(&a)));
    }

    #[test]
    fn a_rotation_opens_old_secrets_with_the_previous_key_and_reseals_them_under_the_new() {
        let (old, new) = (MasterKey::generate(), MasterKey::generate());
        let before = SecretBox::new(&ring(&old, None), "webhook");
        let during = SecretBox::new(&ring(&new, Some(&old)), "webhook");
        let after = SecretBox::new(&ring(&new, None), "webhook");

        let old_sealed = before.seal(b"https://hooks.example/1");
        let legacy = seal_v1(&old, "webhook", b"legacy");
        assert_eq!(
            during.open(&old_sealed).unwrap(),
            b"https://hooks.example/1"
        );
        assert_eq!(during.open(&legacy).unwrap(), b"legacy");
        assert!(!during.is_current(&old_sealed) && !during.is_current(&legacy));
        assert!(matches!(
            after.open(&old_sealed),
            Err(OpenError::UnknownKey(_))
        ));

        let Reseal::Resealed(resealed) = during.reseal(&old_sealed).unwrap() else {
            panic!("an old ciphertext must be resealed");
        };
        assert!(during.is_current(&resealed));
        assert_eq!(after.open(&resealed).unwrap(), b"https://hooks.example/1");
        assert_eq!(during.reseal(&resealed).unwrap(), Reseal::Current);
        let Reseal::Resealed(legacy_resealed) = during.reseal(&legacy).unwrap() else {
            panic!("a v1 ciphertext must be resealed");
        };
        assert_eq!(after.open(&legacy_resealed).unwrap(), b"legacy");

        // New secrets written during the rotation are sealed under the new key.
        assert!(after.open(&during.seal(b"fresh")).is_ok());
        // A secret neither key sealed is reported, not resealed.
        let foreign = SecretBox::new(&ring(&MasterKey::generate(), None), "webhook").seal(b"x");
        assert!(matches!(
            during.reseal(&foreign),
            Err(OpenError::UnknownKey(_))
        ));
    }
}
