//! The engine's data sets ([`asymflow::data`]) as batches of tensors: [`EvalLoader`],
//! [`TrainLoader`], [`DistillLoader`], prefetched on background threads ([`prefetch`]) and,
//! on CUDA, copied to the device one batch ahead from pinned memory ([`device`]); the images of
//! mined triplet negatives beside a training epoch ([`negatives`]).

pub use asymflow::data::*;

pub mod device;
pub mod loaders;
pub mod negatives;
pub mod prefetch;

pub use device::{device_feed, DeviceFeed, ToDevice};
pub use loaders::{
    Batch, DistillBatch, DistillConfig, DistillLoader, EvalLoader, Sampling, TrainConfig,
    TrainLoader, ViewDraw,
};
