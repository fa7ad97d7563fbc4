//! A metrics error as the stage's error: every protocol of `evaluate` (and its IJB-C layout)
//! reports a failed metric alike, as a message.

use crate::kind::StageError;
use crate::metrics::MetricsError;

pub(super) fn metrics_error(e: MetricsError) -> StageError {
    StageError::Other(e.to_string())
}
