//! `rotate-master-key`.

use tidemark_store::Writer;

use super::Report;
use crate::operator::keys::rotate_master_key;
use crate::state::AppState;
use tidemark_services::crypto;

pub async fn rotate(state: &AppState, db: &Writer) -> anyhow::Result<Report> {
    let keys = state.config.keys.keyring();
    let report = rotate_master_key(db, &keys).await?;
    let mut human = format!(
        "sealing key: {}{}\n",
        report.key_id,
        keys.previous
            .as_ref()
            .map(|p| format!(" (opening {} too)", crypto::key_id(p)))
            .unwrap_or_default()
    );
    for c in &report.columns {
        human.push_str(&format!(
            "{:<26}  {:>6} re-encrypted  {:>6} already current  {:>4} unreadable\n",
            c.column, c.resealed, c.already_current, c.unreadable
        ));
        if !c.unreadable_rows.is_empty() {
            human.push_str(&format!(
                "    unreadable rows: {}\n",
                c.unreadable_rows.join(", ")
            ));
        }
    }
    let failure = (report.unreadable > 0).then(|| {
        format!(
            "{} stored secret(s) could not be opened with TIDEMARK_MASTER_KEY or \
             TIDEMARK_MASTER_KEY_PREVIOUS and were left as they are; set \
             TIDEMARK_MASTER_KEY_PREVIOUS to the key that sealed them and run this again",
            report.unreadable
        )
    });
    if failure.is_none() {
        human.push_str(
            "every stored secret is sealed under the current key; TIDEMARK_MASTER_KEY_PREVIOUS \
             may go once no session older than the rotation needs it (see docs/operations.md)\n",
        );
    }
    Ok(Report::new(&report, human)?.failed_if(failure))
}
