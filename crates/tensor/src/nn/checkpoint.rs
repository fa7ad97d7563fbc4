//! Checkpoints: `model.safetensors` (the weights, torchvision variable names, a trained
//! classifier under `classifier.*`) and `model.json` (the [`NetConfig`] and the classifier's
//! configuration), so a checkpoint is readable from PyTorch or numpy and rebuildable from its
//! JSON alone. No pickle anywhere.
//!
//! Loading is strict: every variable the network needs must be in the file with the same
//! shape; otherwise the error lists every missing and every mismatched tensor (not just the
//! first), which is what a user fixing an export needs. Tensors in the file the network does not
//! have (torchvision's `fc.*`, BatchNorm's `num_batches_tracked`) are ignored.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tch::nn::VarStore;
use tch::{Device, Tensor};

use super::classifier::{Classifier, ClassifierConfig};
use super::config::NetConfig;
use super::embedding::EmbeddingNet;
use super::NnError;

/// File name of the weights output.
pub const WEIGHTS_FILE: &str = "model.safetensors";
/// File name of the configuration output.
pub const META_FILE: &str = "model.json";
/// Version of the `model.json` layout.
pub const META_FORMAT: u32 = 1;

/// The content of `model.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelMeta {
    /// Layout version ([`META_FORMAT`]).
    pub format: u32,
    /// The network.
    pub net: NetConfig,
    /// The trained classification head, if the checkpoint has one.
    pub classifier: Option<ClassifierConfig>,
}

impl ModelMeta {
    /// Metadata of a network without a head.
    pub fn new(net: NetConfig, classifier: Option<ClassifierConfig>) -> Self {
        ModelMeta {
            format: META_FORMAT,
            net,
            classifier,
        }
    }

    /// Reads `model.json`.
    pub fn read(path: &Path) -> Result<Self, NnError> {
        let text = std::fs::read_to_string(path).map_err(|e| NnError::io(path, e))?;
        let meta: ModelMeta = serde_json::from_str(&text).map_err(|e| {
            NnError::Checkpoint(format!(
                "{}: not a model.json of asymflow: {e}",
                path.display()
            ))
        })?;
        if meta.format != META_FORMAT {
            return Err(NnError::Checkpoint(format!(
                "{}: model.json format {} is not the supported {META_FORMAT}",
                path.display(),
                meta.format
            )));
        }
        meta.net
            .validate()
            .map_err(|e| NnError::Checkpoint(format!("{}: {e}", path.display())))?;
        Ok(meta)
    }
}

/// A network (and optional head) with its variable store.
pub struct Model {
    /// Holds every variable.
    pub vs: VarStore,
    /// The embedding network.
    pub net: EmbeddingNet,
    /// The classification head, when the checkpoint has one.
    pub classifier: Option<Classifier>,
    /// What it was built from.
    pub meta: ModelMeta,
}

impl Model {
    /// A freshly initialised model on `device`.
    pub fn new(meta: ModelMeta, device: Device) -> Self {
        let vs = VarStore::new(device);
        let net = EmbeddingNet::new(&vs.root(), &meta.net);
        let classifier = meta
            .classifier
            .as_ref()
            .map(|c| Classifier::new(&(vs.root() / "classifier"), c));
        Model {
            vs,
            net,
            classifier,
            meta,
        }
    }

    /// Loads a checkpoint (`model.safetensors` + `model.json`) onto `device`.
    pub fn load(weights: &Path, meta: &Path, device: Device) -> Result<Self, NnError> {
        let meta = ModelMeta::read(meta)?;
        let model = Model::new(meta, device);
        load_weights(&model.vs, weights, |_| true)?;
        Ok(model)
    }

    /// Loads a checkpoint folder holding both files.
    pub fn load_dir(dir: &Path, device: Device) -> Result<Self, NnError> {
        Model::load(&dir.join(WEIGHTS_FILE), &dir.join(META_FILE), device)
    }

    /// Writes `model.safetensors` and `model.json` into `dir`.
    pub fn save(&self, dir: &Path) -> Result<(), NnError> {
        save_weights(&self.vs, &dir.join(WEIGHTS_FILE))?;
        let json = serde_json::to_string_pretty(&self.meta)
            .map_err(|e| NnError::Checkpoint(format!("serialising model.json: {e}")))?;
        let path = dir.join(META_FILE);
        std::fs::write(&path, json).map_err(|e| NnError::io(&path, e))
    }

    /// Drops the classification head (a student has none).
    pub fn without_classifier(self, device: Device) -> Result<Self, NnError> {
        let meta = ModelMeta::new(self.meta.net.clone(), None);
        let out = Model::new(meta, device);
        copy_vars(&self.vs, &out.vs)?;
        Ok(out)
    }
}

/// Writes every variable of `vs` (on CPU, contiguous, sorted by name) to a safetensors file.
pub fn save_weights(vs: &VarStore, path: &Path) -> Result<(), NnError> {
    let vars: BTreeMap<String, Tensor> = vs
        .variables()
        .into_iter()
        .map(|(k, v)| (k, v.detach().to_device(Device::Cpu).contiguous()))
        .collect();
    let named: Vec<(&str, &Tensor)> = vars.iter().map(|(k, v)| (k.as_str(), v)).collect();
    Tensor::write_safetensors(&named, path).map_err(|e| NnError::Torch(e.to_string()))
}

/// Copies tensors from a safetensors file into `vs`. Every variable for which `required`
/// holds must be present with its shape; the others are loaded when present and of the
/// right shape. Returns the names loaded.
pub fn load_weights(
    vs: &VarStore,
    path: &Path,
    required: impl Fn(&str) -> bool,
) -> Result<Vec<String>, NnError> {
    if !path.exists() {
        return Err(NnError::Checkpoint(format!(
            "{}: no such weight file",
            path.display()
        )));
    }
    let file: BTreeMap<String, Tensor> = Tensor::read_safetensors(path)
        .map_err(|e| {
            NnError::Checkpoint(format!("{}: not a safetensors file: {e}", path.display()))
        })?
        .into_iter()
        .collect();
    let mut missing = Vec::new();
    let mut mismatched = Vec::new();
    let mut loaded = Vec::new();
    let mut vars: Vec<(String, Tensor)> = vs.variables().into_iter().collect();
    vars.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, var) in &vars {
        match file.get(name) {
            None if required(name) => missing.push(name.clone()),
            None => {}
            Some(t) if t.size() != var.size() && required(name) => mismatched.push(format!(
                "{name}: the network has {:?}, the file {:?}",
                var.size(),
                t.size()
            )),
            Some(t) if t.size() != var.size() => {}
            Some(_) => loaded.push(name.clone()),
        }
    }
    if !missing.is_empty() || !mismatched.is_empty() {
        let mut msg = format!("{}: the weights do not fit the network", path.display());
        if !missing.is_empty() {
            msg += &format!("; missing ({}): {}", missing.len(), listing(&missing, ", "));
        }
        if !mismatched.is_empty() {
            msg += &format!(
                "; mismatched ({}): {}",
                mismatched.len(),
                listing(&mismatched, "; ")
            );
        }
        msg += ". Check `arch`, `width` and `stem` against the file (torchvision's ImageNet \
                weights need width 64 and stem \"imagenet\")";
        return Err(NnError::Checkpoint(msg));
    }
    tch::no_grad(|| {
        for (name, var) in &vars {
            if loaded.contains(name) {
                let mut var = var.shallow_clone();
                var.copy_(&file[name].to_kind(var.kind()));
            }
        }
    });
    Ok(loaded)
}

/// At most [`LISTED`] entries joined by `sep`, then how many more there are.
fn listing(items: &[String], sep: &str) -> String {
    let mut text = items
        .iter()
        .take(LISTED)
        .cloned()
        .collect::<Vec<_>>()
        .join(sep);
    if items.len() > LISTED {
        text += &format!("{sep}and {} more", items.len() - LISTED);
    }
    text
}

/// How many missing or mismatched tensors an error names before counting the rest.
pub const LISTED: usize = 30;

/// Loads ImageNet weights exported from torchvision (`torch.save` replaced by
/// `safetensors.torch.save_file(model.state_dict(), path)`) into an embedding network's store:
/// every backbone variable is required; the head (`pool.*`, `proj.*`, `classifier.*`) keeps its
/// fresh initialisation unless the file has it.
pub fn load_pretrained(vs: &VarStore, path: &Path) -> Result<Vec<String>, NnError> {
    load_weights(vs, path, is_backbone)
}

/// Whether a variable belongs to the backbone (not the pooling, projection or classifier).
pub fn is_backbone(name: &str) -> bool {
    !(name.starts_with("pool.") || name.starts_with("proj.") || name.starts_with("classifier."))
}

/// Copies every variable of `from` that `to` has (same name and shape) into `to`.
pub fn copy_vars(from: &VarStore, to: &VarStore) -> Result<(), NnError> {
    let src = from.variables();
    tch::no_grad(|| {
        for (name, var) in to.variables() {
            let Some(t) = src.get(&name) else {
                return Err(NnError::Checkpoint(format!(
                    "variable `{name}` missing in the source"
                )));
            };
            if t.size() != var.size() {
                return Err(NnError::Checkpoint(format!(
                    "variable `{name}`: {:?} vs {:?}",
                    t.size(),
                    var.size()
                )));
            }
            let mut var = var;
            var.copy_(&t.to_device(var.device()));
        }
        Ok(())
    })
}

/// The paths of a checkpoint's two files inside `dir`.
pub fn paths(dir: &Path) -> (PathBuf, PathBuf) {
    (dir.join(WEIGHTS_FILE), dir.join(META_FILE))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::classifier::HeadKind;
    use crate::nn::config::{Arch, Pool, Stem};

    fn meta(width: i64) -> ModelMeta {
        let net = NetConfig {
            arch: Arch::Resnet18,
            width,
            stem: Stem::Small,
            pool: Pool::Gem,
            embed_dim: 8,
            gem_p: 3.0,
            pool_l2n: true,
            embed_relu: false,
        };
        let head = ClassifierConfig {
            kind: HeadKind::NormSoftmax,
            classes: 3,
            dim: 8,
            scale: 16.0,
            margin: 0.0,
        };
        ModelMeta::new(net, Some(head))
    }

    #[test]
    fn save_then_load_gives_the_same_embeddings() {
        let dir = tempfile::tempdir().unwrap();
        let model = Model::new(meta(4), Device::Cpu);
        model.save(dir.path()).unwrap();
        let back = Model::load_dir(dir.path(), Device::Cpu).unwrap();
        assert_eq!(back.meta, model.meta);
        let xs = Tensor::randn([2, 3, 16, 16], tch::kind::FLOAT_CPU);
        let a = model.net.forward_t(&xs, false);
        let b = back.net.forward_t(&xs, false);
        assert!(a.allclose(&b, 1e-6, 1e-6, false));
        let names: Vec<String> = Tensor::read_safetensors(dir.path().join(WEIGHTS_FILE))
            .unwrap()
            .into_iter()
            .map(|x| x.0)
            .collect();
        assert!(names.contains(&"classifier.weight".to_string()));
        assert!(names.contains(&"layer4.1.bn2.running_mean".to_string()));
    }

    #[test]
    fn mismatched_weights_list_every_problem() {
        let dir = tempfile::tempdir().unwrap();
        let model = Model::new(meta(4), Device::Cpu);
        // A file from a wider network, with one tensor removed.
        let other = Model::new(meta(8), Device::Cpu);
        let mut vars: BTreeMap<String, Tensor> = other.vs.variables().into_iter().collect();
        vars.remove("layer1.0.conv1.weight");
        let named: Vec<(&str, &Tensor)> = vars.iter().map(|(k, v)| (k.as_str(), v)).collect();
        let path = dir.path().join("w.safetensors");
        Tensor::write_safetensors(&named, &path).unwrap();
        let err = load_pretrained(&model.vs, &path).unwrap_err().to_string();
        assert!(err.contains("missing (1): layer1.0.conv1.weight"), "{err}");
        assert!(
            err.contains("conv1.weight: the network has [4, 3, 3, 3], the file [8, 3, 3, 3]"),
            "{err}"
        );
        assert!(err.contains("mismatched ("), "{err}");
        // Head tensors of the wrong shape are not required by a pretrained load.
        assert!(!err.contains("proj.weight"), "{err}");
    }

    #[test]
    fn pretrained_load_ignores_torchvision_extras_and_keeps_the_head() {
        let dir = tempfile::tempdir().unwrap();
        let src = Model::new(meta(4), Device::Cpu);
        let mut vars: BTreeMap<String, Tensor> = src
            .vs
            .variables()
            .into_iter()
            .filter(|(k, _)| is_backbone(k))
            .collect();
        vars.insert(
            "fc.weight".into(),
            Tensor::zeros([10, 32], tch::kind::FLOAT_CPU),
        );
        vars.insert("bn1.num_batches_tracked".into(), Tensor::from(3i64));
        let named: Vec<(&str, &Tensor)> = vars.iter().map(|(k, v)| (k.as_str(), v)).collect();
        let path = dir.path().join("tv.safetensors");
        Tensor::write_safetensors(&named, &path).unwrap();
        let dst = Model::new(meta(4), Device::Cpu);
        let proj_before = dst.vs.variables()["proj.weight"].copy();
        let loaded = load_pretrained(&dst.vs, &path).unwrap();
        assert!(loaded.iter().all(|n| is_backbone(n)));
        assert!(dst.vs.variables()["layer2.0.downsample.0.weight"]
            .equal(&src.vs.variables()["layer2.0.downsample.0.weight"]));
        assert!(dst.vs.variables()["proj.weight"].equal(&proj_before));
    }

    #[test]
    fn bad_json_is_a_readable_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(META_FILE);
        std::fs::write(&path, "{\"format\": 1}").unwrap();
        let err = ModelMeta::read(&path).unwrap_err().to_string();
        assert!(err.contains("not a model.json"), "{err}");
    }
}
