//! The two sides of one evaluation, query and database embeddings, read from the `query` and
//! `database` inputs as every protocol of `evaluate` reads them (its IJB-C layout included):
//! truncated to a common size when asked, and whether each query is left out of its own
//! database decided once, here.

use super::metrics_error::metrics_error;
use crate::kind::{StageContext, StageError};
use crate::metrics::scores::{block_rows, DEFAULT_BLOCK_BYTES};
use crate::metrics::{EmbeddingSet, Exclusion, MetricsError};
use asymflow::stages::evaluate::{EvaluateParams, ExcludeSelf, EMBEDDINGS_OUTPUT};

fn read_side(
    ctx: &StageContext<'_>,
    slot: &str,
) -> Result<(EmbeddingSet, Option<f64>, String), StageError> {
    let input = ctx.input(slot)?;
    let path = input.output(EMBEDDINGS_OUTPUT)?;
    let set = EmbeddingSet::read(path).map_err(|e| StageError::Input {
        slot: slot.to_string(),
        message: e.to_string(),
    })?;
    Ok((set, input.metrics.get("gflops").copied(), input.key.clone()))
}

/// The two sides of one evaluation, as every protocol reads them.
pub(super) struct Sides {
    pub(super) query: EmbeddingSet,
    pub(super) db: EmbeddingSet,
    /// Whether each query is left out of its own database (`exclude_self`).
    pub(super) self_match: bool,
    /// Database rows scored per block.
    pub(super) rows: usize,
}

impl Sides {
    /// Both inputs (truncated to a common size when `truncate` says so), whether they are the
    /// same images, and the query model's GFLOPs per image when its embed stage measured them.
    pub(super) fn read(
        ctx: &mut StageContext<'_>,
        params: &EvaluateParams,
    ) -> Result<(Sides, Option<f64>), StageError> {
        let (mut query, gflops, query_key) = read_side(ctx, "query")?;
        let (mut db, _, db_key) = read_side(ctx, "database")?;
        if query.dim != db.dim && params.truncate {
            let dim = query.dim.min(db.dim);
            ctx.log(format!(
                "truncating {}-d and {}-d embeddings to their first {dim} components",
                query.dim, db.dim
            ));
            query = query.truncated(dim);
            db = db.truncated(dim);
        }
        if query.dim != db.dim {
            return Err(metrics_error(MetricsError::DimensionMismatch {
                query: query.dim,
                database: db.dim,
            }));
        }
        let exclude = ExcludeSelf::parse(&params.exclude_self).ok_or_else(|| {
            StageError::bad_param(
                "exclude_self",
                format!("use one of {}", ExcludeSelf::NAMES.join(", ")),
            )
        })?;
        let same_images = query_key == db_key || query.same_items(&db);
        if !same_images && query.looks_like(&db) && exclude == ExcludeSelf::Auto {
            ctx.log(
                "query and database have equal labels and cameras but no item ids to show they are \
                 the same images: no query is excluded from the database; set \
                 exclude_self = \"always\" if they are the same images",
            );
        }
        let self_match = match exclude {
            ExcludeSelf::Always => {
                if query.len() != db.len() {
                    return Err(StageError::bad_param(
                        "exclude_self",
                        format!(
                            "\"always\" needs query and database of one size (the same images); got {} and {}",
                            query.len(),
                            db.len()
                        ),
                    ));
                }
                true
            }
            ExcludeSelf::Never => false,
            ExcludeSelf::Auto => same_images,
        };
        let rows = block_rows(db.len(), DEFAULT_BLOCK_BYTES);
        let sides = Sides {
            query,
            db,
            self_match,
            rows,
        };
        Ok((sides, gflops))
    }

    /// The exclusion rule of the protocols that score every pair (no camera rule).
    pub(super) fn exclusion(&self) -> Exclusion {
        Exclusion {
            self_match: self.self_match,
            same_camera: false,
        }
    }
}
