//! Discovery (RFC 7644 §4): what this service provider supports, its resource types and the
//! schemas of the attributes it keeps.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};
use tidemark_domain::scim::{list_response, Page, GROUP_SCHEMA, MAX_RESULTS, USER_SCHEMA};

use super::{scim_json, ScimClient, ScimFailure};

const SPC_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig";
const RESOURCE_TYPE_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:ResourceType";
const SCHEMA_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:Schema";

pub(super) async fn service_provider_config(client: ScimClient) -> Response {
    scim_json(
        StatusCode::OK,
        &json!({
            "schemas": [SPC_SCHEMA],
            "documentationUri": "https://github.com/tidemark/tidemark/blob/main/docs/scim.md",
            "patch": {"supported": true},
            "bulk": {"supported": false, "maxOperations": 0, "maxPayloadSize": 0},
            "filter": {"supported": true, "maxResults": MAX_RESULTS},
            "changePassword": {"supported": false},
            "sort": {"supported": false},
            "etag": {"supported": false},
            "authenticationSchemes": [{
                "type": "oauthbearertoken",
                "name": "Bearer token",
                "description": "The account's SCIM token (Settings → Provisioning), as \
                    Authorization: Bearer tmk_scim_…",
                "primary": true
            }],
            "meta": {
                "resourceType": "ServiceProviderConfig",
                "location": format!("{}/ServiceProviderConfig", client.base_url),
            }
        }),
    )
}

fn resource_type_list(base: &str) -> Vec<Value> {
    [
        ("User", "/Users", USER_SCHEMA),
        ("Group", "/Groups", GROUP_SCHEMA),
    ]
    .into_iter()
    .map(|(name, endpoint, schema)| {
        json!({
            "schemas": [RESOURCE_TYPE_SCHEMA],
            "id": name,
            "name": name,
            "endpoint": endpoint,
            "description": if name == "User" {
                "A person who signs in to Tidemark"
            } else {
                "A group of people; a group marked in Settings gives the admin role"
            },
            "schema": schema,
            "schemaExtensions": [],
            "meta": {
                "resourceType": "ResourceType",
                "location": format!("{base}/ResourceTypes/{name}"),
            }
        })
    })
    .collect()
}

pub(super) async fn resource_types(client: ScimClient) -> Response {
    let all = resource_type_list(&client.base_url);
    let page = Page {
        start_index: 1,
        count: all.len(),
    };
    scim_json(StatusCode::OK, &list_response(all.len(), &page, all))
}

pub(super) async fn resource_type(
    client: ScimClient,
    Path(id): Path<String>,
) -> Result<Response, ScimFailure> {
    resource_type_list(&client.base_url)
        .into_iter()
        .find(|r| r["id"] == id.as_str())
        .map(|r| scim_json(StatusCode::OK, &r))
        .ok_or_else(|| ScimFailure::not_found("no such resource type"))
}

/// One attribute's definition. `kind` is the SCIM type; `returned` is `default` throughout.
fn attribute(name: &str, kind: &str, description: &str) -> Value {
    json!({
        "name": name,
        "type": kind,
        "multiValued": false,
        "description": description,
        "required": false,
        "caseExact": false,
        "mutability": "readWrite",
        "returned": "default",
        "uniqueness": "none"
    })
}

fn with(mut attr: Value, changes: Value) -> Value {
    if let (Some(a), Some(c)) = (attr.as_object_mut(), changes.as_object()) {
        for (k, v) in c {
            a.insert(k.clone(), v.clone());
        }
    }
    attr
}

fn schema_list(base: &str) -> Vec<Value> {
    let string = |name, description| attribute(name, "string", description);
    let user = json!({
        "schemas": [SCHEMA_SCHEMA],
        "id": USER_SCHEMA,
        "name": "User",
        "description": "A person who signs in to Tidemark: by the work e-mail, or by a userName \
            that is an e-mail address",
        "attributes": [
            with(string("userName", "Unique per account, compared case-insensitively"),
                 json!({"required": true, "uniqueness": "server"})),
            with(string("externalId", "The identity provider's own id"),
                 json!({"caseExact": true})),
            string("displayName", "The name shown for the person"),
            with(attribute("name", "complex", "The person's name"), json!({
                "subAttributes": [
                    string("givenName", "Given name"),
                    string("familyName", "Family name"),
                ]
            })),
            with(attribute("emails", "complex", "The work address is the one kept"), json!({
                "multiValued": true,
                "subAttributes": [
                    string("value", "The address"),
                    with(string("type", "work is the one kept"),
                         json!({"canonicalValues": ["work"]})),
                    attribute("primary", "boolean", "Whether this is the primary address"),
                ]
            })),
            attribute("active", "boolean",
                "false ends the person's membership and sessions in the account at once"),
            with(attribute("groups", "complex", "The groups the person is in"), json!({
                "multiValued": true,
                "mutability": "readOnly",
                "subAttributes": [
                    with(string("value", "The group's id"), json!({"mutability": "readOnly"})),
                    with(attribute("$ref", "reference", "The group's URI"),
                         json!({"mutability": "readOnly", "referenceTypes": ["Group"]})),
                    with(string("display", "The group's name"), json!({"mutability": "readOnly"})),
                    with(string("type", "direct"), json!({"mutability": "readOnly"})),
                ]
            })),
        ],
        "meta": {"resourceType": "Schema", "location": format!("{base}/Schemas/{USER_SCHEMA}")}
    });
    let group = json!({
        "schemas": [SCHEMA_SCHEMA],
        "id": GROUP_SCHEMA,
        "name": "Group",
        "description": "A group of provisioned people",
        "attributes": [
            with(string("displayName", "Unique per account, compared case-insensitively"),
                 json!({"required": true, "uniqueness": "server"})),
            with(string("externalId", "The identity provider's own id"),
                 json!({"caseExact": true})),
            with(attribute("members", "complex", "The people in the group"), json!({
                "multiValued": true,
                "subAttributes": [
                    with(string("value", "A user's id"),
                         json!({"caseExact": true, "mutability": "immutable"})),
                    with(attribute("$ref", "reference", "The user's URI"),
                         json!({"mutability": "immutable", "referenceTypes": ["User"]})),
                    with(string("type", "User"),
                         json!({"mutability": "immutable", "canonicalValues": ["User"]})),
                ]
            })),
        ],
        "meta": {"resourceType": "Schema", "location": format!("{base}/Schemas/{GROUP_SCHEMA}")}
    });
    vec![user, group]
}

pub(super) async fn schemas(client: ScimClient) -> Response {
    let all = schema_list(&client.base_url);
    let page = Page {
        start_index: 1,
        count: all.len(),
    };
    scim_json(StatusCode::OK, &list_response(all.len(), &page, all))
}

pub(super) async fn schema(
    client: ScimClient,
    Path(id): Path<String>,
) -> Result<Response, ScimFailure> {
    schema_list(&client.base_url)
        .into_iter()
        .find(|s| s["id"] == id.as_str())
        .map(|s| scim_json(StatusCode::OK, &s))
        .ok_or_else(|| ScimFailure::not_found("no such schema"))
}
