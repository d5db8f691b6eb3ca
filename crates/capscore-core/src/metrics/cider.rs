//! CIDEr-D (pycocoevalcap 1.2's `CIDEr` key) and the original CIDEr of Vedantam et al. (2015),
//! spec COCO §6.
//!
//! Both weight the n-grams (orders 1..=4) of each sentence by tf-idf, with document frequency
//! over the evaluated images' references ([`DocFreq`](crate::stats::DocFreq); candidates never count) and
//! `ref_len = ln(N)` for N evaluated images, take per-order cosine similarities between the
//! candidate and each reference, average over orders, divide by the number of references and
//! multiply by 10.
//!
//! - [`Variant::CiderD`] (what pycocoevalcap reports as `CIDEr`): each candidate weight is
//!   clipped by the reference weight (`min(w_c, w_r) * w_r`) and each order's similarity is
//!   multiplied by the Gaussian length penalty `E^(-(delta^2) / (2 * 6^2))`, where delta is the
//!   difference of the bigram counts. Range 0..=10.
//! - [`Variant::Original`] (`pyciderevalcap`'s CIDEr): plain cosine, no clipping, no penalty.
//!
//! Reproduced on purpose, for bit parity: first-occurrence n-gram order in every sum; the
//! length is the number of bigram occurrences; the penalty is `pow(E, x)` not `exp(x)`; the
//! per-image order of operations is mean over orders, then `/ m`, then `* 10`. A one-image
//! corpus scores 0 (every weight is `ln 1 - ln 1`).

use crate::stats::{GramIndex, Grams, Matches, MAX_ORDER};

/// Which CIDEr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// CIDEr-D: clipping and Gaussian length penalty (sigma 6). pycocoevalcap's `CIDEr`.
    CiderD,
    /// The original CIDEr: plain tf-idf cosine.
    Original,
}

const SIGMA: f64 = 6.0;

/// A sentence's tf-idf vectors per order, their norms and its length (bigram count).
#[derive(Debug, Clone, Default)]
pub struct SentenceVec {
    /// N-gram ids of every order, each order in first-occurrence order (the reference's
    /// summation order); order n occupies `ends[n-2]..ends[n-1]`.
    ids: Vec<u32>,
    /// Their weights.
    weights: Vec<f64>,
    ends: [u32; MAX_ORDER],
    norms: [f64; MAX_ORDER],
    length: i64,
}

impl SentenceVec {
    /// Weights `tf * idf` for the n-grams of a sentence, where `idf` is the n-gram's
    /// `ln(N) - ln(max(1, df))` (carried by `s`).
    pub fn new(s: &Grams<'_>) -> SentenceVec {
        let mut v = SentenceVec::default();
        v.fill(s);
        v
    }

    /// [`SentenceVec::new`] into existing storage.
    pub fn fill(&mut self, s: &Grams<'_>) {
        self.ids.clear();
        self.weights.clear();
        for n in 1..=MAX_ORDER {
            let grams = s.order(n);
            let start = self.weights.len();
            self.ids.extend_from_slice(grams.ids);
            self.weights.extend(
                grams
                    .counts
                    .iter()
                    .zip(grams.idfs)
                    .map(|(&tf, &idf)| f64::from(tf) * idf),
            );
            // Summed in first-occurrence order, as the reference sums its dictionary.
            let mut norm = 0.0f64;
            for &w in &self.weights[start..] {
                norm += w * w;
            }
            self.norms[n - 1] = norm.sqrt();
            self.ends[n - 1] = self.ids.len() as u32;
            if n == 2 {
                self.length = grams.counts.iter().map(|&c| i64::from(c)).sum();
            }
        }
    }

    fn range(&self, n: usize) -> std::ops::Range<usize> {
        let start = if n == 0 { 0 } else { self.ends[n - 1] as usize };
        start..self.ends[n] as usize
    }
}

/// CIDEr-D's Gaussian length penalty `pow(E, -(delta^2) / (2 * 6^2))` for a difference of
/// `delta` bigrams (common differences computed once: the same `pow` calls, so the same bits).
fn length_penalty(delta: i64) -> f64 {
    fn penalty(delta: i64) -> f64 {
        let delta = delta as f64;
        std::f64::consts::E.powf(-(delta * delta) / (2.0 * SIGMA * SIGMA))
    }
    const SPAN: i64 = 64;
    static TABLE: std::sync::OnceLock<Vec<f64>> = std::sync::OnceLock::new();
    if delta.abs() > SPAN {
        return penalty(delta);
    }
    let table = TABLE.get_or_init(|| (-SPAN..=SPAN).map(penalty).collect());
    table[(delta + SPAN) as usize]
}

/// Per-order similarity of a candidate with one reference, from the n-grams they share
/// (`pairs`: candidate position, reference position). `wr` receives, per candidate n-gram, its
/// weight in the reference (0 when absent).
fn sim(
    variant: Variant,
    c: &SentenceVec,
    r: &SentenceVec,
    pairs: &[(u32, u32)],
    wr: &mut [f64],
) -> [f64; MAX_ORDER] {
    wr.fill(0.0);
    for &(i, k) in pairs {
        wr[i as usize] = r.weights[k as usize];
    }
    let penalty = length_penalty(c.length - r.length);
    let mut val = [0.0f64; MAX_ORDER];
    for (n, v) in val.iter_mut().enumerate() {
        // Candidate n-grams in first-occurrence order: pycocoevalcap's summation order.
        let range = c.range(n);
        for (&wc, &wr) in c.weights[range.clone()].iter().zip(&wr[range]) {
            *v += match variant {
                Variant::CiderD => wc.min(wr) * wr,
                Variant::Original => wc * wr,
            };
        }
        if c.norms[n] != 0.0 && r.norms[n] != 0.0 {
            *v /= c.norms[n] * r.norms[n];
        }
        if variant == Variant::CiderD {
            *v *= penalty;
        }
    }
    val
}

/// The score of one image: candidate against its references (m >= 1; 0 when m = 0).
pub fn image_score(variant: Variant, cand: &SentenceVec, refs: &[SentenceVec]) -> f64 {
    let mut matches = Matches::default();
    matches.build(
        &GramIndex::new(&cand.ids),
        refs.iter().map(|r| r.ids.as_slice()),
    );
    image_score_matched(variant, cand, refs, &matches, &mut Vec::new())
}

/// Reusable storage for scoring images one after another (one per worker): the images'
/// tf-idf vectors, filled once and scored in one or both variants.
#[derive(Debug, Default)]
pub struct ImageScratch {
    vecs: Vec<SentenceVec>,
    wr: Vec<f64>,
    len: usize,
}

impl ImageScratch {
    /// Weights the n-grams of an image's captions: its candidate, then its references.
    pub fn fill(&mut self, image: &[Grams<'_>]) {
        self.vecs.resize_with(image.len(), SentenceVec::default);
        for (v, s) in self.vecs.iter_mut().zip(image) {
            v.fill(s);
        }
        self.len = image.len();
    }

    /// The score of the image last filled, from the n-grams its candidate shares with each
    /// reference.
    pub fn score(&mut self, variant: Variant, matches: &Matches) -> f64 {
        let (c, r) = self.vecs[..self.len]
            .split_first()
            .expect("an image has a candidate");
        image_score_matched(variant, c, r, matches, &mut self.wr)
    }
}

/// [`image_score`] from the n-grams the candidate shares with each reference (positions in
/// the vectors, which list n-grams in [`Grams::all`] order), with a reusable buffer.
pub fn image_score_matched(
    variant: Variant,
    cand: &SentenceVec,
    refs: &[SentenceVec],
    matches: &Matches,
    wr: &mut Vec<f64>,
) -> f64 {
    if refs.is_empty() {
        return 0.0;
    }
    wr.resize(cand.ids.len(), 0.0);
    let mut acc = [0.0f64; MAX_ORDER];
    for (k, r) in refs.iter().enumerate() {
        let v = sim(variant, cand, r, matches.of(k), &mut wr[..cand.ids.len()]);
        for n in 0..MAX_ORDER {
            acc[n] += v[n];
        }
    }
    let mut score = (((acc[0] + acc[1]) + acc[2]) + acc[3]) / 4.0;
    score /= refs.len() as f64;
    score * 10.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{document_frequencies, DocFreq, GramCounter, Ngram};

    fn score_of(variant: Variant, cand: &[u32], images: &[Vec<Vec<u32>>]) -> f64 {
        let df = document_frequencies(images.iter().map(Vec::as_slice));
        let ref_len = (df.doc_count() as f64).ln();
        let idf = |g: &Ngram| ref_len - df.ln_df(g);
        let mut counter = GramCounter::new();
        let c = counter.count_weighted(cand, idf);
        let r: Vec<_> = images[0]
            .iter()
            .map(|r| counter.count_weighted(r, idf))
            .collect();
        let cv = SentenceVec::new(&c.view());
        let rv: Vec<_> = r.iter().map(|r| SentenceVec::new(&r.view())).collect();
        image_score(variant, &cv, &rv)
    }

    #[test]
    fn cached_length_penalties_are_the_computed_ones() {
        for delta in -100i64..=100 {
            let d = delta as f64;
            let direct = std::f64::consts::E.powf(-(d * d) / (2.0 * SIGMA * SIGMA));
            assert_eq!(length_penalty(delta).to_bits(), direct.to_bits(), "{delta}");
        }
    }

    #[test]
    fn identical_candidate_scores_ten() {
        let images = vec![
            vec![vec![0u32, 1, 2, 3], vec![0, 1, 2, 3]],
            vec![vec![4u32, 5, 6]],
        ];
        assert_eq!(score_of(Variant::CiderD, &[0, 1, 2, 3], &images), 10.0);
    }

    #[test]
    fn one_image_corpus_scores_zero() {
        let images = vec![vec![vec![0u32, 1, 2]]];
        assert_eq!(score_of(Variant::CiderD, &[0, 1, 2], &images), 0.0);
    }

    #[test]
    fn original_is_not_clipped() {
        // Candidate repeats a reference word: clipping caps its contribution in CIDEr-D only.
        let images = vec![vec![vec![0u32, 1]], vec![vec![2u32]]];
        let d = score_of(Variant::CiderD, &[0, 0, 1], &images);
        let o = score_of(Variant::Original, &[0, 0, 1], &images);
        assert!(o > d, "original {o} should exceed CIDEr-D {d}");
    }

    #[test]
    fn long_sentences_look_up_weights_like_short_ones() {
        let long: Vec<u32> = (0..60).map(|i| i % 40).collect();
        let images = vec![vec![long.clone()], vec![vec![1u32, 2]]];
        let s = score_of(Variant::CiderD, &long, &images);
        assert_eq!(s, 10.0);
    }
}
