//! What every OpenAPI document the server publishes (`/v1`, `/admin/v1`) shares: the
//! answers any operation may give when the database is away or full.

struct OutageAnswers;

impl utoipa::Modify for OutageAnswers {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        use utoipa::openapi::{header::HeaderBuilder, Content, Ref, ResponseBuilder};
        let answer = |description: &str| {
            let seconds = ObjectBuilder::new()
                .schema_type(Type::Integer)
                .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
                    utoipa::openapi::KnownFormat::Int64,
                )))
                .minimum(Some(0));
            ResponseBuilder::new()
                .description(description)
                .content(
                    "application/json",
                    Content::new(Some(Ref::from_schema_name("ErrorBody"))),
                )
                .header(
                    "Retry-After",
                    HeaderBuilder::new()
                        .schema(Some(seconds))
                        .description(Some("Seconds to wait"))
                        .build(),
                )
                .build()
        };
        let unavailable = "`database_unavailable`: the database cannot be reached or does not \
            answer (a restart, a failover, a stall); answered within \
            TIDEMARK_DB_STATEMENT_TIMEOUT_SECONDS. Retry after Retry-After: nothing was \
            changed, or a write that had begun finishes behind this answer and its retry is \
            answered as a replay";
        let full = "`storage_full`: the database has no room left to write; reads still work. \
            Retry after Retry-After";
        for item in openapi.paths.paths.values_mut() {
            let operations = [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.delete,
                &mut item.patch,
            ];
            for operation in operations.into_iter().flatten() {
                let responses = &mut operation.responses.responses;
                match responses.get_mut("503") {
                    // Another 503 (server_busy) is documented already: one entry for both.
                    Some(utoipa::openapi::RefOr::T(existing)) => {
                        existing.description =
                            format!("{}; or {unavailable}", existing.description);
                    }
                    _ => {
                        responses.insert("503".into(), answer(unavailable).into());
                    }
                }
                responses.insert("507".into(), answer(full).into());
            }
        }
    }
}

/// Documents `503 database_unavailable` and `507 storage_full` on every operation.
pub fn add_outage_answers(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::Modify as _;
    OutageAnswers.modify(doc);
}
