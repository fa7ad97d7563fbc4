//! `asymflow metrics FILE [STAGE...] [--csv | --json]`: one row per computed instance with its
//! stage, sweep values, every metric and its key.
//!
//! Researchers plot with their own tools; the report's `results.csv` holds aggregates only.
//! This is the raw material: every instance the cache holds for the pipeline (with its
//! overrides), one column per sweep axis and per metric, empty where an instance lacks one.
//! Instances that have not run are left out and counted on stderr.

use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;

use serde_json::Value;

use super::common::{
    cache_for, existing_cache, label_selects, load_plan, print_json, registry, stage_of_label,
};
use super::{output, PipelineArgs};
use crate::exec::plan_status;
use crate::report::value_text;
use crate::spec::SpecError;

/// Prints the metrics of every computed instance (of `stages`, or all).
pub fn metrics(args: PipelineArgs, csv: bool, stages: &[String]) -> anyhow::Result<ExitCode> {
    let registry = registry();
    let plan = load_plan(&args, &registry)?;
    for target in stages {
        let stage = stage_of_label(target);
        if plan.spec().stage(stage).is_none() {
            let names: Vec<&str> = plan.spec().stages.iter().map(|s| s.name.as_str()).collect();
            return Err(SpecError::nowhere(format!(
                "no stage `{stage}` in {}",
                plan.spec().file.display()
            ))
            .suggest(stage, names)
            .into());
        }
    }
    let cache = existing_cache(cache_for(&args.cache, &plan.spec().project_dir))?;
    let planned = plan_status(&plan, &registry, &cache)?;
    let selected =
        |label: &str| stages.is_empty() || stages.iter().any(|t| label_selects(t, label));
    let mut rows = Vec::new();
    let mut not_run = 0;
    for p in planned.iter().filter(|p| selected(&p.label)) {
        match &p.record {
            Some(record) => rows.push((p, record)),
            None => not_run += 1,
        }
    }
    let axes: BTreeSet<&String> = rows.iter().flat_map(|(p, _)| p.binding.keys()).collect();
    let names: BTreeSet<&String> = rows.iter().flat_map(|(_, r)| r.metrics.keys()).collect();

    if args.json {
        let doc: Vec<Value> = rows
            .iter()
            .map(|(p, r)| {
                serde_json::json!({
                    "instance": p.label,
                    "stage": p.stage,
                    "kind": p.kind,
                    "binding": p.binding,
                    "metrics": r.metrics,
                    "key": r.key,
                })
            })
            .collect();
        print_json(&serde_json::json!({ "pipeline": plan.spec().name, "instances": doc }))?;
    } else {
        let mut header: Vec<String> = vec!["stage".into()];
        header.extend(axes.iter().map(|a| a.to_string()));
        header.extend(names.iter().map(|m| m.to_string()));
        header.push("key".into());
        let table: Vec<Vec<String>> = rows
            .iter()
            .map(|(p, r)| {
                let mut line = vec![p.stage.clone()];
                line.extend(
                    axes.iter()
                        .map(|a| p.binding.get(*a).map(value_text).unwrap_or_default()),
                );
                line.extend(
                    names
                        .iter()
                        .map(|m| r.metrics.get(*m).map(|v| v.to_string()).unwrap_or_default()),
                );
                line.push(r.key.clone());
                line
            })
            .collect();
        if csv {
            println!("{}", csv_line(&header));
            for line in &table {
                println!("{}", csv_line(line));
            }
        } else {
            print_aligned(&header, &table);
        }
    }
    if not_run > 0 && !output::quiet() {
        eprintln!(
            "{} not computed yet (not listed)",
            super::plan::count(not_run, "instance", "instances")
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn csv_line(fields: &[String]) -> String {
    fields
        .iter()
        .map(|f| {
            if f.contains([',', '"', '\n']) {
                format!("\"{}\"", f.replace('"', "\"\""))
            } else {
                f.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Columns padded to their widest cell; keys shortened to 16 hex digits.
fn print_aligned(header: &[String], table: &[Vec<String>]) {
    let shorten = |i: usize, cell: &str| -> String {
        if i + 1 == header.len() {
            cell.chars().take(16).collect()
        } else {
            cell.to_string()
        }
    };
    let mut widths: BTreeMap<usize, usize> = BTreeMap::new();
    for line in std::iter::once(header).chain(table.iter().map(Vec::as_slice)) {
        for (i, cell) in line.iter().enumerate() {
            let w = widths.entry(i).or_default();
            *w = (*w).max(shorten(i, cell).chars().count());
        }
    }
    for line in std::iter::once(header).chain(table.iter().map(Vec::as_slice)) {
        let cells: Vec<String> = line
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{:w$}", shorten(i, c), w = widths[&i]))
            .collect();
        println!("{}", cells.join("  ").trim_end());
    }
}
