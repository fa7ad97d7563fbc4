//! The limit on each request to a remote, sized for what it does, so a remote that stops
//! answering costs seconds, not minutes: [`CONNECT`] to connect; [`SMALL`] for a HEAD, a
//! record, a listing page, a delete; a small upload gets [`SMALL`] plus time for its bytes at
//! a slow link's speed ([`upload_limit`]); a download or a part of a large upload is limited
//! by its progress ([`STALL`] without a byte), not by its length, so a large model on a slow
//! link still comes down. The store ([`super::backend`]) and the S3 upload listing
//! ([`super::uploads`]) both keep to them.

use std::time::Duration;

/// The limit on connecting.
pub(crate) const CONNECT: Duration = Duration::from_secs(3);

/// The limit on a small request (a HEAD, a record, a listing page, a delete), retries included.
pub(crate) const SMALL: Duration = Duration::from_secs(10);

/// The limit on a download or upload making no progress.
pub(crate) const STALL: Duration = Duration::from_secs(30);

/// The slowest link an upload's limit allows for, in bytes per second.
const SLOW_LINK: u64 = 256 << 10;

/// The limit on uploading `bytes` in one request.
pub(crate) fn upload_limit(bytes: u64) -> Duration {
    SMALL + Duration::from_secs(bytes / SLOW_LINK)
}
