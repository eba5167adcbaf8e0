//! Master-key rotation: every stored secret opened with whichever key sealed it and sealed
//! again under the current one.
//!
//! Safe while servers run: each row is replaced only if it still holds what was read, and
//! running servers with the same two keys read both forms. Running it twice is harmless; a
//! row neither key opens is counted and left as it is, and the command then fails.

use serde::Serialize;
use tidemark_store::sealed::{self, SealedColumn};
use tidemark_store::Writer;

use crate::crypto::{self, Keyring, OpenError, Reseal, SecretBox};

/// Rows read per query.
const PAGE: i64 = 500;

/// What a rotation did, per column and in all.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RotationReport {
    /// The current key's id, which every ciphertext now names.
    pub key_id: String,
    pub columns: Vec<ColumnReport>,
    pub resealed: u64,
    pub already_current: u64,
    /// Rows no key opens (sealed under a key the server no longer holds, or damaged).
    pub unreadable: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ColumnReport {
    pub column: &'static str,
    pub resealed: u64,
    pub already_current: u64,
    pub unreadable: u64,
    /// Keys of the unreadable rows (at most 20), to look into; never their content.
    pub unreadable_rows: Vec<String>,
}

fn purpose(column: SealedColumn) -> &'static str {
    match column {
        SealedColumn::LicenseKey => crypto::LICENSE_KEY_PURPOSE,
        SealedColumn::WebhookUrl | SealedColumn::WebhookSecret => crypto::WEBHOOK_PURPOSE,
        SealedColumn::LoginAttempt => crypto::LOGIN_ATTEMPT_PURPOSE,
    }
}

/// Re-encrypts every stored secret under `keys.current`.
pub async fn rotate_master_key(db: &Writer, keys: &Keyring) -> anyhow::Result<RotationReport> {
    let mut report = RotationReport {
        key_id: crypto::key_id(&keys.current),
        ..RotationReport::default()
    };
    for column in SealedColumn::ALL {
        let sealer = SecretBox::new(keys, purpose(column));
        let done = reseal_column(db, column, &sealer).await?;
        report.resealed += done.resealed;
        report.already_current += done.already_current;
        report.unreadable += done.unreadable;
        report.columns.push(done);
    }
    Ok(report)
}

async fn reseal_column(
    db: &Writer,
    column: SealedColumn,
    sealer: &SecretBox,
) -> anyhow::Result<ColumnReport> {
    let mut done = ColumnReport {
        column: column.name(),
        ..ColumnReport::default()
    };
    let mut after = String::new();
    loop {
        let page = sealed::sealed_after(db.db(), column, &after, PAGE).await?;
        let Some((last, _)) = page.last() else {
            break;
        };
        after = last.clone();
        for (key, old) in page {
            match sealer.reseal(&old) {
                Ok(Reseal::Current) => done.already_current += 1,
                Ok(Reseal::Resealed(new)) => {
                    // Not replaced: the row changed or went since it was read, and whatever
                    // replaced it was sealed under the current key.
                    if sealed::replace_sealed(db, column, &key, &old, &new).await? {
                        done.resealed += 1;
                    } else {
                        done.already_current += 1;
                    }
                }
                Err(OpenError::Damaged | OpenError::UnknownKey(_)) => {
                    done.unreadable += 1;
                    if done.unreadable_rows.len() < 20 {
                        done.unreadable_rows.push(key);
                    }
                }
            }
        }
    }
    Ok(done)
}
