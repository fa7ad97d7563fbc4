//! The `split` kind: a data set (synthetic or real) divided into named partitions by a
//! protocol, written as one manifest artifact (`split.json`, see [`crate::data::manifest`]).
//!
//! Its cache key holds, besides the parameters: for synthetic data the generator's parameters
//! and version; for real data the content of every image and annotation file (relative paths
//! and blake3 hashes, memoised by the cache index), never the root's absolute path. So editing
//! one image reruns this split and everything downstream of it, and moving the data set (then
//! pointing `root` at the new place) reruns nothing.

use serde_json::Value;

use super::outputs;
use crate::data::listing::Part;
use crate::data::protocol::{self, Protocol, SplitOptions, SubsetOrder};
use crate::data::{
    DatasetKind, DatasetSource, DirectHasher, FilesFingerprint, SplitItem, SplitManifest,
    SyntheticDataset, SyntheticParams, MANIFEST_OUTPUT,
};
use crate::kind::{
    FingerprintEnv, InputDecl, OutputDecl, ParamDecl, ParamType, Params, Range, Run, Stage,
    StageContext, StageError,
};

/// The `split` stage kind.
#[derive(Clone)]
pub struct Split;

const PARAMS: &[ParamDecl] = &[
    ParamDecl::optional(
        "dataset",
        ParamType::Choice(&[
            "synthetic",
            "cub200",
            "cars196",
            "sop",
            "market1501",
            "imagefolder",
            "imagenet",
            "places365",
            "ijbc",
        ]),
        "\"synthetic\"",
        "which data set: the built-in generator or a real one in its published layout; imagefolder is torchvision's: root/CLASS/*.jpg|jpeg|png, one sub-folder per class, classes numbered in sorted folder-name order; ijbc: IJB-C's face crops and protocol files (loose_crop/, meta/), every crop in `test` (protocol = \"provided\"), for evaluate's layout = \"ijbc\"",
    ),
    ParamDecl::optional(
        "root",
        ParamType::Path,
        "\"\"",
        "folder of a real data set (relative to the project, or absolute); not for synthetic",
    ),
    // The ranges are the synthetic generator's (`SyntheticParams::validate`).
    ParamDecl::optional("classes", ParamType::Int, "96", "synthetic: number of classes")
        .at_least(2.0),
    ParamDecl::optional("per_class", ParamType::Int, "40", "synthetic: images per class")
        .at_least(1.0),
    ParamDecl::optional("image_size", ParamType::Int, "64", "synthetic: image side in pixels")
        .within(Range::closed(8.0, 2048.0)),
    ParamDecl::optional(
        "detail_scale",
        ParamType::Float,
        "1.0",
        "synthetic: fine-detail scale (stripe periods 2.3-5.5 px times this; 2 for 32-px identity sets)",
    )
    .within(Range::closed(0.25, 16.0)),
    ParamDecl::optional("seed", ParamType::Int, "0", "synthetic: seed of the images"),
    ParamDecl::optional(
        "protocol",
        ParamType::Choice(&Protocol::NAMES),
        "\"half-classes\"",
        "half-classes: the first train_fraction of the classes in class-id order train, the rest test (imagefolder: sorted folder names, so 10 classes at 0.5 train the first 5; cub200: 1-100 train) or provided (sop, market1501, imagenet, places365, ijbc: the data set's own split)",
    ),
    ParamDecl::optional(
        "subsets",
        ParamType::List(&ParamType::Int),
        "[]",
        "nested random subsets of the training classes, in percent: [25, 50] -> train-25, train-50",
    )
    .within(Range::closed(1.0, 100.0)),
    ParamDecl::optional(
        "subset_order",
        ParamType::Choice(SubsetOrder::NAMES),
        "\"random\"",
        "which classes `subsets` take: a random draw, or the first ones in class-id order (class-id: BCT's ImageNet old model on the first 500 classes)",
    ),
    ParamDecl::optional(
        "validation",
        ParamType::Bool,
        "false",
        "add val-train / val-test: the first and second half of the training classes (and val-train-<p> for each of `subsets`)",
    ),
    ParamDecl::optional(
        "gallery_per_class",
        ParamType::Int,
        "0",
        "draw query / gallery from test: this many gallery images per class, the rest queries",
    )
    .at_least(0.0),
    ParamDecl::optional(
        "non_mated",
        ParamType::Float,
        "0.0",
        "open-set identification: fraction of query classes left out of probe-gallery",
    )
    .within(Range::from_below(0.0, 1.0)),
    ParamDecl::optional(
        "pairs_per_class",
        ParamType::Int,
        "0",
        "verification: genuine (and as many impostor) pairs per test class",
    )
    .at_least(0.0),
    ParamDecl::optional("split_seed", ParamType::Int, "0", "seed of the subsets, galleries and pairs"),
    ParamDecl::optional(
        "train_fraction",
        ParamType::Float,
        "0.5",
        "half-classes: the share of the classes (in class-id order) that train; 0.8 gives 400 / 100 of 500",
    )
    .within(Range::between(0.0, 1.0)),
];

/// The kind's parameters, read once ([`crate::kind::typed`]); the runner and the fingerprint
/// take this. The synthetic generator's values are checked only when the data set is
/// synthetic ([`synthetic_params`]): a real data set ignores them.
#[derive(Debug, Clone)]
pub(crate) struct SplitParams {
    /// `dataset`.
    dataset: DatasetKind,
    /// `root`, `None` when empty.
    root: Option<String>,
    /// `classes`, `per_class`, `image_size`, as written.
    classes: i64,
    per_class: i64,
    image_size: i64,
    /// `detail_scale`.
    detail_scale: f64,
    /// `seed`: the synthetic images'.
    seed: i64,
    /// The protocol's options (`protocol`, `subsets`, ..., `split_seed`).
    options: SplitOptions,
}

impl SplitParams {
    /// Reads every parameter of the kind.
    pub(crate) fn from_params(params: &Params) -> Result<Self, StageError> {
        Ok(SplitParams {
            dataset: DatasetKind::parse(params.str("dataset")?)?,
            root: params.opt_str("root").map(str::to_string),
            classes: params.int("classes")?,
            per_class: params.int("per_class")?,
            image_size: params.int("image_size")?,
            detail_scale: params.float("detail_scale")?,
            seed: params.int("seed")?,
            options: options(params)?,
        })
    }
}

fn usize_param(v: i64, name: &str) -> Result<usize, StageError> {
    usize::try_from(v).map_err(|_| StageError::bad_param(name, format!("{v} is negative")))
}

fn synthetic_params(params: &SplitParams) -> Result<SyntheticParams, StageError> {
    let p = SyntheticParams {
        classes: usize_param(params.classes, "classes")?,
        per_class: usize_param(params.per_class, "per_class")?,
        image_size: u32::try_from(usize_param(params.image_size, "image_size")?)
            .map_err(|_| StageError::bad_param("image_size", "too large"))?,
        detail_scale: params.detail_scale,
        seed: params.seed as u64,
    };
    p.validate()?;
    Ok(p)
}

/// The data set a split reads, resolved: its layout, and for real data the root as written
/// and as resolved against the project.
enum Source {
    Synthetic(SyntheticParams),
    Files {
        kind: DatasetKind,
        written: String,
        root: std::path::PathBuf,
    },
}

fn source(params: &SplitParams, project_dir: &std::path::Path) -> Result<Source, StageError> {
    let kind = params.dataset;
    if kind == DatasetKind::Synthetic {
        return Ok(Source::Synthetic(synthetic_params(params)?));
    }
    let written = params.root.clone().ok_or_else(|| {
        StageError::bad_param(
            "root",
            format!(
                "dataset = \"{}\" needs `root`, the folder holding the data set",
                kind.name()
            ),
        )
    })?;
    Ok(Source::Files {
        kind,
        root: project_dir.join(&written),
        written,
    })
}

/// The protocol's options: read by [`SplitParams::from_params`], and alone by
/// [`Stage::partitions`].
fn options(params: &Params) -> Result<SplitOptions, StageError> {
    Ok(SplitOptions {
        protocol: Protocol::parse(params.str("protocol")?)?,
        subsets: params.ints("subsets")?,
        subset_order: SubsetOrder::parse(params.str("subset_order")?)?,
        validation: params.bool("validation")?,
        gallery_per_class: usize_param(params.int("gallery_per_class")?, "gallery_per_class")?,
        non_mated: params.float("non_mated")?,
        pairs_per_class: usize_param(params.int("pairs_per_class")?, "pairs_per_class")?,
        seed: params.int("split_seed")? as u64,
        train_fraction: params.float("train_fraction")?,
    })
}

impl Stage for Split {
    fn kind(&self) -> &'static str {
        "split"
    }

    fn seeds(&self) -> &'static [&'static str] {
        &["seed", "split_seed"]
    }

    /// Synthetic images are drawn by `seed`; random subsets, galleries, non-mated probes and
    /// pairs by `split_seed`. A real data set split by its class order alone draws nothing.
    fn stochastic(&self, params: &Params) -> bool {
        let drawn = |name: &str| {
            params.get(name).is_some_and(|v| {
                v.as_f64().is_some_and(|x| x > 0.0) || v.as_array().is_some_and(|a| !a.is_empty())
            })
        };
        let random_subsets =
            !params.str("subset_order").is_ok_and(|o| o == "class-id") && drawn("subsets");
        params.str("dataset").map_or(true, |d| d == "synthetic")
            || random_subsets
            || ["gallery_per_class", "non_mated", "pairs_per_class"]
                .iter()
                .any(|name| drawn(name))
    }

    fn impl_version(&self) -> u32 {
        // 2: `validation` with `subsets` also writes val-train-<p> (manifests without both are
        // byte-identical, so what reads them cuts off early).
        2
    }

    fn summary(&self) -> &'static str {
        "divide a data set (synthetic or real) into train/test/query/gallery partitions"
    }

    fn params(&self) -> &'static [ParamDecl] {
        PARAMS
    }

    fn inputs(&self) -> &'static [InputDecl] {
        &[]
    }

    fn outputs(&self) -> &'static [OutputDecl] {
        &[outputs::SPLIT]
    }
    fn records(&self, _params: &Params) -> Option<Vec<String>> {
        crate::kind::declared(&["*_images", "*_classes"])
    }

    fn partitions(&self, params: &Params) -> Option<Vec<String>> {
        let opts = options(params).ok()?;
        Some(protocol::possible_partitions(&opts).into_iter().collect())
    }

    /// `subset_order` enters the key through [`Stage::fingerprint`], and only when it is not
    /// the default: the parameter came after splits were cached, and a split that draws its
    /// subsets at random computes what it did before, so its key must not move.
    fn keyed_param(&self, name: &str) -> bool {
        name != "subset_order"
            && PARAMS
                .iter()
                .find(|p| p.name == name)
                .is_none_or(|d| d.ty != ParamType::Path)
    }

    fn fingerprint(
        &self,
        params: &Params,
        env: &FingerprintEnv<'_>,
    ) -> Result<Option<Value>, StageError> {
        let params = SplitParams::from_params(params)?;
        let mut value = match source(&params, env.project_dir)? {
            Source::Synthetic(p) => p.fingerprint(),
            Source::Files { kind, root, .. } => {
                let listing = kind.list(&root)?;
                FilesFingerprint::compute(kind, &root, &listing, env.hashes)?.to_value()
            }
        };
        let order = params.options.subset_order;
        if order != SubsetOrder::Random {
            value = serde_json::json!({ "data": value, "subset_order": order.name() });
        }
        Ok(Some(value))
    }
}

impl Run for Split {
    fn run(&self, ctx: &mut StageContext<'_>) -> Result<(), StageError> {
        let params = SplitParams::from_params(ctx.params())?;
        let (dataset, items, content) = match source(&params, ctx.project_dir())? {
            Source::Synthetic(p) => {
                let items = SyntheticDataset::new(p)
                    .items()
                    .into_iter()
                    .map(|i| (i, Part::Unsplit))
                    .collect();
                (DatasetSource::Synthetic(p), items, None)
            }
            Source::Files {
                kind,
                written,
                root,
            } => {
                let listing = kind.list(&root)?;
                ctx.check_cancelled()?;
                let fp = FilesFingerprint::compute(kind, &root, &listing, &DirectHasher)?;
                let items: Vec<(SplitItem, Part)> = listing
                    .entries
                    .into_iter()
                    .map(|e| {
                        (
                            SplitItem {
                                id: e.id,
                                label: e.label,
                                camera: e.camera,
                            },
                            e.part,
                        )
                    })
                    .collect();
                (
                    DatasetSource::Files {
                        layout: kind,
                        root: written,
                    },
                    items,
                    Some(fp.content),
                )
            }
        };
        let opts = &params.options;
        let parts = protocol::split(&items, opts)?;
        let mut manifest = SplitManifest::new(dataset, opts.protocol.name(), parts.partitions);
        manifest.content = content;
        if !parts.pairs.is_empty() {
            manifest.pairs_partition = Some("test".into());
            manifest.pairs = parts.pairs;
        }
        manifest.write(&ctx.out_path(MANIFEST_OUTPUT))?;
        for (name, count) in manifest.counts.clone() {
            ctx.metric(&format!("{name}_images"), count.items as f64);
            ctx.metric(&format!("{name}_classes"), count.classes as f64);
        }
        for line in manifest.summary().lines() {
            ctx.log(line);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::typed::assert_reads_match_declaration;
    use serde_json::json;

    #[test]
    fn the_struct_reads_what_the_kind_declares() {
        assert_reads_match_declaration(&Split, json!({}), SplitParams::from_params);
    }
}
