//! `signing-key rotate|list`: the Ed25519 keys that sign licence verdicts.

use serde::Serialize;
use tidemark_domain::audit::AuditContext;
use tidemark_domain::signing::KeyStage;
use tidemark_domain::to_rfc3339;
use tidemark_store::signing_keys;
use tidemark_store::Writer;

use super::{lines, Report};
use crate::operator::cli::SigningKeyCommand;
use crate::state::AppState;

/// A key as the commands print it.
#[derive(Debug, Serialize)]
pub struct KeyView {
    pub kid: String,
    pub generation: i64,
    /// `announced`, `signing`, `verifying` (superseded, still published).
    pub stage: &'static str,
    pub published_at: String,
    pub signs_from: String,
    pub signs_until: Option<String>,
    pub retires_at: Option<String>,
}

fn stage_name(stage: KeyStage) -> &'static str {
    match stage {
        KeyStage::Announced => "announced",
        KeyStage::Signing => "signing",
        KeyStage::Verifying => "verifying",
        KeyStage::Retired => "retired",
    }
}

pub async fn run(
    command: SigningKeyCommand,
    state: &AppState,
    db: &Writer,
    audit: &AuditContext,
) -> anyhow::Result<Report> {
    // Creates the first key on a database that has none yet.
    state.signer.key_set(db).await?;
    let rotated = match command {
        SigningKeyCommand::Rotate { overlap } => {
            let overlap = match overlap {
                Some(text) => crate::config::parse_overlap(&text)
                    .map_err(|e| anyhow::anyhow!("--overlap: {e}"))?,
                None => state.config.keys.signing_key_overlap_ms,
            };
            let key = tidemark_services::crypto::signing::rotate(
                db,
                state.signer.secrets(),
                state.signer.issuer(),
                overlap,
                audit,
            )
            .await?;
            Some(key)
        }
        SigningKeyCommand::List => None,
    };
    let retired = signing_keys::delete_retired(db, audit.at, audit).await?;
    let keys = signing_keys::list_keys(db).await?;
    let schedule = signing_keys::schedule(&keys);
    let views: Vec<KeyView> = schedule
        .keys()
        .iter()
        .map(|k| KeyView {
            kid: k.kid.clone(),
            generation: k.generation,
            stage: stage_name(schedule.stage(k, audit.at)),
            published_at: to_rfc3339(k.published_at),
            signs_from: to_rfc3339(k.signs_from),
            signs_until: schedule.signs_until(k).map(to_rfc3339),
            retires_at: schedule.retires_at(k).map(to_rfc3339),
        })
        .collect();
    let mut human = String::new();
    if let Some(key) = &rotated {
        human.push_str(&format!(
            "added {} (published now; signs from {})\n",
            key.window.kid,
            to_rfc3339(key.window.signs_from)
        ));
    }
    for kid in &retired {
        human.push_str(&format!("retired {kid} (private key destroyed)\n"));
    }
    human.push_str(&lines(&views, |k| {
        format!(
            "{}  gen {}  {:<9}  signs {} .. {}  retires {}",
            k.kid,
            k.generation,
            k.stage,
            k.signs_from,
            k.signs_until.as_deref().unwrap_or("(current)"),
            k.retires_at.as_deref().unwrap_or("-")
        )
    }));
    Report::new(
        &serde_json::json!({
            "added": rotated.map(|k| k.window.kid),
            "retired": retired,
            "keys": views,
        }),
        human,
    )
}
