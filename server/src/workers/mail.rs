//! The background worker of each replica: delivers the mail outbox and prunes old
//! rate-limit rows. Requests only enqueue, so answering never waits for mail.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use lettre::message::header::ContentType;
use lettre::message::Mailbox;
use lettre::{AsyncFileTransport, AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use tidemark_domain::time::HOUR_MS;
use tidemark_domain::{now_millis, to_rfc3339, Millis};
use tidemark_store::alerts::ALERT_MAIL_KIND;
use tidemark_store::api_keys::{ExpiringKey, KEY_EXPIRY_MAIL_KIND};
use tidemark_store::licenses::licenses_for_email;
use tidemark_store::outbox::{self, Finished, OutboxMail};
use tidemark_store::scan_facts::ScanFacts;
use tidemark_store::Writer;
use tidemark_wire::GateStatus;

use crate::config::Config;
use crate::state::AppState;
use crate::workers::runner::{Lease, Pacing, Worker};
use tidemark_services::licensing::RESEND_MAIL_KIND;

/// How often a replica looks for due mail when nothing wakes it.
const POLL_INTERVAL: Duration = Duration::from_secs(2);
/// How long a claimed message is reserved for this replica.
const CLAIM_LEASE_MS: Millis = 60_000;
/// Alerts to one address in an hour beyond which they are dropped: a CI loop pushing a
/// failing build every minute must not bury someone's inbox (the dashboard still has it all).
pub const ALERTS_PER_RECIPIENT_PER_HOUR: i64 = 30;

pub enum Transport {
    Smtp(AsyncSmtpTransport<Tokio1Executor>),
    /// Development default: each message becomes an `.eml` file.
    Files(AsyncFileTransport<Tokio1Executor>),
}

impl Transport {
    pub fn from_config(config: &Config) -> anyhow::Result<Self> {
        match &config.mail.smtp_url {
            Some(url) => Ok(Transport::Smtp(
                AsyncSmtpTransport::<Tokio1Executor>::from_url(url.expose())
                    .context("TIDEMARK_SMTP_URL is not a usable SMTP URL")?
                    .timeout(Some(Duration::from_secs(20)))
                    .build(),
            )),
            None => {
                let dir = config.data_dir.join("outbox");
                std::fs::create_dir_all(&dir)
                    .with_context(|| format!("could not create {}", dir.display()))?;
                Ok(Transport::Files(AsyncFileTransport::new(dir)))
            }
        }
    }

    async fn send(&self, message: Message) -> anyhow::Result<()> {
        match self {
            Transport::Smtp(t) => t.send(message).await.map(|_| ())?,
            Transport::Files(t) => t.send(message).await.map(|_| ())?,
        }
        Ok(())
    }
}

/// Sends the mail outbox: every replica claims due messages, each under a lease of its own.
pub struct MailSender {
    state: AppState,
    transport: Transport,
    from: Mailbox,
}

impl MailSender {
    pub fn new(state: &AppState) -> anyhow::Result<Self> {
        Ok(Self {
            transport: Transport::from_config(&state.config)?,
            from: state
                .config
                .mail
                .from
                .parse()
                .context("TIDEMARK_MAIL_FROM is not a mailbox")?,
            state: state.clone(),
        })
    }
}

#[async_trait::async_trait]
impl Worker for MailSender {
    fn name(&self) -> &'static str {
        "mail"
    }

    fn lease(&self) -> Lease {
        Lease::PerItem
    }

    fn pacing(&self) -> Pacing {
        Pacing::draining(POLL_INTERVAL)
    }

    fn wakeup(&self) -> Option<Arc<tokio::sync::Notify>> {
        Some(self.state.mail_wakeup.clone())
    }

    async fn pass(&self, db: &Writer, _holder: &str) -> anyhow::Result<u64> {
        deliver_due(db, &self.state, &self.transport, &self.from).await
    }
}

/// Delay before attempt `attempts + 1`: 5 s, doubling, at most an hour.
pub fn retry_delay_ms(attempts: i64) -> Millis {
    let exp = attempts.clamp(1, 20) - 1;
    (5_000_i64 << exp).min(HOUR_MS)
}

async fn deliver_due(
    db: &Writer,
    state: &AppState,
    transport: &Transport,
    from: &Mailbox,
) -> anyhow::Result<u64> {
    let due = outbox::claim_due_mail(db, now_millis(), CLAIM_LEASE_MS, 20).await?;
    let claimed = due.len() as u64;
    for mail in due {
        match send_one(state, transport, from, &mail).await {
            Ok(finished) => outbox::mark_sent(db, &mail.id, now_millis(), finished).await?,
            Err(err) => {
                tracing::warn!(mail_id = %mail.id, attempt = mail.attempts, error = format!("{err:#}"), "mail not delivered; will retry");
                let retry_at = now_millis() + retry_delay_ms(mail.attempts);
                outbox::mark_failed(db, &mail, &err.to_string(), retry_at).await?;
            }
        }
    }
    Ok(claimed)
}

async fn send_one(
    state: &AppState,
    transport: &Transport,
    from: &Mailbox,
    mail: &OutboxMail,
) -> anyhow::Result<Finished> {
    let composed = match mail.kind.as_str() {
        RESEND_MAIL_KIND => compose_resend(state, mail).await?,
        ALERT_MAIL_KIND => compose_alert(state, mail).await?,
        KEY_EXPIRY_MAIL_KIND => compose_key_expiry(state, mail).await?,
        other => anyhow::bail!("unknown mail kind {other:?}"),
    };
    let (subject, body) = match composed {
        Composed::Message { subject, body } => (subject, body),
        Composed::Nothing(finished) => return Ok(finished),
    };
    let message = Message::builder()
        .from(from.clone())
        .to(mail.recipient.parse().context("recipient address")?)
        .subject(subject)
        .header(ContentType::TEXT_PLAIN)
        .body(body)
        .context("composing the message")?;
    transport.send(message).await?;
    Ok(Finished::Delivered)
}

enum Composed {
    Message {
        subject: String,
        body: String,
    },
    /// Nothing to send, and why.
    Nothing(Finished),
}

/// Whether `recipient` already had `cap` messages of `kind` in the last hour. Decided at
/// delivery, so no request's answer or timing depends on it.
async fn over_hourly_cap(state: &AppState, mail: &OutboxMail, cap: i64) -> anyhow::Result<bool> {
    let hour_ago = now_millis() - HOUR_MS;
    let delivered =
        outbox::delivered_since(&state.db, &mail.recipient, &mail.kind, hour_ago).await?;
    if delivered >= cap {
        tracing::info!(mail_id = %mail.id, kind = %mail.kind, "mail dropped: the recipient's hourly cap is reached");
    }
    Ok(delivered >= cap)
}

async fn compose_resend(state: &AppState, mail: &OutboxMail) -> anyhow::Result<Composed> {
    let licenses = licenses_for_email(&state.db, &mail.recipient).await?;
    if licenses.is_empty() {
        // No license for the address: nothing is sent, and the caller was told the same
        // as when there is one.
        return Ok(Composed::Nothing(Finished::NoLicense));
    }
    let cap = i64::from(state.config.limits.resend_per_recipient_per_hour);
    if over_hourly_cap(state, mail, cap).await? {
        return Ok(Composed::Nothing(Finished::Capped));
    }
    let mut body = String::from(
        "Hello,\n\nYou asked us to send your Tidemark license again. Keep the key secret: \
         anyone who has it can activate the scanner on your account.\n",
    );
    for (license, sealed) in &licenses {
        let key = state
            .license_keys
            .open(sealed)
            .context("a stored license key could not be decrypted")?;
        let key = String::from_utf8(key).context("a stored license key is not text")?;
        body.push_str(&format!(
            "\nLicense key: {key}\nTier: {}\nExpires: {}\n",
            license.tier.as_str(),
            to_rfc3339(license.expires_at)
        ));
    }
    body.push_str(
        "\nActivate a machine with `tidemark activate`. If you did not ask for this e-mail, \
         you can ignore it.\n\n-- Tidemark\n",
    );
    Ok(Composed::Message {
        subject: "Your Tidemark license".to_owned(),
        body,
    })
}

async fn compose_alert(state: &AppState, mail: &OutboxMail) -> anyhow::Result<Composed> {
    let Some(scan) = &mail.scan else {
        return Ok(Composed::Nothing(Finished::Obsolete));
    };
    if over_hourly_cap(state, mail, ALERTS_PER_RECIPIENT_PER_HOUR).await? {
        return Ok(Composed::Nothing(Finished::Capped));
    }
    let (subject, body) = alert_message(scan, &state.config.http.dashboard_url);
    Ok(Composed::Message { subject, body })
}

/// The warning of the account's keys about to expire, as they are when it is sent: a key
/// revoked (or an account gone) since it was queued is left out, and with none left nothing
/// is sent.
async fn compose_key_expiry(state: &AppState, mail: &OutboxMail) -> anyhow::Result<Composed> {
    let Some(account_id) = &mail.account_id else {
        return Ok(Composed::Nothing(Finished::Obsolete));
    };
    let keys = tidemark_store::api_keys::expiring_keys_of(
        &state.db,
        account_id,
        now_millis(),
        tidemark_domain::api_keys::WARN_BEFORE_MS,
    )
    .await?;
    if keys.is_empty() {
        return Ok(Composed::Nothing(Finished::Obsolete));
    }
    let (subject, body) = key_expiry_message(&keys, &state.config.http.dashboard_url);
    Ok(Composed::Message { subject, body })
}

/// One message naming each key (its name, prefix and expiry) and where to replace it.
pub fn key_expiry_message(keys: &[ExpiringKey], dashboard_url: &str) -> (String, String) {
    let subject = match keys {
        [one] => format!(
            "API key \"{}\" expires {}",
            one.machine,
            to_rfc3339(one.expires_at)
        ),
        many => format!("{} API keys expire within a week", many.len()),
    };
    let mut body = String::from(
        "Hello,\n\nThese API keys of your Tidemark account stop working soon. Scanners and CI \
         jobs that push with them will be refused from then on.\n\n",
    );
    for key in keys {
        body.push_str(&format!(
            "- {} ({}…): expires {}\n",
            key.machine,
            key.prefix,
            to_rfc3339(key.expires_at)
        ));
    }
    body.push_str(&format!(
        "\nMake a new key in Settings → API keys ({}/settings/keys), put it in place of the \
         old one, then revoke the old one.\n\nYou get this as an admin of the account; turn it \
         off in Settings → Alerts.\n\n-- Tidemark\n",
        dashboard_url.trim_end_matches('/')
    ));
    (subject, body)
}

/// The alert for one push: one message whatever it raised (a failed gate, a lower score or
/// both), with the gate's reasons and a link to the scan.
pub fn alert_message(scan: &ScanFacts, dashboard_url: &str) -> (String, String) {
    let failed = scan.gate.status == GateStatus::Failed;
    let label = &scan.project_label;
    let drifted: usize = scan.drifted.iter().map(|d| d.requirements.len()).sum();
    let subject = if failed {
        format!("{label}: quality gate failed (score {:.1})", scan.score)
    } else if scan.score_delta < 0.0 || drifted == 0 {
        format!(
            "{label}: score dropped {:.1} points to {:.1}",
            -scan.score_delta, scan.score
        )
    } else {
        format!(
            "{label}: compliance drift ({drifted} {} passed before and {} now)",
            if drifted == 1 {
                "requirement"
            } else {
                "requirements"
            },
            if drifted == 1 { "fails" } else { "fail" }
        )
    };
    let mut body = format!(
        "Hello,\n\nA scan of {label} was pushed at {}.\n\n",
        to_rfc3339(scan.scanned_at)
    );
    body.push_str(&format!(
        "  Score:        {:.1} ({:+.1} since the previous scan)\n",
        scan.score, scan.score_delta
    ));
    let gate = match scan.gate.status {
        GateStatus::Failed => "failed",
        GateStatus::Passed => "passed",
        GateStatus::None => "none set",
    };
    body.push_str(&format!("  Quality gate: {gate}\n"));
    for reason in &scan.gate.reasons {
        body.push_str(&format!("    - {reason}\n"));
    }
    let s = &scan.severity_counts;
    body.push_str(&format!(
        "  Findings:     {} failed (critical {}, high {}, medium {}, low {}), {} passed\n",
        scan.failed, s.critical, s.high, s.medium, s.low, scan.passed
    ));
    if drifted > 0 {
        body.push_str("  Drifted (passed in the previous scan, failing now):\n");
        for d in &scan.drifted {
            body.push_str(&format!(
                "    - {}: {}\n",
                d.framework,
                d.requirements.join(", ")
            ));
        }
    }
    body.push_str(&format!(
        "\nOpen the scan: {dashboard_url}/projects/{}/scans/{}\n\n\
         You get this e-mail because you asked for alerts on this account. Change that in \
         Settings: {dashboard_url}/settings\n\n-- Tidemark\n",
        scan.project_id, scan.scan_id
    ));
    (subject, body)
}

#[cfg(test)]
mod tests {
    #[test]
    fn retries_back_off_to_an_hour() {
        assert_eq!(super::retry_delay_ms(1), 5_000);
        assert_eq!(super::retry_delay_ms(2), 10_000);
        assert_eq!(super::retry_delay_ms(12), 3_600_000);
    }

    fn scan(delta: f64, gate: tidemark_wire::GateResult) -> super::ScanFacts {
        super::ScanFacts {
            project_id: tidemark_wire::ids::ProjectId::trusted("prj_a"),
            project_label: "web".into(),
            scan_id: tidemark_wire::ids::ScanId::trusted("scn_b"),
            score: 76.0,
            score_delta: delta,
            passed: 10,
            failed: 3,
            severity_counts: tidemark_wire::SeverityCounts {
                critical: 1,
                high: 1,
                medium: 1,
                low: 0,
            },
            scanned_at: 1_763_632_800_000,
            gate,
            branch: Some("main".into()),
            commit: None,
            pull_request: None,
            pushed_by: None,
            drifted: Vec::new(),
        }
    }

    #[test]
    fn an_alert_names_the_failed_gate_and_its_reasons_once() {
        let gate = tidemark_wire::GateResult {
            status: tidemark_wire::GateStatus::Failed,
            reasons: vec!["score 76 is below the gate's minimum of 80".into()],
        };
        let (subject, body) = super::alert_message(&scan(-4.0, gate), "https://t.example");
        assert_eq!(subject, "web: quality gate failed (score 76.0)");
        assert!(
            body.contains("Score:        76.0 (-4.0 since the previous scan)"),
            "{body}"
        );
        assert!(
            body.contains(
                "Quality gate: failed\n    - score 76 is below the gate's minimum of 80\n"
            ),
            "{body}"
        );
        assert!(
            body.contains("3 failed (critical 1, high 1, medium 1, low 0), 10 passed"),
            "{body}"
        );
        assert!(
            body.contains("https://t.example/projects/prj_a/scans/scn_b"),
            "{body}"
        );
    }

    #[test]
    fn a_regression_without_a_failed_gate_says_how_far_the_score_fell() {
        let gate = tidemark_wire::GateResult {
            status: tidemark_wire::GateStatus::None,
            reasons: vec![],
        };
        let (subject, body) = super::alert_message(&scan(-2.5, gate), "https://t.example");
        assert_eq!(subject, "web: score dropped 2.5 points to 76.0");
        assert!(body.contains("Quality gate: none set"), "{body}");
    }

    #[test]
    fn drift_alone_is_named_with_what_drifted() {
        let gate = tidemark_wire::GateResult {
            status: tidemark_wire::GateStatus::Passed,
            reasons: vec![],
        };
        let mut drifted = scan(1.0, gate);
        drifted.drifted = vec![tidemark_wire::DriftedRequirements {
            framework: "cis-aws-2.0".into(),
            requirements: vec!["cis-aws-2.0-1.4".into(), "cis-aws-2.0-2.1".into()],
        }];
        let (subject, body) = super::alert_message(&drifted, "https://t.example");
        assert_eq!(
            subject,
            "web: compliance drift (2 requirements passed before and fail now)"
        );
        assert!(
            body.contains("    - cis-aws-2.0: cis-aws-2.0-1.4, cis-aws-2.0-2.1\n"),
            "{body}"
        );
    }
}
