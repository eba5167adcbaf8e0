//! Compliance-profile bundles: verified against `sha256:<hex>` and put in place atomically,
//! so a failed or tampered download never replaces a good local copy.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("the downloaded bundle does not match its checksum (expected {expected}, got {actual}); the local copy was left unchanged. Try again; if it persists, contact support")]
    ChecksumMismatch { expected: String, actual: String },
    #[error("bundle_checksum {0:?} is not of the form sha256:<64 hex characters>")]
    BadChecksum(String),
    #[error("could not write the bundle to {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

pub fn verify(bytes: &[u8], checksum: &str) -> Result<(), BundleError> {
    let expected = checksum
        .strip_prefix("sha256:")
        .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| BundleError::BadChecksum(checksum.to_owned()))?
        .to_ascii_lowercase();
    let actual = hex::encode(Sha256::digest(bytes));
    if actual == expected {
        Ok(())
    } else {
        Err(BundleError::ChecksumMismatch {
            expected: format!("sha256:{expected}"),
            actual: format!("sha256:{actual}"),
        })
    }
}

/// Verifies `bytes`, then replaces `dir/name` with them in one rename.
pub fn install(
    dir: &Path,
    name: &str,
    bytes: &[u8],
    checksum: &str,
) -> Result<PathBuf, BundleError> {
    verify(bytes, checksum)?;
    let target = dir.join(name);
    let io = |source| BundleError::Io {
        path: target.display().to_string(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let tmp = dir.join(format!(".{name}.partial{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &target)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io)?;
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mismatch_leaves_the_old_copy_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let good = b"v1";
        let sum = format!("sha256:{}", hex::encode(Sha256::digest(good)));
        let path = install(dir.path(), "bundle.tar", good, &sum).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), good);
        let err = install(dir.path(), "bundle.tar", b"tampered", &sum).unwrap_err();
        assert!(matches!(err, BundleError::ChecksumMismatch { .. }), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), good);
        assert!(matches!(
            verify(good, "md5:abc"),
            Err(BundleError::BadChecksum(_))
        ));
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no partial files left"
        );
    }
}
