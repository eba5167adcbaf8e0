//! Tidemark's data layer: one interface over SQLite (the embedded default) and PostgreSQL
//! (the scale-out path).
//!
//! Every query is written once. SQLite accepts PostgreSQL's `$1` placeholders, and the schema
//! sticks to the types both share (TEXT, BIGINT, DOUBLE PRECISION, BOOLEAN; timestamps as
//! Unix milliseconds), so the same SQL text runs on both. [`on_db!`] dispatches one generic
//! body to whichever concrete pool is open; dialect-specific code exists only where the two
//! databases really differ (connection set-up and how a write transaction begins).

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{PgPool, SqlitePool};

pub mod bundles;
pub mod licenses;
pub mod outbox;
pub mod pushes;
pub mod rate;
pub mod testing;

/// The schema, shared by both backends.
pub static MIGRATOR: Migrator = sqlx::migrate!("../migrations");

/// How long a SQLite connection waits for the write lock before giving up.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Sqlx(#[from] sqlx::Error),
    #[error("migration error: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("stored data is not readable: {0}")]
    Corrupt(&'static str),
    #[error("unsupported DATABASE_URL scheme (expected sqlite:// or postgres://)")]
    UnsupportedUrl,
    #[error("could not create the database directory {path}: {source}")]
    CreateDir {
        path: String,
        source: std::io::Error,
    },
}

/// Which database engine a [`Db`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// A connection pool to one of the supported databases. Cheap to clone.
#[derive(Clone, Debug)]
pub enum Db {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// Runs the same generic body against whichever pool `$db` holds. The body is compiled once
/// per backend, so each arm gets the concrete, zero-cost sqlx types.
#[macro_export]
macro_rules! on_db {
    ($db:expr, $pool:ident => $body:expr) => {
        match $db {
            $crate::Db::Sqlite($pool) => $body,
            $crate::Db::Postgres($pool) => $body,
        }
    };
}

impl Db {
    /// Opens a pool of at most `max_connections` for `url` (`sqlite://…` or `postgres://…`).
    /// A SQLite file and its directory are created if missing. A PostgreSQL URL may choose a
    /// schema with `?options=-c%20search_path%3D<schema>` (the tests use a fresh one each).
    pub async fn connect(url: &str, max_connections: u32) -> Result<Self, StoreError> {
        if url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(url)?
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Full)
                .busy_timeout(SQLITE_BUSY_TIMEOUT)
                .foreign_keys(true);
            if let Some(parent) = options.get_filename().parent() {
                if !parent.as_os_str().is_empty() {
                    create_dir(parent)?;
                }
            }
            let pool = SqlitePoolOptions::new()
                .max_connections(max_connections)
                .connect_with(options)
                .await?;
            Ok(Db::Sqlite(pool))
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            let options = PgConnectOptions::from_str(url)?;
            let pool = PgPoolOptions::new()
                .max_connections(max_connections)
                .acquire_timeout(Duration::from_secs(10))
                .connect_with(options)
                .await?;
            Ok(Db::Postgres(pool))
        } else {
            Err(StoreError::UnsupportedUrl)
        }
    }

    pub fn backend(&self) -> Backend {
        match self {
            Db::Sqlite(_) => Backend::Sqlite,
            Db::Postgres(_) => Backend::Postgres,
        }
    }

    /// Applies every pending migration. Safe to run concurrently from several replicas:
    /// sqlx takes an advisory lock on PostgreSQL, and SQLite serialises writers.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        on_db!(self, pool => MIGRATOR.run(pool).await)?;
        Ok(())
    }

    /// True when the database answers and every migration this binary knows is applied.
    pub async fn is_ready(&self) -> Result<bool, StoreError> {
        let applied: Vec<(i64,)> = on_db!(self, pool => {
            sqlx::query_as("SELECT version FROM _sqlx_migrations WHERE success = TRUE")
                .fetch_all(pool)
                .await
        })
        .or_else(|err| match err {
            // No migrations table yet means "not migrated", not "database down".
            sqlx::Error::Database(_) => Ok(Vec::new()),
            other => Err(other),
        })?;
        let applied: std::collections::HashSet<i64> = applied.into_iter().map(|(v,)| v).collect();
        Ok(MIGRATOR.iter().all(|m| applied.contains(&m.version)))
    }

    pub async fn close(&self) {
        on_db!(self, pool => pool.close().await)
    }
}

/// Begins a transaction that is going to write.
///
/// On SQLite this is `BEGIN IMMEDIATE`: the write lock is taken up front (waiting up to the
/// busy timeout), so a transaction that reads before it writes can never fail with
/// `SQLITE_BUSY` when it later upgrades its lock. PostgreSQL uses row locks instead.
pub trait BeginWrite {
    type Database: sqlx::Database;
    fn begin_write(
        &self,
    ) -> impl std::future::Future<
        Output = Result<sqlx::Transaction<'static, Self::Database>, sqlx::Error>,
    > + Send;
}

impl BeginWrite for SqlitePool {
    type Database = sqlx::Sqlite;
    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, sqlx::Error> {
        self.begin_with("BEGIN IMMEDIATE").await
    }
}

impl BeginWrite for PgPool {
    type Database = sqlx::Postgres;
    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, sqlx::Error> {
        self.begin().await
    }
}

fn create_dir(path: &Path) -> Result<(), StoreError> {
    std::fs::create_dir_all(path).map_err(|source| StoreError::CreateDir {
        path: path.display().to_string(),
        source,
    })
}
