//! Templates: sets of images of one identity compared as one, by the cosine of their mean
//! embeddings (the face-verification convention of IJB-style protocols).
//!
//! The images of each identity, in file order, are cut into consecutive templates of `size`
//! images (the last one may be smaller); size 0 puts all images of an identity in one template.
//! Building both sides with the same size from the same images gives the same templates in the
//! same order, so "a template against itself" stays a diagonal exclusion.

use std::collections::HashMap;

use super::EmbeddingSet;

/// Templates built from an embedding set.
#[derive(Debug, Clone, PartialEq)]
pub struct Templates {
    /// One row per template: the L2-normalised mean of its members, its identity, camera -1
    /// (templates may span cameras).
    pub set: EmbeddingSet,
    /// The member rows of each template, ascending.
    pub members: Vec<Vec<usize>>,
}

impl Templates {
    /// Groups `set` into templates of `size` images per identity (0: one per identity).
    pub fn build(set: &EmbeddingSet, size: usize) -> Templates {
        if size == 1 {
            return Templates {
                set: set.clone(),
                members: (0..set.len()).map(|i| vec![i]).collect(),
            };
        }
        let mut members: Vec<Vec<usize>> = Vec::new();
        let mut open: HashMap<i64, usize> = HashMap::new();
        for (i, &label) in set.labels.iter().enumerate() {
            match open.get(&label) {
                Some(&t) if size == 0 || members[t].len() < size => members[t].push(i),
                _ => {
                    open.insert(label, members.len());
                    members.push(vec![i]);
                }
            }
        }
        let dim = set.dim;
        let mut data = vec![0f32; members.len() * dim];
        for (t, rows) in members.iter().enumerate() {
            let out = &mut data[t * dim..(t + 1) * dim];
            for &i in rows {
                out.iter_mut().zip(set.row(i)).for_each(|(o, x)| *o += x);
            }
            let norm = out.iter().map(|x| x * x).sum::<f32>().sqrt() + 1e-6;
            out.iter_mut().for_each(|x| *x /= norm);
        }
        let labels = members.iter().map(|m| set.labels[m[0]]).collect();
        Templates {
            set: EmbeddingSet::new(data, dim, labels, None),
            members,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_cut_each_identity_in_order_and_average() {
        // Labels 7,7,8,7: size 2 -> templates {0,1} (7), {2} (8), {3} (7).
        let set = EmbeddingSet::new(
            vec![1., 0., 0., 1., 1., 0., 0., 2.],
            2,
            vec![7, 7, 8, 7],
            None,
        );
        let t = Templates::build(&set, 2);
        assert_eq!(t.members, vec![vec![0, 1], vec![2], vec![3]]);
        assert_eq!(t.set.labels, vec![7, 8, 7]);
        let r = std::f32::consts::FRAC_1_SQRT_2;
        assert!((t.set.row(0)[0] - r).abs() < 1e-5 && (t.set.row(0)[1] - r).abs() < 1e-5);
        assert!((t.set.row(2)[1] - 1.0).abs() < 1e-5, "normalised");
        let whole = Templates::build(&set, 0);
        assert_eq!(whole.members, vec![vec![0, 1, 3], vec![2]]);
    }
}
