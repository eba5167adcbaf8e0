//! Which credential a command sends: `TIDEMARK_API_KEY`, a keyless CI push token, or this
//! machine's activation; and what to tell people when the service refuses it.

use crate::client::{Client, ClientError};
use crate::credentials;
use crate::env::{Env, NotAuthorized};

/// What a push authenticates with.
pub(crate) enum Credential {
    /// `TIDEMARK_API_KEY` (a CI secret).
    ApiKey { key: String },
    /// A push token from this CI job's OpenID Connect token.
    Keyless(Box<tidemark_wire::OidcExchangeResponse>),
    /// The credentials file `tidemark activate` wrote.
    Activation,
}

/// The key the management commands (`findings`, `gate`) send: `TIDEMARK_API_KEY`, a keyless
/// CI push token (which reads but cannot change), or this machine's activation.
pub(crate) async fn api_key(client: &Client, env: &Env) -> anyhow::Result<String> {
    Ok(match credential(client, env).await? {
        Credential::ApiKey { key } => key,
        Credential::Keyless(answer) => answer.token,
        Credential::Activation => {
            let path = env.credentials_path()?;
            credentials::load(&path)?
                .ok_or_else(|| {
                    NotAuthorized(
                        "not activated: run `tidemark activate` or set TIDEMARK_API_KEY".into(),
                    )
                })?
                .api_key
        }
    })
}

/// `TIDEMARK_API_KEY` first; else, in a CI job that offers an OpenID Connect token, keyless;
/// else the activation on this machine. A CI job offering no token is told how to get one,
/// unless this machine was activated (a self-hosted runner).
pub(crate) async fn credential(client: &Client, env: &Env) -> anyhow::Result<Credential> {
    if let Some(key) = env.var("TIDEMARK_API_KEY") {
        return Ok(Credential::ApiKey { key });
    }
    match crate::keyless::detect(env) {
        Ok(Some(source)) => {
            let answer = crate::keyless::push_token(client, env, &source).await?;
            Ok(Credential::Keyless(Box::new(answer)))
        }
        Ok(None) => Ok(Credential::Activation),
        Err(no_token) => {
            let activated = env.credentials_path().is_ok_and(|p| p.exists());
            if activated {
                Ok(Credential::Activation)
            } else {
                Err(no_token.into())
            }
        }
    }
}

/// Adds the next step to service errors where the service's own message does not say it.
pub(crate) fn explain(err: ClientError) -> anyhow::Error {
    match err.code() {
        Some("invalid_api_key") | Some("malformed_api_key")
            if !err.to_string().contains("activate") =>
        {
            NotAuthorized(format!("{err}; run `tidemark activate` again")).into()
        }
        _ => anyhow::Error::new(err),
    }
}
