//! A pipeline's state for a request: the one kept from an earlier request when nothing it
//! was computed from changed ([`super::memo`]), else computed now from the plan, the cache's
//! statuses ([`crate::exec::plan_status_with`], as `asymflow plan` has them) and what running
//! processes show ([`super::live`]). Apart from the state's data ([`super::state`]), so the
//! memo can hold states without importing the site that holds the memo.
//!
//! One request at a time computes a pipeline's whole state; another that needs it waits for
//! that one and takes what it kept. The first view of a large pipeline's table does not wait
//! (planning a 100,000-instance sweep takes about a second): when no state is kept and the
//! table shows rows in plan order, more than a page of them, the page's instances are planned alone
//! ([`crate::exec::plan_status_of`]: each exactly as the whole plan plans it) while the whole
//! state is computed on a thread of its own, and the page's script asks for it at once.

use std::ops::Range;
use std::sync::{Arc, PoisonError};

use super::error::ServeError;
use super::live;
use super::memo::Sources;
use super::query::TableQuery;
use super::site::Site;
use super::state::{InstanceState, PipelineState, Status};
use crate::cache::Index;
use crate::exec::plan_status::PlannedInstance;
use crate::exec::{plan_status_of, plan_status_with};
use crate::graph::Plan;

/// The pipeline `name` with every instance's state: the state kept from an earlier request
/// when nothing it was computed from changed ([`super::memo`]), else computed now (or by the
/// request already computing it).
pub(crate) fn pipeline_state(site: &Site, name: &str) -> Result<Arc<PipelineState>, ServeError> {
    let spec = site.spec(name)?;
    let Some(sources) = site.memo().sources(&spec, site.cache()) else {
        return Ok(Arc::new(compute(site, name, site.expand(spec)?)?));
    };
    if let Some(kept) = kept(site, name, &sources) {
        return Ok(kept);
    }
    compute_and_keep(site, name, sources, || site.expand(spec))
}

/// The pipeline page for `q`, drawn by `draw` from the whole state when one is kept or the
/// table needs every instance's to choose its rows; else from the state of the instances on the
/// page alone ([`PipelineState::is_whole`] is false), whose plan then goes to a thread of its
/// own to compute the whole state (and is dropped there: dropping a 100,000-instance plan took
/// a tenth of a second).
pub(crate) fn draw_page<T>(
    site: &Site,
    name: &str,
    q: &TableQuery,
    draw: impl FnOnce(&PipelineState) -> Result<T, ServeError>,
) -> Result<T, ServeError> {
    if !q.in_plan_order() {
        return draw(&*pipeline_state(site, name)?);
    }
    let spec = site.spec(name)?;
    let Some(sources) = site.memo().sources(&spec, site.cache()) else {
        return draw(&compute(site, name, site.expand(spec)?)?);
    };
    if let Some(kept) = kept(site, name, &sources) {
        return draw(&kept);
    }
    let plan = site.expand(spec)?;
    let Some(rows) = q.page_in_plan_order(plan.instances().len()) else {
        return draw(&*compute_and_keep(site, name, sources, || Ok(plan))?);
    };
    let state = compute_rows(site, name, plan, rows)?;
    let drawn = draw(&state);
    compute_in_background(site, name, sources, state);
    drawn
}

/// The state kept for `name`, computed from `sources`.
fn kept(site: &Site, name: &str, sources: &Sources) -> Option<Arc<PipelineState>> {
    site.memo()
        .get(name, sources, site.cache(), site.registry())
}

/// The whole state of `name`, computed from `plan` (the pipeline as `sources` found it) and
/// kept, or taken from the request that computed it while this one waited its turn.
fn compute_and_keep(
    site: &Site,
    name: &str,
    sources: Sources,
    plan: impl FnOnce() -> Result<Plan, ServeError>,
) -> Result<Arc<PipelineState>, ServeError> {
    let gate = site.memo().gate(name);
    let _computing = gate.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(kept) = kept(site, name, &sources) {
        return Ok(kept);
    }
    let state = Arc::new(compute(site, name, plan()?)?);
    site.memo()
        .keep(name, sources, state.clone(), site.cache(), site.registry());
    Ok(state)
}

/// Computes the whole state of `name` from the plan of `partial` (the pipeline as `sources`
/// found it) on a thread of its own and keeps it, unless a request is computing it already
/// (then the thread only drops `partial`); then derives the lists the table shows, which the
/// page's script asks for next.
fn compute_in_background(site: &Site, name: &str, sources: Sources, partial: PipelineState) {
    let (site, name) = (site.clone(), name.to_string());
    let started = std::thread::Builder::new()
        .name("pipeline state".into())
        .spawn(move || {
            if site.memo().computing(&name) {
                return;
            }
            let plan = || Ok(partial.into_plan());
            match compute_and_keep(&site, &name, sources, plan) {
                Ok(state) => state.derive_lists(),
                Err(e) => {
                    eprintln!("serve: the state of pipeline `{name}` cannot be computed: {e}")
                }
            }
        });
    if let Err(e) = started {
        eprintln!("serve: no thread to compute a pipeline's state on: {e}");
    }
}

/// The pipeline `name` (expanded as `plan`) with every instance's state, computed now.
fn compute(site: &Site, name: &str, plan: Plan) -> Result<PipelineState, ServeError> {
    let Some(index) = site.index()? else {
        let instances = (0..plan.instances().len())
            .map(|i| InstanceState::never_ran(i, "never ran (the cache is empty)"))
            .collect();
        return Ok(PipelineState::new(name, plan, instances, None));
    };
    let planned = plan_status_with(&plan, site.registry(), site.cache(), None)?;
    let running = live::running_keys(&index)?;
    let mut instances = Vec::with_capacity(planned.len());
    for (i, p) in planned.into_iter().enumerate() {
        instances.push(instance_state(site, &index, &running, i, p)?);
    }
    read_metrics(&index, &mut instances)?;
    Ok(PipelineState::new(name, plan, instances, Some(index)))
}

/// The pipeline `name` (expanded as `plan`) with the state of the instances in `rows` alone,
/// planned with those upstream of them; the others are left unplanned.
fn compute_rows(
    site: &Site,
    name: &str,
    plan: Plan,
    rows: Range<usize>,
) -> Result<PipelineState, ServeError> {
    let Some(index) = site.index()? else {
        return compute(site, name, plan);
    };
    let wanted: Vec<usize> = rows.clone().collect();
    let planned = plan_status_of(&plan, site.registry(), site.cache(), &wanted)?;
    let running = live::running_keys(&index)?;
    let mut instances = Vec::with_capacity(planned.len());
    for (i, p) in planned.into_iter().enumerate() {
        instances.push(match p.filter(|_| rows.contains(&i)) {
            Some(p) => instance_state(site, &index, &running, i, p)?,
            None => InstanceState::never_ran(i, "not planned yet"),
        });
    }
    read_metrics(&index, &mut instances)?;
    Ok(PipelineState::of_rows(name, plan, instances, index))
}

/// Instance `i`'s state from its plan: cached or to run as planned, to run refined by the
/// leases (`running`) and failures in `index`.
fn instance_state(
    site: &Site,
    index: &Index,
    running: &std::collections::HashSet<String>,
    i: usize,
    p: PlannedInstance,
) -> Result<InstanceState, ServeError> {
    let mut state = InstanceState {
        index: i,
        status: if p.status == "cached" {
            Status::Cached
        } else {
            Status::ToRun
        },
        key: p.key,
        reason: p.reason,
        metrics: None,
        failure: None,
        progress: None,
    };
    if state.status == Status::ToRun {
        if let Some(key) = state.key.clone() {
            if running.contains(&key) {
                state.status = Status::Running;
                state.progress = live::progress(site.cache(), &key);
            } else if let Some(error) = index.failure(&key)? {
                state.status = Status::Failed;
                state.failure = Some(error);
            }
        }
    }
    Ok(state)
}

/// Reads the metrics of every cached instance, the keys sorted so that each query names
/// neighbours in the index (keys are blake3 digests: in plan order they are scattered).
fn read_metrics(index: &Index, instances: &mut [InstanceState]) -> Result<(), ServeError> {
    let mut cached: Vec<(String, usize)> = instances
        .iter()
        .filter(|s| s.status == Status::Cached)
        .filter_map(|s| Some((s.key.clone()?, s.index)))
        .collect();
    cached.sort_unstable();
    let keys: Vec<&str> = cached.iter().map(|(key, _)| key.as_str()).collect();
    let metrics = index.metrics_of_each(&keys)?;
    for ((_, i), metrics) in cached.iter().zip(metrics) {
        instances[*i].metrics = Some(metrics);
    }
    Ok(())
}
