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
    let created = crate::ops::create_license(
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
            let findings: Vec<_> = (0..failed)
                .map(|n| {
                    let severity = ["critical", "high", "medium", "low"][(n % 4) as usize];
                    json!({
                        "rule_id": format!("cis-aws-2.0-{}.{}", 1 + n % 5, 1 + n % 7),
                        "resource": format!("aws_s3_bucket.data_{n}"),
                        "status": "FAIL",
                        "severity": severity,
                        "message": "Bucket allows public read access",
                        "remediation": "Block public access on the bucket",
                    })
                })
                .collect();
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
