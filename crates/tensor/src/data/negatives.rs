//! The images of mined negatives ([`crate::nn::mining_pool`]), one batch for each batch of a
//! [`super::TrainLoader`] epoch, decoded and augmented ahead of the consumer as the loaders
//! do ([`super::prefetch`]).
//!
//! A negative is a training image like the anchors: re-sampled so its largest side is the
//! training resolution's, then augmented with the training augmentation (the reference applies
//! its training transform to the negatives of a tuple too). Each one's augmentation comes from
//! a stream seeded by (seed, epoch, its position among the epoch's negatives), salted apart
//! from the anchors' streams, so a batch is a pure function of the seed, the epoch and the
//! mined negatives.
//!
//! Each anchor has up to `K` negatives. A batch holds only those that exist, stacked, with an
//! index and a mask that place them: row `index[b, k]` of the images is anchor `b`'s `k`-th
//! negative where `valid[b, k]`.

use std::sync::Arc;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use tch::{Device, Tensor};

use super::augment::{self, stream_seed, AugmentConfig};
use super::dataset::Dataset;
use super::device::{tensor_to_device, ToDevice};
use super::image_ops::resize_largest_side;
use super::prefetch::Prefetch;
use super::DataError;
use super::Resolution;
use super::SplitItem;

/// Finished batches kept ready ahead of the consumer.
const PREFETCH_DEPTH: usize = 2;

/// Salt of the negatives' augmentation streams.
const NEGATIVE_AUGMENT_SALT: u64 = 0x6E65_6761_7567_0001;

/// The negatives of one training batch.
pub struct NegativeBatch {
    /// The negatives that exist, `[M, 3, h, w]` (M may be 0).
    pub images: Tensor,
    /// Row of `images` holding anchor `b`'s `k`-th negative, i64 `[B, K]` (0 where not valid).
    pub index: Tensor,
    /// Whether anchor `b` has a `k`-th negative, bool `[B, K]`.
    pub valid: Tensor,
}

/// Loads the negatives of an epoch's batches. See the module docs.
pub struct NegativeLoader {
    dataset: Arc<dyn Dataset>,
    items: Arc<Vec<SplitItem>>,
    resolution: Resolution,
    augment: AugmentConfig,
    seed: u64,
}

impl NegativeLoader {
    /// A loader over the same `items` (indices of negatives refer to them), `resolution`,
    /// augmentation and seed as the training loader's.
    pub fn new(
        dataset: Arc<dyn Dataset>,
        items: &[SplitItem],
        resolution: Resolution,
        augment: AugmentConfig,
        seed: u64,
    ) -> Self {
        NegativeLoader {
            dataset,
            items: Arc::new(items.to_vec()),
            resolution,
            augment,
            seed,
        }
    }

    /// The negatives of `epoch`'s batches: `negatives[batch][row]` lists up to `k` items.
    pub fn epoch(
        &self,
        epoch: u64,
        negatives: Vec<Vec<Vec<usize>>>,
        k: usize,
    ) -> impl Iterator<Item = Result<NegativeBatch, DataError>> {
        let k = k.max(1);
        let mut offset = 0u64;
        let jobs: Vec<(u64, Vec<Vec<usize>>)> = negatives
            .into_iter()
            .map(|batch| {
                let start = offset;
                offset += (batch.len() * k) as u64;
                (start, batch)
            })
            .collect();
        let (dataset, items, size, augment_cfg, seed) = (
            self.dataset.clone(),
            self.items.clone(),
            self.resolution,
            self.augment,
            self.seed,
        );
        Prefetch::spawn(jobs, PREFETCH_DEPTH, None, move |(start, rows)| {
            let mut slots = Vec::new();
            let mut index = vec![0i64; rows.len() * k];
            let mut valid = vec![false; rows.len() * k];
            for (b, row) in rows.iter().enumerate() {
                for (j, &item) in row.iter().take(k).enumerate() {
                    index[b * k + j] = slots.len() as i64;
                    valid[b * k + j] = true;
                    slots.push((start + (b * k + j) as u64, item));
                }
            }
            let images = slots
                .par_iter()
                .map(|&(position, item)| {
                    let mut rng = ChaCha8Rng::seed_from_u64(stream_seed(
                        seed ^ NEGATIVE_AUGMENT_SALT,
                        epoch,
                        position,
                    ));
                    let img =
                        resize_largest_side(&dataset.load(&items[item])?, size.largest_side());
                    let params =
                        augment::sample(&augment_cfg, img.width(), img.height(), size, &mut rng);
                    let mut out = Vec::new();
                    augment::apply(&img, &params, size, &mut out);
                    Ok(out)
                })
                .collect::<Result<Vec<_>, DataError>>()?;
            Ok((images.concat(), slots.len(), index, valid, rows.len()))
        })
        .map(move |r| {
            r.map(|(data, m, index, valid, b)| NegativeBatch {
                images: Tensor::from_slice(&data).view([
                    m as i64,
                    3,
                    i64::from(size.height),
                    i64::from(size.width),
                ]),
                index: Tensor::from_slice(&index).view([b as i64, k as i64]),
                valid: Tensor::from_slice(&valid).view([b as i64, k as i64]),
            })
        })
    }
}

impl ToDevice for NegativeBatch {
    fn to_device_async(self, device: Device) -> Self {
        NegativeBatch {
            images: tensor_to_device(&self.images, device),
            index: self.index.to_device(device),
            valid: self.valid.to_device(device),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(n: i64) -> Vec<SplitItem> {
        (0..n)
            .map(|i| SplitItem {
                id: format!("synthetic/{i}"),
                label: i / 2,
                camera: None,
            })
            .collect()
    }

    fn loader(seed: u64) -> NegativeLoader {
        let dataset: Arc<dyn Dataset> = Arc::new(asymflow::data::SyntheticDataset::new(
            asymflow::data::SyntheticParams::default(),
        ));
        NegativeLoader::new(
            dataset,
            &items(8),
            Resolution::square(12),
            AugmentConfig::default(),
            seed,
        )
    }

    #[test]
    fn batches_place_each_negative_by_index_and_mask() {
        let negatives = vec![
            vec![vec![2, 3], vec![4], vec![]],
            vec![vec![0, 1], vec![6, 7], vec![5, 4]],
        ];
        let batches: Vec<NegativeBatch> = loader(0)
            .epoch(0, negatives, 2)
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(batches.len(), 2);
        assert_eq!(batches[0].images.size(), vec![3, 3, 12, 12]);
        assert_eq!(
            Vec::<bool>::try_from(batches[0].valid.reshape([-1])).unwrap(),
            vec![true, true, true, false, false, false]
        );
        assert_eq!(
            Vec::<i64>::try_from(batches[0].index.reshape([-1])).unwrap(),
            vec![0, 1, 2, 0, 0, 0]
        );
        assert_eq!(batches[1].images.size(), vec![6, 3, 12, 12]);
        assert_eq!(batches[1].index.size(), vec![3, 2]);
    }

    #[test]
    fn an_epoch_is_a_pure_function_of_seed_and_epoch() {
        let negatives = || vec![vec![vec![1, 2], vec![3, 4]]];
        let images = |seed, epoch| {
            loader(seed)
                .epoch(epoch, negatives(), 2)
                .next()
                .unwrap()
                .unwrap()
                .images
        };
        assert!(images(3, 1).equal(&images(3, 1)));
        assert!(!images(3, 1).equal(&images(4, 1)));
        assert!(!images(3, 1).equal(&images(3, 2)));
    }
}
