//! A member's e-mail alerts (Settings → Alerts): which of their account's events mail them.

use tidemark_domain::Millis;
pub use tidemark_store::alerts::AlertPrefs;
use tidemark_store::Db;
use tidemark_wire::ids::AccountId;

use crate::ServiceError;

pub async fn prefs(
    db: &Db,
    account_id: &AccountId,
    user_id: &str,
) -> Result<AlertPrefs, ServiceError> {
    Ok(tidemark_store::alerts::alert_prefs(db, account_id, user_id).await?)
}

/// Stores the member's choices ("not found" when they are no longer a member).
pub async fn save(
    db: &Db,
    account_id: &AccountId,
    user_id: &str,
    prefs: AlertPrefs,
    now: Millis,
) -> Result<(), ServiceError> {
    let (account, user) = (account_id.clone(), user_id.to_owned());
    let stored = db
        .detached(|db| async move {
            tidemark_store::alerts::set_alert_prefs(&db, &account, &user, prefs, now).await
        })
        .await?;
    stored.then_some(()).ok_or(ServiceError::NotFound)
}
