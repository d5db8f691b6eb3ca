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
//    order (serial, but only over each chunk's distinct words); then each chunk maps its words
//    to batch ids and lists its n-gram windows of orders 2..=4, keyed by packed word ids, into
//    [`PARTS`] hash partitions (in parallel);
// 2. n-gram ids: each partition interns its windows, reference windows first in image order
//    (counting document frequencies as it goes), then candidate windows, and computes the CIDEr
//    weight `ln(N) - ln(max(1, df))` of each of its n-grams (in parallel over the partitions).
//    Unigrams need no table: their id is an offset plus the word id, and their document
//    frequencies are counted in an array indexed by word.
//
// Chunking and partitioning are fixed (they do not depend on the number of threads), so the ids
// are deterministic; no output depends on them anyway (they are only compared for equality and
// used as sort keys for lookups). Document frequencies are integers.
// ---------------------------------------------------------------------------------------------

/// log2 of the number of hash partitions of the n-gram table (orders 2..=4).
const PART_BITS: u32 = 4;
/// Number of hash partitions of the n-gram table.
const PARTS: usize = 1 << PART_BITS;
/// The "partition" of unigrams (whose local id is the word id).
const UNIGRAMS: usize = PARTS;
/// Images per chunk (fixed, so that ids do not depend on the number of threads).
const CHUNK_IMAGES: usize = 64;
/// A window's place in its partition's list takes the low `POS_BITS` bits of its location.
const POS_BITS: u32 = 32 - PART_BITS;

/// An n-gram key for batch interning: the packed word ids of the n-gram.
trait GramKey: Copy + Eq + std::hash::Hash + Send + Sync {
    /// True when every word id below `bound` can be packed.
    fn fits(bound: u32) -> bool;
    /// The key of the unigram `w`.
    fn unigram(w: u32) -> Self;
    /// This key (of order `n`) extended with word `w` (order `n + 1`).
    fn extend(self, n: usize, w: u32) -> Self;
    /// The same n-gram as an [`Ngram`].
    fn ngram(self) -> Ngram;
    /// Hash partition, `0..PARTS`.
    fn part(self) -> usize;
    /// A key no n-gram of order 2..=4 has (every slot unused).
    const EMPTY: Self;
    /// An n-gram id and its document frequency, stored in a key's place once it is interned.
    fn pack(id: u32, df: u32) -> Self;
    /// `id << 32 | df` of a value made by [`GramKey::pack`].
    fn packed(self) -> u64;
    /// Slot in a table of `2^(64 - shift)` slots (independent of [`GramKey::part`]).
    fn slot(self, shift: u32) -> usize;
}

/// An n-gram key -> local id table (open addressing, linear probing, at most half full) for
/// one partition: the entries sit next to their keys, so a lookup touches one cache line.
struct GramTable<K> {
    slots: Vec<(K, u32)>,
    len: usize,
    shift: u32,
}

impl<K: GramKey> GramTable<K> {
    fn new() -> GramTable<K> {
        GramTable {
            slots: Vec::new(),
            len: 0,
            shift: 64,
        }
    }

    /// Empties the table, with room for about `n` keys (the storage is reused).
    fn reset(&mut self, n: usize) {
        let size = (n * 2).next_power_of_two().max(64);
        self.slots.clear();
        self.slots.resize(size, (K::EMPTY, 0));
        self.len = 0;
        self.shift = 64 - size.trailing_zeros();
    }

    /// The id of `key`; a new key gets `new()`.
    #[inline]
    fn get_or_insert(&mut self, key: K, new: impl FnOnce() -> u32) -> u32 {
        let mask = self.slots.len() - 1;
        let mut s = key.slot(self.shift);
        loop {
            let (k, id) = self.slots[s];
            if k == key {
                return id;
            }
            if k == K::EMPTY {
                if (self.len + 1) * 2 > self.slots.len() {
                    self.grow();
                    return self.get_or_insert(key, new);
                }
                let id = new();
                self.slots[s] = (key, id);
                self.len += 1;
                return id;
            }
            s = (s + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let old = std::mem::take(&mut self.slots);
        let size = old.len() * 2;
        self.slots = vec![(K::EMPTY, 0); size];
        self.shift = 64 - size.trailing_zeros();
        let mask = size - 1;
        for (k, id) in old.into_iter().filter(|e| e.0 != K::EMPTY) {
            let mut s = k.slot(self.shift);
            while self.slots[s].0 != K::EMPTY {
                s = (s + 1) & mask;
            }
            self.slots[s] = (k, id);
        }
    }

    /// Every (key, id).
    fn iter(&self) -> impl Iterator<Item = (K, u32)> + '_ {
        self.slots.iter().copied().filter(|e| e.0 != K::EMPTY)
    }
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
    fn unigram(w: u32) -> Packed {
        Packed(!0xFFFF | u64::from(w))
    }
    #[inline]
    fn extend(self, n: usize, w: u32) -> Packed {
        Packed(self.0 ^ ((0xFFFF ^ u64::from(w)) << (16 * n)))
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
    const EMPTY: Packed = Packed(u64::MAX);
    #[inline]
    fn pack(id: u32, df: u32) -> Packed {
        Packed(u64::from(id) << 32 | u64::from(df))
    }
    #[inline]
    fn packed(self) -> u64 {
        self.0
    }
    #[inline]
    fn slot(self, shift: u32) -> usize {
        // The partition bits are the top bits of another product: drop them from this one.
        (self.0.wrapping_mul(0xD6E8_FEB8_6659_FD93) >> shift) as usize
    }
}

impl GramKey for Ngram {
    fn fits(_: u32) -> bool {
        true
    }
    #[inline]
    fn unigram(w: u32) -> Ngram {
        Ngram::new(&[w])
    }
    #[inline]
    fn extend(mut self, n: usize, w: u32) -> Ngram {
        self.0[n] = w;
        self
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
    const EMPTY: Ngram = Ngram([Ngram::PAD; MAX_ORDER]);
    #[inline]
    fn pack(id: u32, df: u32) -> Ngram {
        Ngram([id, df, 0, 0])
    }
    #[inline]
    fn packed(self) -> u64 {
        u64::from(self.0[0]) << 32 | u64::from(self.0[1])
    }
    #[inline]
    fn slot(self, shift: u32) -> usize {
        let [a, b, c, d] = self.0;
        let lo = (u64::from(a) | u64::from(b) << 32).wrapping_mul(0xD6E8_FEB8_6659_FD93);
        let hi = (u64::from(c) | u64::from(d) << 32).wrapping_mul(0xA076_1D64_78BD_642F);
        ((lo ^ hi) >> shift) as usize
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

/// Calls `f` on each word of `s` split as Python's `str.split()` splits (spec COCO §3.4), with
/// the word's first 8 bytes (see [`word_prefix`]), and returns
/// [`space_split_is_word_split`]`(s)`.
#[inline]
fn split_words<'a>(s: &'a str, mut f: impl FnMut(&'a str, u64)) -> bool {
    if !s.is_ascii() {
        crate::text::split_py_whitespace(s).for_each(|w| f(w, word_prefix(w.as_bytes())));
        return space_split_is_word_split(s);
    }
    let b = s.as_bytes();
    let mut start = 0;
    let mut prefix = 0u64;
    // Same split on U+0020: every separator is one U+0020 between two words.
    let mut same = true;
    for (i, &c) in b.iter().enumerate() {
        if is_ascii_py_whitespace(c) {
            same &= c == b' ' && start < i;
            if start < i {
                f(&s[start..i], prefix);
            }
            start = i + 1;
            prefix = 0;
        } else if i - start < 8 {
            prefix |= u64::from(c) << (8 * (i - start));
        }
    }
    if start < b.len() {
        f(&s[start..], prefix);
    }
    same && start < b.len()
}

/// The first 8 bytes of a word, little-endian, zero-padded.
fn word_prefix(w: &[u8]) -> u64 {
    let mut buf = [0u8; 8];
    let n = w.len().min(8);
    buf[..n].copy_from_slice(&w[..n]);
    u64::from_le_bytes(buf)
}

/// The slot of a word in an open-addressing table of `2^(64 - shift)` slots, from its first 8
/// bytes (`prefix`, little-endian, zero-padded) and its length.
#[inline]
pub(crate) fn word_slot(prefix: u64, len: u32, shift: u32) -> usize {
    (prefix
        .wrapping_add(u64::from(len))
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        >> shift) as usize
}

/// A chunk's word -> local id table: open addressing on (first 8 bytes, length), so that
/// short words (nearly all) compare without touching their text.
pub(crate) struct LocalVocab<'a> {
    /// (prefix, length, id); length `u32::MAX` marks an empty slot.
    slots: Vec<(u64, u32, u32)>,
    words: Vec<&'a str>,
    shift: u32,
}

impl<'a> LocalVocab<'a> {
    const EMPTY: u32 = u32::MAX;

    /// An empty table.
    pub(crate) fn new() -> LocalVocab<'a> {
        LocalVocab {
            slots: vec![(0, LocalVocab::EMPTY, 0); 1024],
            words: Vec::new(),
            shift: 64 - 10,
        }
    }

    #[inline]
    fn slot(&self, prefix: u64, len: u32) -> usize {
        word_slot(prefix, len, self.shift)
    }

    /// The local id of `w` (whose first 8 bytes are `prefix`), assigned on first use.
    #[inline]
    pub(crate) fn id(&mut self, w: &'a str, prefix: u64) -> u32 {
        let len = u32::try_from(w.len()).unwrap_or(LocalVocab::EMPTY - 1);
        let mask = self.slots.len() - 1;
        let mut s = self.slot(prefix, len);
        loop {
            let (p, l, id) = self.slots[s];
            if l == LocalVocab::EMPTY {
                if (self.words.len() + 1) * 2 > self.slots.len() {
                    self.grow();
                    return self.id(w, prefix);
                }
                let id = self.words.len() as u32;
                self.words.push(w);
                self.slots[s] = (prefix, len, id);
                return id;
            }
            if p == prefix && l == len && (len <= 8 || self.words[id as usize] == w) {
                return id;
            }
            s = (s + 1) & mask;
        }
    }

    /// The words, by id.
    pub(crate) fn words(&self) -> &[&'a str] {
        &self.words
    }

    fn grow(&mut self) {
        let size = self.slots.len() * 2;
        let old = std::mem::replace(&mut self.slots, vec![(0, LocalVocab::EMPTY, 0); size]);
        self.shift -= 1;
        for e in old.into_iter().filter(|e| e.1 != LocalVocab::EMPTY) {
            let mut s = self.slot(e.0, e.1);
            while self.slots[s].1 != LocalVocab::EMPTY {
                s = (s + 1) & (size - 1);
            }
            self.slots[s] = e;
        }
    }
}

/// True when splitting `s` on U+0020 (ROUGE-L) gives the same words as splitting it on
/// whitespace (BLEU, CIDEr): then ROUGE-L reuses the interned words.
pub fn space_split_is_word_split(s: &str) -> bool {
    !s.is_empty()
        && !s.contains(|c: char| c != ' ' && crate::text::is_py_whitespace(c))
        && !s.starts_with(' ')
        && !s.ends_with(' ')
        && !s.contains("  ")
}

/// Number of n-gram windows of orders 2..=4 of a sentence of `len` words.
#[inline]
fn window_count(len: usize) -> usize {
    (2..=MAX_ORDER).map(|n| (len + 1).saturating_sub(n)).sum()
}

/// The interned words and n-gram windows of a chunk of images.
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
    /// ROUGE-L words of the captions whose U+0020 split differs from their word split, by
    /// chunk-local caption index (ascending).
    rouge_words: Vec<(u32, Vec<u32>)>,
    /// For each n-gram window of orders 2..=4 (captions in turn, each order-major), where its
    /// n-gram is: `partition << POS_BITS | position` in `win_data` of its side. Empty when
    /// n-grams were not requested.
    win_loc: Vec<u32>,
    /// Per side (references, candidates) and partition: `id << 32 | df` of the windows, in
    /// window order.
    win_data: [Vec<Vec<u64>>; 2],
}

impl WordChunk {
    fn images(&self) -> usize {
        self.img_cap.len() - 1
    }

    fn words(&self, k: usize) -> &[u32] {
        &self.words[self.word_off[k] as usize..self.word_off[k + 1] as usize]
    }
}

/// The words (and, on request, the n-grams) of every caption of a batch, interned: the
/// captions of an image are its candidate then its references.
pub struct BatchWords {
    chunks: Vec<WordChunk>,
    /// Per word: the CIDEr weight `ln(N) - ln(max(1, df))` of its unigram.
    uni_idf: Vec<f64>,
    /// Per document frequency d: `ln(N) - ln(max(1, d))`, the weight of the other n-grams.
    idf_by_df: Vec<f64>,
    /// The id of unigram `w` is `uni_base + w`.
    uni_base: u32,
}

/// Words of one chunk before the merge: chunk-local ids.
struct LocalWords<'a> {
    vocab: Vec<&'a str>,
    words: Vec<u32>,
    word_off: Vec<u32>,
    /// Captions whose U+0020 split differs from their word split.
    special: Vec<u32>,
    /// One more than the largest pre-interned id.
    bound: u32,
}

/// Where the CIDEr document frequencies of a batch come from.
#[derive(Clone, Copy)]
pub enum IdfSource<'a> {
    /// The batch's own references: `N` is the number of images.
    Batch,
    /// A table (a registered dataset's).
    Table(&'a dyn DocFreq),
}

impl BatchWords {
    /// Interns the words of every caption. `img_start[i]..img_start[i + 1]` are the captions of
    /// image `i` in `captions` (its candidate first). With `rouge`, the U+0020 split of the
    /// captions where it differs from the word split is interned too. With `grams`, every
    /// n-gram (orders 1..=4) is interned as well and gets its CIDEr weight
    /// `ln(N) - ln(max(1, df))`, with document frequencies from the given source.
    pub fn build(
        interner: &mut Interner,
        captions: &[Caption<'_>],
        img_start: &[usize],
        rouge: bool,
        grams: Option<IdfSource<'_>>,
    ) -> BatchWords {
        use rayon::prelude::*;
        let images = img_start.len().saturating_sub(1);
        let bounds: Vec<(usize, usize)> = (0..images)
            .step_by(CHUNK_IMAGES)
            .map(|a| (a, (a + CHUNK_IMAGES).min(images)))
            .collect();
        // Chunk-local interning, in parallel.
        let locals: Vec<LocalWords<'_>> = bounds
            .par_iter()
            .map(|&(a, b)| {
                let caps = &captions[img_start[a]..img_start[b]];
                let mut vocab = LocalVocab::new();
                let mut lw = LocalWords {
                    vocab: Vec::new(),
                    words: Vec::new(),
                    word_off: Vec::with_capacity(caps.len() + 1),
                    special: Vec::new(),
                    bound: 0,
                };
                for (k, c) in caps.iter().enumerate() {
                    lw.word_off.push(lw.words.len() as u32);
                    let same = match c.ids {
                        None => split_words(c.text, |w, prefix| {
                            lw.words.push(vocab.id(w, prefix));
                        }),
                        Some(ids) => {
                            let max = ids.iter().max().map_or(0, |&m| m.saturating_add(1));
                            lw.bound = lw.bound.max(max);
                            !rouge || space_split_is_word_split(c.text)
                        }
                    };
                    if rouge && !same {
                        lw.special.push(k as u32);
                    }
                }
                lw.vocab = vocab.words;
                lw.word_off.push(lw.words.len() as u32);
                lw
            })
            .collect();
        // Merge the local vocabularies, chunk by chunk (the ids are those of a serial pass).
        let maps: Vec<Vec<u32>> = locals
            .iter()
            .map(|l| l.vocab.iter().map(|w| interner.intern(w)).collect())
            .collect();
        let bound = locals.iter().fold(interner.next, |m, l| m.max(l.bound));
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
        let parts = Parts {
            captions,
            img_start,
            bounds: &bounds,
        };
        match grams {
            Some(idf) if Packed::fits(bound) => {
                parts.finish::<Packed>(locals, maps, rouge_words, Some((idf, bound)))
            }
            Some(idf) => parts.finish::<Ngram>(locals, maps, rouge_words, Some((idf, bound))),
            None => parts.finish::<Packed>(locals, maps, rouge_words, None),
        }
    }

    /// True when some reference caption has at least one word.
    pub fn any_reference_word(&self) -> bool {
        self.chunks.iter().any(|ch| {
            (0..ch.images()).any(|j| {
                let (c0, c1) = (ch.img_cap[j] as usize, ch.img_cap[j + 1] as usize);
                ch.word_off[c0 + 1] < ch.word_off[c1]
            })
        })
    }

    /// Number of chunks (see [`BatchWords::chunk_images`]).
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Number of images of chunk `c` (the batch indices of its images follow those of the
    /// chunks before it).
    pub fn chunk_images(&self, c: usize) -> usize {
        self.chunks[c].images()
    }

    /// The ROUGE-L words (U+0020 split; requires `rouge` at build) of the candidate (first)
    /// and references of image `j` of chunk `c`.
    pub fn rouge_words(&self, c: usize, j: usize) -> impl Iterator<Item = &[u32]> {
        let ch = &self.chunks[c];
        (ch.img_cap[j] as usize..ch.img_cap[j + 1] as usize).map(move |k| {
            match ch.rouge_words.binary_search_by_key(&(k as u32), |e| e.0) {
                Ok(i) => &ch.rouge_words[i].1[..],
                Err(_) => ch.words(k),
            }
        })
    }

    /// Reads the n-gram counts of the images of chunk `c`, in order (requires `grams` at
    /// build).
    pub fn chunk_grams(&self, c: usize) -> ChunkGrams<'_> {
        ChunkGrams {
            ch: &self.chunks[c],
            uni_idf: &self.uni_idf,
            idf_by_df: &self.idf_by_df,
            uni_base: self.uni_base,
            j: 0,
            win: 0,
        }
    }
}

/// Reads the n-gram counts of the images of a chunk, in order.
pub struct ChunkGrams<'w> {
    ch: &'w WordChunk,
    uni_idf: &'w [f64],
    idf_by_df: &'w [f64],
    uni_base: u32,
    j: usize,
    win: usize,
}

impl ChunkGrams<'_> {
    /// The n-gram counts of the next image: its candidate (index 0) and references (1..),
    /// built in `buf`.
    pub fn next_image<'b>(&mut self, buf: &'b mut GramBuf) -> Vec<Grams<'b>> {
        let ch = self.ch;
        let j = self.j;
        self.j += 1;
        let caps = ch.img_cap[j] as usize..ch.img_cap[j + 1] as usize;
        // Room for every word and window being distinct; written by index, then viewed.
        let room: usize = caps
            .clone()
            .map(|k| {
                let len = ch.words(k).len();
                len + window_count(len)
            })
            .sum();
        if buf.ids.len() < room {
            buf.ids.resize(room, 0);
            buf.counts.resize(room, 0);
            buf.idfs.resize(room, 0.0);
        }
        let (ids, counts, idfs) = (&mut buf.ids[..], &mut buf.counts[..], &mut buf.idfs[..]);
        buf.spans.clear();
        let mut n = 0usize;
        for k in caps {
            let side = 1 - usize::from(k != ch.img_cap[j] as usize);
            let (data, idf_by_df) = (&ch.win_data[side], self.idf_by_df);
            let words = ch.words(k);
            let begin = n;
            let mut ends = [0u32; MAX_ORDER];
            let (uni_base, uni_idf) = (self.uni_base, self.uni_idf);
            n = count_into(
                words.iter().map(|&w| (uni_base + w, uni_idf[w as usize])),
                words.len(),
                (ids, counts, idfs),
                n,
            );
            ends[0] = n as u32;
            for order in 2..=MAX_ORDER {
                let len = (words.len() + 1).saturating_sub(order);
                let locs = &ch.win_loc[self.win..self.win + len];
                self.win += len;
                let windows = locs.iter().map(|&l| {
                    let v = data[(l >> POS_BITS) as usize][(l & ((1 << POS_BITS) - 1)) as usize];
                    ((v >> 32) as u32, idf_by_df[v as u32 as usize])
                });
                n = count_into(windows, len, (ids, counts, idfs), n);
                ends[order - 1] = n as u32;
            }
            buf.spans.push((begin as u32, ends, words.len() as u32));
        }
        let (ids, counts, idfs) = (&buf.ids, &buf.counts, &buf.idfs);
        buf.spans
            .iter()
            .map(|&(b, ends, words)| {
                let (b, e) = (b as usize, ends[MAX_ORDER - 1] as usize);
                Grams {
                    ids: &ids[b..e],
                    counts: &counts[b..e],
                    idfs: &idfs[b..e],
                    ends: ends.map(|x| x - b as u32),
                    words,
                }
            })
            .collect()
    }
}

/// Writes the distinct ids of `items` (`len` of them, each with its weight) from position `n`
/// of the columns, with their counts, in first-occurrence order (a repeat keeps the weight of
/// the first occurrence). Returns the new end.
#[inline]
pub(crate) fn count_into(
    items: impl Iterator<Item = (u32, f64)>,
    len: usize,
    (ids, counts, idfs): (&mut [u32], &mut [u32], &mut [f64]),
    mut n: usize,
) -> usize {
    let start = n;
    if len <= 64 {
        // A 64-bit Bloom filter of the ids seen so far settles most items (repeats are rare)
        // without a scan.
        let mut bloom = 0u64;
        for (g, w) in items {
            let bit = 1u64 << (g.wrapping_mul(0x9E37_79B1) >> 26);
            if bloom & bit != 0 {
                if let Some(k) = ids[start..n].iter().position(|&h| h == g) {
                    counts[start + k] += 1;
                    continue;
                }
            }
            bloom |= bit;
            ids[n] = g;
            counts[n] = 1;
            idfs[n] = w;
            n += 1;
        }
    } else {
        let mut index: FxHashMap<u32, usize> = FxHashMap::default();
        for (g, w) in items {
            match index.get(&g) {
                Some(&k) => counts[k] += 1,
                None => {
                    index.insert(g, n);
                    ids[n] = g;
                    counts[n] = 1;
                    idfs[n] = w;
                    n += 1;
                }
            }
        }
    }
    n
}

/// The inputs of [`BatchWords::build`] after the merge.
struct Parts<'p, 'a> {
    captions: &'p [Caption<'a>],
    img_start: &'p [usize],
    bounds: &'p [(usize, usize)],
}

impl Parts<'_, '_> {
    /// Batch word ids, n-gram windows and n-gram ids.
    fn finish<K: GramKey>(
        &self,
        locals: Vec<LocalWords<'_>>,
        maps: Vec<Vec<u32>>,
        rouge_words: Vec<Vec<(u32, Vec<u32>)>>,
        grams: Option<(IdfSource<'_>, u32)>,
    ) -> BatchWords {
        use rayon::prelude::*;
        // Batch word ids and the n-gram windows by partition, in parallel over chunks.
        let with_grams = grams.is_some();
        let (chunks, windows): (Vec<WordChunk>, Vec<ChunkWindows<K>>) = locals
            .into_par_iter()
            .zip(maps)
            .zip(rouge_words)
            .zip(self.bounds)
            .map(|(((l, map), rouge_words), &(a, b))| {
                let base = self.img_start[a];
                let caps = &self.captions[base..self.img_start[b]];
                let img_cap: Vec<u32> = self.img_start[a..=b]
                    .iter()
                    .map(|&s| (s - base) as u32)
                    .collect();
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
                let mut ch = WordChunk {
                    first_img: a,
                    img_cap,
                    word_off,
                    words,
                    rouge_words,
                    win_loc: Vec::new(),
                    win_data: [Vec::new(), Vec::new()],
                };
                let windows = if with_grams {
                    windows::<K>(&mut ch)
                } else {
                    ChunkWindows {
                        refs: Vec::new(),
                        cands: Vec::new(),
                        ref_end: Vec::new(),
                    }
                };
                (ch, windows)
            })
            .unzip();
        let Some((idf, bound)) = grams else {
            return BatchWords {
                chunks,
                uni_idf: Vec::new(),
                idf_by_df: Vec::new(),
                uni_base: 0,
            };
        };
        let images = self.img_start.len() - 1;
        let (ref_len, ln): (f64, Vec<f64>) = match idf {
            IdfSource::Batch => (
                (images as f64).ln(),
                (0..=images).map(|d| (d.max(1) as f64).ln()).collect(),
            ),
            IdfSource::Table(t) => ((t.doc_count() as f64).ln(), Vec::new()),
        };
        // N-gram ids: partition p numbers its n-grams from `base[p]` (room for as many as it
        // has windows), unigrams are `base[UNIGRAMS] + word`.
        let room: Vec<usize> = (0..PARTS)
            .map(|p| {
                windows
                    .iter()
                    .map(|w| w.refs[p].len() + w.cands[p].len())
                    .sum()
            })
            .chain(std::iter::once(bound as usize))
            .collect();
        let total: usize = room.iter().sum();
        assert!(total < u32::MAX as usize, "fewer than 2^32 n-grams");
        let bases: Vec<u32> = room
            .iter()
            .scan(0usize, |acc, &r| {
                let b = *acc;
                *acc += r;
                Some(b as u32)
            })
            .collect();
        let uni_base = bases[UNIGRAMS];
        // Each partition interns its windows in place: a window's key becomes its id and,
        // once all references are counted, its document frequency (`GramKey::pack`).
        type SideKeys<K> = [Vec<Vec<K>>; 2];
        let (mut keys, ref_ends): (Vec<SideKeys<K>>, Vec<Vec<[u32; PARTS]>>) = windows
            .into_iter()
            .map(|w| ([w.refs, w.cands], w.ref_end))
            .unzip();
        let mut lists: Vec<Vec<[&mut Vec<K>; 2]>> =
            (0..PARTS).map(|_| Vec::with_capacity(keys.len())).collect();
        for [refs, cands] in keys.iter_mut() {
            for ((r, c), list) in refs.iter_mut().zip(cands.iter_mut()).zip(&mut lists) {
                list.push([r, c]);
            }
        }
        let (uni_idf, max_df) = rayon::join(
            || unigram_idf(&chunks, bound, idf, ref_len, &ln),
            || {
                lists
                    .into_par_iter()
                    .enumerate()
                    .map_init(
                        || (GramTable::<K>::new(), Vec::new(), Vec::new()),
                        |(map, df, last), (p, mut list)| {
                            let base = bases[p];
                            // About half the windows are distinct n-grams (the table grows if
                            // need be); the storage is reused from partition to partition.
                            map.reset(room[p] * 9 / 16);
                            df.clear();
                            last.clear();
                            for ((ch, ends), [refs, _]) in
                                chunks.iter().zip(&ref_ends).zip(list.iter_mut())
                            {
                                let mut at = 0usize;
                                for (j, e) in ends.iter().enumerate() {
                                    let img = (ch.first_img + j) as u32;
                                    let end = e[p] as usize;
                                    for slot in refs[at..end].iter_mut() {
                                        let id = map.get_or_insert(*slot, || {
                                            df.push(0);
                                            last.push(u32::MAX);
                                            base + (df.len() - 1) as u32
                                        });
                                        let i = (id - base) as usize;
                                        if last[i] != img {
                                            last[i] = img;
                                            df[i] += 1;
                                        }
                                        *slot = K::pack(id, 0);
                                    }
                                    at = end;
                                }
                            }
                            for [_, cands] in list.iter_mut() {
                                for slot in cands.iter_mut() {
                                    let id = map.get_or_insert(*slot, || {
                                        df.push(0);
                                        base + (df.len() - 1) as u32
                                    });
                                    *slot = K::pack(id, 0);
                                }
                            }
                            if let IdfSource::Table(t) = idf {
                                // The table's frequencies (0 when absent), as its `ln_df` uses.
                                for (key, id) in map.iter() {
                                    df[(id - base) as usize] = t.df(&key.ngram());
                                }
                            }
                            for side in list.iter_mut() {
                                for slot in side.iter_mut().flat_map(|v| v.iter_mut()) {
                                    let id = (slot.packed() >> 32) as u32;
                                    *slot = K::pack(id, df[(id - base) as usize]);
                                }
                            }
                            df.iter().copied().max().unwrap_or(0)
                        },
                    )
                    .max()
                    .unwrap_or(0)
            },
        );
        // `ln(N) - ln(max(1, d))`, with `ln` computed as the batch table does (the dataset
        // table computes its `ln_df` the same way).
        let idf_by_df: Vec<f64> = (0..=max_df as usize)
            .map(|d| match idf {
                IdfSource::Batch => ref_len - ln[d],
                IdfSource::Table(_) => ref_len - (d.max(1) as f64).ln(),
            })
            .collect();
        let mut chunks = chunks;
        chunks
            .par_iter_mut()
            .zip(keys.into_par_iter())
            .for_each(|(ch, sides)| {
                ch.win_data = sides.map(|parts| {
                    parts
                        .into_iter()
                        .map(|v| v.into_iter().map(K::packed).collect())
                        .collect()
                });
            });
        BatchWords {
            chunks,
            uni_idf,
            idf_by_df,
            uni_base,
        }
    }
}

/// A chunk's n-gram windows (orders 2..=4) by partition.
struct ChunkWindows<K> {
    /// Per partition, the keys of the reference windows, in window order.
    refs: Vec<Vec<K>>,
    /// Per partition, the keys of the candidate windows, in window order.
    cands: Vec<Vec<K>>,
    /// Per image, where its reference windows end in each partition.
    ref_end: Vec<[u32; PARTS]>,
}

/// Lists the windows (orders 2..=4) of a chunk's captions by partition, and records where
/// each window's id will be in the chunk's columns (`win_loc`).
fn windows<K: GramKey>(ch: &mut WordChunk) -> ChunkWindows<K> {
    let caps = ch.word_off.len() - 1;
    let (mut total, mut cand_total) = (0usize, 0usize);
    let mut is_cand = ch.img_cap.iter().peekable();
    for k in 0..caps {
        let count = window_count((ch.word_off[k + 1] - ch.word_off[k]) as usize);
        if is_cand.next_if(|&&c| c as usize == k).is_some() {
            cand_total += count;
        }
        total += count;
    }
    // Room for an even spread over the partitions, plus a margin.
    let room = |t: usize| t / PARTS + t / (4 * PARTS) + 4;
    let mut w = ChunkWindows {
        refs: (0..PARTS)
            .map(|_| Vec::with_capacity(room(total - cand_total)))
            .collect(),
        cands: (0..PARTS)
            .map(|_| Vec::with_capacity(room(cand_total)))
            .collect(),
        ref_end: Vec::with_capacity(ch.images()),
    };
    // Per window: its partition and its place in that partition's list.
    let mut win_loc: Vec<u32> = Vec::with_capacity(total);
    let mut keys: Vec<K> = Vec::new();
    for j in 0..ch.images() {
        let first = ch.img_cap[j] as usize;
        for k in first..ch.img_cap[j + 1] as usize {
            let out = if k == first {
                &mut w.cands
            } else {
                &mut w.refs
            };
            let words = ch.words(k);
            // keys[i]: the window of the current order starting at word i.
            keys.clear();
            keys.extend(words.iter().map(|&x| K::unigram(x)));
            for n in 1..MAX_ORDER {
                for i in 0..words.len().saturating_sub(n) {
                    let key = keys[i].extend(n, words[i + n]);
                    keys[i] = key;
                    let p = key.part();
                    win_loc.push((p as u32) << POS_BITS | out[p].len() as u32);
                    out[p].push(key);
                }
            }
        }
        let mut ends = [0u32; PARTS];
        for (e, r) in ends.iter_mut().zip(&w.refs) {
            *e = r.len() as u32;
        }
        w.ref_end.push(ends);
    }
    assert!(
        w.refs
            .iter()
            .chain(&w.cands)
            .all(|l| l.len() < 1 << POS_BITS),
        "fewer than 2^28 windows per partition in a chunk"
    );
    ch.win_loc = win_loc;
    w
}

/// CIDEr weights of the unigrams, indexed by word id (`bound` words).
fn unigram_idf(
    chunks: &[WordChunk],
    bound: u32,
    idf: IdfSource<'_>,
    ref_len: f64,
    ln: &[f64],
) -> Vec<f64> {
    let bound = bound as usize;
    let mut out = vec![0.0; bound];
    match idf {
        IdfSource::Batch => {
            let mut df = vec![0u32; bound];
            let mut last = vec![u32::MAX; bound];
            for ch in chunks {
                for j in 0..ch.images() {
                    let img = (ch.first_img + j) as u32;
                    for k in ch.img_cap[j] as usize + 1..ch.img_cap[j + 1] as usize {
                        for &w in ch.words(k) {
                            let w = w as usize;
                            if last[w] != img {
                                last[w] = img;
                                df[w] += 1;
                            }
                        }
                    }
                }
            }
            for (o, &d) in out.iter_mut().zip(&df) {
                *o = ref_len - ln[d as usize];
            }
            out
        }
        IdfSource::Table(t) => {
            let mut done = vec![false; bound];
            for ch in chunks {
                for &w in &ch.words {
                    if !std::mem::replace(&mut done[w as usize], true) {
                        out[w as usize] = ref_len - t.ln_df(&Ngram::new(&[w]));
                    }
                }
            }
            out
        }
    }
}

/// Reusable storage for [`ChunkGrams::next_image`].
#[derive(Default)]
pub struct GramBuf {
    ids: Vec<u32>,
    counts: Vec<u32>,
    idfs: Vec<f64>,
    spans: Vec<(u32, [u32; MAX_ORDER], u32)>,
}

/// Appends the distinct ids of `ids` to `out_ids` with their counts to `out_counts`, in
/// first-occurrence order, and for each the `weight` of its first occurrence (the index of the
/// occurrence in `ids`) to `out_weights`.
fn push_id_counts(
    ids: &[u32],
    weight: impl Fn(usize) -> f64,
    out_ids: &mut Vec<u32>,
    out_counts: &mut Vec<u32>,
    out_weights: &mut Vec<f64>,
) {
    let start = out_ids.len();
    out_ids.resize(start + ids.len(), 0);
    out_counts.resize(start + ids.len(), 0);
    out_weights.resize(start + ids.len(), 0.0);
    let items = ids.iter().enumerate().map(|(i, &g)| (g, weight(i)));
    let end = count_into(
        items,
        ids.len(),
        (&mut out_ids[..], &mut out_counts[..], &mut out_weights[..]),
        start,
    );
    out_ids.truncate(end);
    out_counts.truncate(end);
    out_weights.truncate(end);
}

/// Positions of distinct n-gram ids: a small open-addressing table, so that a candidate's
/// n-grams are matched against a reference's in one pass over the reference.
#[derive(Debug, Default)]
pub struct GramIndex {
    keys: Vec<u32>,
    pos: Vec<u32>,
    shift: u32,
    len: usize,
}

impl GramIndex {
    /// No n-gram id is `u32::MAX` (a batch has fewer than `u32::MAX` ids).
    const EMPTY: u32 = u32::MAX;

    /// Indexes `ids` (distinct) by position.
    pub fn new(ids: &[u32]) -> GramIndex {
        let mut index = GramIndex::default();
        index.rebuild(ids);
        index
    }

    /// Indexes `ids` (distinct) by position, reusing the storage.
    pub fn rebuild(&mut self, ids: &[u32]) {
        let size = (ids.len() * 2).next_power_of_two().max(16);
        self.keys.clear();
        self.keys.resize(size, GramIndex::EMPTY);
        self.pos.resize(size, 0);
        self.shift = 64 - size.trailing_zeros();
        for (i, &g) in ids.iter().enumerate() {
            let mut s = self.slot(g);
            while self.keys[s] != GramIndex::EMPTY {
                s = (s + 1) & (size - 1);
            }
            self.keys[s] = g;
            self.pos[s] = i as u32;
        }
        self.len = ids.len();
    }

    /// Number of indexed ids.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn slot(&self, g: u32) -> usize {
        (u64::from(g).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// The position of `g`, if indexed.
    #[inline]
    pub fn get(&self, g: u32) -> Option<usize> {
        if self.keys.is_empty() {
            return None;
        }
        let mask = self.keys.len() - 1;
        let mut s = self.slot(g);
        loop {
            let k = self.keys[s];
            if k == g {
                return Some(self.pos[s] as usize);
            }
            if k == GramIndex::EMPTY {
                return None;
            }
            s = (s + 1) & mask;
        }
    }
}

/// The n-grams a candidate shares with each of its references: for reference r, the pairs
/// (position in the candidate's n-grams, position in the reference's n-grams), in the
/// reference's order. Found once per image, used by BLEU and CIDEr.
#[derive(Debug, Default)]
pub struct Matches {
    pairs: Vec<(u32, u32)>,
    ends: Vec<u32>,
}

impl Matches {
    /// The matches of each reference (its n-gram ids, all orders) against the candidate
    /// whose n-gram ids `index` holds.
    pub fn build<'r>(&mut self, index: &GramIndex, refs: impl Iterator<Item = &'r [u32]>) {
        self.build_by(|g| index.get(g), refs);
    }

    /// [`Matches::build`] with the candidate's position of each n-gram id given by `pos`.
    #[inline]
    pub fn build_by<'r>(
        &mut self,
        pos: impl Fn(u32) -> Option<usize>,
        refs: impl Iterator<Item = &'r [u32]>,
    ) {
        self.pairs.clear();
        self.ends.clear();
        for ids in refs {
            for (k, &g) in ids.iter().enumerate() {
                if let Some(i) = pos(g) {
                    self.pairs.push((i as u32, k as u32));
                }
            }
            self.ends.push(self.pairs.len() as u32);
        }
    }

    /// The pairs of reference `r`.
    #[inline]
    pub fn of(&self, r: usize) -> &[(u32, u32)] {
        let start = if r == 0 { 0 } else { self.ends[r - 1] as usize };
        &self.pairs[start..self.ends[r] as usize]
    }
}

/// The n-grams (orders 1..=4) of one sentence as ids with their counts, each order in
/// first-occurrence order (the order pycocoevalcap's dictionaries iterate in; it fixes float
/// summation order, spec COCO §6). Equal ids are equal n-grams.
#[derive(Clone, Copy, Debug)]
pub struct Grams<'a> {
    ids: &'a [u32],
    counts: &'a [u32],
    idfs: &'a [f64],
    ends: [u32; MAX_ORDER],
    words: u32,
}

/// The distinct n-grams of one order of a sentence, with their counts.
#[derive(Clone, Copy, Debug)]
pub struct GramList<'a> {
    /// N-gram ids (distinct), first-occurrence order.
    pub ids: &'a [u32],
    /// Their counts.
    pub counts: &'a [u32],
    /// Their CIDEr weights `ln(N) - ln(max(1, df))` (when known).
    pub idfs: &'a [f64],
}

impl<'a> GramList<'a> {
    /// Number of distinct n-grams.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// True when the sentence has no n-gram of this order.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// (id, count) pairs, first-occurrence order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, u32)> + 'a {
        self.ids.iter().copied().zip(self.counts.iter().copied())
    }

    /// The count of n-gram `g` (0 when absent), without branches: ids are distinct, so at
    /// most one matches.
    #[inline]
    pub fn count_of(&self, g: u32) -> u32 {
        let mut c = 0;
        for (&h, &k) in self.ids.iter().zip(self.counts) {
            c |= if h == g { k } else { 0 };
        }
        c
    }
}

impl<'a> Grams<'a> {
    /// The view of columns written by [`count_into`]: `ids`, `counts` and `idfs` of equal
    /// lengths, order `n` ending at `ends[n - 1]`, of a sentence of `words` words.
    pub(crate) fn from_parts(
        ids: &'a [u32],
        counts: &'a [u32],
        idfs: &'a [f64],
        ends: [u32; MAX_ORDER],
        words: u32,
    ) -> Grams<'a> {
        Grams {
            ids,
            counts,
            idfs,
            ends,
            words,
        }
    }

    /// The distinct n-grams of order `n` (1..=4) with counts, in first-occurrence order.
    #[inline]
    pub fn order(&self, n: usize) -> GramList<'a> {
        let start = if n == 1 { 0 } else { self.ends[n - 2] as usize };
        let end = self.ends[n - 1] as usize;
        GramList {
            ids: &self.ids[start..end],
            counts: &self.counts[start..end],
            idfs: &self.idfs[start..end],
        }
    }

    /// Number of distinct n-grams of every order.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// The distinct n-grams of every order (orders in turn, each in first-occurrence order)
    /// with their counts.
    pub fn all(&self) -> GramList<'a> {
        GramList {
            ids: self.ids,
            counts: self.counts,
            idfs: self.idfs,
        }
    }

    /// Where order `n` (1..=4) starts and ends in [`Grams::all`].
    pub fn order_range(&self, n: usize) -> std::ops::Range<usize> {
        let start = if n == 1 { 0 } else { self.ends[n - 2] as usize };
        start..self.ends[n - 1] as usize
    }

    /// True when the sentence is empty.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Number of words of the sentence.
    pub fn word_count(&self) -> usize {
        self.words as usize
    }
}

/// Owned n-gram id counts of sentences, for tests and small callers: n-grams get ids from a
/// shared table, so sentences counted by the same `GramCounter` compare.
#[derive(Debug, Default, Clone)]
pub struct GramCounter {
    ids: FxHashMap<Ngram, u32>,
}

/// Owned [`Grams`].
#[derive(Debug, Clone)]
pub struct OwnedGrams {
    ids: Vec<u32>,
    counts: Vec<u32>,
    idfs: Vec<f64>,
    ends: [u32; MAX_ORDER],
    words: u32,
}

impl OwnedGrams {
    /// No n-gram (storage for [`OwnedGrams::refill`]).
    pub fn empty() -> OwnedGrams {
        OwnedGrams {
            ids: Vec::new(),
            counts: Vec::new(),
            idfs: Vec::new(),
            ends: [0; MAX_ORDER],
            words: 0,
        }
    }

    /// Counts the n-grams of `words` into this storage (what it held is dropped), each with
    /// the id and CIDEr weight `id(n-gram)` gives: equal n-grams must get equal ids, and a
    /// repeated n-gram keeps the weight of its first occurrence. Same result as
    /// [`GramCounter::count_weighted`] up to the numbering of the ids.
    pub fn refill(&mut self, words: &[u32], mut id: impl FnMut(&Ngram) -> (u32, f64)) {
        let room = words.len() * MAX_ORDER;
        self.ids.resize(room, 0);
        self.counts.resize(room, 0);
        self.idfs.resize(room, 0.0);
        let mut n = 0;
        for order in 1..=MAX_ORDER {
            let len = (words.len() + 1).saturating_sub(order);
            n = count_into(
                words.windows(order).map(|w| id(&Ngram::new(w))),
                len,
                (&mut self.ids[..], &mut self.counts[..], &mut self.idfs[..]),
                n,
            );
            self.ends[order - 1] = n as u32;
        }
        self.ids.truncate(n);
        self.counts.truncate(n);
        self.idfs.truncate(n);
        self.words = words.len() as u32;
    }

    /// The borrowed view.
    pub fn view(&self) -> Grams<'_> {
        Grams {
            ids: &self.ids,
            counts: &self.counts,
            idfs: &self.idfs,
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

    /// Counts the n-grams of `words` (CIDEr weights 0).
    pub fn count(&mut self, words: &[u32]) -> OwnedGrams {
        self.count_weighted(words, |_| 0.0)
    }

    /// Counts the n-grams of `words`, with the CIDEr weight `idf(n-gram)` of each.
    pub fn count_weighted(&mut self, words: &[u32], idf: impl Fn(&Ngram) -> f64) -> OwnedGrams {
        let (mut ids, mut counts, mut idfs) = (Vec::new(), Vec::new(), Vec::new());
        let mut ends = [0u32; MAX_ORDER];
        for n in 1..=MAX_ORDER {
            let grams: Vec<Ngram> = words.windows(n).map(Ngram::new).collect();
            let g: Vec<u32> = grams.iter().map(|&x| self.id(x)).collect();
            push_id_counts(&g, |i| idf(&grams[i]), &mut ids, &mut counts, &mut idfs);
            ends[n - 1] = ids.len() as u32;
        }
        OwnedGrams {
            ids,
            counts,
            idfs,
            ends,
            words: words.len() as u32,
        }
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
    fn local_vocab_tells_words_apart_by_all_their_bytes() {
        let words = [
            "a",
            "a\0",
            "abcdefgh",
            "abcdefgh1",
            "abcdefgh2",
            "abcdefghij",
            "\0",
            "",
            "café",
            "cafe",
            "a",
            "abcdefgh1",
            "é",
        ];
        let mut v = LocalVocab::new();
        let ids: Vec<u32> = words
            .iter()
            .map(|w| v.id(w, word_prefix(w.as_bytes())))
            .collect();
        for (i, a) in words.iter().enumerate() {
            for (j, b) in words.iter().enumerate() {
                assert_eq!(a == b, ids[i] == ids[j], "{a:?} {b:?}");
            }
        }
        // Growth keeps every id.
        let many: Vec<String> = (0..5000).map(|i| format!("w{i}")).collect();
        let first: Vec<u32> = many
            .iter()
            .map(|w| v.id(w, word_prefix(w.as_bytes())))
            .collect();
        let again: Vec<u32> = many
            .iter()
            .map(|w| v.id(w, word_prefix(w.as_bytes())))
            .collect();
        assert_eq!(first, again);
        assert_eq!(v.words.len(), 11 + 5000);
    }

    #[test]
    fn ascii_word_split_matches_python_split_and_prefixes() {
        for s in [
            "a man  on\ta\x0bbike ",
            " x",
            "",
            "  ",
            "one",
            "abcdefghijk b",
            "a\x1cb",
        ] {
            let mut got = Vec::new();
            let same = split_words(s, |w, p| got.push((w, p)));
            let want: Vec<&str> = crate::text::split_py_whitespace(s).collect();
            assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), want, "{s:?}");
            for (w, p) in got {
                assert_eq!(p, word_prefix(w.as_bytes()));
            }
            assert_eq!(same, space_split_is_word_split(s), "{s:?}");
        }
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
