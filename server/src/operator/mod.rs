//! `tidemark-server`'s subcommands: the command line (`cli`), what each command does
//! (`commands`), and the operator use cases the dashboard shares (`ops`, `keys`, `backup`).

pub mod backup;
pub mod cli;
pub mod commands;
pub mod demo;
pub mod healthcheck;
pub mod keys;
pub mod ops;
