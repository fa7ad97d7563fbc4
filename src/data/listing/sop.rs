//! Stanford Online Products: `Ebay_train.txt` and `Ebay_test.txt`, each with the header
//! `image_id class_id super_class_id path` and one image per line; the provided split (classes
//! 1-11318 train, 11319-22634 test) is used as is.

use std::path::Path;

use super::checks::{int_field, read_lines, require_file, require_images, require_root};
use super::entry::{Entry, Listing, Part};
use crate::data::DataError;

const HINT: &str = "set `root` to the Stanford_Online_Products folder (holding Ebay_train.txt \
                    and Ebay_test.txt)";

/// Lists Stanford Online Products at `root`.
pub fn sop(root: &Path) -> Result<Listing, DataError> {
    require_root("sop", root, HINT)?;
    let mut listing = Listing::default();
    for (file, part) in [
        ("Ebay_train.txt", Part::Train),
        ("Ebay_test.txt", Part::Test),
    ] {
        let path = root.join(file);
        require_file("sop", &path, HINT)?;
        let lines = read_lines(&path)?;
        let mut lines = lines.into_iter();
        match lines.next() {
            Some((_, header))
                if header.split_whitespace().collect::<Vec<_>>()
                    == ["image_id", "class_id", "super_class_id", "path"] => {}
            Some((n, other)) => {
                return Err(DataError::malformed(
                    &path,
                    n,
                    format!(
                    "expected the header `image_id class_id super_class_id path`, found `{other}`"
                ),
                ))
            }
            None => {
                return Err(DataError::BadFile {
                    path,
                    message: "is empty".into(),
                })
            }
        }
        for (n, line) in lines {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [_, class, _, rel] = fields[..] else {
                return Err(DataError::malformed(
                    &path,
                    n,
                    format!(
                        "expected `<image_id> <class_id> <super_class_id> <path>`, found `{line}`"
                    ),
                ));
            };
            int_field(&path, n, "image_id", fields[0])?;
            int_field(&path, n, "super_class_id", fields[2])?;
            let label = int_field(&path, n, "class_id", class)?;
            listing.entries.push(Entry {
                id: rel.to_string(),
                label,
                camera: None,
                part,
            });
        }
        listing.annotations.push(file.to_string());
    }
    require_images(
        "sop",
        root,
        &listing.entries,
        "Ebay_train.txt / Ebay_test.txt",
    )?;
    Ok(listing)
}
