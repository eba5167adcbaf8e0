//! Which database, how this replica's pool waits for it, and who applies migrations.

use std::fmt;
use std::path::Path;
use std::time::Duration;

use super::{ConfigError, Vars};

/// `TIDEMARK_MIGRATE`: `auto` (the default) applies pending migrations at start; `never` leaves
/// the schema to `tidemark-server migrate` (a deploy step of its own), and `serve` answers
/// `/readyz` with 503 until the schema is current.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigratePolicy {
    Auto,
    Never,
}

/// A database URL may carry a password: keep it out of logs.
#[derive(Clone)]
pub struct DatabaseUrl(String);

impl DatabaseUrl {
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `sqlite` or `postgres`: says which backend without giving anything away.
    pub fn scheme(&self) -> &str {
        self.0.split(':').next().unwrap_or("")
    }
}

// Not `redacted_debug!`: the scheme says which backend without giving anything away.
impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DatabaseUrl({}://<redacted>)", self.scheme())
    }
}

#[derive(Debug, Clone)]
pub struct DatabaseConfig {
    pub url: DatabaseUrl,
    /// Whether `serve` and the commands that write apply pending migrations.
    pub migrate: MigratePolicy,
    /// Connections this replica's database pool opens at most (`TIDEMARK_DB_MAX_CONNECTIONS`,
    /// default 16; on SQLite, readers beside the one writer).
    pub max_connections: u32,
    /// How long a request waits for a database connection before it is answered `503
    /// database_unavailable` (`TIDEMARK_DB_ACQUIRE_TIMEOUT_SECONDS`, default 3).
    pub acquire_timeout_seconds: u32,
    /// How long a request waits on one database call of a connection it holds
    /// (`TIDEMARK_DB_STATEMENT_TIMEOUT_SECONDS`, default 8); a write goes on behind the
    /// answer, and its retry is answered as a replay.
    pub statement_timeout_seconds: u32,
    /// SQLite: plan each push on a read snapshot while it waits for the writer
    /// (`TIDEMARK_SQLITE_PLAN_PUSHES_EARLY`, 1 or 0; see docs/architecture.md).
    pub plan_pushes_early: bool,
}

/// Whether SQLite plans pushes early when the variable is unset: off, since on two cores the
/// writer's check of a plan cost about half the head read it replaced and the planners took
/// CPU from the writer (docs/benchmarks.md).
pub const PLAN_PUSHES_EARLY: bool = false;

impl DatabaseConfig {
    pub fn read(vars: &Vars, data_dir: &Path) -> Result<Self, ConfigError> {
        let url = DatabaseUrl(
            vars.get("DATABASE_URL")
                .unwrap_or_else(|| format!("sqlite://{}", data_dir.join("tidemark.db").display())),
        );
        let migrate = match vars.get("TIDEMARK_MIGRATE").as_deref() {
            None | Some("auto") => MigratePolicy::Auto,
            Some("never") => MigratePolicy::Never,
            Some(other) => {
                return Err(ConfigError::invalid(
                    "TIDEMARK_MIGRATE",
                    format!("expected auto or never, got {other:?}"),
                ))
            }
        };
        let max_connections = vars.number("TIDEMARK_DB_MAX_CONNECTIONS", 16)?;
        if !(1..=1000).contains(&max_connections) {
            return Err(ConfigError::invalid(
                "TIDEMARK_DB_MAX_CONNECTIONS",
                format!("between 1 and 1000, got {max_connections}"),
            ));
        }
        // Past a minute a CI job or a load balancer has given up long before the answer.
        let acquire_timeout_seconds =
            vars.seconds_at_most("TIDEMARK_DB_ACQUIRE_TIMEOUT_SECONDS", 3, 60, "")?;
        let statement_timeout_seconds =
            vars.seconds_at_most("TIDEMARK_DB_STATEMENT_TIMEOUT_SECONDS", 8, 60, "")?;
        let plan_pushes_early = match vars.get("TIDEMARK_SQLITE_PLAN_PUSHES_EARLY") {
            None => PLAN_PUSHES_EARLY,
            Some(_) => vars.flag("TIDEMARK_SQLITE_PLAN_PUSHES_EARLY")?,
        };
        Ok(Self {
            url,
            migrate,
            max_connections,
            acquire_timeout_seconds,
            statement_timeout_seconds,
            plan_pushes_early,
        })
    }

    /// How this replica's pools wait for the database.
    pub fn pool_settings(&self) -> tidemark_store::PoolSettings {
        tidemark_store::PoolSettings {
            max_connections: self.max_connections,
            acquire_timeout: Duration::from_secs(self.acquire_timeout_seconds.into()),
        }
    }

    /// How long a request waits on one database call (see `tidemark_store::fault`).
    pub fn statement_timeout(&self) -> Duration {
        Duration::from_secs(self.statement_timeout_seconds.into())
    }

    pub fn summary(&self) -> String {
        format!(
            "{}, {} connections at most, waits {} s for one and {} s on a call, migrations {}",
            self.url.scheme(),
            self.max_connections,
            self.acquire_timeout_seconds,
            self.statement_timeout_seconds,
            match self.migrate {
                MigratePolicy::Auto => "applied at start",
                MigratePolicy::Never => "left to `migrate`",
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::config;

    #[test]
    fn defaults_put_sqlite_in_the_data_dir() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().to_str().unwrap();
        let c = config(&[("TIDEMARK_DATA_DIR", data)]).unwrap();
        assert_eq!(
            c.database.url.expose(),
            format!("sqlite://{data}/tidemark.db")
        );
        assert_eq!(c.database.pool_settings().max_connections, 16);
        assert_eq!(c.database.statement_timeout().as_secs(), 8);
    }

    #[test]
    fn timeouts_stop_at_a_minute_and_the_password_never_shows() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().to_str().unwrap();
        let long = config(&[
            ("TIDEMARK_DATA_DIR", data),
            ("TIDEMARK_DB_STATEMENT_TIMEOUT_SECONDS", "61"),
        ])
        .unwrap_err()
        .to_string();
        assert!(long.contains("at most 60 seconds, got 61"), "{long}");
        let c = config(&[
            ("TIDEMARK_DATA_DIR", data),
            ("DATABASE_URL", "postgres://u:hunter2@db/tidemark"),
            ("TIDEMARK_MIGRATE", "never"),
        ])
        .unwrap();
        let summary = c.database.summary();
        assert!(summary.starts_with("postgres,"), "{summary}");
        assert!(summary.contains("left to `migrate`"), "{summary}");
        assert!(!summary.contains("hunter2") && !format!("{c:?}").contains("hunter2"));
    }
}
