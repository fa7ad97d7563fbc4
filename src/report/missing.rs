//! Instances a report expects but that have not run.
//!
//! `asymflow report FILE` renders from the cache alone: the engine passes every instance the
//! pipeline declares, and those without a cached result arrive with no metrics and no
//! outputs. Their cells show a dash (or a partial count such as `(2/3)`), the rendered table
//! lists them, and [`missing_hint`] is the note the command prints with the command that
//! would compute them.

use std::fmt;

use super::sweep_value::value_text;
use crate::kind::InputArtifact;

/// Whether `artifact` stands for an instance that has not run: `asymflow report` passes those
/// with no metrics and no outputs.
pub fn has_run(artifact: &InputArtifact) -> bool {
    !(artifact.metrics.is_empty() && artifact.outputs.is_empty())
}

/// One instance that has not run: its stage and sweep binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingInstance {
    /// The upstream stage's name.
    pub stage: String,
    /// Its sweep values as `axis=value`, sorted by axis.
    pub binding: Vec<(String, String)>,
}

impl fmt::Display for MissingInstance {
    /// `eval-ts [query_res=32, seed=1]`, or just the stage when it has no sweep values.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.stage)?;
        if !self.binding.is_empty() {
            let parts: Vec<String> = self
                .binding
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            write!(f, " [{}]", parts.join(", "))?;
        }
        Ok(())
    }
}

/// The instances among `inputs` that have not run (no metrics and no outputs), in input order,
/// each listed once.
pub fn missing_instances(inputs: &[InputArtifact]) -> Vec<MissingInstance> {
    let mut out: Vec<MissingInstance> = Vec::new();
    for artifact in inputs.iter().filter(|a| !has_run(a)) {
        let m = MissingInstance {
            stage: artifact.stage.clone(),
            binding: artifact
                .binding
                .iter()
                .map(|(k, v)| (k.clone(), value_text(v)))
                .collect(),
        };
        if !out.contains(&m) {
            out.push(m);
        }
    }
    out
}

/// What `asymflow report` prints when results are missing: how many, which (at most 20, then
/// a count), and `command`, the command that computes them (e.g.
/// `asymflow run pipelines/quickstart.toml`). Empty when nothing is missing.
pub fn missing_hint(missing: &[MissingInstance], command: &str) -> String {
    if missing.is_empty() {
        return String::new();
    }
    const SHOWN: usize = 20;
    let mut out = format!(
        "{} instance{} not run yet; {} cells show a dash or a partial count:\n",
        missing.len(),
        if missing.len() == 1 { " has" } else { "s have" },
        if missing.len() == 1 { "its" } else { "their" },
    );
    for m in missing.iter().take(SHOWN) {
        out.push_str(&format!("  {m}\n"));
    }
    if missing.len() > SHOWN {
        out.push_str(&format!("  ... and {} more\n", missing.len() - SHOWN));
    }
    out.push_str(&format!("Compute them with: {command}\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::Params;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn artifact(stage: &str, seed: i64, ran: bool) -> InputArtifact {
        InputArtifact {
            stage: stage.into(),
            kind: "evaluate".into(),
            binding: BTreeMap::from([("seed".to_string(), json!(seed))]),
            params: Params::default(),
            key: String::new(),
            outputs: BTreeMap::new(),
            metrics: if ran {
                BTreeMap::from([("map".to_string(), 0.5)])
            } else {
                BTreeMap::new()
            },
            draws: Vec::new(),
        }
    }

    #[test]
    fn lists_only_instances_without_results_and_says_how_to_compute_them() {
        let inputs = [
            artifact("eval", 0, true),
            artifact("eval", 1, false),
            artifact("eval-ts", 0, false),
        ];
        let missing = missing_instances(&inputs);
        assert_eq!(missing.len(), 2);
        assert_eq!(missing[0].to_string(), "eval [seed=1]");
        let hint = missing_hint(&missing, "asymflow run pipelines/x.toml");
        assert!(hint.starts_with("2 instances have not run yet"), "{hint}");
        assert!(hint.contains("  eval-ts [seed=0]\n"), "{hint}");
        assert!(
            hint.ends_with("Compute them with: asymflow run pipelines/x.toml\n"),
            "{hint}"
        );
        assert_eq!(missing_hint(&[], "asymflow run x"), "");
    }
}
