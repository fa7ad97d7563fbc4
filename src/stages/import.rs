//! `import`: embeddings made elsewhere, as a stand-in for an `embed` stage.
//!
//! Reads a `.safetensors` file with `embeddings` (`[N, D]`, any float type) and `labels`
//! (`[N]`, any integer type), optionally `cameras`, checks them, L2-normalises the rows (unless
//! told not to) and writes the same `embeddings.safetensors` output `embed` writes, so
//! `evaluate` cannot tell them apart. The file's content hash is part of the key, never its
//! path. `gflops` and `resolution`, when given, become metrics like `embed`'s (so a report can
//! plot the imported model's query cost). `resolution` is written as `embed`'s is (a side, or
//! `[height, width]`; a pair of equal sides keys as the side) and, as there, the metric is the
//! height.

use serde_json::{json, Value};

use super::outputs;
use crate::kind::{
    FingerprintEnv, InputDecl, OutputDecl, ParamDecl, ParamType, Params, Resolution, Stage,
    StageError,
};

/// See the module docs.
pub struct Import;

const PARAMS: &[ParamDecl] = &[
    ParamDecl::required(
        "file",
        ParamType::Path,
        "a .safetensors file with `embeddings` [N, D] and `labels` [N]",
    ),
    ParamDecl::optional(
        "normalize",
        ParamType::Bool,
        "true",
        "L2-normalise the rows",
    ),
    ParamDecl::optional(
        "gflops",
        ParamType::Float,
        "0.0",
        "query cost of the model that made them (0: unknown)",
    ),
    ParamDecl::optional(
        "resolution",
        ParamType::Resolution,
        "0",
        "input size they were made at: s (square) or [height, width] (0: unknown)",
    )
    .at_least(0.0),
];

impl Stage for Import {
    fn kind(&self) -> &'static str {
        "import"
    }
    fn impl_version(&self) -> u32 {
        // 2: an `items` tensor in the source file is carried into the output.
        2
    }
    fn summary(&self) -> &'static str {
        "embeddings from a .safetensors file, standing in for an embed stage"
    }
    fn params(&self) -> &'static [ParamDecl] {
        PARAMS
    }
    fn inputs(&self) -> &'static [InputDecl] {
        &[]
    }
    fn outputs(&self) -> &'static [OutputDecl] {
        &[outputs::EMBEDDINGS]
    }
    fn records(&self, _params: &Params) -> Option<Vec<String>> {
        crate::kind::declared(&["count", "gflops", "resolution"])
    }
    fn fingerprint(
        &self,
        params: &Params,
        env: &FingerprintEnv<'_>,
    ) -> Result<Option<Value>, StageError> {
        let full = env
            .project_dir
            .join(ImportParams::from_params(params)?.file);
        if !full.is_file() {
            return Err(StageError::bad_param(
                "file",
                format!("{} does not exist", full.display()),
            ));
        }
        let hash = env
            .hashes
            .hash_file(&full)
            .map_err(|e| StageError::io(&full, e))?;
        Ok(Some(json!({ "file": hash })))
    }
}

/// The kind's parameters, read once ([`crate::kind::typed`]); the runner takes this, never a
/// name.
#[derive(Debug, Clone)]
pub struct ImportParams {
    /// `file`, relative to the project.
    pub file: String,
    /// `normalize`.
    pub normalize: bool,
    /// `gflops` (0: unknown).
    pub gflops: f64,
    /// `resolution`, `None` for 0 (unknown).
    pub resolution: Option<Resolution>,
}

impl ImportParams {
    /// Reads every parameter of the kind.
    pub fn from_params(params: &Params) -> Result<Self, StageError> {
        let resolution = match params.get("resolution").and_then(Value::as_i64) {
            Some(0) => None,
            _ => Some(params.resolution("resolution")?),
        };
        Ok(ImportParams {
            file: params.str("file")?.to_string(),
            normalize: params.bool("normalize")?,
            gflops: params.float("gflops")?,
            resolution,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::typed::assert_reads_match_declaration;

    #[test]
    fn the_struct_reads_what_the_kind_declares() {
        assert_reads_match_declaration(
            &Import,
            json!({"file": "elsewhere.safetensors"}),
            ImportParams::from_params,
        );
    }
}
