//! Command-line overrides: `--set PATH=VALUE` and `--sweep AXIS=V1,V2`.
//!
//! Overrides edit the pipeline as written, before anything is resolved, so they behave exactly
//! as if the same values were in the file (templates, interpolation and type checks all see
//! them). Each override is its own little source file named `<command line>`, so an error in
//! one points at the argument.

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
                let mut values = Vec::new();
                let mut start = value_span.start;
                for part in text[value_span.clone()].split(',') {
                    let span = start..start + part.len();
                    start = span.end + 1;
                    values.push(parse_cli_value(&file, trim_span(text, span)));
                }
                let value = SValue {
                    kind: SKind::Array(values),
                    loc: Loc::new(&file, value_span),
                };
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
        ["vars", name] => set_entry(&mut raw.vars, key(name), value),
        ["sweep", name] => set_entry(&mut raw.sweep, key(name), value),
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
                ["params", name] => set_entry(&mut target.params, key(name), value),
                ["inputs", slot] => set_entry(&mut target.inputs, key(slot), value),
                _ => {
                    return Err(
                        SpecError::at(&loc, format!("cannot override `{path}`")).hint(
                            "write stages.STAGE.params.NAME, stages.STAGE.inputs.SLOT, \
                         stages.STAGE.kind or stages.STAGE.gather",
                        ),
                    )
                }
            }
        }
        _ => {
            return Err(SpecError::at(&loc, format!("cannot override `{path}`"))
                .hint("write vars.NAME, sweep.AXIS, pipeline.name or stages.STAGE.params.NAME"))
        }
    }
    Ok(())
}
