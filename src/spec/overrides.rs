//! Command-line overrides: `--set PATH=VALUE` and `--sweep AXIS=V1,V2`.
//!
//! Overrides edit the pipeline as written, before anything is resolved, so they behave exactly
//! as if the same values were in the file (templates, interpolation and type checks all see
//! them). Each override is its own little source file named `<command line>`, so an error in
//! one points at the argument.
//!
//! `--sweep` also takes any parameter a stage's kind declares, Hydra-style:
//! `--sweep stages.student.params.lr=1e-3,2e-3` adds an axis `lr` (or `student.lr` when the
//! file has an axis `lr`) and sets the parameter to `${sweep.lr}`; `range(0,5)` lists 0 to 4.
//!
//! An override may only change what the file declares: `--sweep seeds=0,1` (the axis is
//! `seed`) or `--set vars.rez=3` (no such var) would otherwise be accepted and change nothing,
//! a wrong experiment without an error. Unknown axes and vars are rejected with "did you mean",
//! and an axis of a zip group is pointed at its group, which is replaced as a whole.

use std::path::PathBuf;
use std::sync::Arc;

use super::error::SpecError;
use super::model::{set_entry, RawPipeline, RawStage};
use super::source::{Loc, SourceFile};
use super::value::{parse_cli_value, SKey, SKind, SValue};

/// One override from the command line.
#[derive(Debug, Clone, PartialEq)]
pub enum Override {
    /// `--set PATH=VALUE`.
    Set(String),
    /// `--sweep AXIS=V1,V2,...`.
    Sweep(String),
}

/// The overrides as a user would type them again: `--set 'a=1' --sweep 'seed=7'` (empty
/// when there are none).
pub(crate) fn command_line(overrides: &[Override]) -> String {
    overrides
        .iter()
        .map(|o| match o {
            Override::Set(s) => format!("--set {}", shell_quote(s)),
            Override::Sweep(s) => format!("--sweep {}", shell_quote(s)),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `text` quoted for a POSIX shell when it needs it.
pub(crate) fn shell_quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.,=/:+@%".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

impl Override {
    /// Applies this override to `raw`.
    pub fn apply(&self, raw: &mut RawPipeline) -> Result<(), SpecError> {
        let (flag, text) = match self {
            Override::Set(t) => ("--set", t),
            Override::Sweep(t) => ("--sweep", t),
        };
        let file = Arc::new(SourceFile {
            path: PathBuf::from(format!("<command line {flag}>")),
            text: text.clone(),
        });
        let whole = Loc::new(&file, 0..text.len());
        let eq = text.find('=').ok_or_else(|| {
            SpecError::at(&whole, format!("`{flag} {text}` has no `=`"))
                .hint(format!("write `{flag} NAME=VALUE`"))
        })?;
        let path = text[..eq].trim();
        let path_loc = Loc::new(&file, 0..eq);
        let value_span = eq + 1..text.len();
        match self {
            Override::Sweep(_) => {
                let value = SValue {
                    kind: SKind::Array(sweep_values(&file, value_span.clone())?),
                    loc: Loc::new(&file, value_span.clone()),
                };
                if path.starts_with("stages.") {
                    return sweep_param(raw, path, path_loc, value);
                }
                check_sweep_axis(raw, path, &path_loc, &text[eq + 1..])?;
                let key = SKey {
                    name: path.to_string(),
                    loc: path_loc,
                };
                set_entry(&mut raw.sweep, key, value);
                Ok(())
            }
            Override::Set(_) => {
                let value = parse_cli_value(&file, trim_span(text, value_span));
                set_path(raw, path, path_loc, value)
            }
        }
    }
}

/// The values of `--sweep NAME=V1,V2,...` or `--sweep NAME=range(START,STOP[,STEP])` (as in
/// Hydra and Python: STOP excluded; integers stay integers).
fn sweep_values(
    file: &Arc<SourceFile>,
    span: std::ops::Range<usize>,
) -> Result<Vec<SValue>, SpecError> {
    let text = &file.text;
    let span = trim_span(text, span);
    let written = &text[span.clone()];
    if let Some(inner) = written
        .strip_prefix("range(")
        .and_then(|r| r.strip_suffix(')'))
    {
        let loc = Loc::new(file, span.clone());
        return range_values(inner, &loc);
    }
    let mut values = Vec::new();
    let mut start = span.start;
    for part in written.split(',') {
        let part_span = start..start + part.len();
        start = part_span.end + 1;
        values.push(parse_cli_value(file, trim_span(text, part_span)));
    }
    Ok(values)
}

/// `range(0,5)` -> 0, 1, 2, 3, 4; `range(5)` the same; `range(0,1,0.25)` -> 0, 0.25, 0.5,
/// 0.75.
fn range_values(inner: &str, loc: &Loc) -> Result<Vec<SValue>, SpecError> {
    let bad = |why: &str| {
        SpecError::at(loc, format!("bad range `range({inner})`: {why}")).hint(
            "write range(STOP), range(START,STOP) or range(START,STOP,STEP); STOP is excluded",
        )
    };
    let parts: Vec<&str> = inner.split(',').map(str::trim).collect();
    let ints: Option<Vec<i64>> = parts.iter().map(|p| p.parse().ok()).collect();
    let value = |kind| SValue {
        kind,
        loc: loc.clone(),
    };
    if let Some(ints) = ints {
        let (start, stop, step) = match ints.as_slice() {
            [stop] => (0, *stop, 1),
            [start, stop] => (*start, *stop, 1),
            [start, stop, step] => (*start, *stop, *step),
            _ => return Err(bad("one to three numbers")),
        };
        if step == 0 {
            return Err(bad("the step is 0"));
        }
        let count = (stop - start + step - step.signum()) / step;
        if count <= 0 {
            return Err(bad("no values"));
        }
        if count > 100_000 {
            return Err(bad("more than 100000 values"));
        }
        return Ok((0..count)
            .map(|i| value(SKind::Int(start + i * step)))
            .collect());
    }
    let floats: Option<Vec<f64>> = parts.iter().map(|p| p.parse().ok()).collect();
    let Some(floats) = floats.filter(|f| f.iter().all(|x| x.is_finite())) else {
        return Err(bad("its bounds and step must be numbers"));
    };
    let (start, stop, step) = match floats.as_slice() {
        [stop] => (0.0, *stop, 1.0),
        [start, stop] => (*start, *stop, 1.0),
        [start, stop, step] => (*start, *stop, *step),
        _ => return Err(bad("one to three numbers")),
    };
    if step == 0.0 {
        return Err(bad("the step is 0"));
    }
    // Values are start + i*step (no accumulated rounding), below stop by more than rounding.
    let count = ((stop - start) / step - 1e-9).ceil();
    if count < 1.0 {
        return Err(bad("no values"));
    }
    if count > 100_000.0 {
        return Err(bad("more than 100000 values"));
    }
    Ok((0..count as i64)
        .map(|i| value(SKind::Float(start + i as f64 * step)))
        .collect())
}

/// `--sweep stages.STAGE.params.NAME=V1,V2`: a new axis over those values (named `NAME`, or
/// `STAGE.NAME` when an axis of that name exists), and the parameter set to `${sweep.AXIS}`.
/// Whether the stage's kind declares the parameter, and whether the values have its type, is
/// checked when the pipeline is resolved, as for the file's own params, with the error at the
/// flag.
fn sweep_param(
    raw: &mut RawPipeline,
    path: &str,
    loc: Loc,
    values: SValue,
) -> Result<(), SpecError> {
    let ["stages", stage, "params", name] = path.split('.').collect::<Vec<_>>()[..] else {
        return Err(SpecError::at(
            &loc,
            format!("`--sweep {path}=...` sweeps neither an axis nor a parameter"),
        )
        .hint("write --sweep AXIS=V1,V2 or --sweep stages.STAGE.params.NAME=V1,V2"));
    };
    let taken = axis_names(raw);
    let axis = if taken.iter().any(|a| a == name) {
        format!("{stage}.{name}")
    } else {
        name.to_string()
    };
    if taken.contains(&axis) {
        return Err(SpecError::at(
            &loc,
            format!("`{path}` is swept twice on the command line"),
        ));
    }
    let placeholder = SValue {
        kind: SKind::Str(format!("${{sweep.{axis}}}")),
        loc: values.loc.clone(),
    };
    set_path(raw, path, loc.clone(), placeholder)?;
    let key = SKey { name: axis, loc };
    set_entry(&mut raw.sweep, key, values);
    Ok(())
}

fn trim_span(text: &str, span: std::ops::Range<usize>) -> std::ops::Range<usize> {
    let slice = &text[span.clone()];
    let start = span.start + (slice.len() - slice.trim_start().len());
    let end = span.end - (slice.len() - slice.trim_end().len());
    start..end.max(start)
}

fn set_path(raw: &mut RawPipeline, path: &str, loc: Loc, value: SValue) -> Result<(), SpecError> {
    let parts: Vec<&str> = path.split('.').collect();
    let key = |name: &str| SKey {
        name: name.to_string(),
        loc: loc.clone(),
    };
    match parts.as_slice() {
        ["pipeline", "name"] => raw.name = Some(value),
        ["vars", name] => {
            if !raw.vars.iter().any(|(k, _)| k.name == *name) {
                let declared: Vec<&str> = raw.vars.iter().map(|(k, _)| k.name.as_str()).collect();
                let error = SpecError::at(&loc, format!("no var `{name}` is declared in [vars]"));
                return Err(if declared.is_empty() {
                    error.hint("declare it under [vars] in the pipeline file first")
                } else {
                    error.suggest(name, declared)
                });
            }
            set_entry(&mut raw.vars, key(name), value)
        }
        ["sweep", name] => {
            if !raw.sweep.iter().any(|(k, _)| k.name == *name) {
                if let Some(group) = zip_group_of(raw, name) {
                    return Err(SpecError::at(
                        &loc,
                        format!("sweep axis `{name}` belongs to zip group `{group}`"),
                    )
                    .hint(zip_hint(raw, &group)));
                }
                return Err(unknown_axis(raw, name, &loc));
            }
            set_entry(&mut raw.sweep, key(name), value)
        }
        ["stages", stage, rest @ ..] => {
            let known: Vec<String> = raw.stages.iter().map(|s| s.name.name.clone()).collect();
            let target: &mut RawStage = raw
                .stages
                .iter_mut()
                .find(|s| s.name.name == *stage)
                .ok_or_else(|| {
                    SpecError::at(&loc, format!("no stage `{stage}` to override"))
                        .suggest(stage, known.iter().map(String::as_str))
                })?;
            match rest {
                ["kind"] => target.kind = Some(value),
                ["extends"] => target.extends = Some(value),
                ["gather"] => target.gather = Some(value),
                ["timeout"] => target.timeout = Some(value),
                ["params", name] => set_entry(&mut target.params, key(name), value),
                ["inputs", slot] => set_entry(&mut target.inputs, key(slot), value),
                _ => {
                    return Err(
                        SpecError::at(&loc, format!("cannot override `{path}`")).hint(
                            "write stages.STAGE.params.NAME, stages.STAGE.inputs.SLOT, \
                         stages.STAGE.kind, stages.STAGE.gather or stages.STAGE.timeout",
                        ),
                    )
                }
            }
        }
        ["search", name, rest @ ..] if !rest.is_empty() => {
            let known: Vec<String> = raw.searches.iter().map(|(k, _)| k.name.clone()).collect();
            let Some((_, table)) = raw.searches.iter_mut().find(|(k, _)| k.name == *name) else {
                let error = SpecError::at(&loc, format!("no search `{name}` to override"));
                return Err(if known.is_empty() {
                    error.hint("declare it as a [search.NAME] table in the pipeline file first")
                } else {
                    error.suggest(name, known.iter().map(String::as_str))
                });
            };
            set_nested(table, rest, &loc, value, path)?
        }
        _ => {
            return Err(
                SpecError::at(&loc, format!("cannot override `{path}`")).hint(
                    "write vars.NAME, sweep.AXIS, pipeline.name, stages.STAGE.params.NAME or \
                 search.NAME.KEY",
                ),
            )
        }
    }
    Ok(())
}

/// Sets `table.a.b... = value` inside a search table (`trials`, `objective.metric`,
/// `space.lr.log_uniform`); the tables on the way must exist, the last key may be new (its
/// meaning is checked when the search is read, like the file's own keys).
fn set_nested(
    table: &mut SValue,
    path: &[&str],
    loc: &Loc,
    value: SValue,
    whole: &str,
) -> Result<(), SpecError> {
    let SKind::Table(entries) = &mut table.kind else {
        return Err(
            SpecError::at(loc, format!("cannot override `{whole}`: not a table"))
                .hint("override a key of a table, e.g. search.NAME.trials"),
        );
    };
    match path {
        [last] => {
            let key = SKey {
                name: last.to_string(),
                loc: loc.clone(),
            };
            set_entry(entries, key, value);
            Ok(())
        }
        [first, rest @ ..] => {
            let known: Vec<String> = entries.iter().map(|(k, _)| k.name.clone()).collect();
            match entries.iter_mut().find(|(k, _)| k.name == *first) {
                Some((_, inner)) => set_nested(inner, rest, loc, value, whole),
                None => Err(
                    SpecError::at(loc, format!("cannot override `{whole}`: no `{first}`"))
                        .suggest(first, known.iter().map(String::as_str)),
                ),
            }
        }
        [] => Err(SpecError::at(loc, format!("cannot override `{whole}`"))),
    }
}

/// `--sweep AXIS=...` may only replace a plain axis the file declares.
fn check_sweep_axis(
    raw: &RawPipeline,
    name: &str,
    loc: &Loc,
    values: &str,
) -> Result<(), SpecError> {
    match raw.sweep.iter().find(|(k, _)| k.name == name) {
        Some((
            _,
            SValue {
                kind: SKind::Table(_),
                ..
            },
        )) => Err(
            SpecError::at(loc, format!("`{name}` is a zip group, not a single axis"))
                .hint(zip_hint(raw, name)),
        ),
        Some(_) => Ok(()),
        None => match zip_group_of(raw, name) {
            Some(group) => Err(SpecError::at(
                loc,
                format!(
                    "sweep axis `{name}` belongs to zip group `{group}`; its axes vary together"
                ),
            )
            .hint(format!(
                "{} (with `{name} = [{}]`)",
                zip_hint(raw, &group),
                values.trim()
            ))),
            None => Err(unknown_axis(raw, name, loc)),
        },
    }
}

/// The zip group holding axis `name`, if any.
fn zip_group_of(raw: &RawPipeline, name: &str) -> Option<String> {
    raw.sweep
        .iter()
        .find_map(|(group, value)| match &value.kind {
            SKind::Table(members) if members.iter().any(|(m, _)| m.name == name) => {
                Some(group.name.clone())
            }
            _ => None,
        })
}

/// "replace the group as a whole: --set 'sweep.G={a=[..], b=[..]}'", with its current values.
fn zip_hint(raw: &RawPipeline, group: &str) -> String {
    let members = raw
        .sweep
        .iter()
        .find(|(k, _)| k.name == group)
        .and_then(|(_, v)| match &v.kind {
            SKind::Table(members) => Some(
                members
                    .iter()
                    .map(|(m, values)| format!("{} = {}", m.name, values.to_json()))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            _ => None,
        })
        .unwrap_or_default();
    format!("replace the group as a whole: --set 'sweep.{group}={{ {members} }}'")
}

/// Every axis name the file declares, zip-group members included.
fn axis_names(raw: &RawPipeline) -> Vec<String> {
    let mut names = Vec::new();
    for (key, value) in &raw.sweep {
        match &value.kind {
            SKind::Table(members) => names.extend(members.iter().map(|(m, _)| m.name.clone())),
            _ => names.push(key.name.clone()),
        }
    }
    names
}

fn unknown_axis(raw: &RawPipeline, name: &str, loc: &Loc) -> SpecError {
    let names = axis_names(raw);
    let error = SpecError::at(
        loc,
        format!("no sweep axis `{name}` is declared in [sweep]"),
    );
    if names.is_empty() {
        error.hint("declare the axis under [sweep] in the pipeline file first")
    } else {
        error.suggest(name, names.iter().map(String::as_str))
    }
}

#[cfg(test)]
mod command_line_tests {
    use super::*;

    #[test]
    fn overrides_are_written_back_in_order_quoted_where_a_shell_needs_it() {
        let overrides = [
            Override::Set("vars.a=1".into()),
            Override::Sweep("seed=1, 2".into()),
            Override::Set("x='y'".into()),
        ];
        assert_eq!(
            command_line(&overrides),
            r#"--set vars.a=1 --sweep 'seed=1, 2' --set 'x='\''y'\'''"#
        );
        assert_eq!(command_line(&[]), "");
    }
}
