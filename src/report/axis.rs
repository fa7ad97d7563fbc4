//! A table's rows and columns: the combinations of dimension values that occur among the
//! instances, in the order a reader expects (`order` first, numbers ascending, else first
//! appearance), with a metric dimension crossed into them; and a draw of the `over` axes as
//! text. The table ([`super::table`]) and its paired-difference rows ([`super::paired`]) both
//! lay out on these.

use std::collections::HashMap;

use super::layout::Dimension;
use super::Layout;
use crate::kind::InputArtifact;

/// One side of the grid (the rows, or the columns).
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// Its dimensions, outermost first.
    pub dims: Vec<Dimension>,
    /// The header of each dimension (`labels` applied).
    pub headers: Vec<String>,
    /// Each entry's raw values, one per dimension (a metric's name for [`Dimension::Metric`],
    /// `-` where an instance lacks the field).
    pub keys: Vec<Vec<String>>,
    /// Each entry's display values, one per dimension.
    pub labels: Vec<Vec<String>>,
}

impl Axis {
    /// The number of entries (rows or columns).
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether there is no entry.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Entry `i`'s display values joined with `sep` (`"cub / 32 / mAP"`); `fallback` when the
    /// axis has no dimension.
    pub fn title(&self, i: usize, sep: &str, fallback: &str) -> String {
        if self.dims.is_empty() {
            return fallback.to_string();
        }
        self.labels[i].join(sep)
    }
}

/// Raw value of a non-metric dimension for an instance; `-` when the instance lacks it.
const ABSENT: &str = "-";

pub(super) fn key_of(layout: &Layout, dims: &[Dimension], artifact: &InputArtifact) -> Vec<String> {
    dims.iter()
        .filter(|d| **d != Dimension::Metric)
        .map(|d| {
            layout
                .value_of(d, artifact)
                .unwrap_or_else(|| ABSENT.to_string())
        })
        .collect()
}

/// The order values of one dimension appear in: `order` first, then numbers ascending (when
/// every value is a number), else first appearance.
pub(super) fn value_order(layout: &Layout, dim: &Dimension, seen: Vec<String>) -> Vec<String> {
    let mut values = seen;
    if values.iter().all(|v| v.parse::<f64>().is_ok()) {
        values.sort_by(|a, b| {
            a.parse::<f64>()
                .unwrap()
                .total_cmp(&b.parse::<f64>().unwrap())
        });
    }
    if let Some(first) = layout.order.get(dim.name()) {
        let mut ordered: Vec<String> = first
            .iter()
            .filter(|v| values.contains(v))
            .cloned()
            .collect();
        ordered.extend(values.into_iter().filter(|v| !first.contains(v)));
        values = ordered;
    }
    values
}

pub(super) fn build_axis(
    layout: &Layout,
    dims: &[Dimension],
    artifacts: &[&InputArtifact],
) -> Axis {
    let plain: Vec<&Dimension> = dims.iter().filter(|d| **d != Dimension::Metric).collect();
    // Distinct combinations in first-appearance order, and each dimension's value order.
    let mut combos: Vec<Vec<String>> = Vec::new();
    let mut seen: Vec<Vec<String>> = vec![Vec::new(); plain.len()];
    for artifact in artifacts {
        let key = key_of(layout, dims, artifact);
        for (i, v) in key.iter().enumerate() {
            if !seen[i].contains(v) {
                seen[i].push(v.clone());
            }
        }
        if !combos.contains(&key) {
            combos.push(key);
        }
    }
    let ranks: Vec<HashMap<String, usize>> = plain
        .iter()
        .zip(seen)
        .map(|(d, s)| {
            value_order(layout, d, s)
                .into_iter()
                .enumerate()
                .map(|(i, v)| (v, i))
                .collect()
        })
        .collect();
    combos.sort_by_key(|c| c.iter().zip(&ranks).map(|(v, r)| r[v]).collect::<Vec<_>>());

    // Insert the metric at its position, crossing every combination with every metric.
    let metric_at = dims.iter().position(|d| *d == Dimension::Metric);
    let keys: Vec<Vec<String>> = match metric_at {
        None => combos,
        Some(at) => {
            let mut keys = Vec::new();
            // Group by the dimensions outside the metric, so the metric varies inside them.
            let mut outer: Vec<Vec<String>> = Vec::new();
            for c in &combos {
                if !outer.contains(&c[..at].to_vec()) {
                    outer.push(c[..at].to_vec());
                }
            }
            for o in &outer {
                for metric in &layout.metrics {
                    for c in combos.iter().filter(|c| c[..at] == o[..]) {
                        let mut key = c[..at].to_vec();
                        key.push(metric.clone());
                        key.extend_from_slice(&c[at..]);
                        keys.push(key);
                    }
                }
            }
            keys
        }
    };
    let labels = keys
        .iter()
        .map(|k| {
            dims.iter()
                .zip(k)
                .map(|(d, v)| layout.value_label(d, v))
                .collect()
        })
        .collect();
    let headers = dims.iter().map(|d| layout.dimension_label(d)).collect();
    Axis {
        dims: dims.to_vec(),
        headers,
        keys,
        labels,
    }
}

/// The key without its metric entry, and the metric (if the axis has one).
pub(super) fn split_metric(dims: &[Dimension], key: &[String]) -> (Vec<String>, Option<String>) {
    let mut plain = Vec::new();
    let mut metric = None;
    for (d, v) in dims.iter().zip(key) {
        if *d == Dimension::Metric {
            metric = Some(v.clone());
        } else {
            plain.push(v.clone());
        }
    }
    (plain, metric)
}

/// A draw as text: `seed=1`, `seed=1, teacher_seed=0`; axes it lacks are left out.
pub(super) fn draw_text(over: &[String], draw: &[Option<String>]) -> String {
    over.iter()
        .zip(draw)
        .filter_map(|(axis, v)| v.as_ref().map(|v| format!("{axis}={v}")))
        .collect::<Vec<_>>()
        .join(", ")
}
