//! What every lister returns: a [`Listing`] of [`Entry`]s, each image's id, label, camera and
//! [`Part`] of the provided split, whichever layout it was read from. A file of its own so the
//! listers and the code that reads their listings (protocols, fingerprints) share the types
//! without importing one another.

/// Which part of a data set's provided split an image belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Part {
    /// No provided split (CUB, Cars, ImageFolder: split by classes).
    Unsplit,
    /// Provided training set (SOP `Ebay_train.txt`, Market `bounding_box_train`, ImageNet
    /// `train/`, Places365 `places365_train_standard.txt`).
    Train,
    /// Provided test set (SOP `Ebay_test.txt`; the validation sets of ImageNet and Places365).
    Test,
    /// Provided query set (Market `query`).
    Query,
    /// Provided gallery (Market `bounding_box_test`, distractors included).
    Gallery,
    /// Images the protocol excludes from evaluation (Market identity -1).
    Junk,
}

/// One image of a real data set.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Path relative to the root, `/`-separated.
    pub id: String,
    /// Class or identity id as the data set numbers it.
    pub label: i64,
    /// Camera id, where the data set records one (Market-1501).
    pub camera: Option<i64>,
    /// Part of the provided split.
    pub part: Part,
}

/// Every image of a data set plus the annotation files that determined the listing.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    /// Images, in the order of the annotation files (or sorted paths).
    pub entries: Vec<Entry>,
    /// Annotation files read, relative to the root.
    pub annotations: Vec<String>,
}
