//! The master key (sealing stored secrets and session cookies), the previous one during a
//! rotation, and when a rotated-in verdict-signing key starts signing.

use std::path::{Path, PathBuf};

use super::{ConfigError, Environment, Vars};

pub use tidemark_services::crypto::MasterKey;

fn parse_master_key(text: &str) -> Result<MasterKey, ConfigError> {
    MasterKey::parse_base64(text).map_err(|_| ConfigError::MasterKeyFormat)
}

/// Where the master key came from, so start-up can warn about a development key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MasterKeySource {
    Environment,
    /// Generated (or re-read) in development at this path.
    DevelopmentFile(PathBuf),
}

#[derive(Debug, Clone)]
pub struct KeysConfig {
    pub master_key: MasterKey,
    pub master_key_source: MasterKeySource,
    /// `TIDEMARK_MASTER_KEY_PREVIOUS`: decrypts what the previous key sealed, never seals.
    /// Set while a rotation is under way (see `rotate-master-key`).
    pub master_key_previous: Option<MasterKey>,
    /// `serve` starts even though stored secrets are sealed under a master key it was not
    /// given (`TIDEMARK_ALLOW_UNKNOWN_MASTER_KEYS=1`): for a deliberate partial recovery,
    /// where what the lost key sealed is given up.
    pub allow_unknown_master_keys: bool,
    /// How long a rotated-in verdict-signing key is published before it signs
    /// (`TIDEMARK_SIGNING_KEY_OVERLAP`, default 7d), in milliseconds.
    pub signing_key_overlap_ms: tidemark_domain::Millis,
}

impl KeysConfig {
    pub fn read(
        vars: &Vars,
        environment: Environment,
        data_dir: &Path,
    ) -> Result<Self, ConfigError> {
        let (master_key, master_key_source) = match vars.get("TIDEMARK_MASTER_KEY") {
            Some(text) => (parse_master_key(&text)?, MasterKeySource::Environment),
            None if environment == Environment::Production => {
                return Err(ConfigError::MasterKeyMissing)
            }
            None => {
                let path = data_dir.join("master.key");
                let key = load_or_create_dev_key(&path)?;
                (key, MasterKeySource::DevelopmentFile(path))
            }
        };
        let master_key_previous = match vars.get("TIDEMARK_MASTER_KEY_PREVIOUS") {
            None => None,
            Some(text) => {
                let name = "TIDEMARK_MASTER_KEY_PREVIOUS";
                let previous = parse_master_key(&text).map_err(|_| {
                    ConfigError::invalid(name, "must be the base64 encoding of exactly 32 bytes")
                })?;
                // Almost certainly a copy of the wrong value: the rotation would look done
                // while nothing changed.
                if previous.expose() == master_key.expose() {
                    return Err(ConfigError::invalid(
                        name,
                        "is the same key as TIDEMARK_MASTER_KEY",
                    ));
                }
                Some(previous)
            }
        };
        let signing_key_overlap_ms = parse_overlap(
            vars.get("TIDEMARK_SIGNING_KEY_OVERLAP")
                .as_deref()
                .unwrap_or(tidemark_domain::signing::DEFAULT_OVERLAP),
        )
        .map_err(|reason| ConfigError::invalid("TIDEMARK_SIGNING_KEY_OVERLAP", reason))?;
        Ok(Self {
            master_key,
            master_key_source,
            master_key_previous,
            allow_unknown_master_keys: vars.flag("TIDEMARK_ALLOW_UNKNOWN_MASTER_KEYS")?,
            signing_key_overlap_ms,
        })
    }

    /// For the start-up summary: where the key came from, never the key.
    /// The keys that seal and open stored secrets: the current master key and, during a
    /// rotation, the previous one.
    pub fn keyring(&self) -> tidemark_services::crypto::Keyring {
        tidemark_services::crypto::Keyring {
            current: self.master_key.clone(),
            previous: self.master_key_previous.clone(),
        }
    }

    pub fn summary(&self) -> String {
        let source = match &self.master_key_source {
            MasterKeySource::Environment => "from the environment".to_owned(),
            MasterKeySource::DevelopmentFile(path) => {
                format!("from the development file {}", path.display())
            }
        };
        let rotation = if self.master_key_previous.is_some() {
            ", rotation under way"
        } else {
            ""
        };
        format!(
            "master key {source}{rotation}; a rotated-in signing key signs after {} h",
            self.signing_key_overlap_ms / tidemark_domain::time::HOUR_MS
        )
    }
}

/// A signing-key overlap: an age (`7d`, `48h`, `2w`), or `0` for a key that signs at once
/// (when the current key is compromised).
pub fn parse_overlap(text: &str) -> Result<tidemark_domain::Millis, String> {
    if text.trim() == "0" {
        return Ok(0);
    }
    tidemark_domain::retention::Age::parse(text).map(|a| a.millis())
}

/// Development convenience: a key generated once and kept in the data directory (mode 0600),
/// so sessions and stored secrets survive restarts.
fn load_or_create_dev_key(path: &Path) -> Result<MasterKey, ConfigError> {
    let io_err = |source| ConfigError::MasterKeyFile {
        path: path.display().to_string(),
        source,
    };
    match std::fs::read_to_string(path) {
        Ok(text) => parse_master_key(&text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(io_err)?;
            }
            let key = MasterKey::generate();
            write_private_file(path, key.to_base64().as_bytes()).map_err(io_err)?;
            Ok(key)
        }
        Err(e) => Err(io_err(e)),
    }
}

fn write_private_file(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(contents)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;

    use super::super::tests::config;
    use super::*;

    #[test]
    fn production_refuses_to_start_without_a_master_key() {
        let dir = tempfile::tempdir().unwrap();
        let err = config(&[
            ("TIDEMARK_ENV", "production"),
            ("TIDEMARK_DATA_DIR", dir.path().to_str().unwrap()),
        ])
        .unwrap_err();
        assert!(matches!(err, ConfigError::MasterKeyMissing), "{err}");
        assert!(!dir.path().join("master.key").exists());
    }

    #[test]
    fn development_generates_a_private_key_once_and_reuses_it() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().to_str().unwrap();
        let first = config(&[("TIDEMARK_DATA_DIR", data)]).unwrap();
        let second = config(&[("TIDEMARK_DATA_DIR", data)]).unwrap();
        assert_eq!(
            first.keys.master_key.expose(),
            second.keys.master_key.expose()
        );
        let mode = std::fs::metadata(dir.path().join("master.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(matches!(
            first.keys.master_key_source,
            MasterKeySource::DevelopmentFile(_)
        ));
        assert!(first.keys.summary().contains("from the development file"));
    }

    #[test]
    fn the_previous_key_must_be_another_key() {
        let key = MasterKey::generate().to_base64();
        let same = config(&[
            ("TIDEMARK_MASTER_KEY", &key),
            ("TIDEMARK_MASTER_KEY_PREVIOUS", &key),
        ])
        .unwrap_err()
        .to_string();
        assert!(same.contains("is the same key"), "{same}");
        let other = MasterKey::generate().to_base64();
        let rotating = config(&[
            ("TIDEMARK_MASTER_KEY", &key),
            ("TIDEMARK_MASTER_KEY_PREVIOUS", &other),
            ("TIDEMARK_SIGNING_KEY_OVERLAP", "48h"),
        ])
        .unwrap();
        assert_eq!(rotating.keys.signing_key_overlap_ms, 48 * 3_600_000);
        let summary = rotating.keys.summary();
        assert!(summary.contains("rotation under way"), "{summary}");
        assert!(!summary.contains(&key) && !summary.contains(&other));
    }

    #[test]
    fn secrets_may_come_from_files() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().to_str().unwrap();
        let key = base64::engine::general_purpose::STANDARD.encode([9u8; 32]);
        let key_file = dir.path().join("master_key");
        std::fs::write(&key_file, format!("{key}\n")).unwrap();
        let secret_file = dir.path().join("oidc_secret");
        std::fs::write(&secret_file, "s3cret-from-a-file").unwrap();
        let key_path = key_file.to_str().unwrap();
        let secret_path = secret_file.to_str().unwrap();
        let from_files = config(&[
            ("TIDEMARK_DATA_DIR", data),
            ("TIDEMARK_MASTER_KEY_FILE", key_path),
            ("TIDEMARK_OIDC_ISSUER", "https://id.example.com"),
            ("TIDEMARK_OIDC_CLIENT_ID", "tidemark"),
            ("TIDEMARK_OIDC_CLIENT_SECRET_FILE", secret_path),
        ])
        .unwrap();
        assert_eq!(from_files.keys.master_key.expose(), &[9u8; 32]);
        assert_eq!(
            from_files
                .signin
                .oidc
                .as_ref()
                .unwrap()
                .client_secret
                .expose(),
            "s3cret-from-a-file"
        );

        let both = config(&[
            ("TIDEMARK_DATA_DIR", data),
            ("TIDEMARK_MASTER_KEY", key.as_str()),
            ("TIDEMARK_MASTER_KEY_FILE", key_path),
        ])
        .unwrap_err()
        .to_string();
        assert!(both.contains("not both"), "{both}");
        let missing = config(&[
            ("TIDEMARK_DATA_DIR", data),
            ("TIDEMARK_MASTER_KEY_FILE", "/nonexistent/key"),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            missing.contains("TIDEMARK_MASTER_KEY_FILE") && missing.contains("/nonexistent/key"),
            "{missing}"
        );
        // A file with the wrong content is refused without showing it.
        std::fs::write(&key_file, "not-a-key-at-all").unwrap();
        let bad = config(&[
            ("TIDEMARK_DATA_DIR", data),
            ("TIDEMARK_MASTER_KEY_FILE", key_path),
        ])
        .unwrap_err()
        .to_string();
        assert!(!bad.contains("not-a-key-at-all"), "{bad}");
    }
}
