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
//! - [`precision`]: running a forward pass in a [`Precision`] (bfloat16 autocast on CUDA and
//!   CPU); the enum is the engine's (`asymflow::stages::groups::precision`).
//! - [`train`]: one optimisation step of teacher training and of distillation.
//! - [`timing`]: where a training run's time goes.
//! - [`checkpoint`]: `model.safetensors` + `model.json`, and torchvision ImageNet weights.
//! - [`error`]: [`NnError`], what building, loading or saving a network can fail with.

pub mod checkpoint;
pub mod classifier;
pub mod config;
pub mod distill_loss;
pub mod embedding;
pub mod error;
pub mod flops;
pub mod gem;
pub mod mining_pool;
pub mod optim;
pub mod precision;
pub mod resnet;
pub mod timing;
pub mod train;
pub mod triplet;

pub use asymflow::stages::groups::precision::Precision;
pub use checkpoint::{Model, ModelMeta};
pub use classifier::{Classifier, ClassifierConfig, HeadKind};
pub use config::{Arch, NetConfig, Pool, Stem};
pub use distill_loss::DistillLoss;
pub use embedding::EmbeddingNet;
pub use error::NnError;
pub use flops::{flops, gflops};
pub use gem::l2n;
pub use optim::{OneCycle, Optim, OptimConfig, OptimKind, ScheduleConfig, Stepped};
pub use precision::Autocast;
