//! The pipeline language: TOML -> validated PipelineSpec.
