//! Market-1501: `bounding_box_train/` (training identities), `bounding_box_test/` (gallery)
//! and `query/`, identity and camera read from each file name `PPPP_cCsS_FFFFFF_NN.jpg`.
//!
//! Protocol (Zheng et al. 2015, the official evaluation code): identity `-1` marks junk boxes,
//! which are never ranked; they are listed as [`Part::Junk`] so nothing disappears unseen.
//! Identity `0000` marks distractors, which stay in the gallery with label 0 (no query has
//! that identity, so they only ever count as false matches). Same-identity same-camera gallery
//! images are excluded per query by the evaluation, which reads the cameras recorded here.
//! Only `*.jpg` files are images; others (the archive ships `Thumbs.db`) are ignored.

use std::path::Path;

use super::checks::require_root;
use super::entry::{Entry, Listing, Part};
use crate::data::DataError;

const HINT: &str = "set `root` to the Market-1501 folder (holding bounding_box_train, \
                    bounding_box_test and query)";

/// (identity, camera) from a Market-1501 file name.
fn parse_name(name: &str) -> Option<(i64, i64)> {
    let mut parts = name.split('_');
    let id: i64 = parts.next()?.parse().ok()?;
    let cam = parts.next()?.strip_prefix('c')?;
    let digits: String = cam.chars().take_while(char::is_ascii_digit).collect();
    Some((id, digits.parse().ok()?))
}

/// Lists Market-1501 at `root`.
pub fn market1501(root: &Path) -> Result<Listing, DataError> {
    require_root("market1501", root, HINT)?;
    let mut listing = Listing::default();
    for (folder, part) in [
        ("bounding_box_train", Part::Train),
        ("bounding_box_test", Part::Gallery),
        ("query", Part::Query),
    ] {
        let dir = root.join(folder);
        super::checks::require_root("market1501", &dir, HINT)?;
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .map_err(|e| DataError::io(&dir, e))?
            .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect::<Result<_, _>>()
            .map_err(|e| DataError::io(&dir, e))?;
        names.retain(|n| n.to_ascii_lowercase().ends_with(".jpg"));
        names.sort();
        for name in names {
            let (label, camera) = parse_name(&name).ok_or_else(|| DataError::BadFile {
                path: dir.join(&name),
                message:
                    "not a Market-1501 name `<identity>_c<camera>s<sequence>_<frame>_<box>.jpg`"
                        .into(),
            })?;
            let part = match (label, part) {
                (-1, _) => Part::Junk,
                (0, Part::Gallery) => Part::Gallery,
                (0, _) => Part::Junk,
                _ => part,
            };
            listing.entries.push(Entry {
                id: format!("{folder}/{name}"),
                label,
                camera: Some(camera),
                part,
            });
        }
    }
    Ok(listing)
}

#[cfg(test)]
mod tests {
    use super::parse_name;

    #[test]
    fn names_give_identity_and_camera() {
        assert_eq!(parse_name("0002_c1s1_000451_03.jpg"), Some((2, 1)));
        assert_eq!(parse_name("-1_c3s2_000101_01.jpg"), Some((-1, 3)));
        assert_eq!(parse_name("0000_c6s4_002202_04.jpg"), Some((0, 6)));
        assert_eq!(parse_name("holiday.jpg"), None);
    }
}
