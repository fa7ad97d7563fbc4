//! IJB-C's face protocol as published: the meta files of the IJB-C release as insightface's
//! IJB evaluation reads them (`IJB_release/IJBC/`), and NIST's 1:N protocol files.
//!
//! The root is the IJB-C folder holding
//! - `loose_crop/`: one face crop per line of the template file (`1.jpg`, `2.jpg`, ...);
//! - `meta/ijbc_face_tid_mid.txt`: `image template_id media_id` per face crop (a template is
//!   a set of faces of one subject; a media is the image or video the face comes from);
//! - `meta/ijbc_template_pair_label.txt`: `template_1 template_2 label` per 1:1 verification
//!   pair (label 1 genuine, 0 impostor);
//! - `meta/ijbc_1N_gallery_G1.csv`, `meta/ijbc_1N_gallery_G2.csv`,
//!   `meta/ijbc_1N_probe_mixed.csv`: NIST's 1:N protocol, a header line then
//!   `TEMPLATE_ID,SUBJECT_ID,FILENAME,...` per image (several lines per template). G1 and G2
//!   are two galleries of disjoint subjects; every probe's subject is in one of them, so
//!   against each gallery some probes are mated and the rest non-mated (open set).
//!
//! The split sees each face crop as one item of the provided `test` part, labelled with its
//! template's subject (from the 1:N files, which in the release cover every template of the
//! template file). Which faces form which template, the pairs and the galleries are read
//! again by `evaluate` (`layout = "ijbc"`) through [`IjbcProtocol::read`]; the split's key
//! holds every one of these files' content, so editing one reruns what depends on it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::checks::{int_field, read_lines, require_file, require_images, require_root};
use super::entry::{Entry, Listing, Part};
use crate::data::DataError;

const HINT: &str = "set `root` to the IJB-C folder holding `loose_crop/` and `meta/` with \
                    ijbc_face_tid_mid.txt and ijbc_template_pair_label.txt (insightface's \
                    IJB_release/IJBC) plus NIST's 1:N protocol files ijbc_1N_gallery_G1.csv, \
                    ijbc_1N_gallery_G2.csv and ijbc_1N_probe_mixed.csv (the IJB-C release's \
                    `protocols/` folder) copied into `meta/`";

/// The face crops' folder.
pub(crate) const IMAGES: &str = "loose_crop";
/// Face crop -> template and media.
pub(crate) const FACES: &str = "meta/ijbc_face_tid_mid.txt";
/// The 1:1 template pairs.
pub(crate) const PAIRS: &str = "meta/ijbc_template_pair_label.txt";
/// The first 1:N gallery.
pub(crate) const GALLERY_G1: &str = "meta/ijbc_1N_gallery_G1.csv";
/// The second 1:N gallery.
pub(crate) const GALLERY_G2: &str = "meta/ijbc_1N_gallery_G2.csv";
/// The 1:N probes (still images and video frames mixed).
pub(crate) const PROBES: &str = "meta/ijbc_1N_probe_mixed.csv";

/// One face crop of the template file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IjbcFace {
    /// The crop's item id (`loose_crop/<image>`).
    pub id: String,
    /// Its template.
    pub template: i64,
    /// Its media (image or video).
    pub media: i64,
}

/// One 1:N template: its id and subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IjbcTemplate {
    /// `TEMPLATE_ID`.
    pub template: i64,
    /// `SUBJECT_ID`.
    pub subject: i64,
}

/// The whole protocol, as read from the files. See the module docs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IjbcProtocol {
    /// Every face crop, in the template file's order.
    pub faces: Vec<IjbcFace>,
    /// 1:1 pairs `(template 1, template 2, genuine)`, in file order.
    pub pairs: Vec<(i64, i64, bool)>,
    /// The galleries G1 and G2: each template once, in file order.
    pub galleries: [Vec<IjbcTemplate>; 2],
    /// The probes: each template once, in file order.
    pub probes: Vec<IjbcTemplate>,
    /// Template -> subject, over the three 1:N files.
    pub subjects: BTreeMap<i64, i64>,
}

/// The annotation files, relative to the root.
pub(crate) const FILES: [&str; 5] = [FACES, PAIRS, GALLERY_G1, GALLERY_G2, PROBES];

impl IjbcProtocol {
    /// Reads and cross-checks the protocol files under `root`: every template of the pairs
    /// and of the 1:N files has faces, every face's template has a subject, and no template
    /// has two subjects.
    pub fn read(root: &Path) -> Result<IjbcProtocol, DataError> {
        require_root("ijbc", root, HINT)?;
        for file in FILES {
            require_file("ijbc", &root.join(file), HINT)?;
        }
        let faces = read_faces(&root.join(FACES))?;
        let pairs = read_pairs(&root.join(PAIRS))?;
        let mut subjects = BTreeMap::new();
        let g1 = read_templates(&root.join(GALLERY_G1), &mut subjects)?;
        let g2 = read_templates(&root.join(GALLERY_G2), &mut subjects)?;
        let probes = read_templates(&root.join(PROBES), &mut subjects)?;
        let protocol = IjbcProtocol {
            faces,
            pairs,
            galleries: [g1, g2],
            probes,
            subjects,
        };
        protocol.check(root)?;
        Ok(protocol)
    }

    /// The cross-checks of [`IjbcProtocol::read`].
    fn check(&self, root: &Path) -> Result<(), DataError> {
        let with_faces: BTreeSet<i64> = self.faces.iter().map(|f| f.template).collect();
        let missing = |file: &str, t: i64| DataError::BadFile {
            path: root.join(file),
            message: format!(
                "template {t} has no face in {FACES}; the files are not of one release"
            ),
        };
        if let Some(&(a, b, _)) = self
            .pairs
            .iter()
            .find(|(a, b, _)| !with_faces.contains(a) || !with_faces.contains(b))
        {
            let t = if with_faces.contains(&a) { b } else { a };
            return Err(missing(PAIRS, t));
        }
        for (file, list) in [
            (GALLERY_G1, &self.galleries[0]),
            (GALLERY_G2, &self.galleries[1]),
            (PROBES, &self.probes),
        ] {
            if let Some(t) = list.iter().find(|t| !with_faces.contains(&t.template)) {
                return Err(missing(file, t.template));
            }
        }
        if let Some(t) = with_faces.iter().find(|t| !self.subjects.contains_key(t)) {
            return Err(DataError::BadFile {
                path: root.join(FACES),
                message: format!(
                    "template {t} is in none of the 1:N files ({GALLERY_G1}, {GALLERY_G2}, \
                     {PROBES}), so its subject is unknown; use the 1:N files of the same release"
                ),
            });
        }
        Ok(())
    }

    /// The subject of template `t` (every face's template has one after [`IjbcProtocol::read`]).
    pub fn subject(&self, t: i64) -> i64 {
        self.subjects[&t]
    }
}

/// `image template media` per line.
fn read_faces(path: &Path) -> Result<Vec<IjbcFace>, DataError> {
    let mut faces = Vec::new();
    let mut seen = BTreeSet::new();
    for (n, line) in read_lines(path)? {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [image, template, media] = fields[..] else {
            return Err(DataError::malformed(
                path,
                n,
                format!("expected `image template_id media_id`, found `{line}`"),
            ));
        };
        if !seen.insert(image.to_string()) {
            return Err(DataError::malformed(
                path,
                n,
                format!("`{image}` is listed twice"),
            ));
        }
        faces.push(IjbcFace {
            id: format!("{IMAGES}/{image}"),
            template: int_field(path, n, "template id", template)?,
            media: int_field(path, n, "media id", media)?,
        });
    }
    Ok(faces)
}

/// `template_1 template_2 label` per line, label 0 or 1.
fn read_pairs(path: &Path) -> Result<Vec<(i64, i64, bool)>, DataError> {
    let mut pairs = Vec::new();
    for (n, line) in read_lines(path)? {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [a, b, label] = fields[..] else {
            return Err(DataError::malformed(
                path,
                n,
                format!("expected `template_1 template_2 label`, found `{line}`"),
            ));
        };
        let genuine = match label {
            "1" => true,
            "0" => false,
            other => {
                return Err(DataError::malformed(
                    path,
                    n,
                    format!("label `{other}`: expected 1 (genuine) or 0 (impostor)"),
                ))
            }
        };
        pairs.push((
            int_field(path, n, "template id", a)?,
            int_field(path, n, "template id", b)?,
            genuine,
        ));
    }
    Ok(pairs)
}

/// A 1:N CSV: header `TEMPLATE_ID,SUBJECT_ID,...`, then one line per image; each template
/// once, in order of first appearance. Records each template's subject in `subjects`.
fn read_templates(
    path: &Path,
    subjects: &mut BTreeMap<i64, i64>,
) -> Result<Vec<IjbcTemplate>, DataError> {
    let lines = read_lines(path)?;
    let Some(((_, header), rows)) = lines.split_first() else {
        return Err(DataError::malformed(
            path,
            1,
            "the file is empty; expected a header line",
        ));
    };
    let columns: Vec<&str> = header.split(',').map(str::trim).collect();
    if columns.len() < 2 || columns[0] != "TEMPLATE_ID" || columns[1] != "SUBJECT_ID" {
        return Err(DataError::malformed(
            path,
            1,
            format!("expected the header `TEMPLATE_ID,SUBJECT_ID,FILENAME,...`, found `{header}`"),
        ));
    }
    let mut out = Vec::new();
    let mut listed = BTreeSet::new();
    for (n, line) in rows {
        let mut fields = line.split(',').map(str::trim);
        let (Some(t), Some(s)) = (fields.next(), fields.next()) else {
            return Err(DataError::malformed(
                path,
                *n,
                format!("expected `TEMPLATE_ID,SUBJECT_ID,...`, found `{line}`"),
            ));
        };
        let template = int_field(path, *n, "TEMPLATE_ID", t)?;
        let subject = int_field(path, *n, "SUBJECT_ID", s)?;
        if let Some(before) = subjects
            .insert(template, subject)
            .filter(|&before| before != subject)
        {
            return Err(DataError::malformed(
                path,
                *n,
                format!("template {template} has subject {subject} here and {before} before"),
            ));
        }
        if listed.insert(template) {
            out.push(IjbcTemplate { template, subject });
        }
    }
    Ok(out)
}

/// Lists IJB-C at `root`: every face crop of the template file as [`Part::Test`], labelled
/// with its template's subject.
pub fn ijbc(root: &Path) -> Result<Listing, DataError> {
    let protocol = IjbcProtocol::read(root)?;
    let entries: Vec<Entry> = protocol
        .faces
        .iter()
        .map(|f| Entry {
            id: f.id.clone(),
            label: protocol.subject(f.template),
            camera: None,
            part: Part::Test,
        })
        .collect();
    require_images("ijbc", root, &entries, FACES)?;
    Ok(Listing {
        entries,
        annotations: FILES.iter().map(|f| f.to_string()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, files: &[(&str, &str)]) {
        for (name, text) in files {
            let path = root.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
    }

    const GALLERY_HEADER: &str =
        "TEMPLATE_ID,SUBJECT_ID,FILENAME,SIGHTING_ID,FACE_X,FACE_Y,FACE_WIDTH,FACE_HEIGHT\n";

    fn fixture(root: &Path) {
        write(
            root,
            &[
                (FACES, "1.jpg 1 10\n2.jpg 1 11\n3.jpg 2 20\n4.jpg 3 30\n"),
                (PAIRS, "1 2 0\n1 3 1\n"),
                (
                    GALLERY_G1,
                    format!(
                        "{GALLERY_HEADER}1,100,img/1.jpg,1,0,0,9,9\n1,100,img/2.jpg,1,0,0,9,9\n"
                    )
                    .as_str(),
                ),
                (
                    GALLERY_G2,
                    format!("{GALLERY_HEADER}2,200,img/3.jpg,1,0,0,9,9\n").as_str(),
                ),
                (
                    PROBES,
                    format!("{GALLERY_HEADER}3,100,frames/4.png,1,0,0,9,9\n").as_str(),
                ),
            ],
        );
        for i in 1..=4 {
            write(root, &[(format!("{IMAGES}/{i}.jpg").as_str(), "x")]);
        }
    }

    #[test]
    fn reads_the_published_files() {
        let dir = tempfile::tempdir().unwrap();
        fixture(dir.path());
        let p = IjbcProtocol::read(dir.path()).unwrap();
        assert_eq!(p.faces.len(), 4);
        assert_eq!(
            p.faces[1],
            IjbcFace {
                id: "loose_crop/2.jpg".into(),
                template: 1,
                media: 11
            }
        );
        assert_eq!(p.pairs, vec![(1, 2, false), (1, 3, true)]);
        assert_eq!(
            p.galleries[0],
            vec![IjbcTemplate {
                template: 1,
                subject: 100
            }]
        );
        assert_eq!(
            p.probes,
            vec![IjbcTemplate {
                template: 3,
                subject: 100
            }]
        );
        let listing = ijbc(dir.path()).unwrap();
        let labels: Vec<i64> = listing.entries.iter().map(|e| e.label).collect();
        assert_eq!(labels, vec![100, 100, 200, 100]);
        assert_eq!(listing.annotations.len(), 5);
    }

    #[test]
    fn inconsistent_files_are_errors_that_name_the_file() {
        for (file, text, says) in [
            (PAIRS, "1 9 1\n", "template 9"),
            (PAIRS, "1 2 yes\n", "label"),
            (FACES, "1.jpg 1\n", "template_id media_id"),
            (GALLERY_G1, "TEMPLATE,SUBJECT\n1,100\n", "header"),
            (
                GALLERY_G2,
                format!("{GALLERY_HEADER}2,201,a\n1,101,b\n").as_str(),
                "subject 101",
            ),
            (
                PROBES,
                format!("{GALLERY_HEADER}4,100,x\n").as_str(),
                "template 4",
            ),
        ] {
            let dir = tempfile::tempdir().unwrap();
            fixture(dir.path());
            write(dir.path(), &[(file, text)]);
            let err = IjbcProtocol::read(dir.path()).unwrap_err().to_string();
            assert!(err.contains(says), "{file}: {err}");
        }
    }
}
