//! `asymflow export`: results out of the cache, in one of two forms.
//!
//! - `export FILE -o results.tar` writes a bundle: the records and objects the pipeline's
//!   computed instances need, in the remote's layout, for `asymflow import` on a machine
//!   without the remote. `export FILE STAGE -o stage.tar` bundles one stage and every instance
//!   upstream of it (a key can only be checked with its inputs' records).
//! - `export FILE STAGE DIR` copies the outputs of each instance of STAGE into DIR (one
//!   sub-folder per sweep binding when the stage fans out), verifying every object.
//!   `export FILE 'student[seed=7]' DIR` copies that one instance's outputs into DIR itself.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use clap::Args;

use super::args::{CacheArgs, OverrideArgs, PipelineArgs};
use super::common::{cache_for, label, load_plan, registry};
use crate::cache::remote::bundle;
use crate::config::ProjectConfig;
use crate::exec::publish::publish;
use crate::exec::resolve::walk;

/// `asymflow export`.
#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// The pipeline file.
    pub file: PathBuf,
    /// Only this stage or instance label (`student[seed=7]`) and, in a bundle, what it
    /// depends on.
    pub stage: Option<String>,
    /// Copy the stage's outputs into this folder.
    #[arg(conflicts_with = "output")]
    pub dir: Option<PathBuf>,
    /// Write a bundle (a tar of records and objects) here.
    #[arg(long, short = 'o', value_name = "FILE.tar")]
    pub output: Option<PathBuf>,
    /// Overrides.
    #[command(flatten)]
    pub overrides: OverrideArgs,
    /// The cache.
    #[command(flatten)]
    pub cache: CacheArgs,
}

/// Runs `asymflow export`.
pub fn export(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let pipeline = PipelineArgs {
        file: args.file.clone(),
        overrides: args.overrides.clone(),
        json: false,
        cache: args.cache.clone(),
    };
    let registry = registry();
    let plan = load_plan(&pipeline, &registry)?;
    let cache = cache_for(&args.cache, &plan.spec().project_dir);
    let targets: Vec<String> = args.stage.iter().cloned().collect();
    let mut wanted = crate::select::chosen(&plan, &targets, "")?;
    let walked = walk(&plan, &registry, &cache, |_, _, local| {
        Ok::<_, crate::cache::IndexError>(local)
    })?;
    // The instances wanted: all, or a stage's (or label's) and, for a bundle, everything
    // upstream.
    let missing: Vec<String> = walked
        .iter()
        .filter(|w| wanted.contains(&w.index) && w.record.is_none())
        .map(|w| w.label.clone())
        .collect();
    match (&args.output, &args.dir) {
        (Some(out), _) => {
            let mut stack: Vec<usize> = wanted.iter().copied().collect();
            while let Some(i) = stack.pop() {
                for &u in plan.instances()[i].inputs.values().flatten() {
                    if wanted.insert(u) {
                        stack.push(u);
                    }
                }
            }
            let records: Vec<_> = walked
                .iter()
                .filter(|w| wanted.contains(&w.index))
                .filter_map(|w| w.record.clone())
                .collect();
            if records.is_empty() {
                bail!(
                    "nothing of {} is computed in {}: run it (or pull it) first",
                    args.file.display(),
                    cache.dir().display()
                );
            }
            let secret = ProjectConfig::load(&plan.spec().project_dir)?.secret;
            let stats = bundle::export(&cache, &records, out, secret.as_deref())?;
            for m in &missing {
                eprintln!("not computed (left out): {m}");
            }
            eprintln!(
                "exported {} records, {} objects ({:.1} MB) to {}",
                stats.records,
                stats.blobs,
                stats.bytes as f64 / 1e6,
                out.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        (None, Some(dir)) => {
            let Some(target) = &args.stage else {
                bail!("export FILE STAGE DIR: name the stage whose outputs go into {}", dir.display());
            };
            let stage = crate::select::stage_of(target);
            if !missing.is_empty() {
                bail!(
                    "{} not computed in {}: run or pull it first",
                    missing.join(", "),
                    cache.dir().display()
                );
            }
            crate::exec::publish::check_outside_cache(dir, cache.dir())?;
            let mut written = 0usize;
            for w in walked.iter().filter(|w| wanted.contains(&w.index)) {
                let inst = &plan.instances()[w.index];
                let record = w.record.as_ref().expect("checked above");
                // One instance named by its label goes straight into DIR, as one stage
                // instance without sweep values does.
                let one = crate::select::is_label(target) && wanted.len() == 1;
                let dest = if inst.binding.is_empty() || one {
                    dir.clone()
                } else {
                    dir.join(label(stage, &inst.binding))
                };
                written += publish(&cache, record, &dest, &inst.label())?.len();
                println!("{}", dest.display());
            }
            eprintln!("exported {written} outputs of {stage} to {}", dir.display());
            Ok(ExitCode::SUCCESS)
        }
        (None, None) => bail!(
            "say where: `export {} -o results.tar` writes a bundle, `export {} STAGE DIR` copies a stage's outputs into DIR",
            args.file.display(),
            args.file.display()
        ),
    }
}
