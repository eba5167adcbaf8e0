//! How a scan was pushed, and keyless CI's token exchange (`POST /v1/auth/oidc/exchange`).

use serde::{Deserialize, Serialize};

#[cfg(feature = "openapi")]
use utoipa::ToSchema;

/// How a scan was pushed: with an API key, or by a CI job that proved who it is with its
/// OpenID Connect token (keyless).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PushedBy {
    /// An API key from activation.
    ApiKey {
        /// The key's first characters, as Settings shows them (`svc_api_AbCd`).
        key_prefix: String,
        /// The machine name given at activation.
        machine: String,
    },
    /// A CI job's identity, from the claims of the token it exchanged.
    Ci(CiIdentity),
}

impl PushedBy {
    /// The words the dashboard, the report and the exports say it in:
    /// `API key svc_api_Cw46… (posture-ci)`, `Keyless CI · GitHub Actions acme/api · …`.
    pub fn describe(&self) -> String {
        match self {
            PushedBy::ApiKey {
                key_prefix,
                machine,
            } => format!("API key {key_prefix}… ({machine})"),
            PushedBy::Ci(id) => {
                let mut out = format!("Keyless CI · {} {}", id.provider_name(), id.repository);
                for part in id.details() {
                    out.push_str(" · ");
                    out.push_str(&part);
                }
                if let Some(run) = &id.run_id {
                    out.push_str(&format!(" · run {run}"));
                }
                out
            }
        }
    }
}

impl CiIdentity {
    /// The CI service by name.
    pub fn provider_name(&self) -> &'static str {
        match self.provider.as_str() {
            "github" => "GitHub Actions",
            "gitlab" => "GitLab CI",
            _ => "CI",
        }
    }

    /// Workflow, ref, environment and short commit, those it has, in that order.
    pub fn details(&self) -> Vec<String> {
        let mut out = Vec::new();
        out.extend(self.workflow.clone());
        out.extend(self.git_ref.clone());
        out.extend(
            self.environment
                .as_ref()
                .map(|e| format!("environment {e}")),
        );
        out.extend(
            self.sha
                .as_ref()
                .map(|s| format!("commit {}", s.chars().take(7).collect::<String>())),
        );
        out
    }
}

/// A CI job's identity as Tidemark verified it (every field comes from the job's signed
/// OpenID Connect token, none from the request body).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct CiIdentity {
    /// `github`, `gitlab` or `custom`.
    pub provider: String,
    /// The token's issuer (`iss`).
    pub issuer: String,
    /// `owner/name` (GitHub) or the project path (GitLab); for a custom issuer, the subject.
    pub repository: String,
    /// The repository's immutable numeric id (GitHub `repository_id`, GitLab `project_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository_id: Option<String>,
    /// The workflow file that ran (GitHub: the caller's, from `workflow_ref`; GitLab: the
    /// CI configuration, from `ci_config_ref_uri`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    /// The git ref the job ran for, e.g. `refs/heads/main`.
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
    /// The commit the job ran for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha: Option<String>,
    /// The deployment environment, when the job had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    /// The run (GitHub `run_id`) or job (GitLab `job_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// A link to the run in the CI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_url: Option<String>,
}

/// `POST /v1/auth/oidc/exchange`: a CI job's OpenID Connect token, to exchange for a
/// short-lived push token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct OidcExchangeRequest {
    /// The job's token (a JWS in compact form), requested with Tidemark's audience.
    pub token: String,
    /// The account to push to (its id, from Settings). Needed only when trusted publishers of
    /// more than one account accept the same CI job; otherwise the one that does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
}

/// A push token for the CI job that proved its identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct OidcExchangeResponse {
    /// `tmk_ci_` + base62: send it as `X-API-Key` or `Authorization: Bearer` to
    /// `/v1/dashboard/push` and the `/v1` exports. Shown once; stored only as a hash.
    pub token: String,
    /// When it stops working (15 minutes after the exchange).
    #[cfg_attr(feature = "openapi", schema(format = DateTime))]
    pub expires_at: String,
    /// The account it pushes to.
    pub account_id: String,
    /// The project labels it may push and read; absent means every project of the account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub projects: Option<Vec<String>>,
    /// The identity Tidemark matched.
    pub identity: CiIdentity,
}
