//! Tiny data sets written by the tests themselves in each published layout.

use std::io::Write;
use std::path::Path;

use image::{Rgb, RgbImage};

/// A small image whose colour encodes `seed`, so different files have different content.
pub fn picture(w: u32, h: u32, seed: u32) -> RgbImage {
    RgbImage::from_fn(w, h, |x, y| {
        Rgb([
            ((x * 7 + seed * 40) % 256) as u8,
            ((y * 5 + seed * 90) % 256) as u8,
            ((x + y + seed * 13) % 256) as u8,
        ])
    })
}

/// Writes `img` to `path` (format from the extension), creating folders.
pub fn write_image(path: &Path, img: &RgbImage) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    img.save(path).unwrap();
}

/// Writes text to `path`, creating folders.
pub fn write_text(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// CUB-200-2011 with `classes` classes of 2 images each (JPEG, 24 x 20).
pub fn cub(root: &Path, classes: u32) {
    cub_per_class(root, classes, 2);
}

/// An ImageFolder tree: `classes` folders of `per_class` PNGs (16 x 16), plus a README that
/// is not an image.
pub fn image_folder(root: &Path, classes: u32, per_class: u32) {
    for c in 0..classes {
        for k in 0..per_class {
            let path = root.join(format!("class_{c}")).join(format!("{k}.png"));
            write_image(&path, &picture(16, 16, c * 10 + k));
        }
    }
    write_text(&root.join("README.txt"), "not a class");
}

/// Stanford Online Products: 2 train classes and 2 test classes of 2 images.
pub fn sop(root: &Path) {
    sop_layout(root, 2, 2, 3);
}

/// Market-1501: identities 2 and 7 in train, 3 and 4 in the gallery and queries, one junk
/// (-1) and one distractor (0000) gallery box, and a Thumbs.db.
pub fn market(root: &Path) {
    let files = [
        ("bounding_box_train", "0002_c1s1_000451_03.jpg"),
        ("bounding_box_train", "0002_c2s1_000551_01.jpg"),
        ("bounding_box_train", "0007_c3s1_000101_01.jpg"),
        ("bounding_box_test", "0003_c1s1_001051_02.jpg"),
        ("bounding_box_test", "0004_c5s2_002051_01.jpg"),
        ("bounding_box_test", "-1_c1s1_000401_03.jpg"),
        ("bounding_box_test", "0000_c6s4_002202_04.jpg"),
        ("query", "0003_c2s1_001101_00.jpg"),
        ("query", "0004_c1s2_002101_00.jpg"),
    ];
    for (i, (folder, name)) in files.iter().enumerate() {
        write_image(&root.join(folder).join(name), &picture(12, 24, i as u32));
    }
    write_text(&root.join("bounding_box_test/Thumbs.db"), "junk");
}

// --- A minimal Level 5 MAT writer, for Cars196's cars_annos.mat. ---

fn element(ty: u32, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&ty.to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out.extend_from_slice(data);
    while out.len() % 8 != 0 {
        out.push(0);
    }
    out
}

fn matrix(class: u8, dims: &[i32], name: &str, body: &[u8]) -> Vec<u8> {
    let mut p = element(6, &[class, 0, 0, 0, 0, 0, 0, 0]);
    let dims: Vec<u8> = dims.iter().flat_map(|d| d.to_le_bytes()).collect();
    p.extend(element(5, &dims));
    p.extend(element(1, name.as_bytes()));
    p.extend_from_slice(body);
    element(14, &p)
}

fn text(s: &str) -> Vec<u8> {
    let data: Vec<u8> = s.encode_utf16().flat_map(|c| c.to_le_bytes()).collect();
    matrix(4, &[1, s.len() as i32], "", &element(4, &data))
}

fn uint8(v: u8) -> Vec<u8> {
    // A uint8 array (class 9) whose value is stored as miUINT8, as MATLAB writes small ints.
    matrix(9, &[1, 1], "", &element(2, &[v]))
}

fn double(v: f64) -> Vec<u8> {
    matrix(6, &[1, 1], "", &element(9, &v.to_le_bytes()))
}

/// A devkit annotation file: `annotations(i).bbox_x1 / .class / .fname`, as
/// `devkit/cars_train_annos.mat` and `cars_test_annos_withlabels.mat` hold them.
pub fn cars_devkit_annos(rows: &[(&str, u8)]) -> Vec<u8> {
    let fields = ["bbox_x1", "class", "fname"];
    let len = 32usize;
    let mut names = Vec::new();
    for f in fields {
        let mut b = f.as_bytes().to_vec();
        b.resize(len, 0);
        names.extend(b);
    }
    let mut body = element(5, &(len as i32).to_le_bytes());
    body.extend(element(1, &names));
    for (name, class) in rows {
        body.extend(double(3.0));
        body.extend(uint8(*class));
        body.extend(text(name));
    }
    let var = matrix(2, &[1, rows.len() as i32], "annotations", &body);
    let mut file = vec![b' '; 116];
    file[..20].copy_from_slice(b"MATLAB 5.0 MAT-file,");
    file.extend_from_slice(&[0u8; 8]);
    file.extend_from_slice(&0x0100u16.to_le_bytes());
    file.extend_from_slice(b"IM");
    file.extend(var);
    file
}

/// Cars196 in the devkit layout: `classes` classes, one training and one test image each,
/// the test annotations at the root (where the labelled file is usually dropped).
pub fn cars_devkit(root: &Path, classes: u8) {
    cars_devkit_per_class(root, classes, 1);
}

/// `cars_annos.mat` holding `annotations(i).relative_im_path / .class / .test`, optionally
/// zlib-compressed as MATLAB writes it by default.
pub fn cars_annos(rows: &[(&str, u8)], compressed: bool) -> Vec<u8> {
    let fields = ["relative_im_path", "bbox_x1", "class", "test"];
    let len = 32usize;
    let mut names = Vec::new();
    for f in fields {
        let mut b = f.as_bytes().to_vec();
        b.resize(len, 0);
        names.extend(b);
    }
    let mut body = element(5, &(len as i32).to_le_bytes());
    body.extend(element(1, &names));
    for (path, class) in rows {
        body.extend(text(path));
        body.extend(double(10.0));
        body.extend(uint8(*class));
        body.extend(uint8(0));
    }
    let var = matrix(2, &[1, rows.len() as i32], "annotations", &body);
    let mut file = vec![b' '; 116];
    file[..20].copy_from_slice(b"MATLAB 5.0 MAT-file,");
    file.extend_from_slice(&[0u8; 8]);
    file.extend_from_slice(&0x0100u16.to_le_bytes());
    file.extend_from_slice(b"IM");
    if compressed {
        let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(&var).unwrap();
        let z = enc.finish().unwrap();
        file.extend_from_slice(&15u32.to_le_bytes());
        file.extend_from_slice(&(z.len() as u32).to_le_bytes());
        file.extend(z);
    } else {
        file.extend(var);
    }
    file
}

/// Cars196 with `classes` classes of 2 images each.
pub fn cars(root: &Path, classes: u8, compressed: bool) {
    cars_per_class(root, classes, 2, compressed);
}

/// Market-1501 with `train` training identities (3 boxes each, cameras 1-3) and `test`
/// evaluation identities (gallery boxes from cameras 1 and 3, a query from camera 2), plus one
/// junk (-1) and one distractor (0000) gallery box: enough identities for a classifier on a
/// 50% subset.
pub fn market_people(root: &Path, train: u32, test: u32) {
    let mut seed = 0;
    let mut put = |folder: &str, name: String| {
        write_image(&root.join(folder).join(name), &picture(12, 24, seed));
        seed += 1;
    };
    for id in 1..=train {
        for cam in 1..=3 {
            put(
                "bounding_box_train",
                format!("{id:04}_c{cam}s1_{id:04}01_01.jpg"),
            );
        }
    }
    for id in train + 1..=train + test {
        for cam in [1, 3] {
            put(
                "bounding_box_test",
                format!("{id:04}_c{cam}s1_{id:04}01_01.jpg"),
            );
        }
        put("query", format!("{id:04}_c2s1_{id:04}01_00.jpg"));
    }
    put("bounding_box_test", "-1_c1s1_000401_03.jpg".to_string());
    put("bounding_box_test", "0000_c6s4_002202_04.jpg".to_string());
}

/// CUB-200-2011 with `classes` classes of `per_class` images each (JPEG, 24 x 20): with 4 or
/// more, the paper setting's `small_classes = "drop"` keeps every class.
pub fn cub_per_class(root: &Path, classes: u32, per_class: u32) {
    let (mut images, mut labels) = (String::new(), String::new());
    let mut id = 1;
    for c in 1..=classes {
        for k in 0..per_class {
            let rel = format!("{c:03}.Bird_{c}/Bird_{c}_{k}.jpg");
            write_image(&root.join("images").join(&rel), &picture(24, 20, id));
            images.push_str(&format!("{id} {rel}\n"));
            labels.push_str(&format!("{id} {c}\n"));
            id += 1;
        }
    }
    write_text(&root.join("images.txt"), &images);
    write_text(&root.join("image_class_labels.txt"), &labels);
}

/// Cars196 in the `cars_annos.mat` layout with `classes` classes of `per_class` images each.
pub fn cars_per_class(root: &Path, classes: u8, per_class: u32, compressed: bool) {
    let mut paths = Vec::new();
    for c in 1..=classes {
        for k in 0..per_class {
            let n = u32::from(c) * per_class + k;
            let rel = format!("car_ims/{n:06}.jpg");
            write_image(&root.join(&rel), &picture(30, 18, n));
            paths.push((rel, c));
        }
    }
    let rows: Vec<(&str, u8)> = paths.iter().map(|(p, c)| (p.as_str(), *c)).collect();
    std::fs::write(root.join("cars_annos.mat"), cars_annos(&rows, compressed)).unwrap();
}

/// Cars196 in the devkit layout with `classes` classes of `per_class` training and
/// `per_class` test images each, the labelled test annotations at the root.
pub fn cars_devkit_per_class(root: &Path, classes: u8, per_class: u32) {
    let (mut train, mut test) = (Vec::new(), Vec::new());
    let mut seed = 0;
    for c in 1..=classes {
        for (folder, rows) in [("cars_train", &mut train), ("cars_test", &mut test)] {
            for k in 0..per_class {
                // Numbered within each folder, as the devkit's files are.
                let name = format!("{:05}.jpg", (u32::from(c) - 1) * per_class + k + 1);
                seed += 1;
                write_image(&root.join(folder).join(&name), &picture(30, 18, seed));
                rows.push((name, c));
            }
        }
    }
    let as_rows = |v: &[(String, u8)]| -> Vec<u8> {
        let rows: Vec<(&str, u8)> = v.iter().map(|(n, c)| (n.as_str(), *c)).collect();
        cars_devkit_annos(&rows)
    };
    std::fs::create_dir_all(root.join("devkit")).unwrap();
    std::fs::write(root.join("devkit/cars_train_annos.mat"), as_rows(&train)).unwrap();
    std::fs::write(root.join("cars_test_annos_withlabels.mat"), as_rows(&test)).unwrap();
}

/// Stanford Online Products with `classes` train and `classes` test classes of `per_class`
/// images each (`.JPG`), class ids starting at 11319 as in the published test list.
pub fn sop_per_class(root: &Path, classes: u32, per_class: u32) {
    sop_layout(root, classes, per_class, 11319);
}

/// Stanford Online Products: `classes` train classes (ids from 1) and `classes` test classes
/// (ids from `first_test_class`) of `per_class` images each.
fn sop_layout(root: &Path, classes: u32, per_class: u32, first_test_class: u32) {
    let header = "image_id class_id super_class_id path\n";
    let (mut train, mut test) = (header.to_string(), header.to_string());
    let mut id = 1;
    for k in 0..2 * classes {
        let class = if k < classes {
            k + 1
        } else {
            first_test_class + k - classes
        };
        for i in 0..per_class {
            let rel = format!("bicycle_final/{class}_{i}.JPG");
            std::fs::create_dir_all(root.join("bicycle_final")).unwrap();
            picture(20, 20, id)
                .save_with_format(root.join(&rel), image::ImageFormat::Jpeg)
                .unwrap();
            let line = format!("{id} {class} 1 {rel}\n");
            if k < classes {
                train.push_str(&line);
            } else {
                test.push_str(&line);
            }
            id += 1;
        }
    }
    write_text(&root.join("Ebay_train.txt"), &train);
    write_text(&root.join("Ebay_test.txt"), &test);
}

/// ILSVRC-2012 as published: `classes` WordNet-id folders under `train/` with `train` JPEGs
/// each, and `val` validation images per class flat in `val/`, labelled by
/// `LOC_val_solution.csv` (listed in an order other than the files', with two boxes on some
/// lines, as the published file has them).
pub fn imagenet(root: &Path, classes: u32, train: u32, val: u32) {
    let mut seed = 0;
    let mut solution = Vec::new();
    for c in 0..classes {
        let wnid = format!("n{:08}", 1_440_764 + c * 1000);
        for k in 0..train {
            let path = root.join(format!("train/{wnid}/{wnid}_{k}.JPEG"));
            seed += 1;
            picture(20, 16, seed).save_with_format_dir(&path, image::ImageFormat::Jpeg);
        }
        for k in 0..val {
            let id = c * val + k + 1;
            let image = format!("ILSVRC2012_val_{id:08}");
            seed += 1;
            picture(20, 16, seed).save_with_format_dir(
                &root.join(format!("val/{image}.JPEG")),
                image::ImageFormat::Jpeg,
            );
            let boxes = if k % 2 == 0 {
                format!("{wnid} 1 2 10 12 {wnid} 3 3 9 9")
            } else {
                format!("{wnid} 0 0 15 19")
            };
            solution.push(format!("{image},{boxes}"));
        }
    }
    solution.reverse();
    let text = format!("ImageId,PredictionString\n{}\n", solution.join("\n"));
    write_text(&root.join("LOC_val_solution.csv"), &text);
}

/// Places365-Standard as published: `classes` categories (some two levels deep, as
/// `/b/bar/indoor`), `train` training images each under `data_256/` and `val` validation
/// images each flat in `val_256/`, with the three file lists at the root.
pub fn places365(root: &Path, classes: u32, train: u32, val: u32) {
    let (mut categories, mut train_list, mut val_list) =
        (String::new(), String::new(), String::new());
    let mut seed = 0;
    let mut val_id = 0;
    for c in 0..classes {
        let category = if c % 2 == 0 {
            format!("/a/airfield_{c}")
        } else {
            format!("/b/bar_{c}/indoor")
        };
        categories.push_str(&format!("{category} {c}\n"));
        for k in 0..train {
            let rel = format!("{category}/{:08}.jpg", k + 1);
            seed += 1;
            picture(18, 18, seed).save_with_format_dir(
                &root.join(format!("data_256{rel}")),
                image::ImageFormat::Jpeg,
            );
            train_list.push_str(&format!("{rel} {c}\n"));
        }
        for _ in 0..val {
            val_id += 1;
            let name = format!("Places365_val_{val_id:08}.jpg");
            seed += 1;
            picture(18, 18, seed)
                .save_with_format_dir(&root.join("val_256").join(&name), image::ImageFormat::Jpeg);
            val_list.push_str(&format!("{name} {c}\n"));
        }
    }
    write_text(&root.join("categories_places365.txt"), &categories);
    write_text(&root.join("places365_train_standard.txt"), &train_list);
    write_text(&root.join("places365_val.txt"), &val_list);
}

/// Saving an image in a given format, creating its folder first.
trait SaveInDir {
    fn save_with_format_dir(&self, path: &Path, format: image::ImageFormat);
}

impl SaveInDir for RgbImage {
    fn save_with_format_dir(&self, path: &Path, format: image::ImageFormat) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        self.save_with_format(path, format).unwrap();
    }
}

/// ILSVRC-2012 with the devkit's validation labels instead of `LOC_val_solution.csv`:
/// `ILSVRC2012_devkit_t12/data/ILSVRC2012_validation_ground_truth.txt` (one `ILSVRC2012_ID`
/// per validation image, in file order) and `meta.mat` (the struct array `synsets` mapping
/// each `ILSVRC2012_ID` to its `WNID`), the ids numbering the classes in reverse WordNet order
/// so that a lister reading them as class ids would get them wrong.
pub fn imagenet_devkit(root: &Path, classes: u32, train: u32, val: u32) {
    imagenet(root, classes, train, val);
    std::fs::remove_file(root.join("LOC_val_solution.csv")).unwrap();
    let wnid = |c: u32| format!("n{:08}", 1_440_764 + c * 1000);
    let id_of = |c: u32| f64::from(classes - c);
    let mut truth = String::new();
    for c in 0..classes {
        for _ in 0..val {
            truth.push_str(&format!("{}\n", id_of(c)));
        }
    }
    let data = root.join("ILSVRC2012_devkit_t12/data");
    write_text(&data.join("ILSVRC2012_validation_ground_truth.txt"), &truth);
    let fields = ["ILSVRC2012_ID", "WNID"];
    let len = 32usize;
    let mut names = Vec::new();
    for f in fields {
        let mut b = f.as_bytes().to_vec();
        b.resize(len, 0);
        names.extend(b);
    }
    let mut body = element(5, &(len as i32).to_le_bytes());
    body.extend(element(1, &names));
    for c in 0..classes {
        body.extend(double(id_of(c)));
        body.extend(text(&wnid(c)));
    }
    let var = matrix(2, &[classes as i32, 1], "synsets", &body);
    let mut file = vec![b' '; 116];
    file[..20].copy_from_slice(b"MATLAB 5.0 MAT-file,");
    file.extend_from_slice(&[0u8; 8]);
    file.extend_from_slice(&0x0100u16.to_le_bytes());
    file.extend_from_slice(b"IM");
    file.extend(var);
    std::fs::write(data.join("meta.mat"), file).unwrap();
}

/// IJB-C as insightface's `IJB_release/IJBC` holds it, with NIST's 1:N files in `meta/`:
/// `subjects` subjects, each with one gallery template (G1 for even subjects, G2 for odd; two
/// faces, frames of one video for every third subject, else two stills) and `probes` probe
/// templates of one face each; the 1:1 pairs are every probe against every gallery template
/// (genuine when the subject is the same), as IJB-C's pairs come from its probe and gallery
/// templates. Face crops are 16 x 16 JPEGs `loose_crop/<n>.jpg`, numbered from 1.
pub fn ijbc(root: &Path, subjects: u32, probes: u32) {
    const HEADER: &str =
        "TEMPLATE_ID,SUBJECT_ID,FILENAME,SIGHTING_ID,FACE_X,FACE_Y,FACE_WIDTH,FACE_HEIGHT\n";
    let (mut faces, mut g1, mut g2, mut probe_csv) = (
        String::new(),
        HEADER.to_string(),
        HEADER.to_string(),
        HEADER.to_string(),
    );
    let (mut face, mut template, mut media) = (0u32, 0u32, 0u32);
    let mut gallery_of = Vec::new();
    let mut probe_of = Vec::new();
    let mut add_face = |template: u32, media: u32, subject: u32, faces: &mut String| {
        face += 1;
        let name = format!("{face}.jpg");
        write_image(
            &root.join("loose_crop").join(&name),
            &picture(16, 16, subject * 7 + face % 3),
        );
        faces.push_str(&format!("{name} {template} {media}\n"));
        format!("img/{face}.jpg")
    };
    for s in 0..subjects {
        let subject = 1000 + s;
        template += 1;
        let csv = if s % 2 == 0 { &mut g1 } else { &mut g2 };
        for k in 0..2 {
            if k == 0 || s % 3 != 0 {
                media += 1;
            }
            let file = add_face(template, media, s, &mut faces);
            csv.push_str(&format!("{template},{subject},{file},1,0,0,16,16\n"));
        }
        gallery_of.push((template, subject));
        for _ in 0..probes {
            template += 1;
            media += 1;
            let file = add_face(template, media, s, &mut faces);
            probe_csv.push_str(&format!("{template},{subject},{file},1,0,0,16,16\n"));
            probe_of.push((template, subject));
        }
    }
    let mut pairs = String::new();
    for &(p, ps) in &probe_of {
        for &(g, gs) in &gallery_of {
            pairs.push_str(&format!("{p} {g} {}\n", u32::from(ps == gs)));
        }
    }
    let meta = root.join("meta");
    write_text(&meta.join("ijbc_face_tid_mid.txt"), &faces);
    write_text(&meta.join("ijbc_template_pair_label.txt"), &pairs);
    write_text(&meta.join("ijbc_1N_gallery_G1.csv"), &g1);
    write_text(&meta.join("ijbc_1N_gallery_G2.csv"), &g2);
    write_text(&meta.join("ijbc_1N_probe_mixed.csv"), &probe_csv);
}
