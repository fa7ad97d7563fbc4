//! Science fidelity (issue 14): the data layouts and protocol choices the papers depend on,
//! checked where a pipeline plan or a unit test cannot see them.

use asymflow::data::DatasetKind;

use crate::data_fixtures as fx;

#[test]
fn science_cars196_devkit_layout_lists_train_and_test_images() {
    let dir = tempfile::tempdir().unwrap();
    fx::cars_devkit(dir.path(), 3);
    let listing = DatasetKind::Cars196.list(dir.path()).unwrap();
    let ids: Vec<&str> = listing.entries.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "cars_train/00001.jpg",
            "cars_train/00002.jpg",
            "cars_train/00003.jpg",
            "cars_test/00001.jpg",
            "cars_test/00002.jpg",
            "cars_test/00003.jpg"
        ]
    );
    let labels: Vec<i64> = listing.entries.iter().map(|e| e.label).collect();
    assert_eq!(labels, [1, 2, 3, 1, 2, 3]);
    assert_eq!(
        listing.annotations,
        ["devkit/cars_train_annos.mat", "cars_test_annos_withlabels.mat"]
    );
    // Without the labelled test file the error says which file and where to put it.
    std::fs::remove_file(dir.path().join("cars_test_annos_withlabels.mat")).unwrap();
    let err = DatasetKind::Cars196
        .list(dir.path())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cars_test_annos_withlabels.mat") && err.contains("devkit/"),
        "{err}"
    );
}

#[test]
fn science_cars196_with_neither_layout_names_both() {
    let dir = tempfile::tempdir().unwrap();
    let err = DatasetKind::Cars196
        .list(dir.path())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cars_annos.mat") && err.contains("cars_train_annos.mat"),
        "{err}"
    );
}
