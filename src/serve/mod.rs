//! `asymflow serve`: a local, read-only web dashboard over a project's pipelines and cache.
//!
//! Why a server and not more static pages: a sweep of fifty instances wants sorting,
//! filtering, side-by-side comparison and a view that follows a running pipeline, and those
//! need the cache as it is now, not as it was when a report was rendered. Every page is built
//! per request from the pipeline files and the cache through their public APIs
//! ([`crate::spec`], [`crate::graph`], [`crate::exec::plan_status`],
//! [`crate::exec::freshness`], [`crate::cache`], [`crate::report`]); nothing is precomputed, and
//! a pipeline's state is computed again whenever anything it rests on may have changed.
//!
//! How the parts fit (one concept per file):
//! - [`error`]: [`ServeError`], why the dashboard could not serve or a page could not be built.
//! - [`site`]: the project being served: its pipeline files, the cache, the stage registry.
//! - [`state`]: every instance of a pipeline with its status (cached, to run, running, failed),
//!   its record, and the live progress of a running stage ([`live`]).
//! - [`live`]: what another process's running stages show from outside: leases in the index,
//!   the progress file and the log in their scratch folders.
//! - [`compute`]: a pipeline's state for a request, kept or computed now; the first view of a
//!   long table is drawn from its page's instances alone while the whole state is computed.
//! - [`memo`]: pipeline states kept between requests while everything they were computed
//!   from is checked to be unchanged.
//! - [`html`]: escaping and the page shell; every string from a pipeline file or the cache
//!   goes through [`html::esc`].
//! - [`pages`]: one file per page; [`dag`] draws the stage graph as SVG; [`charts`] draws a
//!   metric against a parameter, parallel coordinates and a search's objective as SVG;
//!   [`reason`] renders dirty reasons.
//! - [`query`]: what a pipeline page's URL asks of its table (metric columns, sort, filters,
//!   page), applied on the server so a page of 100,000 instances sends one page of rows.
//! - [`objects`]: reading objects for display and download, verified, never written.
//! - [`host`]: the `Host` check that keeps other web pages out (DNS rebinding).
//! - [`routes`]: the axum router and the only place tokio is used; [`assets`] holds the
//!   stylesheet and script, embedded in the binary (no CDN, no build step).
//!
//! Nothing here writes results, objects or leases, and a project without a cache is served
//! without creating one. Objects are hashed while they are read, and a mismatch is reported,
//! not quarantined. (Statuses come from `plan_status`, which, as for `asymflow plan`, may
//! remember data-set file hashes in the index.)

pub mod assets;
pub mod charts;
mod compute;
pub mod dag;
pub mod error;
pub mod host;
pub mod html;
pub mod live;
mod memo;
pub mod objects;
pub mod pages;
pub mod query;
pub mod reason;
pub mod routes;
pub mod site;
pub mod state;

pub use routes::serve;
pub(crate) use site::Site;
