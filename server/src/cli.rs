//! Operator subcommands of `tidemark-server`.

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "tidemark-server",
    version,
    about = "Tidemark back end and operator tools"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the dashboard and the /v1 API (the default).
    Serve,
    /// Apply pending database migrations and exit.
    Migrate,
}
