//! Templates that a protocol defines (IJB-C): each template a list of face rows, each face
//! from one media (a still image or a video), compared by the cosine of template features.
//!
//! The template feature follows insightface's IJB evaluation (`image2template_feature` of
//! `recognition/_evaluation_/ijb/IJB_11.py`): the faces of one media are averaged (a video's
//! frames count as one media), the media means are summed, and the sum is L2-normalised.
//! Insightface's face features are the network's unnormalised output plus the flipped image's
//! (its default test mode); ours are the embeddings as `embed` wrote them (L2-normalised, no
//! flip), so each face weighs the same inside its media.
//!
//! 1:1 verification scores listed template pairs (query template from the query side, the
//! other from the database side); 1:N identification scores probe templates against one
//! gallery's templates with [`super::tpir_at_fpir`], so its open-set rule (threshold on the
//! non-mated probes' top scores) is the one every identification here uses.

use std::collections::{BTreeMap, HashMap};

use super::error::MetricsError;
use super::{tar_at_far_from_scores, tpir_at_fpir, EmbeddingSet, Exclusion};
use super::{TarAtFar, TpirAtFpir};

/// The faces of one template: `(row, media)` per face.
pub type TemplateFaces = Vec<(usize, i64)>;

/// Template id -> its faces.
pub type TemplateMap = BTreeMap<i64, TemplateFaces>;

/// The L2-normalised feature of the template made of `faces` (rows of `set`): media means,
/// summed, normalised (module docs). `None` for a template without faces.
pub fn media_template(set: &EmbeddingSet, faces: &[(usize, i64)]) -> Option<Vec<f32>> {
    if faces.is_empty() {
        return None;
    }
    let dim = set.dim;
    let mut by_media: BTreeMap<i64, (Vec<f32>, usize)> = BTreeMap::new();
    for &(row, media) in faces {
        let (sum, count) = by_media
            .entry(media)
            .or_insert_with(|| (vec![0f32; dim], 0));
        sum.iter_mut().zip(set.row(row)).for_each(|(s, x)| *s += x);
        *count += 1;
    }
    let mut out = vec![0f32; dim];
    for (sum, count) in by_media.values() {
        out.iter_mut()
            .zip(sum)
            .for_each(|(o, s)| *o += s / *count as f32);
    }
    let norm = out.iter().map(|x| x * x).sum::<f32>().sqrt() + 1e-6;
    out.iter_mut().for_each(|x| *x /= norm);
    Some(out)
}

/// The features of `templates` (ids, in this order) from `set`, as one [`EmbeddingSet`]
/// labelled with `labels` (one per template).
pub fn template_set(
    set: &EmbeddingSet,
    map: &TemplateMap,
    templates: &[i64],
    labels: Vec<i64>,
) -> Result<EmbeddingSet, MetricsError> {
    let mut data = Vec::with_capacity(templates.len() * set.dim);
    for t in templates {
        let faces = map.get(t).map(Vec::as_slice).unwrap_or(&[]);
        let feature = media_template(set, faces).ok_or_else(|| {
            MetricsError::Unsupported(format!("template {t} has no face among the embeddings"))
        })?;
        data.extend(feature);
    }
    Ok(EmbeddingSet::new(data, set.dim, labels, None))
}

/// TAR at `far` over listed template pairs `(t1, t2, genuine)`: t1's feature from `query`,
/// t2's from `db` (the same images embedded by two models, or by one).
pub fn tar_at_far_templates(
    query: &EmbeddingSet,
    db: &EmbeddingSet,
    map: &TemplateMap,
    pairs: &[(i64, i64, bool)],
    far: f64,
) -> Result<TarAtFar, MetricsError> {
    let mut q_cache: HashMap<i64, Vec<f32>> = HashMap::new();
    let mut d_cache: HashMap<i64, Vec<f32>> = HashMap::new();
    let (mut genuine, mut impostor) = (Vec::new(), Vec::new());
    for &(a, b, is_genuine) in pairs {
        let fa = cached_feature(&mut q_cache, query, map, a)?;
        let fb = cached_feature(&mut d_cache, db, map, b)?;
        let score: f32 = fa.iter().zip(&fb).map(|(x, y)| x * y).sum();
        if is_genuine {
            genuine.push(score);
        } else {
            impostor.push(score);
        }
    }
    tar_at_far_from_scores(&genuine, &impostor, far)
}

/// Template `t`'s feature from `set`, computed once per side.
fn cached_feature(
    cache: &mut HashMap<i64, Vec<f32>>,
    set: &EmbeddingSet,
    map: &TemplateMap,
    t: i64,
) -> Result<Vec<f32>, MetricsError> {
    if let Some(f) = cache.get(&t) {
        return Ok(f.clone());
    }
    let faces = map.get(&t).map(Vec::as_slice).unwrap_or(&[]);
    let f = media_template(set, faces).ok_or_else(|| {
        MetricsError::Unsupported(format!("template {t} has no face among the embeddings"))
    })?;
    cache.insert(t, f.clone());
    Ok(f)
}

/// Open-set TPIR at `fpir` of probe templates (features from `query`) against one gallery's
/// templates (features from `db`); `(template, subject)` per probe and per gallery template.
pub fn tpir_at_fpir_templates(
    query: &EmbeddingSet,
    db: &EmbeddingSet,
    map: &TemplateMap,
    probes: &[(i64, i64)],
    gallery: &[(i64, i64)],
    fpir: f64,
    rows_per_block: usize,
) -> Result<TpirAtFpir, MetricsError> {
    let ids = |list: &[(i64, i64)]| list.iter().map(|p| p.0).collect::<Vec<_>>();
    let subjects = |list: &[(i64, i64)]| list.iter().map(|p| p.1).collect::<Vec<_>>();
    let q = template_set(query, map, &ids(probes), subjects(probes))?;
    let g = template_set(db, map, &ids(gallery), subjects(gallery))?;
    tpir_at_fpir(&q, &g, fpir, 1, Exclusion::default(), rows_per_block)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seven 2-d unit faces in five templates (rows: template, media):
    /// 0 (1, 0) T1 m1; 1 (1, 0) T1 m1; 2 (0, 1) T1 m2; 3 (0, 1) T2 m3; 4 (.8, .6) T3 m4;
    /// 5 (0, 1) T4 m5; 6 (1, 0) T5 m6.
    fn faces() -> (EmbeddingSet, TemplateMap) {
        let set = EmbeddingSet::new(
            vec![1., 0., 1., 0., 0., 1., 0., 1., 0.8, 0.6, 0., 1., 1., 0.],
            2,
            vec![0; 7],
            None,
        );
        let map = TemplateMap::from([
            (1, vec![(0, 1), (1, 1), (2, 2)]),
            (2, vec![(3, 3)]),
            (3, vec![(4, 4)]),
            (4, vec![(5, 5)]),
            (5, vec![(6, 6)]),
        ]);
        (set, map)
    }

    #[test]
    fn media_are_averaged_before_the_template_sum() {
        // T1: media means (1, 0) and (0, 1), summed (1, 1), normalised (.7071, .7071); the
        // plain mean of its three faces would be (2, 1) / sqrt(5) = (.8944, .4472).
        let (set, map) = faces();
        let t = media_template(&set, &map[&1]).unwrap();
        let r = std::f32::consts::FRAC_1_SQRT_2;
        assert!((t[0] - r).abs() < 1e-5 && (t[1] - r).abs() < 1e-5, "{t:?}");
        assert_eq!(media_template(&set, &[]), None);
        let err = template_set(&set, &map, &[9], vec![0]).unwrap_err();
        assert!(err.to_string().contains("template 9"), "{err}");
    }

    #[test]
    fn hand_worked_ijbc_style_verification_and_identification() {
        // Computed by hand from the features above: T1 = (.7071, .7071), T2 = T4 = (0, 1),
        // T3 = (.8, .6), T5 = (1, 0).
        let (set, map) = faces();
        // 1:1 pairs: (T1, T2) genuine, score .7071; (T1, T3) impostor, .7071 * 1.4 = .9899;
        // (T2, T3) impostor, .6. FAR .5 lets one of the two impostors pass: tau = .6, and the
        // genuine .7071 is above it: TAR 1. (With plain means the genuine score would be
        // .4472 < .6: TAR 0, so the media rule decides this number.)
        let pairs = [(1, 2, true), (1, 3, false), (2, 3, false)];
        let t = tar_at_far_templates(&set, &set, &map, &pairs, 0.5).unwrap();
        assert_eq!((t.genuine, t.impostor), (1, 2));
        assert!((t.threshold - 0.6).abs() < 1e-5, "{}", t.threshold);
        assert_eq!(t.tar, 1.0);
        // 1:N: G1 = {T2: subject 7}, G2 = {T3: subject 8}; probes T1 (subject 7), T4 (8),
        // T5 (9). Against G1: T1 mated (score .7071, correct), T4 and T5 non-mated (top
        // scores 1 and 0); FPIR .5 -> tau = 0, TPIR 1. Against G2: T4 mated (score .6,
        // correct), T1 and T5 non-mated (.9899 and .8); FPIR .5 -> tau = .8, TPIR 0.
        let probes = [(1, 7), (4, 8), (5, 9)];
        let g1 = tpir_at_fpir_templates(&set, &set, &map, &probes, &[(2, 7)], 0.5, 2).unwrap();
        assert_eq!((g1.mated, g1.non_mated), (1, 2));
        assert_eq!((g1.tpir, g1.rank1), (1.0, 1.0));
        assert!(g1.threshold.abs() < 1e-6);
        let g2 = tpir_at_fpir_templates(&set, &set, &map, &probes, &[(3, 8)], 0.5, 2).unwrap();
        assert_eq!((g2.mated, g2.non_mated), (1, 2));
        assert_eq!((g2.tpir, g2.rank1), (0.0, 1.0));
        assert!((g2.threshold - 0.8).abs() < 1e-5, "{}", g2.threshold);
    }
}
