//! Encryption of secrets the server must be able to read back (the raw license key, for the
//! resend mail). XChaCha20-Poly1305 under a key derived from the master key per purpose, so
//! one master key never encrypts two kinds of data directly.

use base64::Engine as _;
use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng};
use chacha20poly1305::XChaCha20Poly1305;

use crate::config::MasterKey;

const FORMAT_PREFIX: &str = "v1:";
/// HKDF purpose of the key that encrypts stored license keys.
pub const LICENSE_KEY_PURPOSE: &str = "license-key";
/// HKDF purpose of the key that encrypts sign-in attempts kept between redirect and callback.
pub const LOGIN_ATTEMPT_PURPOSE: &str = "login-attempt";
/// HKDF purpose of the key that encrypts webhook URLs and signing secrets.
pub const WEBHOOK_PURPOSE: &str = "webhook";
/// HKDF purpose of the key that encrypts and authenticates the session cookie.
pub const SESSION_COOKIE_PURPOSE: &str = "session-cookie";

/// `N` bytes derived from the master key for one purpose.
pub fn derive_key<const N: usize>(master: &MasterKey, purpose: &str) -> [u8; N] {
    let hk = hkdf::Hkdf::<sha2::Sha256>::new(Some(b"tidemark"), master.expose());
    let mut key = [0u8; N];
    // Any N up to 255 * 32 bytes is a valid HKDF-SHA256 output length.
    let _ = hk.expand(purpose.as_bytes(), &mut key);
    key
}

#[derive(Clone)]
pub struct SecretBox {
    cipher: XChaCha20Poly1305,
}

#[derive(Debug, thiserror::Error)]
#[error("stored secret could not be decrypted (wrong master key or damaged data)")]
pub struct OpenError;

impl SecretBox {
    pub fn new(master: &MasterKey, purpose: &str) -> Self {
        let key: [u8; 32] = derive_key(master, purpose);
        Self {
            cipher: XChaCha20Poly1305::new(&key.into()),
        }
    }

    /// `v1:` + base64(24-byte random nonce ‖ ciphertext ‖ tag).
    pub fn seal(&self, plaintext: &[u8]) -> String {
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        // Encryption into a Vec only fails on absurd lengths.
        let ciphertext = self.cipher.encrypt(&nonce, plaintext).unwrap_or_default();
        let mut out = nonce.to_vec();
        out.extend_from_slice(&ciphertext);
        format!(
            "{FORMAT_PREFIX}{}",
            base64::engine::general_purpose::STANDARD.encode(out)
        )
    }

    pub fn open(&self, sealed: &str) -> Result<Vec<u8>, OpenError> {
        let encoded = sealed.strip_prefix(FORMAT_PREFIX).ok_or(OpenError)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|_| OpenError)?;
        if bytes.len() < 24 {
            return Err(OpenError);
        }
        let (nonce, ciphertext) = bytes.split_at(24);
        self.cipher
            .decrypt(nonce.into(), ciphertext)
            .map_err(|_| OpenError)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seals_and_opens_and_refuses_tampering_or_another_key() {
        let master = MasterKey::generate();
        let sb = SecretBox::new(&master, "license-key");
        let sealed = sb.seal(b"lic_secret");
        assert!(!sealed.contains("lic_secret"));
        assert_ne!(sealed, sb.seal(b"lic_secret"), "fresh nonce each time");
        assert_eq!(sb.open(&sealed).unwrap(), b"lic_secret");

        let mut tampered = sealed.clone().into_bytes();
        let last = tampered.len() - 3;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        assert!(sb.open(std::str::from_utf8(&tampered).unwrap()).is_err());
        assert!(SecretBox::new(&MasterKey::generate(), "license-key")
            .open(&sealed)
            .is_err());
        assert!(SecretBox::new(&master, "other-purpose")
            .open(&sealed)
            .is_err());
    }
}
