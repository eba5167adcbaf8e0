//! `activate` (online and offline) and `status`: the licence on this machine, and the
//! verdict cache that lets the scanner run offline for a while.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context as _};
use chrono::{DateTime, Utc};

use crate::client::Client;
use crate::credential::explain;
use crate::credentials::{self, Credentials};
pub use crate::env::{Env, GitRunner, NotAuthorized};
use crate::exit;
use crate::license::{self, Mode};
use crate::verdict::TrustedKeys;

fn read_license_key(env: &Env, key_file: Option<PathBuf>) -> anyhow::Result<String> {
    let key = match key_file {
        Some(f) => std::fs::read_to_string(&f)
            .with_context(|| format!("could not read {}", f.display()))?,
        None => (env.read_license_key)().context("could not read the license key")?,
    };
    let key = key.trim();
    if key.is_empty() {
        bail!("no license key given; it is in your license e-mail (ask for it again with the form on the website)");
    }
    Ok(crate::license_key_hash(key))
}

pub(crate) async fn activate(
    client: &Client,
    env: &Env,
    out: &mut (dyn Write + Send),
    key_file: Option<PathBuf>,
    machine: Option<String>,
    print_key: bool,
) -> anyhow::Result<u8> {
    let path = env.credentials_path()?;
    if !print_key {
        // Refuse to go on over a file with loose permissions rather than silently replace it.
        credentials::load(&path)?;
    }
    let hash = read_license_key(env, key_file)?;
    let machine = machine
        .or_else(|| env.var("HOSTNAME"))
        .unwrap_or_else(|| "scanner".to_owned());
    let fingerprint = crate::machine::fingerprint(env);
    let activated = client
        .activate(&hash, &machine, &fingerprint)
        .await
        .map_err(explain)?;
    if print_key {
        writeln!(out, "{}", activated.api_key)?;
        return Ok(0);
    }
    // The signing keys are pinned here, from the service itself (over TLS in production).
    let set = client.keys().await.map_err(explain)?;
    let mut trusted = TrustedKeys::pin(&set)
        .context("the service's key set could not be trusted; activation stopped")?;
    let outcome = client
        .verified(activated.verdict, &hash, &fingerprint, &mut trusted)
        .await;
    let (verdict, mode) = license::after_validation(env.now, Ok(None), env.now, outcome);
    credentials::save(
        &path,
        &Credentials {
            url: client.base_url().to_owned(),
            api_key: activated.api_key,
            license_key_hash: hash,
            validation: verdict.map(|v| v.to_cache(v.issued_at())),
            trusted_keys: Some(trusted),
        },
    )?;
    writeln!(
        out,
        "Activated {machine} on the {} tier (account {}).",
        activated.tier.as_str(),
        activated.account_id
    )?;
    writeln!(out, "Credentials saved to {} (mode 0600).", path.display())?;
    print_mode(out, env.now, &mode)?;
    Ok(0)
}

/// `activate --offline FILE`: an air-gapped machine installs a signed licence file.
pub(crate) fn activate_offline(
    env: &Env,
    out: &mut (dyn Write + Send),
    key_file: Option<PathBuf>,
    file: &std::path::Path,
) -> anyhow::Result<u8> {
    use crate::license::{Kind, Verdict};
    let path = env.credentials_path()?;
    let existing = credentials::load(&path)?;
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("could not read {}", file.display()))?;
    let license: tidemark_wire::verdict::OfflineLicenseFile = serde_json::from_str(&text)
        .with_context(|| format!("{} is not an offline licence file", file.display()))?;
    if license.format != tidemark_wire::verdict::OFFLINE_FILE_FORMAT {
        bail!("{} is not an offline licence file", file.display());
    }
    let hash = read_license_key(env, key_file)?;
    let fingerprint = crate::machine::fingerprint(env);
    // Keys this machine already trusts (it was online once, or the build's anchor) decide
    // which of the file's keys count; a first activation pins the file's own.
    let first = existing
        .as_ref()
        .and_then(|c| c.trusted_keys.clone())
        .or_else(TrustedKeys::anchor);
    let mut trusted = match first {
        Some(mut t) => {
            t.learn(&license.keys).context(
                "the licence file's keys are not vouched for by the keys this machine trusts",
            )?;
            t
        }
        None => {
            let pinned = TrustedKeys::pin(&license.keys)
                .context("the licence file's key set does not verify")?;
            let kids: Vec<&str> = pinned.keys.iter().map(|k| k.kid.as_str()).collect();
            writeln!(
                out,
                "Trusting signing key(s) {} from the file (compare with Settings → Licence or \
                 `tidemark-server signing-key list`).",
                kids.join(", ")
            )?;
            pinned
        }
    };
    let claims = trusted
        .verify(&license.verdict, Kind::OfflineFile.typ())
        .map_err(|e| NotAuthorized(format!("the offline licence file: {e}")))?;
    crate::verdict::Expect::for_license(&hash, &fingerprint)
        .check(&claims)
        .map_err(NotAuthorized)?;
    let verdict = Verdict {
        claims,
        jws: license.verdict,
        kind: Kind::OfflineFile,
    };
    license::judge(env.now, &verdict, env.now).map_err(NotAuthorized)?;
    let (url, api_key) = existing
        .map(|c| (c.url, c.api_key))
        .unwrap_or_else(|| (verdict.claims.iss.clone(), String::new()));
    credentials::save(
        &path,
        &Credentials {
            url,
            api_key,
            license_key_hash: hash,
            validation: Some(verdict.to_cache(env.now)),
            trusted_keys: Some(std::mem::take(&mut trusted)),
        },
    )?;
    writeln!(
        out,
        "Installed the offline licence from {}; credentials saved to {} (mode 0600).",
        file.display(),
        path.display()
    )?;
    print_mode(
        out,
        env.now,
        &Mode::Licensed {
            verdict: Box::new(verdict),
            offline: true,
        },
    )?;
    Ok(0)
}

/// The cached verdict, verified: `Ok(None)` when there is none, `Err` saying why it cannot
/// be trusted.
fn open_cache(creds: &Credentials, fingerprint: &str) -> Result<Option<license::Verdict>, String> {
    let Some(cache) = &creds.validation else {
        return Ok(None);
    };
    let trusted = creds
        .trusted_keys
        .as_ref()
        .ok_or("the cached licence verdict cannot be checked: no signing key is pinned")?;
    let claims = trusted
        .verify(&cache.verdict, cache.kind.typ())
        .map_err(|e| format!("the cached licence verdict is not trustworthy: {e}"))?;
    crate::verdict::Expect::for_license(&creds.license_key_hash, fingerprint).check(&claims)?;
    Ok(Some(license::Verdict {
        claims,
        jws: cache.verdict.clone(),
        kind: cache.kind,
    }))
}

/// The stored credentials, revalidated if the cache is stale or untrustworthy; saves what
/// changed.
pub(crate) async fn checked_license(
    client: &Client,
    env: &Env,
    explicit: bool,
) -> anyhow::Result<(Credentials, Mode)> {
    let path = env.credentials_path()?;
    let mut creds = credentials::load(&path)?.ok_or_else(|| {
        NotAuthorized(format!(
            "this machine is not activated ({} does not exist); run `tidemark activate`",
            path.display()
        ))
    })?;
    let stored = creds.clone();
    let fingerprint = crate::machine::fingerprint(env);
    let opened = open_cache(&creds, &fingerprint);
    let offline_file = creds
        .validation
        .as_ref()
        .is_some_and(|c| c.kind == license::Kind::OfflineFile);
    let newest_seen = creds
        .validation
        .as_ref()
        .map_or(DateTime::<Utc>::MIN_UTC, |c| c.newest_seen);
    let needs = match &opened {
        Ok(v) => license::needs_validation(env.now, v.as_ref(), explicit),
        Err(_) => !offline_file,
    };
    let cache_view = opened.as_ref().map(Option::as_ref).map_err(String::as_str);
    let (verdict, mode, newest) = if needs {
        let mut trusted = creds.trusted_keys.clone();
        let outcome = match &mut trusted {
            Some(t) => {
                client
                    .validation_outcome(&creds.license_key_hash, &fingerprint, t)
                    .await
            }
            // Activated before signed verdicts: pin from the service now.
            None => match client.keys().await {
                Ok(set) => match TrustedKeys::pin(&set) {
                    Ok(mut t) => {
                        let outcome = client
                            .validation_outcome(&creds.license_key_hash, &fingerprint, &mut t)
                            .await;
                        trusted = Some(t);
                        outcome
                    }
                    Err(e) => license::Outcome::Unreachable(format!("the service's key set: {e}")),
                },
                Err(e) => license::Outcome::Unreachable(e.to_string()),
            },
        };
        // A fresh verdict carries the service's time: the clock guard starts again from it.
        let fresh = matches!(outcome, license::Outcome::Answered(_));
        let (verdict, mode) = license::after_validation(env.now, cache_view, newest_seen, outcome);
        creds.trusted_keys = trusted;
        let newest = match &verdict {
            Some(v) if fresh => v.issued_at(),
            _ => newest_seen,
        };
        (verdict, mode, newest)
    } else {
        let mode = license::from_cache(env.now, cache_view, newest_seen);
        (opened.clone().ok().flatten(), mode, newest_seen)
    };
    // The clock guard moves forward with this machine's clock, never past what the verdict
    // allows (a clock set far ahead by mistake must not lock the licence out once fixed).
    let newest = match (&verdict, mode.is_licensed()) {
        (Some(v), true) => newest.max(env.now.min(v.good_until())),
        _ => newest,
    };
    // Written when the verdict changed, or the guard moved an hour or more: not on every run.
    let cache = verdict.map(|v| v.to_cache(newest));
    let worth_writing = match (&cache, &creds.validation) {
        (Some(new), Some(old)) => {
            new.verdict != old.verdict
                || new.newest_seen - old.newest_seen >= chrono::Duration::hours(1)
        }
        (new, old) => new.is_some() != old.is_some(),
    };
    if worth_writing {
        creds.validation = cache;
    }
    if creds != stored {
        credentials::save(&path, &creds)?;
    }
    Ok((creds, mode))
}

pub(crate) async fn status(
    client: &Client,
    env: &Env,
    out: &mut (dyn Write + Send),
    json: bool,
) -> anyhow::Result<u8> {
    let (_, mode) = checked_license(client, env, false).await?;
    if json {
        writeln!(
            out,
            "{}",
            serde_json::to_string(&mode_json(env.now, &mode))?
        )?;
    } else {
        print_mode(out, env.now, &mode)?;
    }
    Ok(if mode.is_licensed() {
        exit::OK
    } else {
        exit::AUTH
    })
}

/// `status --json`: the license mode as data.
fn mode_json(now: DateTime<Utc>, mode: &Mode) -> serde_json::Value {
    match mode {
        Mode::Licensed { verdict, offline } => serde_json::json!({
            "licensed": true,
            "tier": verdict.claims.tier,
            "features": verdict.claims.features,
            "expiry": verdict.claims.expiry,
            "validated_at": verdict.issued_at().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "offline": offline,
            "offline_file": verdict.kind == license::Kind::OfflineFile,
            "offline_grace_left_seconds": license::grace_left(now, verdict).num_seconds().max(0),
            "signed_by": crate::verdict::jws_kid(&verdict.jws),
        }),
        Mode::Unlicensed { reason } => serde_json::json!({
            "licensed": false,
            "reason": reason,
        }),
    }
}

fn print_mode(out: &mut (dyn Write + Send), now: DateTime<Utc>, mode: &Mode) -> anyhow::Result<()> {
    match mode {
        Mode::Licensed { verdict, offline } => {
            let r = &verdict.claims;
            writeln!(out, "License:    licensed ({} tier)", r.tier.as_str())?;
            let features: Vec<&str> = r.features.iter().map(|f| f.as_str()).collect();
            writeln!(
                out,
                "Features:   {}",
                if features.is_empty() {
                    "none".into()
                } else {
                    features.join(", ")
                }
            )?;
            writeln!(out, "Expires:    {}", r.expiry)?;
            if verdict.kind == license::Kind::OfflineFile {
                writeln!(
                    out,
                    "Offline licence file: valid until {} ({} left)",
                    verdict
                        .good_until()
                        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                    human(license::grace_left(now, verdict))
                )?;
                return Ok(());
            }
            writeln!(
                out,
                "Validated:  {} ago{}",
                human(now - verdict.issued_at()),
                if *offline {
                    " (service unreachable: using the cached validation)"
                } else {
                    ""
                }
            )?;
            writeln!(
                out,
                "Offline grace left: {}",
                human(license::grace_left(now, verdict))
            )?;
        }
        Mode::Unlicensed { reason } => {
            writeln!(out, "License:    unlicensed: {reason}")?;
        }
    }
    Ok(())
}

fn human(d: chrono::Duration) -> String {
    let mins = d.num_minutes().max(0);
    match (mins / (24 * 60), (mins / 60) % 24, mins % 60) {
        (0, 0, m) => format!("{m}m"),
        (0, h, m) => format!("{h}h {m}m"),
        (days, h, _) => format!("{days}d {h}h"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn durations_read_naturally() {
        use chrono::Duration;
        assert_eq!(super::human(Duration::minutes(5)), "5m");
        assert_eq!(super::human(Duration::minutes(125)), "2h 5m");
        assert_eq!(super::human(Duration::hours(50)), "2d 2h");
    }
}
