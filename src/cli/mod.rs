//! The command line: clap definitions and dispatch. One file per command beside this one.
//!
//! - [`args`]: the argument groups every command shares (the cache, a pipeline with its
//!   overrides, output) and `run`'s and `plan`'s own.
//! - [`command`]: the parsed command line ([`Cli`]) and the command tree with its help texts.
//! - [`dispatch`]: parsing, then handing each command to its file (`run`, `dispatch`).

mod args;
mod cache_cmd;
mod command;
mod common;
mod data_cmd;
mod dispatch;
pub mod exit;
mod export;
mod failure;
mod import;
mod kinds;
mod metrics;
mod output;
mod plan;
mod plan_memory;
mod pull;
mod push;
mod remote;
mod remote_gc;
mod report_cmd;
mod reports_cmd;
mod run;
mod serve;
mod show;
mod status;
mod why;
mod worker;

pub use command::{Cli, Command};
pub use dispatch::run;
