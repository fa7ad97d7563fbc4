//! The metric registry: every metric this project records, declared once with its printed
//! label, its number format and whether higher is better.
//!
//! Reports read labels and default formats here, `evaluate` and `update-gain` name what they
//! record through it, and `update-gain` compares the quality metrics it lists. Adding a metric
//! is one entry in [`METRICS`] plus the function that computes it. A name is either exact
//! (`map`) or a family with one placeholder (`r<k>`: `r1`, `r10`; `gain_<metric>`), whose
//! label may repeat the placeholder (`R@<k>`).
//!
//! Names and labels are part of every report and of cache keys (through the metrics that
//! downstream stages select); change them only with a key bump.

/// How a metric's numbers read when a report's layout names no format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A fraction such as mAP or R@k: printed in the layout's own format (percentages by
    /// default).
    Fraction,
    /// As it is, with this many decimals (costs, counts, the share of seeds where the
    /// compatibility criterion holds).
    Fixed(usize),
}

/// Which way a metric improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// A quality measure of embeddings: higher is better (mAP, R@k, TAR, TPIR).
    Higher,
    /// A cost or error: lower is better (GFLOPs, a loss).
    Lower,
    /// A count or a setting: neither (queries, resolution).
    Neither,
}

/// One metric, or one family of metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricDef {
    /// The recorded name, or a family with one `<placeholder>` (`r<k>`).
    pub name: &'static str,
    /// The printed name; a family's label may repeat its placeholder (`R@<k>`).
    pub label: &'static str,
    /// The default number format.
    pub format: Format,
    /// Which way it improves.
    pub better: Better,
    /// Whether `update-gain` compares it by default: a quality measure `evaluate` records.
    pub compared: bool,
    /// One line: what it is.
    pub doc: &'static str,
}

const fn def(
    name: &'static str,
    label: &'static str,
    format: Format,
    better: Better,
    doc: &'static str,
) -> MetricDef {
    MetricDef {
        name,
        label,
        format,
        better,
        compared: false,
        doc,
    }
}

const fn quality(name: &'static str, label: &'static str, doc: &'static str) -> MetricDef {
    MetricDef {
        name,
        label,
        format: Format::Fraction,
        better: Better::Higher,
        compared: true,
        doc,
    }
}

const fn count(name: &'static str, doc: &'static str) -> MetricDef {
    def(name, name, Format::Fixed(0), Better::Neither, doc)
}

/// Mean average precision (trapezoidal, the RAML papers' AP).
pub const MAP: MetricDef = quality("map", "mAP", "mean average precision (trapezoidal AP)");
/// The standard, non-interpolated AP.
pub const MAP_NONINTERP: MetricDef = quality(
    "map_noninterp",
    "mAP (std. AP)",
    "mean of the standard, non-interpolated AP",
);
/// The former name of [`MAP_NONINTERP`], still recorded.
pub const MAP_STD: MetricDef = quality(
    "map_std",
    "mAP (std. AP)",
    "alias of map_noninterp (its former name, kept so existing keys and reports stay valid)",
);
/// Recall at k.
pub const RECALL_AT: MetricDef = quality(
    "r<k>",
    "R@<k>",
    "share of queries with a positive among the k nearest (identification: rank-k)",
);
/// TAR at the chosen FAR.
pub const TAR_AT_FAR: MetricDef = quality(
    "tar_at_far",
    "TAR@FAR",
    "verification: true accept rate at the chosen false accept rate",
);
/// TPIR at the chosen FPIR.
pub const TPIR_AT_FPIR: MetricDef = quality(
    "tpir_at_fpir",
    "TPIR@FPIR",
    "open-set identification: true positive identification rate at the chosen FPIR",
);
/// One forward pass's cost at the query resolution.
pub const QUERY_GFLOPS: MetricDef = def(
    "query_gflops",
    "query GFLOPs",
    Format::Fixed(2),
    Better::Lower,
    "GFLOPs of one forward pass of the query model",
);
/// One forward pass's cost.
pub(crate) const GFLOPS: MetricDef = def(
    "gflops",
    "GFLOPs",
    Format::Fixed(2),
    Better::Lower,
    "GFLOPs of one forward pass at the resolution",
);
/// Queries without a positive in the database.
pub const NO_POSITIVE: MetricDef = def(
    "no_positive",
    "no positive",
    Format::Fixed(0),
    Better::Neither,
    "queries without any positive in the database (left out of the means)",
);
/// Queries evaluated.
pub const QUERIES: MetricDef = count("queries", "queries evaluated");
/// Genuine template pairs.
pub const GENUINE_PAIRS: MetricDef = count("genuine_pairs", "verification: genuine pairs");
/// Impostor template pairs.
pub const IMPOSTOR_PAIRS: MetricDef = count("impostor_pairs", "verification: impostor pairs");
/// The FAR the threshold achieves.
pub const FAR_ACHIEVED: MetricDef = def(
    "far_achieved",
    "far_achieved",
    Format::Fraction,
    Better::Neither,
    "verification: the FAR the chosen threshold achieves",
);
/// Probes whose identity is in the gallery.
pub const MATED_PROBES: MetricDef = count("mated_probes", "identification: mated probes");
/// Probes whose identity is not in the gallery.
pub const NON_MATED_PROBES: MetricDef =
    count("non_mated_probes", "identification: non-mated probes");
/// The FPIR the threshold achieves.
pub const FPIR_ACHIEVED: MetricDef = def(
    "fpir_achieved",
    "fpir_achieved",
    Format::Fraction,
    Better::Neither,
    "identification: the FPIR the chosen threshold achieves",
);
/// M(new, old) - M(old, old).
pub(crate) const DIFF: MetricDef = def(
    "diff_<metric>",
    "diff_<metric>",
    Format::Fraction,
    Better::Higher,
    "update-gain: M(new, old) - M(old, old)",
);
/// The compatibility criterion: 1 when it holds (its mean over seeds is the share that hold).
pub(crate) const CRITERION: MetricDef = def(
    "criterion_<metric>",
    "criterion_<metric>",
    Format::Fixed(2),
    Better::Higher,
    "update-gain: 1 when M(new, old) > M(old, old), else 0",
);
/// The update gain.
pub(crate) const GAIN: MetricDef = def(
    "gain_<metric>",
    "gain_<metric>",
    Format::Fraction,
    Better::Higher,
    "update-gain: G = [M(new, old) - M(old, old)] / [M(new*, new*) - M(old, old)]",
);

/// Every metric, in the order `asymflow` documents them.
pub(crate) const METRICS: &[MetricDef] = &[
    MAP,
    MAP_NONINTERP,
    MAP_STD,
    RECALL_AT,
    TAR_AT_FAR,
    TPIR_AT_FPIR,
    QUERY_GFLOPS,
    GFLOPS,
    NO_POSITIVE,
    QUERIES,
    GENUINE_PAIRS,
    IMPOSTOR_PAIRS,
    FAR_ACHIEVED,
    MATED_PROBES,
    NON_MATED_PROBES,
    FPIR_ACHIEVED,
    DIFF,
    CRITERION,
    GAIN,
    count("count", "embed: images embedded"),
    count("resolution", "embed: the input resolution"),
    count("epochs", "training: epochs run"),
    count("<part>_images", "training: images of a partition"),
    count("<part>_classes", "training: classes of a partition"),
];

/// What a family's placeholder may stand for.
fn placeholder_fits(placeholder: &str, value: &str) -> bool {
    !value.is_empty()
        && match placeholder {
            "k" => value.bytes().all(|b| b.is_ascii_digit()),
            _ => true,
        }
}

impl MetricDef {
    /// The placeholder's value when `metric` is this metric (or a member of this family):
    /// `Some("")` for an exact name, `Some("10")` for `r10` of `r<k>`.
    fn bind<'m>(&self, metric: &'m str) -> Option<&'m str> {
        let Some((prefix, rest)) = self.name.split_once('<') else {
            return (self.name == metric).then_some("");
        };
        let (placeholder, suffix) = rest.split_once('>')?;
        let value = metric.strip_prefix(prefix)?.strip_suffix(suffix)?;
        placeholder_fits(placeholder, value).then_some(value)
    }

    /// This metric's name, for exact names; a family's member with `value` in place of its
    /// placeholder (`RECALL_AT.named("5")` is `r5`).
    pub fn named(&self, value: &str) -> String {
        match self.name.split_once('<') {
            Some((prefix, rest)) => {
                let suffix = rest.split_once('>').map_or("", |(_, s)| s);
                format!("{prefix}{value}{suffix}")
            }
            None => self.name.to_string(),
        }
    }
}

/// The entry `metric` belongs to, exact names before families, and its placeholder's value.
pub fn lookup(metric: &str) -> Option<(&'static MetricDef, &str)> {
    let exact = METRICS
        .iter()
        .filter(|d| !d.name.contains('<'))
        .find_map(|d| d.bind(metric).map(|v| (d, v)));
    exact.or_else(|| {
        METRICS
            .iter()
            .filter(|d| d.name.contains('<'))
            .find_map(|d| d.bind(metric).map(|v| (d, v)))
    })
}

/// The printed name of `metric`: its entry's label (a family's with the placeholder filled
/// in), else the name itself.
pub fn label(metric: &str) -> String {
    match lookup(metric) {
        Some((d, value)) => match d.label.split_once('<') {
            Some((prefix, rest)) => {
                let suffix = rest.split_once('>').map_or("", |(_, s)| s);
                format!("{prefix}{value}{suffix}")
            }
            None => d.label.to_string(),
        },
        None => metric.to_string(),
    }
}

/// The default format of `metric` (a metric the registry does not know is a fraction).
pub fn format(metric: &str) -> Format {
    lookup(metric).map_or(Format::Fraction, |(d, _)| d.format)
}

/// Whether `update-gain` compares `metric` by default: a quality measure `evaluate` records.
pub fn compared(metric: &str) -> bool {
    lookup(metric).is_some_and(|(d, _)| d.compared)
}

/// Which way `metric` improves, when the registry knows it.
pub fn better(metric: &str) -> Option<Better> {
    lookup(metric).map(|(d, _)| d.better)
}

/// The names of registry entries, as a kind's `records` lists them.
pub fn names(defs: &[MetricDef]) -> Vec<String> {
    defs.iter().map(|d| d.name.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_names_and_families_resolve_to_their_entries() {
        assert_eq!(lookup("map").unwrap().0.name, "map");
        assert_eq!(lookup("r10").unwrap(), (&METRICS[3], "10"));
        assert!(lookup("r").is_none() && lookup("rx").is_none());
        assert_eq!(lookup("gain_map").unwrap().1, "map");
        assert_eq!(lookup("train_images").unwrap().1, "train");
        assert!(lookup("custom").is_none());
    }

    #[test]
    fn labels_fill_in_the_placeholder_and_unknown_names_read_as_themselves() {
        assert_eq!(label("map"), "mAP");
        assert_eq!(label("map_std"), "mAP (std. AP)");
        assert_eq!(label("r1"), "R@1");
        assert_eq!(label("r100"), "R@100");
        assert_eq!(label("tpir_at_fpir"), "TPIR@FPIR");
        assert_eq!(label("criterion_map"), "criterion_map");
        assert_eq!(label("custom"), "custom");
    }

    #[test]
    fn formats_and_directions() {
        assert_eq!(format("query_gflops"), Format::Fixed(2));
        assert_eq!(format("criterion_r1"), Format::Fixed(2));
        assert_eq!(format("non_mated_probes"), Format::Fixed(0));
        assert_eq!(format("val-test_classes"), Format::Fixed(0));
        assert_eq!(format("map"), Format::Fraction);
        assert_eq!(format("custom"), Format::Fraction);
        assert_eq!(better("gflops"), Some(Better::Lower));
        assert_eq!(better("r5"), Some(Better::Higher));
        assert_eq!(better("custom"), None);
    }

    #[test]
    fn update_gain_compares_quality_metrics_only() {
        for m in [
            "map",
            "map_noninterp",
            "map_std",
            "r1",
            "r20",
            "tar_at_far",
            "tpir_at_fpir",
        ] {
            assert!(compared(m), "{m}");
        }
        for m in [
            "no_positive",
            "queries",
            "query_gflops",
            "gain_map",
            "far_achieved",
            "r",
        ] {
            assert!(!compared(m), "{m}");
        }
    }

    #[test]
    fn every_name_is_declared_once_and_families_name_their_members() {
        for (i, a) in METRICS.iter().enumerate() {
            assert!(
                METRICS[i + 1..].iter().all(|b| b.name != a.name),
                "{} twice",
                a.name
            );
        }
        assert_eq!(RECALL_AT.named("5"), "r5");
        assert_eq!(GAIN.named("map"), "gain_map");
        assert_eq!(MAP.named("ignored"), "map");
    }
}
