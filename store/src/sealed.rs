//! Every column that holds a secret sealed under the master key, so a key rotation can find
//! and rewrite them all. The store never opens a sealed value: the server does.

use crate::{on_db, on_db_write, Db, StoreError, Writer};

/// A column of sealed values. A migration that adds one must add it here (a test reads the
/// migrations and holds this list to them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SealedColumn {
    /// The raw license key, kept so resend can mail it again.
    LicenseKey,
    /// A webhook endpoint's URL (it may carry a credential).
    WebhookUrl,
    /// A webhook endpoint's signing secret.
    WebhookSecret,
    /// A sign-in attempt between redirect and callback (minutes long).
    LoginAttempt,
    /// A verdict-signing key's private half.
    SigningKey,
    /// A secret a form made, waiting minutes at most for the page that shows it once.
    Handover,
    /// A vendor webhook endpoint's URL.
    VendorWebhookUrl,
    /// A vendor webhook endpoint's signing secret.
    VendorWebhookSecret,
}

impl SealedColumn {
    pub const ALL: [SealedColumn; 8] = [
        SealedColumn::LicenseKey,
        SealedColumn::WebhookUrl,
        SealedColumn::WebhookSecret,
        SealedColumn::LoginAttempt,
        SealedColumn::SigningKey,
        SealedColumn::Handover,
        SealedColumn::VendorWebhookUrl,
        SealedColumn::VendorWebhookSecret,
    ];

    /// `table.column`, as reports name it.
    pub fn name(self) -> &'static str {
        match self {
            SealedColumn::LicenseKey => "licenses.key_ciphertext",
            SealedColumn::WebhookUrl => "webhooks.url_sealed",
            SealedColumn::WebhookSecret => "webhooks.secret_sealed",
            SealedColumn::LoginAttempt => "login_attempts.payload",
            SealedColumn::SigningKey => "signing_keys.private_sealed",
            SealedColumn::Handover => "secret_handovers.secret_sealed",
            SealedColumn::VendorWebhookUrl => "vendor_webhooks.url_sealed",
            SealedColumn::VendorWebhookSecret => "vendor_webhooks.secret_sealed",
        }
    }

    /// The table, its key column and the sealed column.
    fn parts(self) -> (&'static str, &'static str, &'static str) {
        match self {
            SealedColumn::LicenseKey => ("licenses", "id", "key_ciphertext"),
            SealedColumn::WebhookUrl => ("webhooks", "id", "url_sealed"),
            SealedColumn::WebhookSecret => ("webhooks", "id", "secret_sealed"),
            SealedColumn::LoginAttempt => ("login_attempts", "id_hash", "payload"),
            SealedColumn::SigningKey => ("signing_keys", "kid", "private_sealed"),
            SealedColumn::Handover => ("secret_handovers", "id", "secret_sealed"),
            SealedColumn::VendorWebhookUrl => ("vendor_webhooks", "id", "url_sealed"),
            SealedColumn::VendorWebhookSecret => ("vendor_webhooks", "id", "secret_sealed"),
        }
    }
}

/// The master-key ids `column`'s values are sealed under (the `v2:<id>:` prefix), with how
/// many rows each; values sealed before ciphertexts carried an id count under `None`.
pub async fn key_ids(
    db: &Db,
    column: SealedColumn,
) -> Result<Vec<(Option<String>, i64)>, StoreError> {
    let (table, _, sealed) = column.parts();
    let sql = format!(
        "SELECT CASE WHEN {sealed} LIKE 'v2:%' THEN substr({sealed}, 4, 8) END AS kid, COUNT(*) \
         FROM {table} WHERE {sealed} IS NOT NULL GROUP BY kid"
    );
    Ok(on_db!(db, pool => {
        sqlx::query_as(&sql).fetch_all(pool).await
    })?)
}

/// Up to `limit` rows of `column` whose key sorts after `after`, in key order: `(key, sealed)`.
pub async fn sealed_after(
    db: &Db,
    column: SealedColumn,
    after: &str,
    limit: i64,
) -> Result<Vec<(String, String)>, StoreError> {
    let (table, key, sealed) = column.parts();
    let sql = format!(
        "SELECT {key}, {sealed} FROM {table} WHERE {key} > $1 AND {sealed} IS NOT NULL \
                 ORDER BY {key} LIMIT $2"
    );
    Ok(on_db!(db, pool => {
        sqlx::query_as(&sql).bind(after).bind(limit).fetch_all(pool).await
    })?)
}

/// Replaces one sealed value if it is still `old` (a server may have rewritten it meanwhile,
/// as when a webhook's secret is rotated). Whether it was replaced.
pub async fn replace_sealed(
    db: &Writer,
    column: SealedColumn,
    key_value: &str,
    old: &str,
    new: &str,
) -> Result<bool, StoreError> {
    let (table, key, sealed) = column.parts();
    let sql = format!("UPDATE {table} SET {sealed} = $1 WHERE {key} = $2 AND {sealed} = $3");
    let replaced = on_db_write!(db, pool => {
        sqlx::query(&sql)
            .bind(new)
            .bind(key_value)
            .bind(old)
            .execute(pool)
            .await?
            .rows_affected()
    });
    Ok(replaced == 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Columns the migrations create whose names say they hold sealed data.
    fn sealed_columns_in_migrations() -> Vec<String> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../migrations");
        let mut found = Vec::new();
        for entry in std::fs::read_dir(dir).expect("migrations directory") {
            let sql = std::fs::read_to_string(entry.expect("entry").path()).expect("read");
            let mut table = String::new();
            for line in sql.lines() {
                let words: Vec<&str> = line.split_whitespace().collect();
                if let [create, tbl, name, ..] = words.as_slice() {
                    if create.eq_ignore_ascii_case("CREATE") && tbl.eq_ignore_ascii_case("TABLE") {
                        table = name.trim_end_matches('(').to_owned();
                    }
                }
                if let [alter, tbl, name, add, col, column, ..] = words.as_slice() {
                    if alter.eq_ignore_ascii_case("ALTER")
                        && tbl.eq_ignore_ascii_case("TABLE")
                        && add.eq_ignore_ascii_case("ADD")
                        && col.eq_ignore_ascii_case("COLUMN")
                    {
                        table = (*name).to_owned();
                        found.push(format!("{table}.{column}"));
                        continue;
                    }
                }
                if let Some(column) = words.first() {
                    found.push(format!("{table}.{column}"));
                }
            }
        }
        found
            .into_iter()
            .filter(|c| c.ends_with("_sealed") || c.ends_with("_ciphertext"))
            .collect()
    }

    #[test]
    fn every_sealed_column_of_the_schema_is_listed() {
        let listed: Vec<&str> = SealedColumn::ALL.iter().map(|c| c.name()).collect();
        let found = sealed_columns_in_migrations();
        assert!(
            found.len() >= 3,
            "the scan found the known columns: {found:?}"
        );
        for column in &found {
            assert!(
                listed.contains(&column.as_str()),
                "{column} holds sealed data but is not in SealedColumn::ALL, so \
                 rotate-master-key would leave it under the old key"
            );
        }
    }
}
