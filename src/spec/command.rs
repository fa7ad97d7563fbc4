//! Resolving a `kind = "command"` stage: its own fields (`cmd`, `code`, `outputs`, `env`,
//! `shell`, `resources`) checked at their place in the file and stored as the reserved
//! parameters of [`crate::kind::command`]; its `params` taken as written (any name, any
//! value, sweeps included), since a script declares its parameters nowhere asymflow can read.

use std::collections::BTreeMap;

use serde_json::Value;

use super::error::SpecError;
use super::model::{string_list, RawStage, COMMAND_KEYS};
use super::source::Loc;
use super::template::{Tpl, Vars};
use super::value::{SKind, SValue};
use crate::kind::command::{
    parse_arg, parse_script, CommandResources, CommandSpec, Piece, Placeholder, COMMAND_KIND,
    COMMAND_PARAM, LOSS_FILE, LOSS_NAME, METRICS_NAME, RESOURCES_PARAM,
};
use crate::kind::{LOG_OUTPUT, METRICS_OUTPUT, REASONS_OUTPUT};

/// A stage's parameters (templates) and where each was written.
pub(super) type CommandParams = (BTreeMap<String, Tpl>, BTreeMap<String, Loc>);

/// The fields of a command stage given to a stage of another kind are a mistake at their place.
pub(super) fn reject_fields(stage: &RawStage, kind: &str) -> Result<(), SpecError> {
    match stage.command.first() {
        None => Ok(()),
        Some((key, _)) => Err(SpecError::at(
            &key.loc,
            format!(
                "unknown key `{}` in [stages.{}]: it is a field of `kind = \"{COMMAND_KIND}\"` \
                 stages, and this stage is of kind `{kind}`",
                key.name, stage.name.name
            ),
        )
        .hint(format!(
            "{} belong to command stages only; a native kind takes `params`",
            COMMAND_KEYS.join(", ")
        ))),
    }
}

/// The parameters of command stage `stage`: its written `params` plus the reserved
/// [`COMMAND_PARAM`] and [`RESOURCES_PARAM`].
pub(super) fn resolve_params(
    stage: &RawStage,
    vars: &Vars,
    axis_names: &[&str],
) -> Result<CommandParams, SpecError> {
    let mut params = BTreeMap::new();
    let mut locs = BTreeMap::new();
    for (key, value) in &stage.params {
        if key.name == COMMAND_PARAM || key.name == RESOURCES_PARAM {
            return Err(SpecError::at(
                &key.loc,
                format!(
                    "parameter name `{}` is reserved in command stages",
                    key.name
                ),
            )
            .hint("rename the parameter"));
        }
        params.insert(key.name.clone(), Tpl::parse(value, vars, axis_names)?);
        locs.insert(key.name.clone(), value.loc.clone());
    }
    for (slot, _) in &stage.inputs {
        if slot.name.contains('.') || !super::names::is_safe_name(&slot.name) {
            return Err(SpecError::at(
                &slot.loc,
                format!("input name `{}` is not a plain name", slot.name),
            )
            .hint(
                "use letters, digits, `-` and `_`: it is written `${inputs.NAME.OUTPUT}` in `cmd`",
            ));
        }
    }
    let slots: Vec<&str> = stage.inputs.iter().map(|(k, _)| k.name.as_str()).collect();
    let spec = read_spec(stage, &slots, &params)?;
    let resources = read_resources(stage)?;
    let spec = serde_json::to_value(&spec).map_err(|e| SpecError::nowhere(e.to_string()))?;
    params.insert(COMMAND_PARAM.to_string(), Tpl::Lit(spec));
    let resources =
        serde_json::to_value(&resources).map_err(|e| SpecError::nowhere(e.to_string()))?;
    params.insert(RESOURCES_PARAM.to_string(), Tpl::Lit(resources));
    Ok((params, locs))
}

fn field<'a>(stage: &'a RawStage, name: &str) -> Option<&'a SValue> {
    stage
        .command
        .iter()
        .find(|(k, _)| k.name == name)
        .map(|(_, v)| v)
}

fn read_spec(
    stage: &RawStage,
    slots: &[&str],
    params: &BTreeMap<String, Tpl>,
) -> Result<CommandSpec, SpecError> {
    let shell = match field(stage, "shell") {
        None => false,
        Some(SValue {
            kind: SKind::Bool(b),
            ..
        }) => *b,
        Some(v) => {
            return Err(SpecError::at(
                &v.loc,
                format!("`shell` must be true or false, found a {}", v.type_name()),
            ))
        }
    };
    let outputs = read_outputs(stage)?;
    let cmd = read_cmd(stage, shell)?;
    check_placeholders(&cmd, shell, slots, &outputs, params)?;
    let code = match field(stage, "code") {
        None => vec![],
        Some(v) => read_code(v)?,
    };
    let env = match field(stage, "env") {
        None => vec![],
        Some(v) => read_env(v)?,
    };
    Ok(CommandSpec {
        cmd: cmd.into_iter().map(|(a, _)| a).collect(),
        shell,
        code,
        outputs: outputs.into_iter().map(|(k, (v, _))| (k, v)).collect(),
        env,
    })
}

/// `cmd`: a non-empty list of strings (the program and its arguments), or one string when
/// `shell = true`.
fn read_cmd(stage: &RawStage, shell: bool) -> Result<Vec<(String, Loc)>, SpecError> {
    let value = field(stage, "cmd").ok_or_else(|| {
        SpecError::at(
            &stage.name.loc,
            format!("command stage `{}` has no `cmd`", stage.name.name),
        )
        .hint("add `cmd = [\"python3\", \"${project}/train.py\", \"--lr\", \"${params.lr}\"]`")
    })?;
    match (&value.kind, shell) {
        (SKind::Str(s), true) => Ok(vec![(s.clone(), value.loc.clone())]),
        (SKind::Str(_), false) => Err(SpecError::at(
            &value.loc,
            "`cmd` is one string, which would need a shell to split it",
        )
        .hint(
            "write the program and its arguments as a list (`cmd = [\"python3\", \"train.py\"]`), \
             or add `shell = true` to run the string with `sh -c`",
        )),
        (SKind::Array(items), false) if !items.is_empty() => items
            .iter()
            .map(|v| {
                Ok((
                    v.expect_str("an element of `cmd`")?.to_string(),
                    v.loc.clone(),
                ))
            })
            .collect(),
        (SKind::Array(_), true) => Err(SpecError::at(
            &value.loc,
            "with `shell = true`, `cmd` is one string: the script `sh -c` runs",
        )),
        _ => Err(SpecError::at(
            &value.loc,
            format!(
                "`cmd` must be a non-empty list of strings, found {}",
                describe(value)
            ),
        )),
    }
}

fn describe(value: &SValue) -> String {
    match &value.kind {
        SKind::Array(items) if items.is_empty() => "an empty list".into(),
        _ => format!("a {}", value.type_name()),
    }
}

fn check_placeholders(
    cmd: &[(String, Loc)],
    shell: bool,
    slots: &[&str],
    outputs: &BTreeMap<String, (String, Loc)>,
    params: &BTreeMap<String, Tpl>,
) -> Result<(), SpecError> {
    for (arg, loc) in cmd {
        let pieces = if shell {
            parse_script(arg)
        } else {
            parse_arg(arg)
        };
        let pieces = pieces.map_err(|why| SpecError::at(loc, why))?;
        for piece in pieces {
            let Piece::Slot(slot) = piece else { continue };
            let missing = match &slot {
                Placeholder::Input { slot, .. } if !slots.contains(&slot.as_str()) => Some((
                    format!("`${{inputs.{slot}...}}` names input `{slot}`, which is not connected"),
                    format!(
                        "connect it: `inputs = {{ {slot} = \"STAGE\" }}`{}",
                        list_hint("connected", slots.iter().copied())
                    ),
                )),
                Placeholder::Output(name) if !outputs.contains_key(name) => Some((
                    format!("`${{outputs.{name}}}` names output `{name}`, which is not declared"),
                    format!(
                        "declare it: `outputs = {{ {name} = \"FILE\" }}`{}",
                        list_hint("declared", outputs.keys().map(String::as_str))
                    ),
                )),
                Placeholder::Param(name) if !params.contains_key(name) => Some((
                    format!("`${{params.{name}}}` names parameter `{name}`, which is not given"),
                    format!(
                        "add it: `params = {{ {name} = ... }}`{}",
                        list_hint("given", params.keys().map(String::as_str))
                    ),
                )),
                _ => None,
            };
            if let Some((message, hint)) = missing {
                return Err(SpecError::at(loc, message).hint(hint));
            }
        }
    }
    Ok(())
}

fn list_hint<'a>(what: &str, names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.collect();
    if names.is_empty() {
        String::new()
    } else {
        format!(" ({what}: {})", names.join(", "))
    }
}

/// `outputs = { NAME = "FILE" }`: plain file names, `metrics` and `loss` at the names the
/// reports read, none of the names every stage writes itself.
fn read_outputs(stage: &RawStage) -> Result<BTreeMap<String, (String, Loc)>, SpecError> {
    let Some(value) = field(stage, "outputs") else {
        return Ok(BTreeMap::new());
    };
    let mut outputs: BTreeMap<String, (String, Loc)> = BTreeMap::new();
    for (key, file) in value.expect_table("`outputs`")? {
        if key.name.contains('.') || !super::names::is_safe_name(&key.name) {
            return Err(SpecError::at(
                &key.loc,
                format!("output name `{}` is not a plain name", key.name),
            )
            .hint("use letters, digits, `-` and `_`: it is written `${outputs.NAME}` in `cmd`"));
        }
        let name = file.expect_str(&format!("output `{}`", key.name))?;
        check_output_file(&key.name, name, &file.loc)?;
        if let Some((other, _)) = outputs.iter().find(|(_, (f, _))| f == name) {
            return Err(SpecError::at(
                &file.loc,
                format!(
                    "outputs `{other}` and `{}` are both the file `{name}`",
                    key.name
                ),
            ));
        }
        outputs.insert(key.name.clone(), (name.to_string(), file.loc.clone()));
    }
    Ok(outputs)
}

fn check_output_file(name: &str, file: &str, loc: &Loc) -> Result<(), SpecError> {
    let plain = !file.is_empty()
        && file != "."
        && file != ".."
        && !file.contains('/')
        && !file.contains('\\')
        && !file.contains('*');
    if !plain {
        return Err(SpecError::at(
            loc,
            format!("output `{name}` = `{file}` is not a plain file name"),
        )
        .hint("outputs are files (or folders) directly in the command's working folder: `model.safetensors`"));
    }
    let fixed = [(METRICS_NAME, METRICS_OUTPUT), (LOSS_NAME, LOSS_FILE)];
    for (special, wanted) in fixed {
        if name == special && file != wanted {
            return Err(SpecError::at(
                loc,
                format!("output `{special}` must be the file `{wanted}`"),
            )
            .hint(format!(
                "reports, `metrics` and the dashboard read it by that name: write `{special} = \"{wanted}\"`"
            )));
        }
        if name != special && file == wanted {
            return Err(SpecError::at(
                loc,
                format!("`{wanted}` is the file of the `{special}` output, not of `{name}`"),
            )
            .hint(format!("name it `{special}`, or write it to another file")));
        }
    }
    if file == LOG_OUTPUT || file == REASONS_OUTPUT {
        return Err(SpecError::at(
            loc,
            format!("`{file}` is written by asymflow itself for every stage"),
        )
        .hint("choose another file name"));
    }
    Ok(())
}

/// `code`: `.gitignore`-style patterns relative to the project folder.
fn read_code(value: &SValue) -> Result<Vec<String>, SpecError> {
    let mut patterns = Vec::new();
    for (pattern, loc) in string_list(value, "`code`")? {
        let body = pattern.strip_prefix('!').unwrap_or(&pattern);
        if body.is_empty() || body == "/" || body.split('/').any(|part| part == "..") {
            return Err(SpecError::at(
                &loc,
                format!("`code` pattern `{pattern}` is not a path inside the project folder"),
            )
            .hint("write paths relative to the project folder (the one holding `pipelines/`): `train.py`, `mylib/`, `mylib/**/*.py`"));
        }
        patterns.push(pattern);
    }
    Ok(patterns)
}

/// `env`: names of environment variables.
fn read_env(value: &SValue) -> Result<Vec<String>, SpecError> {
    let mut names = Vec::new();
    for (name, loc) in string_list(value, "`env`")? {
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(SpecError::at(
                &loc,
                format!("`{name}` is not an environment variable name"),
            )
            .hint("list names, not values: `env = [\"CUBLAS_WORKSPACE_CONFIG\"]`"));
        }
        names.push(name);
    }
    Ok(names)
}

/// `resources = { device = "gpu" | "cpu", threads = N }`.
fn read_resources(stage: &RawStage) -> Result<CommandResources, SpecError> {
    let Some(value) = field(stage, "resources") else {
        return Ok(CommandResources::default());
    };
    let mut resources = CommandResources::default();
    for (key, v) in value.expect_table("`resources`")? {
        match (key.name.as_str(), v.to_json()) {
            ("device", Value::String(d)) if d == "gpu" || d == "cpu" => resources.device = Some(d),
            ("device", _) => {
                return Err(SpecError::at(
                    &v.loc,
                    "`device` must be \"gpu\" (takes a device slot) or \"cpu\"",
                ))
            }
            ("threads", Value::Number(n)) if n.as_u64().is_some_and(|t| t >= 1) => {
                resources.threads = n.as_u64()
            }
            ("threads", _) => {
                return Err(SpecError::at(
                    &v.loc,
                    "`threads` must be a whole number, 1 or more",
                ))
            }
            (other, _) => {
                return Err(SpecError::at(
                    &key.loc,
                    format!("unknown key `{other}` in `resources`"),
                )
                .suggest(other, ["device", "threads"]))
            }
        }
    }
    Ok(resources)
}
