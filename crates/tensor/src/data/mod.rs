//! The engine's data sets ([`asymflow::data`]) as batches of tensors: [`EvalLoader`],
//! [`TrainLoader`], [`DistillLoader`], prefetched on background threads ([`prefetch`]).

pub use asymflow::data::*;

pub mod loaders;
pub mod prefetch;

pub use loaders::{
    Batch, DistillBatch, DistillConfig, DistillLoader, EvalLoader, Sampling, TrainConfig,
    TrainLoader, ViewDraw,
};
