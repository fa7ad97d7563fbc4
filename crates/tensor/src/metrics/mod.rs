//! Evaluation metrics over embeddings: retrieval, verification, open-set identification and
//! re-identification. (The update gain, computed from recorded metrics, is in the engine:
//! `asymflow::metrics`.)
//!
//! Every protocol reads two [`EmbeddingSet`]s, queries and a database (gallery), possibly
//! produced by two different models: that is how backward compatibility is measured, queries
//! embedded by the new model against a gallery embedded by the old one. Similarity is the dot
//! product.
//!
//! Conventions shared by every protocol (docs/METHODS.md, "Metric conventions"):
//! - ties are broken by database index, deterministically ([`ranking`]);
//! - a query without a positive is left out of the averages and reported as a count;
//! - the similarity matrix is never built whole: scores are computed a block of queries at a
//!   time ([`scores`]), so a 60,000 x 60,000 evaluation needs memory for one block only;
//! - pairs that must not count (a query against itself, the same identity seen by the same
//!   camera in re-identification) are removed before ranking ([`Exclusion`]).

mod embeddings;
mod error;
mod exclusion;
mod identification;
pub mod media_templates;
mod operating_point;
pub mod ranking;
mod reid;
mod retrieval;
pub mod scores;
mod templates;
mod verification;

pub use embeddings::{item_id, EmbeddingSet};
pub use error::MetricsError;
pub use exclusion::Exclusion;
pub use identification::{tpir_at_fpir, TpirAtFpir};
pub use operating_point::{operating_point, OperatingPoint};
pub use reid::{reid, ReidResult};
pub use retrieval::{retrieval, QueryScore, RetrievalResult};
pub use templates::Templates;
pub use verification::{tar_at_far, tar_at_far_from_scores, tar_at_far_pairs, TarAtFar};
