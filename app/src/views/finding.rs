//! A tracked finding's page (`/projects/<id>/findings/<fid>`): rule, resource, severity,
//! message and remediation, its life on its branch as a timeline of changes, and its triage
//! (a plain form posting to [`triage_path`]; the answer comes back with `?triage=<code>`).
//! Server-rendered: nothing here adds to the WASM bundle.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};
use tidemark_wire::findings::FindingState;

use super::{error_view, loading};
use crate::api::findings::load_finding;
use crate::model::FindingPageView;

/// Where the page's triage form posts.
pub fn triage_path(project_id: &str, finding_id: &str) -> String {
    format!("/projects/{project_id}/findings/{finding_id}/triage")
}

/// A finding's page, by project and finding id.
pub fn finding_href(project_id: &str, finding_id: &str) -> String {
    format!("/projects/{project_id}/findings/{finding_id}")
}

#[component]
pub fn FindingPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let ids = move || {
        let p = params.read();
        (
            p.get("project_id").unwrap_or_default(),
            p.get("finding_id").unwrap_or_default(),
        )
    };
    let data = Resource::new(ids, |(project, finding)| load_finding(project, finding));
    let notice = move || {
        // Each answer, and what a refusal is answered with: 422 for a bad value, 403 for a
        // member's change to a triage that holds.
        let (role, text, refused) = match query.read().get("triage").as_deref() {
            Some("saved") => (
                "status",
                "Triaged: its life below shows who set it, why and until when.",
                None,
            ),
            Some("undone") => ("status", "Triage undone: the finding is open again.", None),
            Some("reason") => (
                "alert",
                "Not saved: say why (a reason of up to 1,000 characters).",
                Some(422),
            ),
            Some("expiry") => (
                "alert",
                "Not saved: the expiry must be a date in the future.",
                Some(422),
            ),
            Some("state") => (
                "alert",
                "Not saved: choose accepted risk, false positive or won't fix.",
                Some(422),
            ),
            Some("forbidden") => (
                "alert",
                "Not saved: only an admin can change or undo a triage that holds.",
                Some(403),
            ),
            _ => return None,
        };
        if let Some(status) = refused {
            super::answer_with_status(status);
        }
        Some(view! { <p class="notice" role=role data-testid="triage-notice">{text}</p> })
    };
    view! {
        {notice}
        <Suspense fallback=loading>
            {move || Suspend::new(async move {
                match data.await {
                    Ok(v) => page(v).into_any(),
                    Err(err) => error_view(err),
                }
            })}
        </Suspense>
    }
}

fn state_badge(state: FindingState) -> impl IntoView {
    let (class, text) = match state {
        FindingState::Open => ("state open", "Open"),
        FindingState::Fixed => ("state fixed", "Fixed"),
        FindingState::Triaged => ("state triaged", "Triaged"),
    };
    view! { <span class=class data-testid="finding-state">{text}</span> }
}

fn page(v: FindingPageView) -> impl IntoView {
    let f = &v.finding;
    let title = format!(
        "{} on {} · {} · Tidemark",
        f.rule_id, f.resource, v.project_label
    );
    let scan_href = |scan: &str| format!("/projects/{}/scans/{scan}", v.project_id);
    let branch = f
        .branch
        .clone()
        .unwrap_or_else(|| "the default branch".into());
    view! {
        <Title text=title/>
        <nav class="crumbs" aria-label="Breadcrumb">
            <a href="/projects">"Projects"</a> " / "
            <a href=format!("/projects/{}", v.project_id)>{v.project_label.clone()}</a> " / "
        </nav>
        <section class="page-head">
            <h1><code>{f.rule_id.clone()}</code></h1>
            <p class="headline">
                <span class=format!("sev {}", f.severity.as_str())>{f.severity.as_str()}</span>
                " " {state_badge(f.state)}
                " on " <code data-testid="finding-resource">{f.resource.clone()}</code>
            </p>
        </section>
        <section class="card" aria-label="What it is">
            <p data-testid="finding-message">{v.message.clone()}</p>
            {(!v.remediation.is_empty()).then(|| view! {
                <p><strong>"Remediation: "</strong>{v.remediation.clone()}</p>
            })}
            <dl class="meta">
                <dt>"Branch"</dt><dd>{branch}</dd>
                <dt>"First seen"</dt>
                <dd data-testid="finding-first-seen">
                    {super::utc_time(v.first_seen.clone())} " in "
                    <a href=scan_href(&f.first_seen_scan_id)>{f.first_seen_scan_id.clone()}</a>
                </dd>
                <dt>"Last seen"</dt>
                <dd data-testid="finding-last-seen">{super::utc_time(v.last_seen.clone())} " in "
                    <a href=scan_href(&f.last_seen_scan_id)>{f.last_seen_scan_id.clone()}</a></dd>
                {v.fixed.clone().zip(f.fixed_scan_id.clone()).map(|(when, scan)| view! {
                    <dt>"Fixed"</dt>
                    <dd data-testid="finding-fixed">{super::utc_time(when)} " in " <a href=scan_href(&scan)>{scan.clone()}</a></dd>
                })}
                {(f.reopened_count > 0).then(|| view! {
                    <dt>"Came back"</dt>
                    <dd data-testid="finding-reopened">{super::count_of(f.reopened_count as i64, "time", "times")}</dd>
                })}
            </dl>
        </section>
        {triage_section(&v)}
        {timeline(&v)}
    }
}

fn triage_section(v: &FindingPageView) -> impl IntoView {
    let f = &v.finding;
    let action = triage_path(&v.project_id, &f.id);
    let current = match f.triage.clone() {
        Some(t) => {
            let until = t
                .expires_at
                .as_deref()
                .map(|e| format!(" until {}", &e[..e.len().min(10)]))
                .unwrap_or_default();
            let lapsed = f.state == FindingState::Open;
            view! {
                <p data-testid="finding-triage">
                    <strong>{format!("{}{until}", t.state.label())}</strong>
                    {lapsed.then_some(" (lapsed: the finding is open again)")}
                    " · " {t.by.clone()}
                </p>
                <blockquote class="reason">{t.reason.clone()}</blockquote>
            }
            .into_any()
        }
        None => view! {
            <p class="muted" data-testid="finding-triage">
                "Not triaged: it counts for the gate's new-findings rule."
            </p>
        }
        .into_any(),
    };
    let form = v.can_triage.then(|| {
        let chosen = f.triage.as_ref().map(|t| t.state);
        view! {
            <form method="post" action=action.clone() class="triage-form" data-testid="triage-form">
                <input type="hidden" name="action" value="set"/>
                {super::triage_fields("triage", chosen, false)}
                <button type="submit" class="primary">"Triage"</button>
            </form>
        }
    });
    let undo = v.can_undo.then(|| view! {
        <form method="post" action=action.clone() class="inline">
            <input type="hidden" name="action" value="undo"/>
            <button type="submit" class="secondary" data-testid="triage-undo">"Undo triage"</button>
        </form>
    });
    let blocked = (!v.can_triage).then_some(view! {
        <p class="muted small">"An admin can change or undo this triage."</p>
    });
    view! {
        <section class="card" aria-labelledby="triage-heading">
            <h2 id="triage-heading">"Triage"</h2>
            {current}
            {form}
            {undo}
            {blocked}
        </section>
    }
}

/// The finding's life: each change with its scan, the unchanged scans after it folded in,
/// and its triage changes in time among them.
fn timeline(v: &FindingPageView) -> impl IntoView {
    let project_id = v.project_id.clone();
    let scan_link = move |scan: &str| {
        view! { <a href=format!("/projects/{project_id}/scans/{scan}")>{scan.to_owned()}</a> }
    };
    view! {
        <section class="card" aria-labelledby="timeline-heading">
            <h2 id="timeline-heading">"Its life on the branch"</h2>
            <p class="muted small">{format!(
                "What changed, from the {} scans of its branch since it was first seen; unchanged scans are folded into the change before them.",
                v.scans_read
            )}</p>
            <ol class="timeline" data-testid="finding-timeline">
                {v.life.iter().map(|entry| {
                    let e = &entry.event;
                    let folded = (e.unchanged > 0).then(|| {
                        let last = e.last_scan_id.clone().unwrap_or_default();
                        view! {
                            <div class="muted small" data-testid="timeline-folded">
                                {format!("Then unchanged in {} ", super::count_of(e.unchanged, "scan", "scans"))}
                                "(latest " {scan_link(&last)} " · " {super::utc_time_or(entry.last_at.clone(), "")} ")"
                            </div>
                        }
                    });
                    let unknown = (e.unknown > 0).then(|| view! {
                        <div class="muted small" data-testid="timeline-unknown">
                            {format!(
                                "{} after it no longer {} findings (housekeeping removed them): unknown there, not a change.",
                                super::count_of(e.unknown, "scan", "scans"),
                                if e.unknown == 1 { "keeps its" } else { "keep their" },
                            )}
                        </div>
                    });
                    view! {
                        <li class=e.kind.class() data-kind=format!("{:?}", e.kind).to_lowercase()>
                            <strong class="tl-status">{e.kind.label()}</strong>
                            " " {e.text.clone()}
                            <span class="muted small">" · " {super::utc_time(entry.at.clone())}
                                {e.scan_id.clone().map(|scan| view! { " · " {scan_link(&scan)} })}
                            </span>
                            {e.reason.clone().map(|r| view! { <div class="reason">{r}</div> })}
                            {folded}
                            {unknown}
                        </li>
                    }
                }).collect_view()}
            </ol>
        </section>
    }
}
