//! `asymflow import results.tar`: brings a bundle written by `export -o` into the local cache,
//! verifying it exactly as a pull from the remote is verified.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::args::CacheArgs;
use super::common::{cache_here, registry};
use crate::cache::remote::bundle;
use crate::config::ProjectConfig;

/// `asymflow import`.
#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// The bundle.
    pub bundle: PathBuf,
    /// The cache.
    #[command(flatten)]
    pub cache: CacheArgs,
}

/// Imports a bundle.
pub fn import(args: ImportArgs) -> anyhow::Result<ExitCode> {
    let cache = cache_here(&args.cache)?;
    let project = super::common::project_here()?;
    let secret = ProjectConfig::load(&project)?.secret;
    let stats = bundle::import(&cache, &args.bundle, secret, registry())?;
    for r in &stats.rejected {
        eprintln!("warning: {r}");
    }
    eprintln!(
        "imported {} records, {} objects ({:.1} MB) into {}{}",
        stats.records,
        stats.blobs,
        stats.bytes as f64 / 1e6,
        cache.dir().display(),
        if stats.rejected.is_empty() {
            String::new()
        } else {
            format!("; {} rejected", stats.rejected.len())
        }
    );
    Ok(if stats.rejected.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
