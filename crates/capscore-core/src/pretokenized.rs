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
//! ([`BleuStats::scores`], [`rouge::score_ids`], [`SentenceVec`] and
//! [`cider::image_score_matched`]), so the numbers are the same bits.
//!
//! Must not: tokenize, read files, or know about Python.

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::corpus::{Grams, LocalVocab, Matches, Ngram, SentenceNgrams, MAX_ORDER};
use crate::metrics::bleu::BleuStats;
use crate::metrics::cider::{self, SentenceVec, Variant};
use crate::metrics::{numpy_mean, rouge};

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
    if caps.len() < PARALLEL_MIN {
        let mut s = S::default();
        return (0..caps.len()).map(|i| f(i, &mut s)).collect();
    }
    (0..caps.len())
        .into_par_iter()
        .with_min_len(64)
        .map_init(S::default, |s, i| f(i, s))
        .collect()
}

/// Marks a reference word that is not a candidate word (it matches nothing).
const ABSENT: u32 = u32::MAX;

/// The distinct words of one candidate, for looking reference words up: a small
/// open-addressing table on (first 8 bytes, length), which settle nearly every comparison
/// without touching the text; and, for a candidate of at most 64 words, each word's positions
/// as a bit mask.
#[derive(Default)]
struct CandidateWords<'a> {
    words: Vec<&'a str>,
    /// (prefix, length, id + 1); id + 1 = 0 marks an empty slot.
    slots: Vec<(u64, u32, u32)>,
    shift: u32,
    /// Per word id, the positions of the word in the candidate (bit p: word p).
    masks: Vec<u64>,
}

impl<'a> CandidateWords<'a> {
    /// Fills an emptied table with the candidate's words `split` (in order); their ids go to
    /// `ids`.
    fn load(&mut self, split: &[(&'a str, u64)], ids: &mut Vec<u32>) {
        self.reset(split.len());
        ids.clear();
        for (pos, &(w, p)) in split.iter().enumerate() {
            ids.push(self.intern(w, p, pos));
        }
    }

    /// Empties the table, sized for up to `words` distinct words.
    fn reset(&mut self, words: usize) {
        let size = (words * 2).next_power_of_two().max(16);
        self.words.clear();
        self.masks.clear();
        self.slots.clear();
        self.slots.resize(size, (0, 0, 0));
        self.shift = 64 - size.trailing_zeros();
    }

    #[inline]
    fn slot(&self, prefix: u64, len: u32) -> usize {
        crate::corpus::word_slot(prefix, len, self.shift)
    }

    /// The slot of `w`: where it is, or the empty slot where it would go.
    #[inline(always)]
    fn probe(&self, w: &str, prefix: u64) -> usize {
        let len = w.len() as u32;
        let mask = self.slots.len() - 1;
        let mut s = self.slot(prefix, len);
        loop {
            let (p, l, id) = self.slots[s];
            if id == 0
                || (p == prefix && l == len && (len <= 8 || self.words[id as usize - 1] == w))
            {
                return s;
            }
            s = (s + 1) & mask;
        }
    }

    /// The id of `w` (whose first 8 bytes are `prefix`), if it is a candidate word.
    #[inline]
    fn find(&self, w: &str, prefix: u64) -> Option<u32> {
        match self.slots[self.probe(w, prefix)].2 {
            0 => None,
            id => Some(id - 1),
        }
    }

    /// The positions of `w` in the candidate (0 when it is not a candidate word).
    #[inline]
    fn mask(&self, w: &str, prefix: u64) -> u64 {
        match self.slots[self.probe(w, prefix)].2 {
            0 => 0,
            id => self.masks[id as usize - 1],
        }
    }

    /// The id of candidate word `w` at position `pos`, assigned on first use (at most the
    /// number of words given to [`CandidateWords::reset`]).
    #[inline]
    fn intern(&mut self, w: &'a str, prefix: u64, pos: usize) -> u32 {
        let s = self.probe(w, prefix);
        let id = match self.slots[s].2 {
            0 => {
                self.words.push(w);
                self.masks.push(0);
                self.slots[s] = (prefix, w.len() as u32, self.words.len() as u32);
                self.words.len() as u32 - 1
            }
            id => id - 1,
        };
        if pos < 64 {
            self.masks[id as usize] |= 1 << pos;
        }
        id
    }
}

const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `x` (8 bytes) that is below 0x21 and ASCII: exact per byte
/// (no carry crosses bytes).
#[inline]
fn bytes_below_0x21(x: u64) -> u64 {
    !(((x & LOW7) + 0x5f5f_5f5f_5f5f_5f5f) | x) & HIGH
}

/// The high bit of each byte of `x` that is U+0020.
#[inline]
fn space_bytes(x: u64) -> u64 {
    let y = x ^ 0x2020_2020_2020_2020;
    !(((y & LOW7) + LOW7) | y) & HIGH
}

/// The 8 bytes of `b` from `i` (little-endian), padded with `A` past the end.
#[inline]
fn load8(b: &[u8], i: usize) -> u64 {
    match b.get(i..i + 8) {
        Some(w) => u64::from_le_bytes(w.try_into().expect("8 bytes")),
        None => {
            let mut buf = [b'A'; 8];
            buf[..b.len() - i].copy_from_slice(&b[i..]);
            u64::from_le_bytes(buf)
        }
    }
}

/// The first 8 bytes of `b[start..end]`, little-endian, zero-padded.
#[inline]
fn prefix_at(b: &[u8], start: usize, end: usize) -> u64 {
    let len = end - start;
    match b.get(start..start + 8) {
        Some(w) => {
            let x = u64::from_le_bytes(w.try_into().expect("8 bytes"));
            if len >= 8 {
                x
            } else {
                x & ((1u64 << (8 * len)) - 1)
            }
        }
        None => {
            let mut buf = [0u8; 8];
            buf[..len].copy_from_slice(&b[start..end]);
            u64::from_le_bytes(buf)
        }
    }
}

/// Calls `f` on each word of `s` split as Python's `str.split()` splits (spec COCO §3.4, as
/// [`crate::text::split_py_whitespace`]), with the word's first 8 bytes (little-endian,
/// zero-padded). ASCII text is scanned 8 bytes at a time.
#[inline]
fn split_words<'a>(s: &'a str, mut f: impl FnMut(&'a str, u64)) {
    let b = s.as_bytes();
    if !b.is_ascii() {
        for w in crate::text::split_py_whitespace(s) {
            f(w, prefix_at(w.as_bytes(), 0, w.len()));
        }
        return;
    }
    let mut start = 0;
    for i in (0..b.len()).step_by(8) {
        let mut m = bytes_below_0x21(load8(b, i));
        while m != 0 {
            let pos = i + (m.trailing_zeros() / 8) as usize;
            m &= m - 1;
            // Python's ASCII whitespace: \t \n \v \f \r, the separators 0x1C-0x1F, space.
            if matches!(b[pos], b'\t'..=b'\r' | 0x1C..=b' ') {
                if pos > start {
                    f(&s[start..pos], prefix_at(b, start, pos));
                }
                start = pos + 1;
            }
        }
    }
    if start < b.len() {
        f(&s[start..], prefix_at(b, start, b.len()));
    }
}

/// Calls `f` on each word of `s` split on U+0020 only, keeping empty pieces (Python's
/// `str.split(" ")`, as [`crate::text::split_space`]), with the word's first 8 bytes.
#[inline]
fn split_space_words<'a>(s: &'a str, mut f: impl FnMut(&'a str, u64)) {
    let b = s.as_bytes();
    let mut start = 0;
    for i in (0..b.len()).step_by(8) {
        let mut m = space_bytes(load8(b, i));
        while m != 0 {
            let pos = i + (m.trailing_zeros() / 8) as usize;
            m &= m - 1;
            f(&s[start..pos], prefix_at(b, start, pos));
            start = pos + 1;
        }
    }
    f(&s[start..], prefix_at(b, start, b.len()));
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
    index: FxHashMap<Ngram, u32>,
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
    split_words(cand, |w, p| s.split.push((w, p)));
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
        split_words(r, |w, p| s.masks.push(vocab.mask(w, p)));
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
    let grams = SentenceNgrams::new(&s.cand);
    let all = grams.all();
    let mut order_start = [0usize; MAX_ORDER + 1];
    for n in 1..=MAX_ORDER {
        order_start[n] = order_start[n - 1] + grams.order(n).len();
    }
    s.index.clear();
    s.index
        .extend(all.iter().enumerate().map(|(k, &(g, _))| (g, k as u32)));
    s.max_ref.clear();
    s.max_ref.resize(all.len(), 0);
    s.in_ref.clear();
    s.in_ref.resize(all.len(), 0);
    let mut reflen = None;
    for r in refs {
        s.words.clear();
        let vocab = &s.vocab;
        split_words(r, |w, p| s.words.push(vocab.find(w, p).unwrap_or(ABSENT)));
        reflen = closer(reflen, s.words.len() as u64, testlen);
        for n in 1..=MAX_ORDER {
            for win in s.words.windows(n) {
                if win.contains(&ABSENT) {
                    continue;
                }
                if let Some(&k) = s.index.get(&Ngram::new(win)) {
                    s.in_ref[k as usize] += 1;
                }
            }
        }
        for (m, c) in s.max_ref.iter_mut().zip(s.in_ref.iter_mut()) {
            *m = (*m).max(*c);
            *c = 0;
        }
    }
    stats(testlen, reflen, |n| {
        (order_start[n]..order_start[n + 1])
            .map(|k| u64::from(all[k].1.min(s.max_ref[k])))
            .sum()
    })
}

/// The ROUGE-L F-score of each image (pycocoevalcap's `Rouge`: words split on U+0020 only,
/// beta 1.2).
pub fn rouge_l(caps: &Captions<'_>) -> Vec<f64> {
    per_image(caps, |i, s: &mut Scratch<'_>| {
        s.split.clear();
        split_space_words(caps.candidates[i], |w, p| s.split.push((w, p)));
        s.vocab.load(&s.split, &mut s.cand);
        let l = s.split.len();
        let refs = caps.references_of(i);
        let (vocab, buf) = (&s.vocab, &mut s.masks);
        if l <= 64 {
            return rouge::f_score(
                l,
                refs.iter().map(|r| {
                    buf.clear();
                    split_space_words(r, |w, p| buf.push(vocab.mask(w, p)));
                    (rouge::lcs_masks(l, buf.iter().copied()), buf.len())
                }),
            );
        }
        s.words.clear();
        s.ends.clear();
        for r in refs {
            split_space_words(r, |w, p| s.words.push(vocab.find(w, p).unwrap_or(ABSENT)));
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

// ---------------------------------------------------------------------------------------------
// CIDEr-D.
//
// Unlike BLEU and ROUGE-L, CIDEr-D needs document frequencies over the references of every
// image, so words and n-grams must be identified across the batch. Five passes, none of which
// copies a caption:
//
// 1. per chunk of images (in parallel): split every caption into words, with chunk-local ids;
// 2. the chunks' vocabularies are merged into batch word ids (serial, over each chunk's
//    distinct words only);
// 3. per chunk (in parallel): each image's n-grams (orders 1..=4, keys of packed word ids) get
//    image-local ids; each distinct n-gram of an image is listed once, in one of
//    `DF_PARTS` hash partitions, on the reference side when a reference of the image has it
//    and on the candidate side otherwise;
// 4. per partition (in parallel): document frequencies are counted (each image lists an
//    n-gram once, so its document frequency is the number of reference-side entries) and
//    written back over the entries;
// 5. per chunk (in parallel): each image's sentences are weighted and scored by the engine's
//    code ([`SentenceVec`], [`cider::image_score_matched`]) with the image-local ids.
//
// Document frequencies are integers and the scores are per image, so neither chunking nor
// partitioning changes a bit of the output.
// ---------------------------------------------------------------------------------------------

/// Images per chunk of [`cider_d`].
const CIDER_CHUNK: usize = 128;
/// Hash parts of the batch vocabulary of [`cider_d`], numbered in parallel.
const VOCAB_PARTS: usize = 16;
/// log2 of the number of hash partitions of the document-frequency table: many small
/// partitions, so that each partition's table stays in the core's cache while it is counted
/// and read back.
const DF_PART_BITS: u32 = 7;
/// Number of hash partitions of the document-frequency table.
const DF_PARTS: usize = 1 << DF_PART_BITS;
/// An image n-gram's place: side (1 bit: candidate only), partition, position in the chunk's
/// list of that side and partition (the low `LOC_POS_BITS` bits).
const LOC_POS_BITS: u32 = 31 - DF_PART_BITS;

/// An n-gram key: the packed word ids of an n-gram of order 1..=4.
trait GramKey: Copy + Eq + Send + Sync {
    /// Never the key of an n-gram.
    const EMPTY: Self;
    /// True when every word id below `words` can be packed.
    fn fits(words: usize) -> bool;
    /// The unigram `w`.
    fn unigram(w: u32) -> Self;
    /// This n-gram (of order `n`) extended with word `w`.
    fn extend(self, n: usize, w: u32) -> Self;
    /// A well-mixed hash: its top `DF_PART_BITS` bits pick the partition, the bits below them
    /// the slot.
    fn hash(self) -> u64;
    /// An entry's value once its key is counted (a slot, then a document frequency).
    fn from_u32(x: u32) -> Self;
    /// The value [`GramKey::from_u32`] stored.
    fn to_u32(self) -> u32;
}

/// Four 16-bit word ids, 0xFFFF in unused slots (vocabularies under 65,535 words).
impl GramKey for u64 {
    const EMPTY: u64 = u64::MAX;
    fn fits(words: usize) -> bool {
        words < 0xFFFF
    }
    #[inline]
    fn unigram(w: u32) -> u64 {
        !0xFFFF | u64::from(w)
    }
    #[inline]
    fn extend(self, n: usize, w: u32) -> u64 {
        self ^ ((0xFFFF ^ u64::from(w)) << (16 * n))
    }
    #[inline]
    fn hash(self) -> u64 {
        (self ^ (self >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
    #[inline]
    fn from_u32(x: u32) -> u64 {
        u64::from(x)
    }
    #[inline]
    fn to_u32(self) -> u32 {
        self as u32
    }
}

/// Four 32-bit word ids, 0xFFFF_FFFF in unused slots (any vocabulary).
impl GramKey for u128 {
    const EMPTY: u128 = u128::MAX;
    fn fits(words: usize) -> bool {
        words < u32::MAX as usize
    }
    #[inline]
    fn unigram(w: u32) -> u128 {
        !0xFFFF_FFFF | u128::from(w)
    }
    #[inline]
    fn extend(self, n: usize, w: u32) -> u128 {
        self ^ ((0xFFFF_FFFF ^ u128::from(w)) << (32 * n))
    }
    #[inline]
    fn hash(self) -> u64 {
        let (lo, hi) = (self as u64, (self >> 64) as u64);
        (lo.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ hi.wrapping_mul(0xC2B2_AE3D_27D4_EB4F))
            .wrapping_mul(0xD6E8_FEB8_6659_FD93)
    }
    #[inline]
    fn from_u32(x: u32) -> u128 {
        u128::from(x)
    }
    #[inline]
    fn to_u32(self) -> u32 {
        self as u32
    }
}

/// An open-addressing table (linear probing) from n-gram keys to a `u32`, on the hash bits
/// below the partition bits. Only the first `mask + 1` slots are in use: a table sized for a
/// large image stays allocated, but a small image's keys stay in a small (cached) part of it.
struct KeyTable<K> {
    slots: Vec<(K, u32)>,
    mask: usize,
    shift: u32,
}

impl<K: GramKey> KeyTable<K> {
    fn new() -> KeyTable<K> {
        KeyTable {
            slots: Vec::new(),
            mask: 0,
            shift: 64,
        }
    }

    /// Uses the first `size` slots (a power of two), all of them empty: the caller empties
    /// the slots it used before the next call.
    fn use_slots(&mut self, size: usize) {
        if self.slots.len() < size {
            self.slots.clear();
            self.slots.resize(size, (K::EMPTY, 0));
        }
        self.mask = size - 1;
        self.shift = 64 - size.trailing_zeros();
    }

    /// The slot of `key`: where it is, or the empty slot where it goes (the table is never
    /// full).
    #[inline]
    fn slot(&self, key: K) -> usize {
        let mask = self.mask;
        let mut s = ((key.hash() << DF_PART_BITS) >> self.shift) as usize;
        loop {
            let k = self.slots[s].0;
            if k == key || k == K::EMPTY {
                return s;
            }
            s = (s + 1) & mask;
        }
    }
}

/// The words of a chunk of images: chunk-local ids in pass 1, batch ids from pass 2.
struct ChunkWords<'a> {
    /// The chunk's images.
    images: std::ops::Range<usize>,
    vocab: LocalVocab<'a>,
    words: Vec<u32>,
    /// Per caption (each image's candidate, then its references), where its words start in
    /// `words`; one more entry at the end.
    off: Vec<u32>,
    /// True when some reference has a word.
    ref_words: bool,
    /// The local ids of the chunk's words, by vocabulary part (pass 2).
    parts: [Vec<u32>; VOCAB_PARTS],
}

/// The n-grams of a chunk of images (pass 3).
struct ChunkGrams<K> {
    /// Per caption, its word count.
    lens: Vec<u32>,
    /// Per image, its number of references.
    refs: Vec<u32>,
    /// Per caption, its distinct n-grams (image-local ids) of each order in turn, in
    /// first-occurrence order, and their counts in the caption: [`count_into`]'s columns.
    ids: Vec<u32>,
    counts: Vec<u32>,
    /// Per caption, where its orders end in `ids` (from the caption's start).
    ends: Vec<[u32; MAX_ORDER]>,
    /// Per image, where its distinct n-grams start in `loc`; one more entry at the end.
    grams: Vec<u32>,
    /// Per distinct n-gram of an image (image-local id order), its entry (see
    /// [`LOC_POS_BITS`]).
    loc: Vec<u32>,
    /// Per side (references, candidate only) and partition: the keys of the images' distinct
    /// n-grams, later their document frequencies.
    lists: [Vec<Vec<K>>; 2],
}

/// Reusable storage of pass 3 (one per worker).
struct ImageGrams<K> {
    table: KeyTable<K>,
    keys: Vec<K>,
    /// The image's distinct n-grams, by image-local id.
    distinct: Vec<Distinct<K>>,
}

impl<K: GramKey> Default for ImageGrams<K> {
    fn default() -> ImageGrams<K> {
        ImageGrams {
            table: KeyTable::new(),
            keys: Vec::new(),
            distinct: Vec::new(),
        }
    }
}

/// A distinct n-gram of an image (pass 3).
#[derive(Clone, Copy)]
struct Distinct<K> {
    key: K,
    /// Its slot in [`ImageGrams::table`].
    slot: u32,
    /// The last caption that has it (chunk caption index + 1), and where that caption lists
    /// it in [`ChunkGrams::ids`].
    stamp: u32,
    pos: u32,
    /// True when a reference of the image has it.
    in_ref: bool,
}

/// Number of windows of orders 1..=4 of a sentence of `len` words.
#[inline]
fn windows_of(len: usize) -> usize {
    (1..=MAX_ORDER).map(|n| (len + 1).saturating_sub(n)).sum()
}

/// Maps `items` to results in parallel, or on this thread when `parallel` is false, with one
/// `init()` state per worker.
fn maybe_par<S, T: Send, R: Send>(
    items: Vec<T>,
    parallel: bool,
    init: impl Fn() -> S + Sync + Send,
    f: impl Fn(&mut S, T) -> R + Sync + Send,
) -> Vec<R> {
    if parallel {
        items.into_par_iter().map_init(init, f).collect()
    } else {
        let mut state = init();
        items.into_iter().map(|t| f(&mut state, t)).collect()
    }
}

/// pycocoevalcap's `Cider().compute_score(gts, res)` on pre-tokenized captions: CIDEr-D
/// (n = 4, sigma = 6, clipping, the Gaussian length penalty, x10; spec COCO §6) with
/// document frequencies over the references of these images and `ln(N)` for N images, words
/// split as `str.split()`. Returns numpy's mean and the per-image scores, the same bits as
/// [`crate::engine::score`]'s CIDEr-D; `None` when there is no image or no reference has a
/// word (CIDEr-D is undefined: the engine's `no_reference_ngrams`).
pub fn cider_d(caps: &Captions<'_>) -> Option<(f64, Vec<f64>)> {
    let n = caps.len();
    if n == 0 {
        return None;
    }
    let parallel = n >= PARALLEL_MIN;
    let bounds: Vec<(usize, usize)> = (0..n)
        .step_by(CIDER_CHUNK)
        .map(|a| (a, (a + CIDER_CHUNK).min(n)))
        .collect();
    // 1. Words, chunk-local ids.
    let chunks = maybe_par(bounds, parallel, || (), |_, b| chunk_words(caps, b));
    if !chunks.iter().any(|c| c.ref_words) {
        return None;
    }
    // 2. Batch word ids: each vocabulary part numbers its words (in parallel), then each
    //    chunk maps its words to the part's offset plus that number.
    let parts: Vec<(Vec<Vec<u32>>, usize)> = maybe_par(
        (0..VOCAB_PARTS).collect(),
        parallel,
        || (),
        |_, p| {
            let mut vocab = LocalVocab::new();
            let ids = chunks
                .iter()
                .map(|ch| {
                    let words = ch.vocab.words();
                    ch.parts[p]
                        .iter()
                        .map(|&l| {
                            let w = words[l as usize];
                            vocab.id(w, prefix_at(w.as_bytes(), 0, w.len()))
                        })
                        .collect()
                })
                .collect();
            (ids, vocab.words().len())
        },
    );
    let mut offsets = [0u32; VOCAB_PARTS];
    let mut words = 0usize;
    for (o, (_, len)) in offsets.iter_mut().zip(&parts) {
        *o = words as u32;
        words += len;
    }
    let chunks = maybe_par(
        chunks.into_iter().enumerate().collect(),
        parallel,
        || (),
        |_, (c, mut ch)| {
            let mut map = vec![0u32; ch.vocab.words().len()];
            for (p, locals) in ch.parts.iter().enumerate() {
                for (&l, &id) in locals.iter().zip(&parts[p].0[c]) {
                    map[l as usize] = offsets[p] + id;
                }
            }
            for w in &mut ch.words {
                *w = map[*w as usize];
            }
            ch
        },
    );
    let scores = if u64::fits(words) {
        cider_d_grams::<u64>(caps, chunks, parallel)
    } else {
        cider_d_grams::<u128>(caps, chunks, parallel)
    };
    Some((numpy_mean(&scores), scores))
}

/// Pass 1 of [`cider_d`]: the words of images `a..b` with chunk-local ids.
fn chunk_words<'a>(caps: &Captions<'a>, (a, b): (usize, usize)) -> ChunkWords<'a> {
    let first = caps.starts[a];
    let last = caps.starts[b];
    // A word takes at least two bytes with its separator.
    let bytes: usize = caps.candidates[a..b].iter().map(|c| c.len()).sum::<usize>()
        + caps.references[first..last]
            .iter()
            .map(|r| r.len())
            .sum::<usize>();
    let mut ch = ChunkWords {
        images: a..b,
        vocab: LocalVocab::new(),
        words: Vec::with_capacity(bytes / 2 + (b - a) + (last - first)),
        off: Vec::with_capacity(last - first + (b - a) + 1),
        ref_words: false,
        parts: Default::default(),
    };
    for i in a..b {
        for (k, s) in std::iter::once(&caps.candidates[i])
            .chain(caps.references_of(i))
            .enumerate()
        {
            ch.off.push(ch.words.len() as u32);
            let before = ch.words.len();
            let (vocab, words) = (&mut ch.vocab, &mut ch.words);
            split_words(s, |w, p| words.push(vocab.id(w, p)));
            ch.ref_words |= k > 0 && ch.words.len() > before;
        }
    }
    ch.off.push(ch.words.len() as u32);
    for (l, w) in ch.vocab.words().iter().enumerate() {
        let prefix = prefix_at(w.as_bytes(), 0, w.len());
        // Bits of the word's hash that its slot in a part's table does not use.
        let p = (crate::corpus::word_slot(prefix, w.len() as u32, 0) >> 32) % VOCAB_PARTS;
        ch.parts[p].push(l as u32);
    }
    ch
}

/// Passes 3 to 5 of [`cider_d`], with n-gram keys `K`.
fn cider_d_grams<K: GramKey>(
    caps: &Captions<'_>,
    chunks: Vec<ChunkWords<'_>>,
    parallel: bool,
) -> Vec<f64> {
    let n = caps.len();
    // 3. Image n-grams.
    let mut grams: Vec<ChunkGrams<K>> =
        maybe_par(chunks, parallel, ImageGrams::<K>::default, |s, ch| {
            chunk_grams(caps, s, ch)
        });
    // 4. Document frequencies, per partition.
    let mut parts: Vec<Vec<[&mut Vec<K>; 2]>> = (0..DF_PARTS)
        .map(|_| Vec::with_capacity(grams.len()))
        .collect();
    for g in &mut grams {
        let [refs, cands] = &mut g.lists;
        for ((r, c), part) in refs.iter_mut().zip(cands.iter_mut()).zip(&mut parts) {
            part.push([r, c]);
        }
    }
    // One table per worker, emptied after each partition (only its used slots are touched).
    let table = || (KeyTable::<K>::new(), Vec::<u32>::new());
    maybe_par(parts, parallel, table, |(table, used), part| {
        count_part(table, used, part)
    });
    // 5. Scores. `ln(N) - ln(max(1, df))`, computed as the engine's batch table does.
    let ref_len = (n as f64).ln();
    let idf_by_df: Vec<f64> = (0..=n).map(|d| ref_len - (d.max(1) as f64).ln()).collect();
    let per_chunk = maybe_par(grams, parallel, ScoreScratch::default, |s, g| {
        score_chunk(s, g, &idf_by_df)
    });
    per_chunk.into_iter().flatten().collect()
}

/// Pass 3 of [`cider_d`]: the n-grams of a chunk's images.
fn chunk_grams<K: GramKey>(
    caps: &Captions<'_>,
    s: &mut ImageGrams<K>,
    ch: ChunkWords<'_>,
) -> ChunkGrams<K> {
    let windows = ch.words.len() * MAX_ORDER;
    let mut out = ChunkGrams {
        ids: Vec::with_capacity(windows),
        counts: Vec::with_capacity(windows),
        ends: Vec::with_capacity(ch.off.len()),
        grams: vec![0],
        loc: Vec::with_capacity(windows),
        // Most windows are distinct in their image, most of them reference n-grams,
        // spread evenly over the partitions (room for some more: a list that grows
        // copies itself).
        lists: [
            (0..DF_PARTS)
                .map(|_| Vec::with_capacity(windows * 3 / 4 / DF_PARTS + 16))
                .collect(),
            (0..DF_PARTS)
                .map(|_| Vec::with_capacity(windows / 4 / DF_PARTS + 8))
                .collect(),
        ],
        lens: ch.off.windows(2).map(|o| o[1] - o[0]).collect(),
        refs: Vec::with_capacity(ch.images.len()),
    };
    let mut cap = 0usize;
    for i in ch.images.clone() {
        let count = 1 + caps.references_of(i).len();
        out.refs.push(count as u32 - 1);
        let caps_of = cap..cap + count;
        cap += count;
        let windows: usize = caps_of
            .clone()
            .map(|k| windows_of((ch.off[k + 1] - ch.off[k]) as usize))
            .sum();
        s.table.use_slots((windows * 2).next_power_of_two().max(64));
        s.distinct.clear();
        for k in caps_of {
            let is_ref = k != cap - count;
            // Unique in the chunk: a stale entry of an earlier image never matches it.
            let stamp = k as u32 + 1;
            let begin = out.ids.len();
            let mut ends = [0u32; MAX_ORDER];
            let w = &ch.words[ch.off[k] as usize..ch.off[k + 1] as usize];
            let keys = &mut s.keys;
            keys.clear();
            keys.extend(w.iter().map(|&x| K::unigram(x)));
            for (order, end) in ends.iter_mut().enumerate() {
                let m = w.len().saturating_sub(order);
                if order > 0 && m > 0 {
                    for (key, &x) in keys[..m].iter_mut().zip(&w[order..]) {
                        *key = key.extend(order, x);
                    }
                }
                for &key in &keys[..m] {
                    let slot = s.table.slot(key);
                    let e = &mut s.table.slots[slot];
                    let id = if e.0 == key {
                        e.1
                    } else {
                        let id = s.distinct.len() as u32;
                        *e = (key, id);
                        s.distinct.push(Distinct {
                            key,
                            slot: slot as u32,
                            stamp: 0,
                            pos: 0,
                            in_ref: false,
                        });
                        id
                    };
                    let d = &mut s.distinct[id as usize];
                    d.in_ref |= is_ref;
                    // The caption's counts, as `count_into` lists them.
                    if d.stamp == stamp {
                        out.counts[d.pos as usize] += 1;
                    } else {
                        d.stamp = stamp;
                        d.pos = out.ids.len() as u32;
                        out.ids.push(id);
                        out.counts.push(1);
                    }
                }
                *end = (out.ids.len() - begin) as u32;
            }
            out.ends.push(ends);
        }
        for d in &s.distinct {
            s.table.slots[d.slot as usize].0 = K::EMPTY;
            let side = usize::from(!d.in_ref);
            let key = d.key;
            let p = (key.hash() >> (64 - DF_PART_BITS)) as usize;
            let list = &mut out.lists[side][p];
            out.loc
                .push((side as u32) << 31 | (p as u32) << LOC_POS_BITS | list.len() as u32);
            list.push(key);
        }
        out.grams.push(out.loc.len() as u32);
    }
    assert!(
        out.lists
            .iter()
            .flatten()
            .all(|l| l.len() < 1 << LOC_POS_BITS),
        "fewer than 2^24 n-grams per partition in a chunk"
    );
    out
}

/// Pass 4 of [`cider_d`]: the document frequencies of one partition's entries, written over
/// them.
fn count_part<K: GramKey>(
    table: &mut KeyTable<K>,
    used: &mut Vec<u32>,
    mut part: Vec<[&mut Vec<K>; 2]>,
) {
    let total: usize = part.iter().map(|[r, c]| r.len() + c.len()).sum();
    // At most 80% full even if every entry is a distinct n-gram.
    table.use_slots((total + total / 4 + 1).next_power_of_two().max(64));
    for [refs, _] in part.iter_mut() {
        for e in refs.iter_mut() {
            let s = table.slot(*e);
            if table.slots[s].1 == 0 {
                table.slots[s].0 = *e;
                used.push(s as u32);
            }
            table.slots[s].1 += 1;
            *e = K::from_u32(s as u32);
        }
    }
    // A candidate-only n-gram that no reference has: its slot is empty, its count 0.
    for [_, cands] in part.iter_mut() {
        for e in cands.iter_mut() {
            *e = K::from_u32(table.slots[table.slot(*e)].1);
        }
    }
    for [refs, _] in part.iter_mut() {
        for e in refs.iter_mut() {
            *e = K::from_u32(table.slots[e.to_u32() as usize].1);
        }
    }
    for s in used.drain(..) {
        table.slots[s as usize] = (K::EMPTY, 0);
    }
}

/// Pass 5 of [`cider_d`]: the scores of a chunk's images, with the weights `idf_by_df` by
/// document frequency.
fn score_chunk<K: GramKey>(s: &mut ScoreScratch, g: ChunkGrams<K>, idf_by_df: &[f64]) -> Vec<f64> {
    let (mut cap, mut at) = (0usize, 0usize);
    (0..g.refs.len())
        .map(|j| {
            s.idf.clear();
            s.idf.extend(
                g.loc[g.grams[j] as usize..g.grams[j + 1] as usize]
                    .iter()
                    .map(|&l| {
                        let side = (l >> 31) as usize;
                        let p = ((l >> LOC_POS_BITS) as usize) & (DF_PARTS - 1);
                        let df = g.lists[side][p][(l & ((1 << LOC_POS_BITS) - 1)) as usize];
                        idf_by_df[df.to_u32() as usize]
                    }),
            );
            let captions = cap..cap + 1 + g.refs[j] as usize;
            cap = captions.end;
            let ends = &g.ends[captions.clone()];
            let len: usize = ends.iter().map(|e| e[MAX_ORDER - 1] as usize).sum();
            let cols = (&g.ids[at..at + len], &g.counts[at..at + len]);
            at += len;
            s.score(&g.lens[captions], ends, cols)
        })
        .collect()
}

/// Reusable storage of pass 5 (one per worker).
#[derive(Default)]
struct ScoreScratch {
    /// The weights `ln(N) - ln(max(1, df))` of the image's n-grams, by image-local id.
    idf: Vec<f64>,
    /// The weights of the image's captions' columns.
    idfs: Vec<f64>,
    /// Where each caption's columns start; one more entry at the end.
    starts: Vec<usize>,
    vecs: Vec<SentenceVec>,
    /// Per image-local id, its position in the candidate's columns (`u32::MAX`: absent).
    cand_pos: Vec<u32>,
    matches: Matches,
    wr: Vec<f64>,
}

impl ScoreScratch {
    /// The CIDEr-D of an image whose captions (candidate first) have `lens` words and the
    /// columns `(ids, counts)` (image-local n-gram ids, caption after caption, each caption's
    /// orders ending at its `ends`), with the weights in `self.idf`.
    fn score(
        &mut self,
        lens: &[u32],
        ends: &[[u32; MAX_ORDER]],
        (ids, counts): (&[u32], &[u32]),
    ) -> f64 {
        let idf = &self.idf;
        self.idfs.clear();
        self.idfs.extend(ids.iter().map(|&g| idf[g as usize]));
        let idfs = &self.idfs[..];
        // Caption k's columns: `starts[k]..starts[k + 1]`.
        self.starts.clear();
        self.starts.push(0);
        for e in ends {
            self.starts
                .push(self.starts[self.starts.len() - 1] + e[MAX_ORDER - 1] as usize);
        }
        let starts = &self.starts;
        let span = |k: usize| starts[k]..starts[k + 1];
        self.vecs.resize_with(lens.len(), SentenceVec::default);
        for (k, v) in self.vecs.iter_mut().enumerate() {
            let r = span(k);
            let grams = Grams::from_parts(
                &ids[r.clone()],
                &counts[r.clone()],
                &idfs[r],
                ends[k],
                lens[k],
            );
            v.fill(&grams);
        }
        // Image-local ids are dense: the candidate's position of each, by id.
        self.cand_pos.clear();
        self.cand_pos.resize(idf.len(), u32::MAX);
        for (i, &g) in ids[span(0)].iter().enumerate() {
            self.cand_pos[g as usize] = i as u32;
        }
        let cand_pos = &self.cand_pos;
        self.matches.build_by(
            |g| match cand_pos[g as usize] {
                u32::MAX => None,
                i => Some(i as usize),
            },
            (1..lens.len()).map(|k| &ids[span(k)]),
        );
        let (c, r) = self.vecs[..lens.len()].split_first().expect("a candidate");
        cider::image_score_matched(Variant::CiderD, c, r, &self.matches, &mut self.wr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::GramCounter;
    use crate::metrics::bleu::pool;

    fn engine_bleu(cand: &str, refs: &[&str]) -> BleuStats {
        let mut ids: FxHashMap<String, u32> = FxHashMap::default();
        let mut intern = |s: &str| -> Vec<u32> {
            crate::text::split_py_whitespace(s)
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
    fn splitters_split_as_python() {
        let cases = [
            "",
            " ",
            "a",
            "a man  on\ta\x0bbike ",
            " x",
            "abcdefghijk b  c",
            "a\x1cb\x01c",
            "exactly8 bytes!! and more words here",
            "caf\u{e9} \u{a0}x  y",
            "1\u{a0}1/2 hot dogs ",
        ];
        for s in cases {
            let mut got = Vec::new();
            split_words(s, |w, p| got.push((w, p)));
            let want: Vec<&str> = crate::text::split_py_whitespace(s).collect();
            assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), want, "{s:?}");
            let mut got_space = Vec::new();
            split_space_words(s, |w, p| got_space.push((w, p)));
            let want: Vec<&str> = crate::text::split_space(s).collect();
            assert_eq!(
                got_space.iter().map(|g| g.0).collect::<Vec<_>>(),
                want,
                "{s:?}"
            );
            for (w, p) in got.into_iter().chain(got_space) {
                let mut buf = [0u8; 8];
                let n = w.len().min(8);
                buf[..n].copy_from_slice(&w.as_bytes()[..n]);
                assert_eq!(p, u64::from_le_bytes(buf), "{w:?}");
            }
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
        let metrics = [Metric::CiderD];
        let opts = Options {
            tokenizer: Tokenizer::Pretokenized,
            ..Options::new(&metrics)
        };
        let report = crate::engine::score(cands, &refs, &opts).map_err(|e| e.code.as_str())?;
        let per_image = report
            .per_image
            .iter()
            .map(|r| r.scores.cider.expect("CIDEr-D"));
        Ok((
            report.aggregate.cider.expect("CIDEr-D"),
            per_image.collect(),
        ))
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
