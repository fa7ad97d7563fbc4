//! The integration tests: one binary, one file per theme.

mod support;

mod bct;
mod cli_data;
mod concurrency;
mod crash_safety;
mod data_fixtures;
mod data_loaders;
mod data_split;
mod freshness;
mod raml;
mod report;
mod report_freshness;
mod report_templates;
mod science;
mod spec_errors;
mod sweeps;
mod workers;
