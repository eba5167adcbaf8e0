//! Settings → Frameworks: the account's custom frameworks, read by every member; uploaded
//! (YAML or JSON, validated exactly as `PUT /v1/frameworks/{id}` validates it) and removed by
//! admins on a licence with the feature.

use leptos::prelude::*;

use crate::error::DashboardError;
use crate::model::FrameworksView;

#[server(endpoint = "frameworks")]
pub async fn load_frameworks() -> Result<FrameworksView, DashboardError> {
    use tidemark_wire::Feature;
    let viewer = crate::auth::require_viewer()?;
    let services = expect_context::<tidemark_services::Services>();
    let db = services.db();
    let license = tidemark_services::account::license(db, &viewer.account_id)
        .await
        .or_else(crate::error::refused)?;
    let listed = tidemark_services::frameworks::list(db, &viewer.account_id)
        .await
        .or_else(crate::error::refused)?;
    let fmt = crate::time::format_time;
    Ok(FrameworksView {
        is_admin: viewer.is_admin,
        available: license
            .as_ref()
            .is_some_and(|l| l.features().contains(&Feature::CustomFrameworks)),
        tier: license.map(|l| l.tier.as_str().to_owned()),
        needed_tier: tidemark_domain::tier::lowest_tier_with(Feature::CustomFrameworks)
            .as_str()
            .to_owned(),
        frameworks: listed
            .into_iter()
            .map(|f| {
                let document = f.framework.document().clone();
                crate::model::CustomFrameworkView {
                    id: f.framework.id().to_owned(),
                    posture_name: f.framework.posture_name(),
                    title: document.title,
                    description: document.description,
                    controls: document.controls,
                    updated_at: fmt(f.updated_at),
                    updated_by: f.updated_by,
                }
            })
            .collect(),
    })
}

/// Sets (creates or replaces) a framework from a document (the page's script reads the
/// chosen file into `document`, or it is pasted). Its id is the document's `id`, else
/// `framework_id`. The refusals are the API's, naming the field.
#[server(endpoint = "upload_framework")]
pub async fn upload_framework(
    document: String,
    #[server(default)] framework_id: String,
    #[server(default)] file_name: String,
) -> Result<(), DashboardError> {
    use tidemark_domain::frameworks::ValidFramework;
    let viewer = crate::auth::require_admin()?;
    let services = expect_context::<tidemark_services::Services>();
    ensure_feature(services.db(), &viewer.account_id).await?;
    let format = document_format(&file_name, &document);
    let id = match declared_id(&document, format) {
        Some(id) => id,
        None if !framework_id.trim().is_empty() => framework_id.trim().to_owned(),
        None => {
            return Err(DashboardError::Invalid(
                "id: the document has no `id`; add one, or type the framework's id in the Id \
                 field."
                    .into(),
            ))
        }
    };
    let framework =
        ValidFramework::parse(&id, document.as_bytes(), format).map_err(|e| match e {
            tidemark_domain::input::JsonError::Syntax(text) => DashboardError::Invalid(text),
            tidemark_domain::input::JsonError::Shape(field) => {
                DashboardError::Invalid(field.message)
            }
        })?;
    let audit = viewer.audit();
    tidemark_services::frameworks::set(
        services.db(),
        &viewer.account_id,
        framework,
        &audit,
        audit.at,
    )
    .await
    .map(|_| crate::api::ssr::back_to_form("upload_framework"))
    .or_else(crate::error::refused)
}

/// Removes a framework (the posture kept for it goes with it).
#[server(endpoint = "remove_framework")]
pub async fn remove_framework(framework_id: String) -> Result<(), DashboardError> {
    let viewer = crate::auth::require_admin()?;
    let services = expect_context::<tidemark_services::Services>();
    ensure_feature(services.db(), &viewer.account_id).await?;
    tidemark_services::frameworks::remove(
        services.db(),
        &viewer.account_id,
        &framework_id,
        &viewer.audit(),
    )
    .await
    .inspect(|_| crate::api::ssr::back_to_form("remove_framework"))
    .or_else(crate::error::refused)
}

/// The licence's refusal, naming the tier that has the feature (as the API's 403 does).
#[cfg(feature = "ssr")]
async fn ensure_feature(
    db: &tidemark_services::Db,
    account_id: &tidemark_wire::ids::AccountId,
) -> Result<(), DashboardError> {
    use tidemark_wire::Feature;
    let license = tidemark_services::account::license(db, account_id)
        .await
        .or_else(crate::error::refused)?;
    match license {
        Some(l) if l.features().contains(&Feature::CustomFrameworks) => Ok(()),
        other => Err(DashboardError::NotInTier(format!(
            "Custom frameworks require the {} tier or above; this license is on the {} tier.",
            tidemark_domain::tier::lowest_tier_with(Feature::CustomFrameworks).as_str(),
            other.map_or("no", |l| l.tier.as_str()),
        ))),
    }
}

/// YAML or JSON: by the file's extension, else by the document's first character.
#[cfg(feature = "ssr")]
fn document_format(file_name: &str, document: &str) -> tidemark_domain::frameworks::Format {
    use tidemark_domain::frameworks::Format;
    let lower = file_name.to_ascii_lowercase();
    if lower.ends_with(".json") {
        Format::Json
    } else if lower.ends_with(".yaml") || lower.ends_with(".yml") {
        Format::Yaml
    } else if document.trim_start().starts_with('{') {
        Format::Json
    } else {
        Format::Yaml
    }
}

/// The `id` a document declares, if it reads as a mapping with a string `id`.
#[cfg(feature = "ssr")]
fn declared_id(document: &str, format: tidemark_domain::frameworks::Format) -> Option<String> {
    tidemark_domain::frameworks::declared_id(document.as_bytes(), format)
}
