//! Settings' e-mail alerts panel: each member's own choice, for the account in use.

use leptos::prelude::*;

use super::{action_error, error_view, loading};
use crate::api::alerts::{load_alerts, SaveAlerts};
use crate::model::AlertsView;

/// Its own island: saving refreshes only this panel. Every member sees it (alerts are
/// personal; admins do not choose for others).
#[cfg_attr(feature = "hydrate", island(lazy))]
#[cfg_attr(not(feature = "hydrate"), island)]
pub fn AlertsPanel() -> impl IntoView {
    let save = ServerAction::<SaveAlerts>::new();
    let alerts = Resource::new(move || save.version().get(), |_| load_alerts());
    let saved = move || matches!(save.value().get(), Some(Ok(())));
    view! {
        <section class="card" aria-labelledby="alerts-heading" data-testid="alerts">
            <h2 id="alerts-heading">"E-mail alerts"</h2>
            <Suspense fallback=loading>
                {move || Suspend::new(async move {
                    match alerts.await {
                        Ok(v) => alerts_form(v, save).into_any(),
                        Err(err) => error_view(err),
                    }
                })}
            </Suspense>
            {move || saved().then(|| view! { <p class="notice" role="status" data-testid="alerts-saved">"Saved."</p> })}
            {action_error(save)}
        </section>
    }
}

fn alerts_form(v: AlertsView, save: ServerAction<SaveAlerts>) -> impl IntoView {
    view! {
        <p class="muted small">
            "One e-mail per push to " <strong>{v.email}</strong>
            ", whichever of these it did, with the gate's reasons and a link to the scan."
        </p>
        <ActionForm action=save attr:class="stacked">
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
            </fieldset>
            <button type="submit" class="primary">"Save alert settings"</button>
        </ActionForm>
    }
}
