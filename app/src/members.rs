//! Account members, as the Settings page manages them.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::DashboardError;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberSummary {
    pub email: String,
    pub is_admin: bool,
    /// RFC 3339.
    pub added_at: String,
    pub last_login_at: Option<String>,
}

#[cfg(feature = "ssr")]
impl From<tidemark_store::access::Member> for MemberSummary {
    fn from(m: tidemark_store::access::Member) -> Self {
        MemberSummary {
            email: m.email,
            is_admin: m.role == tidemark_domain::access::Role::Admin,
            added_at: crate::dashboard::format_time_ssr(m.added_at),
            last_login_at: m.last_login_at.map(crate::dashboard::format_time_ssr),
        }
    }
}

/// The signed-in viewer, or `SignedOut`.
#[cfg(feature = "ssr")]
pub fn require_viewer() -> Result<crate::auth::Viewer, DashboardError> {
    match crate::auth::request_viewer() {
        Some(viewer) => Ok(viewer),
        None => crate::error::fail(DashboardError::SignedOut),
    }
}

/// The signed-in viewer if an admin, or `AdminOnly`.
#[cfg(feature = "ssr")]
pub fn require_admin() -> Result<crate::auth::Viewer, DashboardError> {
    let viewer = require_viewer()?;
    if viewer.is_admin {
        Ok(viewer)
    } else {
        crate::error::fail(DashboardError::AdminOnly)
    }
}

#[server(endpoint = "members/list")]
pub async fn list_members() -> Result<Vec<MemberSummary>, DashboardError> {
    let viewer = require_viewer()?;
    let db = expect_context::<tidemark_store::Db>();
    match tidemark_store::access::list_members(&db, &viewer.account_id).await {
        Ok(members) => Ok(members.into_iter().map(MemberSummary::from).collect()),
        Err(err) => crate::error::unavailable(err),
    }
}

/// Adds a person to the viewer's account (admins only).
#[server(endpoint = "members/add")]
pub async fn add_member(
    email: String,
    #[server(default)] admin: bool,
) -> Result<MemberSummary, DashboardError> {
    use tidemark_domain::access::Role;
    let viewer = require_admin()?;
    let Ok(email) = tidemark_domain::text::Email::parse(&email) else {
        return crate::error::fail(DashboardError::Invalid(
            "Enter a valid e-mail address.".into(),
        ));
    };
    let db = expect_context::<tidemark_store::Db>();
    let role = if admin { Role::Admin } else { Role::Member };
    let now = tidemark_domain::now_millis();
    // Run to completion even if the browser goes away mid-write.
    let added = tokio::spawn(async move {
        tidemark_store::access::add_member(&db, &viewer.account_id, &email, role, now).await
    })
    .await;
    match added {
        Ok(Ok(Ok(member))) => Ok(member.into()),
        Ok(Ok(Err(refused))) => crate::error::fail(DashboardError::Conflict(refused.to_string())),
        Ok(Err(err)) => crate::error::unavailable(err),
        Err(err) => crate::error::unavailable(err),
    }
}
