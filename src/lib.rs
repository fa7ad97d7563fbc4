//! asymflow: a declarative experiment pipeline with artifact caching for asymmetric and
//! backward-compatible embedding research.
//!
//! How a run flows through the modules:
//!
//! 1. [`spec`] reads a pipeline TOML file into a validated [`spec::PipelineSpec`]: templates
//!    (`extends`) merged, `${vars.x}` interpolated, `--set`/`--sweep` overrides applied, every
//!    mistake reported with file, line and column before anything runs.
//! 2. [`graph`] expands stages over their sweep axes into stage instances and builds a sealed
//!    petgraph DAG of them.
//! 3. [`cache`] keys each instance ([`cache::StageKey`], blake3 over canonical JSON), looks it
//!    up in the SQLite index, stores outputs in the content-addressed object store, and explains
//!    why an instance is dirty.
//! 4. [`exec`] schedules ready instances (CPU pool and device slots), holds leases so two
//!    processes never compute one key twice, and records results atomically.
//! 5. [`stages`] holds one implementation per stage kind; [`data`], [`nn`] and [`metrics`] are
//!    the ML they are built from; [`report`] renders tables and plots.
//! 6. [`cli`] is the command line (`run`, `plan`, `why`, `show`, `report`, `cache ...`);
//!    [`serve`] is the web dashboard `asymflow serve` runs over the same cache.

pub mod cache;
pub mod cli;
pub mod config;
pub mod data;
pub mod exec;
pub mod graph;
pub mod kind;
pub mod metrics;
pub mod report;
pub mod search;
pub mod select;
pub mod serve;
pub mod spec;
pub mod stages;
