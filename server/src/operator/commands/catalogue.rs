//! `catalogue import|list`: framework catalogues from Prowler's compliance JSON.

use anyhow::Context as _;
use tidemark_domain::audit::AuditContext;
use tidemark_domain::catalogue::Catalogue;
use tidemark_domain::input::JsonError;
use tidemark_services::catalogues;
use tidemark_store::Writer;

use super::{lines, Report};
use crate::operator::cli::CatalogueCommand;

pub async fn run(
    command: CatalogueCommand,
    db: &Writer,
    audit: &AuditContext,
) -> anyhow::Result<Report> {
    match command {
        CatalogueCommand::Import { file, framework } => {
            let bytes = std::fs::read(&file)
                .with_context(|| format!("could not read {}", file.display()))?;
            let catalogue =
                Catalogue::parse_prowler(&bytes, framework.as_deref()).map_err(|e| match e {
                    JsonError::Syntax(text) => anyhow::anyhow!("{}: {text}", file.display()),
                    JsonError::Shape(field) => {
                        anyhow::anyhow!("{}: {}", file.display(), field.message)
                    }
                })?;
            let (manual, sections) = (catalogue.manual(), catalogue.sections().len());
            let published = catalogues::publish(db, catalogue, audit).await?;
            let s = &published.summary;
            let human = format!(
                "{} {} ({}): {} requirements ({manual} manual) in {sections} sections; rules \
                 {}-<Id>\n",
                if published.replaced {
                    "replaced"
                } else {
                    "published"
                },
                s.framework,
                s.name,
                s.requirements,
                s.framework,
            );
            Report::new(&summary_json(s), human)
        }
        CatalogueCommand::List => {
            let listed = catalogues::list(db).await?;
            let json: Vec<_> = listed.iter().map(summary_json).collect();
            let human = lines(&listed, |s| {
                format!(
                    "{:<24} {:>5} requirements  {}  published {} by {}",
                    s.framework,
                    s.requirements,
                    s.name,
                    tidemark_domain::to_rfc3339(s.published_at),
                    s.published_by
                )
            });
            Report::new(&json, human)
        }
    }
}

fn summary_json(s: &catalogues::CatalogueSummary) -> serde_json::Value {
    serde_json::json!({
        "framework": s.framework,
        "name": s.name,
        "version": s.version,
        "provider": s.provider,
        "requirements": s.requirements,
        "published_at": tidemark_domain::to_rfc3339(s.published_at),
        "published_by": s.published_by,
    })
}
