//! METEOR 1.5 exactly as pycocoevalcap 1.2 computes it.
//!
//! pycocoevalcap 1.2 runs a modified `meteor-1.5.jar` (`-l en -norm`, task "default") over a stdio
//! protocol: one `SCORE` request per image returns a 23-number statistics line for the best
//! reference, and one `EVAL` request over all of them returns per-image scores plus a *pooled*
//! corpus score (ratios of summed statistics), which is what pycocoevalcap reports as "METEOR".
//! This module reimplements that behaviour natively from the behavioural specification
//! (`spec/METEOR.md`, no jar code): [`Meteor::segment`] is the `SCORE` step,
//! [`SegmentStats::score`] the per-image score and [`pooled_score`] the corpus score.
//!
//! Pipeline per segment: pycocoevalcap's hypothesis sanitising (delete `|||`, squeeze one pass of
//! double spaces), Java `trim`, the `-norm` normaliser ([`normalize`]), Java lowercasing,
//! tokenisation on ASCII whitespace except U+000B; then per reference: exact, stem
//! (`rust-stemmers` 1.2.0, Snowball English as of 2010), WordNet synonym ([`synonyms`]) and
//! paraphrase ([`paraphrase`]) candidates, the width-40 beam search, the statistics; the first
//! reference with the strictly highest score wins.
//!
//! Quirks reproduced on purpose (each pinned by golden data):
//! - words are compared by their 32-bit Java `String.hashCode`, so colliding words (`fpo`/`h2o`)
//!   are exact matches (§4);
//! - the search's match counters are `i32` accumulating `k × 0.5` with truncation, so one-word
//!   stem/synonym/paraphrase matches add nothing to the primary ranking criterion (§6.2);
//! - a candidate's alignment distance is added to its *parent* path after the copy (§6.3);
//! - the non-breaking prefix test is case-sensitive and happens before lowercasing, and the
//!   `DOTMULTI` placeholders leak (`xDOTMULTIy` → `x.y`) (§3);
//! - a one-chunk alignment that is not complete still pays the fragmentation penalty; pooled
//!   chunks skip perfect segments (§9, §11);
//! - `(1.0 - α)` is computed, never written `0.15`; `pow` is `f64::powf` (glibc), which equals the
//!   jar's `Math.pow` except on rare `(chunks, matches)` pairs; the known pairs with
//!   `matches ≤ 2000` are corrected from a table measured on the jar (§13.2), so per-segment scores
//!   are bit-identical; a pooled score outside that table may (≈1 corpus in 1,500) differ by 1 ulp.
//!
//! Differences from running the jar, by design: no stdio protocol, so captions with newlines,
//! `\r` or any Unicode score as text (the jar would desync or split the request). A reference
//! containing `|||` is split into several references, as pycocoevalcap's request line makes the jar
//! do. Limits: a caption longer than [`MAX_CAPTION_BYTES`] bytes or normalising to more than
//! [`MAX_TOKENS`] tokens is rejected with [`MeteorError::TooLong`] (the beam search is quadratic
//! in length; COCO captions have ~10 tokens).
//!
//! Performance notes: [`Meteor`] holds the compact paraphrase table (~95 MB, read in one go; no
//! mmap, no `unsafe`) and the WordNet data (~25 MB). Each scoring thread keeps a bounded memo of
//! per-token facts (hash, stem, synsets, one-word phrase look-up; ≤ 65,536 tokens) and of
//! paraphrase-prefix lookups (≤ 262,144 entries each for two-word and longer prefixes), plus the
//! buffers of one segment (sentences, each reference's candidates, beam), reused so that a
//! segment allocates next to nothing: about 25 MB per thread at most between segments (a list
//! of more than 4,096 candidates is freed after its segment; while a segment of 512-token
//! sentences is scored, each reference's list takes about 6 MB), a few MB in practice; results
//! never depend on it. Within a segment, a reference word's exact / stem / synonym matches in
//! the hypothesis are bit masks computed once per distinct word, and each reference phrase's
//! paraphrases in the hypothesis once per distinct phrase. The beam searches run from the
//! reference with the highest score bound (every word any candidate covers matched by its best
//! module, with the lowest fragmentation the runs of covered words allow) down, and a reference
//! whose bound is below the best score so far is not
//! searched (on the benchmark set, 7 searches in 10 are skipped).
//!
//! Must not touch the filesystem: the `resources` module reads the cache and builds a scorer
//! with [`Meteor::from_parts`].

pub mod align;
pub mod jdouble;
pub mod normalize;
pub mod paraphrase;
pub mod pow;
pub mod synonyms;
mod table;

use rustc_hash::{FxHashMap, FxHashSet};

pub use normalize::Normalizer;
pub use paraphrase::ParaphraseTable;
pub use synonyms::Synonyms;

/// Longest accepted caption, in bytes of the input string.
pub const MAX_CAPTION_BYTES: usize = 64 * 1024;
/// Most tokens a caption may have after normalisation.
pub const MAX_TOKENS: usize = align::MAX_LEN;

/// α, β, γ, δ of task "default" (English).
const ALPHA: f64 = 0.85;
const BETA: f64 = 0.20;
const GAMMA: f64 = 0.60;
const DELTA: f64 = 0.75;
/// Scoring weights of exact, stem, synonym, paraphrase.
const WEIGHTS: [f64; 4] = [1.0, 0.6, 0.8, 0.6];

/// Why a segment cannot be scored.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum MeteorError {
    /// No reference was given (the jar answers `Error: specify hypothesis and at least one
    /// reference`).
    #[error("METEOR needs at least one reference")]
    NoReferences,
    /// A caption exceeds [`MAX_CAPTION_BYTES`] or [`MAX_TOKENS`].
    #[error("caption too long for METEOR: {what} (limit {limit})")]
    TooLong {
        /// What was measured, e.g. "700 tokens after normalisation".
        what: String,
        /// The limit.
        limit: usize,
    },
}

/// The METEOR scorer with its loaded resources. `Send + Sync`; score from any number of threads.
pub struct Meteor {
    normalizer: Normalizer,
    synonyms: Synonyms,
    function_words: FxHashSet<Box<str>>,
    paraphrases: ParaphraseTable,
    stemmer: rust_stemmers::Stemmer,
    /// Distinguishes instances in the per-thread token cache.
    instance: u64,
}

static NEXT_INSTANCE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Most entries of the per-thread token cache before it is emptied.
const TOKEN_CACHE_MAX: usize = 1 << 16;

/// Per-thread memo of token facts (hash, stem, synsets, ...) and paraphrase-prefix lookups,
/// tagged by the [`Meteor`] instance it belongs to.
#[derive(Default)]
struct TokenCache {
    /// Token → index into `infos`.
    tokens: FxHashMap<Box<str>, u32>,
    /// The same for tokens of at most 15 bytes, keyed by [`short_key`] (no string hashing or
    /// comparison through a pointer): nearly every caption word.
    short: FxHashMap<u128, u32>,
    infos: Vec<align::TokenInfo>,
    prefixes: paraphrase::PrefixCache,
    /// Scratch: the cache indices of one sentence's tokens.
    at: Vec<u32>,
    /// Scratch: the normalised sentence followed by 16 zero bytes.
    padded: Vec<u8>,
    /// How many times the cache was emptied (indices are reused after that).
    generation: u64,
}

/// Everything a scoring thread keeps between segments: the memo, the prepared sentences and the
/// alignment buffers (reused, so that scoring a segment allocates next to nothing). Results
/// never depend on what it held before.
#[derive(Default)]
struct ThreadWork {
    owner: u64,
    cache: TokenCache,
    hyp: align::Sentence,
    refs: Vec<align::Sentence>,
    memo: align::SegmentMemo,
    /// Scratch: (score bound, reference index) per reference.
    order: Vec<(f64, usize)>,
    /// Beam searches run (see `Meteor::searches_on_this_thread`).
    #[cfg(feature = "test-support")]
    searches: u64,
}

thread_local! {
    static WORK: std::cell::RefCell<ThreadWork> = std::cell::RefCell::new(ThreadWork::default());
}

impl std::fmt::Debug for Meteor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Meteor")
            .field("synonyms", &self.synonyms.len())
            .field("function_words", &self.function_words.len())
            .field("prefixes", &self.normalizer.prefix_count())
            .field("paraphrase_pairs", &self.paraphrases.pairs_len())
            .finish()
    }
}

impl Meteor {
    /// Builds a scorer from already loaded parts (`english.prefixes` text, `english.words` text).
    pub fn from_parts(
        prefixes_text: &str,
        function_words_text: &str,
        synonyms: Synonyms,
        paraphrases: ParaphraseTable,
    ) -> Meteor {
        // Raw lines, no trimming (a final newline does not make an empty entry count: an empty
        // token never exists).
        let function_words = function_words_text
            .split('\n')
            .filter(|l| !l.is_empty())
            .map(Box::from)
            .collect();
        Meteor {
            normalizer: Normalizer::new(prefixes_text),
            synonyms,
            function_words,
            paraphrases,
            stemmer: rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English),
            instance: NEXT_INSTANCE.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// The normaliser (rules of spec §3), e.g. to inspect what METEOR sees.
    pub fn normalizer(&self) -> &Normalizer {
        &self.normalizer
    }

    /// The synonym data.
    pub fn synonyms(&self) -> &Synonyms {
        &self.synonyms
    }

    /// Normalises and tokenises `text` and fills `out` with what the matchers need.
    fn prepare(
        &self,
        text: &str,
        tc: &mut TokenCache,
        out: &mut align::Sentence,
    ) -> Result<(), MeteorError> {
        if text.len() > MAX_CAPTION_BYTES {
            return Err(MeteorError::TooLong {
                what: format!("{} bytes", text.len()),
                limit: MAX_CAPTION_BYTES,
            });
        }
        let norm = self.normalizer.normalize_lower(normalize::java_trim(text));
        // Tokens are counted only when their most possible number (one byte each, one byte
        // between) could reach a limit.
        let most = norm.len().div_ceil(2);
        let count = || normalize::tokens(&norm).count();
        if most > MAX_TOKENS {
            let n_tokens = count();
            if n_tokens > MAX_TOKENS {
                return Err(MeteorError::TooLong {
                    what: format!("{n_tokens} tokens after normalisation"),
                    limit: MAX_TOKENS,
                });
            }
        }
        if tc.infos.len() + most > TOKEN_CACHE_MAX && tc.infos.len() + count() > TOKEN_CACHE_MAX {
            tc.tokens.clear();
            tc.short.clear();
            tc.infos.clear();
            tc.generation += 1;
        }
        // One look-up per known token. The text with 16 zero bytes after it, so that a short
        // token's key is one 16-byte read.
        tc.at.clear();
        tc.padded.clear();
        tc.padded.extend_from_slice(norm.as_bytes());
        tc.padded.extend_from_slice(&[0; 16]);
        for t in normalize::tokens(&norm) {
            let start = t.as_ptr() as usize - norm.as_ptr() as usize;
            let short = short_key(&tc.padded, start, t.len());
            let known = match short {
                Some(key) => tc.short.get(&key).copied(),
                None => tc.tokens.get(t).copied(),
            };
            let k = match known {
                Some(k) => k,
                None => {
                    let k = tc.infos.len() as u32;
                    tc.infos.push(align::TokenInfo::new(
                        t,
                        &self.stemmer,
                        &self.synonyms,
                        &self.function_words,
                        &self.paraphrases,
                    ));
                    match short {
                        Some(key) => tc.short.insert(key, k),
                        None => tc.tokens.insert(Box::from(t), k),
                    };
                    k
                }
            };
            tc.at.push(k);
        }
        let infos = &tc.infos;
        out.fill(
            tc.at.iter().map(|&k| (k, &infos[k as usize])),
            &self.paraphrases,
            &mut tc.prefixes,
        );
        Ok(())
    }

    /// Best-of-references statistics for one hypothesis: what the jar answers to pycocoevalcap's
    /// `SCORE ||| ref1 ||| … ||| hyp` request. `hyp` and `refs` are the PTB-tokenized captions
    /// pycocoevalcap would send; the hypothesis gets pycocoevalcap's sanitising, and a reference
    /// containing `|||` counts as several references (as in pycocoevalcap).
    ///
    /// With no reference at all, pycocoevalcap's request line `SCORE |||  ||| hyp` makes the jar
    /// score against one empty reference (score 0); this does the same.
    pub fn segment(&self, hyp: &str, refs: &[&str]) -> Result<SegmentStats, MeteorError> {
        // The sanitising copies only when there is something to change.
        let hyp: std::borrow::Cow<'_, str> = if hyp.contains('|') || has_double_space(hyp) {
            hyp.replace("|||", "").replace("  ", " ").into()
        } else {
            hyp.into()
        };
        let mut fields: Vec<&str> = Vec::with_capacity(refs.len());
        for r in refs {
            if r.contains('|') {
                fields.extend(r.split("|||"));
            } else {
                fields.push(r);
            }
        }
        if fields.is_empty() {
            fields.push("");
        }
        self.segment_fields(&hyp, &fields)
    }

    /// Like [`Meteor::segment`] but with the fields exactly as the jar receives them after
    /// splitting a `SCORE` line (no sanitising, no splitting of `|||`; each field is still
    /// Java-trimmed). No reference is an error, as in the jar.
    pub fn segment_fields(&self, hyp: &str, refs: &[&str]) -> Result<SegmentStats, MeteorError> {
        let best = self.with_segment(hyp, refs, |w, n| {
            // The searches from the highest score bound down: a reference whose bound cannot
            // beat the best score so far is skipped. The result is the jar's: the first
            // reference (by index) with the highest score.
            let rs = &w.refs[..n];
            w.order
                .sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let mut best: Option<(f64, usize, SegmentStats)> = None;
            for &(bound, k) in &w.order {
                if let Some((best_score, best_k, _)) = best {
                    if bound < best_score || (bound == best_score && k > best_k) {
                        continue;
                    }
                }
                let st = SegmentStats {
                    v: align::align_stats(&w.hyp, &rs[k], k, &mut w.memo),
                };
                #[cfg(feature = "test-support")]
                {
                    w.searches += 1;
                }
                let sc = st.score();
                let wins = match best {
                    None => true,
                    Some((best_score, best_k, _)) => {
                        sc > best_score || (sc == best_score && k < best_k)
                    }
                };
                if wins {
                    best = Some((sc, k, st));
                }
            }
            best.map(|b| b.2)
        })?;
        // Always some: there is a reference, and the first one searched is taken.
        Ok(best.unwrap_or_default())
    }

    /// How many beam searches [`Meteor::segment_fields`] has run on the calling thread (for
    /// tests that the score bound skips searches; feature `test-support`).
    #[cfg(feature = "test-support")]
    pub fn searches_on_this_thread() -> u64 {
        WORK.with(|cell| cell.borrow().searches)
    }

    /// Every reference's score bound (what [`Meteor::segment_fields`] uses to skip searches)
    /// and statistics, all searched, in reference order. For tests of the bound (feature
    /// `test-support`).
    #[cfg(feature = "test-support")]
    pub fn reference_bounds(
        &self,
        hyp: &str,
        refs: &[&str],
    ) -> Result<Vec<(f64, SegmentStats)>, MeteorError> {
        self.with_segment(hyp, refs, |w, n| {
            (0..n)
                .map(|k| {
                    let v = align::align_stats(&w.hyp, &w.refs[k], k, &mut w.memo);
                    (w.order[k].0, SegmentStats { v })
                })
                .collect()
        })
    }

    /// Prepares `hyp` and `refs` in this thread's buffers, finds every reference's candidates
    /// and score bound (`order`: (bound, index) in reference order), then runs `f` with the
    /// buffers and the number of references. No reference is an error.
    fn with_segment<R>(
        &self,
        hyp: &str,
        refs: &[&str],
        f: impl FnOnce(&mut ThreadWork, usize) -> R,
    ) -> Result<R, MeteorError> {
        if refs.is_empty() {
            return Err(MeteorError::NoReferences);
        }
        WORK.with(|cell| {
            let mut guard = cell.borrow_mut();
            let w = &mut *guard;
            if w.owner != self.instance {
                w.cache = TokenCache::default();
                w.owner = self.instance;
            }
            let generation = w.cache.generation;
            self.prepare(hyp, &mut w.cache, &mut w.hyp)?;
            w.hyp.index_synonyms();
            w.hyp.index_spans();
            if w.refs.len() < refs.len() {
                w.refs.resize_with(refs.len(), Default::default);
            }
            for (r, out) in refs.iter().zip(&mut w.refs) {
                self.prepare(r, &mut w.cache, out)?;
            }
            let rs = &w.refs[..refs.len()];
            let tids_stable = w.cache.generation == generation;
            w.memo.reset(&w.hyp, rs, &self.paraphrases, tids_stable);
            w.order.clear();
            for (k, r) in rs.iter().enumerate() {
                let bound = align::prepare_alignment(&w.hyp, r, k, &self.paraphrases, &mut w.memo);
                w.order.push((bound, k));
            }
            let out = f(w, refs.len());
            w.memo.trim();
            Ok(out)
        })
    }
}

/// A token of at most 15 bytes as one integer: its bytes, then its length in the top byte (so
/// that no two tokens share a key). The token is `text[start..start + len]`, and `text` has at
/// least 16 bytes from `start` on.
#[inline]
fn short_key(text: &[u8], start: usize, len: usize) -> Option<u128> {
    if len > 15 {
        return None;
    }
    let mut buf = [0u8; 16];
    buf.copy_from_slice(&text[start..start + 16]);
    let bytes = u128::from_le_bytes(buf) & ((1u128 << (8 * len)) - 1);
    Some(bytes | (len as u128) << 120)
}

fn has_double_space(s: &str) -> bool {
    s.as_bytes().windows(2).any(|w| w == b"  ")
}

/// The 23 statistics of one segment (spec §8): `tLen rLen tFunc rFunc`, then
/// `tContent rContent tFunction rFunction` for exact, stem, synonym and paraphrase, then
/// `chunks tWordMatches rWordMatches`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SegmentStats {
    v: [u32; 23],
}

impl SegmentStats {
    /// From the 23 values in line order.
    pub fn from_values(v: [u32; 23]) -> SegmentStats {
        SegmentStats { v }
    }

    /// The 23 values in line order.
    pub fn values(&self) -> &[u32; 23] {
        &self.v
    }

    /// Parses a stats line (`9.0 8.0 …` or `9 8 …`; the first 23 numbers are used, extra ones
    /// ignored, as the jar does). Values must be non-negative integers.
    pub fn parse_line(line: &str) -> Result<SegmentStats, String> {
        let mut v = [0u32; 23];
        let mut it = line.split_ascii_whitespace();
        for (k, slot) in v.iter_mut().enumerate() {
            let t = it
                .next()
                .ok_or_else(|| format!("stats line has {k} numbers, need 23"))?;
            let x: f64 = t.parse().map_err(|_| format!("not a number: {t:?}"))?;
            if !(x >= 0.0 && x.fract() == 0.0 && x <= u32::MAX as f64) {
                return Err(format!("not a non-negative integer: {t:?}"));
            }
            *slot = x as u32;
        }
        Ok(SegmentStats { v })
    }

    /// The jar's stats line, byte for byte (values printed as Java doubles: `9.0`).
    pub fn to_line(&self) -> String {
        let mut s = String::with_capacity(23 * 5);
        for (k, &x) in self.v.iter().enumerate() {
            if k > 0 {
                s.push(' ');
            }
            s.push_str(&jdouble::to_string(x as f64));
        }
        s
    }

    /// Whether this is a perfect one-chunk match (every word matched, one chunk).
    pub fn is_perfect(&self) -> bool {
        let f: [f64; 23] = self.v.map(|x| x as f64);
        perfect(&f)
    }

    /// The segment's METEOR score (spec §9), as the jar's `EVAL` prints it per segment.
    pub fn score(&self) -> f64 {
        score_of(&self.v.map(|x| x as f64))
    }
}

fn totals(s: &[f64; 23]) -> (f64, f64) {
    let mut t = 0.0;
    let mut r = 0.0;
    for k in 0..4 {
        t += s[4 + 4 * k] + s[6 + 4 * k];
        r += s[5 + 4 * k] + s[7 + 4 * k];
    }
    (t, r)
}

fn perfect(s: &[f64; 23]) -> bool {
    let (t, r) = totals(s);
    t == s[0] && r == s[1] && s[20] == 1.0
}

/// Spec §9 on a block of (integer-valued) statistics.
fn score_of(s: &[f64; 23]) -> f64 {
    let (t_len, r_len, t_func, r_func) = (s[0], s[1], s[2], s[3]);
    let t_wl = word_len(t_len, t_func);
    let r_wl = word_len(r_len, r_func);
    let mut t_wm = 0.0;
    for k in 0..4 {
        t_wm += s[4 + 4 * k] * WEIGHTS[k] * DELTA;
    }
    let mut r_wm = 0.0;
    for k in 0..4 {
        r_wm += s[5 + 4 * k] * WEIGHTS[k] * DELTA;
    }
    for k in 0..4 {
        t_wm += s[6 + 4 * k] * WEIGHTS[k] * (1.0 - DELTA);
    }
    for k in 0..4 {
        r_wm += s[7 + 4 * k] * WEIGHTS[k] * (1.0 - DELTA);
    }
    let p = t_wm / t_wl;
    let r = r_wm / r_wl;
    let fmean = 1.0 / (((1.0 - ALPHA) / p) + (ALPHA / r));
    let chunks = s[20];
    let matches = s[21] + s[22];
    let frag = if perfect(s) {
        0.0
    } else {
        chunks / (matches / 2.0)
    };
    let pen = GAMMA * pow::pow_frag(frag, BETA);
    let score = fmean * (1.0 - pen);
    if score.is_nan() {
        0.0
    } else if score > 0.0 {
        score
    } else {
        0.0
    }
}

/// An upper bound of [`score_of`] for a segment of hypothesis `h` and reference `r` whose
/// weighted matches are at most `t_wm` and `r_wm` (as [`score_of`] sums them) and in which a
/// chunk spans at most `run_h` hypothesis and `run_r` reference words; `may_be_perfect`: every
/// word of both may be matched. Inflated by 1e-9 relative so that no rounding of the real
/// computation exceeds it (the real excess is a few ulp).
///
/// The fragmentation is at least `2 / (run_h + run_r)`: with `t` and `r` words matched on each
/// side, `t ≤ chunks · run_h` and `r ≤ chunks · run_r`, so `chunks / ((t + r) / 2)` is at least
/// that.
pub(crate) fn score_bound(
    h: &align::Sentence,
    r: &align::Sentence,
    (t_wm, r_wm): (f64, f64),
    (run_h, run_r): (usize, usize),
    may_be_perfect: bool,
) -> f64 {
    if run_h == 0 || run_r == 0 {
        // No candidate: nothing can match.
        return 0.0;
    }
    let p = t_wm / word_len(h.len() as f64, h.func as f64);
    let rc = r_wm / word_len(r.len() as f64, r.func as f64);
    let fmean = 1.0 / (((1.0 - ALPHA) / p) + (ALPHA / rc));
    let pen = if may_be_perfect {
        0.0
    } else {
        // Runs of up to 64 words on each side (nearly always) from a table.
        static PEN: std::sync::OnceLock<[f64; 129]> = std::sync::OnceLock::new();
        let pen = |runs: usize| GAMMA * (2.0 / runs as f64).powf(BETA);
        match PEN
            .get_or_init(|| std::array::from_fn(|runs| pen(runs.max(1))))
            .get(run_h + run_r)
        {
            Some(&p) => p,
            None => pen(run_h + run_r),
        }
    };
    let ub = fmean * (1.0 - pen) * (1.0 + 1e-9);
    // A NaN (which these inputs cannot produce) would never let a reference be skipped.
    if ub.is_nan() {
        f64::INFINITY
    } else {
        ub.max(0.0)
    }
}

/// A sentence's weighted length (spec §9): content words weigh δ, function words 1 - δ.
#[inline]
fn word_len(len: f64, func: f64) -> f64 {
    (DELTA * (len - func)) + ((1.0 - DELTA) * func)
}

/// The weight of one matched word of module weight `w` (spec §9).
#[inline]
pub(crate) fn word_weight(w: f64, function_word: bool) -> f64 {
    w * if function_word { 1.0 - DELTA } else { DELTA }
}

/// The pooled corpus score of the jar's `EVAL` (spec §11): what pycocoevalcap reports as
/// METEOR. Empty input gives 0.0.
pub fn pooled_score(stats: &[SegmentStats]) -> f64 {
    pooled_score_weighted(stats.iter().map(|st| (st, 1)))
}

/// [`pooled_score`] with each segment counted `weight` times (a bootstrap resample).
pub fn pooled_score_weighted<'a>(stats: impl IntoIterator<Item = (&'a SegmentStats, u64)>) -> f64 {
    let mut sum = [0u64; 23];
    for (st, w) in stats {
        let skip_chunks = st.is_perfect();
        for (k, &x) in st.v.iter().enumerate() {
            if k == 20 && skip_chunks {
                continue;
            }
            sum[k] += x as u64 * w;
        }
    }
    score_of(&sum.map(|x| x as f64))
}
