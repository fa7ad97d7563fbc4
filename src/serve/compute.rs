//! A pipeline's state for a request: the one kept from an earlier request when nothing it
//! was computed from changed ([`super::memo`]), else computed now from the plan, the cache's
//! statuses ([`crate::exec::plan_status_with`], as `asymflow plan` has them) and what running
//! processes show ([`super::live`]). Apart from the state's data ([`super::state`]), so the
//! memo can hold states without importing the site that holds the memo.

use std::sync::Arc;

use super::error::ServeError;
use super::live;
use super::site::Site;
use super::state::{InstanceState, PipelineState, Status};
use crate::cache::Index;
use crate::exec::plan_status_with;
use crate::spec::PipelineSpec;

/// The pipeline `name` with every instance's state: the state kept from an earlier request
/// when nothing it was computed from changed ([`super::memo`]), else computed now.
pub(crate) fn pipeline_state(site: &Site, name: &str) -> Result<Arc<PipelineState>, ServeError> {
    let spec = site.spec(name)?;
    let (cache, registry) = (site.cache(), site.registry());
    let Some(sources) = site.memo().sources(&spec, cache) else {
        return Ok(Arc::new(compute(site, name, spec)?));
    };
    if let Some(kept) = site.memo().get(name, &sources, cache, registry) {
        return Ok(kept);
    }
    let state = Arc::new(compute(site, name, spec)?);
    site.memo()
        .keep(name, sources, state.clone(), cache, registry);
    Ok(state)
}

/// The pipeline `name` (resolved as `spec`) with every instance's state, computed now.
fn compute(site: &Site, name: &str, spec: PipelineSpec) -> Result<PipelineState, ServeError> {
    let plan = site.expand(spec)?;
    let Some(index) = site.index()? else {
        let instances = (0..plan.instances().len())
            .map(|i| InstanceState {
                index: i,
                status: Status::ToRun,
                key: None,
                reason: "never ran (the cache is empty)".into(),
                metrics: None,
                failure: None,
                progress: None,
            })
            .collect();
        return Ok(PipelineState::new(name, plan, instances, None));
    };
    let planned = plan_status_with(&plan, site.registry(), site.cache(), None)?;
    let running = live::running_keys(&index)?;
    let mut instances = Vec::with_capacity(planned.len());
    for (i, p) in planned.into_iter().enumerate() {
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
        instances.push(state);
    }
    read_metrics(&index, &mut instances)?;
    Ok(PipelineState::new(name, plan, instances, Some(index)))
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
