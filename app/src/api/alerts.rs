//! E-mail alerts in Settings: every member (not only admins) chooses, for the account they
//! are signed in to, whether a failed quality gate, a lower score or compliance drift mails
//! them; admins also choose the warning of an API key about to expire (on by default).

use leptos::prelude::*;

use crate::error::DashboardError;
use crate::model::AlertsView;

#[server(endpoint = "alerts")]
pub async fn load_alerts() -> Result<AlertsView, DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_viewer()?;
    let prefs = tidemark_services::alerts::prefs(&db(), &viewer.account_id, &viewer.user_id)
        .await
        .or_else(crate::error::refused)?;
    Ok(AlertsView {
        email: viewer.email.clone(),
        gate_failed: prefs.gate_failed,
        score_regressed: prefs.score_regressed,
        posture_drifted: prefs.posture_drifted,
        key_expiring: prefs.key_expiring,
        is_admin: viewer.is_admin,
        drift_detection: tidemark_services::posture::has_feature(
            &db(),
            &viewer.account_id,
            tidemark_wire::Feature::DriftDetection,
        )
        .await
        .or_else(crate::error::refused)?,
    })
}

/// Saves the signed-in member's choice. Unticked boxes are not sent by a form, hence the
/// defaults: saving with none ticked turns alerts off.
#[server(endpoint = "save_alerts")]
pub async fn save_alerts(
    #[server(default)] gate_failed: bool,
    #[server(default)] score_regressed: bool,
    #[server(default)] posture_drifted: bool,
    #[server(default)] key_expiring: bool,
) -> Result<(), DashboardError> {
    use super::ssr::*;
    use tidemark_services::alerts::AlertPrefs;
    let viewer = crate::auth::require_viewer()?;
    // Only admins are offered the key warning (only they get it): a member's form leaves
    // their choice as it was, for the day they are made an admin.
    let key_expiring = if viewer.is_admin {
        key_expiring
    } else {
        tidemark_services::alerts::prefs(&db(), &viewer.account_id, &viewer.user_id)
            .await
            .or_else(crate::error::refused)?
            .key_expiring
    };
    let prefs = AlertPrefs {
        gate_failed,
        score_regressed,
        posture_drifted,
        key_expiring,
    };
    let now = tidemark_domain::now_millis();
    // "Not found": removed from the account since the page loaded.
    tidemark_services::alerts::save(&db(), &viewer.account_id, &viewer.user_id, prefs, now)
        .await
        .inspect(|_| back_to_form("save_alerts"))
        .or_else(crate::error::refused)
}
