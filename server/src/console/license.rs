//! `GET /console/licenses/{id}`: one licence's page.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use tidemark_domain::console::StaffRoles;
use tidemark_domain::license::License;
use tidemark_domain::license_actions::{ActionKind, MAX_EXTEND_DAYS};
use tidemark_domain::now_millis;
use tidemark_domain::vendor::{Permission, SUPPORT_EXTENSION_MS};
use tidemark_services::console::{LicenseDossier, ACTIVITY_DAYS};

use app::console::actions::ActionsView;
use app::console::activity::DayUse;
use app::console::license::{
    license_page, HistoryLine, LicenseView, MachineLine, MemberLine, ProjectLine,
};
use app::time::{date, format_time};

use crate::state::AppState;

use super::render;
use super::staff::Staff;

/// `?done=<action>`: where a confirmed action's redirect lands.
#[derive(Debug, serde::Deserialize)]
pub struct Done {
    done: Option<String>,
}

pub async fn show_license(
    State(state): State<AppState>,
    staff: Staff,
    Path(id): Path<String>,
    done: Result<Query<Done>, QueryRejection>,
) -> Response {
    let done = done
        .ok()
        .and_then(|q| q.0.done)
        .and_then(|d| ActionKind::parse(&d))
        .map(|k| k.done().to_owned());
    let dossier =
        match tidemark_services::console::license_dossier(&state.db, &id, &staff.audit).await {
            Ok(dossier) => dossier,
            Err(err) => return super::service_error(err),
        };
    let default_release = state.config.limits.seat_release_after_days;
    let now = now_millis();
    let actions = actions_view(&dossier, &staff.roles, now);
    let view = LicenseView {
        actions,
        done,
        ..license_view(dossier, now, default_release)
    };
    let title = format!("Licence {}", view.id);
    render::page(StatusCode::OK, &title, Some(&staff), license_page(view))
}

fn names(features: &[tidemark_wire::Feature]) -> String {
    if features.is_empty() {
        return "none".to_owned();
    }
    let names: Vec<&str> = features.iter().map(|f| f.as_str()).collect();
    names.join(", ")
}

/// The action forms `roles` may use, filled in from the licence as it stands.
fn actions_view(d: &LicenseDossier, roles: &StaffRoles, now: i64) -> ActionsView {
    let l: &License = &d.license;
    let on = l.features();
    ActionsView {
        license_id: l.id.clone(),
        allowed: ActionKind::ALL
            .into_iter()
            .filter(|k| roles.may(k.permission()))
            .collect(),
        roles: roles.in_words(),
        extend_max_days: if roles.may(Permission::SetExpiry) {
            MAX_EXTEND_DAYS
        } else {
            u32::try_from(SUPPORT_EXTENSION_MS / tidemark_domain::time::DAY_MS).unwrap_or(30)
        },
        expiry_date: date(l.expires_at),
        tier: l.tier.as_str().to_owned(),
        suspended: l.suspended_at.is_some(),
        max_machines: l.max_machines.map_or(String::new(), |n| n.to_string()),
        release_after_days: l
            .seat_release_after_days
            .map_or(String::new(), |n| n.to_string()),
        features: tidemark_wire::Feature::ALL
            .into_iter()
            .map(|f| (f.as_str(), f.label(), on.contains(&f)))
            .collect(),
        max_projects: l.max_projects.map_or(String::new(), |n| n.to_string()),
        held_machines: d
            .machines
            .iter()
            .filter(|m| m.released_at.is_none() && m.offline_until.is_none_or(|u| u <= now))
            .map(|m| (m.id.clone(), format!("{} ({})", m.name, m.id)))
            .collect(),
    }
}

/// Every one of the last 90 days, oldest first, with its counts (0 for a quiet day).
fn use_by_day(days: &[tidemark_store::activity::LicenseDay], now: i64) -> Vec<DayUse> {
    let today = tidemark_domain::client_version::day_of(now);
    (0..ACTIVITY_DAYS)
        .rev()
        .map(|back| {
            let day = today - back * tidemark_domain::time::DAY_MS;
            let found = days.iter().find(|d| d.day == day);
            DayUse {
                date: date(day),
                validations: found.map_or(0, |d| d.validations),
                pushes: found.map_or(0, |d| d.pushes),
            }
        })
        .collect()
}

/// The dossier in the words and dates the page shows.
fn license_view(d: LicenseDossier, now: i64, default_release_days: u32) -> LicenseView {
    let l = &d.license;
    let held = d
        .machines
        .iter()
        .filter(|m| m.released_at.is_none())
        .count();
    let seats = match l.max_machines {
        Some(max) => format!("{held} of {max} held"),
        None => format!("{held} held, no limit"),
    };
    let release = match l.seat_release_after_days {
        Some(0) => "never".to_owned(),
        Some(days) => format!("after {days} days unseen"),
        None => format!("after {default_release_days} days unseen (the server's default)"),
    };
    let facts = vec![
        ("State", l.state(now).as_str().to_owned()),
        ("Tier", l.tier.as_str().to_owned()),
        ("Expires", date(l.expires_at)),
        ("Features", names(&l.features())),
        ("Added to the tier", names(&l.features_added)),
        ("Removed from the tier", names(&l.features_removed)),
        (
            "Max projects",
            l.project_cap()
                .map_or("no limit".to_owned(), |n| n.to_string()),
        ),
        ("Seats", seats),
        ("Seats freed", release),
        ("Account", l.account_id.to_string()),
        ("Created", date(l.created_at)),
    ];
    let machines = d
        .machines
        .iter()
        .map(|m| MachineLine {
            name: m.name.clone(),
            fingerprint: m
                .machine_key
                .strip_prefix("fp:")
                .map_or("named only".to_owned(), str::to_owned),
            activated: format_time(m.activated_at),
            last_seen: format_time(m.last_seen_at),
            seat: match (m.released_at, m.offline_until) {
                (Some(at), _) => format!("released {}", date(at)),
                (None, Some(until)) if until > now => format!("offline until {}", date(until)),
                (None, _) => "holds a seat".to_owned(),
            },
            live_keys: m.live_keys,
            client: m
                .client_version
                .clone()
                .unwrap_or_else(|| "not said".to_owned()),
        })
        .collect();
    let members = d
        .members
        .iter()
        .map(|m| MemberLine {
            email: m.email.clone(),
            role: m.role.as_str().to_owned(),
            last_sign_in: m.last_login_at.map_or("never".to_owned(), format_time),
        })
        .collect();
    let projects = d
        .projects
        .iter()
        .map(|p| ProjectLine {
            name: if p.archived {
                format!("{} (archived)", p.label)
            } else {
                p.label.clone()
            },
            scans: p.scans,
            last_push: p.last_push.map_or("never".to_owned(), format_time),
        })
        .collect();
    let events = d
        .events
        .iter()
        .map(|e| HistoryLine {
            at: format_time(e.at),
            what: e.event.clone(),
            who: String::new(),
            detail: e.reason.clone().unwrap_or_default(),
        })
        .collect();
    let audit = d
        .audit
        .iter()
        .map(|a| HistoryLine {
            at: format_time(a.at),
            what: tidemark_domain::audit::Action::parse(&a.action)
                .map_or(a.action.clone(), |action| action.label().to_owned()),
            who: a.actor.clone(),
            detail: match (&a.before_summary, &a.after_summary) {
                (Some(before), Some(after)) => format!("{before} → {after}"),
                (None, Some(after)) => after.clone(),
                (Some(before), None) => format!("was {before}"),
                (None, None) => a.target.clone(),
            },
        })
        .collect();
    LicenseView {
        id: l.id.clone(),
        email: l.email.clone(),
        facts,
        machines,
        members,
        projects,
        events,
        audit,
        days: use_by_day(&d.days, now),
        actions: ActionsView::default(),
        done: None,
    }
}
