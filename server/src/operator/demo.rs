//! Development only (`TIDEMARK_DEV_DEMO=1`, refused in production): a demo account whose
//! admin, `demo@tidemark.localhost`, can sign in through the development OpenID provider
//! that `make run` starts, and finds projects with a few months of sample scans.

use rand::{Rng as _, SeedableRng as _};
use serde_json::json;
use tidemark_domain::push::ValidPush;
use tidemark_domain::rate::RollingLimit;
use tidemark_domain::{now_millis, to_rfc3339};
use tidemark_store::licenses;
use tidemark_store::pushes::{record_push, PushContext};
use tidemark_store::Writer;
use tidemark_wire::Tier;

use crate::state::AppState;

pub const DEMO_EMAIL: &str = "demo@tidemark.localhost";

const PROJECTS: [(&str, f64); 3] = [
    ("acme/payments-api", 78.0),
    ("acme/web-frontend", 88.0),
    ("acme/infra-terraform", 64.0),
];

/// Creates the demo account once; later starts find it and change nothing.
/// Checks a CIS AWS scan really fails, with what it says and how to fix it: the demo reads
/// like an account people would recognise.
const CATALOGUE: [(&str, &str, &str, &str, &str); 12] = [
    (
        "cis-aws-2.0-2.1.4",
        "aws_s3_bucket.{}",
        "high",
        "S3 bucket allows public read access through its ACL or policy",
        "Turn on S3 Block Public Access for the bucket and remove public grants",
    ),
    (
        "cis-aws-2.0-5.2",
        "aws_security_group.{}",
        "critical",
        "Security group allows SSH (port 22) from 0.0.0.0/0",
        "Restrict the ingress rule to known address ranges or use Session Manager",
    ),
    (
        "cis-aws-2.0-1.4",
        "aws_iam_root_access_key.{}",
        "critical",
        "The root user has an active access key",
        "Delete the root user's access keys and use IAM roles",
    ),
    (
        "cis-aws-2.0-1.10",
        "aws_iam_user.{}",
        "high",
        "Console user has no MFA device",
        "Enable a virtual or hardware MFA device for the user",
    ),
    (
        "cis-aws-2.0-2.2.1",
        "aws_ebs_volume.{}",
        "medium",
        "EBS volume is not encrypted at rest",
        "Enable EBS encryption by default and re-create the volume from an encrypted snapshot",
    ),
    (
        "cis-aws-2.0-2.3.1",
        "aws_db_instance.{}",
        "high",
        "RDS instance storage is not encrypted",
        "Restore the instance from an encrypted snapshot",
    ),
    (
        "cis-aws-2.0-3.1",
        "aws_cloudtrail.{}",
        "medium",
        "CloudTrail trail does not log all regions",
        "Set is_multi_region_trail on the trail",
    ),
    (
        "cis-aws-2.0-3.7",
        "aws_kms_key.{}",
        "low",
        "KMS key rotation is disabled",
        "Enable automatic yearly rotation for the key",
    ),
    (
        "cis-aws-2.0-1.8",
        "aws_iam_account_password_policy.{}",
        "low",
        "Password policy allows passwords shorter than 14 characters",
        "Set minimum_password_length to 14 or more",
    ),
    (
        "cis-aws-2.0-4.1",
        "aws_cloudwatch_log_metric_filter.{}",
        "medium",
        "No alarm on unauthorized API calls",
        "Add a metric filter and alarm for UnauthorizedOperation and AccessDenied",
    ),
    (
        "cis-aws-2.0-2.1.1",
        "aws_s3_bucket_policy.{}",
        "medium",
        "S3 bucket accepts requests over plain HTTP",
        "Deny requests where aws:SecureTransport is false",
    ),
    (
        "cis-aws-2.0-5.6",
        "aws_instance.{}",
        "medium",
        "EC2 instance accepts IMDSv1 requests",
        "Require IMDSv2 (http_tokens = required)",
    ),
];

/// Names the demo's resources are given, in turn.
const RESOURCE_NAMES: [&str; 6] = ["data", "logs", "web", "billing", "analytics", "backup"];

/// The `n`th failing check of a demo scan.
fn demo_finding(n: u64) -> serde_json::Value {
    let (rule, resource, severity, message, remediation) = CATALOGUE[n as usize % CATALOGUE.len()];
    let name = RESOURCE_NAMES[(n as usize / CATALOGUE.len()) % RESOURCE_NAMES.len()];
    json!({
        "rule_id": rule,
        "resource": resource.replace("{}", name),
        "status": "FAIL",
        "severity": severity,
        "message": message,
        "remediation": remediation,
    })
}

pub async fn seed(db: &Writer, state: &AppState) -> anyhow::Result<()> {
    if !licenses::licenses_for_email(db, DEMO_EMAIL)
        .await?
        .is_empty()
    {
        return Ok(());
    }
    // What the demo sets up shows in its audit log as the server's doing.
    let audit = tidemark_domain::audit::AuditContext {
        actor: tidemark_domain::audit::Actor::System {
            name: "demo-seed".to_owned(),
        },
        client_ip: None,
        at: tidemark_domain::now_millis(),
    };
    let created = crate::operator::ops::create_license(
        db,
        &state.license_keys,
        DEMO_EMAIL,
        Tier::Enterprise,
        None,
        None,
        &audit,
    )
    .await?;
    // Pushes name a live key of the account, as a scanner's would.
    let key_id = tidemark_domain::ids::new_key_id();
    licenses::insert_api_key(
        db,
        &licenses::NewApiKey {
            id: key_id.clone(),
            account_id: created.account_id.clone(),
            hash: tidemark_domain::secrets::ApiKey::generate().hash(),
            prefix: "svc_api_demo".into(),
            machine: "demo data".into(),
            now: now_millis(),
        },
    )
    .await?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let now = now_millis();
    let day = 86_400_000;
    for (n, (label, start)) in PROJECTS.into_iter().enumerate() {
        let mut score: f64 = start;
        for i in 0..45_i64 {
            score = (score + rng.gen_range(-4.0..4.5)).clamp(35.0, 99.0);
            let scanned_at = now - (90 - 2 * i) * day + rng.gen_range(0..3_600_000);
            let failed = ((100.0 - score) / 4.0).round() as u64;
            let findings: Vec<_> = (0..failed).map(demo_finding).collect();
            let count = |s: &str| findings.iter().filter(|f| f["severity"] == s).count();
            let body = json!({
                "project_label": label,
                "cloud": "aws",
                "cloud_account_id": "123456789012",
                "frameworks": ["cis-aws-2.0", "soc2"],
                "score": (score * 10.0).round() / 10.0,
                "passed": 180 - failed,
                "failed": failed,
                "severity_counts": {
                    "critical": count("critical"), "high": count("high"),
                    "medium": count("medium"), "low": count("low"),
                },
                "findings": findings,
                "state_source": if i % 3 == 0 { "local" } else { "ci" },
                "scanned_at": to_rfc3339(scanned_at),
            });
            let push = ValidPush::parse(body.to_string().as_bytes())
                .map_err(|e| anyhow::anyhow!("demo push refused: {e:?}"))?;
            let ctx = PushContext {
                account_id: created.account_id.clone(),
                key_id: key_id.clone(),
                project_cap: None,
                write_limit: RollingLimit {
                    limit: u32::MAX,
                    window_ms: 60_000,
                },
                now: scanned_at,
                touch_key: false,
                raw_body_hash: None,
                pushed_by: None,
                custom_frameworks: false,
                drift_detection: false,
            };
            let outcome = record_push(db, ctx, push).await?;
            // The first project gets a quality gate a third of the way in, so the chart and
            // the scans table have verdicts to show.
            if let (0, 15, tidemark_store::pushes::PushOutcome::Appended(scan, _)) =
                (n, i, &outcome)
            {
                let gate = tidemark_domain::gate::QualityGate::new(Some(60.0), Some(3.0), None)?;
                tidemark_store::gates::set_project_gate(
                    db,
                    &created.account_id,
                    &scan.project_id,
                    gate.as_ref(),
                    &audit,
                )
                .await?;
            }
        }
    }
    tracing::warn!(
        email = DEMO_EMAIL,
        "development demo account created: sign in as {DEMO_EMAIL} (TIDEMARK_DEV_DEMO)"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_findings_are_distinct_checks_with_their_own_words() {
        let findings: Vec<_> = (0..72).map(demo_finding).collect();
        let identities: std::collections::HashSet<_> = findings
            .iter()
            .map(|f| (f["rule_id"].to_string(), f["resource"].to_string()))
            .collect();
        assert_eq!(identities.len(), findings.len(), "one identity per finding");
        let messages: std::collections::HashSet<_> =
            findings.iter().map(|f| f["message"].to_string()).collect();
        assert_eq!(messages.len(), CATALOGUE.len());
        // Every severity appears, so the demo's charts and counts have something to show.
        for severity in ["critical", "high", "medium", "low"] {
            assert!(
                findings[..12].iter().any(|f| f["severity"] == severity),
                "{severity}"
            );
        }
        assert_eq!(findings[13]["resource"], "aws_security_group.logs");
    }
}
