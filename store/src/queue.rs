//! The one durable outbox, of which the mail outbox and the webhook deliveries are two
//! instances: rows due at `next_attempt_at`, claimed for a lease by a conditional update (so
//! two replicas never send the same row at once, and a sender that dies leaves it due again
//! when its lease ends), counted while pending, forgotten some time after they finish.

use tidemark_domain::Millis;

use crate::stmt::Stmt;
use crate::tx::{read_one, EitherRow, WriteTx};
use crate::{Db, StoreError, Writer};

/// One outbox table.
pub(crate) struct Queue {
    pub table: &'static str,
    /// True of a row still to be delivered; `{t}` stands for the table's alias and dot, if
    /// any.
    pub pending: &'static str,
    /// The columns that name a row.
    pub key: &'static [&'static str],
    /// True of a finished row older than `$1`.
    pub finished_before: &'static str,
}

/// A claimed row: its key (in [`Queue::key`]'s order) and when it was due.
pub(crate) trait Claimable {
    fn key(&self) -> Vec<String>;
    fn due_at(&self) -> Millis;
}

impl Queue {
    fn pending_as(&self, alias: &str) -> String {
        self.pending.replace("{t}", alias)
    }

    /// Claims up to `max` rows due at `now` for `lease_ms`, each read with `select` (a
    /// `SELECT … FROM <table> o …` without its `WHERE`), and returns the ones this caller
    /// won, with `attempts` already counting this one in the table.
    pub async fn claim<R: EitherRow + Claimable>(
        &self,
        db: &Writer,
        select: &str,
        now: Millis,
        lease_ms: Millis,
        max: i64,
    ) -> Result<Vec<R>, StoreError> {
        let key_order: Vec<String> = self.key.iter().map(|k| format!("o.{k}")).collect();
        let due_sql = format!(
            "{select} WHERE {} AND o.next_attempt_at <= $1 ORDER BY o.next_attempt_at, {} \
             LIMIT $2",
            self.pending_as("o."),
            key_order.join(", ")
        );
        let key_match: Vec<String> = self
            .key
            .iter()
            .enumerate()
            .map(|(i, k)| format!("{k} = ${}", i + 2))
            .collect();
        let claim_sql = format!(
            "UPDATE {} SET next_attempt_at = $1, attempts = attempts + 1 WHERE {} AND {} \
             AND next_attempt_at = ${}",
            self.table,
            key_match.join(" AND "),
            self.pending_as(""),
            self.key.len() + 2
        );
        let mut tx = WriteTx::begin(db).await?;
        let due: Vec<R> = tx.fetch_all(Stmt::new(due_sql).bind(now).bind(max)).await?;
        let mut claimed = Vec::with_capacity(due.len());
        for row in due {
            let mut claim = Stmt::new(claim_sql.as_str()).bind(now + lease_ms);
            for part in row.key() {
                claim = claim.bind(part);
            }
            if tx.execute(claim.bind(row.due_at())).await? == 1 {
                claimed.push(row);
            }
        }
        tx.commit().await?;
        Ok(claimed)
    }

    /// Rows not finished yet (for operators, metrics and tests).
    pub async fn pending_count(&self, db: &Db) -> Result<i64, StoreError> {
        let sql = format!(
            "SELECT COUNT(*) FROM {} WHERE {}",
            self.table,
            self.pending_as("")
        );
        let (n,): (i64,) = read_one(db, Stmt::new(sql)).await?;
        Ok(n)
    }

    /// When the next pending row is due, if any is.
    pub async fn next_due_at(&self, db: &Db) -> Result<Option<Millis>, StoreError> {
        let sql = format!(
            "SELECT MIN(next_attempt_at) FROM {} WHERE {}",
            self.table,
            self.pending_as("")
        );
        let (at,): (Option<i64>,) = read_one(db, Stmt::new(sql)).await?;
        Ok(at)
    }

    /// Forgets rows finished before `before`; pending ones are kept whatever their age.
    pub async fn prune(&self, db: &Writer, before: Millis) -> Result<u64, StoreError> {
        let sql = format!("DELETE FROM {} WHERE {}", self.table, self.finished_before);
        let mut tx = WriteTx::begin(db).await?;
        let n = tx.execute(Stmt::new(sql).bind(before)).await?;
        tx.commit().await?;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pending_condition_reads_with_and_without_an_alias() {
        let q = Queue {
            table: "t",
            pending: "{t}sent_at IS NULL",
            key: &["id"],
            finished_before: "sent_at < $1",
        };
        assert_eq!(q.pending_as("o."), "o.sent_at IS NULL");
        assert_eq!(q.pending_as(""), "sent_at IS NULL");
    }
}
