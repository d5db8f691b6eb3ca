//! Word interning, n-gram counting and document-frequency tables.
//!
//! Every n-gram metric works on interned word ids: a tokenized caption is split into words
//! (spec COCO §3.4) and each word is mapped to a `u32`. N-grams of order 1..=4 are packed into
//! [`Ngram`] (unused slots hold [`Ngram::PAD`]), so they hash and compare cheaply.
//!
//! Document frequency (CIDEr) is read through the [`DocFreq`] trait so that the batch's own
//! references (pycocoevalcap's behaviour) and a cached per-dataset table are interchangeable.

use std::sync::Arc;

use rustc_hash::FxHashMap;

/// Highest n-gram order any metric here uses.
pub const MAX_ORDER: usize = 4;

/// A word n-gram of order 1..=4 over interned word ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ngram(pub [u32; MAX_ORDER]);

impl Ngram {
    /// Filler for the unused slots of a lower-order n-gram; never a word id.
    pub const PAD: u32 = u32::MAX;

    /// The n-gram `words` (1 to 4 ids).
    pub fn new(words: &[u32]) -> Ngram {
        let mut a = [Ngram::PAD; MAX_ORDER];
        a[..words.len()].copy_from_slice(words);
        Ngram(a)
    }

    /// Order of the n-gram (number of words).
    pub fn order(&self) -> usize {
        self.0.iter().take_while(|&&w| w != Ngram::PAD).count()
    }
}

/// The distinct n-grams of one order in a sentence with their counts, in order of first
/// occurrence (the order pycocoevalcap's dictionaries iterate in; it fixes float summation
/// order, spec COCO §6).
pub type NgramCounts = Vec<(Ngram, u32)>;

/// Counts the n-grams of order `n` in `words`, in first-occurrence order.
pub fn count_ngrams(words: &[u32], n: usize) -> NgramCounts {
    let mut out = Vec::new();
    push_ngram_counts(words, n, &mut out);
    out
}

/// Appends the distinct n-grams of order `n` of `words` with their counts to `out`, in
/// first-occurrence order.
fn push_ngram_counts(words: &[u32], n: usize, out: &mut NgramCounts) {
    let start = out.len();
    let total = words.len().saturating_sub(n - 1);
    if total <= 48 {
        // Short sentences (nearly all captions): a linear scan beats hashing.
        for win in words.windows(n) {
            let g = Ngram::new(win);
            match out[start..].iter_mut().find(|(h, _)| *h == g) {
                Some((_, c)) => *c += 1,
                None => out.push((g, 1)),
            }
        }
    } else {
        let mut index: FxHashMap<Ngram, usize> = FxHashMap::default();
        for win in words.windows(n) {
            let g = Ngram::new(win);
            match index.get(&g) {
                Some(&i) => out[i].1 += 1,
                None => {
                    index.insert(g, out.len());
                    out.push((g, 1));
                }
            }
        }
    }
}

/// All n-grams of orders 1..=4 of one sentence, each order in first-occurrence order, with
/// their counts. Computed once per caption and shared by BLEU, the document-frequency table and
/// CIDEr.
#[derive(Debug, Clone, Default)]
pub struct SentenceNgrams {
    grams: Vec<(Ngram, u32)>,
    ends: [u32; MAX_ORDER],
    words: u32,
}

impl SentenceNgrams {
    /// Counts the n-grams of `words`.
    pub fn new(words: &[u32]) -> SentenceNgrams {
        let mut grams = Vec::with_capacity(words.len() * MAX_ORDER);
        let mut ends = [0u32; MAX_ORDER];
        for n in 1..=MAX_ORDER {
            push_ngram_counts(words, n, &mut grams);
            ends[n - 1] = grams.len() as u32;
        }
        SentenceNgrams {
            grams,
            ends,
            words: words.len() as u32,
        }
    }

    /// The distinct n-grams of order `n` (1..=4) with counts, in first-occurrence order.
    pub fn order(&self, n: usize) -> &[(Ngram, u32)] {
        let start = if n == 1 { 0 } else { self.ends[n - 2] as usize };
        &self.grams[start..self.ends[n - 1] as usize]
    }

    /// Every distinct n-gram of every order.
    pub fn all(&self) -> &[(Ngram, u32)] {
        &self.grams
    }

    /// Number of words of the sentence.
    pub fn word_count(&self) -> usize {
        self.words as usize
    }
}

/// Maps words to ids. It can extend a frozen base vocabulary (a registered dataset's), so that
/// ids of a batch agree with the ids of the cached tables built from that vocabulary.
#[derive(Debug, Default, Clone)]
pub struct Interner {
    base: Option<Arc<Vocab>>,
    local: FxHashMap<String, u32>,
    next: u32,
}

/// A frozen word -> id table.
#[derive(Debug, Default, Clone)]
pub struct Vocab {
    map: FxHashMap<String, u32>,
}

impl Vocab {
    /// Number of words.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when the vocabulary is empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The id of `word`, if known.
    pub fn get(&self, word: &str) -> Option<u32> {
        self.map.get(word).copied()
    }
}

impl Interner {
    /// An empty interner.
    pub fn new() -> Interner {
        Interner::default()
    }

    /// An interner whose first ids are those of `base`; new words get ids after them.
    pub fn with_base(base: Arc<Vocab>) -> Interner {
        let next = u32::try_from(base.len()).unwrap_or(u32::MAX - 1);
        Interner {
            base: Some(base),
            local: FxHashMap::default(),
            next,
        }
    }

    /// The id of `word`, assigning a new one when needed.
    pub fn intern(&mut self, word: &str) -> u32 {
        if let Some(id) = self.base.as_ref().and_then(|b| b.get(word)) {
            return id;
        }
        if let Some(&id) = self.local.get(word) {
            return id;
        }
        let id = self.next;
        // Ids never reach PAD: 4 billion distinct words do not fit in any request limit.
        self.next = self.next.saturating_add(1).min(Ngram::PAD - 1);
        self.local.insert(word.to_owned(), id);
        id
    }

    /// Interns every word of `words`.
    pub fn intern_all<'a>(&mut self, words: impl Iterator<Item = &'a str>) -> Vec<u32> {
        words.map(|w| self.intern(w)).collect()
    }

    /// Freezes the words interned so far (base and local) into a vocabulary.
    pub fn into_vocab(self) -> Vocab {
        let mut map = self.base.map(|b| b.map.clone()).unwrap_or_default();
        map.extend(self.local);
        Vocab { map }
    }
}

/// Document frequencies of reference n-grams, as CIDEr uses them.
pub trait DocFreq: Sync {
    /// Number of documents (images) the table was built from: CIDEr's `N`.
    fn doc_count(&self) -> usize;
    /// Number of documents whose references contain `g` (0 when unseen).
    fn df(&self, g: &Ngram) -> u32;
    /// `ln(max(1, df(g)))`, as CIDEr weights use it (implementations may cache the logarithms).
    fn ln_df(&self, g: &Ngram) -> f64 {
        f64::from(self.df(g).max(1)).ln()
    }
    /// Number of distinct n-grams in the table.
    fn len(&self) -> usize;
    /// True when no reference n-gram was seen.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A document-frequency table built from the references of a set of images.
#[derive(Debug, Default, Clone)]
pub struct DfTable {
    docs: usize,
    /// n-gram -> (df, bookkeeping used while building)
    table: FxHashMap<Ngram, (u32, u32)>,
    /// `ln[d] = ln(max(1, d))` for every d up to the largest df: glibc's `ln`, computed once.
    ln: Vec<f64>,
}

impl DfTable {
    /// Builds the table from each image's references, counting every n-gram of order 1..=4
    /// once per image in which some reference contains it.
    pub fn build<'a, I, R>(images: I) -> DfTable
    where
        I: IntoIterator<Item = R>,
        R: IntoIterator<Item = &'a SentenceNgrams>,
    {
        let images: Vec<R> = images.into_iter().collect();
        let docs = images.len();
        // value: (df, index of the last image that counted the n-gram)
        let mut table: FxHashMap<Ngram, (u32, u32)> = FxHashMap::default();
        for (img, refs) in images.into_iter().enumerate() {
            let img = img as u32;
            for s in refs {
                if table.capacity() == 0 {
                    // Typical corpora have ~2 distinct n-grams per reference n-gram per image.
                    table.reserve(docs.saturating_mul(s.all().len() * 2).min(1 << 24));
                }
                for (g, _) in s.all() {
                    let e = table.entry(*g).or_insert((0, u32::MAX));
                    if e.1 != img {
                        e.0 += 1;
                        e.1 = img;
                    }
                }
            }
        }
        let max = table.values().map(|e| e.0).max().unwrap_or(0) as usize;
        let ln = (0..=max).map(|d| (d.max(1) as f64).ln()).collect();
        DfTable { docs, table, ln }
    }
}

impl DocFreq for DfTable {
    fn doc_count(&self) -> usize {
        self.docs
    }
    fn df(&self, g: &Ngram) -> u32 {
        self.table.get(g).map_or(0, |e| e.0)
    }
    fn ln_df(&self, g: &Ngram) -> f64 {
        self.table.get(g).map_or(0.0, |e| self.ln[e.0 as usize])
    }
    fn len(&self) -> usize {
        self.table.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ngram_counts_keep_first_occurrence_order() {
        let words = [1, 2, 1, 2, 3];
        let uni = count_ngrams(&words, 1);
        assert_eq!(
            uni,
            vec![
                (Ngram::new(&[1]), 2),
                (Ngram::new(&[2]), 2),
                (Ngram::new(&[3]), 1)
            ]
        );
        let bi = count_ngrams(&words, 2);
        assert_eq!(bi[0], (Ngram::new(&[1, 2]), 2));
        assert_eq!(bi.len(), 3);
        assert!(count_ngrams(&words, 4).len() == 2 && count_ngrams(&[1], 2).is_empty());
    }

    #[test]
    fn long_sentences_use_the_hash_path_with_the_same_result() {
        let words: Vec<u32> = (0..200).map(|i| i % 7).collect();
        let fast = count_ngrams(&words, 2);
        let mut slow: NgramCounts = Vec::new();
        for w in words.windows(2) {
            let g = Ngram::new(w);
            match slow.iter_mut().find(|(h, _)| *h == g) {
                Some((_, c)) => *c += 1,
                None => slow.push((g, 1)),
            }
        }
        assert_eq!(fast, slow);
    }

    #[test]
    fn df_counts_each_image_once() {
        let a: Vec<Vec<u32>> = vec![vec![1, 2], vec![1, 2, 1]];
        let b: Vec<Vec<u32>> = vec![vec![2]];
        let a: Vec<SentenceNgrams> = a.iter().map(|v| SentenceNgrams::new(v)).collect();
        let b: Vec<SentenceNgrams> = b.iter().map(|v| SentenceNgrams::new(v)).collect();
        let t = DfTable::build([a.iter(), b.iter()]);
        assert_eq!(t.ln_df(&Ngram::new(&[2])), 2f64.ln());
        assert_eq!(t.ln_df(&Ngram::new(&[1])), 0.0);
        assert_eq!(t.doc_count(), 2);
        assert_eq!(t.df(&Ngram::new(&[1])), 1);
        assert_eq!(t.df(&Ngram::new(&[2])), 2);
        assert_eq!(t.df(&Ngram::new(&[1, 2])), 1);
        assert_eq!(t.df(&Ngram::new(&[9])), 0);
    }

    #[test]
    fn interner_extends_a_base_vocabulary() {
        let mut i = Interner::new();
        assert_eq!(i.intern("a"), 0);
        assert_eq!(i.intern("b"), 1);
        let base = Arc::new(i.into_vocab());
        let mut j = Interner::with_base(base);
        assert_eq!(j.intern("b"), 1);
        assert_eq!(j.intern("c"), 2);
        assert_eq!(j.intern("c"), 2);
    }
}
