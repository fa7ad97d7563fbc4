//! Instances a report expects but that have not run.
//!
//! `asymflow report FILE` renders from the cache alone: the engine passes every instance the
//! pipeline declares, and those without a cached result arrive with no metrics and no
//! outputs. Their cells show a dash (or a partial count such as `(2/3)`), the rendered table
//! lists them, and `asymflow report` says how many there are and which command computes them.

use std::fmt;

use super::sweep_value::value_text;
use crate::kind::InputArtifact;

/// Whether `artifact` stands for an instance that has not run: `asymflow report` passes those
/// with no metrics and no outputs.
pub(crate) fn has_run(artifact: &InputArtifact) -> bool {
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
pub(crate) fn missing_instances(inputs: &[InputArtifact]) -> Vec<MissingInstance> {
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
    fn lists_only_instances_without_results() {
        let inputs = [
            artifact("eval", 0, true),
            artifact("eval", 1, false),
            artifact("eval-ts", 0, false),
        ];
        let missing = missing_instances(&inputs);
        assert_eq!(missing.len(), 2);
        assert_eq!(missing[0].to_string(), "eval [seed=1]");
        assert_eq!(missing[1].to_string(), "eval-ts [seed=0]");
    }
}
