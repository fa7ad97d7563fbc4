//! Resolution: a written pipeline (plus overrides) -> a [`PipelineSpec`] whose every stage has a
//! known kind, known and well-typed parameters (defaults filled in), connected inputs and known
//! sweep axes. Like ripgrep's flags, parsing ([`super::model`]) and resolving (here) are
//! separate steps: the parse only knows TOML, the resolution knows the stage kinds.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::error::SpecError;
use super::model::{string_list, RawPipeline, RawStage};
use super::names::check_name;
use super::overrides::Override;
use super::pipeline::PipelineSpec;
use super::read::{describe_file_type, ReadError};
use super::source::{Loc, SourceFile};
use super::stage::{InputRef, StageSpec};
use super::sweep::read_axes;
use super::template::{Tpl, Vars};
use super::value::{parse_document, SKey, SKind, SValue};
use crate::kind::{describe_artifacts, fits, param_decl, Registry};

/// How many templates may extend each other in a chain.
const MAX_EXTENDS_DEPTH: usize = 8;

/// Reads, overrides and resolves the pipeline file at `path`.
pub fn load(
    path: &Path,
    overrides: &[Override],
    registry: &Registry,
) -> Result<PipelineSpec, SpecError> {
    let file = SourceFile::read(path, path).map_err(|e| match e {
        ReadError::NotUtf8(located) => *located,
        other => SpecError::nowhere(format!(
            "cannot read pipeline file {}: {other}",
            path.display()
        ))
        .hint("give the path of a .toml file, e.g. pipelines/quickstart.toml"),
    })?;
    let mut raw = RawPipeline::parse(file)?;
    for o in overrides {
        o.apply(&mut raw)?;
    }
    let pipeline_dir = path
        .parent()
        .map(|p| {
            if p.as_os_str().is_empty() {
                Path::new(".")
            } else {
                p
            }
        })
        .unwrap_or(Path::new("."));
    let pipeline_dir = std::fs::canonicalize(pipeline_dir).unwrap_or(pipeline_dir.to_path_buf());
    let project_dir = find_project_dir(&pipeline_dir);
    resolve(raw, &pipeline_dir, &project_dir, registry)
}

/// The project folder of a pipeline in `dir`: the nearest ancestor (or `dir` itself) holding a
/// `stages/` or `pipelines/` folder, else `dir`. Relative paths in a pipeline resolve there.
pub(crate) fn find_project_dir(dir: &Path) -> PathBuf {
    dir.ancestors()
        .find(|a| a.join("stages").is_dir() || a.join("pipelines").is_dir())
        .unwrap_or(dir)
        .to_path_buf()
}

fn resolve(
    mut raw: RawPipeline,
    pipeline_dir: &Path,
    project_dir: &Path,
    registry: &Registry,
) -> Result<PipelineSpec, SpecError> {
    let name = match &raw.name {
        Some(v) => {
            let name = v.expect_str("[pipeline] name")?.to_string();
            check_name(&name, "pipeline name", &v.loc)?;
            name
        }
        None => {
            let name = raw
                .file
                .path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "pipeline".into());
            check_name(
                &name,
                "pipeline name (from the file name)",
                &Loc::new(&raw.file, 0..0),
            )
            .map_err(|e| e.hint("rename the file, or set `[pipeline] name = \"...\"`"))?;
            name
        }
    };
    for stage in &raw.stages {
        check_name(&stage.name.name, "stage name", &stage.name.loc)?;
    }
    let mut vars = Vars::new();
    for (key, value) in &raw.vars {
        if value.to_json().to_string().contains("${") {
            return Err(
                SpecError::at(&value.loc, format!("variable `{}` interpolates", key.name))
                    .hint("variables hold plain values; interpolate them in params"),
            );
        }
        vars.insert(key.name.clone(), value.to_json());
    }
    let axes = read_axes(&super::template::vars_in_sweep(&raw.sweep, &vars)?)?;
    let axis_names: Vec<&str> = axes.iter().map(|a| a.name.as_str()).collect();
    let stage_names: Vec<String> = raw.stages.iter().map(|s| s.name.name.clone()).collect();

    let mut stages = Vec::with_capacity(raw.stages.len());
    let mut warnings = Vec::new();
    for stage in std::mem::take(&mut raw.stages) {
        let stage = apply_templates(stage, pipeline_dir, project_dir, 0)?;
        stages.push(resolve_stage(
            stage,
            &vars,
            &axes,
            &axis_names,
            &stage_names,
            registry,
            &mut warnings,
        )?);
    }
    check_connections(&stages, registry)?;
    let searches = super::search::read_searches(&raw.searches, &stages, &axis_names, registry)?;
    check_best_refs(&stages, &searches)?;
    Ok(PipelineSpec {
        name,
        file: raw.file.path.clone(),
        project_dir: project_dir.to_path_buf(),
        axes,
        stages,
        searches,
        resumes: Vec::new(),
        warnings,
    })
}

/// The artifact contract: every stage connected to a slot produces an artifact type the slot
/// accepts ([`crate::kind::Artifact`]). Checked once every stage's kind is known, since a slot
/// may name a stage written further down.
fn check_connections(stages: &[StageSpec], registry: &Registry) -> Result<(), SpecError> {
    let kind_of = |name: &str| {
        stages
            .iter()
            .find(|s| s.name == name)
            .and_then(|s| registry.get(&s.kind))
    };
    for stage in stages {
        let Some(kind) = registry.get(&stage.kind) else {
            continue;
        };
        for input in &stage.inputs {
            let Some(decl) = kind.inputs().iter().find(|d| d.name == input.slot) else {
                continue;
            };
            for (target, loc) in input.stages.iter().zip(&input.stage_locs) {
                let Some(upstream) = kind_of(target) else {
                    continue;
                };
                if fits(upstream, decl.accepts) {
                    continue;
                }
                let wanted = describe_artifacts(decl.accepts);
                let writes: Vec<&str> = upstream.outputs().iter().map(|o| o.artifact.name()).fold(
                    Vec::new(),
                    |mut seen, a| {
                        if !seen.contains(&a) {
                            seen.push(a);
                        }
                        seen
                    },
                );
                let producers: Vec<&str> = registry
                    .kinds()
                    .filter(|k| fits(*k, decl.accepts))
                    .map(|k| k.kind())
                    .collect();
                let here: Vec<&str> = stages
                    .iter()
                    .filter(|s| registry.get(&s.kind).is_some_and(|k| fits(k, decl.accepts)))
                    .map(|s| s.name.as_str())
                    .collect();
                let here = if here.is_empty() {
                    "none in this pipeline".to_string()
                } else {
                    format!("in this pipeline: {}", here.join(", "))
                };
                return Err(SpecError::at(
                    loc,
                    format!(
                        "input `{}` of stage `{}` takes {wanted}, but stage `{target}` ({}) writes {}",
                        input.slot,
                        stage.name,
                        upstream.kind(),
                        if writes.is_empty() {
                            "only metrics".to_string()
                        } else {
                            describe_list(&writes)
                        }
                    ),
                )
                .hint(format!(
                    "`{}` of kind `{}` takes {wanted}, written by kinds {} ({here})",
                    input.slot,
                    stage.kind,
                    producers.join(", "),
                )));
            }
        }
    }
    Ok(())
}

/// Every `${search.NAME.best.DIM}` names a search of the file and a dimension of its space,
/// and no stage reads the winner of a search whose trials it takes part in.
fn check_best_refs(
    stages: &[StageSpec],
    searches: &[super::search::SearchSpec],
) -> Result<(), SpecError> {
    for stage in stages {
        let mut refs = Vec::new();
        stage.params.values().for_each(|t| t.best_refs(&mut refs));
        for (search, dim, loc) in refs {
            let Some(spec) = searches.iter().find(|s| s.name == search) else {
                let e = SpecError::at(loc, format!("unknown search `{search}`"));
                return Err(if searches.is_empty() {
                    e.hint("declare it as a [search.NAME] table")
                } else {
                    e.suggest(search, searches.iter().map(|s| s.name.as_str()))
                });
            };
            if !spec.space.iter().any(|d| d.name == dim) {
                return Err(SpecError::at(
                    loc,
                    format!("search `{search}` has no dimension `{dim}`"),
                )
                .suggest(dim, spec.space.iter().map(|d| d.name.as_str())));
            }
            let feeds_trials = spec.space.iter().any(|d| d.stage == stage.name)
                || upstream_of(stages, &spec.objective.stage).contains(stage.name.as_str());
            if feeds_trials {
                return Err(SpecError::at(
                    loc,
                    format!(
                        "stage `{}` takes part in the trials of search `{search}` and cannot \
                         also take its winner",
                        stage.name
                    ),
                )
                .hint("take the winner in a separate stage after the search"));
            }
        }
    }
    Ok(())
}

/// `stage` and every stage it reads from, transitively.
fn upstream_of<'a>(stages: &'a [StageSpec], stage: &'a str) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![stage];
    while let Some(name) = todo.pop() {
        if seen.insert(name) {
            if let Some(s) = stages.iter().find(|s| s.name == name) {
                todo.extend(
                    s.inputs
                        .iter()
                        .flat_map(|i| i.stages.iter().map(String::as_str)),
                );
            }
        }
    }
    seen
}

/// `a` / `a and b` / `a, b and c`.
fn describe_list(items: &[&str]) -> String {
    match items.split_last() {
        None => String::new(),
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

fn apply_templates(
    mut stage: RawStage,
    pipeline_dir: &Path,
    project_dir: &Path,
    depth: usize,
) -> Result<RawStage, SpecError> {
    let Some(extends) = stage.extends.take() else {
        return Ok(stage);
    };
    let rel = extends.expect_str("extends")?;
    if depth >= MAX_EXTENDS_DEPTH {
        return Err(
            SpecError::at(&extends.loc, "templates extend each other too deeply").hint(format!(
                "at most {MAX_EXTENDS_DEPTH} templates in a chain; is there a loop?"
            )),
        );
    }
    if !rel.ends_with(".toml") {
        return Err(SpecError::at(
            &extends.loc,
            format!("template `{rel}` is not a .toml file"),
        )
        .hint(
            "`extends` names a stage template: a .toml file beside the pipeline or in the project",
        ));
    }
    let candidates = [pipeline_dir.join(rel), project_dir.join(rel)];
    // Whatever exists counts as found (a FIFO, a folder), so the error says what it is.
    let found = candidates.iter().find(|p| p.exists()).ok_or_else(|| {
        SpecError::at(&extends.loc, format!("template file `{rel}` not found")).hint(format!(
            "looked in {} and {}",
            pipeline_dir.display(),
            project_dir.display()
        ))
    })?;
    // A link named `x.toml` may lead anywhere (`/proc/self/environ`): the file it resolves to
    // must be a .toml text file too, or its content could end up in an error message.
    let real = std::fs::canonicalize(found)
        .map_err(|e| SpecError::at(&extends.loc, format!("cannot read `{rel}`: {e}")))?;
    let kind = std::fs::metadata(&real)
        .map_err(|e| SpecError::at(&extends.loc, format!("cannot read `{rel}`: {e}")))?
        .file_type();
    if !kind.is_file() {
        return Err(SpecError::at(
            &extends.loc,
            format!(
                "cannot read template `{rel}`: it is {}, not a regular file",
                describe_file_type(kind)
            ),
        )
        .hint("`extends` names a stage template: a .toml text file"));
    }
    if real.extension().is_none_or(|x| x != "toml") {
        return Err(SpecError::at(
            &extends.loc,
            format!("template `{rel}` is a link to a file that is not a .toml file"),
        ));
    }
    let file = SourceFile::read(&real, Path::new(rel)).map_err(|e| match e {
        ReadError::NotUtf8(located) => *located,
        other => SpecError::at(
            &extends.loc,
            format!("cannot read template `{rel}`: {other}"),
        )
        .hint("`extends` names a stage template: a .toml text file"),
    })?;
    if file.text.contains('\0') {
        return Err(SpecError::at(
            &extends.loc,
            format!("template `{rel}` is not a text file"),
        ));
    }
    let entries = parse_document(&file)?;
    let table = SValue {
        kind: SKind::Table(entries),
        loc: Loc::new(&file, 0..0),
    };
    let template = RawStage::parse(
        SKey {
            name: stage.name.name.clone(),
            loc: Loc::new(&file, 0..0),
        },
        &table,
    )?;
    let template_dir = found.parent().unwrap_or(project_dir).to_path_buf();
    let template = apply_templates(template, &template_dir, project_dir, depth + 1)?;
    stage.merge_template(template);
    Ok(stage)
}

/// One stage of the file against its kind: every parameter typed (aliases rewritten, with a
/// deprecation warning; defaults filled in), every input slot and stage named checked, and
/// the gathered axes.
fn resolve_stage(
    stage: RawStage,
    vars: &Vars,
    axes: &[super::sweep::Axis],
    axis_names: &[&str],
    stage_names: &[String],
    registry: &Registry,
    warnings: &mut Vec<SpecError>,
) -> Result<StageSpec, SpecError> {
    let name = stage.name.name.clone();
    let kind_value = stage.kind.as_ref().ok_or_else(|| {
        SpecError::at(&stage.name.loc, format!("stage `{name}` has no `kind`")).hint(format!(
            "add `kind = \"...\"`; kinds: {}",
            registry.names().join(", ")
        ))
    })?;
    let kind_name = kind_value.expect_str("kind")?;
    let kind = registry.get(kind_name).ok_or_else(|| {
        SpecError::at(&kind_value.loc, format!("unknown stage kind `{kind_name}`"))
            .suggest(kind_name, registry.names())
    })?;

    let is_command = kind_name == crate::kind::command::COMMAND_KIND;
    let (params, param_locs) = if is_command {
        super::command::resolve_params(&stage, vars, axis_names)?
    } else {
        super::command::reject_fields(&stage, kind_name)?;
        resolve_params(&stage, (kind, kind_name), vars, axes, axis_names, warnings)?
    };
    let inputs = resolve_inputs(&stage, (kind, kind_name), stage_names, is_command)?;
    let gather = resolve_gather(&stage, kind, axis_names, &params)?;
    let timeout = stage
        .timeout
        .as_ref()
        .map(super::timeout::parse_timeout)
        .transpose()?;
    Ok(StageSpec {
        name,
        kind: kind_name.to_string(),
        params,
        param_locs,
        inputs,
        gather,
        timeout,
        loc: stage.name.loc.clone(),
    })
}

/// A stage's parameters (templates) and where in the file each was written.
type ResolvedParams = (BTreeMap<String, Tpl>, BTreeMap<String, Loc>);

/// The stage's parameters as templates, keyed by their current names, with where each was
/// written; old names are rewritten (a warning each) and missing optional ones get their
/// defaults.
fn resolve_params(
    stage: &RawStage,
    (kind, kind_name): (&dyn crate::kind::Stage, &str),
    vars: &Vars,
    axes: &[super::sweep::Axis],
    axis_names: &[&str],
    warnings: &mut Vec<SpecError>,
) -> Result<ResolvedParams, SpecError> {
    let name = &stage.name.name;
    let mut params = BTreeMap::new();
    let mut param_locs = BTreeMap::new();
    let mut renamed = Vec::new();
    for (key, value) in &stage.params {
        let Some(decl) = param_decl(kind, &key.name) else {
            if let Some((decl, alias)) = alias_decl(kind, &key.name) {
                renamed.push((key, value, decl, alias));
                continue;
            }
            return Err(SpecError::at(
                &key.loc,
                format!("unknown parameter `{}` for kind `{kind_name}`", key.name),
            )
            .suggest(&key.name, kind.params().iter().map(|p| p.name)));
        };
        let tpl = Tpl::parse(value, vars, axis_names)?;
        check_type(&tpl, value, decl, kind_name, axes)?;
        params.insert(key.name.clone(), canonical(tpl, decl));
        param_locs.insert(key.name.clone(), value.loc.clone());
    }
    for (key, value, decl, alias) in renamed {
        for (name, tpl) in rewrite_alias(key, value, alias, vars, axis_names)? {
            let target = param_decl(kind, name).unwrap_or(decl);
            match params.get(name) {
                Some(Tpl::Lit(given)) if matches!(&tpl, Tpl::Lit(v) if v == given) => {}
                Some(_) => {
                    return Err(SpecError::at(
                        &key.loc,
                        format!(
                        "`{}` is the old name of `{name}`, which is also given a different value",
                        key.name
                    ),
                    )
                    .hint(format!("keep only the current name: {}", alias.instead)))
                }
                None => {
                    check_type(&tpl, value, target, kind_name, axes)?;
                    params.insert(name.to_string(), canonical(tpl, target));
                    param_locs.insert(name.to_string(), value.loc.clone());
                }
            }
        }
        warnings.push(
            SpecError::at(
                &key.loc,
                format!(
                    "`{}` is a deprecated name (kind `{kind_name}`); it still works",
                    key.name
                ),
            )
            .hint(format!("write {}", alias.instead)),
        );
    }
    for decl in kind.params() {
        if params.contains_key(decl.name) {
            continue;
        }
        match decl.default_value() {
            Some(v) => {
                params.insert(decl.name.to_string(), Tpl::Lit(v));
            }
            None => {
                return Err(SpecError::at(
                    &stage.name.loc,
                    format!("stage `{name}` is missing parameter `{}`", decl.name),
                )
                .hint(format!(
                    "add `{} = ...` under params ({}: {})",
                    decl.name,
                    decl.ty.describe(),
                    decl.doc
                )))
            }
        }
    }

    Ok((params, param_locs))
}

/// The stage's input slots, each naming stages of the file (not itself); every required slot
/// connected. A command stage (`any_slot`) names its slots itself.
fn resolve_inputs(
    stage: &RawStage,
    (kind, kind_name): (&dyn crate::kind::Stage, &str),
    stage_names: &[String],
    any_slot: bool,
) -> Result<Vec<InputRef>, SpecError> {
    let name = &stage.name.name;
    let mut inputs = Vec::new();
    for (slot, value) in &stage.inputs {
        if !any_slot && !kind.inputs().iter().any(|d| d.name == slot.name) {
            return Err(SpecError::at(
                &slot.loc,
                format!("unknown input `{}` for kind `{kind_name}`", slot.name),
            )
            .suggest(&slot.name, kind.inputs().iter().map(|d| d.name)));
        }
        let mut refs = Vec::new();
        let mut locs = Vec::new();
        for (target, loc) in string_list(value, &format!("input `{}`", slot.name))? {
            if !stage_names.contains(&target) {
                return Err(SpecError::at(
                    &loc,
                    format!("input `{}` names unknown stage `{target}`", slot.name),
                )
                .suggest(&target, stage_names.iter().map(String::as_str)));
            }
            if target == *name {
                return Err(SpecError::at(
                    &loc,
                    format!("stage `{name}` depends on itself"),
                ));
            }
            refs.push(target);
            locs.push(loc);
        }
        inputs.push(InputRef {
            slot: slot.name.clone(),
            stages: refs,
            loc: value.loc.clone(),
            stage_locs: locs,
        });
    }
    for decl in kind.inputs() {
        if decl.required && !inputs.iter().any(|i| i.slot == decl.name) {
            return Err(SpecError::at(
                &stage.name.loc,
                format!("stage `{name}` is missing input `{}`", decl.name),
            )
            .hint(format!(
                "add `inputs = {{ {} = \"STAGE\" }}` ({})",
                decl.name, decl.doc
            )));
        }
    }

    Ok(inputs)
}

/// The sweep axes the stage gathers (`gather`, or its kind's default; `*` is every axis), none
/// of which its parameters may also fan out over.
fn resolve_gather(
    stage: &RawStage,
    kind: &dyn crate::kind::Stage,
    axis_names: &[&str],
    params: &BTreeMap<String, Tpl>,
) -> Result<Vec<String>, SpecError> {
    let name = &stage.name.name;
    let gather = match &stage.gather {
        Some(value) => {
            let mut list = Vec::new();
            for (axis, loc) in string_list(value, "gather")? {
                if axis != "*" && !axis_names.contains(&axis.as_str()) {
                    return Err(SpecError::at(
                        &loc,
                        format!("gather names unknown sweep axis `{axis}`"),
                    )
                    .suggest(&axis, axis_names.iter().copied()));
                }
                list.push(axis);
            }
            list
        }
        None => kind
            .default_gather()
            .iter()
            .map(|s| s.to_string())
            .collect(),
    };
    let gather = if gather.iter().any(|g| g == "*") {
        axis_names.iter().map(|s| s.to_string()).collect()
    } else {
        gather
    };
    let mut own_axes = BTreeSet::new();
    params.values().for_each(|t| t.axes(&mut own_axes));
    if let Some(axis) = own_axes.iter().find(|a| gather.contains(a)) {
        let loc = stage.gather.as_ref().map_or(&stage.name.loc, |g| &g.loc);
        return Err(SpecError::at(
            loc,
            format!(
                "stage `{name}` gathers axis `{axis}` but its params also use `${{sweep.{axis}}}`"
            ),
        )
        .hint("a stage either fans out over an axis or gathers it, not both"));
    }

    Ok(gather)
}

/// The declaration that `name` is an old name of, and the alias.
fn alias_decl(
    kind: &dyn crate::kind::Stage,
    name: &str,
) -> Option<(&'static crate::kind::ParamDecl, &'static crate::kind::Alias)> {
    kind.params().iter().find_map(|decl| {
        decl.aliases
            .iter()
            .find(|alias| alias.old == name)
            .map(|alias| (decl, alias))
    })
}

/// The current `(name, value)` pairs an old name's value stands for (a boolean that became a
/// choice, say), which needs a plain value, since the mapping runs before the sweep is
/// expanded.
fn rewrite_alias(
    key: &SKey,
    value: &SValue,
    alias: &crate::kind::Alias,
    vars: &Vars,
    axis_names: &[&str],
) -> Result<Vec<(&'static str, Tpl)>, SpecError> {
    let tpl = Tpl::parse(value, vars, axis_names)?;
    let crate::kind::AliasRewrite::Map(map) = alias.rewrite;
    let mut used = BTreeSet::new();
    tpl.axes(&mut used);
    if !used.is_empty() {
        return Err(SpecError::at(
            &value.loc,
            format!(
                "`{}` is a deprecated name and takes a plain value, not a sweep",
                key.name
            ),
        )
        .hint(format!("sweep the current name: {}", alias.instead)));
    }
    map(&tpl.bind(&BTreeMap::new()))
        .map(|pairs| pairs.into_iter().map(|(n, v)| (n, Tpl::Lit(v))).collect())
        .map_err(|why| {
            SpecError::at(&value.loc, format!("`{}`: {why}", key.name))
                .hint(format!("write {}", alias.instead))
        })
}

fn check_type(
    tpl: &Tpl,
    value: &SValue,
    decl: &crate::kind::ParamDecl,
    kind: &str,
    axes: &[super::sweep::Axis],
) -> Result<(), SpecError> {
    let mut refs = Vec::new();
    tpl.best_refs(&mut refs);
    if !refs.is_empty() {
        // A search's winner is checked when it is known, against the dimension's domain,
        // which was checked against this parameter's type.
        return Ok(());
    }
    let mut used = BTreeSet::new();
    tpl.axes(&mut used);
    let mut bindings: Vec<BTreeMap<String, Value>> = vec![BTreeMap::new()];
    for axis in axes.iter().filter(|a| used.contains(&a.name)) {
        bindings = bindings
            .into_iter()
            .flat_map(|b| {
                axis.values.iter().map(move |v| {
                    let mut b = b.clone();
                    b.insert(axis.name.clone(), v.clone());
                    b
                })
            })
            .take(10_000)
            .collect();
    }
    for binding in &bindings {
        let bound = tpl.bind(binding);
        if !decl.ty.accepts(&bound) {
            let via = if binding.is_empty() {
                String::new()
            } else {
                format!(
                    " (with {})",
                    binding
                        .iter()
                        .map(|(k, v)| format!("{k} = {v}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            return Err(SpecError::at(
                &value.loc,
                format!(
                    "parameter `{}` of kind `{kind}` expects {}, found {}{via}",
                    decl.name,
                    decl.ty.describe(),
                    describe_value(&bound)
                ),
            )
            .hint(decl.doc.to_string()));
        }
        if let Some(range) = decl.range {
            let out = match &bound {
                Value::Array(items) => items
                    .iter()
                    .filter_map(Value::as_f64)
                    .find(|n| !range.contains(*n)),
                other => other.as_f64().filter(|n| !range.contains(*n)),
            };
            if let Some(number) = out {
                let via = binding
                    .iter()
                    .map(|(k, v)| format!("{k} = {v}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let each = if bound.is_array() {
                    "each number of "
                } else {
                    ""
                };
                return Err(SpecError::at(
                    &value.loc,
                    format!(
                        "{each}parameter `{}` of kind `{kind}` must be {}, found {number}{}",
                        decl.name,
                        range.describe(),
                        if via.is_empty() {
                            String::new()
                        } else {
                            format!(" (with {via})")
                        }
                    ),
                )
                .hint(decl.doc.to_string()));
            }
        }
    }
    Ok(())
}

/// A value stored as its canonical form where its type has one: a resolution written as a
/// pair of equal sides becomes the integer, so it keys as the square always did. Values that
/// depend on a sweep axis are kept as written.
fn canonical(tpl: Tpl, decl: &crate::kind::ParamDecl) -> Tpl {
    if decl.ty != crate::kind::ParamType::Resolution {
        return tpl;
    }
    let mut used = BTreeSet::new();
    tpl.axes(&mut used);
    if !used.is_empty() {
        return tpl;
    }
    match crate::data::Resolution::from_value(&tpl.bind(&BTreeMap::new())) {
        Some(resolution) => Tpl::Lit(resolution.canonical()),
        None => tpl,
    }
}

fn describe_value(v: &Value) -> String {
    match v {
        Value::String(s) => format!("the string \"{s}\""),
        Value::Number(n) if n.is_f64() => format!("the float {n}"),
        Value::Number(n) => format!("the integer {n}"),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Array(_) => format!("the array {v}"),
        Value::Object(_) => format!("the table {v}"),
        Value::Null => "nothing".into(),
    }
}
