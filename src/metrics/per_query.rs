//! Per-query scores (`per_query.json`): each query's share of a mean-over-queries metric, so
//! a report can resample the queries of a single evaluation (a bootstrap interval) instead of
//! printing a one-draw number as if it were exact.
//!
//! A retrieval mAP is the mean of the queries' APs and R@k the mean of their top-k hits, over
//! the queries that have a positive. `evaluate` (protocols `retrieval` and `reid`) writes
//! those per-query values, in query order, next to its metrics; the mean of a metric's list,
//! summed in list order and divided by its length, is the recorded metric bit for bit. The
//! file is compact JSON:
//!
//! ```json
//! {"format": 1, "queries": 5, "index": [0, 1, 3, 4],
//!  "scores": {"map": [0.25, 1.0, 0.5, 1.0], "map_noninterp": [...], "r1": [0, 1, 0, 1]}}
//! ```
//!
//! `queries` counts every query evaluated; `index` holds the row (in the query embeddings) of
//! each query that has a positive, which are the ones every list covers (queries without a
//! positive are left out of every mean, as the metrics leave them out). Hits are written as 0
//! or 1. Protocols whose metric is not a mean over queries (TAR at FAR and TPIR at FPIR set a
//! threshold from all impostor scores) write no such file.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The file name of the per-query scores.
pub const PER_QUERY_OUTPUT: &str = "per_query.json";

/// The version of the layout written to [`PER_QUERY_OUTPUT`].
pub const FORMAT: u32 = 1;

/// The per-query scores of one evaluation. See the module docs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerQuery {
    /// The layout's version ([`FORMAT`]).
    pub format: u32,
    /// Every query evaluated, with or without a positive.
    pub queries: usize,
    /// The query row of each entry of every list in `scores`.
    pub index: Vec<usize>,
    /// Metric name -> one value per entry of `index`; the metric is their mean.
    pub scores: BTreeMap<String, Vec<f64>>,
}

/// Old names of metrics whose per-query values are stored under their current name.
const ALIASES: &[(&str, &str)] = &[("map_std", "map_noninterp")];

impl PerQuery {
    /// The per-query values of `metric` (an alias such as `map_std` reads its metric's list),
    /// or `None` when the file has none.
    pub fn values(&self, metric: &str) -> Option<&[f64]> {
        let name = ALIASES
            .iter()
            .find(|(alias, _)| *alias == metric)
            .map_or(metric, |(_, name)| *name);
        self.scores.get(name).map(Vec::as_slice)
    }

    /// Reads and checks a per-query file: a known format, and every list as long as `index`.
    pub fn read(path: &Path) -> Result<PerQuery, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let file: PerQuery =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        if file.format != FORMAT {
            return Err(format!(
                "{}: per-query format {} is not the {FORMAT} this build reads; re-run the evaluation",
                path.display(),
                file.format
            ));
        }
        if let Some((name, list)) = file
            .scores
            .iter()
            .find(|(_, list)| list.len() != file.index.len())
        {
            return Err(format!(
                "{}: `{name}` has {} values for {} queries",
                path.display(),
                list.len(),
                file.index.len()
            ));
        }
        Ok(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_alias_reads_its_metrics_list_and_a_short_list_is_an_error() {
        let file = PerQuery {
            format: FORMAT,
            queries: 3,
            index: vec![0, 2],
            scores: BTreeMap::from([("map_noninterp".to_string(), vec![0.5, 1.0])]),
        };
        assert_eq!(file.values("map_std"), Some(&[0.5, 1.0][..]));
        assert_eq!(file.values("map"), None);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(PER_QUERY_OUTPUT);
        std::fs::write(&path, serde_json::to_string(&file).unwrap()).unwrap();
        assert_eq!(PerQuery::read(&path).unwrap(), file);
        let mut short = file.clone();
        short.index.push(3);
        std::fs::write(&path, serde_json::to_string(&short).unwrap()).unwrap();
        let err = PerQuery::read(&path).unwrap_err();
        assert!(
            err.contains("`map_noninterp` has 2 values for 3 queries"),
            "{err}"
        );
    }
}
