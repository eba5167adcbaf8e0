//! `signing-key rotate|list`: the Ed25519 keys that sign licence verdicts.

use tidemark_domain::audit::AuditContext;
use tidemark_services::signing_keys;
use tidemark_store::Writer;

use super::{lines, Report};
use crate::operator::cli::SigningKeyCommand;
use crate::state::AppState;

pub async fn run(
    command: SigningKeyCommand,
    state: &AppState,
    db: &Writer,
    audit: &AuditContext,
) -> anyhow::Result<Report> {
    let schedule = match command {
        SigningKeyCommand::Rotate { overlap } => {
            let overlap = match overlap {
                Some(text) => crate::config::parse_overlap(&text)
                    .map_err(|e| anyhow::anyhow!("--overlap: {e}"))?,
                None => state.config.keys.signing_key_overlap_ms,
            };
            signing_keys::rotate(db, &state.signer, overlap, audit).await?
        }
        SigningKeyCommand::List => signing_keys::schedule(db, &state.signer, audit).await?,
    };
    let mut human = String::new();
    if let Some(kid) = &schedule.added {
        let signs_from = schedule
            .keys
            .iter()
            .find(|k| &k.kid == kid)
            .map_or("-", |k| k.signs_from.as_str());
        human.push_str(&format!(
            "added {kid} (published now; signs from {signs_from})\n"
        ));
    }
    for kid in &schedule.retired {
        human.push_str(&format!("retired {kid} (private key destroyed)\n"));
    }
    human.push_str(&lines(&schedule.keys, |k| {
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
    Report::new(&schedule, human)
}
