//! The findings inbox's saved views: each member's named filters, per account.

use tidemark_domain::Millis;

use crate::stmt::Stmt;
use crate::tx::read_all;
use crate::{on_db_write, AccountId, Db, StoreError, Writer};

/// Views one person may keep in one account.
pub const MAX_VIEWS: i64 = 50;

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct SavedView {
    pub id: String,
    pub name: String,
    /// The inbox's query string, without `?` or a cursor.
    pub query: String,
    pub created_at: Millis,
}

pub async fn list_views(
    db: &Db,
    account_id: &AccountId,
    user_id: &str,
) -> Result<Vec<SavedView>, StoreError> {
    read_all(
        db,
        Stmt::new(
            "SELECT id, name, query, created_at FROM saved_views \
             WHERE account_id = $1 AND user_id = $2 ORDER BY name",
        )
        .bind(account_id.to_string())
        .bind(user_id),
    )
    .await
}

/// Saves `query` under `name` for the member (replacing a view of that name). `false` when
/// they already keep [`MAX_VIEWS`] others, or are no longer a member.
pub async fn save_view(
    db: &Writer,
    account_id: &AccountId,
    user_id: &str,
    name: &str,
    query: &str,
    now: Millis,
) -> Result<bool, StoreError> {
    let id = tidemark_domain::ids::random_base62(20);
    let saved = on_db_write!(db, pool => {
        // One statement: the membership check, the cap and the write cannot be split.
        sqlx::query(
            "INSERT INTO saved_views (id, account_id, user_id, name, query, created_at) \
             SELECT $1, m.account_id, m.user_id, $2, $3, $4 FROM members m \
             WHERE m.account_id = $5 AND m.user_id = $6 \
             AND (SELECT COUNT(*) FROM saved_views v WHERE v.account_id = $5 \
                  AND v.user_id = $6 AND v.name <> $2) < $7 \
             ON CONFLICT (account_id, user_id, name) DO UPDATE SET query = excluded.query, \
             created_at = excluded.created_at",
        )
        .bind(format!("view_{id}"))
        .bind(name)
        .bind(query)
        .bind(now)
        .bind(account_id)
        .bind(user_id)
        .bind(MAX_VIEWS)
        .execute(pool)
        .await?
        .rows_affected()
            == 1
    });
    Ok(saved)
}

/// Removes one of the member's views; `false` when they have none by that id.
pub async fn delete_view(
    db: &Writer,
    account_id: &AccountId,
    user_id: &str,
    id: &str,
) -> Result<bool, StoreError> {
    let deleted = on_db_write!(db, pool => {
        sqlx::query("DELETE FROM saved_views WHERE id = $1 AND account_id = $2 AND user_id = $3")
            .bind(id)
            .bind(account_id)
            .bind(user_id)
            .execute(pool)
            .await?
            .rows_affected()
            == 1
    });
    Ok(deleted)
}
