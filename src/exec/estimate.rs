//! How long the instances a plan would run are likely to take, from what the cache recorded:
//! each instance to run is matched with recorded results of the same kind whose key params
//! differ from its own in the fewest places (those that ran on this host preferred), and their
//! durations, scaled by the ratio of `epochs` and of `images_per_epoch`, give its time (the
//! median, robust to one slow outlier). `plan` says "41 to run, about 9 min here (from 12
//! similar results)", and `run` puts the estimate beside the time its stages took, so the
//! estimate can be checked. An instance with no recorded result of its kind is counted
//! apart: an estimate never pretends to know what it does not.
//!
//! Under `--executor slurm` the plan also says how many GPU-hours its jobs request: each
//! job's time limit times its GPUs ([`gpu_hours`]), what the cluster accounts.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::Value;

use crate::cache::key::canonical;
use crate::cache::{Index, IndexError, StageKey};
use crate::exec::plan_status::{cannot_run, PlannedInstance};
use crate::exec::slurm::Request;
use crate::kind::Registry;

/// Parameters whose value scales a stage's time rather than changing what it computes: a
/// recorded duration is multiplied by the ratio of each (when both are positive).
const SCALES: [&str; 2] = ["epochs", "images_per_epoch"];

/// How many of a kind's newest results are looked at.
const SAMPLES_PER_KIND: usize = 500;

/// One recorded result of a kind.
#[derive(Debug, Clone)]
struct Sample {
    params: BTreeMap<String, Value>,
    seconds: f64,
    here: bool,
}

/// The estimate of a set of instances to run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct Estimate {
    /// Instances to run.
    pub to_run: usize,
    /// Of them, how many have recorded results of their kind to go by.
    pub estimated: usize,
    /// Their estimated seconds, summed (as if run one after another).
    pub seconds: f64,
    /// How many distinct recorded results the estimate draws on.
    pub from: usize,
}

impl Estimate {
    /// `41 to run, about 9 min here (from 12 similar results)`, saying how many instances it
    /// could not estimate.
    pub fn describe(&self) -> String {
        let head = format!("{} to run", self.to_run);
        if self.to_run == 0 {
            return head;
        }
        if self.estimated == 0 {
            return format!("{head}; no recorded result of their kinds to estimate their time");
        }
        let results = if self.from == 1 { "result" } else { "results" };
        let mut text = format!(
            "{head}, about {} here (from {} similar {results})",
            human_seconds(self.seconds),
            self.from
        );
        let unknown = self.to_run - self.estimated;
        if unknown > 0 {
            text.push_str(&format!(
                "; {unknown} more with no recorded result of their kind, not counted"
            ));
        }
        text
    }
}

/// Estimates instances from one index, reading each kind's results once.
pub(crate) struct Estimator<'a> {
    index: &'a Index,
    host: String,
    kinds: HashMap<String, KindSamples>,
    /// How many estimates were made (each counts the samples it drew on).
    round: u64,
}

/// One kind's recorded results and what has been estimated from them.
struct KindSamples {
    samples: Vec<Sample>,
    /// What an instance is matched with: the samples recorded on this host when there are
    /// any, else all of them (indices into `samples`).
    pool: Vec<usize>,
    /// The pool's params as rows of value ids.
    ids: ValueIds,
    /// The last [`Estimator::round`] each sample was drawn on in.
    used: Vec<u64>,
    /// The last instance estimated (its canonical params) and its estimate: a stage's
    /// instances come one after another, and those of a stage downstream of a sweep often
    /// share their params, so 50,000 of them cost one estimate.
    last: Option<(BTreeMap<String, Value>, Option<Drawn>)>,
}

/// An instance's estimated seconds and the samples it is drawn from (indices into a kind's
/// samples).
type Drawn = (f64, Vec<usize>);

/// The counted params of a pool of samples (all but [`SCALES`]) as a table: a column per
/// name, an id per distinct value of a column, a row of ids per sample (0 where the sample
/// has no such param). The params that differ between a sample and an instance are then
/// the columns whose ids differ, counted without comparing a value: `plan` of 50,000 instances
/// to run, each compared with 500 samples param by param, took 22 s.
struct ValueIds {
    columns: HashMap<String, usize>,
    values: Vec<HashMap<String, u32>>,
    rows: Vec<Vec<u32>>,
}

/// The id of a value no sample has.
const UNSEEN: u32 = u32::MAX;

impl ValueIds {
    fn new<'s>(pool: impl Iterator<Item = &'s BTreeMap<String, Value>>) -> Self {
        let mut table = ValueIds {
            columns: HashMap::new(),
            values: Vec::new(),
            rows: Vec::new(),
        };
        let mut cells: Vec<Vec<(usize, u32)>> = Vec::new();
        for params in pool {
            let mut row = Vec::new();
            for (name, value) in params.iter().filter(|(name, _)| counted(name)) {
                let next = table.columns.len();
                let column = *table.columns.entry(name.clone()).or_insert(next);
                if column == table.values.len() {
                    table.values.push(HashMap::new());
                }
                let ids = &mut table.values[column];
                let next = ids.len() as u32 + 1;
                row.push((column, *ids.entry(value.to_string()).or_insert(next)));
            }
            cells.push(row);
        }
        let width = table.columns.len();
        table.rows = cells
            .into_iter()
            .map(|cells| {
                let mut row = vec![0; width];
                for (column, id) in cells {
                    row[column] = id;
                }
                row
            })
            .collect();
        table
    }

    /// `wanted`'s counted params as a row of ids, and how many of them no sample has a
    /// column for (each differs from every sample).
    fn row_of(&self, wanted: &BTreeMap<String, Value>) -> (Vec<u32>, usize) {
        let mut row = vec![0; self.columns.len()];
        let mut elsewhere = 0;
        for (name, value) in wanted.iter().filter(|(name, _)| counted(name)) {
            match self.columns.get(name) {
                Some(&column) => {
                    row[column] = self.values[column]
                        .get(&value.to_string())
                        .copied()
                        .unwrap_or(UNSEEN);
                }
                None => elsewhere += 1,
            }
        }
        (row, elsewhere)
    }

    /// How many params differ between pool member `at` and an instance whose row is
    /// `wanted`: a param only one side has counts as a difference.
    fn differences(&self, at: usize, (wanted, elsewhere): &(Vec<u32>, usize)) -> usize {
        elsewhere
            + self.rows[at]
                .iter()
                .zip(wanted)
                .filter(|(a, b)| a != b)
                .count()
    }
}

/// Whether a param's difference counts in matching (those of [`SCALES`] scale a duration
/// instead).
fn counted(name: &str) -> bool {
    !SCALES.contains(&name)
}

impl<'a> Estimator<'a> {
    /// An estimator reading `index`; results recorded on this host are preferred.
    pub fn new(index: &'a Index) -> Self {
        Estimator {
            index,
            host: crate::cache::host_name(),
            kinds: HashMap::new(),
            round: 0,
        }
    }

    /// Estimates every `(kind, params)` given (the instances to run), one at a time: the
    /// params may be made as they are read.
    pub fn estimate<'p, P: std::borrow::Borrow<BTreeMap<String, Value>>>(
        &mut self,
        instances: impl IntoIterator<Item = (&'p str, P)>,
    ) -> Result<Estimate, IndexError> {
        self.round += 1;
        let round = self.round;
        let mut estimate = Estimate::default();
        for (kind, params) in instances {
            estimate.to_run += 1;
            if let Some((seconds, _)) = self.drawn_on(kind, params.borrow(), Some(round))? {
                estimate.estimated += 1;
                estimate.seconds += seconds;
            }
        }
        estimate.from = self
            .kinds
            .values()
            .map(|k| k.used.iter().filter(|&&r| r == round).count())
            .sum();
        Ok(estimate)
    }

    /// The estimated seconds of one instance of `kind` with `params`, and how many results
    /// it is drawn from; `None` when the cache holds no result of the kind.
    #[cfg(test)]
    fn instance(
        &mut self,
        kind: &str,
        params: &BTreeMap<String, Value>,
    ) -> Result<Option<(f64, usize)>, IndexError> {
        let drawn = self.drawn_on(kind, params, None)?;
        Ok(drawn.map(|(seconds, drawn)| (seconds, drawn.len())))
    }

    /// The estimated seconds of an instance of `kind` with `params` and the samples it is
    /// drawn from (`None` when the kind has no sample), those marked used in `round` when
    /// given.
    fn drawn_on(
        &mut self,
        kind: &str,
        params: &BTreeMap<String, Value>,
        round: Option<u64>,
    ) -> Result<Option<Drawn>, IndexError> {
        let params: BTreeMap<String, Value> = params
            .iter()
            .map(|(k, v)| (k.clone(), canonical(v)))
            .collect();
        let of_kind = self.samples_of(kind)?;
        let drawn = match &of_kind.last {
            Some((last, drawn)) if *last == params => drawn.clone(),
            _ => {
                let drawn = of_kind.closest(&params);
                of_kind.last = Some((params, drawn.clone()));
                drawn
            }
        };
        if let Some(round) = round {
            for &s in drawn.iter().flat_map(|(_, drawn)| drawn) {
                of_kind.used[s] = round;
            }
        }
        Ok(drawn)
    }

    /// The recorded results of `kind`, read once.
    fn samples_of(&mut self, kind: &str) -> Result<&mut KindSamples, IndexError> {
        if !self.kinds.contains_key(kind) {
            let rows = self.index.durations_of_kind(kind, SAMPLES_PER_KIND)?;
            let samples: Vec<Sample> = rows
                .into_iter()
                .filter_map(|(json, seconds, host)| {
                    let parsed = serde_json::from_str::<StageKey>(&json).ok()?;
                    Some(Sample {
                        params: parsed.params,
                        seconds,
                        here: host == self.host,
                    })
                })
                .collect();
            self.kinds
                .insert(kind.to_string(), KindSamples::new(samples));
        }
        Ok(self.kinds.get_mut(kind).expect("just read"))
    }
}

impl KindSamples {
    fn new(samples: Vec<Sample>) -> Self {
        let here: Vec<usize> = (0..samples.len()).filter(|&s| samples[s].here).collect();
        let pool = if here.is_empty() {
            (0..samples.len()).collect()
        } else {
            here
        };
        KindSamples {
            ids: ValueIds::new(pool.iter().map(|&s| &samples[s].params)),
            used: vec![0; samples.len()],
            last: None,
            pool,
            samples,
        }
    }

    /// The median of the durations of the pool's samples whose params differ from `params`
    /// (canonical) in the fewest places, each scaled to `params`, and those samples; `None`
    /// when the pool is empty.
    fn closest(&self, params: &BTreeMap<String, Value>) -> Option<Drawn> {
        let wanted = self.ids.row_of(params);
        let differences: Vec<usize> = (0..self.pool.len())
            .map(|at| self.ids.differences(at, &wanted))
            .collect();
        let closest = *differences.iter().min()?;
        let chosen: Vec<usize> = (0..self.pool.len())
            .filter(|&at| differences[at] == closest)
            .map(|at| self.pool[at])
            .collect();
        let mut times: Vec<f64> = chosen
            .iter()
            .map(|&s| self.samples[s].seconds * scale(&self.samples[s].params, params))
            .collect();
        times.sort_by(f64::total_cmp);
        Some((median(&times), chosen))
    }
}

/// The factor a recorded duration is scaled by: the ratio of each of [`SCALES`] both sides set
/// to a positive number.
fn scale(recorded: &BTreeMap<String, Value>, wanted: &BTreeMap<String, Value>) -> f64 {
    SCALES
        .iter()
        .filter_map(|name| {
            let was = recorded.get(*name)?.as_f64()?;
            let now = wanted.get(*name)?.as_f64()?;
            (was > 0.0 && now > 0.0).then_some(now / was)
        })
        .product()
}

fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// `40 s`, `9 min`, `2.5 h`.
pub(crate) fn human_seconds(seconds: f64) -> String {
    if seconds < 90.0 {
        format!("{:.0} s", seconds.max(1.0))
    } else if seconds < 90.0 * 60.0 {
        format!("{:.0} min", seconds / 60.0)
    } else if seconds < 48.0 * 3600.0 {
        format!("{:.1} h", seconds / 3600.0)
    } else {
        format!("{:.1} days", seconds / 86400.0)
    }
}

/// The estimate of the instances of `planned` that are to run (those that cannot run are
/// left out), their params as their keys hold them (made one instance at a time: a copy of
/// every instance's params at once was a fifth of what `plan` of a large sweep held).
pub(crate) fn of_planned(
    index: &Index,
    registry: &Registry,
    planned: &[PlannedInstance],
) -> Result<Estimate, IndexError> {
    let to_run = planned
        .iter()
        .filter(|p| p.status == "to-run" && !cannot_run(p))
        .map(|p| {
            let keyed: BTreeMap<String, Value> = p
                .params
                .0
                .iter()
                .filter(|(name, _)| registry.get(&p.kind).is_some_and(|k| k.keyed_param(name)))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            (&*p.kind, keyed)
        });
    Estimator::new(index).estimate(to_run)
}

/// What a set of Slurm jobs requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GpuHours {
    /// GPU-hours: each job's time limit times its GPUs, summed.
    pub gpu_hours: f64,
    /// Jobs that request GPUs.
    pub gpu_jobs: usize,
    /// Jobs that request GPUs without a time limit (not counted: the cluster's default
    /// applies).
    pub unlimited: usize,
}

/// The GPU-hours `requests` ask for (one request per job).
pub fn gpu_hours<'r>(requests: impl IntoIterator<Item = &'r Request>) -> GpuHours {
    let mut total = GpuHours::default();
    for request in requests {
        let gpus = gpus_of(request);
        if gpus == 0 {
            continue;
        }
        total.gpu_jobs += 1;
        match request.time.as_deref().and_then(slurm_hours) {
            Some(hours) => total.gpu_hours += hours * gpus as f64,
            None => total.unlimited += 1,
        }
    }
    total
}

/// The GPUs one job asks for: `--gpus [TYPE:]N`, or a `gpu[:TYPE]:N` entry of `--gres`
/// (`gpu` alone is one).
fn gpus_of(request: &Request) -> u64 {
    let count = |text: &str| text.rsplit(':').next().and_then(|n| n.parse::<u64>().ok());
    if let Some(gpus) = &request.gpus {
        return count(gpus).unwrap_or(1);
    }
    request
        .gres
        .iter()
        .flat_map(|g| g.split(','))
        .filter(|g| g.split(':').next() == Some("gpu"))
        .map(|g| if g == "gpu" { 1 } else { count(g).unwrap_or(1) })
        .sum()
}

/// Hours of a Slurm time limit (`MM`, `MM:SS`, `HH:MM:SS`, `D-HH`, `D-HH:MM`, `D-HH:MM:SS`);
/// `None` for `UNLIMITED` or what does not parse.
fn slurm_hours(time: &str) -> Option<f64> {
    let (days, rest) = match time.split_once('-') {
        Some((d, r)) => (d.parse::<f64>().ok()?, r),
        None => (0.0, time),
    };
    let parts: Vec<f64> = rest
        .split(':')
        .map(|p| p.parse::<f64>().ok())
        .collect::<Option<_>>()?;
    let seconds = match (time.contains('-'), parts.as_slice()) {
        (false, [m]) => m * 60.0,
        (false, [m, s]) => m * 60.0 + s,
        (false, [h, m, s]) => h * 3600.0 + m * 60.0 + s,
        (true, [h]) => h * 3600.0,
        (true, [h, m]) => h * 3600.0 + m * 60.0,
        (true, [h, m, s]) => h * 3600.0 + m * 60.0 + s,
        _ => return None,
    };
    Some((days * 86400.0 + seconds) / 3600.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::{RunRecord, KEY_FORMAT};
    use serde_json::json;

    /// Records a result of `kind` with `params` that took `seconds`, on `host`.
    fn record(index: &mut Index, n: usize, kind: &str, params: Value, seconds: f64, host: &str) {
        let key = StageKey {
            format: KEY_FORMAT,
            kind: kind.into(),
            impl_version: 1,
            params: serde_json::from_value(params).unwrap(),
            inputs: BTreeMap::new(),
            fingerprint: Value::Null,
        };
        let digest = format!("{n:064x}");
        let run = RunRecord {
            key: digest.clone(),
            stage: "s".into(),
            kind: kind.into(),
            pipeline: "p".into(),
            binding: format!("{{\"n\":{n}}}"),
            key_json: serde_json::to_string(&key).unwrap(),
            started: n as f64,
            finished: n as f64 + seconds,
            duration: seconds,
            device: "cpu".into(),
            outputs: BTreeMap::new(),
            metrics: BTreeMap::new(),
        };
        index.record_success(&run, &[]).unwrap();
        let mut provenance = crate::cache::Provenance::this_build("cpu", 1, "");
        provenance.host = host.into();
        index.record_provenance(&digest, &provenance).unwrap();
    }

    fn params(v: Value) -> BTreeMap<String, Value> {
        serde_json::from_value(v).unwrap()
    }

    /// Counting differences through value ids gives what comparing params one by one gives:
    /// params only one side has, a number written two ways, a value of another type, a value
    /// and a name no sample has, the scaling params left out.
    #[test]
    fn value_ids_count_the_params_that_differ() {
        let by_hand = |recorded: &BTreeMap<String, Value>, wanted: &BTreeMap<String, Value>| {
            let changed = recorded
                .iter()
                .filter(|(n, v)| counted(n) && wanted.get(*n) != Some(*v))
                .count();
            let added = wanted
                .keys()
                .filter(|n| counted(n) && !recorded.contains_key(*n))
                .count();
            changed + added
        };
        let pool = [
            json!({"lr": 0.1, "seed": 0, "epochs": 10}),
            json!({"lr": 0.2, "seed": 0, "images_per_epoch": 100}),
            json!({"lr": 1, "arch": "r18", "epochs": 5}),
            json!({}),
        ]
        .map(params);
        let ids = ValueIds::new(pool.iter());
        let wanted = [
            json!({"lr": 0.1, "seed": 0, "epochs": 20}),
            json!({"lr": 1.0, "arch": "r18"}),
            json!({"lr": "0.1", "seed": 0}),
            json!({"lr": 0.3, "new": true, "seed": 0}),
            json!({}),
        ];
        for wanted in wanted.map(params) {
            let row = ids.row_of(&wanted);
            for (at, recorded) in pool.iter().enumerate() {
                assert_eq!(
                    ids.differences(at, &row),
                    by_hand(recorded, &wanted),
                    "{recorded:?} against {wanted:?}"
                );
            }
        }
    }

    #[test]
    fn issue34_estimates_come_from_the_closest_results_scaled_by_epochs_and_images() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = Index::open(dir.path()).unwrap();
        let here = crate::cache::host_name();
        // Three students at lr 0.1 (10 epochs: 100, 120, 140 s), one at lr 0.2 (1000 s), a
        // teacher of another kind, and a fast student recorded on another host.
        for (n, s) in [100.0, 120.0, 140.0].into_iter().enumerate() {
            let p = json!({"lr": 0.1, "epochs": 10, "images_per_epoch": 0, "seed": n});
            record(&mut index, n, "distill", p, s, &here);
        }
        record(
            &mut index,
            3,
            "distill",
            json!({"lr": 0.2, "epochs": 10, "images_per_epoch": 0, "seed": 0}),
            1000.0,
            &here,
        );
        record(
            &mut index,
            4,
            "train-teacher",
            json!({"epochs": 10}),
            5000.0,
            &here,
        );
        record(
            &mut index,
            5,
            "distill",
            json!({"lr": 0.1, "epochs": 10, "images_per_epoch": 0, "seed": 9}),
            1.0,
            "elsewhere",
        );
        let mut estimator = Estimator::new(&index);

        // A new seed at lr 0.1 and 20 epochs: the closest are the lr-0.1 results here (one
        // differing param, the seed), their median 120 s doubled.
        let wanted = params(json!({"lr": 0.1, "epochs": 20, "images_per_epoch": 0, "seed": 7}));
        let (seconds, drawn_from) = estimator.instance("distill", &wanted).unwrap().unwrap();
        assert_eq!(seconds, 240.0);
        assert_eq!(drawn_from, 3);
        // An exact match of one result (lr 0.2, seed 0) is that result, halved to 5 epochs.
        let wanted = params(json!({"lr": 0.2, "epochs": 5, "images_per_epoch": 0, "seed": 0}));
        assert_eq!(
            estimator.instance("distill", &wanted).unwrap().unwrap().0,
            500.0
        );
        // A kind never recorded has no estimate.
        assert!(estimator.instance("embed", &wanted).unwrap().is_none());

        let a = params(json!({"lr": 0.1, "epochs": 20, "images_per_epoch": 0, "seed": 7}));
        let b = params(json!({"epochs": 10}));
        let c = params(json!({"x": 1}));
        let all = estimator
            .estimate([("distill", &a), ("train-teacher", &b), ("embed", &c)])
            .unwrap();
        assert_eq!(
            all,
            Estimate {
                to_run: 3,
                estimated: 2,
                seconds: 5240.0,
                from: 4
            }
        );
        assert_eq!(
            all.describe(),
            "3 to run, about 87 min here (from 4 similar results); 1 more with no recorded \
             result of their kind, not counted"
        );
    }

    #[test]
    fn issue34_images_per_epoch_scales_when_both_sides_cap_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = Index::open(dir.path()).unwrap();
        let here = crate::cache::host_name();
        record(
            &mut index,
            0,
            "distill",
            json!({"epochs": 2, "images_per_epoch": 1000}),
            60.0,
            &here,
        );
        let mut estimator = Estimator::new(&index);
        let wanted = params(json!({"epochs": 4, "images_per_epoch": 500}));
        assert_eq!(
            estimator.instance("distill", &wanted).unwrap().unwrap().0,
            60.0
        );
        let all = params(json!({"epochs": 4, "images_per_epoch": 0}));
        assert_eq!(
            estimator.instance("distill", &all).unwrap().unwrap().0,
            120.0
        );
    }

    #[test]
    fn issue34_gpu_hours_are_time_limits_times_gpus() {
        let job = |time: Option<&str>, gres: Option<&str>, gpus: Option<&str>| Request {
            time: time.map(Into::into),
            gres: gres.map(Into::into),
            gpus: gpus.map(Into::into),
            ..Request::default()
        };
        let jobs = [
            job(Some("2:00:00"), Some("gpu:1"), None),
            job(Some("1-00:00:00"), Some("gpu:a100:2"), None),
            job(Some("90"), None, Some("a100:4")),
            job(None, Some("gpu"), None),
            job(Some("4:00:00"), None, None),
        ];
        let total = gpu_hours(&jobs);
        assert_eq!(total.gpu_jobs, 4);
        assert_eq!(total.unlimited, 1);
        assert!(
            (total.gpu_hours - (2.0 + 48.0 + 6.0)).abs() < 1e-9,
            "{total:?}"
        );
        assert_eq!(slurm_hours("UNLIMITED"), None);
        assert_eq!(slurm_hours("2-12"), Some(60.0));
        assert_eq!(slurm_hours("30:00"), Some(0.5));
    }
}
