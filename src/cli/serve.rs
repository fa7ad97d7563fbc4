//! `asymflow serve`: the local web dashboard over the project's pipelines and cache.

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

use super::args::CacheArgs;
use super::common::registry;
use crate::serve::{serve as run_server, Site};

/// `asymflow serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// The address to listen on; anything but a loopback address exposes the cache to the
    /// network.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// Another name the dashboard answers to (repeatable), besides the loopback names and
    /// --host: requests addressed to any other name are refused (DNS rebinding).
    #[arg(long, value_name = "NAME")]
    pub allow_host: Vec<String>,
    /// The port (0 picks a free one).
    #[arg(long, default_value_t = 8765)]
    pub port: u16,
    /// The project folder holding `pipelines/` (default: the one around the current folder).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// The cache.
    #[command(flatten)]
    pub cache: CacheArgs,
}

/// Serves until stopped (Ctrl-C).
pub fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let project = match &args.project {
        Some(dir) => dir.clone(),
        None => {
            let cwd = std::env::current_dir().context("current folder")?;
            crate::spec::resolve::find_project_dir(&cwd)
        }
    };
    let cache = args
        .cache
        .cache
        .clone()
        .unwrap_or_else(|| project.join("cache"));
    if !args.host.is_loopback() {
        eprintln!(
            "warning: serving on {}, which other machines can reach: anyone who can connect reads \
             every pipeline and result of this project; use --host 127.0.0.1 to keep it local",
            args.host
        );
    }
    let site = Site::new(&project, &cache, registry());
    let addr = SocketAddr::new(args.host, args.port);
    run_server(site, addr, &args.allow_host, |bound| {
        println!(
            "asymflow serve: http://{bound}/  (project {}, cache {}; Ctrl-C stops)",
            project.display(),
            cache.display()
        );
        let _ = std::io::stdout().flush();
    })?;
    Ok(ExitCode::SUCCESS)
}
