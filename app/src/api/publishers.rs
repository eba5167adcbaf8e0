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
    let list = tidemark_services::publishers::list(&db(), &viewer.account_id)
        .await
        .or_else(crate::error::refused)?;
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
    tidemark_services::publishers::add(&db(), &viewer.account_id, spec, &viewer.audit())
        .await
        .inspect(|_| back_to_form("add_publisher"))
        .or_else(crate::error::refused)
}

/// Stops trusting a CI identity (admins only); its push tokens stop working at once.
#[server(endpoint = "remove_publisher")]
pub async fn remove_publisher(publisher_id: String) -> Result<(), DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_admin()?;
    tidemark_services::publishers::remove(&db(), &viewer.account_id, &publisher_id, &viewer.audit())
        .await
        .inspect(|_| back_to_form("remove_publisher"))
        .or_else(crate::error::refused)
}
