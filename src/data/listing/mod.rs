//! Real data sets in their published on-disk layouts, one file per layout. Each lister reads
//! the layout's annotation files (or folder structure) and returns a [`Listing`]: every image's
//! id (its path relative to the root, `/`-separated), label, camera where known, and which
//! part of a provided split it belongs to.
//!
//! Listers check that the root and every listed image exist, and stop at the first malformed
//! line with its line number; nothing is skipped silently. Decoding happens later, when a
//! loader reads an image, and an undecodable image is an error naming the file.

mod cars;
mod checks;
mod cub;
mod entry;
pub mod ijbc;
mod image_folder;
mod imagenet;
mod market;
mod mat;
mod places;
mod sop;

pub use cars::cars196;
pub use cub::cub200;
pub use entry::{Listing, Part};
pub use ijbc::ijbc;
pub use image_folder::image_folder;
pub use imagenet::imagenet;
pub use market::market1501;
pub use places::places365;
pub use sop::sop;
