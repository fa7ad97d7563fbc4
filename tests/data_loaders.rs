//! Real data-set loaders on fixtures in their published layouts (and every error), and the
//! batch loaders' determinism and coupled augmentation.

use std::collections::BTreeSet;
use std::sync::Arc;

use asymflow::data::augment::apply;
use asymflow::data::image_ops::resize_largest_side;
use asymflow::data::listing::{self, Part};
use asymflow::data::protocol::{split, Protocol, SplitOptions};
use asymflow_tensor::data::{
    AugmentConfig, Dataset, DatasetKind, DistillConfig, DistillLoader, EvalLoader, FileDataset,
    Sampling, SplitItem, SyntheticDataset, SyntheticParams, TrainConfig, TrainLoader,
};

use crate::data_fixtures as fx;

fn items_of(listing: &listing::Listing) -> Vec<(SplitItem, Part)> {
    listing
        .entries
        .iter()
        .map(|e| {
            (
                SplitItem {
                    id: e.id.clone(),
                    label: e.label,
                    camera: e.camera,
                },
                e.part,
            )
        })
        .collect()
}

fn labels(items: &[SplitItem]) -> BTreeSet<i64> {
    items.iter().map(|i| i.label).collect()
}

#[test]
fn data_cub_lists_images_with_classes_and_splits_half_the_classes() {
    let dir = tempfile::tempdir().unwrap();
    fx::cub(dir.path(), 4);
    let listing = DatasetKind::Cub200.list(dir.path()).unwrap();
    assert_eq!(listing.entries.len(), 8);
    assert_eq!(listing.entries[0].id, "images/001.Bird_1/Bird_1_0.jpg");
    assert_eq!(listing.entries[7].label, 4);
    let parts = split(&items_of(&listing), &SplitOptions::default())
        .unwrap()
        .partitions;
    assert_eq!(labels(&parts["train"]), [1, 2].into());
    assert_eq!(labels(&parts["test"]), [3, 4].into());
    let ds = FileDataset::new(dir.path());
    assert_eq!(ds.load(&parts["test"][0]).unwrap().dimensions(), (24, 20));
}

#[test]
fn data_cub_errors_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let missing = DatasetKind::Cub200
        .list(&dir.path().join("nowhere"))
        .unwrap_err()
        .to_string();
    assert!(
        missing.contains("nowhere") && missing.contains("images.txt"),
        "{missing}"
    );

    fx::cub(dir.path(), 2);
    let images = dir.path().join("images.txt");
    let good = std::fs::read_to_string(&images).unwrap();
    fx::write_text(&images, &good.replacen("2 ", "two ", 1));
    let err = DatasetKind::Cub200
        .list(dir.path())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("images.txt:2:") && err.contains("`two`"),
        "{err}"
    );

    fx::write_text(&images, &format!("{good}9 009.X/x.jpg\n"));
    let err = DatasetKind::Cub200
        .list(dir.path())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("images.txt:5:") && err.contains("no class"),
        "{err}"
    );

    fx::write_text(&images, &good);
    let labels = dir.path().join("image_class_labels.txt");
    fx::write_text(&labels, "1 1\n2\n");
    let err = DatasetKind::Cub200
        .list(dir.path())
        .unwrap_err()
        .to_string();
    assert!(err.contains("image_class_labels.txt:2:"), "{err}");

    // An image listed but absent, and one present but undecodable.
    fx::cub(dir.path(), 2);
    let first = dir.path().join("images/001.Bird_1/Bird_1_0.jpg");
    std::fs::remove_file(&first).unwrap();
    let err = DatasetKind::Cub200
        .list(dir.path())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("Bird_1_0.jpg") && err.contains("images.txt"),
        "{err}"
    );
    std::fs::write(&first, b"truncated").unwrap();
    let item = SplitItem {
        id: "images/001.Bird_1/Bird_1_0.jpg".into(),
        label: 1,
        camera: None,
    };
    let err = FileDataset::new(dir.path())
        .load(&item)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("Bird_1_0.jpg") && err.contains("decode"),
        "{err}"
    );
}

#[test]
fn data_cars196_reads_the_published_mat_file_compressed_or_not() {
    for compressed in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        fx::cars(dir.path(), 4, compressed);
        let listing = DatasetKind::Cars196.list(dir.path()).unwrap();
        assert_eq!(listing.entries.len(), 8);
        assert_eq!(listing.entries[2].id, "car_ims/000004.jpg");
        assert_eq!(listing.entries[2].label, 2);
        let parts = split(&items_of(&listing), &SplitOptions::default())
            .unwrap()
            .partitions;
        assert_eq!(labels(&parts["train"]), [1, 2].into());
    }
}

#[test]
fn data_cars196_errors_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    fx::cars(dir.path(), 2, false);
    let mat = dir.path().join("cars_annos.mat");
    let bytes = std::fs::read(&mat).unwrap();
    std::fs::write(&mat, &bytes[..bytes.len() - 40]).unwrap();
    let err = DatasetKind::Cars196
        .list(dir.path())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cars_annos.mat") && err.contains("MAT"),
        "{err}"
    );
    std::fs::write(&mat, b"not a mat file at all").unwrap();
    assert!(DatasetKind::Cars196
        .list(dir.path())
        .unwrap_err()
        .to_string()
        .contains("cars_annos.mat"));
    std::fs::remove_file(&mat).unwrap();
    let err = DatasetKind::Cars196
        .list(dir.path())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cars_annos.mat") && err.contains("does not exist"),
        "{err}"
    );
}

#[test]
fn data_sop_uses_the_provided_split_and_reports_bad_lines() {
    let dir = tempfile::tempdir().unwrap();
    fx::sop(dir.path());
    let listing = DatasetKind::Sop.list(dir.path()).unwrap();
    let opts = SplitOptions {
        protocol: Protocol::Provided,
        ..Default::default()
    };
    let parts = split(&items_of(&listing), &opts).unwrap().partitions;
    assert_eq!(labels(&parts["train"]), [1, 2].into());
    assert_eq!(labels(&parts["test"]), [3, 4].into());
    assert_eq!(parts["test"][0].id, "bicycle_final/3_0.JPG");

    let test = dir.path().join("Ebay_test.txt");
    let text = std::fs::read_to_string(&test).unwrap();
    fx::write_text(&test, &format!("{text}9 5 1\n"));
    let err = DatasetKind::Sop.list(dir.path()).unwrap_err().to_string();
    assert!(err.contains("Ebay_test.txt:6:"), "{err}");
    fx::write_text(&test, &text.replacen("image_id", "id", 1));
    let err = DatasetKind::Sop.list(dir.path()).unwrap_err().to_string();
    assert!(
        err.contains("Ebay_test.txt:1:") && err.contains("header"),
        "{err}"
    );
}

#[test]
fn data_market1501_handles_junk_distractors_and_cameras() {
    let dir = tempfile::tempdir().unwrap();
    fx::market(dir.path());
    let listing = DatasetKind::Market1501.list(dir.path()).unwrap();
    assert_eq!(listing.entries.len(), 9, "Thumbs.db is not an image");
    let opts = SplitOptions {
        protocol: Protocol::Provided,
        ..Default::default()
    };
    let parts = split(&items_of(&listing), &opts).unwrap().partitions;
    assert_eq!(labels(&parts["train"]), [2, 7].into());
    assert_eq!(labels(&parts["query"]), [3, 4].into());
    // Distractors stay in the gallery (label 0); junk (-1) is set apart, never ranked.
    assert_eq!(labels(&parts["gallery"]), [0, 3, 4].into());
    assert_eq!(labels(&parts["junk"]), [-1].into());
    let q = &parts["query"][0];
    assert_eq!(
        (q.id.as_str(), q.camera),
        ("query/0003_c2s1_001101_00.jpg", Some(2))
    );

    fx::write_image(&dir.path().join("query/holiday.jpg"), &fx::picture(4, 4, 0));
    let err = DatasetKind::Market1501
        .list(dir.path())
        .unwrap_err()
        .to_string();
    assert!(err.contains("holiday.jpg"), "{err}");
    std::fs::remove_dir_all(dir.path().join("query")).unwrap();
    let err = DatasetKind::Market1501
        .list(dir.path())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("query") && err.contains("does not exist"),
        "{err}"
    );
}

#[test]
fn data_image_folder_labels_sorted_class_folders() {
    let dir = tempfile::tempdir().unwrap();
    fx::image_folder(dir.path(), 3, 2);
    let listing = DatasetKind::Imagefolder.list(dir.path()).unwrap();
    assert_eq!(listing.entries.len(), 6);
    assert_eq!(
        (listing.entries[5].id.as_str(), listing.entries[5].label),
        ("class_2/1.png", 2)
    );
    std::fs::create_dir(dir.path().join("class_3")).unwrap();
    let err = DatasetKind::Imagefolder
        .list(dir.path())
        .unwrap_err()
        .to_string();
    assert!(err.contains("class_3") && err.contains("no .jpg"), "{err}");
    let err = DatasetKind::Imagefolder
        .list(&dir.path().join("x"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("does not exist"), "{err}");
}

// --- Batch loaders, on the synthetic set (no files needed). ---

fn synthetic(classes: usize, per_class: usize, size: u32) -> (Arc<dyn Dataset>, Vec<SplitItem>) {
    let params = SyntheticParams {
        classes,
        per_class,
        image_size: size,
        detail_scale: 1.0,
        seed: 3,
    };
    let ds = SyntheticDataset::new(params);
    let items = ds.items();
    (Arc::new(ds), items)
}

#[test]
fn data_eval_loader_keeps_order_and_shapes() {
    let (ds, items) = synthetic(3, 3, 24);
    let loader = EvalLoader::new(ds, &items, 16, 4);
    assert_eq!(loader.num_batches(), 3);
    let batches: Vec<_> = loader.iter().map(Result::unwrap).collect();
    assert_eq!(batches.len(), 3);
    assert_eq!(batches[0].0.size(), vec![4, 3, 16, 16]);
    assert_eq!(batches[2].0.size(), vec![1, 3, 16, 16]);
    let all: Vec<i64> = batches.iter().flat_map(|b| b.1.clone()).collect();
    assert_eq!(all, items.iter().map(|i| i.label).collect::<Vec<_>>());
}

fn train_config(sampling: Sampling) -> TrainConfig {
    TrainConfig {
        resolution: 16.into(),
        batch_size: 4,
        sampling,
        images_per_epoch: None,
        augment: AugmentConfig {
            jitter: 0.5,
            ..AugmentConfig::default()
        },
        seed: 11,
    }
}

#[test]
fn data_train_loader_is_deterministic_per_seed_and_epoch() {
    let (ds, items) = synthetic(4, 3, 20);
    let loader = TrainLoader::new(ds.clone(), &items, train_config(Sampling::Shuffle)).unwrap();
    assert_eq!(loader.batches_per_epoch(), 3);
    let run = |loader: &TrainLoader, epoch| -> Vec<(Vec<usize>, Vec<f32>)> {
        loader
            .epoch(epoch)
            .map(|b| {
                let b = b.unwrap();
                assert_eq!(b.images.size(), vec![4, 3, 16, 16]);
                (
                    b.indices,
                    Vec::<f32>::try_from(b.images.flatten(0, -1)).unwrap(),
                )
            })
            .collect()
    };
    let first = run(&loader, 0);
    assert_eq!(first, run(&loader, 0), "same (seed, epoch), same batches");
    // A loader on a one-thread pool gives the same batches: parallelism changes only speed.
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap(),
    );
    let single = TrainLoader::new(ds.clone(), &items, train_config(Sampling::Shuffle))
        .unwrap()
        .with_pool(pool);
    assert_eq!(first, run(&single, 0));
    assert_ne!(first, run(&loader, 1), "another epoch, another order");
    let mut seen: Vec<usize> = first.iter().flat_map(|b| b.0.clone()).collect();
    seen.sort();
    assert_eq!(
        seen,
        (0..12).collect::<Vec<_>>(),
        "every image once per epoch"
    );
}

#[test]
fn data_train_loader_class_balanced_batches_and_labels() {
    let (ds, items) = synthetic(4, 4, 20);
    let loader = TrainLoader::new(
        ds.clone(),
        &items,
        train_config(Sampling::ClassBalanced { per_class: 2 }),
    )
    .unwrap();
    for batch in loader.epoch(0) {
        let batch = batch.unwrap();
        let labels = Vec::<i64>::try_from(&batch.labels).unwrap();
        let distinct: BTreeSet<i64> = labels.iter().copied().collect();
        assert_eq!(distinct.len(), 2, "{labels:?}");
        for l in distinct {
            assert_eq!(labels.iter().filter(|&&x| x == l).count(), 2);
        }
    }
    let bad = TrainLoader::new(
        ds,
        &items,
        TrainConfig {
            batch_size: 5,
            ..train_config(Sampling::ClassBalanced { per_class: 2 })
        },
    );
    assert!(bad.is_err());
}

fn distill_config(coupled: bool, mixup: f64) -> DistillConfig {
    DistillConfig {
        teacher_resolution: 24.into(),
        student_resolution: 12.into(),
        batch_size: 3,
        augmentations: 2,
        coupled,
        augment: AugmentConfig {
            jitter: 0.5,
            mixup_alpha: mixup,
            ..AugmentConfig::default()
        },
        images_per_epoch: None,
        seed: 5,
    }
}

#[test]
fn data_distill_coupled_views_share_one_draw_and_rows_match_it() {
    let (ds, items) = synthetic(3, 2, 32);
    let loader = DistillLoader::new(ds.clone(), &items, distill_config(true, 0.0)).unwrap();
    let batch = loader.epoch(0).next().unwrap().unwrap();
    assert_eq!(batch.teacher.size(), vec![6, 3, 24, 24]);
    assert_eq!(batch.student.size(), vec![6, 3, 12, 12]);
    assert_eq!(batch.draws.len(), 6);
    for d in &batch.draws {
        assert_eq!(d.teacher.crop, d.student.crop);
        assert_eq!(d.teacher.flip, d.student.flip);
        assert_eq!(d.teacher.jitter, d.student.jitter);
    }
    // Two augmentations of one image differ (P independent draws per image).
    assert_ne!(batch.draws[0].teacher, batch.draws[1].teacher);
    // Row b*P + i is augmentation i of image b, rendered from exactly the recorded draw: the
    // same crop resized directly to each resolution.
    let img = resize_largest_side(&ds.load(&items[batch.indices[1]]).unwrap(), 24);
    let row = 2; // image 1, augmentation 0
    let (mut t, mut s) = (Vec::new(), Vec::new());
    apply(&img, &batch.draws[row].teacher, 24, &mut t);
    apply(&img, &batch.draws[row].student, 12, &mut s);
    let teacher = Vec::<f32>::try_from(batch.teacher.get(row as i64).flatten(0, -1)).unwrap();
    let student = Vec::<f32>::try_from(batch.student.get(row as i64).flatten(0, -1)).unwrap();
    assert_eq!(teacher, t);
    assert_eq!(student, s);
}

#[test]
fn data_distill_separate_views_draw_independently() {
    let (ds, items) = synthetic(3, 2, 32);
    let loader = DistillLoader::new(ds, &items, distill_config(false, 0.2)).unwrap();
    let batch = loader.epoch(0).next().unwrap().unwrap();
    let differing = batch
        .draws
        .iter()
        .filter(|d| d.teacher.crop != d.student.crop)
        .count();
    assert!(
        differing >= 5,
        "separate crops should differ, {differing} of 6 did"
    );
    assert!(batch.draws.iter().any(|d| d.teacher_mix != d.student_mix));
}

#[test]
fn data_distill_mixup_blends_each_image_with_the_next_with_one_weight() {
    let (ds, items) = synthetic(3, 2, 32);
    let mixed = DistillLoader::new(ds.clone(), &items, distill_config(true, 0.2)).unwrap();
    let plain = DistillLoader::new(
        ds,
        &items,
        DistillConfig {
            augment: AugmentConfig {
                mixup_alpha: 0.0,
                ..distill_config(true, 0.2).augment
            },
            ..distill_config(true, 0.2)
        },
    )
    .unwrap();
    let m = mixed.epoch(0).next().unwrap().unwrap();
    let p = plain.epoch(0).next().unwrap().unwrap();
    // Mixup is drawn from the same stream after the crop, so the unmixed rows are the same
    // views; check row r = w * plain[r] + (1 - w) * plain[partner] for the student tensor.
    for (r, d) in m.draws.iter().enumerate() {
        assert_eq!(d.teacher_mix, d.student_mix, "coupled mixup weight");
        assert_eq!(d.partner, ((r / 2 + 1) % 3) * 2 + r % 2);
        assert_eq!(d.teacher.crop, p.draws[r].teacher.crop);
        let expect = p.student.get(r as i64) * f64::from(d.student_mix)
            + p.student.get(d.partner as i64) * f64::from(1.0 - d.student_mix);
        let diff = f64::try_from((m.student.get(r as i64) - expect).abs().max()).unwrap();
        assert!(diff < 1e-4, "row {r}: {diff}");
    }
}

#[test]
fn data_distill_loader_is_deterministic_per_epoch() {
    let (ds, items) = synthetic(4, 2, 24);
    let loader = DistillLoader::new(ds, &items, distill_config(true, 0.2)).unwrap();
    let take = |e| -> Vec<(Vec<usize>, Vec<f32>)> {
        loader
            .epoch(e)
            .map(|b| {
                let b = b.unwrap();
                (
                    b.indices,
                    Vec::<f32>::try_from(b.student.flatten(0, -1)).unwrap(),
                )
            })
            .collect()
    };
    assert_eq!(take(0), take(0));
    assert_ne!(take(0), take(1));
}
