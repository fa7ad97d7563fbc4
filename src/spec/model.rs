//! The pipeline file as written: the four top-level tables, unknown keys rejected, every value
//! located. Nothing here knows about stage kinds; [`super::resolve`] checks the meaning.

use std::sync::Arc;

use super::error::SpecError;
use super::source::{Loc, SourceFile};
use super::value::{parse_document, SKey, SKind, SValue};

/// A pipeline file before resolution.
#[derive(Debug, Clone)]
pub struct RawPipeline {
    /// The file it came from.
    pub file: Arc<SourceFile>,
    /// `[pipeline] name`.
    pub name: Option<SValue>,
    /// `[vars]`, in written order.
    pub vars: Vec<(SKey, SValue)>,
    /// `[sweep]`, in written order: an array is an axis, a table a zip group of axes.
    pub sweep: Vec<(SKey, SValue)>,
    /// `[stages.NAME]`, in written order.
    pub stages: Vec<RawStage>,
    /// `[search.NAME]`, in written order.
    pub searches: Vec<(SKey, SValue)>,
}

/// One `[stages.NAME]` table before resolution.
#[derive(Debug, Clone)]
pub struct RawStage {
    /// The stage's name and where it is declared.
    pub name: SKey,
    /// `kind`.
    pub kind: Option<SValue>,
    /// `extends`: a template file.
    pub extends: Option<SValue>,
    /// `inputs`: slot -> a stage name or a list of stage names.
    pub inputs: Vec<(SKey, SValue)>,
    /// `params`.
    pub params: Vec<(SKey, SValue)>,
    /// `gather`: a list of axis names.
    pub gather: Option<SValue>,
    /// The fields only `kind = "command"` takes ([`COMMAND_KEYS`]: `cmd`, `code`, `outputs`,
    /// ...), in written order; the resolver rejects them, at their place, for any other kind.
    pub command: Vec<(SKey, SValue)>,
    /// `timeout`: how long a job may run ([`super::timeout`]).
    pub timeout: Option<SValue>,
}

const TOP_KEYS: &[&str] = &["pipeline", "vars", "sweep", "stages", "search"];
const PIPELINE_KEYS: &[&str] = &["name", "description"];
/// The keys a stage table (or a template file) may hold.
pub(crate) const STAGE_KEYS: &[&str] = &[
    "kind",
    "extends",
    "inputs",
    "params",
    "gather",
    "timeout",
    "description",
    "cmd",
    "code",
    "outputs",
    "env",
    "shell",
    "resources",
];
/// The keys only a `kind = "command"` stage takes.
pub(crate) const COMMAND_KEYS: &[&str] = &["cmd", "code", "outputs", "env", "shell", "resources"];

impl RawPipeline {
    /// Parses a pipeline file's text.
    pub fn parse(file: Arc<SourceFile>) -> Result<RawPipeline, SpecError> {
        let entries = parse_document(&file)?;
        let mut raw = RawPipeline {
            file,
            name: None,
            vars: vec![],
            sweep: vec![],
            stages: vec![],
            searches: vec![],
        };
        for (key, value) in entries {
            match key.name.as_str() {
                "pipeline" => {
                    for (k, v) in value.expect_table("[pipeline]")? {
                        match k.name.as_str() {
                            "name" => raw.name = Some(v.clone()),
                            "description" => {}
                            other => {
                                return Err(unknown_key(&k.loc, other, "[pipeline]", PIPELINE_KEYS))
                            }
                        }
                    }
                }
                "vars" => raw.vars = value.expect_table("[vars]")?.to_vec(),
                "sweep" => raw.sweep = value.expect_table("[sweep]")?.to_vec(),
                "search" => raw.searches = value.expect_table("[search]")?.to_vec(),
                "stages" => {
                    for (name, table) in value.expect_table("[stages]")? {
                        raw.stages.push(RawStage::parse(name.clone(), table)?);
                    }
                }
                other => return Err(unknown_key(&key.loc, other, "the pipeline file", TOP_KEYS)),
            }
        }
        Ok(raw)
    }
}

impl RawStage {
    /// Reads a stage table (or a template's top level) named `name`.
    pub fn parse(name: SKey, table: &SValue) -> Result<RawStage, SpecError> {
        let what = format!("[stages.{}]", name.name);
        let mut stage = RawStage {
            name,
            kind: None,
            extends: None,
            inputs: vec![],
            params: vec![],
            gather: None,
            command: vec![],
            timeout: None,
        };
        for (k, v) in table.expect_table(&what)? {
            match k.name.as_str() {
                "kind" => stage.kind = Some(v.clone()),
                "extends" => stage.extends = Some(v.clone()),
                "inputs" => stage.inputs = v.expect_table(&format!("{what} inputs"))?.to_vec(),
                "params" => stage.params = v.expect_table(&format!("{what} params"))?.to_vec(),
                "gather" => stage.gather = Some(v.clone()),
                "timeout" => stage.timeout = Some(v.clone()),
                "description" => {}
                key if COMMAND_KEYS.contains(&key) => stage.command.push((k.clone(), v.clone())),
                other => return Err(unknown_key(&k.loc, other, &what, STAGE_KEYS)),
            }
        }
        Ok(stage)
    }

    /// Merges a template under this stage: the stage's own values win, key by key.
    pub(crate) fn merge_template(&mut self, template: RawStage) {
        if self.kind.is_none() {
            self.kind = template.kind;
        }
        if self.gather.is_none() {
            self.gather = template.gather;
        }
        if self.timeout.is_none() {
            self.timeout = template.timeout;
        }
        merge_entries(&mut self.params, template.params);
        merge_entries(&mut self.inputs, template.inputs);
        merge_entries(&mut self.command, template.command);
    }
}

fn merge_entries(own: &mut Vec<(SKey, SValue)>, inherited: Vec<(SKey, SValue)>) {
    let mut merged: Vec<(SKey, SValue)> = inherited
        .into_iter()
        .filter(|(k, _)| !own.iter().any(|(o, _)| o.name == k.name))
        .collect();
    merged.append(own);
    *own = merged;
}

/// Sets `entries[name] = value`, replacing an existing entry.
pub(crate) fn set_entry(entries: &mut Vec<(SKey, SValue)>, key: SKey, value: SValue) {
    match entries.iter_mut().find(|(k, _)| k.name == key.name) {
        Some(slot) => *slot = (key, value),
        None => entries.push((key, value)),
    }
}

/// "unknown key" with a suggestion.
pub(crate) fn unknown_key(loc: &Loc, key: &str, place: &str, known: &[&str]) -> SpecError {
    SpecError::at(loc, format!("unknown key `{key}` in {place}"))
        .suggest(key, known.iter().copied())
}

/// A list of strings (`gather = ["seed"]`) or a single string.
pub(crate) fn string_list(value: &SValue, what: &str) -> Result<Vec<(String, Loc)>, SpecError> {
    match &value.kind {
        SKind::Str(s) => Ok(vec![(s.clone(), value.loc.clone())]),
        SKind::Array(items) => items
            .iter()
            .map(|v| Ok((v.expect_str(what)?.to_string(), v.loc.clone())))
            .collect(),
        _ => Err(SpecError::at(
            &value.loc,
            format!(
                "{what} must be a string or a list of strings, found a {}",
                value.type_name()
            ),
        )),
    }
}
