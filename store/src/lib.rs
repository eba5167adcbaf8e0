//! Tidemark's data layer: one interface over SQLite (the embedded default) and PostgreSQL
//! (the scale-out path).
//!
//! Every query is written once. SQLite accepts PostgreSQL's `$1` placeholders, and the schema
//! sticks to the types both share (TEXT, BIGINT, DOUBLE PRECISION, BOOLEAN; timestamps as
//! Unix milliseconds), so the same SQL text runs on both. [`on_db!`] dispatches one generic
//! body to whichever concrete pool is open; dialect-specific code exists only where the two
//! databases really differ (connection set-up, how a write transaction begins, and how a
//! push's statements travel: grouped on SQLite, see `pushes::committer`).

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{PgPool, SqlitePool};

pub mod access;
pub mod activity;
pub mod alerts;
pub mod api_keys;
pub mod audit;
pub mod backup;
pub mod badges;
pub mod branches;
pub mod bundles;
pub mod catalogues;
pub mod dashboard;
pub mod fault;
pub mod findings;
pub mod frameworks;
pub mod gates;
pub mod gauges;
pub mod handovers;
pub mod housekeeping;
pub mod inventory;
pub mod leases;
pub mod license_events;
pub mod licenses;
mod locks;
pub mod machines;
mod migration_lock;
pub mod outbox;
mod packed;
pub mod posture;
pub mod publishers;
pub mod pushes;
mod queue;
pub mod rate;
pub mod rollup_folds;
pub mod rollups;
pub mod saved_views;
pub mod scan_facts;
pub mod scim;
pub mod sealed;
pub mod sessions;
pub mod signing_keys;
pub mod spans;
pub mod sso;
mod stmt;
pub mod stripe;
#[cfg(feature = "testing")]
pub mod testing;
mod tx;
pub mod usage;
pub mod vendor_tokens;
pub mod webhooks;

/// The schema, shared by both backends. Migrations this binary does not know (applied by a
/// newer release during a rolling upgrade) are no error: each release's migrations keep the
/// previous release working (docs/operations.md), so an older replica may restart on a newer
/// schema.
pub static MIGRATOR: Migrator = Migrator {
    ignore_missing: true,
    ..sqlx::migrate!("../migrations")
};

/// How long a SQLite connection waits for the write lock before giving up.
pub(crate) const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(10);

pub use fault::Fault;
/// The ids the store's functions take and its rows carry, one type each.
pub use tidemark_wire::ids::{AccountId, FindingId, ProjectId, ScanId};

/// How a process's pools wait for the database.
#[derive(Debug, Clone, Copy)]
pub struct PoolSettings {
    pub max_connections: u32,
    /// How long a caller waits for a connection before failing as [`Fault::Unavailable`]:
    /// while PostgreSQL restarts, callers get an answer in this time, not after minutes.
    pub acquire_timeout: Duration,
}

impl PoolSettings {
    pub fn new(max_connections: u32) -> Self {
        Self {
            max_connections,
            acquire_timeout: Duration::from_secs(3),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Sqlx(#[from] sqlx::Error),
    /// From the SQLite push writer's own connection (`pushes::sqlite_writer`).
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("migration error: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("the database is closed")]
    Closed,
    #[error("stored data is not readable: {0}")]
    Corrupt(&'static str),
    #[error("a detached write did not finish: {0}")]
    Interrupted(String),
    #[error("could not take the migration lock {path}: {source}")]
    MigrationLock {
        path: String,
        source: std::io::Error,
    },
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

/// Connection pools to one of the supported databases. Cheap to clone.
#[derive(Clone, Debug)]
pub enum Db {
    Sqlite {
        /// Readers: WAL lets them run beside the writer.
        pool: SqlitePool,
        /// The one connection this process writes through. SQLite admits one writer at a
        /// time; queueing writers here (first come, first served, without sleeping) beats
        /// letting them poll SQLite's busy handler, whose growing sleeps leave the lock idle.
        /// `BEGIN IMMEDIATE` and the busy timeout still guard against other processes.
        writer: SqlitePool,
        /// Pushes are written by one committer task on the writer connection, in groups.
        pushes: pushes::committer::PushQueue,
    },
    Postgres(PgPool),
}

/// Runs the same generic body against whichever pool `$db` holds, for reads. The body is
/// compiled once per backend, so each arm gets the concrete, zero-cost sqlx types. On
/// PostgreSQL a read made for a request is bounded by the request's deadline
/// ([`fault::within_deadline`]): a server that stops answering keeps its connections open.
#[macro_export]
macro_rules! on_db {
    ($db:expr, $pool:ident => $body:expr) => {
        match ::core::convert::AsRef::<$crate::Db>::as_ref($db) {
            $crate::Db::Sqlite { pool: $pool, .. } => $body,
            $crate::Db::Postgres($pool) => $crate::fault::bounded(async { $body }).await,
        }
    };
}

/// Like [`on_db!`], for bodies that write: on SQLite they go through the writer connection.
/// It takes a [`Writer`], never a bare [`Db`], so a write function that forgot to ask for
/// one does not compile.
#[macro_export]
macro_rules! on_db_write {
    ($writer:expr, $pool:ident => $body:expr) => {
        match $crate::Writer::db($writer) {
            $crate::Db::Sqlite { writer: $pool, .. } => $body,
            $crate::Db::Postgres($pool) => $body,
        }
    };
}

/// The right to write: proof that the code holding it runs in a task of its own, which the
/// caller's cancellation cannot stop half-way (see [`Db::detached`], the only way to get one
/// outside tests). Every store function that writes takes `&Writer`; it reads like a [`Db`].
///
/// So a write reached from a request without [`Db::detached`] does not compile:
///
/// ```compile_fail
/// async fn sign_out(db: &tidemark_store::Db) {
///     let _ = tidemark_store::sessions::delete_session(db, "id-hash").await;
/// }
/// ```
///
/// and neither does making one by hand (`Writer(db.clone())`: the field is private). It is not
/// `Clone`, so it stays with the task that was given it.
#[derive(Debug)]
pub struct Writer(Db);

impl Writer {
    pub fn db(&self) -> &Db {
        &self.0
    }

    /// For tests only (the `testing` feature), where nothing cancels a write half-way.
    #[cfg(feature = "testing")]
    pub fn for_tests(db: Db) -> Self {
        Writer(db)
    }
}

impl AsRef<Db> for Writer {
    fn as_ref(&self) -> &Db {
        &self.0
    }
}

impl AsRef<Db> for Db {
    fn as_ref(&self) -> &Db {
        self
    }
}

impl std::ops::Deref for Writer {
    type Target = Db;
    fn deref(&self) -> &Db {
        &self.0
    }
}

impl Db {
    /// Opens a pool of at most `max_connections` for `url` (`sqlite://…` or `postgres://…`).
    /// A SQLite file and its directory are created if missing. A PostgreSQL URL may choose a
    /// schema with `?options=-c%20search_path%3D<schema>` (the tests use a fresh one each).
    pub async fn connect(url: &str, max_connections: u32) -> Result<Self, StoreError> {
        Self::connect_with(url, PoolSettings::new(max_connections)).await
    }

    /// [`Db::connect`] with every pool setting chosen.
    pub async fn connect_with(url: &str, settings: PoolSettings) -> Result<Self, StoreError> {
        let PoolSettings {
            max_connections,
            acquire_timeout,
        } = settings;
        if url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(url)?
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Full)
                .busy_timeout(SQLITE_BUSY_TIMEOUT)
                .foreign_keys(true);
            let file = options.get_filename().to_path_buf();
            if let Some(parent) = file.parent() {
                if !parent.as_os_str().is_empty() {
                    create_dir(parent)?;
                }
            }
            // A local file does not drop connections: pinging one before each use would only
            // add a round trip to sqlx's connection thread.
            let writer = SqlitePoolOptions::new()
                .max_connections(1)
                .test_before_acquire(false)
                .connect_with(options.clone())
                .await?;
            let pool = SqlitePoolOptions::new()
                .max_connections(max_connections)
                .acquire_timeout(acquire_timeout)
                .test_before_acquire(false)
                .connect_with(options)
                .await?;
            let pushes = pushes::committer::PushQueue::start(file, writer.clone());
            Ok(Db::Sqlite {
                pool,
                writer,
                pushes,
            })
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            let mut options = PgConnectOptions::from_str(url)?;
            // PostgreSQL compiles a query with LLVM when its estimated cost is high, as a short
            // indexed walk's often is on a large account (the overview's oldest criticals:
            // 37 ms of compiling for 14 ms of work at N = 1,000). Every query here is short, so
            // off, unless the URL's `options` say otherwise (docs/configuration.md).
            if !options.get_options().is_some_and(|o| o.contains("jit")) {
                options = options.options([("jit", "off")]);
            }
            let pool = PgPoolOptions::new()
                .max_connections(max_connections)
                .acquire_timeout(acquire_timeout)
                .connect_with(options)
                .await?;
            Ok(Db::Postgres(pool))
        } else {
            Err(StoreError::UnsupportedUrl)
        }
    }

    /// How SQLite's push committer has grouped pushes; `None` on PostgreSQL, which has none.
    pub fn push_group_stats(&self) -> Option<pushes::committer::GroupStats> {
        match self {
            Db::Sqlite { pushes, .. } => Some(pushes.stats()),
            Db::Postgres(_) => None,
        }
    }

    /// SQLite: whether pushes are planned before the writer's turn (`pushes::early`; off
    /// unless turned on). PostgreSQL has no such turn.
    pub fn set_push_early_decisions(&self, on: bool) {
        if let Db::Sqlite { pushes, .. } = self {
            pushes.set_early_decisions(on);
        }
    }

    pub fn backend(&self) -> Backend {
        match self {
            Db::Sqlite { .. } => Backend::Sqlite,
            Db::Postgres(_) => Backend::Postgres,
        }
    }

    /// Applies every pending migration. Safe to run concurrently from several processes:
    /// sqlx takes an advisory lock on PostgreSQL; on SQLite, where it takes none and each
    /// migration is its own transaction, two processes (the service starting and an operator's
    /// command) would both read "not applied" and both apply it, so a lock file beside the
    /// database serialises them, and the second finds nothing left to do.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        match self {
            Db::Sqlite { writer, .. } => {
                let file = writer.connect_options().get_filename().to_path_buf();
                let _held = migration_lock::acquire(&file).await?;
                MIGRATOR.run(writer).await?
            }
            Db::Postgres(pool) => MIGRATOR.run(pool).await?,
        }
        Ok(())
    }

    /// True when the database answers and every migration this binary knows is applied.
    pub async fn is_ready(&self) -> Result<bool, StoreError> {
        Ok(self.pending_migrations().await?.is_empty())
    }

    /// The migrations this binary knows that the database has not applied: `version
    /// description`, oldest first.
    pub async fn pending_migrations(&self) -> Result<Vec<String>, StoreError> {
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
        Ok(MIGRATOR
            .iter()
            .filter(|m| !applied.contains(&m.version))
            .map(|m| format!("{} {}", m.version, m.description))
            .collect())
    }

    /// Runs a write to completion in its own task, whatever happens to the caller. The one way
    /// every write started by something cancellable (a request whose client may hang up, a
    /// server function) reaches the store.
    ///
    /// A cancelled future stops at its next `.await`; a write transaction stopped there leaves
    /// sqlx's connection inside a transaction nobody owns, and on SQLite, whose single writer
    /// connection every write shares, every later write would then fail.
    ///
    /// Under a request's deadline ([`fault::within_deadline`]) the caller stops waiting when
    /// it passes and gets [`Fault::Unavailable`]; the write goes on to its end behind the
    /// answer, so the caller's retry finds it (a push's replay returns the same scan).
    pub async fn detached<T, F, Fut>(&self, write: F) -> Result<T, StoreError>
    where
        F: FnOnce(Writer) -> Fut,
        Fut: std::future::Future<Output = Result<T, StoreError>> + Send + 'static,
        T: Send + 'static,
    {
        let task = tokio::spawn(write(Writer(self.clone())));
        let finished = match fault::deadline() {
            None => task.await,
            Some(limit) => match tokio::time::timeout(limit, task).await {
                Ok(finished) => finished,
                Err(_) => return Err(fault::timed_out(limit).into()),
            },
        };
        finished.map_err(|e| StoreError::Interrupted(e.to_string()))?
    }

    pub async fn close(&self) {
        match self {
            Db::Sqlite {
                pool,
                writer,
                pushes,
            } => {
                // The committer's own connection first: the file may be replaced next.
                pushes.close().await;
                close_pool(writer).await;
                close_pool(pool).await;
            }
            Db::Postgres(pool) => close_pool(pool).await,
        }
    }
}

/// Closes every connection of `pool`. sqlx 0.8's `Pool::close` can return with one still
/// open (launchbadge/sqlx#3217): a connection being handed back checks that the pool is open,
/// pings it, then puts it among the idle ones, and if `close` drained those meanwhile it
/// stays there, open, for the pool's life (a SQLite file still held after the database was
/// closed, one run in five under load). Closing again drains it.
async fn close_pool<DB: sqlx::Database>(pool: &sqlx::Pool<DB>) {
    pool.close().await;
    for _ in 0..100 {
        if pool.size() == 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        pool.close().await;
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

    /// A write transaction in which no other write to `account_id`'s data runs until it ends,
    /// on any replica: no push either. SQLite already admits one writer at a time; PostgreSQL
    /// takes the account's advisory lock exclusive, as the first statement, so later reads see
    /// every earlier commit ([`locks`]).
    fn begin_account_write(
        &self,
        account_id: &AccountId,
    ) -> impl std::future::Future<
        Output = Result<sqlx::Transaction<'static, Self::Database>, sqlx::Error>,
    > + Send;

    /// A write transaction in which no push to `project_id` and no account-wide write of its
    /// account runs until it ends, on any replica; pushes to the account's other projects go
    /// on. PostgreSQL takes the locks a push to the project takes ([`locks::PROJECT_BY_ID`]);
    /// SQLite admits one writer anyway. For what touches one project's stored history only
    /// (housekeeping's steps), so that a large account's pushes do not queue behind them.
    fn begin_project_write(
        &self,
        account_id: &AccountId,
        project_id: &ProjectId,
    ) -> impl std::future::Future<
        Output = Result<sqlx::Transaction<'static, Self::Database>, sqlx::Error>,
    > + Send;

    /// A write transaction in which no other write to `domain`'s SSO claims runs until it
    /// ends, on any replica. PostgreSQL takes a transaction advisory lock on the domain: two
    /// verifications racing would otherwise deadlock (each waits on the other's unique-index
    /// entry and row). SQLite admits one writer anyway.
    fn begin_domain_write(
        &self,
        domain: &str,
    ) -> impl std::future::Future<
        Output = Result<sqlx::Transaction<'static, Self::Database>, sqlx::Error>,
    > + Send;
}

impl BeginWrite for SqlitePool {
    type Database = sqlx::Sqlite;
    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, sqlx::Error> {
        self.begin_with("BEGIN IMMEDIATE").await
    }

    async fn begin_account_write(
        &self,
        _account_id: &AccountId,
    ) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, sqlx::Error> {
        self.begin_write().await
    }

    async fn begin_project_write(
        &self,
        _account_id: &AccountId,
        _project_id: &ProjectId,
    ) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, sqlx::Error> {
        self.begin_write().await
    }

    async fn begin_domain_write(
        &self,
        _domain: &str,
    ) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, sqlx::Error> {
        self.begin_write().await
    }
}

impl BeginWrite for PgPool {
    type Database = sqlx::Postgres;
    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, sqlx::Error> {
        self.begin().await
    }

    async fn begin_account_write(
        &self,
        account_id: &AccountId,
    ) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, sqlx::Error> {
        let mut tx = self.begin().await?;
        sqlx::query(locks::ACCOUNT_EXCLUSIVE)
            .bind(account_id)
            .execute(&mut *tx)
            .await?;
        Ok(tx)
    }

    async fn begin_project_write(
        &self,
        account_id: &AccountId,
        project_id: &ProjectId,
    ) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, sqlx::Error> {
        let mut tx = self.begin().await?;
        sqlx::query(locks::PROJECT_BY_ID)
            .bind(account_id)
            .bind(project_id)
            .execute(&mut *tx)
            .await?;
        Ok(tx)
    }

    async fn begin_domain_write(
        &self,
        domain: &str,
    ) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, sqlx::Error> {
        let mut tx = self.begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('sso:' || $1, 0))")
            .bind(domain)
            .execute(&mut *tx)
            .await?;
        Ok(tx)
    }
}

fn create_dir(path: &Path) -> Result<(), StoreError> {
    std::fs::create_dir_all(path).map_err(|source| StoreError::CreateDir {
        path: path.display().to_string(),
        source,
    })
}
