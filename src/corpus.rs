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

// ---------------------------------------------------------------------------------------------
// Batch n-gram ids.
//
// Scoring a batch interns every word and every n-gram once, in parallel, then scores each image
// from compact id lists:
//
// 1. words: each chunk of images interns its captions' words into a chunk-local vocabulary (in
//    parallel); the local vocabularies are merged into the batch [`Interner`] chunk by chunk, in
//    order (serial, but only over each chunk's distinct words);
// 2. windows: each chunk lists every n-gram window (orders 1..=4) of its captions, keyed by
//    packed word ids, into [`PARTS`] hash partitions (in parallel);
// 3. n-gram ids: each partition interns its windows, reference windows first in image order
//    (counting document frequencies as it goes), then candidate windows (in parallel over the
//    partitions), and computes the CIDEr weight `ln(N) - ln(max(1, df))` of each of its n-grams.
//
// Chunking and partitioning are fixed (they do not depend on the number of threads), so the ids
// are deterministic; no output depends on them anyway (they are only compared for equality and
// used as sort keys for lookups). Document frequencies are integers.
// ---------------------------------------------------------------------------------------------

/// log2 of the number of hash partitions of the n-gram table.
const PART_BITS: u32 = 4;
/// Number of hash partitions of the n-gram table. An n-gram id is `local << PART_BITS | part`.
const PARTS: usize = 1 << PART_BITS;
/// Images per chunk (fixed, so that ids do not depend on the number of threads).
const CHUNK_IMAGES: usize = 64;

/// An n-gram key for batch interning: the packed word ids of the n-gram.
trait GramKey: Copy + Eq + std::hash::Hash + Send + Sync {
    /// True when every word id below `bound` can be packed.
    fn fits(bound: u32) -> bool;
    /// The key of `words` (1 to 4 ids, all below the bound).
    fn of(words: &[u32]) -> Self;
    /// The same n-gram as an [`Ngram`].
    fn ngram(self) -> Ngram;
    /// Hash partition, `0..PARTS` (independent of the table's own hash bits).
    fn part(self) -> usize;
}

/// Four 16-bit word ids, 0xFFFF in unused slots: the key when the vocabulary has fewer than
/// 65,535 words (any COCO-sized batch). Half the size of an [`Ngram`].
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Packed(u64);

impl GramKey for Packed {
    fn fits(bound: u32) -> bool {
        bound < 0xFFFF
    }
    #[inline]
    fn of(words: &[u32]) -> Packed {
        let mut k = u64::MAX;
        for (i, &w) in words.iter().enumerate() {
            k &= !(0xFFFF << (16 * i));
            k |= u64::from(w) << (16 * i);
        }
        Packed(k)
    }
    fn ngram(self) -> Ngram {
        let mut a = [Ngram::PAD; MAX_ORDER];
        for (i, slot) in a.iter_mut().enumerate() {
            let w = (self.0 >> (16 * i)) as u32 & 0xFFFF;
            if w != 0xFFFF {
                *slot = w;
            }
        }
        Ngram(a)
    }
    #[inline]
    fn part(self) -> usize {
        (self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - PART_BITS)) as usize
    }
}

impl GramKey for Ngram {
    fn fits(_: u32) -> bool {
        true
    }
    #[inline]
    fn of(words: &[u32]) -> Ngram {
        Ngram::new(words)
    }
    fn ngram(self) -> Ngram {
        self
    }
    #[inline]
    fn part(self) -> usize {
        let [a, b, c, d] = self.0;
        let lo = (u64::from(a) | u64::from(b) << 32).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let hi = (u64::from(c) | u64::from(d) << 32).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
        ((lo ^ hi) >> (64 - PART_BITS)) as usize
    }
}

/// One caption of a batch: its tokenized text and, when interned ahead of time (a registered
/// dataset's references), its word ids.
#[derive(Clone, Copy, Debug)]
pub struct Caption<'a> {
    /// The tokenized caption.
    pub text: &'a str,
    /// Its words (split as in spec COCO §3.4) as ids of the batch interner's base, if known.
    pub ids: Option<&'a [u32]>,
}

/// Python's `str.isspace()` restricted to ASCII.
#[inline]
fn is_ascii_py_whitespace(b: u8) -> bool {
    matches!(b, b'\t'..=b'\r' | 0x1C..=b' ')
}

/// Calls `f` on each word of `s` split as Python's `str.split()` splits (spec COCO §3.4).
#[inline]
fn for_each_word<'a>(s: &'a str, mut f: impl FnMut(&'a str)) {
    if s.is_ascii() {
        let b = s.as_bytes();
        let mut start = 0;
        for (i, &c) in b.iter().enumerate() {
            if is_ascii_py_whitespace(c) {
                if start < i {
                    f(&s[start..i]);
                }
                start = i + 1;
            }
        }
        if start < b.len() {
            f(&s[start..]);
        }
    } else {
        crate::text::split_py_whitespace(s).for_each(f);
    }
}

/// True when splitting `s` on U+0020 (ROUGE-L) gives the same words as [`for_each_word`]
/// (BLEU, CIDEr): then ROUGE-L reuses the interned words.
pub fn space_split_is_word_split(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || b[0] == b' ' || b[b.len() - 1] == b' ' || s.contains("  ") {
        return false;
    }
    if s.is_ascii() {
        !b.iter().any(|&c| c != b' ' && is_ascii_py_whitespace(c))
    } else {
        !s.contains(|c: char| c != ' ' && crate::text::is_py_whitespace(c))
    }
}

/// Number of n-gram windows (orders 1..=4) of a sentence of `len` words.
#[inline]
fn window_count(len: usize) -> usize {
    (1..=MAX_ORDER).map(|n| (len + 1).saturating_sub(n)).sum()
}

/// The interned words of a chunk of images.
struct WordChunk {
    /// Batch index of the chunk's first image.
    first_img: usize,
    /// Per image, chunk-local index of its first caption (the candidate; references follow);
    /// one more entry at the end.
    img_cap: Vec<u32>,
    /// Per caption, offset of its words in `words`; one more entry at the end.
    word_off: Vec<u32>,
    /// Word ids.
    words: Vec<u32>,
    /// ROUGE-L words of the captions for which [`space_split_is_word_split`] is false, by
    /// chunk-local caption index (ascending).
    rouge_words: Vec<(u32, Vec<u32>)>,
}

/// The words of every caption of a batch, interned: captions per image are the candidate then
/// the references. Built by [`BatchWords::build`].
pub struct BatchWords {
    chunks: Vec<WordChunk>,
    images: usize,
    /// Upper bound of the word ids used by n-grams.
    bound: u32,
}

/// Words of one chunk before the merge: chunk-local ids.
struct LocalWords<'a> {
    vocab: Vec<&'a str>,
    words: Vec<u32>,
    word_off: Vec<u32>,
    special: Vec<u32>,
}

impl BatchWords {
    /// Interns the words of every caption. `img_start[i]..img_start[i + 1]` are the captions of
    /// image `i` in `captions` (its candidate first). With `rouge`, the U+0020 split of the
    /// captions where it differs from the word split is interned too.
    pub fn build(
        interner: &mut Interner,
        captions: &[Caption<'_>],
        img_start: &[usize],
        rouge: bool,
    ) -> BatchWords {
        use rayon::prelude::*;
        let images = img_start.len().saturating_sub(1);
        let bounds: Vec<(usize, usize)> = (0..images)
            .step_by(CHUNK_IMAGES)
            .map(|a| (a, (a + CHUNK_IMAGES).min(images)))
            .collect();
        // 1. Chunk-local interning, in parallel.
        let locals: Vec<LocalWords<'_>> = bounds
            .par_iter()
            .map(|&(a, b)| {
                let caps = &captions[img_start[a]..img_start[b]];
                let mut map: FxHashMap<&str, u32> = FxHashMap::default();
                let mut lw = LocalWords {
                    vocab: Vec::new(),
                    words: Vec::new(),
                    word_off: Vec::with_capacity(caps.len() + 1),
                    special: Vec::new(),
                };
                for (k, c) in caps.iter().enumerate() {
                    lw.word_off.push(lw.words.len() as u32);
                    if c.ids.is_none() {
                        for_each_word(c.text, |w| {
                            let id = *map.entry(w).or_insert_with(|| {
                                lw.vocab.push(w);
                                (lw.vocab.len() - 1) as u32
                            });
                            lw.words.push(id);
                        });
                    }
                    if rouge && !space_split_is_word_split(c.text) {
                        lw.special.push(k as u32);
                    }
                }
                lw.word_off.push(lw.words.len() as u32);
                lw
            })
            .collect();
        // 2. Merge the local vocabularies, chunk by chunk (the ids are those of a serial pass).
        let maps: Vec<Vec<u32>> = locals
            .iter()
            .map(|l| l.vocab.iter().map(|w| interner.intern(w)).collect())
            .collect();
        let bound = interner.next;
        let rouge_words: Vec<Vec<(u32, Vec<u32>)>> = locals
            .iter()
            .zip(&bounds)
            .map(|(l, &(a, _))| {
                let base = img_start[a];
                l.special
                    .iter()
                    .map(|&k| {
                        let text = captions[base + k as usize].text;
                        (k, interner.intern_all(crate::text::split_space(text)))
                    })
                    .collect()
            })
            .collect();
        // 3. Global ids, in parallel.
        let chunks = locals
            .into_par_iter()
            .zip(maps)
            .zip(rouge_words)
            .zip(bounds)
            .map(|(((l, map), rouge_words), (a, b))| {
                let base = img_start[a];
                let caps = &captions[base..img_start[b]];
                let mut words = Vec::with_capacity(l.words.len());
                let mut word_off = Vec::with_capacity(caps.len() + 1);
                for (k, c) in caps.iter().enumerate() {
                    word_off.push(words.len() as u32);
                    match c.ids {
                        Some(ids) => words.extend_from_slice(ids),
                        None => words.extend(
                            l.words[l.word_off[k] as usize..l.word_off[k + 1] as usize]
                                .iter()
                                .map(|&w| map[w as usize]),
                        ),
                    }
                }
                word_off.push(words.len() as u32);
                WordChunk {
                    first_img: a,
                    img_cap: img_start[a..=b]
                        .iter()
                        .map(|&s| (s - base) as u32)
                        .collect(),
                    word_off,
                    words,
                    rouge_words,
                }
            })
            .collect::<Vec<_>>();
        let bound = chunks
            .iter()
            .flat_map(|c| c.words.iter())
            .fold(bound, |m, &w| m.max(w.saturating_add(1)));
        BatchWords {
            chunks,
            images,
            bound,
        }
    }

    /// True when some reference caption has at least one word.
    pub fn any_reference_word(&self) -> bool {
        self.chunks.iter().any(|ch| {
            (0..ch.img_cap.len() - 1).any(|j| {
                let (c0, c1) = (ch.img_cap[j] as usize, ch.img_cap[j + 1] as usize);
                ch.word_off[c0 + 1] < ch.word_off[c1]
            })
        })
    }

    /// Interns every n-gram (orders 1..=4) of every caption and computes their CIDEr weights
    /// `ln(N) - ln(max(1, df))`, with document frequencies from the batch's references
    /// ([`IdfSource::Batch`]) or from a table.
    pub fn grams(&self, idf: IdfSource<'_>) -> BatchGrams {
        if Packed::fits(self.bound) {
            self.grams_with::<Packed>(idf)
        } else {
            self.grams_with::<Ngram>(idf)
        }
    }

    fn grams_with<K: GramKey>(&self, idf: IdfSource<'_>) -> BatchGrams {
        use rayon::prelude::*;
        use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
        // Windows, in parallel over chunks: per chunk and partition, (key, window slot) of the
        // reference windows (image order) and of the candidate windows.
        struct Windows<K> {
            win_off: Vec<u32>,
            ids: Vec<AtomicU32>,
            refs: Vec<Vec<(K, u32)>>,
            cands: Vec<Vec<(K, u32)>>,
        }
        let windows: Vec<Windows<K>> = self
            .chunks
            .par_iter()
            .map(|ch| {
                let caps = ch.word_off.len() - 1;
                let mut win_off = Vec::with_capacity(caps + 1);
                let (mut total, mut cand_total) = (0usize, 0usize);
                let mut is_cand = ch.img_cap.iter().peekable();
                for k in 0..caps {
                    win_off.push(total as u32);
                    let count = window_count((ch.word_off[k + 1] - ch.word_off[k]) as usize);
                    if is_cand.next_if(|&&c| c as usize == k).is_some() {
                        cand_total += count;
                    }
                    total += count;
                }
                win_off.push(total as u32);
                // Room for an even spread over the partitions, plus a margin.
                let room = |t: usize| t / PARTS + t / (4 * PARTS) + 4;
                let mut refs: Vec<Vec<(K, u32)>> = (0..PARTS)
                    .map(|_| Vec::with_capacity(room(total - cand_total)))
                    .collect();
                let mut cands: Vec<Vec<(K, u32)>> = (0..PARTS)
                    .map(|_| Vec::with_capacity(room(cand_total)))
                    .collect();
                let mut is_cand = ch.img_cap.iter().peekable();
                for (k, &start) in win_off[..caps].iter().enumerate() {
                    let cand = is_cand.next_if(|&&c| c as usize == k).is_some();
                    let w = &ch.words[ch.word_off[k] as usize..ch.word_off[k + 1] as usize];
                    let out = if cand { &mut cands } else { &mut refs };
                    let mut slot = start;
                    for n in 1..=MAX_ORDER {
                        for win in w.windows(n) {
                            let key = K::of(win);
                            out[key.part()].push((key, slot));
                            slot += 1;
                        }
                    }
                }
                Windows {
                    win_off,
                    ids: (0..total).map(|_| AtomicU32::new(0)).collect(),
                    refs,
                    cands,
                }
            })
            .collect();
        let (ref_len, ln): (f64, Vec<f64>) = match idf {
            IdfSource::Batch => {
                let n = self.images;
                (
                    (n as f64).ln(),
                    (0..=n).map(|d| (d.max(1) as f64).ln()).collect(),
                )
            }
            IdfSource::Table(t) => ((t.doc_count() as f64).ln(), Vec::new()),
        };
        // Ids and weights, in parallel over partitions.
        let idf_parts: Vec<Vec<f64>> = (0..PARTS)
            .into_par_iter()
            .map(|p| {
                let total: usize = windows.iter().map(|w| w.refs[p].len()).sum();
                let mut map: FxHashMap<K, u32> = FxHashMap::default();
                map.reserve(total / 2);
                let mut df: Vec<u32> = Vec::with_capacity(total / 2);
                let mut last: Vec<u32> = Vec::with_capacity(total / 2);
                let gid = |local: usize| -> u32 {
                    u32::try_from(local << PART_BITS | p).expect("fewer than 2^32 n-grams")
                };
                for (ch, w) in self.chunks.iter().zip(&windows) {
                    // Image j's reference windows end where image j + 1's candidate starts.
                    let mut j = 0usize;
                    let mut end = w.win_off[ch.img_cap[1] as usize];
                    for &(key, slot) in &w.refs[p] {
                        while slot >= end {
                            j += 1;
                            end = w.win_off[ch.img_cap[j + 1] as usize];
                        }
                        let img = (ch.first_img + j) as u32;
                        let id = *map.entry(key).or_insert_with(|| {
                            df.push(0);
                            last.push(u32::MAX);
                            (df.len() - 1) as u32
                        }) as usize;
                        if last[id] != img {
                            last[id] = img;
                            df[id] += 1;
                        }
                        w.ids[slot as usize].store(gid(id), Relaxed);
                    }
                }
                drop(last);
                for w in &windows {
                    for &(key, slot) in &w.cands[p] {
                        let id = *map.entry(key).or_insert_with(|| {
                            df.push(0);
                            (df.len() - 1) as u32
                        }) as usize;
                        w.ids[slot as usize].store(gid(id), Relaxed);
                    }
                }
                match idf {
                    IdfSource::Batch => df.iter().map(|&d| ref_len - ln[d as usize]).collect(),
                    IdfSource::Table(t) => {
                        let mut out = vec![0.0; df.len()];
                        for (key, &id) in &map {
                            out[id as usize] = ref_len - t.ln_df(&key.ngram());
                        }
                        out
                    }
                }
            })
            .collect();
        // The window lists are dropped here, chunk by chunk.
        let (win_off, win_ids): (Vec<Vec<u32>>, Vec<Vec<u32>>) = windows
            .into_iter()
            .map(|w| {
                let ids: Vec<u32> = w.ids.into_iter().map(AtomicU32::into_inner).collect();
                (w.win_off, ids)
            })
            .unzip();
        BatchGrams {
            win_ids,
            win_off,
            idf: idf_parts,
        }
    }

    /// Number of chunks (see [`BatchWords::chunk_images`]).
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// The batch indices of the images of chunk `c`.
    pub fn chunk_images(&self, c: usize) -> std::ops::Range<usize> {
        let ch = &self.chunks[c];
        ch.first_img..ch.first_img + ch.img_cap.len() - 1
    }

    /// Chunk-local caption indices of image `i` of chunk `c` (its candidate first).
    fn captions(&self, c: usize, j: usize) -> std::ops::Range<usize> {
        let ch = &self.chunks[c];
        ch.img_cap[j] as usize..ch.img_cap[j + 1] as usize
    }

    /// The words (BLEU/CIDEr split) of caption `k` of chunk `c`.
    fn words(&self, c: usize, k: usize) -> &[u32] {
        let ch = &self.chunks[c];
        &ch.words[ch.word_off[k] as usize..ch.word_off[k + 1] as usize]
    }

    /// The ROUGE-L words (U+0020 split) of caption `k` of chunk `c` (requires `rouge` at build).
    fn rouge_words(&self, c: usize, k: usize) -> &[u32] {
        let ch = &self.chunks[c];
        match ch.rouge_words.binary_search_by_key(&(k as u32), |e| e.0) {
            Ok(i) => &ch.rouge_words[i].1,
            Err(_) => self.words(c, k),
        }
    }

    /// The words of the candidate (index 0) and references (1..) of image `j` of chunk `c`,
    /// for BLEU/CIDEr (`rouge` false) or ROUGE-L (`rouge` true).
    pub fn image_words(&self, c: usize, j: usize, rouge: bool) -> impl Iterator<Item = &[u32]> {
        self.captions(c, j).map(move |k| {
            if rouge {
                self.rouge_words(c, k)
            } else {
                self.words(c, k)
            }
        })
    }
}

/// Where the CIDEr document frequencies of a batch come from.
#[derive(Clone, Copy)]
pub enum IdfSource<'a> {
    /// The batch's own references: `N` is the number of images.
    Batch,
    /// A table (a registered dataset's).
    Table(&'a dyn DocFreq),
}

/// The n-gram ids of every caption of a batch and their CIDEr weights (see
/// [`BatchWords::grams`]).
pub struct BatchGrams {
    /// Per chunk: n-gram id of each window (per caption, orders 1..=4, order-major).
    win_ids: Vec<Vec<u32>>,
    /// Per chunk: window offset of each caption; one more entry at the end.
    win_off: Vec<Vec<u32>>,
    /// Per partition, per local id: `ln(N) - ln(max(1, df))`.
    idf: Vec<Vec<f64>>,
}

impl BatchGrams {
    /// `ln(N) - ln(max(1, df))` of n-gram `id`.
    #[inline]
    pub fn idf(&self, id: u32) -> f64 {
        self.idf[id as usize & (PARTS - 1)][(id >> PART_BITS) as usize]
    }

    /// Appends the distinct n-grams of caption `k` of chunk `c` (of `words` words) with their
    /// counts to `buf`, and returns their span in `buf`.
    fn push_caption(&self, c: usize, k: usize, words: usize, buf: &mut Vec<(u32, u32)>) -> Span {
        let start = self.win_off[c][k] as usize;
        let ids = &self.win_ids[c][start..self.win_off[c][k + 1] as usize];
        let begin = buf.len() as u32;
        let mut ends = [0u32; MAX_ORDER];
        let mut at = 0usize;
        for (n, end) in ends.iter_mut().enumerate() {
            let len = (words + 1).saturating_sub(n + 1);
            push_id_counts(&ids[at..at + len], buf);
            at += len;
            *end = buf.len() as u32;
        }
        Span {
            begin,
            ends,
            words: words as u32,
        }
    }

    /// The n-gram counts of the candidate (index 0) and references (1..) of image `j` of chunk
    /// `c`, built in `buf` (cleared first).
    pub fn image<'b>(
        &self,
        words: &BatchWords,
        c: usize,
        j: usize,
        buf: &'b mut GramBuf,
    ) -> Vec<Grams<'b>> {
        buf.grams.clear();
        buf.spans.clear();
        for k in words.captions(c, j) {
            let len = words.words(c, k).len();
            let span = self.push_caption(c, k, len, &mut buf.grams);
            buf.spans.push(span);
        }
        let grams = &buf.grams;
        buf.spans.iter().map(|s| s.view(grams)).collect()
    }
}

/// A caption's span in a [`GramBuf`].
#[derive(Clone, Copy)]
struct Span {
    begin: u32,
    ends: [u32; MAX_ORDER],
    words: u32,
}

impl Span {
    fn view<'b>(&self, grams: &'b [(u32, u32)]) -> Grams<'b> {
        let b = self.begin as usize;
        Grams {
            grams: &grams[b..self.ends[MAX_ORDER - 1] as usize],
            ends: self.ends.map(|e| e - self.begin),
            words: self.words,
        }
    }
}

/// Reusable storage for [`BatchGrams::image`].
#[derive(Default)]
pub struct GramBuf {
    grams: Vec<(u32, u32)>,
    spans: Vec<Span>,
}

/// Appends the distinct ids of `ids` with their counts to `out`, in first-occurrence order.
fn push_id_counts(ids: &[u32], out: &mut Vec<(u32, u32)>) {
    let start = out.len();
    if ids.len() <= 48 {
        // Short sentences (nearly all captions): a linear scan beats hashing.
        for &g in ids {
            match out[start..].iter_mut().find(|(h, _)| *h == g) {
                Some((_, c)) => *c += 1,
                None => out.push((g, 1)),
            }
        }
    } else {
        let mut index: FxHashMap<u32, usize> = FxHashMap::default();
        for &g in ids {
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

/// The n-grams (orders 1..=4) of one sentence as ids with their counts, each order in
/// first-occurrence order (the order pycocoevalcap's dictionaries iterate in; it fixes float
/// summation order, spec COCO §6). Equal ids are equal n-grams.
#[derive(Clone, Copy, Debug)]
pub struct Grams<'a> {
    grams: &'a [(u32, u32)],
    ends: [u32; MAX_ORDER],
    words: u32,
}

impl<'a> Grams<'a> {
    /// The distinct n-grams of order `n` (1..=4) with counts, in first-occurrence order.
    #[inline]
    pub fn order(&self, n: usize) -> &'a [(u32, u32)] {
        let start = if n == 1 { 0 } else { self.ends[n - 2] as usize };
        &self.grams[start..self.ends[n - 1] as usize]
    }

    /// Every distinct n-gram of every order.
    pub fn all(&self) -> &'a [(u32, u32)] {
        self.grams
    }

    /// Number of words of the sentence.
    pub fn word_count(&self) -> usize {
        self.words as usize
    }
}

/// Owned n-gram id counts of sentences, for tests and small callers: n-grams get ids from a
/// shared table, so sentences counted by the same `GramCounter` compare.
#[derive(Debug, Default)]
pub struct GramCounter {
    ids: FxHashMap<Ngram, u32>,
}

/// Owned [`Grams`].
#[derive(Debug, Clone)]
pub struct OwnedGrams {
    grams: Vec<(u32, u32)>,
    ends: [u32; MAX_ORDER],
    words: u32,
}

impl OwnedGrams {
    /// The borrowed view.
    pub fn view(&self) -> Grams<'_> {
        Grams {
            grams: &self.grams,
            ends: self.ends,
            words: self.words,
        }
    }
}

impl GramCounter {
    /// A counter with no n-grams yet.
    pub fn new() -> GramCounter {
        GramCounter::default()
    }

    /// The id of n-gram `g` (assigned on first use).
    pub fn id(&mut self, g: Ngram) -> u32 {
        let next = self.ids.len() as u32;
        *self.ids.entry(g).or_insert(next)
    }

    /// Counts the n-grams of `words`.
    pub fn count(&mut self, words: &[u32]) -> OwnedGrams {
        let mut grams = Vec::new();
        let mut ends = [0u32; MAX_ORDER];
        for n in 1..=MAX_ORDER {
            let ids: Vec<u32> = words.windows(n).map(|w| self.id(Ngram::new(w))).collect();
            push_id_counts(&ids, &mut grams);
            ends[n - 1] = grams.len() as u32;
        }
        OwnedGrams {
            grams,
            ends,
            words: words.len() as u32,
        }
    }

    /// The id of `g` if it was seen.
    pub fn get(&self, g: &Ngram) -> Option<u32> {
        self.ids.get(g).copied()
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
