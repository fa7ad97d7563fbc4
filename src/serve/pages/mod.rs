//! The pages, one file each, and the pieces they share, each in its own file: a sortable,
//! filterable grid ([`grid`]), status badges and progress text ([`status`]), a table of
//! name-value pairs ([`pairs`]) and dates ([`time`]).
//!
//! Pages are plain server-rendered HTML; the script (`assets/serve/app.js`) adds sorting,
//! filtering, picking rows to compare, live updates and charts on top, so every page is
//! readable without it and testable over plain HTTP.

pub mod compare;
pub mod curves;
pub mod grid;
pub mod history;
pub mod instance;
pub mod not_found;
pub mod pairs;
pub mod pipeline;
pub mod pipelines;
pub mod reports;
pub mod search;
pub mod status;
pub mod sweep;
pub mod time;

pub use pairs::pairs;
pub use time::time;
