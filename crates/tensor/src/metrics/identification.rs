//! 1:N open-set identification: TPIR at an FPIR.
//!
//! Each probe (query template) is scored against every gallery template. A probe is *mated*
//! when the gallery holds its identity (after exclusions), *non-mated* otherwise. The threshold
//! tau is set on the top scores of non-mated probes so that FPIR (the share of non-mated probes
//! whose best score passes) is at most the target ([`super::operating_point`]); TPIR is the
//! share of mated probes whose rank-1 gallery template is of their identity with a score above
//! tau. Ties at rank 1 are broken by gallery index.

use rayon::prelude::*;

use super::error::MetricsError;
use super::operating_point::{accept_rate, NegativeTail};
use super::ranking::top1;
use super::scores::for_each_block;
use super::{EmbeddingSet, Exclusion, Templates};

/// TPIR at an FPIR, with what it was computed from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TpirAtFpir {
    /// True positive identification rate at tau.
    pub tpir: f64,
    /// The FPIR asked for.
    pub fpir_target: f64,
    /// The FPIR achieved.
    pub fpir: f64,
    /// tau: top scores strictly above it are accepted.
    pub threshold: f32,
    /// Whether target x non-mated probes >= 1 (else the FPIR cannot be measured and `tpir` is
    /// at FPIR 0).
    pub resolvable: bool,
    /// Closed-set rank-1 accuracy of the mated probes (no threshold).
    pub rank1: f64,
    /// The number of mated probes.
    pub mated: usize,
    /// The number of non-mated probes.
    pub non_mated: usize,
}

/// TPIR at `fpir` of probes from `query` against a gallery from `db`, both grouped into
/// templates of `template_size` images per identity (1: single images, 0: one per identity).
pub fn tpir_at_fpir(
    query: &EmbeddingSet,
    db: &EmbeddingSet,
    fpir: f64,
    template_size: usize,
    exclusion: Exclusion,
    rows_per_block: usize,
) -> Result<TpirAtFpir, MetricsError> {
    let q = Templates::build(query, template_size).set;
    let g = Templates::build(db, template_size).set;
    let n = g.len();
    // Per probe: None when non-mated (its top score), Some(correct) when mated.
    let mut probes: Vec<(f32, Option<bool>)> = Vec::with_capacity(q.len());
    for_each_block(&q, &g, rows_per_block, |first, scores, rows| {
        let block: Vec<(f32, Option<bool>)> = (0..rows)
            .into_par_iter()
            .map(|r| {
                let i = first + r;
                let kept = |j: usize| !exclusion.excludes(i, q.labels[i], -1, j, g.labels[j], -1);
                let row = &scores[r * n..(r + 1) * n];
                let mated = (0..n).any(|j| g.labels[j] == q.labels[i] && kept(j));
                let (top, score) = top1(row, kept).unwrap_or((usize::MAX, f32::NEG_INFINITY));
                let correct = top != usize::MAX && g.labels[top] == q.labels[i];
                (score, mated.then_some(correct))
            })
            .collect();
        probes.extend(block);
        Ok(())
    })?;
    let non_mated: Vec<f32> = probes
        .iter()
        .filter(|p| p.1.is_none())
        .map(|p| p.0)
        .collect();
    let mated: Vec<(f32, bool)> = probes
        .iter()
        .filter_map(|p| p.1.map(|c| (p.0, c)))
        .collect();
    if non_mated.is_empty() || mated.is_empty() {
        return Err(MetricsError::Unsupported(format!(
            "open-set identification needs mated and non-mated probes; got {} mated and {} \
             non-mated (a probe is non-mated when the gallery lacks its identity: use query and \
             gallery partitions with disjoint identities in part)",
            mated.len(),
            non_mated.len()
        )));
    }
    let mut tail = NegativeTail::new(non_mated.len(), fpir);
    non_mated.iter().for_each(|&s| tail.push(s));
    let point = tail.finish();
    let tpir = accept_rate(
        mated
            .iter()
            .map(|&(s, c)| if c { s } else { f32::NEG_INFINITY }),
        point.threshold,
    );
    let rank1 = mated.iter().filter(|m| m.1).count() as f64 / mated.len() as f64;
    Ok(TpirAtFpir {
        tpir,
        fpir_target: fpir,
        fpir: point.achieved,
        threshold: point.threshold,
        resolvable: point.resolvable,
        rank1,
        mated: mated.len(),
        non_mated: non_mated.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn hand_worked_open_set_identification() {
        // Gallery (1-d): label 0 at 1.0, label 1 at -1.0.
        // Probes: 0.9 (label 0, mated, correct, score .9); -0.5 (label 0, mated, wrong: top is
        // label 1 with .5); 0.3 (label 2, non-mated, top .3); 0.6 (label 3, non-mated, top .6).
        let g = EmbeddingSet::new(vec![1.0, -1.0], 1, vec![0, 1], None);
        let q = EmbeddingSet::new(vec![0.9, -0.5, 0.3, 0.6], 1, vec![0, 0, 2, 3], None);
        // FPIR 0.5: one of 2 non-mated may pass; tau = 0.3 (the 2nd largest).
        let t = tpir_at_fpir(&q, &g, 0.5, 1, Exclusion::default(), 2).unwrap();
        assert_eq!((t.mated, t.non_mated), (2, 2));
        assert!((t.threshold - 0.3).abs() < 1e-6);
        assert!(
            (t.tpir - 0.5).abs() < 1e-12,
            "only the correct mated probe passes"
        );
        assert!((t.rank1 - 0.5).abs() < 1e-12);
        assert!((t.fpir - 0.5).abs() < 1e-12);
        // FPIR 0.01 with 2 non-mated probes cannot be measured.
        let t = tpir_at_fpir(&q, &g, 0.01, 1, Exclusion::default(), 2).unwrap();
        assert!(!t.resolvable);
        assert!((t.tpir - 0.5).abs() < 1e-12, "0.9 is above tau = 0.6");
    }

    /// Brute force: explicit per-probe lists and every candidate threshold.
    fn brute_force(q: &EmbeddingSet, g: &EmbeddingSet, fpir: f64) -> f64 {
        let (mut non, mut mated) = (Vec::new(), Vec::new());
        for i in 0..q.len() {
            let scores: Vec<f32> = (0..g.len())
                .map(|j| q.row(i).iter().zip(g.row(j)).map(|(a, b)| a * b).sum())
                .collect();
            let mut best = 0;
            for j in 1..g.len() {
                if scores[j] > scores[best] {
                    best = j;
                }
            }
            if g.labels.contains(&q.labels[i]) {
                mated.push((scores[best], g.labels[best] == q.labels[i]));
            } else {
                non.push(scores[best]);
            }
        }
        let mut cands: Vec<f32> = non
            .iter()
            .copied()
            .chain(mated.iter().map(|m| m.0))
            .collect();
        cands.push(f32::NEG_INFINITY);
        let mut best = 0.0;
        for &t in &cands {
            let fp = non.iter().filter(|&&s| s > t).count() as f64 / non.len() as f64;
            if fp <= fpir + 1e-12 {
                let tp =
                    mated.iter().filter(|m| m.1 && m.0 > t).count() as f64 / mated.len() as f64;
                best = f64::max(best, tp);
            }
        }
        best
    }

    #[test]
    fn matches_brute_force_on_random_embeddings() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        for _ in 0..40 {
            let mk = |rng: &mut rand_chacha::ChaCha8Rng, n: usize, classes: i64| {
                let data = (0..n * 3)
                    .map(|_| rng.random_range(-3..=3) as f32)
                    .collect();
                EmbeddingSet::new(
                    data,
                    3,
                    (0..n).map(|_| rng.random_range(0..classes)).collect(),
                    None,
                )
            };
            let g = mk(&mut rng, 8, 6);
            let q = mk(&mut rng, 15, 10);
            let fpir = [0.1, 0.25, 0.5, 1.0][rng.random_range(0..4)];
            match tpir_at_fpir(&q, &g, fpir, 1, Exclusion::default(), 4) {
                Ok(t) => assert!((t.tpir - brute_force(&q, &g, fpir)).abs() < 1e-12),
                Err(MetricsError::Unsupported(_)) => {}
                Err(e) => panic!("{e}"),
            }
        }
    }
}
