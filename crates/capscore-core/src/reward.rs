//! Rewards for self-critical sequence training (SCST): CIDEr-D (and, on request, BLEU-4) of
//! many candidates against prepared references, with a FIXED document-frequency table, as the
//! training code of self-critical.pytorch computes them. Its `CiderD` scorer is pycocoevalcap's
//! CIDEr-D arithmetic (spec COCO §6) with the document frequencies and `ref_len` taken from a
//! table (an n-gram -> count pickle, `ref_len` used as `ln(ref_len)`) or from a reference set
//! (`ref_len` = its image count), instead of from the scored batch.
//!
//! The same code as the engine's CIDEr-D and BLEU ([`cider::image_score`], [`BleuStats`]), so
//! the same bits: words split as Python's `str.split()`, n-grams in first-occurrence order,
//! `idf = ln(ref_len) - ln(max(1, df))`.
//!
//! Must not: read files (tables come as counts), know about Python or HTTP.

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::metrics::bleu::BleuStats;
use crate::metrics::cider::{self, SentenceVec, Variant};
use crate::stats::{
    document_frequencies, GramIndex, GramKey, Grams, Interner, KeyTable, Matches, Ngram,
    OwnedGrams, MAX_ORDER,
};
use crate::stats::{map_indexed, split};

/// A reward input that cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct RewardError(pub String);

/// Ids of a candidate's words, into `out`: unknown words get ids past the vocabulary, equal
/// words the same id (they match no reference n-gram, but count in the candidate's own
/// vector).
fn lookup<'a>(words: &Interner, split: impl Iterator<Item = &'a str>, out: &mut Vec<u32>) {
    let mut unknown: Vec<&str> = Vec::new();
    out.clear();
    out.extend(split.map(|w| match words.get(w) {
        Some(id) => id,
        None => {
            let k = unknown.iter().position(|u| *u == w).unwrap_or_else(|| {
                unknown.push(w);
                unknown.len() - 1
            });
            words.len() + k as u32
        }
    }));
}

/// The CIDEr weight `ln(ref_len) - ln(max(1, df))` of each n-gram of a table, computed once,
/// keyed by packed n-grams: 16 bits a word when every word of the table has an id below
/// 0xFFFF (any caption vocabulary), which the scorer reads ahead of use ([`IdfTable::touch`]:
/// look-ups that miss the cache overlap); 32 bits a word otherwise.
#[derive(Debug, Clone)]
enum IdfTable {
    Narrow(KeyTable<u64, f64>),
    Wide(KeyTable<u128, f64>),
}

impl IdfTable {
    fn new(words: u32, df: &FxHashMap<Ngram, f64>, ln_ref_len: f64) -> IdfTable {
        fn fill<K: GramKey>(df: &FxHashMap<Ngram, f64>, ln_ref_len: f64) -> KeyTable<K, f64> {
            let mut t = KeyTable::new(0);
            t.reset(df.len());
            for (g, &d) in df {
                let key = K::of(g).expect("table words fit the key");
                t.insert(key, ln_ref_len - d.max(1.0).ln());
            }
            t
        }
        if u64::fits(words) {
            IdfTable::Narrow(fill(df, ln_ref_len))
        } else {
            IdfTable::Wide(fill(df, ln_ref_len))
        }
    }

    fn len(&self) -> usize {
        match self {
            IdfTable::Narrow(t) => t.len(),
            IdfTable::Wide(t) => t.len(),
        }
    }

    /// The weight of `g`, if it is in the table.
    #[inline]
    fn get(&self, g: &Ngram) -> Option<f64> {
        match self {
            IdfTable::Narrow(t) => t.get(u64::of(g)?),
            IdfTable::Wide(t) => t.get(u128::of(g)?),
        }
    }

    /// Reads the slots where the n-grams of `words` (orders 1..=4) would be, without
    /// branching on them, so that the reads that miss the cache overlap and the look-ups
    /// that follow find their lines loaded. Returns a value to keep the reads.
    #[inline]
    fn touch(&self, words: &[u32]) -> u64 {
        let IdfTable::Narrow(t) = self else {
            return 0;
        };
        if t.is_empty() {
            return 0;
        }
        let mut acc = 0u64;
        for i in 0..words.len() {
            let end = words.len().min(i + MAX_ORDER);
            let mut key = u64::unigram(words[i] & 0xFFFF);
            acc ^= t.key_at(t.home(key));
            for (n, &w) in words[i + 1..end].iter().enumerate() {
                key = key.extend(n + 1, w & 0xFFFF);
                acc ^= t.key_at(t.home(key));
            }
        }
        acc
    }
}

/// A fixed document-frequency table: n-gram counts and `ln(ref_len)`, read through an
/// [`IdfTable`] of the weights.
#[derive(Debug, Clone)]
pub struct DfCounts {
    words: Interner,
    idf: IdfTable,
    ln_ref_len: f64,
}

impl DfCounts {
    /// The table of a reference set (tokenized captions per image): an n-gram's count is the
    /// number of images with it in some reference; `ref_len` is the number of images.
    pub fn from_references(images: &[Vec<String>]) -> Result<DfCounts, RewardError> {
        if images.is_empty() {
            return Err(RewardError("the reference set has no image".into()));
        }
        let mut words = Interner::new();
        let ids: Vec<Vec<Vec<u32>>> = images
            .iter()
            .map(|refs| {
                refs.iter()
                    .map(|r| words.intern_all(split::py_whitespace(r)))
                    .collect()
            })
            .collect();
        let table = document_frequencies(ids.iter().map(Vec::as_slice));
        let df = table.iter().map(|(g, d)| (*g, f64::from(d))).collect();
        Ok(DfCounts::new(words, df, (images.len() as f64).ln()))
    }

    /// A table given as counts (self-critical.pytorch's pickle: `document_frequency` maps
    /// n-gram tuples of words to counts, `ref_len` is a count whose log is used).
    pub fn from_counts<'a>(
        counts: impl IntoIterator<Item = (Vec<&'a str>, f64)>,
        ref_len: f64,
    ) -> Result<DfCounts, RewardError> {
        if !(ref_len.is_finite() && ref_len > 0.0) {
            return Err(RewardError(format!(
                "ref_len must be a positive number, got {ref_len}"
            )));
        }
        let mut words = Interner::new();
        let mut df: FxHashMap<Ngram, f64> = FxHashMap::default();
        for (gram, count) in counts {
            if gram.is_empty() || gram.len() > MAX_ORDER {
                return Err(RewardError(format!(
                    "document_frequency: an n-gram of {} words (1 to {MAX_ORDER} expected)",
                    gram.len()
                )));
            }
            if !count.is_finite() {
                return Err(RewardError(format!(
                    "document_frequency: count {count} for {gram:?}"
                )));
            }
            let ids: Vec<u32> = gram.iter().map(|w| words.intern(w)).collect();
            df.insert(Ngram::new(&ids), count);
        }
        Ok(DfCounts::new(words, df, ref_len.ln()))
    }

    fn new(words: Interner, df: FxHashMap<Ngram, f64>, ln_ref_len: f64) -> DfCounts {
        let idf = IdfTable::new(words.len(), &df, ln_ref_len);
        DfCounts {
            words,
            idf,
            ln_ref_len,
        }
    }

    /// Number of n-grams in the table.
    pub fn len(&self) -> usize {
        self.idf.len()
    }

    /// True when the table has no n-gram.
    pub fn is_empty(&self) -> bool {
        self.idf.len() == 0
    }

    /// `ln(ref_len)`.
    pub fn ln_ref_len(&self) -> f64 {
        self.ln_ref_len
    }

    /// `ln(ref_len) - ln(max(1, df))`, df 0 for an n-gram not in the table.
    fn idf(&self, g: &Ngram) -> f64 {
        self.idf.get(g).unwrap_or(self.ln_ref_len - 1f64.ln())
    }
}

/// One image's prepared references: an id for each of their distinct n-grams (`0..idf.len()`)
/// with its CIDEr weight, and per reference its n-gram counts and tf-idf vectors.
#[derive(Debug, Clone)]
struct Image {
    ids: FxHashMap<Ngram, u32>,
    idf: Vec<f64>,
    grams: Vec<OwnedGrams>,
    vecs: Vec<SentenceVec>,
}

impl Image {
    fn new(table: &DfCounts, refs: &[Vec<u32>]) -> Image {
        std::hint::black_box(refs.iter().fold(0, |a, r| a ^ table.idf.touch(r)));
        let mut ids: FxHashMap<Ngram, u32> = FxHashMap::default();
        let mut idf: Vec<f64> = Vec::new();
        let grams: Vec<OwnedGrams> = refs
            .iter()
            .map(|r| {
                let mut g = OwnedGrams::empty();
                g.refill(r, |ngram| {
                    let next = idf.len() as u32;
                    let id = *ids.entry(*ngram).or_insert(next);
                    if id == next {
                        idf.push(table.idf(ngram));
                    }
                    (id, idf[id as usize])
                });
                g
            })
            .collect();
        let vecs = grams.iter().map(|g| SentenceVec::new(&g.view())).collect();
        Image {
            ids,
            idf,
            grams,
            vecs,
        }
    }
}

/// Reusable storage for scoring candidates (one per worker).
struct Scratch {
    words: Vec<u32>,
    text: String,
    cand: OwnedGrams,
    /// The candidate's n-grams that no reference of its image has, with their weights; a
    /// table once there are many.
    novel: Vec<(Ngram, f64)>,
    novel_ids: FxHashMap<Ngram, u32>,
    vec: SentenceVec,
    index: GramIndex,
    matches: Matches,
    wr: Vec<f64>,
    max_ref: Vec<u32>,
}

impl Scratch {
    fn new() -> Scratch {
        Scratch {
            words: Vec::new(),
            text: String::new(),
            cand: OwnedGrams::empty(),
            novel: Vec::new(),
            novel_ids: FxHashMap::default(),
            vec: SentenceVec::default(),
            index: GramIndex::default(),
            matches: Matches::default(),
            wr: Vec::new(),
            max_ref: Vec::new(),
        }
    }
}

/// Below this many candidates (or images to prepare) the work stays on the calling thread:
/// an SCST step's few hundred candidates take well under a millisecond, less than handing
/// them to the pool's threads and waking them up costs on a busy machine.
const PARALLEL_MIN: usize = 1024;

/// `f(i, scratch)` for `i` in `0..n`, in order: serially below [`PARALLEL_MIN`], otherwise on
/// the current rayon pool with one scratch per worker.
fn run<T: Send>(n: usize, f: impl Fn(usize, &mut Scratch) -> T + Sync + Send) -> Vec<T> {
    map_indexed(n, PARALLEL_MIN, Scratch::new, |s, i| f(i, s))
}

/// The scorer: a table and the prepared references of the images being trained on.
#[derive(Debug, Clone)]
pub struct RewardScorer {
    table: DfCounts,
    images: Vec<Image>,
}

/// One candidate's rewards.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reward {
    /// CIDEr-D.
    pub cider_d: f64,
    /// BLEU-4 (pycocoevalcap's per-image value), when asked for.
    pub bleu4: Option<f64>,
}

impl RewardScorer {
    /// A scorer with `table` and no references yet.
    pub fn new(table: DfCounts) -> RewardScorer {
        RewardScorer {
            table,
            images: Vec::new(),
        }
    }

    /// The table.
    pub fn table(&self) -> &DfCounts {
        &self.table
    }

    /// Prepares references (tokenized captions per image; image `k` is index `k` of the
    /// later calls), replacing the previous ones.
    pub fn set_references(&mut self, images: &[Vec<String>]) -> Result<(), RewardError> {
        if let Some(k) = images.iter().position(Vec::is_empty) {
            return Err(RewardError(format!("image index {k} has no reference")));
        }
        let ids: Vec<Vec<Vec<u32>>> = images
            .iter()
            .map(|refs| {
                refs.iter()
                    .map(|r| self.table.words.intern_all(split::py_whitespace(r)))
                    .collect()
            })
            .collect();
        let table = &self.table;
        self.images = if ids.len() < PARALLEL_MIN / 4 {
            ids.iter().map(|refs| Image::new(table, refs)).collect()
        } else {
            ids.par_iter().map(|refs| Image::new(table, refs)).collect()
        };
        Ok(())
    }

    /// Number of prepared images.
    pub fn image_count(&self) -> usize {
        self.images.len()
    }

    fn check(&self, image_index: &[usize], n: usize) -> Result<(), RewardError> {
        if image_index.len() != n {
            return Err(RewardError(format!(
                "{n} candidates but {} image indices",
                image_index.len()
            )));
        }
        if self.images.is_empty() {
            return Err(RewardError(
                "no references: call set_references first".into(),
            ));
        }
        if let Some(&k) = image_index.iter().find(|&&k| k >= self.images.len()) {
            return Err(RewardError(format!(
                "image index {k} out of range (0..{})",
                self.images.len()
            )));
        }
        Ok(())
    }

    /// The rewards of the candidate whose word ids are `s.words`, against image `image`.
    fn one(&self, image: usize, bleu4: bool, s: &mut Scratch) -> Reward {
        let img = &self.images[image];
        let base = img.idf.len() as u32;
        let table = &self.table;
        let (novel, novel_ids) = (&mut s.novel, &mut s.novel_ids);
        novel.clear();
        novel_ids.clear();
        std::hint::black_box(table.idf.touch(&s.words));
        s.cand.refill(&s.words, |g| {
            if let Some(&id) = img.ids.get(g) {
                return (id, img.idf[id as usize]);
            }
            let known = if novel.len() > 32 {
                novel_ids.get(g).map(|&k| k as usize)
            } else {
                novel.iter().position(|(h, _)| h == g)
            };
            if let Some(k) = known {
                return (base + k as u32, novel[k].1);
            }
            let w = table.idf(g);
            novel.push((*g, w));
            let k = novel.len() - 1;
            if novel.len() > 32 {
                if novel_ids.is_empty() {
                    novel_ids.extend(novel.iter().enumerate().map(|(k, (h, _))| (*h, k as u32)));
                } else {
                    novel_ids.insert(*g, k as u32);
                }
            }
            (base + k as u32, w)
        });
        let cand = s.cand.view();
        s.vec.fill(&cand);
        s.index.rebuild(cand.all().ids);
        s.matches
            .build(&s.index, img.grams.iter().map(|r| r.view().all().ids));
        let cider_d =
            cider::image_score_matched(Variant::CiderD, &s.vec, &img.vecs, &s.matches, &mut s.wr);
        let bleu4 = bleu4.then(|| {
            let refs: Vec<Grams<'_>> = img.grams.iter().map(OwnedGrams::view).collect();
            BleuStats::of_image_matched(&cand, &refs, &s.matches, &mut s.max_ref).scores()[3]
        });
        Reward { cider_d, bleu4 }
    }

    /// Rewards of tokenized candidate texts; candidate `i` belongs to image `image_index[i]`.
    /// On the current rayon pool (serially for a small batch); the result is in candidate
    /// order.
    pub fn score(
        &self,
        candidates: &[String],
        image_index: &[usize],
        bleu4: bool,
    ) -> Result<Vec<Reward>, RewardError> {
        self.check(image_index, candidates.len())?;
        Ok(run(candidates.len(), |i, s| {
            lookup(
                &self.table.words,
                split::py_whitespace(&candidates[i]),
                &mut s.words,
            );
            self.one(image_index[i], bleu4, s)
        }))
    }

    /// Rewards of token-id rows (`rows` x `width`, row-major). A row ends at its first
    /// `eos_id`, which is kept as a word (self-critical.pytorch's `array_to_str` writes the
    /// ids up to and including the first 0); a row without it is used whole. Each id is the
    /// word of its decimal text, as in that code's tables.
    pub fn score_ids(
        &self,
        ids: &[i64],
        width: usize,
        image_index: &[usize],
        eos_id: i64,
        bleu4: bool,
    ) -> Result<Vec<Reward>, RewardError> {
        let rows = ids.len().checked_div(width).unwrap_or(0);
        if rows * width != ids.len() {
            return Err(RewardError("the id array is not rectangular".into()));
        }
        self.check(image_index, rows)?;
        Ok(run(rows, |i, s| {
            use std::fmt::Write;
            let row = &ids[i * width..(i + 1) * width];
            let end = row
                .iter()
                .position(|&t| t == eos_id)
                .map_or(row.len(), |p| p + 1);
            s.text.clear();
            for t in &row[..end] {
                let _ = write!(s.text, "{t} ");
            }
            lookup(
                &self.table.words,
                split::py_whitespace(&s.text),
                &mut s.words,
            );
            self.one(image_index[i], bleu4, s)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::GramCounter;

    fn refs(v: &[&[&str]]) -> Vec<Vec<String>> {
        v.iter()
            .map(|r| r.iter().map(|s| s.to_string()).collect())
            .collect()
    }

    #[test]
    fn table_from_references_counts_images_once() {
        let t = DfCounts::from_references(&refs(&[&["a b a", "a c"], &["b"]])).unwrap();
        let a = t.words.get("a").unwrap();
        let b = t.words.get("b").unwrap();
        let ln2 = 2f64.ln();
        assert_eq!(t.idf(&Ngram::new(&[a])), ln2 - 1f64.ln());
        assert_eq!(t.idf(&Ngram::new(&[b])), ln2 - 2f64.ln());
        assert_eq!(t.idf(&Ngram::new(&[a, b, a])), ln2 - 1f64.ln());
        assert_eq!(t.idf(&Ngram::new(&[b, a])), ln2 - 1f64.ln());
        assert_eq!(t.idf(&Ngram::new(&[b, b])), ln2);
        assert_eq!(t.len(), 7);
        assert_eq!(t.ln_ref_len(), ln2);
    }

    #[test]
    fn ids_and_text_agree_and_eos_ends_a_row() {
        let images = refs(&[&["1 2 3 0", "1 2 4 0"], &["5 6 0"]]);
        let mut s = RewardScorer::new(DfCounts::from_references(&images).unwrap());
        s.set_references(&images).unwrap();
        let text = s
            .score(&["1 2 3 0".to_string(), "5 6 0".to_string()], &[0, 1], true)
            .unwrap();
        let ids = s
            .score_ids(&[1, 2, 3, 0, 9, 5, 6, 0, 0, 0], 5, &[0, 1], 0, true)
            .unwrap();
        assert_eq!(text, ids);
        assert!(text[0].cider_d > 0.0 && text[0].bleu4.is_some());
    }

    /// The straightforward computation: the references' n-grams and the candidate's counted
    /// by one `GramCounter`, every weight looked up in the table.
    fn plain_reward(table: &DfCounts, refs: &[String], cand: &str) -> (f64, f64) {
        let mut words = table.words.clone();
        let r: Vec<Vec<u32>> = refs
            .iter()
            .map(|r| words.intern_all(split::py_whitespace(r)))
            .collect();
        let mut counter = GramCounter::new();
        let rg: Vec<OwnedGrams> = r
            .iter()
            .map(|r| counter.count_weighted(r, |g| table.idf(g)))
            .collect();
        let rv: Vec<SentenceVec> = rg.iter().map(|g| SentenceVec::new(&g.view())).collect();
        let mut ids = Vec::new();
        lookup(&words, split::py_whitespace(cand), &mut ids);
        let cg = counter.count_weighted(&ids, |g| table.idf(g));
        let cider = cider::image_score(Variant::CiderD, &SentenceVec::new(&cg.view()), &rv);
        let views: Vec<Grams<'_>> = rg.iter().map(OwnedGrams::view).collect();
        (cider, BleuStats::of_image(&cg.view(), &views).scores()[3])
    }

    /// A generator of random sentences: `len` words `w0`, `w1`, ... from the first `vocab`.
    fn sentences(seed: u64) -> impl FnMut(u64, u64) -> String {
        let mut g = crate::engine::bootstrap::SplitMix::stream(seed, 0);
        move |len, vocab| {
            (0..len)
                .map(|_| format!("w{}", g.below(vocab)))
                .collect::<Vec<_>>()
                .join(" ")
        }
    }

    #[test]
    fn rewards_equal_the_plain_computation_serially_and_in_parallel() {
        let mut sentence = sentences(7);
        // The table from other images than the scored ones (so some reference n-grams are
        // missing from it), over a smaller vocabulary (so some words are unknown to it).
        let table_images: Vec<Vec<String>> = (0..30)
            .map(|_| (0..5).map(|_| sentence(9, 12)).collect())
            .collect();
        let images: Vec<Vec<String>> = (0..40)
            .map(|_| (0..5).map(|_| sentence(10, 16)).collect())
            .collect();
        let mut scorer = RewardScorer::new(DfCounts::from_references(&table_images).unwrap());
        scorer.set_references(&images).unwrap();
        for n in [300usize, PARALLEL_MIN + 200] {
            let cands: Vec<String> = (0..n)
                .map(|i| match i % 5 {
                    0 => sentence(70, 400), // many n-grams no reference has
                    1 => String::new(),
                    _ => sentence(3 + (i % 11) as u64, 18),
                })
                .collect();
            let index: Vec<usize> = (0..n).map(|i| (i * 7) % images.len()).collect();
            let got = scorer.score(&cands, &index, true).unwrap();
            for (i, r) in got.iter().enumerate() {
                let (c, b) = plain_reward(scorer.table(), &images[index[i]], &cands[i]);
                assert_eq!(r.cider_d.to_bits(), c.to_bits(), "cider {i}");
                assert_eq!(r.bleu4.unwrap().to_bits(), b.to_bits(), "bleu {i}");
            }
        }
    }

    #[test]
    fn packed_and_hashed_tables_give_the_same_weights() {
        let mut df: FxHashMap<Ngram, f64> = FxHashMap::default();
        for k in 0..5000u32 {
            df.insert(
                Ngram::new(&[k % 300, (k * 7) % 301, k % 5][..1 + (k % 3) as usize]),
                f64::from(k % 9),
            );
        }
        let ln = 42f64.ln();
        let packed = IdfTable::new(400, &df, ln);
        let hashed = IdfTable::new(0x1_0000, &df, ln);
        assert!(matches!(packed, IdfTable::Narrow(_)) && matches!(hashed, IdfTable::Wide(_)));
        for g in df.keys() {
            assert_eq!(
                packed.get(g).unwrap().to_bits(),
                hashed.get(g).unwrap().to_bits()
            );
        }
        for g in [
            Ngram::new(&[999]),
            Ngram::new(&[1, 2, 3, 4]),
            Ngram::new(&[70_000]),
        ] {
            assert_eq!(packed.get(&g), None);
            assert_eq!(hashed.get(&g), None);
        }
        assert_eq!(packed.len(), df.len());
    }

    /// With the scored images' own references as the table, SCST's rewards are pycocoevalcap's
    /// per-image CIDEr-D and BLEU-4 of those images: the engine's numbers, bit for bit.
    #[test]
    fn rewards_with_the_batch_table_are_the_engines_scores() {
        let mut sentence = sentences(29);
        for n in [1usize, 7, 300, PARALLEL_MIN + 100] {
            let images: Vec<Vec<String>> = (0..n)
                .map(|i| {
                    (0..1 + i % 5)
                        .map(|k| sentence([0, 2, 9, 30][(i + k) % 4], 25))
                        .collect()
                })
                .collect();
            let cands: Vec<String> = (0..n)
                .map(|i| sentence([0, 1, 5, 12, 70][i % 5], 30))
                .collect();
            let table = DfCounts::from_references(&images).unwrap();
            let mut scorer = RewardScorer::new(table);
            scorer.set_references(&images).unwrap();
            let index: Vec<usize> = (0..n).collect();
            let got = scorer.score(&cands, &index, true).unwrap();
            let mut caps = crate::pretokenized::Captions::new();
            for (c, r) in cands.iter().zip(&images) {
                caps.push(c, r.iter().map(String::as_str));
            }
            match crate::pretokenized::tests::engine_scores(&caps, true) {
                Ok((_, cider, bleu4)) => {
                    for (i, r) in got.iter().enumerate() {
                        assert_eq!(r.cider_d.to_bits(), cider[i].to_bits(), "{n}: cider {i}");
                        let b = r.bleu4.unwrap();
                        assert_eq!(b.to_bits(), bleu4[i].to_bits(), "{n}: bleu {i}");
                    }
                }
                // No reference word at all: CIDEr-D is undefined for the engine; every
                // reward weight is then 0.
                Err(code) => {
                    assert_eq!(code, "no_reference_ngrams");
                    assert!(got.iter().all(|r| r.cider_d == 0.0));
                }
            }
        }
    }

    #[test]
    fn bad_indices_are_errors() {
        let images = refs(&[&["a b"]]);
        let mut s = RewardScorer::new(DfCounts::from_references(&images).unwrap());
        assert!(s.score(&["a".into()], &[0], false).is_err());
        s.set_references(&images).unwrap();
        assert!(s.score(&["a".into()], &[1], false).is_err());
        assert!(s.score(&["a".into()], &[], false).is_err());
        assert!(DfCounts::from_counts([(vec![], 1.0)], 2.0).is_err());
        assert!(DfCounts::from_counts([(vec!["a"], 1.0)], 0.0).is_err());
    }
}
