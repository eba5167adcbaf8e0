//! Master-key rotation: every stored secret opened with whichever key sealed it and sealed
//! again under the current one.
//!
//! Safe while servers run: each row is replaced only if it still holds what was read, and
//! running servers with the same two keys read both forms. Running it twice is harmless; a
//! row neither key opens is counted and left as it is, and the command then fails.

use serde::Serialize;
use tidemark_store::sealed::{self, SealedColumn};
use tidemark_store::Writer;

use tidemark_services::crypto::{self, Keyring, OpenError, Reseal, SecretBox};

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
        SealedColumn::WebhookUrl
        | SealedColumn::WebhookSecret
        | SealedColumn::VendorWebhookUrl
        | SealedColumn::VendorWebhookSecret => crypto::WEBHOOK_PURPOSE,
        SealedColumn::LoginAttempt => crypto::LOGIN_ATTEMPT_PURPOSE,
        SealedColumn::SigningKey => crypto::SIGNING_KEY_PURPOSE,
        SealedColumn::Handover => crypto::HANDOVER_PURPOSE,
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

/// Stored secrets sealed under master keys this server was not given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKeys {
    /// (column, key id, rows).
    pub found: Vec<(&'static str, String, i64)>,
    pub current: String,
    pub previous: Option<String>,
}

impl std::fmt::Display for UnknownKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list: Vec<String> = self
            .found
            .iter()
            .map(|(column, id, rows)| format!("key id {id} ({rows} rows of {column})"))
            .collect();
        write!(
            f,
            "stored secrets are sealed under {}, but TIDEMARK_MASTER_KEY is key id {}{}; start \
             with the key that sealed them as TIDEMARK_MASTER_KEY (or as \
             TIDEMARK_MASTER_KEY_PREVIOUS while rotating away from it), or set \
             TIDEMARK_ALLOW_UNKNOWN_MASTER_KEYS=1 to serve anyway and give up what only that \
             key opens (see docs/operations.md)",
            list.join(", "),
            self.current,
            self.previous
                .as_ref()
                .map(|p| format!(" and TIDEMARK_MASTER_KEY_PREVIOUS is key id {p}"))
                .unwrap_or_default()
        )
    }
}

impl std::error::Error for UnknownKeys {}

/// Which stored secrets neither `keys.current` nor `keys.previous` opens, by the key ids in
/// their ciphertexts (no secret is opened). Values sealed before ciphertexts carried an id
/// cannot be told apart this way and are not counted.
pub async fn unknown_keys(
    db: &tidemark_store::Db,
    keys: &Keyring,
) -> anyhow::Result<Option<UnknownKeys>> {
    let current = crypto::key_id(&keys.current);
    let previous = keys.previous.as_ref().map(crypto::key_id);
    let mut found = Vec::new();
    for column in SealedColumn::ALL {
        for (id, rows) in sealed::key_ids(db, column).await? {
            let Some(id) = id else { continue };
            if id != current && Some(&id) != previous.as_ref() {
                found.push((column.name(), id, rows));
            }
        }
    }
    Ok((!found.is_empty()).then_some(UnknownKeys {
        found,
        current,
        previous,
    }))
}
