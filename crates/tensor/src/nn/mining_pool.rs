//! Triplet negatives mined from a pool of training images once per epoch (`train-teacher`'s
//! `mining = "pool"`), as the resolution-asymmetry reference does (`mine_dist` in its
//! `TuplesFineGrainDataset.create_epoch_tuples`). The batch miner ([`super::triplet`]) only
//! sees the few classes of one batch; a pool of thousands of images offers each anchor
//! negatives from every class, weighted by how close they are.
//!
//! What the reference does, and where each step lives here:
//! 1. At the start of every epoch, a uniformly random subset of at most `pool_size` (20,000)
//!    training images is drawn ([`draw_pool`]). Classes left out of training
//!    (`small_classes = "drop"`) are not in it, as the reference's image list never holds them
//!    ([`pool_candidates`]).
//! 2. The pool and the epoch's anchors are embedded by the network being trained, in evaluation
//!    mode and without gradients, with the evaluation preprocessing at the training resolution
//!    (shorter side to s * 8 / 7, centre crop: the reference's `fg_eval_transform`), so no
//!    random augmentation enters the choice. The stage does this through the closure it gives
//!    [`mine_epoch`].
//! 3. For every anchor, `negatives` pool images are drawn without replacement with the batch
//!    miner's distance weights: `exp(log q^-1(d) - max) + 1e-6` with
//!    `d = max(sqrt(2 - 2 s), 0.5)` ([`super::triplet::log_inverse_density`]), and no weight for
//!    the anchor's class ([`sample_negatives`]).
//! 4. The chosen images join their anchor's batch with the training augmentation
//!    ([`crate::data::negatives`]) and go through the network in training mode together with
//!    the anchors; the loss ([`super::triplet::pool_triplet_loss`]) compares every in-batch
//!    positive of an anchor with each of its negatives.
//!
//! Departures, and why:
//! - Same-class pool images get no weight at all. The reference adds the 1e-6 floor to them
//!   too, so it may (rarely) draw a "negative" of the anchor's own class, and must whenever the
//!   pool holds fewer than `negatives` images of other classes. Here a negative is always of
//!   another class; an anchor with fewer candidates gets fewer negatives, the missing ones
//!   masked out of the loss.
//! - Draws come from a ChaCha8 stream per anchor seeded by (seed, epoch, the anchor's position
//!   in the epoch) rather than NumPy's global generator, so the choice is a pure function of the
//!   stage's seed, the epoch and the embeddings, whatever the thread count. Weighted sampling
//!   without replacement uses exponential keys (Efraimidis and Spirakis), which gives the same
//!   distribution as successive draws renormalised after each.
//! - The anchors are the images the loader plans for the epoch (class-balanced batches of
//!   `per_class` images per class, capped by `images_per_epoch`), where the reference draws
//!   `query_size` (8,000) anchors in the same class-interleaved order.
//! - The loss is the mean over triplets, as the batch miner's (see [`super::triplet`]).

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use tch::{Device, Kind, Tensor};

use super::triplet::{log_inverse_density, SAMPLING_FLOOR};
use crate::data::augment::stream_seed;
use crate::kind::StageError;
use crate::TorchResult;

/// Salt of the pool's random stream (the loaders' streams use the seed itself).
const POOL_SALT: u64 = 0x706F_6F6C_0000_0001;

/// Salt of the negatives' random streams.
const NEGATIVE_SALT: u64 = 0x6E65_6761_0000_0001;

/// Most anchor-to-pool weights computed at once (floats), which bounds the memory of mining.
const WEIGHTS_PER_CHUNK: usize = 1 << 24;

/// How negatives are mined from the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolMining {
    /// At most this many images in an epoch's pool.
    pub pool_size: usize,
    /// Negatives per anchor.
    pub negatives: usize,
    /// The stage's seed.
    pub seed: u64,
}

/// Each anchor's negatives for one epoch, as item indices: batch -> row -> up to `negatives`
/// items, in the order of the loader's plan.
pub type EpochNegatives = Vec<Vec<Vec<usize>>>;

/// The items that may enter a pool: those of classes with at least `min_class_size` images
/// (0 or 1: every item), in item order.
pub fn pool_candidates(labels: &[i64], min_class_size: usize) -> Vec<usize> {
    let mut sizes = std::collections::BTreeMap::<i64, usize>::new();
    for &l in labels {
        *sizes.entry(l).or_default() += 1;
    }
    (0..labels.len())
        .filter(|&i| sizes[&labels[i]] >= min_class_size)
        .collect()
}

/// The pool of `epoch`: a uniformly random subset of `candidates` of at most `size` items,
/// sorted; the same (seed, epoch) always gives the same pool.
pub fn draw_pool(candidates: &[usize], size: usize, seed: u64, epoch: u64) -> Vec<usize> {
    let mut rng = ChaCha8Rng::seed_from_u64(stream_seed(seed ^ POOL_SALT, epoch, u64::MAX));
    let mut all = candidates.to_vec();
    let (chosen, _) = all.partial_shuffle(&mut rng, size.min(candidates.len()));
    let mut pool = chosen.to_vec();
    pool.sort_unstable();
    pool
}

/// Up to `k` pool positions drawn without replacement for one anchor, from `log_q` (its
/// `log q^-1` to every pool image) and the pool's labels: weights `exp(log_q - max) + 1e-6`
/// over images of other classes (the max taken over them), none for `anchor_label`'s. Fewer
/// than `k` when the pool has fewer images of other classes; in the order drawn.
pub fn sample_negatives<R: Rng>(
    log_q: &[f32],
    pool_labels: &[i64],
    anchor_label: i64,
    k: usize,
    rng: &mut R,
) -> Vec<usize> {
    let others = || {
        log_q
            .iter()
            .zip(pool_labels)
            .enumerate()
            .filter(move |(_, (_, &l))| l != anchor_label)
    };
    let max = others()
        .map(|(_, (&q, _))| f64::from(q))
        .filter(|q| q.is_finite())
        .fold(f64::NEG_INFINITY, f64::max);
    // Efraimidis-Spirakis: the k largest keys u^(1/w), compared as ln(u) / w.
    let mut keyed: Vec<(f64, usize)> = others()
        .map(|(j, (&q, _))| {
            let q = f64::from(q);
            let w = if max.is_finite() && q.is_finite() {
                (q - max).exp() + SAMPLING_FLOOR
            } else {
                SAMPLING_FLOOR
            };
            let u: f64 = 1.0 - rng.random::<f64>();
            (u.ln() / w, j)
        })
        .collect();
    let k = k.min(keyed.len());
    if k == 0 {
        return Vec::new();
    }
    keyed.select_nth_unstable_by(k - 1, |a, b| b.0.total_cmp(&a.0));
    keyed.truncate(k);
    keyed.sort_by(|a, b| b.0.total_cmp(&a.0));
    keyed.into_iter().map(|(_, j)| j).collect()
}

/// Mines every anchor's negatives for one epoch.
///
/// `plan` is the loader's batches (item indices), `labels` every item's label, `pool` the
/// epoch's pool ([`draw_pool`]). `embed` embeds a sorted list of items (evaluation mode, no
/// gradient) into L2-normalised rows `[n, D]` on any device; it is called once, on the union
/// of the pool and the anchors.
pub fn mine_epoch(
    plan: &[Vec<usize>],
    labels: &[i64],
    pool: &[usize],
    mining: &PoolMining,
    epoch: u64,
    embed: impl FnOnce(&[usize]) -> Result<Tensor, StageError>,
) -> Result<EpochNegatives, StageError> {
    let chunk = (WEIGHTS_PER_CHUNK / pool.len().max(1)).max(1);
    mine_in_chunks(plan, labels, pool, mining, epoch, embed, chunk)
}

/// [`mine_epoch`] with the weights of `chunk` anchors at a time.
fn mine_in_chunks(
    plan: &[Vec<usize>],
    labels: &[i64],
    pool: &[usize],
    mining: &PoolMining,
    epoch: u64,
    embed: impl FnOnce(&[usize]) -> Result<Tensor, StageError>,
    chunk: usize,
) -> Result<EpochNegatives, StageError> {
    let anchors: Vec<usize> = plan.iter().flatten().copied().collect();
    let mut needed: Vec<usize> = anchors.iter().chain(pool).copied().collect();
    needed.sort_unstable();
    needed.dedup();
    let emb = embed(&needed)?;
    if emb.size().first().copied() != Some(needed.len() as i64) {
        return Err(StageError::Other(format!(
            "mining: {} embeddings for {} pool and anchor images",
            emb.size().first().copied().unwrap_or(0),
            needed.len()
        )));
    }
    let row = |item: usize| needed.binary_search(&item).map(|r| r as i64).unwrap_or(0);
    let device = emb.device();
    let rows = |items: &[usize]| {
        Tensor::from_slice(&items.iter().map(|&i| row(i)).collect::<Vec<_>>()).to_device(device)
    };
    let pool_emb = emb.index_select(0, &rows(pool));
    let pool_labels: Vec<i64> = pool.iter().map(|&i| labels[i]).collect();
    let dim = emb.size().get(1).copied().unwrap_or(1);

    let mut mined: Vec<Vec<usize>> = Vec::with_capacity(anchors.len());
    for (c, part) in anchors.chunks(chunk).enumerate() {
        let log_q = tch::no_grad(|| {
            let sim = emb.index_select(0, &rows(part)).matmul(&pool_emb.tr());
            log_inverse_density(&sim, dim)
                .to_kind(Kind::Float)
                .to_device(Device::Cpu)
                .reshape([-1])
        });
        let log_q = Vec::<f32>::try_from(&log_q).torch()?;
        let width = pool.len();
        let start = c * chunk;
        let drawn: Vec<Vec<usize>> = part
            .par_iter()
            .enumerate()
            .map(|(a, &item)| {
                let position = (start + a) as u64;
                let mut rng = ChaCha8Rng::seed_from_u64(stream_seed(
                    mining.seed ^ NEGATIVE_SALT,
                    epoch,
                    position,
                ));
                let weights = &log_q[a * width..(a + 1) * width];
                sample_negatives(
                    weights,
                    &pool_labels,
                    labels[item],
                    mining.negatives,
                    &mut rng,
                )
                .into_iter()
                .map(|j| pool[j])
                .collect()
            })
            .collect();
        mined.extend(drawn);
    }
    let mut mined = mined.into_iter();
    Ok(plan
        .iter()
        .map(|batch| mined.by_ref().take(batch.len()).collect())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Items of `classes` classes with `per_class` images each, labels `0..classes`.
    fn labels(classes: i64, per_class: usize) -> Vec<i64> {
        (0..classes)
            .flat_map(|c| std::iter::repeat_n(c, per_class))
            .collect()
    }

    /// Embeddings on the unit circle: class c near angle c * 40 degrees, images spread by 2.
    fn circle(items: &[usize], labels: &[i64]) -> Tensor {
        let flat: Vec<f32> = items
            .iter()
            .flat_map(|&i| {
                let a = (labels[i] as f64 * 40.0 + (i % 5) as f64 * 2.0).to_radians();
                [a.cos() as f32, a.sin() as f32]
            })
            .collect();
        Tensor::from_slice(&flat).view([items.len() as i64, 2])
    }

    fn mine(
        plan: &[Vec<usize>],
        labels: &[i64],
        pool: &[usize],
        seed: u64,
        k: usize,
    ) -> EpochNegatives {
        let mining = PoolMining {
            pool_size: pool.len(),
            negatives: k,
            seed,
        };
        mine_epoch(plan, labels, pool, &mining, 0, |items| {
            Ok(circle(items, labels))
        })
        .unwrap()
    }

    #[test]
    fn negatives_are_always_of_another_class() {
        let labels = labels(6, 5);
        let candidates = pool_candidates(&labels, 0);
        let plan: Vec<Vec<usize>> = (0..labels.len())
            .collect::<Vec<_>>()
            .chunks(10)
            .map(<[usize]>::to_vec)
            .collect();
        for seed in 0..5 {
            let pool = draw_pool(&candidates, 12, seed, 0);
            let mined = mine(&plan, &labels, &pool, seed, 4);
            assert_eq!(mined.len(), plan.len());
            for (batch, negs) in plan.iter().zip(&mined) {
                assert_eq!(batch.len(), negs.len());
                for (&anchor, negs) in batch.iter().zip(negs) {
                    let others = pool
                        .iter()
                        .filter(|&&p| labels[p] != labels[anchor])
                        .count();
                    assert_eq!(negs.len(), 4.min(others));
                    let mut unique = negs.clone();
                    unique.sort_unstable();
                    unique.dedup();
                    assert_eq!(unique.len(), negs.len(), "drawn without replacement");
                    for &n in negs {
                        assert!(pool.contains(&n), "{n} is not in the pool");
                        assert_ne!(labels[n], labels[anchor], "anchor {anchor}, negative {n}");
                    }
                }
            }
        }
    }

    #[test]
    fn an_anchor_without_other_classes_in_the_pool_gets_no_negative() {
        let labels = labels(2, 4);
        // A pool of class 0 only: class-0 anchors have nothing to draw, class-1 anchors all 4.
        let mined = mine(&[vec![0, 1, 4, 5]], &labels, &[0, 1, 2, 3], 0, 2);
        assert_eq!(mined[0][0], Vec::<usize>::new());
        assert_eq!(mined[0][1], Vec::<usize>::new());
        assert_eq!(mined[0][2].len(), 2);
        assert!(mined[0][3].iter().all(|&n| labels[n] == 0));
    }

    #[test]
    fn the_choice_is_deterministic_under_a_seed_and_differs_across_seeds() {
        let labels = labels(8, 6);
        let candidates = pool_candidates(&labels, 0);
        let plan: Vec<Vec<usize>> = (0..labels.len())
            .collect::<Vec<_>>()
            .chunks(8)
            .map(<[usize]>::to_vec)
            .collect();
        let run = |seed| {
            let pool = draw_pool(&candidates, 30, seed, 0);
            (pool.clone(), mine(&plan, &labels, &pool, seed, 3))
        };
        assert_eq!(run(7), run(7));
        let (pool_a, negs_a) = run(7);
        let (pool_b, negs_b) = run(8);
        assert_ne!(pool_a, pool_b, "the pool depends on the seed");
        assert_ne!(negs_a, negs_b, "the negatives depend on the seed");
        assert_ne!(
            draw_pool(&candidates, 30, 7, 0),
            draw_pool(&candidates, 30, 7, 1),
            "a new pool every epoch"
        );
    }

    #[test]
    fn the_pool_is_capped_at_pool_size_and_holds_only_candidates() {
        let labels: Vec<i64> = [labels(5, 4), vec![5, 5, 6]].concat();
        let candidates = pool_candidates(&labels, 4);
        assert_eq!(
            candidates,
            (0..20).collect::<Vec<_>>(),
            "classes 5 and 6 are too small"
        );
        for size in [1, 7, 20, 25_000] {
            let pool = draw_pool(&candidates, size, 3, 2);
            assert_eq!(pool.len(), size.min(20));
            assert!(pool.windows(2).all(|w| w[0] < w[1]), "sorted, no repeats");
            assert!(pool.iter().all(|p| candidates.contains(p)));
        }
        assert_eq!(pool_candidates(&labels, 0).len(), labels.len());
    }

    #[test]
    fn closer_negatives_are_drawn_more_often() {
        // Log weights fall steeply with distance (embedding size 64): of four other-class
        // images, the first has by far the largest weight and is drawn first almost always;
        // the same-class one never is.
        let log_q = [0.0f32, 40.0, 20.0, 10.0, 0.0];
        let pool_labels = [1i64, 2, 3, 4, 1];
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let mut first = [0usize; 5];
        for _ in 0..2000 {
            let drawn = sample_negatives(&log_q, &pool_labels, 1, 2, &mut rng);
            assert_eq!(drawn.len(), 2);
            assert!(!drawn.contains(&0) && !drawn.contains(&4));
            first[drawn[0]] += 1;
        }
        assert!(first[1] > 1990, "{first:?}");
        // Equal weights: every other-class image is drawn about equally often.
        let flat = [1.0f32; 5];
        let mut counts = [0usize; 5];
        for _ in 0..4000 {
            for j in sample_negatives(&flat, &pool_labels, 4, 1, &mut rng) {
                counts[j] += 1;
            }
        }
        assert_eq!(counts[3], 0);
        for j in [0, 1, 2, 4] {
            assert!((800..1200).contains(&counts[j]), "{counts:?}");
        }
    }

    #[test]
    fn mining_in_chunks_gives_the_chunk_free_result() {
        // Positions, not chunks, seed each anchor's stream: one anchor at a time changes nothing.
        let labels = labels(4, 4);
        let plan = vec![(0..8).collect::<Vec<_>>(), (8..16).collect()];
        let pool: Vec<usize> = (2..16).collect();
        let mining = PoolMining {
            pool_size: 14,
            negatives: 2,
            seed: 1,
        };
        let embed = |items: &[usize]| Ok(circle(items, &labels));
        let whole = mine_in_chunks(&plan, &labels, &pool, &mining, 0, embed, 1000).unwrap();
        let single = mine_in_chunks(&plan, &labels, &pool, &mining, 0, embed, 1).unwrap();
        assert_eq!(whole.iter().flatten().flatten().count(), 32);
        assert_eq!(whole, single);
    }
}
