//! Parameter groups several kinds share, declared once: the optimiser and its schedule, the
//! network, the augmentation, the batching. Each group is a file with the group's name, a
//! `const fn params(defaults)` giving its declarations with the kind's own defaults (a teacher
//! and a classifier differ in learning rate, not in what the parameter means), and one typed
//! reader (`OptimParams::read`, ...) that every kind's run calls, so a name, its checks and
//! its meaning live in one place.
//!
//! A kind's declaration list is its own parameters followed by its groups,
//! `param_list!(OWN, &optim::params(...), ...)`; `asymflow kinds KIND` prints each group under
//! its name. Names that changed when the groups were unified keep working as [`Alias`]es,
//! rewritten by the resolver with a warning (`augment`, `one_cycle`).
//!
//! One shared parameter lives here too, as a file of its own, because a layer above the
//! stages reads its value: [`precision`] (the memory estimate of `crate::exec::memory` sizes a
//! step by it).
//!
//! [`Alias`]: crate::kind::Alias

pub mod augment;
pub mod batching;
pub mod network;
pub mod optim;
pub mod precision;
