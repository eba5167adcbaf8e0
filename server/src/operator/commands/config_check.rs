//! `config check`: the configuration this process sees, secrets redacted, and whether what it
//! names answers: the database, its migrations, the SMTP server, OpenID Connect discovery.

use std::time::Duration;

use serde::Serialize;
use tidemark_store::Db;

use super::Report;
use crate::config::{Config, MasterKeySource, VARIABLES};
use crate::crypto;

#[derive(Debug, Serialize)]
struct Setting {
    name: &'static str,
    /// What the server uses; secrets shown only as what is safe (a key's id, a URL without
    /// its password).
    value: String,
    /// `environment`, `file` (`<NAME>_FILE`) or `default`.
    source: &'static str,
    secret: bool,
}

#[derive(Debug, Serialize)]
struct Check {
    check: &'static str,
    ok: bool,
    detail: String,
}

#[derive(Debug, Serialize)]
struct CheckReport {
    ok: bool,
    configuration: Vec<Setting>,
    checks: Vec<Check>,
}

/// A URL as it may be shown: without its password or credential-looking query values.
pub fn redact_url(text: &str) -> String {
    let Ok(mut url) = reqwest::Url::parse(text) else {
        return "(set, not a URL)".to_owned();
    };
    if url.password().is_some() {
        let _ = url.set_password(Some("redacted"));
    }
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .map(|(k, v)| {
            let lower = k.to_lowercase();
            let hidden = ["pass", "secret", "key", "token"]
                .iter()
                .any(|w| lower.contains(w));
            (
                k.into_owned(),
                if hidden {
                    "redacted".into()
                } else {
                    v.into_owned()
                },
            )
        })
        .collect();
    if !pairs.is_empty() {
        url.query_pairs_mut().clear().extend_pairs(pairs);
    }
    url.to_string()
}

fn settings(config: &Config, lookup: &impl Fn(&str) -> Option<String>) -> Vec<Setting> {
    VARIABLES
        .iter()
        .map(|v| {
            let set = |name: &str| lookup(name).filter(|s| !s.trim().is_empty());
            let source = if set(v.name).is_some() {
                "environment"
            } else if v.secret && set(&format!("{}_FILE", v.name)).is_some() {
                "file"
            } else {
                "default"
            };
            let value = match v.name {
                "DATABASE_URL" => redact_url(config.database.url.expose()),
                "TIDEMARK_SMTP_URL" => config
                    .mail
                    .smtp_url
                    .as_ref()
                    .map_or_else(|| v.default.to_owned(), |u| redact_url(u.expose())),
                "TIDEMARK_MASTER_KEY" => match &config.keys.master_key_source {
                    MasterKeySource::Environment => {
                        format!("key {}", crypto::key_id(&config.keys.master_key))
                    }
                    MasterKeySource::DevelopmentFile(path) => format!(
                        "key {} (development key in {})",
                        crypto::key_id(&config.keys.master_key),
                        path.display()
                    ),
                },
                "TIDEMARK_MASTER_KEY_PREVIOUS" => config
                    .keys
                    .master_key_previous
                    .as_ref()
                    .map_or_else(String::new, |k| format!("key {}", crypto::key_id(k))),
                "TIDEMARK_OIDC_CLIENT_SECRET" => if config.signin.oidc.is_some() {
                    "(set)"
                } else {
                    ""
                }
                .to_owned(),
                "TIDEMARK_BASE_URL" => config.http.base_url.clone(),
                "TIDEMARK_DASHBOARD_URL" => config.http.dashboard_url.clone(),
                "TIDEMARK_DATA_DIR" => config.data_dir.display().to_string(),
                _ if v.secret => "(set)".to_owned(),
                _ => set(v.name).unwrap_or_else(|| v.default.to_owned()),
            };
            Setting {
                name: v.name,
                value,
                source,
                secret: v.secret,
            }
        })
        .collect()
}

async fn check_database(config: &Config, checks: &mut Vec<Check>) {
    let db = match Db::connect(config.database.url.expose(), 2).await {
        Ok(db) => db,
        Err(err) => {
            checks.push(Check {
                check: "database",
                ok: false,
                detail: format!("could not connect: {err}"),
            });
            return;
        }
    };
    checks.push(Check {
        check: "database",
        ok: true,
        detail: format!("{} answers", db.backend().as_str()),
    });
    checks.push(match db.pending_migrations().await {
        Ok(pending) if pending.is_empty() => Check {
            check: "migrations",
            ok: true,
            detail: "the schema is current".into(),
        },
        Ok(pending) => Check {
            check: "migrations",
            ok: false,
            detail: format!(
                "{} pending ({}); run `tidemark-server migrate`",
                pending.len(),
                pending.join(", ")
            ),
        },
        Err(err) => Check {
            check: "migrations",
            ok: false,
            detail: format!("could not read them: {err}"),
        },
    });
    db.close().await;
}

async fn check_smtp(config: &Config) -> Check {
    use lettre::{AsyncSmtpTransport, Tokio1Executor};
    let Some(url) = &config.mail.smtp_url else {
        return Check {
            check: "smtp",
            ok: true,
            detail: format!(
                "not configured: mail is written as files under {}",
                config.data_dir.join("outbox").display()
            ),
        };
    };
    let transport: AsyncSmtpTransport<Tokio1Executor> =
        match AsyncSmtpTransport::<Tokio1Executor>::from_url(url.expose()) {
            Ok(builder) => builder.timeout(Some(Duration::from_secs(10))).build(),
            Err(err) => {
                return Check {
                    check: "smtp",
                    ok: false,
                    detail: format!("TIDEMARK_SMTP_URL is not a usable SMTP URL: {err}"),
                }
            }
        };
    match transport.test_connection().await {
        Ok(true) => Check {
            check: "smtp",
            ok: true,
            detail: format!("{} answers", redact_url(url.expose())),
        },
        Ok(false) => Check {
            check: "smtp",
            ok: false,
            detail: "the server did not accept a connection".into(),
        },
        Err(err) => Check {
            check: "smtp",
            ok: false,
            detail: format!("could not connect: {err}"),
        },
    }
}

async fn check_oidc(config: &Config) -> Check {
    use openidconnect::core::CoreProviderMetadata;
    let Some(oidc) = &config.signin.oidc else {
        return Check {
            check: "oidc",
            ok: true,
            detail: "not configured: OpenID Connect sign-in is off".into(),
        };
    };
    let detail = async {
        let issuer = openidconnect::IssuerUrl::new(oidc.issuer.clone())
            .map_err(|e| format!("TIDEMARK_OIDC_ISSUER is not a URL: {e}"))?;
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| e.to_string())?;
        let metadata = CoreProviderMetadata::discover_async(issuer, &http)
            .await
            .map_err(|e| format!("discovery at {} failed: {e}", oidc.issuer))?;
        Ok::<_, String>(format!(
            "{} discovered (authorization endpoint {})",
            oidc.issuer,
            metadata.authorization_endpoint().as_str()
        ))
    }
    .await;
    match detail {
        Ok(detail) => Check {
            check: "oidc",
            ok: true,
            detail,
        },
        Err(detail) => Check {
            check: "oidc",
            ok: false,
            detail,
        },
    }
}

/// Reads the configuration through `lookup` (the environment) and checks it.
pub async fn check_config(lookup: impl Fn(&str) -> Option<String>) -> anyhow::Result<Report> {
    let config = match Config::from_lookup(&lookup) {
        Ok(config) => config,
        Err(err) => {
            let report = CheckReport {
                ok: false,
                configuration: Vec::new(),
                checks: vec![Check {
                    check: "configuration",
                    ok: false,
                    detail: err.to_string(),
                }],
            };
            return Ok(
                Report::new(&report, format!("configuration: FAILED  {err}\n"))?
                    .failed_if(Some("the configuration is not valid".into())),
            );
        }
    };
    let configuration = settings(&config, &lookup);
    let mut checks = vec![Check {
        check: "configuration",
        ok: true,
        detail: format!("{:?} environment", config.environment).to_lowercase(),
    }];
    check_database(&config, &mut checks).await;
    checks.push(check_smtp(&config).await);
    checks.push(check_oidc(&config).await);

    let mut human = String::new();
    for s in &configuration {
        human.push_str(&format!(
            "{:<40} {:<12} {}\n",
            s.name,
            s.source,
            if s.value.is_empty() { "-" } else { &s.value }
        ));
    }
    human.push('\n');
    for c in &checks {
        human.push_str(&format!(
            "{:<14} {:<6} {}\n",
            c.check,
            if c.ok { "ok" } else { "FAILED" },
            c.detail
        ));
    }
    let failed: Vec<&str> = checks.iter().filter(|c| !c.ok).map(|c| c.check).collect();
    let failure = (!failed.is_empty()).then(|| format!("check(s) failed: {}", failed.join(", ")));
    let report = CheckReport {
        ok: failed.is_empty(),
        configuration,
        checks,
    };
    Ok(Report::new(&report, human)?.failed_if(failure))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_passwords_and_credential_parameters() {
        assert_eq!(
            redact_url("postgres://tidemark:hunter2@db.internal:5432/tidemark"),
            "postgres://tidemark:redacted@db.internal:5432/tidemark"
        );
        let smtp = redact_url("smtps://mailer:s3cret@mail.example:465?tls=required");
        assert!(
            !smtp.contains("s3cret") && smtp.contains("tls=required"),
            "{smtp}"
        );
        let q = redact_url("postgres://db/t?user=a&password=hunter2&sslmode=require");
        assert!(
            !q.contains("hunter2") && q.contains("sslmode=require"),
            "{q}"
        );
        assert_eq!(redact_url("not a url"), "(set, not a URL)");
    }
}
