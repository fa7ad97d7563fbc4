//! The contract of `kind = "command"` stages, shared by the two sides that read it: the spec
//! resolver, which checks a stage's `cmd`, `code`, `outputs`, `env`, `shell` and `resources`
//! and stores them as the reserved parameters [`COMMAND_PARAM`] and [`RESOURCES_PARAM`]
//! (so they travel with every job, to workers and Slurm nodes, like any parameter), and the
//! command kind, which runs them.
//!
//! Placeholders in `cmd` (`${inputs.SLOT.OUTPUT}`, `${outputs.NAME}`, `${params.P}`,
//! `${project}`) are parsed here once, so a typo is a mistake in the pipeline file, found
//! before anything runs, and the runner substitutes exactly what the resolver accepted.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The kind's name.
pub(crate) const COMMAND_KIND: &str = "command";

/// The parameter holding a command stage's [`CommandSpec`]; keyed.
pub(crate) const COMMAND_PARAM: &str = "command";

/// The parameter holding a command stage's [`CommandResources`]; never keyed (the device and
/// thread count a stage ran with are provenance, as for every kind).
pub(crate) const RESOURCES_PARAM: &str = "resources";

/// What a command stage runs, as declared (placeholders unexpanded, so the key holds the
/// command line as written, not the paths of one machine).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CommandSpec {
    /// The program and its arguments; one shell script when `shell` is true.
    pub cmd: Vec<String>,
    /// Whether `cmd` (one string) runs through `sh -c`.
    pub shell: bool,
    /// `.gitignore`-style patterns of the project files whose content is keyed.
    pub code: Vec<String>,
    /// Output name -> the file the command writes under that name in its working folder.
    pub outputs: BTreeMap<String, String>,
    /// Environment variables whose values are keyed.
    pub env: Vec<String>,
}

/// Where a command stage runs; never keyed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct CommandResources {
    /// `"gpu"` (takes a device slot) or `"cpu"` (the default).
    #[serde(default)]
    pub device: Option<String>,
    /// Threads the command may use (`OMP_NUM_THREADS`); the slot's share when absent.
    #[serde(default)]
    pub threads: Option<u64>,
}

/// The output a command writes its metrics to (flat JSON, name -> number).
pub(crate) const METRICS_NAME: &str = "metrics";
/// The output a command writes its loss curve to (the native `loss.json` format).
pub(crate) const LOSS_NAME: &str = "loss";
/// The file the loss output must be (the loss charts read it by this name).
pub(crate) const LOSS_FILE: &str = "loss.json";

/// One `${...}` of a `cmd` argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placeholder {
    /// `${inputs.SLOT.OUTPUT}`: the read-only path of an upstream output.
    Input {
        /// The input slot.
        slot: String,
        /// The upstream output's name.
        output: String,
    },
    /// `${outputs.NAME}`: the path the command writes output NAME to.
    Output(String),
    /// `${params.P}`: the parameter's value (strings as they are, others as JSON).
    Param(String),
    /// `${project}`: the project folder (the one holding `pipelines/`).
    Project,
}

/// A piece of a `cmd` argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Text kept as written.
    Text(String),
    /// A placeholder.
    Slot(Placeholder),
}

/// Splits `arg` into text and placeholders; `Err` says what is wrong with a placeholder.
pub(crate) fn parse_arg(arg: &str) -> Result<Vec<Piece>, String> {
    parse_with(arg, false)
}

/// [`parse_arg`] for the script of a `shell = true` command: a `${...}` that is none of the
/// placeholders stays as written, for the shell (`${HOME}`, `${1:-x}`).
pub(crate) fn parse_script(script: &str) -> Result<Vec<Piece>, String> {
    parse_with(script, true)
}

fn parse_with(arg: &str, shell: bool) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut rest = arg;
    while let Some(start) = rest.find("${") {
        if start > 0 {
            pieces.push(Piece::Text(rest[..start].to_string()));
        }
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            if shell {
                pieces.push(Piece::Text(rest[start..].to_string()));
                rest = "";
                break;
            }
            return Err(format!("`${{` without a closing `}}` in `{arg}`"));
        };
        match parse_placeholder(&after[..end]) {
            Ok(slot) => pieces.push(Piece::Slot(slot)),
            Err(_) if shell => {
                pieces.push(Piece::Text(rest[start..start + 2 + end + 1].to_string()))
            }
            Err(why) => return Err(why),
        }
        rest = &after[end + 1..];
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest.to_string()));
    }
    Ok(pieces)
}

fn parse_placeholder(inner: &str) -> Result<Placeholder, String> {
    let (head, rest) = inner.split_once('.').unwrap_or((inner, ""));
    match (head, rest) {
        ("project", "") => Ok(Placeholder::Project),
        ("inputs", rest)
            if rest
                .split_once('.')
                .is_some_and(|(s, o)| !s.is_empty() && !o.is_empty()) =>
        {
            let (slot, output) = rest.split_once('.').unwrap_or_default();
            Ok(Placeholder::Input {
                slot: slot.to_string(),
                output: output.to_string(),
            })
        }
        ("outputs", name) if !name.is_empty() => Ok(Placeholder::Output(name.to_string())),
        ("params", name) if !name.is_empty() => Ok(Placeholder::Param(name.to_string())),
        _ => Err(format!(
            "`${{{inner}}}` is not a placeholder of `cmd`; write `${{inputs.SLOT.OUTPUT}}`, \
             `${{outputs.NAME}}`, `${{params.P}}` or `${{project}}` (a sweep value or a var \
             reaches the command through a parameter: `params = {{ seed = \"${{sweep.seed}}\" }}` \
             and `${{params.seed}}`)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_argument_splits_into_text_and_placeholders() {
        assert_eq!(
            parse_arg("--lr=${params.lr}").unwrap(),
            vec![
                Piece::Text("--lr=".into()),
                Piece::Slot(Placeholder::Param("lr".into()))
            ]
        );
        assert_eq!(
            parse_arg("${inputs.teacher.model}").unwrap(),
            vec![Piece::Slot(Placeholder::Input {
                slot: "teacher".into(),
                output: "model".into()
            })]
        );
        assert_eq!(
            parse_arg("$HOME and $(x)").unwrap(),
            vec![Piece::Text("$HOME and $(x)".into())]
        );
        assert_eq!(
            parse_arg("${inputs.t.model.safetensors}").unwrap(),
            vec![Piece::Slot(Placeholder::Input {
                slot: "t".into(),
                output: "model.safetensors".into()
            })]
        );
        assert!(parse_arg("${sweep.seed}").unwrap_err().contains("params"));
        assert!(parse_arg("${project").is_err());
        assert_eq!(
            parse_script("echo ${HOME} ${project} ${1:-x").unwrap(),
            vec![
                Piece::Text("echo ".into()),
                Piece::Text("${HOME}".into()),
                Piece::Text(" ".into()),
                Piece::Slot(Placeholder::Project),
                Piece::Text(" ".into()),
                Piece::Text("${1:-x".into()),
            ]
        );
        assert!(parse_arg("${outputs.}").is_err());
    }
}
