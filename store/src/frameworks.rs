//! Custom frameworks (issue 47): an account's own control sets, set and removed with an audit
//! row, and judged at once against the latest scan of each of the account's branches (later
//! scans are judged by their push).

use tidemark_domain::audit::{Action, AuditContext};
use tidemark_domain::frameworks::ValidFramework;
use tidemark_domain::Millis;

use crate::audit::Change;
use crate::posture::{custom_rows, insert_statement, judge, scan_statuses, PostureScan};
use crate::stmt::Stmt;
use crate::tx::{audited_write, WriteTx};
use crate::{on_db, AccountId, Db, ProjectId, StoreError, Writer};

/// A custom framework as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFramework {
    pub framework: ValidFramework,
    pub created_at: Millis,
    pub updated_at: Millis,
    pub updated_by: String,
}

#[derive(sqlx::FromRow)]
struct Row {
    document: String,
    created_at: Millis,
    updated_at: Millis,
    updated_by: String,
}

impl Row {
    fn parse(self) -> Option<StoredFramework> {
        Some(StoredFramework {
            framework: ValidFramework::from_stored(&self.document)?,
            created_at: self.created_at,
            updated_at: self.updated_at,
            updated_by: self.updated_by,
        })
    }
}

/// The account's custom frameworks, by id.
pub async fn list_frameworks(
    db: &Db,
    account_id: &AccountId,
) -> Result<Vec<StoredFramework>, StoreError> {
    let rows: Vec<Row> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT document, created_at, updated_at, updated_by FROM custom_frameworks \
             WHERE account_id = $1 ORDER BY id",
        )
        .bind(account_id)
        .fetch_all(pool)
        .await
    })?;
    Ok(rows.into_iter().filter_map(Row::parse).collect())
}

/// The custom frameworks posture judges for the account: its documents while its licence
/// has `custom_frameworks`, none otherwise (they are kept, and count again if it comes back).
pub async fn in_force(db: &Db, account_id: &AccountId) -> Result<Vec<ValidFramework>, StoreError> {
    let licensed = crate::licenses::find_license_for_account(db, account_id)
        .await?
        .is_some_and(|l| {
            l.features()
                .contains(&tidemark_wire::Feature::CustomFrameworks)
        });
    if !licensed {
        return Ok(Vec::new());
    }
    Ok(list_frameworks(db, account_id)
        .await?
        .into_iter()
        .map(|f| f.framework)
        .collect())
}

/// One of the account's custom frameworks.
pub async fn find_framework(
    db: &Db,
    account_id: &AccountId,
    id: &str,
) -> Result<Option<StoredFramework>, StoreError> {
    let row: Option<Row> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT document, created_at, updated_at, updated_by FROM custom_frameworks \
             WHERE account_id = $1 AND id = $2",
        )
        .bind(account_id)
        .bind(id)
        .fetch_optional(pool)
        .await
    })?;
    Ok(row.and_then(Row::parse))
}

fn controls(n: usize) -> String {
    format!("{n} {}", if n == 1 { "control" } else { "controls" })
}

/// Sets the framework (creating or replacing it) with an audit row; `true` when it is new.
pub async fn set_framework(
    db: &Writer,
    account_id: &AccountId,
    framework: &ValidFramework,
    audit: &AuditContext,
) -> Result<bool, StoreError> {
    let mut tx = WriteTx::begin_account(db, account_id).await?;
    let before: Option<(String,)> = tx
        .fetch_optional(
            Stmt::new("SELECT document FROM custom_frameworks WHERE account_id = $1 AND id = $2")
                .bind(account_id)
                .bind(framework.id()),
        )
        .await?;
    let before = before
        .and_then(|(doc,)| ValidFramework::from_stored(&doc))
        .map(|f| {
            format!(
                "{}: {}",
                f.document().title,
                controls(f.document().controls.len())
            )
        });
    tx.execute(
        Stmt::new(
            "INSERT INTO custom_frameworks (account_id, id, document, created_at, updated_at, \
             updated_by) VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (account_id, id) DO UPDATE SET document = excluded.document, \
             updated_at = excluded.updated_at, updated_by = excluded.updated_by",
        )
        .bind(account_id)
        .bind(framework.id())
        .bind(framework.stored())
        .bind(audit.at)
        .bind(audit.at)
        .bind(audit.actor.name()),
    )
    .await?;
    let created = before.is_none();
    let document = framework.document();
    tx.audit(
        audit,
        Change {
            account_id: Some(account_id),
            action: Action::FrameworkSet,
            target: framework.id().to_owned(),
            before,
            after: Some(format!(
                "{}: {}",
                document.title,
                controls(document.controls.len())
            )),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(created)
}

/// Removes the framework and its posture; `false` when the account has no such framework.
pub async fn delete_framework(
    db: &Writer,
    account_id: &AccountId,
    id: &str,
    audit: &AuditContext,
) -> Result<bool, StoreError> {
    let lookup =
        Stmt::new("SELECT document FROM custom_frameworks WHERE account_id = $1 AND id = $2")
            .bind(account_id)
            .bind(id);
    let posture_name = format!("{}{id}", tidemark_domain::frameworks::POSTURE_PREFIX);
    audited_write(db, account_id, audit, lookup, |(document,): (String,)| {
        let before = ValidFramework::from_stored(&document).map(|f| {
            format!(
                "{}: {}",
                f.document().title,
                controls(f.document().controls.len())
            )
        });
        let mut writes = vec![
            Stmt::new(
                "DELETE FROM scan_posture WHERE framework = $1 AND project_id IN \
                 (SELECT id FROM projects WHERE account_id = $2)",
            )
            .bind(posture_name.as_str())
            .bind(account_id),
            Stmt::new("DELETE FROM custom_frameworks WHERE account_id = $1 AND id = $2")
                .bind(account_id)
                .bind(id),
        ];
        // The projects page's roll-up no longer counts it.
        writes.extend(crate::posture::summary::rebuild_statements(account_id));
        let change = Change {
            account_id: Some(account_id),
            action: Action::FrameworkDeleted,
            target: id.to_owned(),
            before,
            after: None,
        };
        (writes, change)
    })
    .await
}

#[derive(sqlx::FromRow)]
struct Head {
    branch_id: String,
    project_id: ProjectId,
    seq: i64,
    scanned_at: Millis,
}

/// Judges `framework` against the latest scan of each of the account's branches and pull
/// requests (whose findings are still kept), with triage as it holds at `now`, replacing what
/// an earlier version of it wrote there. Each scan is its own transaction. Returns how many
/// scans it judged.
pub async fn judge_latest_scans(
    db: &Writer,
    account_id: &AccountId,
    framework: &ValidFramework,
    now: Millis,
) -> Result<u64, StoreError> {
    let heads: Vec<Head> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT b.id AS branch_id, b.project_id, s.seq, s.scanned_at FROM branches b \
             JOIN projects p ON p.id = b.project_id \
             JOIN scans s ON s.project_id = b.project_id AND s.seq = b.head_seq \
             WHERE p.account_id = $1 AND (s.findings_stored IS NULL OR s.findings_stored <> $2) \
             ORDER BY b.project_id, b.id",
        )
        .bind(account_id)
        .bind(crate::spans::THINNED)
        .fetch_all(pool)
        .await
    })?;
    let name = framework.posture_name();
    let mut judged = 0;
    for head in &heads {
        let findings = scan_statuses(db, &head.project_id, head.seq).await?;
        let set_aside = crate::posture::set_aside_now(db, &head.branch_id, now).await?;
        let rules = judge(&findings, |rule, resource| {
            set_aside.contains(&(rule.to_owned(), resource.to_owned()))
        });
        let rows = custom_rows(std::slice::from_ref(framework), &rules, &Default::default());
        let scan = PostureScan {
            project_id: &head.project_id,
            seq: head.seq,
            line_id: &head.branch_id,
            scanned_at: head.scanned_at,
        };
        let mut tx = WriteTx::begin_account(db, account_id).await?;
        tx.execute(
            Stmt::new(
                "DELETE FROM scan_posture WHERE project_id = $1 AND scan_seq = $2 \
                 AND framework = $3",
            )
            .bind(&head.project_id)
            .bind(head.seq)
            .bind(name.as_str()),
        )
        .await?;
        if let Some(stmt) = insert_statement(&scan, &rows) {
            tx.execute(stmt).await?;
        }
        tx.commit().await?;
        judged += 1;
    }
    // The projects page's roll-up counts the default lines' new rows: summed once, after
    // every scan (a push meanwhile moved it by rows this sum reads again).
    let mut tx = WriteTx::begin_account(db, account_id).await?;
    for stmt in crate::posture::summary::rebuild_statements(account_id) {
        tx.execute(stmt).await?;
    }
    tx.commit().await?;
    Ok(judged)
}
