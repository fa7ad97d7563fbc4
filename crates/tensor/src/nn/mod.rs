//! Networks, losses, optimisers and schedules (libtorch through tch).
//!
//! One concept per file:
//! - [`config`]: [`NetConfig`], the serde description of a network (stored as `model.json`).
//! - [`resnet`]: ResNet-18/34/50 backbones with torchvision's variable names, `width` and
//!   `stem`; built from a [`resnet::ResNetPlan`] that the FLOP counter walks too.
//! - [`gem`]: GeM pooling (learnable p) and L2 normalisation.
//! - [`embedding`]: [`EmbeddingNet`] = backbone + pooling + projection + L2N.
//! - [`classifier`]: softmax, normalised-softmax and CosFace heads.
//! - [`triplet`]: the triplet loss with distance-weighted negative sampling.
//! - [`mining_pool`]: triplet negatives mined once per epoch from a pool of training images.
//! - [`distill_loss`]: `L_abs`, `L_rel-ts`, `L_rel-ss` of the resolution-asymmetry paper.
//! - [`optim`]: Adam/AdamW with the one-cycle schedule.
//! - [`flops`]: the cost of one forward pass at a resolution.
//! - [`precision`]: fp32, or bfloat16 autocast on CUDA.
//! - [`train`]: one optimisation step of teacher training and of distillation.
//! - [`timing`]: where a training run's time goes.
//! - [`checkpoint`]: `model.safetensors` + `model.json`, and torchvision ImageNet weights.

pub mod checkpoint;
pub mod classifier;
pub mod config;
pub mod distill_loss;
pub mod embedding;
pub mod flops;
pub mod gem;
pub mod mining_pool;
pub mod optim;
pub mod precision;
pub mod resnet;
pub mod timing;
pub mod train;
pub mod triplet;

pub use checkpoint::{Model, ModelMeta};
pub use classifier::{Classifier, ClassifierConfig, HeadKind};
pub use config::{Arch, NetConfig, Pool, Stem};
pub use distill_loss::DistillLoss;
pub use embedding::EmbeddingNet;
pub use flops::{flops, gflops};
pub use gem::l2n;
pub use optim::{OneCycle, Optim, OptimConfig, OptimKind, ScheduleConfig, Stepped};
pub use precision::Precision;

use std::path::{Path, PathBuf};

use crate::kind::StageError;

/// Something went wrong building, loading or saving a network.
#[derive(Debug, thiserror::Error)]
pub enum NnError {
    /// A checkpoint or weight file does not fit; the message lists what and how to fix it.
    #[error("{0}")]
    Checkpoint(String),
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// libtorch reported an error.
    #[error("libtorch: {0}")]
    Torch(String),
    /// The requested precision cannot run here; the message says why and what to use.
    #[error("{0}")]
    Precision(String),
}

impl NnError {
    fn io(path: &Path, source: std::io::Error) -> Self {
        NnError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

impl From<NnError> for StageError {
    fn from(e: NnError) -> Self {
        match e {
            NnError::Io { path, source } => StageError::Io { path, source },
            other => StageError::Other(other.to_string()),
        }
    }
}
