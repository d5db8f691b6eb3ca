//! BLEU-1..4 as pycocoevalcap 1.2 computes it (`bleu/bleu_scorer.py`, spec COCO §4).
//!
//! Per image: clipped n-gram matches against the maximum count in any single reference, the
//! "closest" reference length (ties go to the shorter reference), and the smoothing constants
//! `tiny = 1e-15` (numerator) and `small = 1e-9` (denominator). The corpus score (the
//! aggregate) applies the same formula to integer statistics pooled over all images; it is not
//! the mean of the per-image scores.
//!
//! Quirks reproduced on purpose (all visible in the goldens):
//! - a candidate shorter than n words gets the factor `1e-15 / 1e-9 = 1e-6`, not 0;
//! - no match at all still gives a tiny positive score (`~1e-16` for Bleu_1);
//! - equal lengths count as "too short" (`ratio < 1`), so a perfect candidate scores
//!   `0.9999999998000004`, not 1;
//! - an empty candidate scores 0 (the brevity factor underflows).

use serde::Serialize;

use crate::stats::{GramIndex, Grams, Matches, MAX_ORDER};

const TINY: f64 = 1e-15;
const SMALL: f64 = 1e-9;

/// The integer statistics of one image, or pooled over a corpus.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BleuStats {
    /// Candidate length in words.
    pub testlen: u64,
    /// The closest reference length (summed over images when pooled).
    pub reflen: u64,
    /// Candidate n-grams per order: `max(0, testlen - n + 1)`.
    pub guess: [u64; MAX_ORDER],
    /// Clipped matching n-grams per order.
    pub correct: [u64; MAX_ORDER],
}

impl BleuStats {
    /// Statistics of one candidate against its references (n-grams of words split as in
    /// spec §3.4, counted with ids from one table).
    pub fn of_image(cand: &Grams<'_>, refs: &[Grams<'_>]) -> BleuStats {
        let mut matches = Matches::default();
        matches.build(
            &GramIndex::new(cand.all().ids),
            refs.iter().map(|r| r.all().ids),
        );
        BleuStats::of_image_matched(cand, refs, &matches, &mut Vec::new())
    }

    /// [`BleuStats::of_image`] from the n-grams the candidate shares with each reference, with
    /// a reusable buffer.
    pub fn of_image_matched(
        cand: &Grams<'_>,
        refs: &[Grams<'_>],
        matches: &Matches,
        max_ref: &mut Vec<u32>,
    ) -> BleuStats {
        let testlen = cand.word_count() as u64;
        let reflen = refs
            .iter()
            .map(|r| r.word_count() as u64)
            .min_by_key(|&l| (l.abs_diff(testlen), l))
            .unwrap_or(0);
        // Maximum count of each candidate n-gram in any single reference.
        let all = cand.all();
        max_ref.clear();
        max_ref.resize(all.len(), 0);
        for (r, grams) in refs.iter().enumerate() {
            let counts = grams.all().counts;
            for &(i, k) in matches.of(r) {
                let m = &mut max_ref[i as usize];
                *m = (*m).max(counts[k as usize]);
            }
        }
        let mut guess = [0u64; MAX_ORDER];
        let mut correct = [0u64; MAX_ORDER];
        for n in 1..=MAX_ORDER {
            guess[n - 1] = testlen.saturating_sub(n as u64 - 1);
            correct[n - 1] = cand
                .order_range(n)
                .map(|i| u64::from(all.counts[i].min(max_ref[i])))
                .sum();
        }
        BleuStats {
            testlen,
            reflen,
            guess,
            correct,
        }
    }

    /// Adds another image's statistics (corpus pooling).
    pub fn add(&mut self, o: &BleuStats) {
        self.add_times(o, 1);
    }

    /// Adds another image's statistics `times` times (a bootstrap resample).
    pub fn add_times(&mut self, o: &BleuStats, times: u64) {
        self.testlen += o.testlen * times;
        self.reflen += o.reflen * times;
        for n in 0..MAX_ORDER {
            self.guess[n] += o.guess[n] * times;
            self.correct[n] += o.correct[n] * times;
        }
    }

    /// `(testlen + 1e-15) / (reflen + 1e-9)`, the value pycocoevalcap prints as `ratio`.
    pub fn ratio(&self) -> f64 {
        (self.testlen as f64 + TINY) / (self.reflen as f64 + SMALL)
    }

    /// Bleu_1..Bleu_4 from these statistics, in pycocoevalcap's operation order.
    pub fn scores(&self) -> [f64; MAX_ORDER] {
        let mut out = [0.0; MAX_ORDER];
        let mut p = 1.0f64;
        for (k, o) in out.iter_mut().enumerate() {
            p *= (self.correct[k] as f64 + TINY) / (self.guess[k] as f64 + SMALL);
            // black_box: with a known exponent of 0.5, LLVM rewrites pow(p, 0.5) as sqrt(p),
            // which differs from glibc's pow (what Python calls) in the last bit for some p.
            *o = p.powf(std::hint::black_box(1.0 / (k as f64 + 1.0)));
        }
        let ratio = self.ratio();
        if ratio < 1.0 {
            let bp = (1.0 - 1.0 / ratio).exp();
            for s in &mut out {
                *s *= bp;
            }
        }
        out
    }
}

/// Pools per-image statistics into corpus statistics.
pub fn pool<'a>(stats: impl IntoIterator<Item = &'a BleuStats>) -> BleuStats {
    let mut total = BleuStats::default();
    for s in stats {
        total.add(s);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{GramCounter, OwnedGrams};

    fn stats(c: &[u32], refs: &[&[u32]]) -> BleuStats {
        let mut counter = GramCounter::new();
        let r: Vec<OwnedGrams> = refs.iter().map(|r| counter.count(r)).collect();
        let r: Vec<Grams<'_>> = r.iter().map(OwnedGrams::view).collect();
        BleuStats::of_image(&counter.count(c).view(), &r)
    }

    fn ids(s: &str, vocab: &mut Vec<String>) -> Vec<u32> {
        s.split_whitespace()
            .map(|w| match vocab.iter().position(|v| v == w) {
                Some(i) => i as u32,
                None => {
                    vocab.push(w.to_owned());
                    (vocab.len() - 1) as u32
                }
            })
            .collect()
    }

    /// spec COCO §4 worked example (golden edge/cases/23_one_reference).
    #[test]
    fn worked_example_one_reference() {
        let mut v = Vec::new();
        let c = ids("a surfer riding a large wave", &mut v);
        let r = ids("a surfer rides a large wave in the ocean", &mut v);
        let s = stats(&c, &[&r]);
        assert_eq!(s.correct, [5, 3, 1, 0]);
        assert_eq!(s.guess, [6, 5, 4, 3]);
        let b = s.scores();
        // Exact: these are the golden values, reproduced bit for bit.
        assert_eq!(b[0], 0.5054422162587139);
        assert_eq!(b[1], 0.4288819423302449);
        assert_eq!(b[2], 0.30326532974343484);
        assert_eq!(b[3], 4.8730396877742594e-05);
    }

    /// Regression: `pow(p, 0.5)` must be glibc's pow, not sqrt (LLVM rewrites a constant 0.5
    /// exponent). Image 529944 of the 5,000-image benchmark set: pycocoevalcap gives Bleu_2 =
    /// 0.6831300509235523, sqrt gives 0.6831300509235522.
    #[test]
    fn bleu2_uses_pow_not_sqrt() {
        let s = BleuStats {
            testlen: 10,
            reflen: 10,
            guess: [10, 9, 8, 7],
            correct: [7, 6, 4, 3],
        };
        assert_eq!(s.scores()[1], 0.6831300509235523);
    }

    #[test]
    fn closest_length_ties_go_to_the_shorter_reference() {
        let c = [0, 1, 2, 3, 4];
        let r4 = [0, 1, 2, 3];
        let r6 = [0, 1, 2, 3, 4, 5];
        assert_eq!(stats(&c, &[&r6, &r4]).reflen, 4);
    }

    #[test]
    fn clipping_uses_the_max_count_in_a_single_reference() {
        let c = [0, 0, 0];
        let s = stats(&c, &[&[0, 1], &[0, 0]]);
        assert_eq!(s.correct[0], 2);
    }

    #[test]
    fn long_captions_match_the_brute_force_definition() {
        let c: Vec<u32> = (0..200).map(|i| i % 13).collect();
        let r1: Vec<u32> = (0..150).map(|i| i % 11).collect();
        let r2: Vec<u32> = (0..90).map(|i| (i * 7) % 13).collect();
        let fast = stats(&c, &[&r1, &r2]);
        // Brute force definition.
        for n in 1..=4usize {
            let count = |s: &[u32], g: &[u32]| s.windows(n).filter(|w| *w == g).count() as u64;
            let mut seen: Vec<&[u32]> = Vec::new();
            let mut correct = 0;
            for g in c.windows(n) {
                if !seen.contains(&g) {
                    seen.push(g);
                    correct += count(&c, g).min(count(&r1, g).max(count(&r2, g)));
                }
            }
            assert_eq!(fast.correct[n - 1], correct, "order {n}");
        }
    }

    #[test]
    fn empty_candidate_scores_zero() {
        let s = stats(&[], &[&[0, 1]]);
        assert_eq!(s.scores(), [0.0; 4]);
    }
}
