//! Framework catalogues: the vendor publishes each scanned framework's full list of
//! requirements (from Prowler's compliance JSON), so the dashboard shows the requirements no
//! scan evaluated, with titles, descriptions and sections, and the compliance CSV fills them.

use tidemark_domain::audit::AuditContext;
pub use tidemark_domain::catalogue::{Catalogue, CatalogueRequirement};
pub use tidemark_store::catalogues::CatalogueSummary;
use tidemark_store::Db;

use crate::ServiceError;

/// A publication's outcome: the catalogue as stored, and whether it replaced one.
#[derive(Debug)]
pub struct Published {
    pub summary: CatalogueSummary,
    pub replaced: bool,
}

/// Makes `catalogue` its framework's catalogue, replacing any before it, audited.
pub async fn publish(
    db: &Db,
    catalogue: Catalogue,
    audit: &AuditContext,
) -> Result<Published, ServiceError> {
    let audit = audit.clone();
    let framework = catalogue.framework.clone();
    let replaced = db
        .detached(move |db| async move {
            tidemark_store::catalogues::publish_catalogue(&db, &catalogue, &audit).await
        })
        .await?;
    let (summary, _) = tidemark_store::catalogues::find_catalogue(db, &framework)
        .await?
        .ok_or(ServiceError::NotFound)?;
    tracing::info!(framework = %framework, requirements = summary.requirements, replaced, "framework catalogue published");
    Ok(Published { summary, replaced })
}

pub async fn list(db: &Db) -> Result<Vec<CatalogueSummary>, ServiceError> {
    Ok(tidemark_store::catalogues::list_catalogues(db).await?)
}

/// The framework's catalogue, or `None` when none was published (the dashboard then shows
/// the requirements scans reported, and says so).
pub async fn find(db: &Db, framework: &str) -> Result<Option<Catalogue>, ServiceError> {
    Ok(tidemark_store::catalogues::find_catalogue(db, framework)
        .await?
        .map(|(_, c)| c))
}

/// [`find`], with the publication's summary; "not found" when none was published.
pub async fn show(db: &Db, framework: &str) -> Result<(CatalogueSummary, Catalogue), ServiceError> {
    tidemark_store::catalogues::find_catalogue(db, framework)
        .await?
        .ok_or(ServiceError::NotFound)
}

/// One requirement across the account, as its page shows it: what the catalogue says of it
/// (when one lists it) and every resource its rule judged in each live project's latest
/// default-branch scan.
#[derive(Debug)]
pub struct RequirementAcross {
    /// The catalogue's framework id and name, and its requirement.
    pub described: Option<(String, String, CatalogueRequirement)>,
    pub resources: Vec<tidemark_store::posture::requirement::RequirementResource>,
}

pub async fn requirement_across(
    db: &Db,
    account_id: &tidemark_wire::ids::AccountId,
    rule_id: &str,
) -> Result<RequirementAcross, ServiceError> {
    Ok(RequirementAcross {
        described: tidemark_store::catalogues::find_requirement(db, rule_id).await?,
        resources: tidemark_store::posture::requirement::requirement_across(
            db, account_id, rule_id,
        )
        .await?,
    })
}
