//! E-mail alerts: each member's choice, per account, of the push outcomes that mail them,
//! and the statement a push runs to queue those mails in its own transaction.

use crate::AccountId;
use tidemark_domain::Millis;

use crate::stmt::Stmt;
use crate::Writer;
use crate::{on_db, on_db_write, Db, StoreError};

/// The outbox kind of an alert mail.
pub const ALERT_MAIL_KIND: &str = "push_alert";

/// What a member wants to hear about. The default is nothing about pushes (mail only by
/// choice) but the warning of an API key about to expire, which admins get unless they turn
/// it off: an expired key breaks CI without a word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlertPrefs {
    pub gate_failed: bool,
    pub score_regressed: bool,
    /// A push on a default branch drifted (licences with drift detection).
    pub posture_drifted: bool,
    /// An API key of the account expires within a week (sent to admins only).
    pub key_expiring: bool,
}

impl Default for AlertPrefs {
    fn default() -> Self {
        Self {
            gate_failed: false,
            score_regressed: false,
            posture_drifted: false,
            key_expiring: true,
        }
    }
}

/// The member's preferences in the account (the default when never set).
pub async fn alert_prefs(
    db: &Db,
    account_id: &AccountId,
    user_id: &str,
) -> Result<AlertPrefs, StoreError> {
    let row: Option<(bool, bool, bool, bool)> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT gate_failed, score_regressed, posture_drifted, key_expiring FROM alert_prefs \
             WHERE account_id = $1 AND user_id = $2",
        )
        .bind(account_id)
        .bind(user_id)
        .fetch_optional(pool)
        .await
    })?;
    Ok(row.map_or_else(
        AlertPrefs::default,
        |(gate_failed, score_regressed, posture_drifted, key_expiring)| AlertPrefs {
            gate_failed,
            score_regressed,
            posture_drifted,
            key_expiring,
        },
    ))
}

/// Stores the member's preferences. `false` (and nothing stored) when the user is not a
/// member of the account.
pub async fn set_alert_prefs(
    db: &Writer,
    account_id: &AccountId,
    user_id: &str,
    prefs: AlertPrefs,
    now: Millis,
) -> Result<bool, StoreError> {
    let stored = on_db_write!(db, pool => {
        // One statement: the membership check and the write cannot be split by a removal.
        sqlx::query(
            "INSERT INTO alert_prefs (account_id, user_id, gate_failed, score_regressed, \
             posture_drifted, key_expiring, updated_at) \
             SELECT m.account_id, m.user_id, $1, $2, $3, $4, $5 FROM members m \
             WHERE m.account_id = $6 AND m.user_id = $7 \
             ON CONFLICT (account_id, user_id) DO UPDATE SET \
             gate_failed = excluded.gate_failed, score_regressed = excluded.score_regressed, \
             posture_drifted = excluded.posture_drifted, key_expiring = excluded.key_expiring, \
             updated_at = excluded.updated_at",
        )
        .bind(prefs.gate_failed)
        .bind(prefs.score_regressed)
        .bind(prefs.posture_drifted)
        .bind(prefs.key_expiring)
        .bind(now)
        .bind(account_id)
        .bind(user_id)
        .execute(pool)
        .await?
        .rows_affected()
            == 1
    });
    Ok(stored)
}

/// The pushed scan an alert is about, and what it raised.
pub(crate) struct AlertScan<'a> {
    pub account_id: &'a AccountId,
    pub project_id: &'a str,
    pub seq: i64,
    pub gate_failed: bool,
    pub score_regressed: bool,
    pub posture_drifted: bool,
    pub now: Millis,
}

/// One statement that queues one mail per member who asked for what this push raised — one
/// per push and person however many reasons apply — or `None` when the push raised nothing
/// an alert is about. Mail ids are `alr_<random>_<user id>`: unique per push and member.
pub(crate) fn enqueue_statement(scan: &AlertScan<'_>) -> Option<Stmt> {
    // A literal condition rather than bound flags: a few fixed statement texts, each
    // prepared once.
    let reasons: Vec<&str> = [
        (scan.gate_failed, "ap.gate_failed"),
        (scan.score_regressed, "ap.score_regressed"),
        (scan.posture_drifted, "ap.posture_drifted"),
    ]
    .into_iter()
    .filter_map(|(raised, column)| raised.then_some(column))
    .collect();
    let wanted = match reasons.as_slice() {
        [] => return None,
        [one] => (*one).to_owned(),
        many => format!("({})", many.join(" OR ")),
    };
    let prefix = format!("alr_{}_", tidemark_domain::ids::random_base62(16));
    Some(
        Stmt::new(format!(
            "INSERT INTO mail_outbox (id, kind, recipient, account_id, project_id, scan_seq, \
             created_at, next_attempt_at) \
             SELECT CAST($1 AS TEXT) || ap.user_id, '{ALERT_MAIL_KIND}', u.email, $2, $3, $4, $5, $6 \
             FROM alert_prefs ap \
             JOIN members m ON m.account_id = ap.account_id AND m.user_id = ap.user_id \
             JOIN users u ON u.id = ap.user_id \
             WHERE ap.account_id = $7 AND {wanted}"
        ))
        .bind(prefix)
        .bind(scan.account_id)
        .bind(scan.project_id)
        .bind(scan.seq)
        .bind(scan.now)
        .bind(scan.now)
        .bind(scan.account_id),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(gate_failed: bool, score_regressed: bool) -> Option<Stmt> {
        enqueue_statement(&AlertScan {
            account_id: &AccountId::trusted("acc_1"),
            project_id: "prj_1",
            seq: 3,
            gate_failed,
            score_regressed,
            posture_drifted: false,
            now: 1,
        })
    }

    #[test]
    fn a_push_that_raised_nothing_queues_nothing() {
        assert!(scan(false, false).is_none());
    }

    #[test]
    fn each_outcome_selects_the_members_who_asked_for_it() {
        let sql = |g, r| scan(g, r).map(|s| s.sql).unwrap_or_default();
        assert!(sql(true, false).ends_with("AND ap.gate_failed"));
        assert!(sql(false, true).ends_with("AND ap.score_regressed"));
        assert!(sql(true, true).ends_with("(ap.gate_failed OR ap.score_regressed)"));
        let drifted = enqueue_statement(&AlertScan {
            account_id: &AccountId::trusted("acc_1"),
            project_id: "prj_1",
            seq: 3,
            gate_failed: true,
            score_regressed: false,
            posture_drifted: true,
            now: 1,
        });
        assert!(drifted
            .unwrap()
            .sql
            .ends_with("(ap.gate_failed OR ap.posture_drifted)"));
    }
}
