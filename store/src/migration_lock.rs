//! The lock SQLite migrations take: an exclusive `flock` on `<database>.migrate-lock`, held
//! while migrations run. The kernel releases it when the process ends however it ends, so a
//! killed migration never leaves it held.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::StoreError;

/// How often a waiting process tries again, and says it is still waiting.
const RETRY: Duration = Duration::from_millis(50);
const SAY_EVERY: Duration = Duration::from_secs(10);

/// The lock file of the database at `file`.
pub fn path_of(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".migrate-lock");
    PathBuf::from(name)
}

/// Waits until this process holds the migration lock of the database at `file` (none for an
/// in-memory database), saying so while another process holds it. Dropping the file frees it.
pub async fn acquire(file: &Path) -> Result<Option<File>, StoreError> {
    if file.as_os_str().is_empty() || file == Path::new(":memory:") {
        return Ok(None);
    }
    let path = path_of(file);
    let failed = |source| StoreError::MigrationLock {
        path: path.display().to_string(),
        source,
    };
    // Read and write where the process may create it; a lock file another user made (root
    // running an operator command before the service did) is locked as well when read-only.
    let lock = match OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            File::open(&path).map_err(failed)?
        }
        Err(e) => return Err(failed(e)),
    };
    let started = Instant::now();
    let mut said = None::<Instant>;
    loop {
        match lock.try_lock() {
            Ok(()) => return Ok(Some(lock)),
            Err(TryLockError::WouldBlock) => {
                if said.is_none_or(|at| at.elapsed() >= SAY_EVERY) {
                    tracing::info!(
                        lock = %path.display(),
                        waited_s = started.elapsed().as_secs(),
                        "another process is applying migrations; waiting for it"
                    );
                    said = Some(Instant::now());
                }
                tokio::time::sleep(RETRY).await;
            }
            Err(TryLockError::Error(e)) => return Err(failed(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_second_taker_waits_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("tidemark.db");
        let first = acquire(&db)
            .await
            .unwrap()
            .expect("a lock for a file database");
        let second = tokio::spawn({
            let db = db.clone();
            async move { acquire(&db).await.unwrap().is_some() }
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!second.is_finished(), "taken while the first held it");
        drop(first);
        let taken = tokio::time::timeout(Duration::from_secs(5), second).await;
        assert!(matches!(taken, Ok(Ok(true))), "{taken:?}");
        assert!(acquire(Path::new(":memory:")).await.unwrap().is_none());
    }
}
