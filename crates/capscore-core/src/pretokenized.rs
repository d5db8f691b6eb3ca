//! BLEU, ROUGE-L and CIDEr-D of pre-tokenized captions, as pycocoevalcap's `Bleu`, `Rouge`
//! and `Cider` scorers compute them from their `gts` / `res` dicts: each caption is already
//! tokenized and only split into words (`str.split()` for BLEU and CIDEr-D, `str.split(" ")`
//! for ROUGE-L). Unlike [`crate::engine::score`], no batch is assembled and the captions are
//! only borrowed. BLEU and ROUGE-L share nothing between images: each image's words get ids
//! local to the image. CIDEr-D's document frequencies need batch word ids and n-gram keys,
//! but its n-grams get image-local ids and only each image's distinct n-grams are counted (see
//! [`cider_d`]).
//!
//! The per-image statistics are the same integers as the engine's (BLEU: candidate length,
//! closest reference length, guessed and clipped n-gram counts; ROUGE-L: LCS lengths; CIDEr-D:
//! term and document frequencies), and they are turned into scores by the same code
//! ([`BleuStats::scores`], [`rouge::score_ids`], [`cider::SentenceVec`] and
//! [`cider::image_score_matched`]), so the numbers are the same bits.
//!
//! Must not: tokenize, read files, or know about Python.

use crate::metrics::bleu::BleuStats;
use crate::metrics::cider::{self, Variant};
use crate::metrics::{numpy_mean, rouge};
use crate::stats::{map_indexed, split};
use crate::stats::{
    BatchWords, Caption, GramCounter, IdfSource, Interner, Ngram, WordTable, MAX_ORDER,
};

/// Borrowed pre-tokenized captions, image by image: image `i` has the candidate
/// `candidates[i]` and the references `references[starts[i]..starts[i + 1]]`.
#[derive(Debug, Clone, Default)]
pub struct Captions<'a> {
    /// One candidate per image.
    pub candidates: Vec<&'a str>,
    /// The references of every image, image after image.
    pub references: Vec<&'a str>,
    /// Where each image's references start in `references`; one more entry at the end.
    pub starts: Vec<usize>,
}

impl<'a> Captions<'a> {
    /// No image yet.
    pub fn new() -> Captions<'a> {
        Captions {
            candidates: Vec::new(),
            references: Vec::new(),
            starts: vec![0],
        }
    }

    /// Adds an image.
    pub fn push(&mut self, candidate: &'a str, references: impl IntoIterator<Item = &'a str>) {
        self.candidates.push(candidate);
        self.references.extend(references);
        self.starts.push(self.references.len());
    }

    /// Number of images.
    pub fn len(&self) -> usize {
        self.candidates.len()
    }

    /// True when there is no image.
    pub fn is_empty(&self) -> bool {
        self.candidates.is_empty()
    }

    /// The references of image `i`.
    pub fn references_of(&self, i: usize) -> &[&'a str] {
        &self.references[self.starts[i]..self.starts[i + 1]]
    }
}

/// Below this many images the work stays on the calling thread (a thread pool's hand-over
/// costs more than it saves).
const PARALLEL_MIN: usize = 256;

/// Per image, in order, `f(image, scratch)` with one scratch per worker.
fn per_image<'a, S: Default + Send, T: Send>(
    caps: &Captions<'a>,
    f: impl Fn(usize, &mut S) -> T + Sync + Send,
) -> Vec<T> {
    map_indexed(caps.len(), PARALLEL_MIN, S::default, |s, i| f(i, s))
}

/// Marks a reference word that is not a candidate word (it matches nothing).
const ABSENT: u32 = u32::MAX;

/// The distinct words of one candidate, for looking reference words up, and for a candidate
/// of at most 64 words each word's positions as a bit mask.
#[derive(Default)]
struct CandidateWords<'a> {
    table: WordTable<&'a str>,
    /// Per word id, the positions of the word in the candidate (bit p: word p).
    masks: Vec<u64>,
}

impl<'a> CandidateWords<'a> {
    /// Fills an emptied table with the candidate's words `split` (in order); their ids go to
    /// `ids`.
    fn load(&mut self, split: &[(&'a str, u64)], ids: &mut Vec<u32>) {
        self.table.reset(split.len());
        self.masks.clear();
        ids.clear();
        for (pos, &(w, p)) in split.iter().enumerate() {
            let id = self.table.id(w, p);
            if id as usize == self.masks.len() {
                self.masks.push(0);
            }
            if pos < 64 {
                self.masks[id as usize] |= 1 << pos;
            }
            ids.push(id);
        }
    }

    /// The id of `w` (whose first 8 bytes are `p`), if it is a candidate word.
    #[inline]
    fn find(&self, w: &str, p: u64) -> Option<u32> {
        self.table.find(w, p)
    }

    /// The positions of `w` in the candidate (0 when it is not a candidate word).
    #[inline]
    fn mask(&self, w: &str, p: u64) -> u64 {
        self.find(w, p).map_or(0, |id| self.masks[id as usize])
    }
}

/// Reusable storage for [`bleu`] and [`rouge_l`] (one per worker thread).
#[derive(Default)]
struct Scratch<'a> {
    vocab: CandidateWords<'a>,
    split: Vec<(&'a str, u64)>,
    cand: Vec<u32>,
    words: Vec<u32>,
    masks: Vec<u64>,
    /// BLEU, long candidates: per candidate n-gram, its count in the current reference and
    /// its maximum count in any reference so far, and an index of the n-grams.
    in_ref: Vec<u32>,
    max_ref: Vec<u32>,
    counter: GramCounter,
    /// ROUGE-L, long candidates: where each reference ends in `words`, and the LCS table.
    ends: Vec<usize>,
    lcs: rouge::Scratch,
}

/// The BLEU statistics of each image (pycocoevalcap's `Bleu`: words split as `str.split()`,
/// clipped by the maximum count in any single reference, the closest reference length with
/// ties to the shorter). Pool them with [`crate::metrics::bleu::pool`].
pub fn bleu(caps: &Captions<'_>) -> Vec<BleuStats> {
    per_image(caps, |i, s: &mut Scratch<'_>| {
        bleu_image(caps.candidates[i], caps.references_of(i), s)
    })
}

/// The closest reference length (ties to the shorter), as reference lengths come.
#[inline]
fn closer(best: Option<u64>, len: u64, testlen: u64) -> Option<u64> {
    Some(match best {
        Some(b) if (b.abs_diff(testlen), b) <= (len.abs_diff(testlen), len) => b,
        _ => len,
    })
}

fn bleu_image<'a>(cand: &'a str, refs: &[&'a str], s: &mut Scratch<'a>) -> BleuStats {
    s.split.clear();
    split::words(cand, |w, p| s.split.push((w, p)));
    s.vocab.load(&s.split, &mut s.cand);
    let l = s.split.len();
    if l > 64 {
        return bleu_image_long(refs, s);
    }
    let testlen = l as u64;
    let masks = &s.vocab.masks;
    // cnt[n][p]: the count of the (n+1)-gram whose first occurrence is at p (0 elsewhere).
    // d[p] is the set of positions where the (n+1)-gram at p occurs.
    let mut cnt = [[0u32; 64]; MAX_ORDER];
    let mut d = [0u64; 64];
    for (p, &w) in s.cand.iter().enumerate() {
        d[p] = masks[w as usize];
    }
    for (n, cnt) in cnt.iter_mut().enumerate() {
        let starts = l.saturating_sub(n);
        for p in 0..starts {
            if n > 0 {
                d[p] &= masks[s.cand[p + n] as usize] >> n;
            }
            if d[p].trailing_zeros() as usize == p {
                cnt[p] = d[p].count_ones();
            }
        }
    }
    let mut max_ref = [[0u32; 64]; MAX_ORDER];
    let mut in_ref = [[0u32; 64]; MAX_ORDER];
    let mut reflen = None;
    for r in refs {
        s.masks.clear();
        let vocab = &s.vocab;
        split::words(r, |w, p| s.masks.push(vocab.mask(w, p)));
        let rm = &s.masks;
        reflen = closer(reflen, rm.len() as u64, testlen);
        for j in 0..rm.len() {
            let mut dd = rm[j];
            if dd == 0 {
                continue;
            }
            in_ref[0][dd.trailing_zeros() as usize] += 1;
            for n in 1..MAX_ORDER.min(rm.len() - j) {
                dd &= rm[j + n] >> n;
                if dd == 0 {
                    break;
                }
                in_ref[n][dd.trailing_zeros() as usize] += 1;
            }
        }
        for (m, c) in max_ref.iter_mut().zip(in_ref.iter_mut()) {
            for (m, c) in m[..l].iter_mut().zip(c[..l].iter_mut()) {
                *m = (*m).max(*c);
                *c = 0;
            }
        }
    }
    stats(testlen, reflen, |n| {
        cnt[n][..l]
            .iter()
            .zip(&max_ref[n][..l])
            .map(|(&c, &m)| u64::from(c.min(m)))
            .sum()
    })
}

/// The statistics of a candidate of `testlen` words, given the closest reference length and,
/// per order `n` (0-based), the clipped count of its (n+1)-grams.
fn stats(testlen: u64, reflen: Option<u64>, correct: impl FnMut(usize) -> u64) -> BleuStats {
    BleuStats {
        testlen,
        reflen: reflen.unwrap_or(0),
        guess: std::array::from_fn(|n| testlen.saturating_sub(n as u64)),
        correct: std::array::from_fn(correct),
    }
}

/// [`bleu_image`] for a candidate of more than 64 words (`s.cand`, `s.vocab` ready).
fn bleu_image_long<'a>(refs: &[&'a str], s: &mut Scratch<'a>) -> BleuStats {
    let testlen = s.cand.len() as u64;
    // A fresh counter numbers the candidate's distinct n-grams in its `Grams::all` order: an
    // n-gram's id is its position.
    s.counter.clear();
    let grams = s.counter.count(&s.cand);
    let all = grams.view().all();
    s.max_ref.clear();
    s.max_ref.resize(all.len(), 0);
    s.in_ref.clear();
    s.in_ref.resize(all.len(), 0);
    let mut reflen = None;
    for r in refs {
        s.words.clear();
        let vocab = &s.vocab;
        split::words(r, |w, p| s.words.push(vocab.find(w, p).unwrap_or(ABSENT)));
        reflen = closer(reflen, s.words.len() as u64, testlen);
        for n in 1..=MAX_ORDER {
            for win in s.words.windows(n) {
                if win.contains(&ABSENT) {
                    continue;
                }
                if let Some(k) = s.counter.get(&Ngram::new(win)) {
                    s.in_ref[k as usize] += 1;
                }
            }
        }
        for (m, c) in s.max_ref.iter_mut().zip(s.in_ref.iter_mut()) {
            *m = (*m).max(*c);
            *c = 0;
        }
    }
    let view = grams.view();
    stats(testlen, reflen, |n| {
        view.order_range(n + 1)
            .map(|k| u64::from(all.counts[k].min(s.max_ref[k])))
            .sum()
    })
}

/// The ROUGE-L F-score of each image (pycocoevalcap's `Rouge`: words split on U+0020 only,
/// beta 1.2).
pub fn rouge_l(caps: &Captions<'_>) -> Vec<f64> {
    per_image(caps, |i, s: &mut Scratch<'_>| {
        s.split.clear();
        split::space_words(caps.candidates[i], |w, p| s.split.push((w, p)));
        s.vocab.load(&s.split, &mut s.cand);
        let l = s.split.len();
        let refs = caps.references_of(i);
        let (vocab, buf) = (&s.vocab, &mut s.masks);
        if l <= 64 {
            return rouge::f_score(
                l,
                refs.iter().map(|r| {
                    buf.clear();
                    split::space_words(r, |w, p| buf.push(vocab.mask(w, p)));
                    (rouge::lcs_masks(l, buf.iter().copied()), buf.len())
                }),
            );
        }
        s.words.clear();
        s.ends.clear();
        for r in refs {
            split::space_words(r, |w, p| s.words.push(vocab.find(w, p).unwrap_or(ABSENT)));
            s.ends.push(s.words.len());
        }
        let mut start = 0;
        let refs: Vec<&[u32]> = s
            .ends
            .iter()
            .map(|&e| {
                let r = &s.words[start..e];
                start = e;
                r
            })
            .collect();
        rouge::score_ids(&s.cand, &refs, &mut s.lcs)
    })
}

/// pycocoevalcap's `Cider().compute_score(gts, res)` on pre-tokenized captions: CIDEr-D
/// (n = 4, sigma = 6, clipping, the Gaussian length penalty, x10; spec COCO §6) with
/// document frequencies over the references of these images and `ln(N)` for N images, words
/// split as `str.split()`. Returns numpy's mean and the per-image scores: the engine's
/// pipeline ([`BatchWords`]) and arithmetic, so the same bits as [`crate::engine::score`]'s
/// CIDEr-D; `None` when there is no image or no reference has a word (CIDEr-D is undefined:
/// the engine's `no_reference_ngrams`).
pub fn cider_d(caps: &Captions<'_>) -> Option<(f64, Vec<f64>)> {
    let n = caps.len();
    if n == 0 {
        return None;
    }
    let mut captions = Vec::with_capacity(n + caps.references.len());
    let mut img_start = Vec::with_capacity(n + 1);
    for i in 0..n {
        img_start.push(captions.len());
        captions.push(Caption {
            text: caps.candidates[i],
            ids: None,
        });
        captions.extend(
            caps.references_of(i)
                .iter()
                .map(|r| Caption { text: r, ids: None }),
        );
    }
    img_start.push(captions.len());
    let words = BatchWords::build(
        &Interner::new(),
        &captions,
        &img_start,
        false,
        Some(IdfSource::Batch),
    );
    if !words.any_reference_word() {
        return None;
    }
    let scores = words.map_images(&|| false, |s: &mut cider::ImageScratch, image| {
        let (grams, matches) = image.grams.expect("n-grams were built");
        s.fill(grams);
        s.score(Variant::CiderD, matches)
    })?;
    Some((numpy_mean(&scores), scores))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::metrics::bleu::pool;
    use rustc_hash::FxHashMap;

    fn engine_bleu(cand: &str, refs: &[&str]) -> BleuStats {
        let mut ids: FxHashMap<String, u32> = FxHashMap::default();
        let mut intern = |s: &str| -> Vec<u32> {
            split::py_whitespace(s)
                .map(|w| {
                    let n = ids.len() as u32;
                    *ids.entry(w.to_owned()).or_insert(n)
                })
                .collect()
        };
        let c = intern(cand);
        let r: Vec<Vec<u32>> = refs.iter().map(|r| intern(r)).collect();
        let mut counter = GramCounter::new();
        let cg = counter.count(&c);
        let rg: Vec<_> = r.iter().map(|r| counter.count(r)).collect();
        let views: Vec<_> = rg.iter().map(|g| g.view()).collect();
        BleuStats::of_image(&cg.view(), &views)
    }

    const CASES: &[(&str, &[&str])] = &[
        (
            "a man riding a horse on a beach",
            &["a man rides a horse on the beach", "a person on a horse"],
        ),
        ("a a a a", &["a a", "a a a a a a", "b"]),
        ("", &["a dog", ""]),
        ("a dog", &[""]),
        ("x", &["y z", "x"]),
        (
            "  the\tcat  sat\u{a0}on the mat the cat ",
            &["the cat sat on the mat", "on the mat the cat sat the cat"],
        ),
        (
            "abcdefghij abcdefghik abcdefghij",
            &["abcdefghik abcdefghij"],
        ),
    ];

    /// [`CASES`], then `long` with its references `refs`.
    fn cases_and<'a>(long: &'a str, refs: [&'a str; 2]) -> Captions<'a> {
        let mut caps = Captions::new();
        for &(c, r) in CASES {
            caps.push(c, r.iter().copied());
        }
        caps.push(long, refs);
        caps
    }

    #[test]
    fn bleu_matches_the_engines_statistics() {
        // A long candidate (hashed paths).
        let long: String = (0..200).map(|i| format!("w{} ", i % 37)).collect();
        let long_ref: String = (0..150).map(|i| format!("w{} ", (i * 7) % 41)).collect();
        let long_ref = long_ref.as_str();
        let caps = cases_and(&long, [long_ref, "w1 w2 w3"]);
        let got = bleu(&caps);
        let mut want: Vec<BleuStats> = CASES.iter().map(|&(c, r)| engine_bleu(c, r)).collect();
        want.push(engine_bleu(&long, &[long_ref, "w1 w2 w3"]));
        assert_eq!(got, want);
        assert_eq!(pool(&got).scores(), pool(&want).scores());
    }

    #[test]
    fn rouge_matches_the_string_scorer() {
        let long: String = (0..100).map(|i| format!("w{} ", i % 13)).collect();
        let caps = cases_and(&long, ["w1 w2 w3 w4", "w12 w0 w5"]);
        let got = rouge_l(&caps);
        for (i, g) in got.iter().enumerate() {
            assert_eq!(
                *g,
                rouge::score(caps.candidates[i], caps.references_of(i)),
                "{i}"
            );
        }
    }

    #[test]
    fn random_captions_with_repeats_match_the_engine() {
        let mut g = crate::engine::bootstrap::SplitMix::stream(11, 0);
        let mut next = move |m: u64| g.below(m);
        let mut sentence = |len: u64, vocab: u64| -> String {
            (0..len)
                .map(|_| match next(vocab + 2) {
                    k if k == vocab => "  ".to_owned(),
                    k if k == vocab + 1 => "abcdefghij".to_owned(),
                    k => format!("w{k}"),
                })
                .collect::<Vec<_>>()
                .join(" ")
        };
        let images: Vec<(String, Vec<String>)> = (0..400)
            .map(|i| {
                let len = [0, 1, 3, 8, 14, 63, 64, 65, 90][i % 9];
                let vocab = [3, 6, 20][i % 3];
                (
                    sentence(len, vocab),
                    (0..1 + i % 5)
                        .map(|k| sentence(4 + (k * 5) as u64, vocab))
                        .collect(),
                )
            })
            .collect();
        let mut caps = Captions::new();
        for (c, r) in &images {
            caps.push(c, r.iter().map(String::as_str));
        }
        let b = bleu(&caps);
        let r = rouge_l(&caps);
        for (k, (c, refs)) in images.iter().enumerate() {
            let refs: Vec<&str> = refs.iter().map(String::as_str).collect();
            assert_eq!(b[k], engine_bleu(c, &refs), "{k}");
            assert_eq!(r[k].to_bits(), rouge::score(c, &refs).to_bits(), "{k}");
        }
    }

    /// The engine's CIDEr-D of pre-tokenized `caps` (ids `0..n`): the mean and per-image
    /// scores, or the error code.
    fn engine_cider(caps: &Captions<'_>) -> Result<(f64, Vec<f64>), &'static str> {
        let (mean, cider, _) = engine_scores(caps, false)?;
        Ok((mean, cider))
    }

    /// The engine's scores of pre-tokenized `caps` (image ids `0..n`, references as their
    /// own document frequencies): CIDEr-D's mean and per-image values and, with `bleu`, the
    /// per-image BLEU-4; or the error code.
    pub(crate) fn engine_scores(
        caps: &Captions<'_>,
        bleu: bool,
    ) -> Result<(f64, Vec<f64>, Vec<f64>), &'static str> {
        use crate::engine::{Metric, Options, Tokenizer};
        use crate::input::{Candidate, ImageId, References};
        let id = |i: usize| ImageId::from_value(&serde_json::Value::from(i)).expect("an id");
        let refs = References::from_pairs((0..caps.len()).map(|i| {
            let r = caps.references_of(i).iter().map(|r| r.to_string());
            (id(i), r.collect())
        }));
        let cands = (0..caps.len())
            .map(|i| Candidate {
                image_id: id(i),
                caption: caps.candidates[i].to_owned(),
            })
            .collect();
        let metrics: &[Metric] = if bleu {
            &[Metric::CiderD, Metric::Bleu]
        } else {
            &[Metric::CiderD]
        };
        let opts = Options {
            tokenizer: Tokenizer::Pretokenized,
            ..Options::new(metrics)
        };
        let report = crate::engine::score(cands, &refs, &opts).map_err(|e| e.code.as_str())?;
        let cider = report
            .per_image
            .iter()
            .map(|r| r.scores.cider.expect("CIDEr-D"))
            .collect();
        let bleu4 = report
            .per_image
            .iter()
            .filter_map(|r| r.scores.bleu_4)
            .collect();
        Ok((report.aggregate.cider.expect("CIDEr-D"), cider, bleu4))
    }

    /// Asserts that [`cider_d`] gives the engine's numbers, bit for bit.
    fn assert_cider_is_the_engines(caps: &Captions<'_>) {
        let (mean, scores) = cider_d(caps).expect("CIDEr-D is defined");
        let (want_mean, want) = engine_cider(caps).expect("the engine scores");
        assert_eq!(scores.len(), want.len());
        for (k, (g, w)) in scores.iter().zip(&want).enumerate() {
            assert_eq!(g.to_bits(), w.to_bits(), "image {k}: {g} vs {w}");
        }
        assert_eq!(mean.to_bits(), want_mean.to_bits(), "{mean} vs {want_mean}");
    }

    #[test]
    fn cider_d_matches_the_engine_on_edge_cases() {
        let long: String = (0..200).map(|i| format!("w{} ", i % 37)).collect();
        let long_ref: String = (0..150).map(|i| format!("w{} ", (i * 7) % 41)).collect();
        // Empty candidate, empty references, repeated words, long captions, odd whitespace.
        let caps = cases_and(&long, [long_ref.as_str(), "w1 w2 w3"]);
        assert_cider_is_the_engines(&caps);
        let mut one = Captions::new();
        one.push("a dog runs", ["a dog runs", "the dog"]);
        assert_cider_is_the_engines(&one);
        let mut empty_refs = Captions::new();
        empty_refs.push("a dog", ["", "  "]);
        empty_refs.push("", ["a cat", ""]);
        empty_refs.push("a a a a a", ["a a a", "a"]);
        assert_cider_is_the_engines(&empty_refs);
    }

    #[test]
    fn cider_d_is_undefined_without_reference_words() {
        let mut caps = Captions::new();
        caps.push("a dog", ["", " \t"]);
        caps.push("a cat", [""]);
        assert_eq!(cider_d(&caps), None);
        assert_eq!(engine_cider(&caps).err(), Some("no_reference_ngrams"));
        assert_eq!(cider_d(&Captions::new()), None);
    }

    #[test]
    fn cider_d_matches_the_engine_on_random_captions() {
        let mut g = crate::engine::bootstrap::SplitMix::stream(7, 0);
        let mut next = move |m: u64| g.below(m);
        let mut sentence = |len: u64, vocab: u64| -> String {
            (0..len)
                .map(|_| match next(vocab + 2) {
                    k if k == vocab => "\u{a0}".to_owned(),
                    k if k == vocab + 1 => "abcdefghijk".to_owned(),
                    k => format!("w{k}"),
                })
                .collect::<Vec<_>>()
                .join(" ")
        };
        // More images than one chunk and than the parallel threshold.
        let images: Vec<(String, Vec<String>)> = (0..700)
            .map(|i| {
                let len = [0, 1, 3, 8, 14, 63, 64, 65, 90][i % 9];
                let vocab = [3, 6, 20, 400][i % 4];
                (
                    sentence(len, vocab),
                    (0..1 + i % 5)
                        .map(|k| sentence([0, 4, 9, 12, 70][(i + k) % 5], vocab))
                        .collect(),
                )
            })
            .collect();
        let mut caps = Captions::new();
        for (c, r) in &images {
            caps.push(c, r.iter().map(String::as_str));
        }
        assert_cider_is_the_engines(&caps);
        // A small batch (this thread only) of the same captions.
        let mut small = Captions::new();
        for (c, r) in &images[..40] {
            small.push(c, r.iter().map(String::as_str));
        }
        assert_cider_is_the_engines(&small);
    }

    #[test]
    fn cider_d_keys_fit_any_vocabulary() {
        // More than 65,535 distinct words: the 128-bit keys.
        let words: Vec<String> = (0..70_000).map(|i| format!("v{i}")).collect();
        let mut texts: Vec<(String, Vec<String>)> = Vec::new();
        for i in 0..300 {
            let r: String = (0..240)
                .map(|k| words[(i * 233 + k) % words.len()].clone() + " ")
                .collect();
            let c: String = (0..30)
                .map(|k| words[(i * 233 + k * 3) % words.len()].clone() + " ")
                .collect();
            texts.push((c, vec![r, "v1 v2 v3".to_owned()]));
        }
        let mut caps = Captions::new();
        for (c, r) in &texts {
            caps.push(c, r.iter().map(String::as_str));
        }
        assert_cider_is_the_engines(&caps);
    }

    #[test]
    fn many_images_run_in_parallel_with_the_same_result() {
        let mut caps = Captions::new();
        for k in 0..(PARALLEL_MIN * 3) {
            let (c, r) = CASES[k % CASES.len()];
            caps.push(c, r.iter().copied());
        }
        let b = bleu(&caps);
        let r = rouge_l(&caps);
        for k in 0..caps.len() {
            let (c, refs) = CASES[k % CASES.len()];
            assert_eq!(b[k], engine_bleu(c, refs));
            assert_eq!(r[k], rouge::score(c, refs));
        }
    }
}
