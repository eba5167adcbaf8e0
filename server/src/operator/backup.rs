//! `backup` and `restore` of the embedded SQLite database, and the lock by which `restore`
//! knows that a server is serving the file. PostgreSQL is backed up with `pg_dump` and
//! restored with `pg_restore` (docs/operations.md).

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use tidemark_store::backup::{inspect_sqlite_file, sqlite_file, FileSummary};
use tidemark_store::Db;

use crate::config::Config;

const POSTGRES_BACKUP: &str = "DATABASE_URL names PostgreSQL: back it up with pg_dump and restore \
     it with pg_restore (docs/operations.md, Backups)";

/// The SQLite file `DATABASE_URL` names; `None` on PostgreSQL.
pub fn sqlite_path(config: &Config) -> anyhow::Result<Option<PathBuf>> {
    sqlite_file(config.database.url.expose()).context("DATABASE_URL")
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Held by `serve` on SQLite for as long as the process lives (the kernel releases it however
/// the process ends): `restore` refuses while it is held, and a second `serve` on the same
/// file does too.
pub struct ServeLock {
    _file: File,
}

impl ServeLock {
    pub fn acquire(config: &Config) -> anyhow::Result<Option<ServeLock>> {
        let Some(db) = sqlite_path(config)? else {
            return Ok(None);
        };
        if let Some(parent) = db.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("could not create {}", parent.display()))?;
        }
        let path = with_suffix(&db, ".serve.lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("could not open {}", path.display()))?;
        match file.try_lock() {
            Ok(()) => Ok(Some(ServeLock { _file: file })),
            Err(TryLockError::WouldBlock) => bail!(
                "a tidemark-server is serving {} (it holds {})",
                db.display(),
                path.display()
            ),
            Err(TryLockError::Error(e)) => {
                Err(e).with_context(|| format!("could not lock {}", path.display()))
            }
        }
    }
}

/// What `backup` and `restore` report.
#[derive(Debug, serde::Serialize)]
pub struct Report {
    pub file: String,
    pub bytes: u64,
    #[serde(flatten)]
    pub summary: FileSummary,
}

/// An online, consistent copy of the live SQLite database in `to` (a new file): written
/// beside it as `<to>.partial`, checked, then renamed, so a file named `to` is always whole.
pub async fn backup(db: &Db, to: &Path) -> anyhow::Result<Report> {
    if to.exists() {
        bail!(
            "{} exists; name a new file (a backup never overwrites one)",
            to.display()
        );
    }
    let partial = with_suffix(to, ".partial");
    let _ = std::fs::remove_file(&partial);
    if db
        .backup_sqlite_to(&partial)
        .await
        .with_context(|| format!("could not write {}", partial.display()))?
        .is_none()
    {
        bail!(POSTGRES_BACKUP);
    }
    let summary = inspect_sqlite_file(&partial).await?;
    if summary.integrity != "ok" {
        bail!(
            "the copy in {} failed SQLite's integrity check: {}",
            partial.display(),
            summary.integrity
        );
    }
    File::open(&partial)?.sync_all()?;
    std::fs::rename(&partial, to)
        .with_context(|| format!("could not rename {} to {}", partial.display(), to.display()))?;
    Ok(Report {
        file: to.display().to_string(),
        bytes: std::fs::metadata(to)?.len(),
        summary,
    })
}

/// Puts the backup `from` in place of the SQLite database, after checking it. Refused while
/// a server serves the database. The replaced files are kept beside it, renamed
/// `<name>.before-restore-<unix time>`.
pub async fn restore(config: &Config, from: &Path) -> anyhow::Result<Report> {
    let Some(db) = sqlite_path(config)? else {
        bail!(POSTGRES_BACKUP);
    };
    // Held until the end: no server can start on the file while it is being replaced.
    let _lock = ServeLock::acquire(config)
        .context("restore refuses to replace the database of a running server; stop it first")?;
    let summary = inspect_sqlite_file(from)
        .await
        .with_context(|| format!("{} is not a readable SQLite database", from.display()))?;
    if summary.integrity != "ok" {
        bail!(
            "{} failed SQLite's integrity check: {}",
            from.display(),
            summary.integrity
        );
    }
    if summary.schema_version == 0 {
        bail!("{} holds no Tidemark schema", from.display());
    }
    let incoming = with_suffix(&db, ".restoring");
    std::fs::copy(from, &incoming).with_context(|| {
        format!(
            "could not copy {} to {}",
            from.display(),
            incoming.display()
        )
    })?;
    File::open(&incoming)?.sync_all()?;
    let stamp = format!(".before-restore-{}", chrono::Utc::now().timestamp());
    // The write-ahead log and shared memory belong to the database they were written for.
    for suffix in ["", "-wal", "-shm"] {
        let current = with_suffix(&db, suffix);
        if current.exists() {
            let kept = with_suffix(&current, &stamp);
            std::fs::rename(&current, &kept)
                .with_context(|| format!("could not move {} aside", current.display()))?;
        }
    }
    std::fs::rename(&incoming, &db)
        .with_context(|| format!("could not put the backup in place at {}", db.display()))?;
    Ok(Report {
        file: db.display().to_string(),
        bytes: std::fs::metadata(&db)?.len(),
        summary,
    })
}
