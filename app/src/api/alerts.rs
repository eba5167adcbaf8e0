//! E-mail alerts in Settings: every member (not only admins) chooses, for the account they
//! are signed in to, whether a failed quality gate, a lower score or compliance drift mails
//! them.

use leptos::prelude::*;

use crate::error::DashboardError;
use crate::model::AlertsView;

#[server(endpoint = "alerts")]
pub async fn load_alerts() -> Result<AlertsView, DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_viewer()?;
    let prefs = or_unavailable(
        tidemark_store::alerts::alert_prefs(&db(), &viewer.account_id, &viewer.user_id).await,
    )?;
    Ok(AlertsView {
        email: viewer.email.clone(),
        gate_failed: prefs.gate_failed,
        score_regressed: prefs.score_regressed,
        posture_drifted: prefs.posture_drifted,
        drift_detection: or_unavailable(
            tidemark_store::licenses::find_license_for_account(&db(), &viewer.account_id).await,
        )?
        .is_some_and(|l| {
            l.features()
                .contains(&tidemark_wire::Feature::DriftDetection)
        }),
    })
}

/// Saves the signed-in member's choice. Unticked boxes are not sent by a form, hence the
/// defaults: saving with none ticked turns alerts off.
#[server(endpoint = "save_alerts")]
pub async fn save_alerts(
    #[server(default)] gate_failed: bool,
    #[server(default)] score_regressed: bool,
    #[server(default)] posture_drifted: bool,
) -> Result<(), DashboardError> {
    use super::ssr::*;
    use tidemark_store::alerts::{set_alert_prefs, AlertPrefs};
    let viewer = crate::auth::require_viewer()?;
    let prefs = AlertPrefs {
        gate_failed,
        score_regressed,
        posture_drifted,
    };
    let now = tidemark_domain::now_millis();
    let stored = db()
        .detached(|db| async move {
            set_alert_prefs(&db, &viewer.account_id, &viewer.user_id, prefs, now).await
        })
        .await;
    match or_unavailable(stored)? {
        true => {
            back_to_form("save_alerts");
            Ok(())
        }
        // Removed from the account since the page loaded.
        false => Err(DashboardError::NotFound),
    }
}
