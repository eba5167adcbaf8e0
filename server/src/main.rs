use anyhow::Context as _;
use clap::Parser as _;
use server::cli::{Cli, Command};
use server::config::{Config, Environment};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let config = Config::from_env()?;
    server::telemetry::init(config.environment == Environment::Production);

    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => {
            let addr = config.site_addr;
            let state = server::build_state(config).await?;
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("could not listen on {addr}"))?;
            server::serve(state, listener).await
        }
        Command::Migrate => {
            server::build_state(config).await?;
            println!("migrations applied");
            Ok(())
        }
    }
}
