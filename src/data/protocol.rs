//! Split protocols: from a data set's items to named partitions (see [`super::manifest`] for
//! the names). Every random choice is drawn from a ChaCha8 stream seeded by the split seed and
//! a fixed salt per decision, so a (data set, options, seed) always gives the same manifest
//! and changing one option never reshuffles the others' draws.

use std::collections::{BTreeMap, BTreeSet};

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::item::SplitItem;
use super::listing::Part;
use super::manifest::VerificationPair;
use super::DataError;

/// How the train and test partitions are formed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// The first half of the classes (in class-id order) train, the rest test
    /// (CUB 1-100 / 101-200, Cars 1-98 / 99-196; the synthetic set).
    HalfClasses,
    /// The data set's own split (SOP `Ebay_train` / `Ebay_test`; Market-1501 train, query,
    /// gallery).
    Provided,
}

impl Protocol {
    /// The names accepted by the `protocol` parameter.
    pub(crate) const NAMES: [&'static str; 2] = ["half-classes", "provided"];

    /// The protocol called `name`.
    pub fn parse(name: &str) -> Result<Self, DataError> {
        match name {
            "half-classes" => Ok(Protocol::HalfClasses),
            "provided" => Ok(Protocol::Provided),
            other => Err(DataError::config(format!(
                "unknown protocol `{other}`; expected one of: {}",
                Protocol::NAMES.join(", ")
            ))),
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::HalfClasses => "half-classes",
            Protocol::Provided => "provided",
        }
    }
}

/// Which classes the nested `subsets` take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubsetOrder {
    /// A seeded random order of the classes (BCT's Market-1501 and face experiments).
    Random,
    /// The classes in class-id order, the first ones first (BCT's ImageNet old model: the
    /// first 500 of the 1,000 classes).
    ClassId,
}

impl SubsetOrder {
    /// The names accepted by the `subset_order` parameter.
    pub(crate) const NAMES: &'static [&'static str] = &["random", "class-id"];

    /// The order called `name`.
    pub fn parse(name: &str) -> Result<Self, DataError> {
        match name {
            "random" => Ok(SubsetOrder::Random),
            "class-id" => Ok(SubsetOrder::ClassId),
            other => Err(DataError::config(format!(
                "unknown subset_order `{other}`; expected one of: {}",
                SubsetOrder::NAMES.join(", ")
            ))),
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            SubsetOrder::Random => "random",
            SubsetOrder::ClassId => "class-id",
        }
    }
}

/// Everything a split needs besides the items.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitOptions {
    /// Train/test protocol.
    pub protocol: Protocol,
    /// Nested identity subsets of train, in percent of the training classes (`train-<p>`);
    /// with `validation`, also of val-train (`val-train-<p>`).
    pub subsets: Vec<i64>,
    /// Which classes the subsets take.
    pub subset_order: SubsetOrder,
    /// Whether to add `val-train` / `val-test` (halves of the training classes).
    pub validation: bool,
    /// Gallery images per test class for `query` / `gallery` (0: none drawn).
    pub gallery_per_class: usize,
    /// Fraction of the query classes left out of `probe-gallery` (open-set identification);
    /// 0 for none.
    pub non_mated: f64,
    /// Genuine pairs per test class (and as many impostor pairs) for verification; 0: none.
    pub pairs_per_class: usize,
    /// Seed of every random choice.
    pub seed: u64,
    /// `half-classes`: the share of the classes (in class-id order) that train, in (0, 1);
    /// one half by default, as the papers split CUB and Cars.
    pub train_fraction: f64,
}

impl Default for SplitOptions {
    fn default() -> Self {
        SplitOptions {
            protocol: Protocol::HalfClasses,
            subsets: Vec::new(),
            subset_order: SubsetOrder::Random,
            validation: false,
            gallery_per_class: 0,
            non_mated: 0.0,
            pairs_per_class: 0,
            seed: 0,
            train_fraction: 0.5,
        }
    }
}

/// The partitions and verification pairs (indices into `test`) of a split.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Partitions {
    /// Name -> items.
    pub partitions: BTreeMap<String, Vec<SplitItem>>,
    /// Verification pairs over `test`.
    pub pairs: Vec<VerificationPair>,
}

fn rng(seed: u64, salt: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

fn classes_of(items: &[SplitItem]) -> Vec<i64> {
    items
        .iter()
        .map(|i| i.label)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

fn with_labels(items: &[SplitItem], labels: &BTreeSet<i64>) -> Vec<SplitItem> {
    items
        .iter()
        .filter(|i| labels.contains(&i.label))
        .cloned()
        .collect()
}

/// Nested identity subsets of `items`: one order of their classes (shuffled, or class-id
/// order), each subset a prefix of it, inserted as `<name>-<p>` for each percentage.
fn insert_nested_subsets(
    parts: &mut BTreeMap<String, Vec<SplitItem>>,
    name: &str,
    items: &[SplitItem],
    subsets: &[i64],
    (order_by, mut rng): (SubsetOrder, ChaCha8Rng),
) -> Result<(), DataError> {
    if subsets.is_empty() {
        return Ok(());
    }
    let mut order = classes_of(items);
    if order_by == SubsetOrder::Random {
        order.shuffle(&mut rng);
    }
    for &p in subsets {
        if !(1..=100).contains(&p) {
            return Err(DataError::config(format!(
                "subsets: {p} is not a percentage in 1..=100"
            )));
        }
        let n = ((order.len() as f64 * p as f64 / 100.0).round() as usize).max(1);
        let chosen: BTreeSet<i64> = order[..n].iter().copied().collect();
        parts.insert(format!("{name}-{p}"), with_labels(items, &chosen));
    }
    Ok(())
}

/// What a partition is for: fitting, choosing among fits, or the final measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PartitionRole {
    /// `train`, `train-NN`, `val-train`, `val-train-NN`: models are fitted on it.
    Train,
    /// `val-test`: held out of training to choose hyper-parameters on.
    Validation,
    /// `test`, `query`, `gallery`, `junk` and the open-set `probe-*`: the final measurement,
    /// never to be tuned on.
    Test,
}

/// The role of the partition a split writes under `name` (see [`split`] for the names).
pub(crate) fn partition_role(name: &str) -> PartitionRole {
    match name {
        "val-test" => PartitionRole::Validation,
        "test" | "query" | "gallery" | "junk" => PartitionRole::Test,
        name if name.starts_with("probe-") => PartitionRole::Test,
        _ => PartitionRole::Train,
    }
}

/// The partitions a split with `opts` can write, known before any data is read: exactly
/// those of [`split`] for `half-classes`; for `provided`, every part a data set may provide
/// (train, test, query, gallery, junk), since which ones exist is in the data. Used at plan
/// time so that a misspelt `partition` is an error before anything runs.
pub(crate) fn possible_partitions(opts: &SplitOptions) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = match opts.protocol {
        Protocol::HalfClasses => ["train", "test"].map(String::from).into(),
        Protocol::Provided => ["train", "test", "query", "gallery", "junk"]
            .map(String::from)
            .into(),
    };
    names.extend(opts.subsets.iter().map(|p| format!("train-{p}")));
    if opts.validation {
        names.extend(["val-train".to_string(), "val-test".to_string()]);
        names.extend(opts.subsets.iter().map(|p| format!("val-train-{p}")));
    }
    if opts.gallery_per_class > 0 {
        names.extend(["query".to_string(), "gallery".to_string()]);
    }
    if opts.non_mated > 0.0 {
        names.extend(["probe-gallery", "probe-mated", "probe-non-mated"].map(String::from));
    }
    names
}

/// Splits `items` (each with its provided part) into partitions: train and test by the
/// protocol, then each optional partition the options ask for, in this order (later ones
/// read earlier ones: open-set probes come from `query` / `gallery`).
pub fn split(items: &[(SplitItem, Part)], opts: &SplitOptions) -> Result<Partitions, DataError> {
    let mut parts = match opts.protocol {
        Protocol::HalfClasses => half_classes(items, opts.train_fraction)?,
        Protocol::Provided => provided(items)?,
    };
    let train = match parts.get("train") {
        Some(train) => train.clone(),
        // A test-only data set (IJB-C): nothing to subset or validate on.
        None if opts.subsets.is_empty() && !opts.validation => Vec::new(),
        None => {
            return Err(DataError::config(
                "this data set provides no training part, so it has no `subsets` or \
                 validation split; drop them from this split",
            ))
        }
    };
    insert_nested_subsets(
        &mut parts,
        "train",
        &train,
        &opts.subsets,
        (opts.subset_order, rng(opts.seed, 1)),
    )?;
    if opts.validation {
        insert_validation(&mut parts, &train, opts)?;
    }
    if opts.gallery_per_class > 0 {
        insert_query_gallery(&mut parts, opts)?;
    }
    if opts.non_mated.is_nan() || opts.non_mated < 0.0 {
        return Err(DataError::config("non_mated must be a fraction in 0..1"));
    }
    if opts.non_mated > 0.0 {
        insert_open_set(&mut parts, opts)?;
    }
    let pairs = if opts.pairs_per_class > 0 {
        let test = parts.get("test").ok_or_else(|| {
            DataError::config(
                "pairs_per_class needs a `test` partition (not provided by this data set)",
            )
        })?;
        verification_pairs(test, opts.pairs_per_class, opts.seed)?
    } else {
        Vec::new()
    };
    Ok(Partitions {
        partitions: parts,
        pairs,
    })
}

/// `half-classes`: the first `train_fraction` of the classes (in class-id order) train, the
/// rest test; junk items are left out.
fn half_classes(
    items: &[(SplitItem, Part)],
    train_fraction: f64,
) -> Result<BTreeMap<String, Vec<SplitItem>>, DataError> {
    let mut parts = BTreeMap::new();
    let usable: Vec<SplitItem> = items
        .iter()
        .filter(|(_, p)| *p != Part::Junk)
        .map(|(i, _)| i.clone())
        .collect();
    let classes = classes_of(&usable);
    if classes.len() < 2 {
        return Err(DataError::config(format!(
            "half-classes needs at least 2 classes, the data set has {}",
            classes.len()
        )));
    }
    if train_fraction.is_nan() || train_fraction <= 0.0 || train_fraction >= 1.0 {
        return Err(DataError::config(format!(
            "train_fraction must be between 0 and 1 (exclusive), got {}",
            train_fraction
        )));
    }
    let n_train =
        ((classes.len() as f64 * train_fraction).round() as usize).clamp(1, classes.len() - 1);
    let train: BTreeSet<i64> = classes[..n_train].iter().copied().collect();
    let (tr, te): (Vec<_>, Vec<_>) = usable.into_iter().partition(|i| train.contains(&i.label));
    parts.insert("train".into(), tr);
    parts.insert("test".into(), te);
    Ok(parts)
}

/// `provided`: the data set's own parts, under their partition names.
fn provided(items: &[(SplitItem, Part)]) -> Result<BTreeMap<String, Vec<SplitItem>>, DataError> {
    let mut parts = BTreeMap::new();
    let mut by_part: BTreeMap<Part, Vec<SplitItem>> = BTreeMap::new();
    for (item, part) in items {
        by_part.entry(*part).or_default().push(item.clone());
    }
    let has_part = by_part.contains_key(&Part::Train) || by_part.contains_key(&Part::Test);
    if by_part.contains_key(&Part::Unsplit) || !has_part {
        return Err(DataError::config(
            "this data set has no provided split (only sop, market1501, imagenet, \
             places365 and ijbc do); \
             use protocol = \"half-classes\"",
        ));
    }
    for (part, name) in [
        (Part::Train, "train"),
        (Part::Test, "test"),
        (Part::Query, "query"),
        (Part::Gallery, "gallery"),
        (Part::Junk, "junk"),
    ] {
        if let Some(v) = by_part.remove(&part) {
            parts.insert(name.into(), v);
        }
    }
    Ok(parts)
}

/// `val-train` / `val-test`: the first and second half of the training classes, with the
/// same nested subsets inside val-train.
fn insert_validation(
    parts: &mut BTreeMap<String, Vec<SplitItem>>,
    train: &[SplitItem],
    opts: &SplitOptions,
) -> Result<(), DataError> {
    let train_classes = classes_of(train);
    if train_classes.len() < 2 {
        return Err(DataError::config(
            "validation needs at least 2 training classes",
        ));
    }
    let half = train_classes.len() / 2;
    let first: BTreeSet<i64> = train_classes[..half].iter().copied().collect();
    let (a, b): (Vec<_>, Vec<_>) = train
        .iter()
        .cloned()
        .partition(|i| first.contains(&i.label));
    // The same subsets inside val-train, so a protocol that trains on `train-<p>` (BCT's
    // old model) can be rehearsed on the validation split: `val-train-<p>`.
    insert_nested_subsets(
        parts,
        "val-train",
        &a,
        &opts.subsets,
        (opts.subset_order, rng(opts.seed, 3)),
    )?;
    parts.insert("val-train".into(), a);
    parts.insert("val-test".into(), b);
    Ok(())
}

/// `query` / `gallery` from `test`: `gallery_per_class` random images of each class in the
/// gallery, at least one left as a query.
fn insert_query_gallery(
    parts: &mut BTreeMap<String, Vec<SplitItem>>,
    opts: &SplitOptions,
) -> Result<(), DataError> {
    if parts.contains_key("query") {
        return Err(DataError::config(
            "gallery_per_class: this data set provides its own query and gallery; set it to 0",
        ));
    }
    let test = parts.get("test").cloned().unwrap_or_default();
    let mut by_class: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
    for (i, item) in test.iter().enumerate() {
        by_class.entry(item.label).or_default().push(i);
    }
    let mut in_gallery = vec![false; test.len()];
    for (label, mut members) in by_class {
        members.shuffle(&mut rng(opts.seed ^ (label as u64).wrapping_mul(31), 2));
        // Every class keeps at least one query.
        let k = opts.gallery_per_class.min(members.len().saturating_sub(1));
        for &i in &members[..k] {
            in_gallery[i] = true;
        }
    }
    // Both keep the test partition's order.
    let (gallery, query): (Vec<_>, Vec<_>) = test
        .into_iter()
        .enumerate()
        .partition(|(i, _)| in_gallery[*i]);
    parts.insert(
        "query".into(),
        query.into_iter().map(|(_, item)| item).collect(),
    );
    parts.insert(
        "gallery".into(),
        gallery.into_iter().map(|(_, item)| item).collect(),
    );
    Ok(())
}

/// Open-set identification: a `non_mated` share of the query classes left out of
/// `probe-gallery`; their queries are `probe-non-mated`, the rest `probe-mated`.
fn insert_open_set(
    parts: &mut BTreeMap<String, Vec<SplitItem>>,
    opts: &SplitOptions,
) -> Result<(), DataError> {
    if opts.non_mated >= 1.0 {
        return Err(DataError::config("non_mated must be a fraction below 1"));
    }
    let (Some(query), Some(gallery)) = (parts.get("query"), parts.get("gallery")) else {
        return Err(DataError::config(
            "non_mated needs a query and a gallery: set gallery_per_class (or use a data set \
             that provides them)",
        ));
    };
    let mut order = classes_of(query);
    // Salt 3 is also val-train's subsets': the two shuffle different class lists, and a new
    // salt here would redraw the probes of every split already cached.
    order.shuffle(&mut rng(opts.seed, 3));
    let n = (order.len() as f64 * opts.non_mated).round() as usize;
    let left_out: BTreeSet<i64> = order[..n].iter().copied().collect();
    let enrolled: Vec<SplitItem> = gallery
        .iter()
        .filter(|i| !left_out.contains(&i.label))
        .cloned()
        .collect();
    let (non_mated, mated): (Vec<_>, Vec<_>) = query
        .iter()
        .cloned()
        .partition(|i| left_out.contains(&i.label));
    parts.insert("probe-gallery".into(), enrolled);
    parts.insert("probe-mated".into(), mated);
    parts.insert("probe-non-mated".into(), non_mated);
    Ok(())
}

/// For each class with at least two images, `per_class` genuine pairs (two distinct images of
/// the class) and as many impostor pairs (an image of the class and one of another class).
fn verification_pairs(
    test: &[SplitItem],
    per_class: usize,
    seed: u64,
) -> Result<Vec<VerificationPair>, DataError> {
    let mut by_class: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
    for (i, item) in test.iter().enumerate() {
        by_class.entry(item.label).or_default().push(i);
    }
    if by_class.len() < 2 {
        return Err(DataError::config(
            "verification pairs need at least 2 test classes",
        ));
    }
    let mut r = rng(seed, 4);
    let mut pairs = Vec::new();
    for (label, members) in &by_class {
        if members.len() < 2 {
            continue;
        }
        for _ in 0..per_class {
            let a = r.random_range(0..members.len());
            let mut b = r.random_range(0..members.len() - 1);
            if b >= a {
                b += 1;
            }
            pairs.push(VerificationPair {
                a: members[a],
                b: members[b],
                genuine: true,
            });
            let a = members[r.random_range(0..members.len())];
            let b = loop {
                let j = r.random_range(0..test.len());
                if test[j].label != *label {
                    break j;
                }
            };
            pairs.push(VerificationPair {
                a,
                b,
                genuine: false,
            });
        }
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(classes: i64, per_class: usize) -> Vec<(SplitItem, Part)> {
        (0..classes)
            .flat_map(|c| {
                (0..per_class).map(move |i| {
                    (
                        SplitItem {
                            id: format!("{c}/{i}"),
                            label: c,
                            camera: None,
                        },
                        Part::Unsplit,
                    )
                })
            })
            .collect()
    }

    fn labels(items: &[SplitItem]) -> BTreeSet<i64> {
        items.iter().map(|i| i.label).collect()
    }

    #[test]
    fn train_fraction_moves_the_class_boundary() {
        let opts = SplitOptions {
            train_fraction: 0.8,
            ..SplitOptions::default()
        };
        let parts = split(&items(10, 2), &opts).unwrap().partitions;
        assert_eq!(classes_of(&parts["train"]), (0..8).collect::<Vec<i64>>());
        assert_eq!(classes_of(&parts["test"]), vec![8, 9]);
        let bad = SplitOptions {
            train_fraction: 1.0,
            ..SplitOptions::default()
        };
        let err = split(&items(10, 2), &bad).unwrap_err().to_string();
        assert!(err.contains("train_fraction"), "{err}");
    }

    #[test]
    fn half_classes_splits_by_class_id_order() {
        let p = split(&items(10, 3), &SplitOptions::default()).unwrap();
        assert_eq!(labels(&p.partitions["train"]), (0..5).collect());
        assert_eq!(labels(&p.partitions["test"]), (5..10).collect());
        assert_eq!(p.partitions["train"].len(), 15);
    }

    #[test]
    fn subsets_are_nested_sized_and_seeded() {
        let opts = SplitOptions {
            subsets: vec![25, 50, 100],
            ..Default::default()
        };
        let p = split(&items(40, 2), &opts).unwrap();
        let (s25, s50) = (
            labels(&p.partitions["train-25"]),
            labels(&p.partitions["train-50"]),
        );
        assert_eq!((s25.len(), s50.len()), (5, 10));
        assert!(s25.is_subset(&s50));
        assert_eq!(p.partitions["train-100"], p.partitions["train"]);
        let again = split(&items(40, 2), &opts).unwrap();
        assert_eq!(again, p);
        let other = split(&items(40, 2), &SplitOptions { seed: 1, ..opts }).unwrap();
        assert_ne!(labels(&other.partitions["train-25"]), s25);
    }

    #[test]
    fn class_id_subsets_are_the_first_classes_whatever_the_seed() {
        for seed in [0, 1, 2] {
            let opts = SplitOptions {
                subsets: vec![50],
                subset_order: SubsetOrder::ClassId,
                seed,
                ..Default::default()
            };
            let p = split(&items(20, 2), &opts).unwrap();
            assert_eq!(labels(&p.partitions["train-50"]), (0..5).collect());
        }
        let random = split(
            &items(20, 2),
            &SplitOptions {
                subsets: vec![50],
                ..Default::default()
            },
        )
        .unwrap();
        assert_ne!(labels(&random.partitions["train-50"]), (0..5).collect());
    }

    #[test]
    fn validation_halves_the_training_classes() {
        let opts = SplitOptions {
            validation: true,
            ..Default::default()
        };
        let p = split(&items(8, 2), &opts).unwrap();
        assert_eq!(labels(&p.partitions["val-train"]), [0, 1].into());
        assert_eq!(labels(&p.partitions["val-test"]), [2, 3].into());
        assert!(!p.partitions.contains_key("val-train-50"));
    }

    #[test]
    fn validation_carries_the_subsets_inside_val_train() {
        let opts = SplitOptions {
            validation: true,
            subsets: vec![25, 50],
            ..Default::default()
        };
        let p = split(&items(80, 2), &opts).unwrap();
        let val_train = labels(&p.partitions["val-train"]);
        let (v25, v50) = (
            labels(&p.partitions["val-train-25"]),
            labels(&p.partitions["val-train-50"]),
        );
        assert_eq!((val_train.len(), v25.len(), v50.len()), (20, 5, 10));
        assert!(v25.is_subset(&v50) && v50.is_subset(&val_train));
        assert!(v50.is_disjoint(&labels(&p.partitions["val-test"])));
        // The test-side subsets are drawn as before, from all training classes.
        let plain = split(
            &items(80, 2),
            &SplitOptions {
                validation: false,
                ..opts
            },
        )
        .unwrap();
        assert_eq!(p.partitions["train-50"], plain.partitions["train-50"]);
    }

    #[test]
    fn query_gallery_and_probes_partition_the_test_set() {
        let opts = SplitOptions {
            gallery_per_class: 2,
            non_mated: 0.5,
            ..Default::default()
        };
        let p = split(&items(8, 5), &opts).unwrap();
        let parts = &p.partitions;
        assert_eq!((parts["gallery"].len(), parts["query"].len()), (8, 12));
        let mated = labels(&parts["probe-mated"]);
        let non = labels(&parts["probe-non-mated"]);
        assert_eq!((mated.len(), non.len()), (2, 2));
        assert!(mated.is_disjoint(&non));
        assert_eq!(labels(&parts["probe-gallery"]), mated);
        assert!(non.is_disjoint(&labels(&parts["probe-gallery"])));
    }

    #[test]
    fn pairs_are_genuine_or_impostor_as_labelled() {
        let opts = SplitOptions {
            pairs_per_class: 3,
            ..Default::default()
        };
        let p = split(&items(6, 4), &opts).unwrap();
        let test = &p.partitions["test"];
        assert_eq!(p.pairs.len(), 3 * 3 * 2);
        for pair in &p.pairs {
            assert_ne!(pair.a, pair.b);
            assert_eq!(test[pair.a].label == test[pair.b].label, pair.genuine);
        }
    }

    #[test]
    fn provided_needs_a_provided_split() {
        let opts = SplitOptions {
            protocol: Protocol::Provided,
            ..Default::default()
        };
        let err = split(&items(4, 2), &opts).unwrap_err().to_string();
        assert!(err.contains("half-classes"), "{err}");
    }

    #[test]
    fn bad_percentages_are_rejected() {
        let opts = SplitOptions {
            subsets: vec![0],
            ..Default::default()
        };
        assert!(split(&items(4, 2), &opts)
            .unwrap_err()
            .to_string()
            .contains("subsets"));
    }
}
