//! The dashboard's pages. Each loads through server functions inside `Suspense`, so the
//! server renders a complete page and the browser takes over for navigation and actions.

pub mod alerts;
pub mod audit;
pub mod custom_frameworks;
pub mod finding;
pub mod inbox;
pub mod posture;
pub mod project;
pub mod projects;
pub mod provisioning;
pub mod publishers;
pub mod requirement;
pub mod scan;
pub mod settings;
pub mod storage;
pub mod webhooks;

use leptos::prelude::*;

use crate::error::{
    DashboardError, UNAVAILABLE_EXPLANATION, UNAVAILABLE_RETRY_SECS, UNAVAILABLE_TITLE,
};
use crate::model::{GateStatus, Severity, SeverityCounts};

/// `n` and its noun, singular for one: "1 scan", "3 scans".
pub fn count_of(n: impl Into<i64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A scan's quality-gate verdict as a tag (nothing to show when the project had no gate).
pub fn gate_badge(status: GateStatus) -> impl IntoView {
    match status {
        GateStatus::None => {
            view! { <span class="muted" title="The project had no quality gate">"–"</span> }
                .into_any()
        }
        GateStatus::Passed => view! { <span class="gate passed">"passed"</span> }.into_any(),
        GateStatus::Failed => view! { <span class="gate failed">"failed"</span> }.into_any(),
    }
}

/// What a plain form posting to the server function at `path` came back with (see
/// `api::ssr::back_to_form`): `done=<endpoint>` when it was saved, the server function's
/// error when it was not (under the server's seal, `tidemark_domain::form_seal`), nothing
/// when this page was not its answer.
pub fn form_outcome(path: &str) -> Option<Result<(), String>> {
    let query = leptos_router::hooks::use_query_map();
    let query = query.read_untracked();
    if query.get("__path").as_deref() == Some(path) {
        // Only the server's own redirect: an address anyone wrote shows no error.
        let sealed =
            |err: &str| sealed_by_the_server(path, err, &query.get("__sig").unwrap_or_default());
        if let Some(err) = query.get("__err").filter(|err| sealed(err)) {
            let err =
                leptos::server_fn::error::ServerFnUrlError::<DashboardError>::decode_err(&err);
            answer_with_status(err.status());
            return Some(Err(err.to_string()));
        }
    }
    let endpoint = path.strip_prefix("/api/").unwrap_or(path);
    (query.get("done").as_deref() == Some(endpoint)).then_some(Ok(()))
}

#[cfg(feature = "ssr")]
fn sealed_by_the_server(path: &str, err: &str, sig: &str) -> bool {
    use_context::<tidemark_services::crypto::FormSealKeys>()
        .is_some_and(|keys| keys.verify(path, err, sig))
}

#[cfg(not(feature = "ssr"))]
fn sealed_by_the_server(_path: &str, _err: &str, _sig: &str) -> bool {
    false
}

/// The page that says a form was refused answers with the refusal's status (a member's
/// refused change `403`, a bad value `422`), not `200` around it.
pub fn answer_with_status(status: u16) {
    #[cfg(feature = "ssr")]
    if let (Some(resp), Ok(status)) = (
        use_context::<leptos_axum::ResponseOptions>(),
        http::StatusCode::from_u16(status),
    ) {
        resp.set_status(status);
    }
    #[cfg(not(feature = "ssr"))]
    let _ = status;
}

/// Why a plain form posting to `path` was refused, when this page is that answer (a form
/// whose success answers with a page of its own, such as Rotate Key's).
pub fn form_error(path: &str) -> impl IntoView {
    match form_outcome(path) {
        Some(Err(e)) => Some(view! { <p class="notice error" role="alert">{e}</p> }),
        _ => None,
    }
}

/// The answer of a plain form, as a notice: `saved` when it was saved, the error otherwise.
pub fn form_notice(path: &str, saved: &str) -> impl IntoView {
    form_outcome(path).map(|outcome| match outcome {
        Ok(()) => view! { <p class="notice" role="status">{saved.to_owned()}</p> }.into_any(),
        Err(e) => view! { <p class="notice error" role="alert">{e}</p> }.into_any(),
    })
}

pub fn fmt_score(score: f64) -> String {
    format!("{score:.1}")
}

/// A score change, coloured: a regression is red, an improvement green.
pub fn delta_badge(delta: Option<f64>) -> impl IntoView {
    delta_span(delta, "since the previous scan")
}

pub fn delta_span(delta: Option<f64>, since: &str) -> AnyView {
    match delta {
        None => view! { <span class="delta flat">"–"</span> }.into_any(),
        Some(d) if d < 0.0 => view! {
            <span class="delta down" title=format!("Regression {since}")>{format!("▼ {:.1}", -d)}</span>
        }
        .into_any(),
        Some(d) if d > 0.0 => view! {
            <span class="delta up" title=format!("Improvement {since}")>{format!("▲ {d:.1}")}</span>
        }
        .into_any(),
        Some(_) => view! { <span class="delta flat">"± 0.0"</span> }.into_any(),
    }
}

/// A score's change and what it is against: a pull request's scan against its base branch
/// (`Some(branch)`), any other against the previous scan on its line.
pub fn change_badge(delta: f64, base: Option<&str>) -> impl IntoView {
    let against = base.map(|b| {
        view! { " " <span class="muted small" data-testid="change-against">{format!("against {b}")}</span> }
    });
    let since = match base {
        Some(b) => format!("against {b}'s scan"),
        None => "since the previous scan".to_owned(),
    };
    view! { <span class="change">{delta_span(Some(delta), &since)}{against}</span> }
}

pub fn loading() -> impl IntoView {
    view! { <p class="loading" role="status" aria-live="polite">"Loading…"</p> }
}

pub fn error_view(err: DashboardError) -> AnyView {
    // The page answers with the status it means (403, 404, …), not 200 around an error; the
    // routes that can refuse render whole before they answer (`SsrMode::Async`).
    answer_with_status(err.status());
    #[cfg(feature = "ssr")]
    if let (Some(resp), DashboardError::Unavailable) =
        (use_context::<leptos_axum::ResponseOptions>(), &err)
    {
        resp.insert_header(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_static(UNAVAILABLE_RETRY_SECS),
        );
    }
    match err {
        // The page asks again by itself (without JavaScript too), so whoever is looking sees
        // it come back when the database does.
        DashboardError::Unavailable => view! {
            <leptos_meta::Meta http_equiv="refresh" content=UNAVAILABLE_RETRY_SECS/>
            <section class="card" role="alert">
                <h1>{UNAVAILABLE_TITLE}</h1>
                <p>{UNAVAILABLE_EXPLANATION}</p>
            </section>
        }
        .into_any(),
        DashboardError::SignedOut => view! {
            <p class="notice error" role="alert">
                "Your session has ended. " <a href="/signin">"Sign in again"</a>
            </p>
        }
        .into_any(),
        DashboardError::NotFound => view! {
            <section class="card">
                <h1>"Not found"</h1>
                <p>"There is nothing here in your account. " <a href="/projects">"Back to projects"</a></p>
            </section>
        }
        .into_any(),
        other => view! { <p class="notice error" role="alert">{other.to_string()}</p> }.into_any(),
    }
}

/// The four severity counts as coloured chips.
pub fn severity_chips(counts: SeverityCounts) -> impl IntoView {
    view! {
        <ul class="sev-chips" aria-label="Findings by severity">
            {Severity::ALL
                .iter()
                .map(|&severity| {
                    let name = severity.as_str();
                    view! { <li class=format!("sev {name}")>{counts.get(severity)} " " {name}</li> }
                })
                .collect_view()}
        </ul>
    }
}

/// A time the server writes in UTC ("2026-11-22 06:43 UTC", `crate::time::format_time`),
/// marked so that `public/dashboard.js` shows it in the viewer's local time with how long ago
/// it was, the UTC text kept as its tooltip. Without the script it stays as written.
pub fn utc_time(text: String) -> impl IntoView {
    // "2026-11-22 06:43 UTC" -> "2026-11-22T06:43Z", what `<time datetime>` and JS read.
    let iso = text
        .strip_suffix(" UTC")
        .map(|t| format!("{}Z", t.replacen(' ', "T", 1)));
    view! { <time class="utc" datetime=iso>{text}</time> }
}

/// The one-time token of a form that makes a secret (`tidemark_domain::handover`): sent
/// twice, the form acts once, and its answer is a page a reload cannot repeat.
pub fn once_field() -> impl IntoView {
    #[cfg(feature = "ssr")]
    let token = tidemark_domain::handover::new_token();
    #[cfg(not(feature = "ssr"))]
    let token = String::new();
    view! { <input type="hidden" name="once" value=token/> }
}

/// What a page whose secret was already shown says when it is loaded again.
pub fn shown_already(what: &'static str) -> impl IntoView {
    view! {
        <p class="notice" role="status" data-testid="shown-already">
            {format!("{what} was shown once, when it was made, and is not shown again. If it was not stored, make a new one.")}
        </p>
    }
}

/// A time as [`utc_time`] writes it, or `none` ("never", "–") when there is none.
pub fn utc_time_or(text: Option<String>, none: &'static str) -> AnyView {
    match text {
        Some(text) => utc_time(text).into_any(),
        None => none.into_any(),
    }
}

/// The fields every triage form shares: the state to set aside as, a reason, an optional end
/// date. `prefix` names the inputs' ids (`<prefix>-reason`); `several` words it for a batch.
pub(crate) fn triage_fields(
    prefix: &'static str,
    chosen: Option<tidemark_wire::findings::TriageState>,
    several: bool,
) -> impl IntoView {
    use tidemark_wire::findings::TriageState;
    let (legend, why, until) = if several {
        (
            "Set them aside as",
            "Why these are acceptable, wrong, or staying",
            "Until (optional: then they are open again)",
        )
    } else {
        (
            "Set it aside as",
            "Why this is acceptable, wrong, or staying",
            "Until (optional: then it is open again)",
        )
    };
    view! {
        <fieldset>
            <legend>{legend}</legend>
            {TriageState::ALL.into_iter().map(|s| view! {
                <label class="choice">
                    <input type="radio" name="state" value=s.as_str() required
                        checked=chosen == Some(s)/>
                    " " {s.label()}
                </label>
            }).collect_view()}
        </fieldset>
        <label for=format!("{prefix}-reason")>"Reason (required)"</label>
        <textarea id=format!("{prefix}-reason") name="reason" required maxlength="1000" rows="3"
            placeholder=why></textarea>
        <label for=format!("{prefix}-expires")>{until}</label>
        <input type="date" id=format!("{prefix}-expires") name="expires"/>
    }
}
