//! Report tables (Markdown, CSV, LaTeX, HTML) and plots (SVG, PNG), rebuilt from cached results.
//!
//! A paper's table is a view of results that already exist: the `report` stage gathers every
//! instance of its input stages (across all sweep axes) and lays their metrics out as a grid.
//! Nothing here trains or evaluates anything, so re-rendering after a change of layout costs
//! milliseconds, and rendering from the cache alone (`asymflow report FILE`) works with
//! whatever has run: an instance that has not run yet arrives as an artifact with no metrics
//! and no outputs, its cells show a dash or a partial count, and [`missing_instances`] lists it.
//!
//! How the parts fit (one concept per file):
//! - [`Layout`] (`layout.rs`): which dimensions (the upstream stage, a sweep axis, a tag, the
//!   metric) make the rows and the columns, which axes are aggregated over (seeds by default),
//!   labels, filters, orders and number formats, parsed from the stage's parameters.
//! - [`Cell`] (`cell.rs`): the values of one metric in one cell, with mean, sample standard
//!   deviation (n - 1), n of expected and, with `ci`, a Student-t interval ([`student_t`]).
//! - [`bootstrap`]: for a cell of one draw, a percentile bootstrap interval over its
//!   evaluation's queries (`per_query.json`), seeded and reproducible.
//! - [`provenance`]: which stochastic upstream stages a cell's spread covers and which ran
//!   once (a footnote in every format), from the DAG each input carries.
//! - [`paired`]: rows of per-draw differences between two stages, with mean, interval and
//!   how many are positive.
//! - [`NumberFormat`] (`format.rs`): how a cell reads ("41.2 ± 0.3 (2/3)", a dash when empty).
//! - [`Table`] (`table.rs`): builds the grid from gathered [`InputArtifact`]s.
//! - Renderers: [`markdown`], [`csv`] (the table as it reads, plus a long numeric form),
//!   [`latex`] (booktabs), [`html`] (a self-contained page with the tables and inline SVG).
//!   Each marks a cell that lacks values with the numbers of its footnotes ([`Footnotes`]):
//!   superscripts in Markdown and HTML, `\textsuperscript` in LaTeX, `[1]` in the CSV, whose
//!   last column, `notes`, holds each row's footnotes so every line keeps the same fields.
//! - Plots (`plot.rs`, `heatmap.rs`, `loss.rs`, `font.rs`): a metric against another (mAP
//!   against query GFLOPs, one series per row), a heat map of a table (the old x new
//!   compatibility matrix) and training-loss curves, each as SVG and PNG.
//! - [`check::check_reports`] (`check.rs`): the names a user wrote in a layout (dimensions,
//!   metrics, plotted metrics) checked against the inputs before anything runs.
//! - [`missing_instances`] (`missing.rs`): the instances that have not run ([`has_run`]), and the
//!   note that says how to compute them.
//! - [`ReportError`] (`error.rs`): why a report cannot be built; [`value_text`]
//!   (`sweep_value.rs`): a sweep value as every table, plot and label writes it.

pub mod axis;
pub mod bootstrap;
pub mod cell;
pub mod check;
pub mod csv;
pub mod error;
pub mod font;
pub mod footnote;
pub mod format;
pub mod heatmap;
pub mod html;
pub mod latex;
pub mod layout;
pub mod loss;
pub mod markdown;
pub mod missing;
pub mod paired;
pub mod plot;
pub mod provenance;
pub mod search;
pub mod student_t;
pub mod sweep_value;
pub mod table;

pub(crate) use cell::Cell;
pub(crate) use error::ReportError;
pub(crate) use format::NumberFormat;
pub use layout::Layout;
pub(crate) use missing::{missing_instances, MissingInstance};
pub use plot::Figure;
pub(crate) use sweep_value::value_text;
pub use table::Table;
