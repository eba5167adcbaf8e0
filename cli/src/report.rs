//! `tidemark report verify FILE`: checks a signed compliance report (issue 47) offline or
//! against the service's published keys, the way an auditor would: the JWS verifies with a
//! key the key set vouches for, within the time that key signs, and its `report_sha256` is
//! the SHA-256 of the report's text. Anything else is refused, naming what failed.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Subcommand;
use sha2::{Digest as _, Sha256};
use tidemark_wire::report::{ComplianceReport, ReportClaims, SignedReport, REPORT_TYP};
use tidemark_wire::verdict::KeySet;

use crate::client::Client;
use crate::verdict::{TrustedKeys, LEEWAY_SECS};

#[derive(Debug, Subcommand)]
pub enum ReportCommand {
    /// Verify a signed compliance report (`…/report?format=json`, or the scan page's
    /// "signed JSON"): its signature against the installation's published keys, and that the
    /// report is the one signed. Exits 0 when it holds.
    Verify {
        /// The signed report (JSON).
        file: PathBuf,
        /// The key set to check against, saved earlier from `/v1/keys` (offline); default:
        /// fetched from the service.
        #[arg(long)]
        keys: Option<PathBuf>,
        /// Print the report as JSON after checking it.
        #[arg(long)]
        json: bool,
    },
}

pub async fn report(
    client: &Client,
    out: &mut (dyn Write + Send),
    command: ReportCommand,
) -> anyhow::Result<u8> {
    let ReportCommand::Verify { file, keys, json } = command;
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    let signed: SignedReport = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a signed Tidemark report", file.display()))?;
    let set: KeySet = match keys {
        Some(path) => serde_json::from_str(
            &std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?,
        )
        .with_context(|| format!("{} is not a key set from /v1/keys", path.display()))?,
        None => client
            .keys()
            .await
            .map_err(|e| anyhow::anyhow!("could not fetch the published keys: {e}"))?,
    };
    let trusted = TrustedKeys::pin(&set).map_err(|e| anyhow::anyhow!("the key set: {e}"))?;
    let (claims, key): (ReportClaims, _) = trusted
        .verify_signed(&signed.signature, REPORT_TYP)
        .map_err(|e| anyhow::anyhow!("the signature: {e}"))?;
    let early = key
        .signs_from
        .is_some_and(|from| claims.iat < from - LEEWAY_SECS);
    let late = key
        .signs_until
        .is_some_and(|until| claims.iat > until + LEEWAY_SECS);
    if early || late {
        anyhow::bail!(
            "the report was signed by key {} outside the time that key signs",
            key.kid
        );
    }
    let digest = hex::encode(Sha256::digest(signed.report.as_bytes()));
    if digest != claims.report_sha256 {
        anyhow::bail!(
            "the report was changed after it was signed: its SHA-256 is {digest}, the \
             signature says {}",
            claims.report_sha256
        );
    }
    let report: ComplianceReport =
        serde_json::from_str(&signed.report).context("the signed report is not a report")?;
    if format!("{}/{}", report.project.id, report.scan.scan_id) != claims.sub {
        anyhow::bail!("the signature is for {}, not this report", claims.sub);
    }
    if json {
        writeln!(out, "{}", signed.report)?;
        return Ok(0);
    }
    writeln!(
        out,
        "Verified: signed by {} with key {} at {}; the report is unchanged (SHA-256 {}).",
        claims.iss,
        key.kid,
        chrono::DateTime::from_timestamp(claims.iat, 0)
            .map(|t| t.to_rfc3339())
            .unwrap_or_default(),
        claims.report_sha256
    )?;
    writeln!(
        out,
        "{} · scan {} · scanned {} · generated {}",
        report.project.label, report.scan.scan_id, report.scan.scanned_at, report.generated_at
    )?;
    for fw in &report.frameworks {
        let c = &fw.counts;
        writeln!(
            out,
            "  {:<24} {:>4} passed {:>4} failed {:>4} triaged {:>4} not evaluated",
            fw.framework, c.passed, c.failed, c.triaged, c.not_evaluated
        )?;
    }
    Ok(0)
}
