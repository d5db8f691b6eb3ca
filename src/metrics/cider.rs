//! CIDEr-D (pycocoevalcap 1.2's `CIDEr` key) and the original CIDEr of Vedantam et al. (2015),
//! spec COCO §6.
//!
//! Both weight the n-grams (orders 1..=4) of each sentence by tf-idf, with document frequency
//! over the evaluated images' references ([`DocFreq`]; candidates never count) and
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

use crate::corpus::{count_ngrams, DocFreq, Ngram, MAX_ORDER};

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
    /// Per order, the weights sorted by n-gram (for lookups).
    sorted: [Vec<(Ngram, f64)>; MAX_ORDER],
    /// Per order, the weights in first-occurrence order (the summation order of the reference).
    ordered: [Vec<(Ngram, f64)>; MAX_ORDER],
    norms: [f64; MAX_ORDER],
    length: i64,
}

impl SentenceVec {
    /// Weights `tf * (ln(N) - ln(max(1, df)))` for the n-grams of `words`.
    pub fn new(words: &[u32], df: &dyn DocFreq) -> SentenceVec {
        let ref_len = (df.doc_count() as f64).ln();
        let mut v = SentenceVec::default();
        for n in 1..=MAX_ORDER {
            let mut norm = 0.0f64;
            let ordered: Vec<(Ngram, f64)> = count_ngrams(words, n)
                .into_iter()
                .map(|(g, tf)| {
                    let d = f64::from(df.df(&g).max(1)).ln();
                    let w = f64::from(tf) * (ref_len - d);
                    norm += w * w;
                    if n == 2 {
                        v.length += i64::from(tf);
                    }
                    (g, w)
                })
                .collect();
            v.norms[n - 1] = norm.sqrt();
            let mut sorted = ordered.clone();
            sorted.sort_unstable_by_key(|&(g, _)| g);
            v.sorted[n - 1] = sorted;
            v.ordered[n - 1] = ordered;
        }
        v
    }

    fn weight(&self, n: usize, g: &Ngram) -> f64 {
        let s = &self.sorted[n];
        match s.binary_search_by_key(g, |&(h, _)| h) {
            Ok(i) => s[i].1,
            Err(_) => 0.0,
        }
    }
}

/// Per-order similarity of a candidate with one reference.
fn sim(variant: Variant, c: &SentenceVec, r: &SentenceVec) -> [f64; MAX_ORDER] {
    let delta = (c.length - r.length) as f64;
    let penalty = std::f64::consts::E.powf(-(delta * delta) / (2.0 * SIGMA * SIGMA));
    let mut val = [0.0f64; MAX_ORDER];
    for (n, v) in val.iter_mut().enumerate() {
        for (g, wc) in &c.ordered[n] {
            let wr = r.weight(n, g);
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
    if refs.is_empty() {
        return 0.0;
    }
    let mut acc = [0.0f64; MAX_ORDER];
    for r in refs {
        let v = sim(variant, cand, r);
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
    use crate::corpus::DfTable;

    #[test]
    fn identical_candidate_scores_ten() {
        let refs = [vec![0u32, 1, 2, 3], vec![0, 1, 2, 3]];
        let other = [vec![4u32, 5, 6]];
        let df = DfTable::build([
            refs.iter().map(|v| v.as_slice()).collect::<Vec<_>>(),
            other.iter().map(|v| v.as_slice()).collect::<Vec<_>>(),
        ]);
        let c = SentenceVec::new(&refs[0], &df);
        let rv: Vec<_> = refs.iter().map(|r| SentenceVec::new(r, &df)).collect();
        assert_eq!(image_score(Variant::CiderD, &c, &rv), 10.0);
    }

    #[test]
    fn one_image_corpus_scores_zero() {
        let refs = [vec![0u32, 1, 2]];
        let df = DfTable::build([refs.iter().map(|v| v.as_slice()).collect::<Vec<_>>()]);
        let c = SentenceVec::new(&[0, 1, 2], &df);
        let rv: Vec<_> = refs.iter().map(|r| SentenceVec::new(r, &df)).collect();
        assert_eq!(image_score(Variant::CiderD, &c, &rv), 0.0);
    }

    #[test]
    fn original_is_not_clipped() {
        // Candidate repeats a reference word: clipping caps its contribution in CIDEr-D only.
        let refs = [vec![0u32, 1]];
        let other = [vec![2u32]];
        let df = DfTable::build([
            refs.iter().map(|v| v.as_slice()).collect::<Vec<_>>(),
            other.iter().map(|v| v.as_slice()).collect::<Vec<_>>(),
        ]);
        let c = SentenceVec::new(&[0, 0, 1], &df);
        let rv: Vec<_> = refs.iter().map(|r| SentenceVec::new(r, &df)).collect();
        let d = image_score(Variant::CiderD, &c, &rv);
        let o = image_score(Variant::Original, &c, &rv);
        assert!(o > d, "original {o} should exceed CIDEr-D {d}");
    }
}
