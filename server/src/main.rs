use std::process::ExitCode;

use anyhow::Context as _;
use clap::{CommandFactory as _, FromArgMatches as _};
use server::config::{Config, Environment};
use server::operator::cli::{Cli, Command, ConfigCommand};
use server::operator::commands::{self, Report};

fn main() -> ExitCode {
    let matches = Cli::command()
        .after_help(server::config::variables_help())
        .get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(err) => err.exit(),
    };
    let json = cli.json;
    let command = cli.command.unwrap_or(Command::Serve);
    if let Command::Serve = command {
        // Before the runtime starts any thread: it may execute the program again.
        server::allocator::apply_tunables();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: could not start the runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(command)) {
        Ok(None) => ExitCode::SUCCESS,
        Ok(Some(report)) => print_report(json, report),
        Err(err) => {
            // `{:#}`: the whole chain of causes on one line.
            let message = format!("{err:#}");
            eprintln!("error: {message}");
            if json {
                println!("{}", serde_json::json!({ "error": { "message": message } }));
            }
            ExitCode::FAILURE
        }
    }
}

/// Under `--json`: the document alone on standard output, the text for people on standard
/// error. Otherwise the text on standard output.
fn print_report(json: bool, report: Report) -> ExitCode {
    if json {
        eprint!(
            "{}",
            report.human_beside_json.as_ref().unwrap_or(&report.human)
        );
        println!("{}", report.json);
    } else {
        print!("{}", report.human);
    }
    match report.failure {
        Some(failure) => {
            eprintln!("error: {failure}");
            ExitCode::FAILURE
        }
        None => ExitCode::SUCCESS,
    }
}

async fn run(command: Command) -> anyhow::Result<Option<Report>> {
    // The container's health probe: no configuration, no database, no log set-up.
    if let Command::Healthcheck { url } = &command {
        use server::operator::healthcheck;
        let site_addr = std::env::var("LEPTOS_SITE_ADDR").ok();
        let url = healthcheck::target(url.as_deref(), site_addr.as_deref())?;
        let said = healthcheck::probe(&url).await?;
        return Report::new(&serde_json::json!({ "url": url, "healthy": true }), said).map(Some);
    }
    // `config check` reports a configuration it cannot load instead of failing on it.
    if let Command::Config(ConfigCommand::Check) = command {
        server::telemetry::init(false);
        return commands::check_config(|name| std::env::var(name).ok())
            .await
            .map(Some);
    }
    let config = Config::from_env()?;
    server::telemetry::init(config.environment == Environment::Production);

    if let Command::Serve = command {
        // On SQLite: one server per database file, and `restore` can tell that one runs.
        let _serving = server::operator::backup::ServeLock::acquire(&config)?;
        let addr = config.http.site_addr;
        for (concern, line) in config.summary() {
            tracing::info!(concern, "{line}");
        }
        tracing::info!(concern = "allocator", "{}", server::allocator::in_use());
        // Installed before the migrations: a stop asked for while they run (or wait for
        // another process's) drops them, and the one under way rolls back with its
        // transaction. Stopping is then what was asked for, not a failure.
        let shutdown = server::shutdown_signal();
        tokio::pin!(shutdown);
        let state = tokio::select! {
            state = server::build_state(config) => state?,
            () = &mut shutdown => {
                tracing::info!(
                    "stopped before serving; a migration under way was rolled back and runs again at the next start"
                );
                return Ok(None);
            }
        };
        check_master_keys(&state).await?;
        // The first start creates the first verdict-signing key, so the key set is published
        // before the first validation. A schema not migrated yet (TIDEMARK_MIGRATE=never)
        // leaves it to the first use.
        if let Err(err) = state.signer.key_set(&state.db).await {
            tracing::warn!(
                error = format!("{err:#}"),
                "could not load the verdict-signing keys"
            );
        }
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("could not listen on {addr}"))?;
        server::serve_until(state, listener, shutdown).await?;
        return Ok(None);
    }

    // Restore replaces the database file, so it must not open it first.
    if let Command::Restore { from } = &command {
        return commands::restore(&config, from).await.map(Some);
    }

    // Writing commands migrate as `serve` would (TIDEMARK_MIGRATE); read-only ones never do.
    let schema = command.schema(config.database.migrate);
    let state = server::build_state_with(config, schema).await?;
    let db = state.db.clone();
    // The command writes in a task of its own, like every other write (see `Db::detached`).
    let outcome = db
        .detached(|db| async move { Ok(commands::run(command, &state, &db).await) })
        .await;
    db.close().await;
    outcome?.map(Some)
}

/// A server given another master key than its data was sealed under would serve, say ready,
/// and fail every license mail: refuse to start instead, unless the operator says otherwise.
async fn check_master_keys(state: &server::state::AppState) -> anyhow::Result<()> {
    let keys = state.config.keys.keyring();
    match server::operator::keys::unknown_keys(&state.db, &keys).await {
        Ok(None) => Ok(()),
        Ok(Some(unknown)) if state.config.keys.allow_unknown_master_keys => {
            tracing::warn!(%unknown, "serving with TIDEMARK_ALLOW_UNKNOWN_MASTER_KEYS=1");
            Ok(())
        }
        Ok(Some(unknown)) => Err(unknown.into()),
        // A schema not migrated yet (TIDEMARK_MIGRATE=never) has nothing sealed to check;
        // readiness says what is missing.
        Err(err) => {
            tracing::warn!(
                error = format!("{err:#}"),
                "could not check the master keys"
            );
            Ok(())
        }
    }
}
