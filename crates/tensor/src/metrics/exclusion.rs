//! Which (query, database) pairs do not count at all.
//!
//! An excluded database item is removed from a query's ranking ("junk" in the revisited-Oxford
//! evaluation): it is neither a positive nor a negative, and it does not push later items down.
//! Two rules exist: a query against itself (when query and database are the same images), and,
//! for re-identification (Market-1501), a database item of the query's identity seen by the
//! query's camera.

/// The exclusion rules of one evaluation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Exclusion {
    /// Database item `i` is excluded for query `i` (query and database are the same images).
    pub self_match: bool,
    /// Database items with the query's label and the query's camera are excluded.
    pub same_camera: bool,
}

impl Exclusion {
    /// Whether database item `j` (label `db_label`, camera `db_camera`) is excluded for query
    /// `i` (label `q_label`, camera `q_camera`).
    #[inline]
    pub fn excludes(
        &self,
        i: usize,
        q_label: i64,
        q_camera: i64,
        j: usize,
        db_label: i64,
        db_camera: i64,
    ) -> bool {
        (self.self_match && i == j)
            || (self.same_camera && q_label == db_label && q_camera == db_camera)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_camera_excludes_only_the_same_identity() {
        let ex = Exclusion {
            self_match: false,
            same_camera: true,
        };
        assert!(ex.excludes(0, 5, 1, 3, 5, 1));
        assert!(
            !ex.excludes(0, 5, 1, 3, 6, 1),
            "another identity on the same camera counts"
        );
        assert!(
            !ex.excludes(0, 5, 1, 3, 5, 2),
            "the same identity on another camera counts"
        );
    }

    #[test]
    fn self_match_excludes_the_diagonal_only() {
        let ex = Exclusion {
            self_match: true,
            same_camera: false,
        };
        assert!(ex.excludes(4, 1, -1, 4, 1, -1));
        assert!(!ex.excludes(4, 1, -1, 5, 1, -1));
    }
}
