//! `asymflow kinds [KIND]`: the stage kinds and their parameters.

use std::process::ExitCode;

use anyhow::anyhow;

use crate::kind::{ParamDecl, Params, Registry, Stage};
use crate::spec::error::closest;

/// Lists every kind, or describes one.
pub fn kinds(kind: Option<&str>) -> anyhow::Result<ExitCode> {
    let registry = super::common::registry();
    let Some(name) = kind else {
        print_kind_list(&registry);
        return Ok(ExitCode::SUCCESS);
    };
    let stage = registry.get(name).ok_or_else(|| {
        let hint = closest(name, &registry.names())
            .map(|c| format!(" (did you mean `{c}`?)"))
            .unwrap_or_default();
        anyhow!("unknown stage kind `{name}`{hint}; `asymflow kinds` lists them")
    })?;
    println!(
        "{} (IMPL_VERSION {}): {}",
        stage.kind(),
        stage.impl_version(),
        stage.summary()
    );
    println!("{}", randomness(stage));
    print_slots(stage);
    if let Some(metrics) = stage.records(&Params::defaults(stage.params())) {
        println!(
            "\nmetrics (with the default params; `*` stands for a family): {}",
            metrics.join(", ")
        );
        print_metric_docs(&metrics);
    }
    print_all_params(stage);
    if !stage.default_gather().is_empty() {
        println!(
            "\ngathers by default: {}",
            stage.default_gather().join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// One line per kind (its summary, marked when stochastic), then what the mark means.
fn print_kind_list(registry: &Registry) {
    let width = registry.names().iter().map(|n| n.len()).max().unwrap_or(0);
    for stage in registry.kinds() {
        let mark = if stage.seeds().is_empty() {
            ""
        } else {
            " [stochastic]"
        };
        println!("{:width$}  {}{mark}", stage.kind(), stage.summary());
    }
    println!(
        "\n[stochastic]: each instance is a random draw (weights, batch order, sampled data); \
         reports say which of these a spread covers."
    );
}

/// The kind's inputs (required or not, what they take) and outputs (file, artifact).
fn print_slots(stage: &dyn Stage) {
    if !stage.inputs().is_empty() {
        println!("\ninputs:");
        for input in stage.inputs() {
            let req = if input.required {
                "required"
            } else {
                "optional"
            };
            println!(
                "  {:18} {req:9} {} [takes {}]",
                input.name,
                input.doc,
                crate::kind::describe_artifacts(input.accepts)
            );
        }
    }
    if !stage.outputs().is_empty() {
        println!("\noutputs:");
        for output in stage.outputs() {
            let when = if output.optional { " (optional)" } else { "" };
            println!(
                "  {:24} {:12} {}{when}",
                output.file,
                output.artifact.name(),
                output.doc
            );
        }
    }
}

/// The kind's own parameters, then each group of parameters it shares with other kinds.
fn print_all_params(stage: &dyn Stage) {
    let own: Vec<&ParamDecl> = stage
        .params()
        .iter()
        .filter(|p| p.group.is_none())
        .collect();
    if !own.is_empty() {
        println!("\nparams:");
        print_params(&own);
    }
    let mut groups: Vec<&str> = Vec::new();
    for group in stage.params().iter().filter_map(|p| p.group) {
        if !groups.contains(&group) {
            groups.push(group);
        }
    }
    for group in groups {
        println!("\nparams ({group}, shared with other kinds):");
        let members: Vec<&ParamDecl> = stage
            .params()
            .iter()
            .filter(|p| p.group == Some(group))
            .collect();
        print_params(&members);
    }
}

/// The line saying whether `stage` is stochastic, and what seeds it.
fn randomness(stage: &dyn crate::kind::Stage) -> String {
    if stage.seeds().is_empty() {
        return "deterministic: the same inputs and params give the same result".to_string();
    }
    let seeds: Vec<String> = stage.seeds().iter().map(|s| format!("`{s}`")).collect();
    format!(
        "stochastic: each instance is a random draw seeded by {}; a report's spread covers it \
         only where it is swept with the aggregated axes",
        seeds.join(", ")
    )
}

fn print_params(decls: &[&ParamDecl]) {
    for p in decls {
        let default = p
            .default
            .map_or("(required)".to_string(), |d| format!("= {d}"));
        let ty = match p.range {
            Some(range) => format!("{} {}", p.ty.describe(), range.describe()),
            None => p.ty.describe(),
        };
        println!("  {:18} {:24} {:14} {}", p.name, ty, default, p.doc);
        for alias in p.aliases {
            println!(
                "  {:18} {:24} {:14} deprecated name: write {}",
                alias.old, "", "", alias.instead
            );
        }
    }
}

/// What each metric a kind records means (`map_std` is the former name of `map_noninterp`),
/// from the metric registry the reports' footnotes read too.
fn print_metric_docs(metrics: &[String]) {
    let width = metrics.iter().map(|m| m.len()).max().unwrap_or(0);
    for metric in metrics {
        let probe = metric.replace('*', "1");
        if let Some((def, _)) = crate::metrics::registry::lookup(&probe) {
            println!("  {metric:width$}  {}", def.doc);
        }
    }
}
