//! Training-loss curves from the `loss.json` outputs of training stages.
//!
//! Training stages are written by different people and log per epoch; this reader accepts
//! the shapes a stage would naturally write, so a report does not break when one of them
//! adds a loss term:
//! - `[2.3, 1.9, ...]`: one value per epoch;
//! - `[{"epoch": 1, "loss": 2.3, "abs": 1.1}, ...]`: one object per epoch (or per `step`),
//!   every other numeric field a curve, and every numeric field of a nested table
//!   (`"terms": {"abs": 1.1, "rel_ts": 0.4}`) too; fields that are not losses (`lr`,
//!   `seconds`, `accuracy`, ...) are left out;
//! - `{"loss": [2.3, 1.9], "abs": [...], "epoch": [1, 2]}`: one list per curve (an `epoch`
//!   or `step` list, when present, gives x);
//! - an object holding one list of per-epoch objects under any key (`{"epochs": [...]}`).
//!
//! Epochs are numbered from 1 where the file gives no x. One figure per training stage, one
//! line per instance (labelled by its sweep values) and loss term.

use serde_json::Value;

use super::error::ReportError;
use super::plot::{safe_stem, Corner, Figure, Series};
use super::sweep_value::value_text;
use crate::kind::InputArtifact;

/// The output name training stages write their per-epoch losses to.
pub const LOSS_OUTPUT: &str = "loss.json";

const X_KEYS: [&str; 2] = ["epoch", "step"];

/// Per-epoch fields that are logged beside the losses but are not losses (other units, other
/// scales): left out of the loss plot.
const NOT_LOSSES: [&str; 6] = ["lr", "seconds", "time", "accuracy", "acc", "images"];

/// One loss term's curve: its name and (epoch, value) points.
pub(crate) type Curve = (String, Vec<(f64, f64)>);

fn numbers(items: &[Value]) -> Option<Vec<f64>> {
    items.iter().map(Value::as_f64).collect()
}

/// The curves in a `loss.json` document: (term name, points). See the module docs.
pub(crate) fn parse_curves(doc: &Value) -> Result<Vec<Curve>, String> {
    let mut curves = parse_any(doc)?;
    // The total first, then the terms (JSON objects come back with sorted keys).
    curves.sort_by_key(|c| c.0 != "loss");
    Ok(curves)
}

fn parse_any(doc: &Value) -> Result<Vec<Curve>, String> {
    match doc {
        Value::Array(items) if items.iter().all(Value::is_number) => {
            let ys = numbers(items).unwrap_or_default();
            Ok(vec![(
                "loss".into(),
                ys.iter()
                    .enumerate()
                    .map(|(i, y)| ((i + 1) as f64, *y))
                    .collect(),
            )])
        }
        Value::Array(items) if items.iter().all(Value::is_object) => {
            let mut curves: Vec<Curve> = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let obj = item.as_object().expect("checked above");
                let x = X_KEYS
                    .iter()
                    .find_map(|k| obj.get(*k).and_then(Value::as_f64))
                    .unwrap_or((i + 1) as f64);
                // Numeric fields, and the numeric fields of nested tables (`terms`).
                let mut fields: Vec<(&String, f64)> = Vec::new();
                for (key, value) in obj {
                    match value {
                        Value::Object(inner) => fields
                            .extend(inner.iter().filter_map(|(k, v)| v.as_f64().map(|y| (k, y)))),
                        other => fields.extend(other.as_f64().map(|y| (key, y))),
                    }
                }
                for (key, y) in fields {
                    if X_KEYS.contains(&key.as_str()) || NOT_LOSSES.contains(&key.as_str()) {
                        continue;
                    }
                    match curves.iter_mut().find(|c| c.0 == *key) {
                        Some(c) => c.1.push((x, y)),
                        None => curves.push((key.clone(), vec![(x, y)])),
                    }
                }
            }
            Ok(curves)
        }
        Value::Object(map) => {
            let nested: Vec<&Value> = map
                .values()
                .filter(|v| {
                    v.as_array()
                        .is_some_and(|a| !a.is_empty() && a.iter().all(Value::is_object))
                })
                .collect();
            if let [only] = nested.as_slice() {
                return parse_any(only);
            }
            let xs = X_KEYS.iter().find_map(|k| {
                map.get(*k)
                    .and_then(Value::as_array)
                    .and_then(|a| numbers(a))
            });
            let mut curves = Vec::new();
            for (key, value) in map {
                if X_KEYS.contains(&key.as_str()) || NOT_LOSSES.contains(&key.as_str()) {
                    continue;
                }
                let Some(ys) = value.as_array().and_then(|a| numbers(a)) else {
                    continue;
                };
                let points = ys
                    .iter()
                    .enumerate()
                    .map(|(i, y)| {
                        (
                            xs.as_ref()
                                .and_then(|xs| xs.get(i).copied())
                                .unwrap_or((i + 1) as f64),
                            *y,
                        )
                    })
                    .collect();
                curves.push((key.clone(), points));
            }
            Ok(curves)
        }
        _ => Err(
            "expected a list of numbers, a list of per-epoch objects, or an object of lists".into(),
        ),
    }
}

/// One figure per training stage among `inputs` that has a `loss.json` output, in input order.
/// Non-finite values (a diverged run) are left out of the curve.
pub(crate) fn loss_figures(
    inputs: &[InputArtifact],
    size: (u32, u32),
) -> Result<Vec<Figure>, ReportError> {
    let mut figures: Vec<Figure> = Vec::new();
    for artifact in inputs {
        let Some(path) = artifact.outputs.get(LOSS_OUTPUT) else {
            continue;
        };
        let loss_error = |message: String| ReportError::Loss {
            path: path.display().to_string(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| loss_error(e.to_string()))?;
        let doc: Value =
            serde_json::from_str(&text).map_err(|e| loss_error(format!("not JSON: {e}")))?;
        let curves = parse_curves(&doc).map_err(loss_error)?;
        let instance: Vec<String> = artifact
            .binding
            .iter()
            .map(|(k, v)| format!("{k}={}", value_text(v)))
            .collect();
        let figure = match figures
            .iter_mut()
            .find(|f| f.title == format!("{} loss", artifact.stage))
        {
            Some(f) => f,
            None => {
                figures.push(Figure {
                    stem: safe_stem(&format!("loss-{}", artifact.stage)),
                    title: format!("{} loss", artifact.stage),
                    x_label: "epoch".into(),
                    y_label: "loss".into(),
                    series: Vec::new(),
                    size,
                    legend: Corner::UpperRight,
                });
                figures.last_mut().expect("just pushed")
            }
        };
        for (term, points) in curves {
            // A term that is zero throughout (BCT's influence loss with lambda = 0, say) says
            // nothing and squeezes the real curves; the total loss is always drawn.
            if term != "loss" && points.iter().all(|p| p.1 == 0.0) {
                continue;
            }
            let label = match (instance.is_empty(), term == "loss") {
                (true, _) => term,
                (false, true) => instance.join(", "),
                (false, false) => format!("{} {term}", instance.join(", ")),
            };
            let points = points
                .into_iter()
                .filter(|p| p.0.is_finite() && p.1.is_finite())
                .collect();
            figure.series.push(Series { label, points });
        }
    }
    figures.retain(|f| f.series.iter().any(|s| !s.points.is_empty()));
    Ok(figures)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_a_plain_list_as_epochs_from_one() {
        let curves = parse_curves(&json!([2.0, 1.5])).unwrap();
        assert_eq!(
            curves,
            vec![("loss".to_string(), vec![(1.0, 2.0), (2.0, 1.5)])]
        );
    }

    #[test]
    fn reads_per_epoch_objects_with_every_numeric_term() {
        let doc =
            json!([{"epoch": 0, "loss": 2.0, "abs": 1.0}, {"epoch": 1, "loss": 1.0, "abs": 0.5}]);
        let curves = parse_curves(&doc).unwrap();
        assert_eq!(curves.len(), 2);
        let loss = curves.iter().find(|c| c.0 == "loss").unwrap();
        assert_eq!(loss.1, vec![(0.0, 2.0), (1.0, 1.0)]);
    }

    #[test]
    fn reads_an_object_of_lists_and_a_nested_list_of_objects() {
        let curves = parse_curves(&json!({"epoch": [5, 6], "loss": [1.0, 0.8]})).unwrap();
        assert_eq!(
            curves,
            vec![("loss".to_string(), vec![(5.0, 1.0), (6.0, 0.8)])]
        );
        let curves = parse_curves(&json!({"epochs": [{"loss": 1.0}, {"loss": 0.5}]})).unwrap();
        assert_eq!(
            curves,
            vec![("loss".to_string(), vec![(1.0, 1.0), (2.0, 0.5)])]
        );
    }

    #[test]
    fn reads_the_training_stages_shapes_without_rates_times_or_accuracies() {
        // Distillation/teacher: {"epochs": [...]} with loss terms nested under `terms`.
        let doc = json!({"epochs": [
            {"epoch": 1, "loss": 2.0, "terms": {"abs": 1.5, "rel_ts": 0.5}, "lr": 1e-4, "seconds": 3.0},
            {"epoch": 2, "loss": 1.0, "terms": {"abs": 0.8, "rel_ts": 0.2}, "lr": 2e-4, "seconds": 3.1}
        ]});
        let names: Vec<String> = parse_curves(&doc)
            .unwrap()
            .into_iter()
            .map(|c| c.0)
            .collect();
        assert_eq!(names, ["loss", "abs", "rel_ts"]);
        // BCT classifier training: a list of {epoch, loss, influence, accuracy}.
        let doc = json!([{"epoch": 1, "loss": 2.0, "influence": 0.3, "accuracy": 0.1}]);
        let curves = parse_curves(&doc).unwrap();
        let names: Vec<&str> = curves.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(names, ["loss", "influence"]);
        assert_eq!(curves[1].1, vec![(1.0, 0.3)]);
    }

    #[test]
    fn an_all_zero_term_is_not_drawn_but_the_loss_always_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("loss.json");
        let doc = json!([
            {"epoch": 1, "loss": 0.0, "influence": 0.0},
            {"epoch": 2, "loss": 0.0, "influence": 0.0}
        ]);
        std::fs::write(&path, doc.to_string()).unwrap();
        let artifact = InputArtifact {
            stage: "old".into(),
            kind: "train-classifier".into(),
            binding: Default::default(),
            params: Default::default(),
            key: String::new(),
            outputs: [(LOSS_OUTPUT.to_string(), path)].into(),
            metrics: Default::default(),
            draws: Vec::new(),
        };
        let figures = loss_figures(&[artifact], (320, 240)).unwrap();
        let names: Vec<&str> = figures[0].series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(names, ["loss"]);
    }

    #[test]
    fn rejects_other_shapes() {
        assert!(parse_curves(&json!("loss")).is_err());
    }
}
