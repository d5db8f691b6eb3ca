//! BLEU and ROUGE-L of pre-tokenized captions, image by image, as pycocoevalcap's `Bleu` and
//! `Rouge` scorers compute them from their `gts` / `res` dicts: each caption is already
//! tokenized and only split into words (`str.split()` for BLEU, `str.split(" ")` for ROUGE-L),
//! and nothing is shared between images (no document frequencies). So, unlike
//! [`crate::engine::score`], no batch is assembled and no word or n-gram is interned across the
//! batch: each image's words get ids local to the image, which is all these two metrics need,
//! and the captions are only borrowed.
//!
//! The per-image statistics are the same integers as the engine's (BLEU: candidate length,
//! closest reference length, guessed and clipped n-gram counts; ROUGE-L: LCS lengths), and
//! they are turned into scores by the same code ([`BleuStats::scores`], [`rouge::score_ids`]),
//! so the numbers are the same bits.
//!
//! Must not: tokenize, read files, or know about Python.

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::corpus::{Ngram, SentenceNgrams, MAX_ORDER};
use crate::metrics::bleu::BleuStats;
use crate::metrics::rouge;

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
