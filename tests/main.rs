//! The integration tests: one binary, one file per theme.

mod support;

mod artifact_contract;
mod bct;
mod cli;
mod cli_data;
mod cli_examples;
mod concurrency;
mod crash_safety;
mod data_fixtures;
mod data_loaders;
mod data_split;
mod freshness;
mod gem_p;
mod gpu_check;
mod output_contract;
mod raml;
mod reliability;
mod remote;
mod report;
mod report_footnotes;
mod report_freshness;
mod report_templates;
mod resolution;
mod science;
mod serve;
mod serve_browser;
mod slurm;
mod slurm_cluster;
mod slurm_engine;
mod spec_errors;
mod spec_vars;
mod sweeps;
mod trust;
mod trust_kinds_lock;
mod workers;
