//! Settings' e-mail alerts panel: each member's own choice, for the account in use.

use leptos::prelude::*;

use leptos::server_fn::ServerFn;

use super::{error_view, form_outcome, loading};
use crate::api::alerts::{load_alerts, SaveAlerts};
use crate::model::AlertsView;

/// Every member sees it (alerts are personal; admins do not choose for others). Server-rendered
/// with a plain form: saving posts to the `save_alerts` server function, which sends the
/// browser back here saying so (the section loads no WASM).
#[component]
pub fn AlertsPanel() -> impl IntoView {
    let alerts = Resource::new(|| (), |_| load_alerts());
    let notice = form_outcome(SaveAlerts::PATH).map(|outcome| match outcome {
        Ok(()) => view! { <p class="notice" role="status" data-testid="alerts-saved">"Saved."</p> }
            .into_any(),
        Err(e) => view! { <p class="notice error" role="alert">{e}</p> }.into_any(),
    });
    view! {
        <section class="card" aria-labelledby="alerts-heading" data-testid="alerts">
            <h2 id="alerts-heading">"E-mail alerts"</h2>
            <Suspense fallback=loading>
                {move || Suspend::new(async move {
                    match alerts.await {
                        Ok(v) => alerts_form(v).into_any(),
                        Err(err) => error_view(err),
                    }
                })}
            </Suspense>
            {notice}
        </section>
    }
}

fn alerts_form(v: AlertsView) -> impl IntoView {
    view! {
        <p class="muted small">
            "One e-mail per push to " <strong>{v.email}</strong>
            ", whichever of these it did, with the gate's reasons and a link to the scan."
        </p>
        <form method="post" action=SaveAlerts::PATH class="stacked">
            <fieldset>
                <legend>"E-mail me when a push to any project of this account"</legend>
                <label>
                    <input type="checkbox" name="gate_failed" value="true" checked=v.gate_failed data-testid="alert-gate-failed"/>
                    " fails its quality gate"
                </label>
                <label>
                    <input type="checkbox" name="score_regressed" value="true" checked=v.score_regressed data-testid="alert-score-regressed"/>
                    " lowers the project's score"
                </label>
                {v.drift_detection.then(|| view! {
                    <label>
                        <input type="checkbox" name="posture_drifted" value="true" checked=v.posture_drifted data-testid="alert-posture-drifted"/>
                        " drifts: a compliance requirement that passed in the previous scan fails"
                    </label>
                })}
            </fieldset>
            {v.is_admin.then(|| view! {
                <fieldset>
                    <legend>"As an admin, e-mail me when"</legend>
                    <label>
                        <input type="checkbox" name="key_expiring" value="true" checked=v.key_expiring data-testid="alert-key-expiring"/>
                        " an API key of this account expires within a week"
                    </label>
                </fieldset>
            })}
            <button type="submit" class="primary">"Save alert settings"</button>
        </form>
    }
}
