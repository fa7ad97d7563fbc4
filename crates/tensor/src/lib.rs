//! asymflow's tensor side: everything that needs libtorch.
//!
//! The engine (`asymflow`: spec, graph, cache, scheduler, every command) never loads libtorch;
//! it declares every stage kind, keys and schedules instances, and hands the kinds that need
//! tensors to worker processes built from this crate (`asymflow-worker`, see [`worker`]).
//!
//! - [`nn`]: networks (ResNet + GeM + projection, torchvision variable names), losses,
//!   optimisers, schedules, checkpoints, FLOP counting.
//! - [`data`]: the loaders that turn the engine's data sets into batches of tensors.
//! - [`metrics`]: the evaluation protocols over embeddings.
//! - [`stages`]: how the tensor kinds run ([`asymflow::kind::Run`]); their declarations are
//!   the engine's (`asymflow::stages`), so a parameter is declared once.
//! - [`worker`]: the worker's side of the job protocol, and its libtorch set-up.

pub mod data;
pub mod metrics;
pub mod nn;
pub mod stages;
pub mod worker;

// The engine's modules under their old paths, so code moved here reads as it did.
pub(crate) use asymflow::kind;

pub use stages::registry;

/// `?` for libtorch errors in stage code. `StageError` is the engine's and `TchError` is tch's,
/// so neither crate can hold a `From` between them; `.torch()` converts.
pub(crate) trait TorchResult<T> {
    /// The error as a [`asymflow::kind::StageError::Torch`].
    fn torch(self) -> Result<T, asymflow::kind::StageError>;
}

impl<T> TorchResult<T> for Result<T, tch::TchError> {
    fn torch(self) -> Result<T, asymflow::kind::StageError> {
        self.map_err(|e| asymflow::kind::StageError::Torch(e.to_string()))
    }
}
