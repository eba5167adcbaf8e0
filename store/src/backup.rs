//! SQLite backups: an online, consistent copy of the live database (`VACUUM INTO`, one read
//! transaction: the copy is the database as of one commit while writers go on in WAL mode),
//! and a look inside a copy before anyone trusts it. PostgreSQL has `pg_dump` for this
//! (docs/operations.md).

use std::path::Path;
use std::str::FromStr as _;

use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};

use crate::{Db, StoreError};

/// What a SQLite database file holds, read without changing it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileSummary {
    /// `ok`, or what SQLite's integrity check found.
    pub integrity: String,
    /// The newest applied migration (0 when there is none).
    pub schema_version: i64,
    pub accounts: i64,
    pub scans: i64,
}

/// The file a `sqlite:` database URL names; `None` for any other URL.
pub fn sqlite_file(url: &str) -> Result<Option<std::path::PathBuf>, StoreError> {
    if !url.starts_with("sqlite:") {
        return Ok(None);
    }
    Ok(Some(
        SqliteConnectOptions::from_str(url)?
            .get_filename()
            .to_path_buf(),
    ))
}

impl Db {
    /// Writes a consistent copy of this SQLite database to `dest`, which must not exist.
    /// `None` on PostgreSQL, which is backed up with its own tools.
    pub async fn backup_sqlite_to(&self, dest: &Path) -> Result<Option<()>, StoreError> {
        let Db::Sqlite { pool, .. } = self else {
            return Ok(None);
        };
        let dest = dest
            .to_str()
            .ok_or(StoreError::Corrupt("backup path is not UTF-8"))?;
        sqlx::query("VACUUM INTO $1")
            .bind(dest)
            .execute(pool)
            .await?;
        Ok(Some(()))
    }
}

/// Opens `path` read-only and summarises it: integrity, schema version, a few counts.
pub async fn inspect_sqlite_file(path: &Path) -> Result<FileSummary, StoreError> {
    let options = SqliteConnectOptions::from_str("sqlite://")?
        .filename(path)
        .read_only(true)
        .create_if_missing(false);
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(options)
        .await?;
    let summary = async {
        let (integrity,): (String,) = sqlx::query_as("PRAGMA integrity_check")
            .fetch_one(&pool)
            .await?;
        let (schema_version,): (i64,) = sqlx::query_as(
            "SELECT COALESCE(MAX(version), 0) FROM _sqlx_migrations WHERE success = TRUE",
        )
        .fetch_one(&pool)
        .await?;
        let (accounts,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM accounts")
            .fetch_one(&pool)
            .await?;
        let (scans,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM scans")
            .fetch_one(&pool)
            .await?;
        Ok::<_, StoreError>(FileSummary {
            integrity,
            schema_version,
            accounts,
            scans,
        })
    }
    .await;
    pool.close().await;
    summary
}
