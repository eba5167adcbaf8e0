//! Development only (`TIDEMARK_DEV_DEMO=1`, refused in production): a demo account whose
//! admin, `demo@tidemark.localhost`, can sign in through the development OpenID provider
//! that `make run` starts, and finds three projects on two clouds with three months of scans
//! as a real scanner sends them (PASS, FAIL and SKIP per check, over CIS and SOC 2), a pull
//! request or two, some drift and some triage: the demo is what a newcomer judges Tidemark by.

pub mod catalogue;
mod plan;

use tidemark_domain::audit::{Actor, AuditContext};
use tidemark_domain::findings::TriageChange;
use tidemark_domain::now_millis;
use tidemark_domain::push::ValidPush;
use tidemark_domain::rate::RollingLimit;
use tidemark_domain::secrets::ApiKey;
use tidemark_domain::time::{DAY_MS as DAY, HOUR_MS};
use tidemark_store::findings::{find_line, list_tracked, set_triage, TrackedQuery};
use tidemark_store::licenses;
use tidemark_store::pushes::{record_push, PushContext, PushOutcome};
use tidemark_store::{AccountId, ProjectId, Writer};
use tidemark_wire::findings::TriageState;
use tidemark_wire::{PushedBy, Tier};

use crate::state::AppState;

pub const DEMO_EMAIL: &str = "demo@tidemark.localhost";

/// Who sets findings aside in the demo: a teammate of the admin's.
const TRIAGER: &str = "priya@tidemark.localhost";

/// A finding the teammate sets aside: in which project, why, and for how many days (if the
/// triage lapses).
struct DemoTriage {
    project: usize,
    rule: &'static str,
    resource: &'static str,
    state: TriageState,
    reason: &'static str,
    days: Option<i64>,
}

const TRIAGE: [DemoTriage; 3] = [
    DemoTriage {
        project: 0,
        rule: "cis-aws-2.0-2.1.4",
        resource: "aws_s3_bucket.assets",
        state: TriageState::AcceptedRisk,
        reason: "Public by design: static assets served through CloudFront; reviewed with security",
        days: Some(90),
    },
    DemoTriage {
        project: 0,
        rule: "cis-aws-2.0-3.7",
        resource: "aws_kms_key.logs",
        state: TriageState::WontFix,
        reason: "The logs key is retired in Q1 with the old log pipeline",
        days: None,
    },
    DemoTriage {
        project: 1,
        rule: "cis-aws-2.0-2.1.1",
        resource: "aws_s3_bucket_policy.logs",
        state: TriageState::FalsePositive,
        reason: "Plain HTTP is denied for the whole organisation by an SCP the scanner cannot read",
        days: None,
    },
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
    let audit = AuditContext {
        actor: Actor::System {
            name: "demo-seed".to_owned(),
        },
        client_ip: None,
        at: now_millis(),
    };
    let request = tidemark_services::licensing::LicenseRequest {
        email: tidemark_domain::text::Email::parse(DEMO_EMAIL)
            .map_err(|e| anyhow::anyhow!(e.message))?,
        tier: Tier::Enterprise,
        expires_at: None,
        max_projects: None,
        // Two of five seats taken: CI's runner and a laptop (Settings → Machines).
        max_machines: Some(5),
        features_added: Vec::new(),
        features_removed: Vec::new(),
    };
    let created =
        tidemark_services::licensing::create(db, &state.license_keys, request, &audit).await?;
    let account = created.account_id;
    // Pushes name live keys of the account, as a scanner's would: CI's and a laptop's.
    let ci = demo_key(db, &account, &created.license_id, "github-actions", HOUR_MS).await?;
    let laptop = demo_key(db, &account, &created.license_id, "ana-macbook", 2 * DAY).await?;
    for push in plan::pushes(now_millis()) {
        let (key_id, by) = if push.local { &laptop } else { &ci };
        let valid = ValidPush::parse(push.body.to_string().as_bytes())
            .map_err(|e| anyhow::anyhow!("demo push refused: {e:?}"))?;
        let ctx = PushContext {
            account_id: account.clone(),
            key_id: key_id.clone(),
            project_cap: None,
            write_limit: RollingLimit {
                limit: u32::MAX,
                window_ms: 60_000,
            },
            now: push.at,
            touch_key: false,
            raw_body_hash: None,
            pushed_by: serde_json::to_string(by).ok(),
            custom_frameworks: true,
            drift_detection: true,
        };
        let outcome = record_push(db, ctx, valid).await?;
        if let PushOutcome::Appended(scan, _) = &outcome {
            let on_main = push.body["git"]["branch"] == "main";
            // A teammate triages a week before the latest scans, which then carry it.
            if on_main && push.index == plan::SCANS - 4 {
                triage(
                    db,
                    &account,
                    &scan.project_id,
                    push.project,
                    push.at + HOUR_MS,
                )
                .await?;
            }
            // The first project gets a quality gate a third of the way in, so the chart and
            // the scans table have verdicts to show.
            if push.project == 0 && push.index == 15 && on_main {
                let gate = tidemark_domain::gate::QualityGate::new(Some(60.0), Some(3.0), None)?;
                tidemark_store::gates::set_project_gate(
                    db,
                    &account,
                    &scan.project_id,
                    gate.as_ref(),
                    &audit,
                )
                .await?;
            }
        }
    }
    publish_cis_aws_catalogue(db, &audit).await?;
    tracing::warn!(
        email = DEMO_EMAIL,
        "development demo account created: sign in as {DEMO_EMAIL} (TIDEMARK_DEV_DEMO)"
    );
    Ok(())
}

/// The CIS AWS 2.0 catalogue, in Prowler's compliance JSON (an excerpt of Prowler's
/// `prowler/compliance/aws/cis_2.0_aws.json`, Apache-2.0: each requirement's id, title,
/// checks, section, profile, assessment status and description), as a vendor would publish it.
const CIS_AWS_CATALOGUE: &str = include_str!("cis_2.0_aws.json");

/// Publishes the demo's CIS AWS 2.0 catalogue, so its framework page lists all 64
/// requirements, those its scans do not check too; a catalogue the vendor published already
/// is left as it is.
async fn publish_cis_aws_catalogue(db: &Writer, audit: &AuditContext) -> anyhow::Result<()> {
    use tidemark_domain::catalogue::Catalogue;
    if tidemark_services::catalogues::find(db, "cis-aws-2.0")
        .await?
        .is_some()
    {
        return Ok(());
    }
    let catalogue = Catalogue::parse_prowler(CIS_AWS_CATALOGUE.as_bytes(), None).map_err(|e| {
        anyhow::anyhow!(
            "the demo's catalogue is not one: {}",
            match e {
                tidemark_domain::input::JsonError::Syntax(s) => s,
                tidemark_domain::input::JsonError::Shape(f) => f.message,
            }
        )
    })?;
    tidemark_services::catalogues::publish(db, catalogue, audit).await?;
    Ok(())
}

/// A key of the account for `machine`, holding one of its seats since 91 days ago and last
/// seen `seen_ago` (its secret thrown away: nobody pushes with it), and how a scan pushed with
/// it says so.
async fn demo_key(
    db: &Writer,
    account: &AccountId,
    license_id: &str,
    machine: &str,
    seen_ago: i64,
) -> anyhow::Result<(String, PushedBy)> {
    let key = ApiKey::generate();
    let id = tidemark_domain::ids::new_key_id();
    let prefix: String = key.expose().chars().take(12).collect();
    let new_key = licenses::NewApiKey {
        id: id.clone(),
        account_id: account.clone(),
        hash: key.hash(),
        prefix: prefix.clone(),
        machine: machine.to_owned(),
        now: now_millis() - 91 * DAY,
    };
    let machine_id = tidemark_domain::ids::new_machine_id();
    let activation = tidemark_store::machines::NewActivation {
        license_id,
        machine_id: &machine_id,
        machine_key: &format!("name:{machine}"),
        key: &new_key,
    };
    tidemark_store::machines::activate(db, &activation).await?;
    tidemark_store::machines::mark_seen(db, &machine_id, now_millis() - seen_ago).await?;
    Ok((
        id,
        PushedBy::ApiKey {
            key_prefix: prefix,
            machine: machine.to_owned(),
        },
    ))
}

/// A teammate sets the project's findings of [`TRIAGE`] aside at `at`.
async fn triage(
    db: &Writer,
    account: &AccountId,
    project_id: &ProjectId,
    project: usize,
    at: i64,
) -> anyhow::Result<()> {
    let audit = AuditContext {
        actor: Actor::User {
            user_id: "usr_demo_priya".to_owned(),
            email: TRIAGER.to_owned(),
        },
        client_ip: None,
        at,
    };
    let Some(line) = find_line(db.as_ref(), account, project_id, None).await? else {
        return Ok(());
    };
    let query = TrackedQuery {
        limit: 500,
        ..TrackedQuery::default()
    };
    let rows = list_tracked(db.as_ref(), &line.id, &query, at).await?;
    for t in TRIAGE.iter().filter(|t| t.project == project) {
        let Some(row) = rows
            .iter()
            .find(|r| r.rule_id == t.rule && r.resource == t.resource)
        else {
            continue;
        };
        let expires = t.days.map(|d| tidemark_domain::to_rfc3339(at + d * DAY));
        let change = TriageChange::parse(t.state, t.reason, expires.as_deref(), at)
            .map_err(|e| anyhow::anyhow!("demo triage refused: {}", e.message))?;
        set_triage(db, account, project_id, &row.id, Some(&change), &audit).await?;
    }
    Ok(())
}
