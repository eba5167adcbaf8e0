//! One write transaction on either backend, taking statements as values ([`Stmt`]): the
//! shape every audited account write shares (lock the account, read, write, record the
//! change, commit) written once instead of once per backend or per macro. Dropped without
//! [`WriteTx::commit`], it rolls back.

use crate::AccountId;
use sqlx::postgres::PgRow;
use sqlx::sqlite::SqliteRow;
use sqlx::{FromRow, Postgres, Sqlite, Transaction};
use tidemark_domain::audit::AuditContext;

use crate::audit::Change;
use crate::stmt::{add_args, Stmt};
use crate::{BeginWrite as _, Db, Writer};

/// A row type both backends decode (every `#[derive(FromRow)]` struct and tuple of the
/// schema's column types is one).
pub(crate) trait EitherRow:
    for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow> + Send + Unpin
{
}
impl<T> EitherRow for T where
    T: for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow> + Send + Unpin
{
}

pub(crate) enum WriteTx {
    Sqlite(Transaction<'static, Sqlite>),
    Postgres(Transaction<'static, Postgres>),
}

/// Runs `$body` with `$q` bound to `stmt`'s query for the transaction's backend.
macro_rules! with_query {
    ($self:ident, $stmt:ident, $as:ty, |$q:ident, $conn:ident| $body:expr) => {{
        let Stmt { sql, args } = $stmt;
        match $self {
            WriteTx::Sqlite(tx) => {
                let mut out = sqlx::sqlite::SqliteArguments::default();
                add_args::<Sqlite>(&mut out, args)?;
                let $q = sqlx::query_as_with::<Sqlite, $as, _>(&sql, out);
                let $conn = &mut **tx;
                $body
            }
            WriteTx::Postgres(tx) => {
                let mut out = sqlx::postgres::PgArguments::default();
                add_args::<Postgres>(&mut out, args)?;
                let $q = sqlx::query_as_with::<Postgres, $as, _>(&sql, out);
                let $conn = &mut **tx;
                $body
            }
        }
    }};
}

impl WriteTx {
    /// A transaction in which no other write to `account_id`'s data runs until it ends (see
    /// [`crate::BeginWrite::begin_account_write`]).
    pub async fn begin_account(db: &Writer, account_id: &AccountId) -> Result<Self, sqlx::Error> {
        Ok(match db.db() {
            Db::Sqlite { writer, .. } => {
                WriteTx::Sqlite(writer.begin_account_write(account_id).await?)
            }
            Db::Postgres(pool) => WriteTx::Postgres(pool.begin_account_write(account_id).await?),
        })
    }

    /// Rows changed.
    pub async fn execute(&mut self, stmt: Stmt) -> Result<u64, sqlx::Error> {
        let Stmt { sql, args } = stmt;
        Ok(match self {
            WriteTx::Sqlite(tx) => {
                let mut out = sqlx::sqlite::SqliteArguments::default();
                add_args::<Sqlite>(&mut out, args)?;
                sqlx::query_with(&sql, out)
                    .execute(&mut **tx)
                    .await?
                    .rows_affected()
            }
            WriteTx::Postgres(tx) => {
                let mut out = sqlx::postgres::PgArguments::default();
                add_args::<Postgres>(&mut out, args)?;
                sqlx::query_with(&sql, out)
                    .execute(&mut **tx)
                    .await?
                    .rows_affected()
            }
        })
    }

    pub async fn fetch_optional<T: EitherRow>(
        &mut self,
        stmt: Stmt,
    ) -> Result<Option<T>, sqlx::Error> {
        with_query!(self, stmt, T, |q, conn| q.fetch_optional(conn).await)
    }

    pub async fn fetch_one<T: EitherRow>(&mut self, stmt: Stmt) -> Result<T, sqlx::Error> {
        with_query!(self, stmt, T, |q, conn| q.fetch_one(conn).await)
    }

    pub async fn fetch_all<T: EitherRow>(&mut self, stmt: Stmt) -> Result<Vec<T>, sqlx::Error> {
        with_query!(self, stmt, T, |q, conn| q.fetch_all(conn).await)
    }

    /// Records `change` in the audit log, in this transaction: it is kept exactly when the
    /// change is.
    pub async fn audit(
        &mut self,
        ctx: &AuditContext,
        change: Change<'_>,
    ) -> Result<(), sqlx::Error> {
        let stmt = Stmt::new(crate::audit::INSERT_SQL)
            .bind(tidemark_domain::ids::new_audit_id())
            .bind(change.account_id.cloned())
            .bind(ctx.at)
            .bind(ctx.actor.kind())
            .bind(ctx.actor.name())
            .bind(ctx.actor.user_id().map(str::to_owned))
            .bind(ctx.client_ip.clone())
            .bind(change.action.as_str())
            .bind(change.target)
            .bind(change.before)
            .bind(change.after);
        self.execute(stmt).await.map(drop)
    }

    pub async fn commit(self) -> Result<(), sqlx::Error> {
        match self {
            WriteTx::Sqlite(tx) => tx.commit().await,
            WriteTx::Postgres(tx) => tx.commit().await,
        }
    }
}

impl WriteTx {
    /// A write transaction that locks no account (SQLite: `BEGIN IMMEDIATE`).
    pub async fn begin(db: &Writer) -> Result<Self, sqlx::Error> {
        Ok(match db.db() {
            Db::Sqlite { writer, .. } => WriteTx::Sqlite(writer.begin_write().await?),
            Db::Postgres(pool) => WriteTx::Postgres(pool.begin_write().await?),
        })
    }
}

/// One row read through the readers (SQLite) or under the request's deadline (PostgreSQL),
/// as [`crate::on_db!`] reads.
pub(crate) async fn read_one<T: EitherRow>(db: &Db, stmt: Stmt) -> Result<T, crate::StoreError> {
    let Stmt { sql, args } = stmt;
    match db {
        Db::Sqlite { pool, .. } => {
            let mut out = sqlx::sqlite::SqliteArguments::default();
            add_args::<Sqlite>(&mut out, args)?;
            Ok(sqlx::query_as_with::<Sqlite, T, _>(&sql, out)
                .fetch_one(pool)
                .await?)
        }
        Db::Postgres(pool) => {
            let mut out = sqlx::postgres::PgArguments::default();
            add_args::<Postgres>(&mut out, args)?;
            let read = sqlx::query_as_with::<Postgres, T, _>(&sql, out).fetch_one(pool);
            crate::fault::bounded(async { Ok(read.await?) }).await
        }
    }
}

/// Every row a statement reads, as [`read_one`] reads.
pub(crate) async fn read_all<T: EitherRow>(
    db: &Db,
    stmt: Stmt,
) -> Result<Vec<T>, crate::StoreError> {
    let Stmt { sql, args } = stmt;
    match db {
        Db::Sqlite { pool, .. } => {
            let mut out = sqlx::sqlite::SqliteArguments::default();
            add_args::<Sqlite>(&mut out, args)?;
            Ok(sqlx::query_as_with::<Sqlite, T, _>(&sql, out)
                .fetch_all(pool)
                .await?)
        }
        Db::Postgres(pool) => {
            let mut out = sqlx::postgres::PgArguments::default();
            add_args::<Postgres>(&mut out, args)?;
            let read = sqlx::query_as_with::<Postgres, T, _>(&sql, out).fetch_all(pool);
            crate::fault::bounded(async { Ok(read.await?) }).await
        }
    }
}

/// The shape most audited account writes share: read what the change is about with `lookup`
/// (no row: it is not this account's, nothing changes, `false`), then write what `plan` makes
/// of it and record its change, in one account-locked transaction.
pub(crate) async fn audited_write<'a, T: EitherRow>(
    db: &Writer,
    account_id: &AccountId,
    audit: &AuditContext,
    lookup: Stmt,
    plan: impl FnOnce(T) -> (Vec<Stmt>, Change<'a>),
) -> Result<bool, crate::StoreError> {
    let mut tx = WriteTx::begin_account(db, account_id).await?;
    let Some(found) = tx.fetch_optional::<T>(lookup).await? else {
        return Ok(false);
    };
    let (writes, change) = plan(found);
    for stmt in writes {
        tx.execute(stmt).await?;
    }
    tx.audit(audit, change).await?;
    tx.commit().await?;
    Ok(true)
}
