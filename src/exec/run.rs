//! One run of a pipeline, as one call: [`run`] takes a [`RunRequest`] (plain data: the
//! pipeline, what to run, where, how) and returns a [`RunOutcome`]. It loads the plan (with
//! its searches replayed), checks where the reports go before anything runs, builds the
//! executor the request chooses, runs the plan (a search's batches through
//! [`super::search::drive`]), publishes the reports and the searches' reports (rendering,
//! with `keep_going`, those whose inputs partly failed from whatever finished), and says what
//! `plan` would have estimated. The CLI's `run` only turns its arguments into the request
//! and the outcome into text.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::choice::{ExecutorChoice, ExecutorSettings};
use super::estimate::{self, Estimate};
use super::load::{load_plan, PlanSource};
use super::publish::PublishError;
use super::reports_root::ReportsRoot;
use super::{run_reports, scheduler, RunOptions, RunSummary};
use crate::cache::remote::Remote;
use crate::cache::{Cache, Index};
use crate::graph::Plan;
use crate::kind::Registry;

/// What to run, where and how.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunRequest {
    /// The pipeline, its overrides and its cache.
    pub source: PlanSource,
    /// Run only these stages (or instances) and what they need; all when empty.
    pub targets: Vec<String>,
    /// Recompute these stages (or instances) even when cached.
    pub force: Vec<String>,
    /// Publish reports into this folder instead of `reports/PIPELINE/`.
    pub reports: Option<PathBuf>,
    /// Where stages run.
    pub executor: ExecutorChoice,
    /// What the executor needs to start.
    pub settings: ExecutorSettings,
    /// Keep running every branch that does not depend on a failed stage.
    pub keep_going: bool,
    /// Show progress bars.
    pub progress: bool,
    /// How often to run a job again whose process died or whose node failed.
    pub retries: usize,
    /// Do not use the team's remote cache.
    pub offline: bool,
    /// Fail when the team's remote cache is not configured or does not answer.
    pub require_remote: bool,
}

/// What a run did.
pub(crate) struct RunOutcome {
    /// The plan as it ended (a search's last replay).
    pub plan: Plan,
    /// What happened to each instance.
    pub summary: RunSummary,
    /// The cache it ran against.
    pub cache: Cache,
    /// Its index, as the run left it.
    pub index: Index,
    /// Each report table published or rendered: the report's label, its markdown, its folder.
    pub tables: Vec<(String, String, PathBuf)>,
    /// Each search's report: the search's name and its folder.
    pub search_reports: Vec<(String, PathBuf)>,
    /// Reports that could not be published.
    pub errors: Vec<PublishError>,
    /// Problems that did not fail the run (a variant folder that could not be marked).
    pub warnings: Vec<String>,
    /// What `plan` would have estimated for the run, when it could tell.
    pub estimate: Option<Estimate>,
    /// Seconds from the start of the run to its reports published.
    pub seconds: f64,
}

impl RunOutcome {
    /// Whether every instance succeeded and every report was published.
    pub fn success(&self) -> bool {
        self.summary.success() && self.errors.is_empty()
    }
}

/// Runs `request` (see the module docs). `interrupts` is called once, just before anything
/// runs, to route the user's interrupts into `cancel` (the CLI's Ctrl-C handler).
pub fn run(
    request: &RunRequest,
    registry: &Arc<Registry>,
    cancel: &Arc<AtomicBool>,
    interrupts: impl FnOnce(&Arc<AtomicBool>),
) -> anyhow::Result<RunOutcome> {
    let plan = load_plan(&request.source, registry, &request.targets)?;
    let project = plan.spec().project_dir.clone();
    let cache = request.source.cache(&project);
    let force = forced_instances(&plan, &request.force)?;
    let reports = ReportsRoot::of(
        &request.source,
        registry,
        &project,
        &plan.spec().name,
        request.reports.as_deref(),
    )?;
    run_reports::check_folders(&plan, registry, &cache, &reports.dir)?;
    interrupts(cancel);
    let options = RunOptions {
        jobs: request.settings.jobs,
        keep_going: request.keep_going,
        progress: request.progress,
        device_slots: request.settings.device_slots,
        retries: request.retries,
        force,
        remote: open_remote(&project, request.offline, request.require_remote, registry)?,
    };
    let estimate = estimate_run(&plan, registry, &cache);
    let clock = std::time::Instant::now();
    let (plan, summary) = execute(plan, request, registry, &cache, options, cancel)?;
    let index = cache.index()?;
    let mut published =
        run_reports::publish_reports(&plan, registry, &cache, &index, &summary, &reports)?;
    let search_reports =
        match super::publish::publish_searches(&plan.spec().name, plan.searches(), &reports.dir) {
            Ok(dirs) => plan
                .searches()
                .iter()
                .map(|s| s.name.clone())
                .zip(dirs)
                .collect(),
            Err(e) => {
                published.errors.push(e);
                Vec::new()
            }
        };
    if request.keep_going && !summary.interrupted && !published.unrendered.is_empty() {
        let rendered = super::render::render(
            &plan,
            registry,
            &cache,
            &reports.dir,
            &reports.overrides_text(),
            &published.unrendered,
        )?;
        published.tables.extend(rendered.tables);
    }
    let warnings = match reports.mark(&plan.spec().name) {
        Ok(()) => Vec::new(),
        Err(e) => vec![e.to_string()],
    };
    Ok(RunOutcome {
        plan,
        summary,
        cache,
        index,
        tables: published.tables,
        search_reports,
        errors: published.errors,
        warnings,
        estimate,
        seconds: clock.elapsed().as_secs_f64(),
    })
}

/// Runs `plan` on the executor `request` chooses; a plan with searches batch by batch, each
/// replayed from the cache ([`super::search::drive`]), until the searches stand still.
fn execute(
    plan: Plan,
    request: &RunRequest,
    registry: &Arc<Registry>,
    cache: &Cache,
    mut options: RunOptions,
    cancel: &Arc<AtomicBool>,
) -> anyhow::Result<(Plan, RunSummary)> {
    let mut run_plan = |plan: &Plan| -> anyhow::Result<RunSummary> {
        let mut executor =
            request
                .executor
                .build(&plan.spec().project_dir, registry, &request.settings)?;
        let summary =
            scheduler::run_with(plan, registry, cache, &options, cancel, executor.as_mut());
        executor.shutdown();
        // `--force` names instances of the first plan; a search's later plans number theirs
        // anew.
        options.force.clear();
        Ok(summary?)
    };
    if plan.searches().is_empty() {
        let summary = run_plan(&plan)?;
        return Ok((plan, summary));
    }
    let mut load = || load_plan(&request.source, registry, &request.targets);
    super::search::drive(plan, &mut load, &mut run_plan)
}

/// The instances `force` names (a stage, or one instance's label), each checked against the
/// plan with the labels that exist when it names nothing.
fn forced_instances(plan: &Plan, targets: &[String]) -> anyhow::Result<BTreeSet<usize>> {
    let mut force = BTreeSet::new();
    for target in targets {
        force.extend(crate::select::matching(
            plan,
            target,
            &format!("--force {target}: "),
        )?);
    }
    Ok(force)
}

/// What `plan` would estimate for this run, to show beside the time it took; `None` when it
/// cannot be read (an estimate never stops a run). Planned as `plan` plans, keeping no record:
/// the estimate reads statuses and params, and reading every cached instance's record one by
/// one was most of a no-op `run`'s time before its stages were looked at.
fn estimate_run(plan: &Plan, registry: &Registry, cache: &Cache) -> Option<Estimate> {
    if !cache.dir().join("index.sqlite").is_file() {
        return None;
    }
    let planned = super::plan_status_with(plan, registry, cache, None).ok()?;
    estimate::of_planned(&cache.index().ok()?, registry, &planned).ok()
}

/// The team's remote cache of the project at `project_dir`, for a command that uses one when
/// it can: `None` when `offline`, when none is configured, or (with a warning) when it does not
/// answer; `require` makes the last two errors.
pub(crate) fn open_remote(
    project_dir: &Path,
    offline: bool,
    require: bool,
    registry: &Arc<Registry>,
) -> anyhow::Result<Option<Arc<Remote>>> {
    if offline {
        return Ok(None);
    }
    let config = crate::config::ProjectConfig::load(project_dir)?;
    let opened = Remote::from_config(&config, Arc::clone(registry)).and_then(|remote| {
        if let Some(r) = &remote {
            r.probe()?;
        }
        Ok(remote)
    });
    match opened {
        Ok(Some(remote)) => Ok(Some(Arc::new(remote))),
        Ok(None) if require => anyhow::bail!(
            "--require-remote: no remote is configured; set `remote = \"s3://bucket/prefix\"` (or \"file:///folder\") in {}, or ASYMFLOW_REMOTE",
            project_dir.join(crate::config::CONFIG_FILE).display()
        ),
        Ok(None) => Ok(None),
        Err(e) if require => Err(anyhow::Error::new(e).context("--require-remote")),
        Err(e) => {
            eprintln!("warning: {e}\n  going on without the remote (--offline silences this)");
            Ok(None)
        }
    }
}
