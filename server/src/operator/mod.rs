//! `tidemark-server`'s subcommands: the command line (`cli`), what each command does
//! (`commands`), and what they alone do (`keys`, `backup`, `demo`, `healthcheck`).

pub mod backup;
pub mod cli;
pub mod commands;
pub mod demo;
pub mod healthcheck;
pub mod keys;
