//! Framework catalogues as the vendor publishes them: one row per framework and one per
//! requirement, replaced whole by the next publication, audited (no account: operators'
//! `audit list` without `--account` shows it).

use tidemark_domain::audit::{Action, AuditContext};
use tidemark_domain::catalogue::{Catalogue, CatalogueRequirement};
use tidemark_domain::Millis;

use crate::audit::Change;
use crate::stmt::Stmt;
use crate::tx::{read_all, WriteTx};
use crate::{on_db, Db, StoreError, Writer};

/// Requirements written per statement (10 parameters each, well under SQLite's limit).
const ROWS_PER_INSERT: usize = 200;

/// A published catalogue without its requirements.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct CatalogueSummary {
    pub framework: String,
    pub name: String,
    pub version: String,
    pub provider: Option<String>,
    pub description: Option<String>,
    pub requirements: i64,
    pub published_at: Millis,
    pub published_by: String,
}

const SUMMARY_COLUMNS: &str =
    "framework, name, version, provider, description, requirements, published_at, published_by";

/// Makes `catalogue` its framework's catalogue (replacing one published before), in one
/// transaction with its audit row. `true` when it replaced one.
pub async fn publish_catalogue(
    db: &Writer,
    catalogue: &Catalogue,
    audit: &AuditContext,
) -> Result<bool, StoreError> {
    let mut tx = WriteTx::begin(db).await?;
    let before: Option<(i64,)> = tx
        .fetch_optional(
            Stmt::new("SELECT requirements FROM framework_catalogues WHERE framework = $1")
                .bind(&catalogue.framework),
        )
        .await?;
    tx.execute(
        Stmt::new("DELETE FROM catalogue_requirements WHERE framework = $1")
            .bind(&catalogue.framework),
    )
    .await?;
    tx.execute(
        Stmt::new("DELETE FROM framework_catalogues WHERE framework = $1")
            .bind(&catalogue.framework),
    )
    .await?;
    tx.execute(
        Stmt::new(format!(
            "INSERT INTO framework_catalogues ({SUMMARY_COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
        ))
        .bind(&catalogue.framework)
        .bind(&catalogue.name)
        .bind(&catalogue.version)
        .bind(catalogue.provider.clone())
        .bind(catalogue.description.clone())
        .bind(catalogue.requirements.len() as i64)
        .bind(audit.at)
        .bind(audit.actor.name()),
    )
    .await?;
    for (chunk_no, chunk) in catalogue.requirements.chunks(ROWS_PER_INSERT).enumerate() {
        tx.execute(insert_requirements(
            &catalogue.framework,
            chunk_no * ROWS_PER_INSERT,
            chunk,
        ))
        .await?;
    }
    let change = Change {
        account_id: None,
        action: Action::CataloguePublished,
        target: catalogue.framework.clone(),
        before: before.map(|(n,)| format!("{n} requirements")),
        after: Some(format!(
            "{}: {} requirements ({} manual) in {} sections",
            catalogue.name,
            catalogue.requirements.len(),
            catalogue.manual(),
            catalogue.sections().len()
        )),
    };
    tx.audit(audit, change).await?;
    tx.commit().await?;
    Ok(before.is_some())
}

fn insert_requirements(framework: &str, first: usize, rows: &[CatalogueRequirement]) -> Stmt {
    let values: Vec<String> = (0..rows.len())
        .map(|i| {
            let p = i * 10;
            format!(
                "(${}, ${}, ${}, ${}, ${}, ${}, ${}, ${}, ${}, ${})",
                p + 1,
                p + 2,
                p + 3,
                p + 4,
                p + 5,
                p + 6,
                p + 7,
                p + 8,
                p + 9,
                p + 10
            )
        })
        .collect();
    let mut stmt = Stmt::new(format!(
        "INSERT INTO catalogue_requirements (framework, position, number, rule_id, title, \
         description, section, profile, manual, checks) VALUES {}",
        values.join(", ")
    ));
    for (i, r) in rows.iter().enumerate() {
        stmt = stmt
            .bind(framework)
            .bind((first + i) as i64)
            .bind(&r.number)
            .bind(&r.rule_id)
            .bind(&r.title)
            .bind(r.description.clone())
            .bind(&r.section)
            .bind(r.profile.clone())
            .bind(r.manual)
            .bind(r.checks.join(" "));
    }
    stmt
}

/// Every published catalogue, by framework.
pub async fn list_catalogues(db: &Db) -> Result<Vec<CatalogueSummary>, StoreError> {
    read_all(
        db,
        Stmt::new(format!(
            "SELECT {SUMMARY_COLUMNS} FROM framework_catalogues ORDER BY framework"
        )),
    )
    .await
}

#[derive(sqlx::FromRow)]
struct RequirementRow {
    number: String,
    rule_id: String,
    title: String,
    description: Option<String>,
    section: String,
    profile: Option<String>,
    manual: bool,
    checks: String,
}

impl From<RequirementRow> for CatalogueRequirement {
    fn from(r: RequirementRow) -> Self {
        CatalogueRequirement {
            number: r.number,
            rule_id: r.rule_id,
            title: r.title,
            description: r.description,
            section: r.section,
            profile: r.profile,
            manual: r.manual,
            checks: r.checks.split_whitespace().map(str::to_owned).collect(),
        }
    }
}

/// A framework's catalogue with its requirements in the published order, if one was
/// published.
pub async fn find_catalogue(
    db: &Db,
    framework: &str,
) -> Result<Option<(CatalogueSummary, Catalogue)>, StoreError> {
    let sql = format!("SELECT {SUMMARY_COLUMNS} FROM framework_catalogues WHERE framework = $1");
    let summary: Option<CatalogueSummary> = on_db!(db, pool => {
        sqlx::query_as(&sql).bind(framework).fetch_optional(pool).await
    })?;
    let Some(summary) = summary else {
        return Ok(None);
    };
    let rows: Vec<RequirementRow> = read_all(
        db,
        Stmt::new(
            "SELECT number, rule_id, title, description, section, profile, manual, checks \
             FROM catalogue_requirements WHERE framework = $1 ORDER BY position",
        )
        .bind(framework),
    )
    .await?;
    let catalogue = Catalogue {
        framework: summary.framework.clone(),
        name: summary.name.clone(),
        version: summary.version.clone(),
        provider: summary.provider.clone(),
        description: summary.description.clone(),
        requirements: rows.into_iter().map(CatalogueRequirement::from).collect(),
    };
    Ok(Some((summary, catalogue)))
}

/// The published requirement that is rule `rule_id`, with its catalogue's framework id and
/// name, if any catalogue lists it.
pub async fn find_requirement(
    db: &Db,
    rule_id: &str,
) -> Result<Option<(String, String, CatalogueRequirement)>, StoreError> {
    #[derive(sqlx::FromRow)]
    struct Row {
        framework: String,
        name: String,
        #[sqlx(flatten)]
        requirement: RequirementRow,
    }
    let row: Option<Row> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT r.framework, c.name, r.number, r.rule_id, r.title, r.description, r.section, \
             r.profile, r.manual, r.checks FROM catalogue_requirements r \
             JOIN framework_catalogues c ON c.framework = r.framework \
             WHERE r.rule_id = $1 ORDER BY r.framework LIMIT 1",
        )
        .bind(rule_id)
        .fetch_optional(pool)
        .await
    })?;
    Ok(row.map(|r| (r.framework, r.name, r.requirement.into())))
}
