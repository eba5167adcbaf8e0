use anyhow::Context as _;
use clap::Parser as _;
use serde::Serialize;
use server::cli::{
    AuditCommand, BundleCommand, Cli, Command, LicenseCommand, MemberCommand, SsoCommand,
};
use server::config::{Config, Environment};
use server::ops;
use tidemark_store::Writer;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let config = Config::from_env()?;
    server::telemetry::init(config.environment == Environment::Production);

    let command = cli.command.unwrap_or(Command::Serve);
    if let Command::Serve = command {
        // On SQLite: one server per database file, and `restore` can tell that one runs.
        let _serving = server::backup::ServeLock::acquire(&config)?;
        let addr = config.site_addr;
        let state = server::build_state(config).await?;
        let shutdown = server::shutdown_signal();
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("could not listen on {addr}"))?;
        return server::serve_until(state, listener, shutdown).await;
    }

    // Restore replaces the database file, so it must not open it first.
    if let Command::Restore { from, json } = &command {
        let report = server::backup::restore(&config, from).await?;
        println!(
            "restored {} from {} (schema {}, {} accounts, {} scans)",
            report.file,
            from.display(),
            report.summary.schema_version,
            report.summary.accounts,
            report.summary.scans
        );
        return print_json(*json, &report);
    }

    // Writing commands migrate as `serve` would (TIDEMARK_MIGRATE); read-only ones never do.
    let schema = command.schema(config.migrate);
    let state = server::build_state_with(config, schema).await?;
    let db = state.db.clone();
    // The command writes in a task of its own, like every other write (see `Db::detached`).
    let outcome = db
        .detached(|db| async move { Ok(run_command(command, &state, &db).await) })
        .await;
    db.close().await;
    outcome?
}

/// One operator command (anything but `serve`).
async fn run_command(
    command: Command,
    state: &server::state::AppState,
    db: &Writer,
) -> anyhow::Result<()> {
    // Every change a command makes is in the audit log under the OS user who ran it.
    let operator = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| "unknown".to_owned());
    let audit = tidemark_store::audit::operator_context(&operator, tidemark_domain::now_millis());
    match command {
        Command::Serve | Command::Restore { .. } => unreachable!("handled above"),
        Command::Backup { to, json } => {
            let report = server::backup::backup(&state.db, &to).await?;
            println!(
                "backed up to {} ({} bytes, schema {}, {} accounts, {} scans)",
                report.file,
                report.bytes,
                report.summary.schema_version,
                report.summary.accounts,
                report.summary.scans
            );
            print_json(json, &report)?;
        }
        Command::Migrate => println!("migrations applied"),
        Command::License(LicenseCommand::Create {
            email,
            tier,
            expires,
            max_projects,
            json,
        }) => {
            let expires = expires.as_deref().map(ops::parse_timestamp).transpose()?;
            let created = ops::create_license(
                db,
                &state.license_keys,
                &email,
                tier.into(),
                expires,
                max_projects,
                &audit,
            )
            .await?;
            println!("license key: {}", created.license_key);
            println!("license id:  {}", created.license_id);
            println!("account id:  {}", created.account_id);
            println!("Give the key to the customer; it is not shown again (resend mails it).");
            print_json(json, &created)?;
        }
        Command::License(LicenseCommand::List { json }) => {
            let list = ops::list_licenses(db).await?;
            for l in &list {
                println!(
                    "{}  {}  {:<10}  {:<9}  expires {}  {}",
                    l.license_id,
                    l.account_id,
                    l.tier.as_str(),
                    l.state,
                    l.expires,
                    l.email
                );
            }
            print_json(json, &serde_json::json!({ "licenses": list }))?;
        }
        Command::License(LicenseCommand::Suspend { id, json }) => {
            let s = ops::set_suspended(db, &id, true, &audit).await?;
            println!("{} is now {}", s.license_id, s.state);
            print_json(json, &s)?;
        }
        Command::License(LicenseCommand::Resume { id, json }) => {
            let s = ops::set_suspended(db, &id, false, &audit).await?;
            println!("{} is now {}", s.license_id, s.state);
            print_json(json, &s)?;
        }
        Command::License(LicenseCommand::Extend { id, expires, json }) => {
            let s = ops::extend(db, &id, ops::parse_timestamp(&expires)?, &audit).await?;
            println!("{} now expires {} ({})", s.license_id, s.expires, s.state);
            print_json(json, &s)?;
        }
        Command::Bundle(BundleCommand::Publish { file, json }) => {
            let bytes = std::fs::read(&file)
                .with_context(|| format!("could not read {}", file.display()))?;
            let name = file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "bundle".into());
            let p = ops::publish_bundle(db, &state.config.base_url, &name, &bytes, &audit).await?;
            println!("published {} ({} bytes)", p.bundle_id, p.size_bytes);
            println!("url:      {}", p.bundle_url);
            println!("checksum: {}", p.bundle_checksum);
            print_json(json, &p)?;
        }
        Command::Member(MemberCommand::Add {
            account,
            email,
            role,
            json,
        }) => {
            let member = ops::add_member(db, &account, &email, role.into(), &audit).await?;
            println!("{} is now {} of {account}", member.email, member.role);
            print_json(json, &member)?;
        }
        Command::Member(MemberCommand::List { account, json }) => {
            let members = ops::list_members(db, &account).await?;
            for m in &members {
                println!(
                    "{:<40}  {:<6}  last sign-in {}",
                    m.email,
                    m.role,
                    m.last_login_at.as_deref().unwrap_or("never")
                );
            }
            print_json(json, &members)?;
        }
        Command::Audit(AuditCommand::List {
            account,
            since,
            actor,
            action,
            limit,
            json,
        }) => {
            let events = ops::list_audit(
                db,
                account.as_deref(),
                since.as_deref(),
                actor.as_deref(),
                action.as_deref(),
                limit,
            )
            .await?;
            if json {
                println!("{}", serde_json::to_string(&events)?);
            } else {
                for e in &events {
                    println!(
                        "{}  {:<24}  {:<22}  {}  {} -> {}  [{}]",
                        e.at,
                        e.actor,
                        e.action,
                        e.target,
                        e.before.as_deref().unwrap_or("-"),
                        e.after.as_deref().unwrap_or("-"),
                        e.client_ip.as_deref().unwrap_or("-"),
                    );
                }
            }
        }
        Command::Member(MemberCommand::Remove { account, email }) => {
            ops::remove_member(db, &account, &email, &audit).await?;
            println!("{email} removed from {account}; their sessions there have ended");
        }
        Command::Sso(SsoCommand::Set {
            account,
            domain,
            idp_metadata,
            enforce,
            json,
        }) => {
            let xml = std::fs::read_to_string(&idp_metadata)
                .with_context(|| format!("could not read {}", idp_metadata.display()))?;
            let sso = ops::set_sso(db, &account, &domain, &xml, enforce, &audit).await?;
            println!(
                "{} is verified for {account} (the operator vouches for it) and now signs in \
                 with SAML at {} ({} signing certificate(s)){}",
                sso.domain,
                sso.idp_sso_url,
                sso.signing_certificates,
                if sso.enforce {
                    "; OpenID Connect refused"
                } else {
                    ""
                }
            );
            print_json(json, &sso)?;
        }
        Command::Sso(SsoCommand::List { account, json }) => {
            let list = ops::list_sso(db, account.as_deref()).await?;
            for s in &list {
                println!(
                    "{:<30}  {}  {:<8}  {}  enforce={}",
                    s.domain, s.account_id, s.state, s.idp_entity_id, s.enforce
                );
                match s.state {
                    "pending" => println!(
                        "    waiting for TXT {} = {}{}",
                        s.dns_record_name,
                        s.dns_record_value,
                        s.last_check
                            .as_deref()
                            .map(|m| format!(" (last check: {m})"))
                            .unwrap_or_default()
                    ),
                    "ended" => println!(
                        "    ended: {}",
                        s.ended_reason.as_deref().unwrap_or("no reason recorded")
                    ),
                    _ => {}
                }
            }
            print_json(json, &list)?;
        }
        Command::Sso(SsoCommand::Remove { domain }) => {
            let removed = ops::remove_sso(db, &domain, &audit).await?;
            println!(
                "{removed} SAML claim(s) removed for {domain}; its users sign in with OpenID \
                 Connect again"
            );
        }
    }
    Ok(())
}

fn print_json(enabled: bool, value: &impl Serialize) -> anyhow::Result<()> {
    if enabled {
        println!("{}", serde_json::to_string(value)?);
    }
    Ok(())
}
