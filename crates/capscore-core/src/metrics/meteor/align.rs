//! Candidate matches (spec METEOR §5), the beam alignment search (§6) and the statistics of the
//! chosen alignment (§7).

use super::paraphrase::{ParaphraseTable, Prefix, Span, SpanIndex};
use super::synonyms::Synonyms;
use super::table::U32Map;

/// Module numbers (also the stats field groups).
pub const EXACT: u8 = 0;
/// Stem module.
pub const STEM: u8 = 1;
/// Synonym module.
pub const SYNONYM: u8 = 2;
/// Paraphrase module.
pub const PARAPHRASE: u8 = 3;

const BEAM: usize = 40;
const NONE: u32 = u32::MAX;

/// Java `String.hashCode`.
#[inline]
pub fn jhash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(u as i32))
}

/// What the matchers need to know about one token (cached per thread, see `mod.rs`).
#[derive(Clone, Debug)]
pub(crate) struct TokenInfo {
    /// Java hash of the token.
    pub jh: i32,
    /// Java hash of its stem.
    pub sk: i32,
    /// `S(w)`: its synset ids (sorted).
    pub syn: Box<[u32]>,
    /// Function word?
    pub fw: bool,
    /// Paraphrase-table token id (0 = none).
    pub pid: u16,
    /// The paraphrase-table look-up of the token as a one-word phrase.
    pub uni: Prefix,
}

impl TokenInfo {
    pub fn new(
        t: &str,
        stemmer: &rust_stemmers::Stemmer,
        syn: &Synonyms,
        fw: &rustc_hash::FxHashSet<Box<str>>,
        para: &ParaphraseTable,
    ) -> TokenInfo {
        TokenInfo {
            jh: jhash(t),
            sk: jhash(&stemmer.stem(t)),
            syn: syn.synset_ids(t).into_boxed_slice(),
            fw: fw.contains(t),
            pid: para.token_id(t),
            uni: para.unigram(para.token_id(t)),
        }
    }
}

/// A tokenised, normalised sentence with everything the matchers need.
#[derive(Debug, Default)]
pub(crate) struct Sentence {
    pub jh: Vec<i32>,
    pub sk: Vec<i32>,
    /// (synset id, token position), in token order; sorted after [`Sentence::index_synonyms`]
    /// (done for the hypothesis, which is matched against every reference).
    pub syn: Vec<(u32, u32)>,
    pub fw: Vec<bool>,
    /// How many tokens are function words.
    pub func: u32,
    /// Table phrases, by start then length.
    pub spans: Vec<Span>,
    /// The same spans sorted by key index, then start (after [`Sentence::index_spans`]).
    pub spans_by_key: Vec<Span>,
    /// Paraphrase-table token ids (0 = none).
    pub ids: Vec<u16>,
    /// Their one-word look-ups.
    pub uni: Vec<Prefix>,
    /// Scratch for sorting the spans.
    order: Vec<u64>,
    /// Per token: its index in the thread's token cache (see [`SegmentMemo::reset`]).
    pub tid: Vec<u32>,
    /// Token `j`'s synsets are `syn[syn_at[j]..syn_at[j + 1]]` (unless `index_synonyms`
    /// sorted them).
    pub syn_at: Vec<u32>,
}

impl Sentence {
    /// Sorts the (synset id, position) pairs so that they can be searched by id (needed for
    /// hypotheses of more than 64 tokens only: shorter ones are matched through bit masks).
    pub fn index_synonyms(&mut self) {
        if self.len() <= 64 {
            return;
        }
        self.syn.sort_unstable();
    }

    pub fn len(&self) -> usize {
        self.jh.len()
    }

    /// Fills the sentence from its tokens' facts (reusing its buffers).
    /// `infos` yields (token-cache index, facts) per token.
    pub fn fill<'a>(
        &mut self,
        infos: impl Iterator<Item = (u32, &'a TokenInfo)>,
        para: &ParaphraseTable,
        prefix_cache: &mut super::paraphrase::PrefixCache,
    ) {
        self.jh.clear();
        self.sk.clear();
        self.fw.clear();
        self.func = 0;
        self.ids.clear();
        self.uni.clear();
        self.syn.clear();
        self.tid.clear();
        self.syn_at.clear();
        self.syn_at.push(0);
        for (pos, (tid, t)) in infos.enumerate() {
            self.jh.push(t.jh);
            self.sk.push(t.sk);
            self.fw.push(t.fw);
            self.func += u32::from(t.fw);
            self.ids.push(t.pid);
            self.uni.push(t.uni);
            self.tid.push(tid);
            self.syn.extend(t.syn.iter().map(|&id| (id, pos as u32)));
            self.syn_at.push(self.syn.len() as u32);
        }
        para.spans_with(&self.ids, &self.uni, prefix_cache, &mut self.spans);
    }

    /// Fills `spans_by_key` (needed for the hypothesis only).
    pub fn index_spans(&mut self) {
        // Sorted by (key, start): spans are in start order, so (key, position) integers sort
        // the same way, and integers sort faster than spans.
        self.order.clear();
        self.order.extend(
            self.spans
                .iter()
                .enumerate()
                .map(|(k, sp)| (sp.key as u64) << 32 | k as u64),
        );
        self.order.sort_unstable();
        self.spans_by_key.clear();
        self.spans_by_key.extend(
            self.order
                .iter()
                .map(|&x| self.spans[(x & 0xffff_ffff) as usize]),
        );
    }
}

#[derive(Clone, Copy, Debug)]
struct Cand {
    j: u32,
    len: u32,
    i: u32,
    mlen: u32,
    module: u8,
}

/// The candidate matches of one alignment (buffers reused from alignment to alignment); only
/// the candidates of references that are searched are grouped ([`Cands::finish`]).
#[derive(Debug, Default)]
struct Cands {
    /// Candidates in insertion order.
    list: Vec<Cand>,
    /// Candidate ids grouped by reference start, insertion order within a group (after
    /// [`Cands::finish`]): group `j` is `order[start[j]..start[j + 1]]`.
    order: Vec<u32>,
    start: Vec<u32>,
    fill: Vec<u32>,
    /// Per reference / hypothesis position: how many candidates cover it (after
    /// [`Cands::finish`]).
    cov_r: Vec<u32>,
    cov_h: Vec<u32>,
    /// Per reference / hypothesis position: the best module weight of a candidate covering
    /// it (0 if none).
    best_r: Vec<f64>,
    best_h: Vec<f64>,
}

impl Cands {
    fn reset(&mut self, m: usize, n: usize) {
        self.list.clear();
        self.best_r.clear();
        self.best_r.resize(n, 0.0);
        self.best_h.clear();
        self.best_h.resize(m, 0.0);
    }

    /// Groups the candidates by reference start (a stable counting sort) and counts the
    /// candidates covering each word.
    fn finish(&mut self) {
        let (m, n) = (self.best_h.len(), self.best_r.len());
        self.cov_r.clear();
        self.cov_r.resize(n, 0);
        self.cov_h.clear();
        self.cov_h.resize(m, 0);
        self.start.clear();
        self.start.resize(n + 1, 0);
        for c in &self.list {
            self.start[c.j as usize + 1] += 1;
            for k in c.j..c.j + c.len {
                self.cov_r[k as usize] += 1;
            }
            for k in c.i..c.i + c.mlen {
                self.cov_h[k as usize] += 1;
            }
        }
        for j in 1..self.start.len() {
            self.start[j] += self.start[j - 1];
        }
        self.fill.clear();
        self.fill.extend_from_slice(&self.start);
        self.order.clear();
        self.order.resize(self.list.len(), 0);
        for (id, c) in self.list.iter().enumerate() {
            let slot = &mut self.fill[c.j as usize];
            self.order[*slot as usize] = id as u32;
            *slot += 1;
        }
    }

    /// `C[j]`: the candidate ids starting at reference word `j`, in insertion order.
    #[inline]
    fn at(&self, j: usize) -> &[u32] {
        &self.order[self.start[j] as usize..self.start[j + 1] as usize]
    }

    #[inline]
    fn add(&mut self, j: u32, len: u32, i: u32, mlen: u32, module: u8) {
        self.list.push(Cand {
            j,
            len,
            i,
            mlen,
            module,
        });
        let w = super::WEIGHTS[module as usize];
        for k in j..j + len {
            self.best_r[k as usize] = self.best_r[k as usize].max(w);
        }
        for k in i..i + mlen {
            self.best_h[k as usize] = self.best_h[k as usize].max(w);
        }
    }
}

/// Hypothesis synset ids → bit mask of the hypothesis positions having them (hypotheses of at
/// most 64 tokens), rebuilt per segment.
#[derive(Debug, Default)]
struct SynMasks(U32Map<u64>);

impl SynMasks {
    fn rebuild(&mut self, pairs: &[(u32, u32)]) {
        self.0.reset(pairs.len());
        for &(id, pos) in pairs {
            *self.0.entry(id) |= 1 << pos;
        }
    }

    #[inline]
    fn get(&self, id: u32) -> u64 {
        self.0.get(id).unwrap_or(0)
    }
}

/// Java hash → bit mask of the hypothesis positions having it (hypotheses of at most 64
/// tokens), rebuilt per segment: open addressing over 128 slots; an empty slot has mask 0 (a
/// present hash always has a position).
#[derive(Debug)]
struct HashMasks([(i32, u64); 128]);

impl Default for HashMasks {
    fn default() -> Self {
        HashMasks([(0, 0); 128])
    }
}

impl HashMasks {
    #[inline]
    fn slot(key: i32) -> usize {
        ((key as u32).wrapping_mul(0x9E37_79B9) >> 25) as usize
    }

    fn rebuild(&mut self, keys: &[i32]) {
        self.0.fill((0, 0));
        for (pos, &key) in keys.iter().enumerate() {
            let mut k = Self::slot(key);
            while self.0[k].1 != 0 && self.0[k].0 != key {
                k = (k + 1) & 127;
            }
            self.0[k] = (key, self.0[k].1 | 1 << pos);
        }
    }

    #[inline]
    fn get(&self, key: i32) -> u64 {
        let mut k = Self::slot(key);
        loop {
            let (have, mask) = self.0[k];
            if mask == 0 || have == key {
                return mask;
            }
            k = (k + 1) & 127;
        }
    }
}

/// Marks a `SegmentMemo::ref_side` entry not computed yet.
const NOT_YET: (u32, u32) = (u32::MAX, u32::MAX);

/// Work shared by all references of one segment, and buffers reused across segments (one per
/// scoring thread; results never depend on what it held before).
#[derive(Debug, Default)]
pub(crate) struct SegmentMemo {
    /// Per distinct reference-side phrase key (by its position in `union`): its paraphrases in
    /// the hypothesis, as a range of `ref_found` (sorted (ordinal, hyp start, hyp length)), or
    /// `NOT_YET`.
    ref_side: Vec<(u32, u32)>,
    /// The lists `ref_side` points into.
    ref_found: Vec<(u32, u32, u32)>,
    /// Per hypothesis span (index into `h.spans`): (ordinal, paraphrase key) of its paraphrases
    /// that occur in at least one reference, sorted: `hyp_side[hyp_at[k]..hyp_at[k + 1]]`.
    hyp_side: Vec<(u32, u32)>,
    hyp_at: Vec<u32>,
    /// Synset masks of the hypothesis (valid when `masks_ok`).
    syn: SynMasks,
    /// Word and stem hash masks of the hypothesis (valid when `masks_ok`).
    words: HashMasks,
    stems: HashMasks,
    /// The hypothesis has at most 64 tokens: word matches are found through bit masks.
    masks_ok: bool,
    /// Token-cache indices are stable over this segment: `tok_masks` may be used.
    tids_ok: bool,
    /// Per token-cache index: (segment stamp, exact, stem, synonym masks of the hypothesis
    /// positions that token matches), filled on first use in a segment.
    tok_masks: Vec<(u64, [u64; 3])>,
    stamp: u64,
    /// Scratch: per reference position, its three masks.
    ref_word_masks: Vec<[u64; 3]>,
    union_keys: Vec<u32>,
    union: Vec<Span>,
    union_index: SpanIndex,
    hyp_index: SpanIndex,
    /// Per reference of the segment: its candidates.
    cands: Vec<Cands>,
    shared: Vec<bool>,
    found: Vec<(u32, u32, u32)>,
    fixed: Vec<u32>,
    arena: Vec<(u32, u32)>,
    keys: Vec<u64>,
    wide: Vec<(u64, u32)>,
    paths: Vec<Path<1>>,
    next: Vec<Path<1>>,
}

impl SegmentMemo {
    /// Prepares the memo for hypothesis `h` against `refs`. `tids_stable`: the token-cache
    /// indices in the sentences all refer to the same cache contents (it was not emptied while
    /// they were prepared), so equal indices mean equal tokens.
    pub fn reset(
        &mut self,
        h: &Sentence,
        refs: &[Sentence],
        para: &ParaphraseTable,
        tids_stable: bool,
    ) {
        self.ref_found.clear();
        // The distinct reference keys, sorted (as plain integers: cheaper to sort than spans);
        // only their keys are used.
        self.union_keys.clear();
        self.union_keys
            .extend(refs.iter().flat_map(|r| r.spans.iter().map(|sp| sp.key)));
        self.union_keys.sort_unstable();
        self.union_keys.dedup();
        self.union.clear();
        self.union.extend(self.union_keys.iter().map(|&key| Span {
            start: 0,
            len: 0,
            key,
            plo: 0,
            phi: 0,
        }));
        self.union_index.rebuild(&self.union);
        self.ref_side.clear();
        self.ref_side.resize(self.union.len(), NOT_YET);
        self.hyp_index.rebuild(&h.spans_by_key);
        self.hyp_side.clear();
        self.hyp_at.clear();
        self.hyp_at.push(0);
        for sp in &h.spans {
            let from = self.hyp_side.len();
            if sp.has_paraphrases() {
                let out = &mut self.hyp_side;
                para.matches_indexed(sp, &self.union, &self.union_index, |ord, q| {
                    out.push((ord, q.key))
                });
                self.hyp_side[from..].sort_unstable();
            }
            self.hyp_at.push(self.hyp_side.len() as u32);
        }
        self.masks_ok = h.len() <= 64;
        self.tids_ok = tids_stable;
        self.stamp += 1;
        if self.masks_ok {
            self.syn.rebuild(&h.syn);
            self.words.rebuild(&h.jh);
            self.stems.rebuild(&h.sk);
        }
    }

    /// Frees the candidate lists of a segment of very long sentences (each reference keeps
    /// its own list until the next segment).
    pub fn trim(&mut self) {
        const KEEP: usize = 1 << 12;
        for c in &mut self.cands {
            if c.list.capacity() > KEEP {
                *c = Cands::default();
            }
        }
    }

    /// The exact, stem and synonym masks of reference `r`'s token `j` against hypothesis `h`
    /// (stem and synonym exclude the positions of the exact mask, as the matchers do).
    #[inline]
    fn word_masks(&mut self, r: &Sentence, j: usize) -> [u64; 3] {
        let tid = r.tid[j] as usize;
        if self.tids_ok {
            if let Some(&(stamp, masks)) = self.tok_masks.get(tid) {
                if stamp == self.stamp {
                    return masks;
                }
            }
        }
        let exact = self.words.get(r.jh[j]);
        let stem = self.stems.get(r.sk[j]);
        let mut syn = 0u64;
        for &(id, _) in &r.syn[r.syn_at[j] as usize..r.syn_at[j + 1] as usize] {
            syn |= self.syn.get(id);
        }
        let masks = [exact, stem & !exact, syn & !exact];
        if self.tids_ok {
            if self.tok_masks.len() <= tid {
                self.tok_masks.resize(tid + 1, (0, [0; 3]));
            }
            self.tok_masks[tid] = (self.stamp, masks);
        }
        masks
    }
}

fn candidates(
    h: &Sentence,
    r: &Sentence,
    para: &ParaphraseTable,
    seg: &mut SegmentMemo,
    c: &mut Cands,
) {
    let (m, n) = (h.len(), r.len());
    c.reset(m, n);
    let identical = m == n && h.jh == r.jh;
    if seg.masks_ok {
        // Word matches from per-token masks, in the order of the loops below: module, then
        // reference position, then hypothesis position.
        let mut rm = std::mem::take(&mut seg.ref_word_masks);
        rm.clear();
        for j in 0..n {
            let w = seg.word_masks(r, j);
            rm.push(w);
        }
        let modules: &[u8] = if identical {
            &[EXACT]
        } else {
            &[EXACT, STEM, SYNONYM]
        };
        for &module in modules {
            for (j, w) in rm.iter().enumerate() {
                let mut bits = w[module as usize];
                while bits != 0 {
                    let i = bits.trailing_zeros();
                    bits &= bits - 1;
                    c.add(j as u32, 1, i, 1, module);
                }
            }
        }
        seg.ref_word_masks = rm;
        if identical {
            return;
        }
    } else {
        for j in 0..n {
            for i in 0..m {
                if h.jh[i] == r.jh[j] {
                    c.add(j as u32, 1, i as u32, 1, EXACT);
                }
            }
        }
        if identical {
            return;
        }
        for j in 0..n {
            for i in 0..m {
                if h.sk[i] == r.sk[j] && h.jh[i] != r.jh[j] {
                    c.add(j as u32, 1, i as u32, 1, STEM);
                }
            }
        }
        // Synonyms: every (i, j) sharing a synset id, in (j, i) order (the hypothesis' pairs
        // are sorted by id).
        let shared = &mut seg.shared;
        shared.clear();
        shared.resize(m * n, false);
        let mut any = false;
        let hs = &h.syn;
        for &(id, j) in &r.syn {
            let lo = hs.partition_point(|e| e.0 < id);
            for &(_, i) in hs[lo..].iter().take_while(|e| e.0 == id) {
                shared[i as usize * n + j as usize] = true;
                any = true;
            }
        }
        if any {
            for j in 0..n {
                for i in 0..m {
                    if shared[i * n + j] && h.jh[i] != r.jh[j] {
                        c.add(j as u32, 1, i as u32, 1, SYNONYM);
                    }
                }
            }
        }
    }
    // (a) reference phrases whose paraphrase occurs in the hypothesis (memoised per segment:
    // the references of one image share many phrases).
    for sp in &r.spans {
        if !sp.has_paraphrases() {
            continue;
        }
        // Every reference key is in the union (built from these references).
        let (u, u_end) = seg.union_index.get(sp.key);
        debug_assert!(u_end == u + 1, "reference key missing from the union");
        let u = u as usize;
        let (from, to) = match seg.ref_side[u] {
            NOT_YET => {
                let out = &mut seg.ref_found;
                let from = out.len();
                para.matches_indexed(sp, &h.spans_by_key, &seg.hyp_index, |ord, hs| {
                    out.push((ord, hs.start, hs.len))
                });
                out[from..].sort_unstable();
                let at = (from as u32, out.len() as u32);
                seg.ref_side[u] = at;
                at
            }
            at => at,
        };
        for &(_, i, mlen) in &seg.ref_found[from as usize..to as usize] {
            c.add(sp.start, sp.len, i, mlen, PARAPHRASE);
        }
    }
    // (b) hypothesis phrases whose paraphrase occurs in the reference (the paraphrases present
    // in any reference were found once per segment).
    let found = &mut seg.found;
    for (k, sp) in h.spans.iter().enumerate() {
        let list = &seg.hyp_side[seg.hyp_at[k] as usize..seg.hyp_at[k + 1] as usize];
        if list.is_empty() {
            continue;
        }
        found.clear();
        // A reference has a few dozen spans and a hypothesis phrase about two such
        // paraphrases: scanning beats indexing the reference's spans by key.
        for &(ord, q) in list {
            for rs in r.spans.iter().filter(|s| s.key == q) {
                found.push((ord, rs.start, rs.len));
            }
        }
        found.sort_unstable();
        for &(_, j, len) in found.iter() {
            c.add(j, len, sp.start, sp.len, PARAPHRASE);
        }
    }
}

/// A search path. Plain data (no heap): the used-word sets are bitsets of `W` words and the
/// chosen matches are a linked list in an arena shared by all paths of one alignment.
#[derive(Clone, Copy, Debug)]
struct Path<const W: usize> {
    used_h: [u64; W],
    used_r: [u64; W],
    /// Matched words counted by the search (hypothesis plus reference side; only their sum is
    /// ever compared). Small fields keep a path at 32 bytes: lengths are at most `MAX_LEN`.
    m: i16,
    chunks: i16,
    idx: i16,
    last: i16,
    dist: i32,
    /// Last chosen (non-fixed) match: index into the arena, or NONE.
    node: u32,
}

#[inline]
fn any_set<const W: usize>(bits: &[u64; W], from: u32, len: u32) -> bool {
    (from..from + len).any(|k| bits[(k >> 6) as usize] >> (k & 63) & 1 != 0)
}

#[inline]
fn set_bits<const W: usize>(bits: &mut [u64; W], from: u32, len: u32) {
    for k in from..from + len {
        bits[(k >> 6) as usize] |= 1 << (k & 63);
    }
}

/// `floor(k * WS[module])` with search weights 1.0, 0.5, 0.5, 0.5 (the int-truncation quirk).
#[inline]
fn inc(k: u32, module: u8) -> i32 {
    if module == EXACT {
        k as i32
    } else {
        (k / 2) as i32
    }
}

impl<const W: usize> Path<W> {
    #[inline]
    fn take(&mut self, c: &Cand) {
        self.m += (inc(c.mlen, c.module) + inc(c.len, c.module)) as i16;
        if self.last != -1 && c.i as i32 != self.last as i32 {
            self.chunks += 1;
        }
        self.idx = (c.j + c.len) as i16;
        self.last = (c.i + c.mlen) as i16;
    }
}

#[inline]
fn cmp_paths<const W: usize>(x: &Path<W>, y: &Path<W>) -> std::cmp::Ordering {
    y.m.cmp(&x.m)
        .then(x.chunks.cmp(&y.chunks))
        .then(x.dist.cmp(&y.dist))
}

/// Largest sentence length (tokens) the search supports.
pub const MAX_LEN: usize = 64 * 8;

/// Finds the candidate matches of hypothesis `h` with reference `r`, the `k`-th of the segment,
/// and returns an upper bound of the score of any alignment of them (see [`score_bound`]).
pub(crate) fn prepare_alignment(
    h: &Sentence,
    r: &Sentence,
    k: usize,
    para: &ParaphraseTable,
    seg: &mut SegmentMemo,
) -> f64 {
    if seg.cands.len() <= k {
        seg.cands.resize_with(k + 1, Default::default);
    }
    let mut c = std::mem::take(&mut seg.cands[k]);
    candidates(h, r, para, seg, &mut c);
    let bound = score_bound(h, r, &c);
    seg.cands[k] = c;
    bound
}

/// Aligns hypothesis `h` with reference `r`, the `k`-th of the segment (after
/// [`prepare_alignment`]), and returns the 23 statistics (spec §8). Both must have at most
/// [`MAX_LEN`] tokens.
pub(crate) fn align_stats(
    h: &Sentence,
    r: &Sentence,
    k: usize,
    seg: &mut SegmentMemo,
) -> [u32; 23] {
    let longest = h.len().max(r.len());
    if longest <= 64 {
        let bufs = (
            std::mem::take(&mut seg.paths),
            std::mem::take(&mut seg.next),
        );
        let (stats, bufs) = align_w::<1>(h, r, k, seg, bufs);
        (seg.paths, seg.next) = bufs;
        stats
    } else if longest <= 128 {
        align_w::<2>(h, r, k, seg, Default::default()).0
    } else {
        align_w::<8>(h, r, k, seg, Default::default()).0
    }
}

/// An upper bound of the score of any alignment of these candidates, slightly inflated so that
/// rounding can never put a real score above it: every word any candidate covers matched by
/// its best-weighted module, and the lowest fragmentation chunks of covered words allow (spec
/// §9, see [`super::score_bound`]). A reference whose bound is below the best score so far
/// cannot win (the first strictly highest score wins), so its search can be skipped.
fn score_bound(h: &Sentence, r: &Sentence, cands: &Cands) -> f64 {
    let (m, n) = (h.len(), r.len());
    // Per side: the weighted matches if every covered word were matched by its best module,
    // the covered words, and the longest run of consecutive covered words.
    let side = |weights: &[f64], fw: &[bool]| {
        let (mut wm, mut covered, mut run, mut longest) = (0.0, 0usize, 0usize, 0usize);
        for (&w, &f) in weights.iter().zip(fw) {
            if w > 0.0 {
                covered += 1;
                run += 1;
                longest = longest.max(run);
                wm += super::word_weight(w, f);
            } else {
                run = 0;
            }
        }
        (wm, covered, longest)
    };
    let (t_wm, t_cov, t_run) = side(&cands.best_h, &h.fw);
    let (r_wm, r_cov, r_run) = side(&cands.best_r, &r.fw);
    let may_be_perfect = t_cov == m && r_cov == n;
    super::score_bound(h, r, (t_wm, r_wm), (t_run, r_run), may_be_perfect)
}

/// Sorts `paths` best first (stable: equal paths keep their order) and keeps the best
/// [`BEAM`], using `keys` and `wide` as scratch.
fn sort_beam<const W: usize>(
    paths: &mut Vec<Path<W>>,
    spare: &mut Vec<Path<W>>,
    keys: &mut Vec<u64>,
    wide: &mut Vec<(u64, u32)>,
) {
    if paths.len() <= 1 {
        return;
    }
    // Key: matches descending, chunks ascending, distance ascending (all non-negative and
    // bounded: m1 + m2 < 2^11, chunks < 2^10, distance < 2^31), then position: a stable
    // order. With at most 2^12 paths, key and position share one integer.
    let key = |p: &Path<W>| {
        ((0x7ff - p.m as u64) << 41) | ((p.chunks as u64 & 0x3ff) << 31) | p.dist.max(0) as u64
    };
    spare.clear();
    if paths.len() <= 1 << POSITION_BITS {
        keys.clear();
        keys.extend(
            paths
                .iter()
                .enumerate()
                .map(|(k, p)| key(p) << POSITION_BITS | k as u64),
        );
        keys.sort_unstable();
        keys.truncate(BEAM);
        let mask = (1 << POSITION_BITS) - 1;
        spare.extend(keys.iter().map(|&x| paths[(x & mask) as usize]));
    } else {
        wide.clear();
        wide.extend(paths.iter().enumerate().map(|(k, p)| (key(p), k as u32)));
        wide.sort_unstable();
        spare.extend(wide.iter().take(BEAM).map(|&(_, k)| paths[k as usize]));
    }
    std::mem::swap(paths, spare);
}

/// Bits of a beam sort key that hold the path's position.
const POSITION_BITS: u32 = 12;

fn align_w<const W: usize>(
    h: &Sentence,
    r: &Sentence,
    k: usize,
    seg: &mut SegmentMemo,
    (mut paths, mut next): (Vec<Path<W>>, Vec<Path<W>>),
) -> ([u32; 23], (Vec<Path<W>>, Vec<Path<W>>)) {
    let (m, n) = (h.len(), r.len());
    // Grouped by reference start only for the references searched.
    seg.cands[k].finish();
    let cands = &seg.cands[k];
    let mut p0 = Path::<W> {
        used_h: [0; W],
        used_r: [0; W],
        m: 0,
        chunks: 0,
        idx: 0,
        last: -1,
        dist: 0,
        node: NONE,
    };
    // Fixed matches, shared by every path.
    let fixed = &mut seg.fixed;
    fixed.clear();
    fixed.resize(n, NONE);
    for (j, slot) in fixed.iter_mut().enumerate() {
        if let [id] = *cands.at(j) {
            let c = cands.list[id as usize];
            let rs = c.j as usize..(c.j + c.len) as usize;
            let hs = c.i as usize..(c.i + c.mlen) as usize;
            if cands.cov_r[rs].iter().all(|&x| x == 1) && cands.cov_h[hs].iter().all(|&x| x == 1) {
                *slot = id;
                set_bits(&mut p0.used_r, c.j, c.len);
                set_bits(&mut p0.used_h, c.i, c.mlen);
            }
        }
    }
    // Arena of chosen matches: (candidate id, previous node).
    let arena = &mut seg.arena;
    arena.clear();
    let (keys, wide) = (&mut seg.keys, &mut seg.wide);
    let mut spare: Vec<Path<W>> = Vec::new();
    next.clear();
    next.push(p0);
    for cur in 0..=n {
        std::mem::swap(&mut paths, &mut next);
        next.clear();
        sort_beam(&mut paths, &mut spare, keys, wide);
        let mut fallback: Option<Path<W>> = None;
        for path in paths.iter_mut() {
            let mut path = *path;
            if cur == n {
                if path.last != -1 {
                    path.chunks += 1;
                }
                next.push(path);
                continue;
            }
            if any_set(&path.used_r, cur as u32, 1) {
                if (cur as i32) < path.idx as i32 {
                    next.push(path);
                } else {
                    let id = fixed.get(path.idx as usize).copied().unwrap_or(NONE);
                    if id != NONE {
                        let c = cands.list[id as usize];
                        path.take(&c);
                        path.dist += (c.j as i32 - c.i as i32).abs();
                        next.push(path);
                    } else if fallback.is_none() {
                        fallback = Some(path);
                    }
                }
                continue;
            }
            for &id in cands.at(cur) {
                let c = cands.list[id as usize];
                if any_set(&path.used_r, c.j, c.len) || any_set(&path.used_h, c.i, c.mlen) {
                    continue;
                }
                let mut child = path;
                set_bits(&mut child.used_r, c.j, c.len);
                set_bits(&mut child.used_h, c.i, c.mlen);
                arena.push((id, path.node));
                child.node = (arena.len() - 1) as u32;
                child.take(&c);
                // QUIRK (spec §6.3): the distance goes to the parent, after the copy.
                path.dist += (c.j as i32 - c.i as i32).abs();
                next.push(child);
            }
            if path.last != -1 {
                path.chunks += 1;
                path.last = -1;
            }
            path.idx += 1;
            next.push(path);
        }
        if next.is_empty() {
            if let Some(p) = fallback {
                next.push(p);
            }
        }
    }
    let mut s = [0u32; 23];
    s[0] = m as u32;
    s[1] = n as u32;
    s[2] = h.func;
    s[3] = r.func;
    // The first of the best paths (a stable sort's head).
    let Some(best) = next.iter().min_by(|x, y| cmp_paths(x, y)) else {
        return (s, (paths, next));
    };
    let matches = fixed;
    let mut node = best.node;
    while node != NONE {
        let (id, prev) = arena[node as usize];
        matches[cands.list[id as usize].j as usize] = id;
        node = prev;
    }
    let mut chunks = 0u32;
    let mut last: i64 = -1;
    let mut j = 0usize;
    while j < n {
        let id = matches[j];
        if id == NONE {
            if last != -1 {
                chunks += 1;
                last = -1;
            }
            j += 1;
        } else {
            let c = cands.list[id as usize];
            let base = 4 + 4 * c.module as usize;
            for k in c.i..c.i + c.mlen {
                s[base + if h.fw[k as usize] { 2 } else { 0 }] += 1;
            }
            for k in c.j..c.j + c.len {
                s[base + if r.fw[k as usize] { 3 } else { 1 }] += 1;
            }
            s[21] += c.mlen;
            s[22] += c.len;
            if last != -1 && c.i as i64 != last {
                chunks += 1;
            }
            j = (c.j + c.len) as usize;
            last = (c.i + c.mlen) as i64;
        }
    }
    if last != -1 {
        chunks += 1;
    }
    s[20] = chunks;
    (s, (paths, next))
}
