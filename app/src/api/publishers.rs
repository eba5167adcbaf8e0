//! Trusted publishers in Settings (admins only): the CI identities that may push keyless.
// `add_publisher` takes one argument per field of its form, so the form posts as it is, with
// or without the WASM; the server macro's client half, too.
#![allow(clippy::too_many_arguments)]

use leptos::prelude::*;

use crate::error::DashboardError;
use crate::model::PublishersView;

#[server(endpoint = "publishers")]
pub async fn load_publishers() -> Result<PublishersView, DashboardError> {
    use super::ssr::*;
    use crate::model::PublisherRow;
    let viewer = crate::auth::require_admin()?;
    let config = expect_context::<crate::DashboardConfig>();
    let list = or_unavailable(
        tidemark_store::publishers::list_publishers(&db(), &viewer.account_id).await,
    )?;
    Ok(PublishersView {
        publishers: list
            .into_iter()
            .map(|p| {
                let s = p.spec;
                PublisherRow {
                    id: p.id,
                    provider: s.provider.title().to_owned(),
                    issuer: s.issuer.as_str().to_owned(),
                    repository: s.repository,
                    ids: s
                        .owner_id
                        .zip(s.repository_id)
                        .map(|(o, r)| format!("{o} / {r}")),
                    workflow: s.workflow,
                    environment: s.environment,
                    ref_pattern: s.ref_pattern.map(|r| r.as_str().to_owned()),
                    project: s.projects.stored().map(str::to_owned),
                    last_used_at: p.last_used_at.map(crate::time::format_time),
                }
            })
            .collect(),
        audience: config.oidc_audience.clone(),
        account_id: viewer.account_id.clone(),
    })
}

/// Trusts a CI identity to push (admins only).
#[server(endpoint = "add_publisher")]
pub async fn add_publisher(
    provider: String,
    #[server(default)] issuer: String,
    #[server(default)] repository: String,
    #[server(default)] owner_id: String,
    #[server(default)] repository_id: String,
    #[server(default)] workflow: String,
    #[server(default)] environment: String,
    #[server(default)] ref_pattern: String,
    #[server(default)] subject: String,
    #[server(default)] project: String,
) -> Result<(), DashboardError> {
    use super::ssr::*;
    use tidemark_domain::ci_identity::{PublisherDraft, PublisherSpec};
    use tidemark_store::publishers::{AddOutcome, MAX_PUBLISHERS};
    let viewer = crate::auth::require_admin()?;
    let config = expect_context::<crate::DashboardConfig>();
    let given = |s: String| Some(s).filter(|s| !s.trim().is_empty());
    let draft = PublisherDraft {
        provider,
        issuer: given(issuer),
        repository: given(repository),
        owner_id: given(owner_id),
        repository_id: given(repository_id),
        workflow: given(workflow),
        environment: given(environment),
        ref_pattern: given(ref_pattern),
        subject: given(subject),
        project: given(project),
    };
    let spec = PublisherSpec::parse(&draft, config.oidc_allow_private_issuers)
        .map_err(|e| DashboardError::Invalid(e.message))?;
    let (account, audit) = (viewer.account_id.clone(), viewer.audit());
    let id = tidemark_domain::ids::new_publisher_id();
    let now = tidemark_domain::now_millis();
    let added = db()
        .detached(|db| async move {
            tidemark_store::publishers::add_publisher(&db, &account, &id, &spec, now, &audit).await
        })
        .await;
    match or_unavailable(added)? {
        AddOutcome::Added => {
            back_to_form("add_publisher");
            Ok(())
        }
        AddOutcome::TooMany => Err(DashboardError::Conflict(format!(
            "An account can have {MAX_PUBLISHERS} trusted publishers; remove one first."
        ))),
    }
}

/// Stops trusting a CI identity (admins only); its push tokens stop working at once.
#[server(endpoint = "remove_publisher")]
pub async fn remove_publisher(publisher_id: String) -> Result<(), DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_admin()?;
    if !tidemark_domain::ids::is_publisher_id(&publisher_id) {
        return not_found();
    }
    let (account, audit) = (viewer.account_id.clone(), viewer.audit());
    let removed = db()
        .detached(|db| async move {
            tidemark_store::publishers::remove_publisher(&db, &account, &publisher_id, &audit).await
        })
        .await;
    match or_unavailable(removed)? {
        true => {
            back_to_form("remove_publisher");
            Ok(())
        }
        false => not_found(),
    }
}
