//! Plan-time checks of report layouts: the names a user wrote must exist.
//!
//! At run time a report forgives names it cannot find: a field dimension no instance has is
//! dropped (so a shipped template naming `dataset` fits a pipeline that sweeps no datasets),
//! and a metric no result records is a column of dashes. For a name the user wrote that is a
//! typo (`metrics = ["mAP"]`, `rows = "widht"`, `plot_xy = ["width", "map"]`) that
//! forgiveness produces a wrong table, or none, without a word. So the layout parameters
//! written in the pipeline file or on the command line (not those inherited from a template)
//! are checked here, before anything runs, against what the report's inputs provide: their
//! sweep axes, parameters and tags for dimensions, and the metrics their kinds record
//! ([`crate::kind::Stage::records`]) for metrics.

use std::collections::BTreeSet;

use super::error::ReportError;
use super::layout::{Dimension, Layout};
use crate::graph::{Instance, Plan};
use crate::kind::{declares_metric, Registry};
use crate::spec::{Loc, PipelineSpec, SpecError, StageSpec};

/// Checks every stage of `plan` whose kind is `layout_kind` (the kind whose parameters are a
/// [`Layout`]: this layer knows the layout, not which stage kind carries it), against the
/// metrics the kinds of `registry` declare.
pub(crate) fn check_reports(
    plan: &Plan,
    registry: &Registry,
    layout_kind: &str,
) -> Result<(), SpecError> {
    let spec = plan.spec();
    for stage in spec.stages.iter().filter(|s| s.kind == layout_kind) {
        for inst in plan.instances_of(&stage.name) {
            check_instance(plan, registry, spec, stage, inst)?;
        }
    }
    Ok(())
}

/// Whether the user wrote this parameter (in the pipeline file or on the command line), as
/// opposed to a template or a default.
fn written_by_user<'a>(spec: &PipelineSpec, stage: &'a StageSpec, param: &str) -> Option<&'a Loc> {
    let loc = stage.param_locs.get(param)?;
    let path = loc.path();
    (path == spec.file || path.to_string_lossy().starts_with("<command line")).then_some(loc)
}

/// Checks the layout of one report instance: its parameters parse, and the dimensions and
/// metrics the user wrote exist in its inputs.
fn check_instance(
    plan: &Plan,
    registry: &Registry,
    spec: &PipelineSpec,
    stage: &StageSpec,
    inst: &Instance,
) -> Result<(), SpecError> {
    let layout = parse_layout(stage, inst)?;
    let ups: Vec<&Instance> = inst
        .inputs
        .get("results")
        .into_iter()
        .flatten()
        .map(|&u| &plan.instances()[u])
        .collect();
    if ups.is_empty() {
        return Ok(());
    }
    check_dimensions(spec, stage, &layout, &ups)?;
    check_metrics(registry, spec, stage, &layout, &ups)
}

/// The layout of a report instance, or an error at the parameter that does not parse.
fn parse_layout(stage: &StageSpec, inst: &Instance) -> Result<Layout, SpecError> {
    match Layout::from_params(&inst.params) {
        Ok(layout) => Ok(layout),
        Err(ReportError::Layout { name, message }) => {
            let param = name.split('.').next().unwrap_or(&name);
            let loc = stage.param_locs.get(param).unwrap_or(&stage.loc);
            Err(SpecError::at(
                loc,
                format!("report `{}`: `{name}`: {message}", stage.name),
            ))
        }
        Err(other) => Err(SpecError::at(
            &stage.loc,
            format!("report `{}`: {other}", stage.name),
        )),
    }
}

/// The dimensions the user wrote in `rows` and `cols` are `stage`, `metric`, a tag, or an
/// axis or parameter of the inputs.
fn check_dimensions(
    spec: &PipelineSpec,
    stage: &StageSpec,
    layout: &Layout,
    ups: &[&Instance],
) -> Result<(), SpecError> {
    let mut fields: BTreeSet<String> = ["stage".to_string(), "metric".to_string()].into();
    for tags in layout.tags.values() {
        fields.extend(tags.keys().cloned());
    }
    for up in ups {
        fields.extend(up.binding.keys().cloned());
        fields.extend(up.params.0.keys().cloned());
    }
    for param in ["rows", "cols"] {
        let Some(loc) = written_by_user(spec, stage, param) else {
            continue;
        };
        let dims = if param == "rows" {
            &layout.rows
        } else {
            &layout.cols
        };
        for dim in dims {
            let Dimension::Field(name) = dim else {
                continue;
            };
            if !fields.contains(name) {
                let axes: Vec<&str> = ups
                    .iter()
                    .flat_map(|u| u.binding.keys())
                    .map(String::as_str)
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect();
                let error = SpecError::at(
                    loc,
                    format!(
                        "report `{}`: `{param}` names `{name}`, which none of its inputs has",
                        stage.name
                    ),
                );
                return Err(
                    match crate::spec::error::closest(
                        name,
                        &fields.iter().map(String::as_str).collect::<Vec<_>>(),
                    ) {
                        Some(best) => error.hint(format!("did you mean `{best}`?")),
                        None => error.hint(format!(
                        "a dimension is `stage`, `metric`, a sweep axis of the inputs ({}), a tag, \
                         or a parameter of the input stages",
                        if axes.is_empty() {
                            "none".to_string()
                        } else {
                            axes.join(", ")
                        }
                    )),
                    },
                );
            }
        }
    }
    Ok(())
}

/// The metrics the user wrote in `metrics` and `plot_xy` are recorded by the inputs; checked
/// only when every input's kind says what it records.
fn check_metrics(
    registry: &Registry,
    spec: &PipelineSpec,
    stage: &StageSpec,
    layout: &Layout,
    ups: &[&Instance],
) -> Result<(), SpecError> {
    let mut patterns: BTreeSet<String> = BTreeSet::new();
    for up in ups {
        match registry.get(&up.kind).and_then(|k| k.records(&up.params)) {
            Some(list) => patterns.extend(list),
            None => return Ok(()),
        }
    }
    let known = |name: &str| declares_metric(patterns.iter().map(String::as_str), name);
    let listed = || patterns.iter().cloned().collect::<Vec<_>>().join(", ");
    if let Some(loc) = written_by_user(spec, stage, "metrics") {
        for metric in &layout.metrics {
            if !known(metric) {
                return Err(unknown_metric(
                    stage,
                    "metrics",
                    metric,
                    loc,
                    &patterns,
                    &listed(),
                ));
            }
        }
    }
    if let (Some(loc), Some((x, y))) = (written_by_user(spec, stage, "plot_xy"), &layout.plot_xy) {
        for metric in [x, y] {
            if !known(metric) {
                return Err(unknown_metric(
                    stage,
                    "plot_xy",
                    metric,
                    loc,
                    &patterns,
                    &listed(),
                ));
            }
        }
    }
    Ok(())
}

fn unknown_metric(
    stage: &StageSpec,
    param: &str,
    metric: &str,
    loc: &Loc,
    patterns: &BTreeSet<String>,
    listed: &str,
) -> SpecError {
    let exact: Vec<&str> = patterns
        .iter()
        .filter(|p| !p.contains('*'))
        .map(String::as_str)
        .collect();
    let error = SpecError::at(
        loc,
        format!(
            "report `{}`: `{param}` names metric `{metric}`, which none of its inputs records",
            stage.name
        ),
    );
    match crate::spec::error::closest(metric, &exact) {
        Some(best) => error.hint(format!(
            "did you mean `{best}`? its inputs record: {listed}"
        )),
        None => error.hint(format!("its inputs record: {listed}")),
    }
}
