//! `asymflow data export`: a split's images as an ImageFolder tree.

use crate::support::Project;

#[test]
fn data_export_writes_each_partition_as_class_folders_of_pngs() {
    let p = Project::new();
    p.write(
        "pipelines/d.toml",
        "[stages.split]\nkind = \"split\"\nparams = { classes = 4, per_class = 3, image_size = 16 }\n",
    );
    let out = p.run(&["data", "export", "pipelines/d.toml", "split", "exported"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // half-classes: classes 0-1 train, 2-3 test; 3 images each.
    let train = p.path().join("exported/train");
    let classes: Vec<_> = std::fs::read_dir(&train).unwrap().collect();
    assert_eq!(classes.len(), 2);
    let image = image::open(train.join("0000/000000.png")).unwrap();
    assert_eq!((image.width(), image.height()), (16, 16));
    assert_eq!(
        std::fs::read_dir(p.path().join("exported/test/0003"))
            .unwrap()
            .count(),
        3
    );

    let bad = p.run(&["data", "export", "pipelines/d.toml", "nope", "x"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no stage `nope`"));
}
