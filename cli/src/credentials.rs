//! The credentials file in the user's configuration directory. Created with mode 0600; a
//! file with looser permissions is refused (as ssh refuses a private key), never relaxed.

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::license::CachedValidation;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Credentials {
    /// The service these credentials belong to.
    pub url: String,
    pub api_key: String,
    /// SHA-256 of the license key; the key itself is never stored.
    pub license_key_hash: String,
    /// The last successful validation: the signed verdict, as the service signed it.
    #[serde(default, deserialize_with = "crate::license::lenient")]
    pub validation: Option<CachedValidation>,
    /// The verdict-signing keys this machine trusts (pinned at activation, extended only by
    /// keys a trusted key vouches for). None for a machine activated before signed verdicts:
    /// its next online validation pins them.
    #[serde(default)]
    pub trusted_keys: Option<crate::verdict::TrustedKeys>,
}

#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    #[error(
        "{path} is readable by others (mode {mode:04o}); it holds your API key. \
         Run `chmod 600 {path}` and try again"
    )]
    TooOpen { path: String, mode: u32 },
    #[error("{path} is not a valid credentials file ({reason}); run `tidemark activate` again")]
    Damaged { path: String, reason: String },
    #[error("could not access {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

/// `$XDG_CONFIG_HOME/tidemark/credentials.json`, else `~/.config/tidemark/credentials.json`.
pub fn default_path(env: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let base = env("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            env("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".config"))
        })?;
    Some(base.join("tidemark").join("credentials.json"))
}

pub fn load(path: &Path) -> Result<Option<Credentials>, CredentialsError> {
    let shown = path.display().to_string();
    let io = |source| CredentialsError::Io {
        path: shown.clone(),
        source,
    };
    let meta = match fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(e)),
    };
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(CredentialsError::TooOpen { path: shown, mode });
    }
    let text = fs::read_to_string(path).map_err(io)?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| CredentialsError::Damaged {
            path: shown,
            reason: e.to_string(),
        })
}

/// Writes atomically: a new 0600 file beside the old one, synced, then renamed over it.
pub fn save(path: &Path, credentials: &Credentials) -> Result<(), CredentialsError> {
    let io = |source| CredentialsError::Io {
        path: path.display().to_string(),
        source,
    };
    if let Some(dir) = path.parent() {
        if !dir.exists() {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(io)?;
        }
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let result = (|| {
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        let text = serde_json::to_string_pretty(credentials).map_err(std::io::Error::other)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Credentials {
        Credentials {
            url: "http://127.0.0.1:3000".into(),
            api_key: "svc_api_abc".into(),
            license_key_hash: "0".repeat(64),
            validation: None,
            trusted_keys: None,
        }
    }

    #[test]
    fn saved_files_are_private_and_load_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tidemark").join("credentials.json");
        save(&path, &sample()).unwrap();
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dir_mode, 0o700);
        assert_eq!(load(&path).unwrap(), Some(sample()));
        // Saving again keeps it private.
        save(&path, &sample()).unwrap();
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    #[test]
    fn a_readable_file_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials.json");
        save(&path, &sample()).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        let err = load(&path).unwrap_err();
        assert!(err.to_string().contains("chmod 600"), "{err}");
        assert!(err.to_string().contains("0644"), "{err}");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o644,
            "never relaxed or fixed behind the user's back"
        );
        assert!(load(&dir.path().join("missing.json")).unwrap().is_none());
    }

    #[test]
    fn the_default_location_follows_xdg() {
        let env = |k: &str| match k {
            "XDG_CONFIG_HOME" => Some("/x/config".to_owned()),
            "HOME" => Some("/home/u".to_owned()),
            _ => None,
        };
        assert_eq!(
            default_path(env).unwrap(),
            PathBuf::from("/x/config/tidemark/credentials.json")
        );
        let env = |k: &str| (k == "HOME").then(|| "/home/u".to_owned());
        assert_eq!(
            default_path(env).unwrap(),
            PathBuf::from("/home/u/.config/tidemark/credentials.json")
        );
    }
}
