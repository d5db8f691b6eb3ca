//! Candidate matches (spec METEOR §5), the beam alignment search (§6) and the statistics of the
//! chosen alignment (§7).

use super::paraphrase::{ParaphraseTable, Span};
use super::synonyms::Synonyms;

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
    /// Table phrases, by start then length.
    pub spans: Vec<Span>,
    /// The same spans sorted by key index, then start.
    pub spans_by_key: Vec<Span>,
}

impl Sentence {
    /// Sorts the (synset id, position) pairs so that they can be searched by id.
    pub fn index_synonyms(&mut self) {
        self.syn.sort_unstable();
    }

    pub fn len(&self) -> usize {
        self.jh.len()
    }

    pub fn build<'a>(
        infos: impl ExactSizeIterator<Item = &'a TokenInfo> + Clone,
        para: &ParaphraseTable,
        prefix_cache: &mut super::paraphrase::PrefixCache,
    ) -> Sentence {
        let n = infos.len();
        let mut s = Sentence {
            jh: Vec::with_capacity(n),
            sk: Vec::with_capacity(n),
            syn: Vec::new(),
            fw: Vec::with_capacity(n),
            spans: Vec::new(),
            spans_by_key: Vec::new(),
        };
        let mut ids = Vec::with_capacity(n);
        for (pos, t) in infos.enumerate() {
            s.jh.push(t.jh);
            s.sk.push(t.sk);
            s.fw.push(t.fw);
            ids.push(t.pid);
            s.syn.extend(t.syn.iter().map(|&id| (id, pos as u32)));
        }
        s.spans = para.spans_cached(&ids, prefix_cache);
        s.spans_by_key = s.spans.clone();
        s.spans_by_key.sort_by_key(|s| (s.key, s.start));
        s
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

struct Cands {
    /// Candidates in insertion order.
    list: Vec<Cand>,
    /// Candidate ids grouped by reference start, insertion order within a group (after
    /// [`Cands::finish`]): group `j` is `order[start[j]..start[j + 1]]`.
    order: Vec<u32>,
    start: Vec<u32>,
    cov_r: Vec<u32>,
    cov_h: Vec<u32>,
}

impl Cands {
    fn new(m: usize, n: usize) -> Cands {
        Cands {
            list: Vec::with_capacity(4 * n.max(m) + 8),
            order: Vec::new(),
            start: vec![0; n + 1],
            cov_r: vec![0; n],
            cov_h: vec![0; m],
        }
    }

    /// Groups the candidates by reference start (a stable counting sort).
    fn finish(&mut self) {
        for c in &self.list {
            self.start[c.j as usize + 1] += 1;
        }
        for j in 1..self.start.len() {
            self.start[j] += self.start[j - 1];
        }
        let mut fill = self.start.clone();
        self.order = vec![0; self.list.len()];
        for (id, c) in self.list.iter().enumerate() {
            let slot = &mut fill[c.j as usize];
            self.order[*slot as usize] = id as u32;
            *slot += 1;
        }
    }

    /// `C[j]`: the candidate ids starting at reference word `j`, in insertion order.
    #[inline]
    fn at(&self, j: usize) -> &[u32] {
        &self.order[self.start[j] as usize..self.start[j + 1] as usize]
    }

    fn add(&mut self, j: u32, len: u32, i: u32, mlen: u32, module: u8) {
        self.list.push(Cand {
            j,
            len,
            i,
            mlen,
            module,
        });
        for k in j..j + len {
            self.cov_r[k as usize] += 1;
        }
        for k in i..i + mlen {
            self.cov_h[k as usize] += 1;
        }
    }
}

/// Paraphrase work shared by all references of one segment.
#[derive(Debug, Default)]
pub(crate) struct SegmentMemo {
    /// Reference-side phrase key → its paraphrases in the hypothesis, as sorted
    /// (ordinal, hyp start, hyp length).
    ref_side: rustc_hash::FxHashMap<u32, Vec<(u32, u32, u32)>>,
    /// Per hypothesis span (index into `h.spans`): (ordinal, paraphrase key) of its paraphrases
    /// that occur in at least one reference, sorted.
    hyp_side: Vec<Vec<(u32, u32)>>,
}

impl SegmentMemo {
    pub fn new(h: &Sentence, refs: &[Sentence], para: &ParaphraseTable) -> SegmentMemo {
        let mut union: Vec<Span> = refs
            .iter()
            .flat_map(|r| r.spans_by_key.iter().copied())
            .collect();
        union.sort_unstable_by_key(|s| s.key);
        union.dedup_by_key(|s| s.key);
        let hyp_side = h
            .spans
            .iter()
            .map(|sp| {
                let mut v = Vec::new();
                if para.has_paraphrases(sp.key) {
                    para.matches(sp.key, &union, |ord, q| v.push((ord, q.key)));
                    v.sort_unstable();
                }
                v
            })
            .collect();
        SegmentMemo {
            ref_side: Default::default(),
            hyp_side,
        }
    }
}

fn candidates(h: &Sentence, r: &Sentence, para: &ParaphraseTable, seg: &mut SegmentMemo) -> Cands {
    let (m, n) = (h.len(), r.len());
    let mut c = Cands::new(m, n);
    let identical = m == n && h.jh == r.jh;
    for j in 0..n {
        for i in 0..m {
            if h.jh[i] == r.jh[j] {
                c.add(j as u32, 1, i as u32, 1, EXACT);
            }
        }
    }
    if identical {
        c.finish();
        return c;
    }
    for j in 0..n {
        for i in 0..m {
            if h.sk[i] == r.sk[j] && h.jh[i] != r.jh[j] {
                c.add(j as u32, 1, i as u32, 1, STEM);
            }
        }
    }
    // Synonyms: mark every (i, j) sharing a synset id (the hypothesis' pairs are sorted by id).
    let mut shared = vec![false; m * n];
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
    // (a) reference phrases whose paraphrase occurs in the hypothesis (memoised per segment:
    // the references of one image share many phrases).
    for sp in &r.spans {
        if !para.has_paraphrases(sp.key) {
            continue;
        }
        let found = seg.ref_side.entry(sp.key).or_insert_with(|| {
            let mut v = Vec::new();
            para.matches(sp.key, &h.spans_by_key, |ord, hs| {
                v.push((ord, hs.start, hs.len))
            });
            v.sort_unstable();
            v
        });
        for &(_, i, mlen) in found.iter() {
            c.add(sp.start, sp.len, i, mlen, PARAPHRASE);
        }
    }
    // (b) hypothesis phrases whose paraphrase occurs in the reference (the paraphrases present
    // in any reference were found once per segment).
    let mut found: Vec<(u32, u32, u32)> = Vec::new();
    for (k, sp) in h.spans.iter().enumerate() {
        let Some(list) = seg.hyp_side.get(k) else {
            continue;
        };
        if list.is_empty() {
            continue;
        }
        found.clear();
        for &(ord, q) in list {
            let lo = r.spans_by_key.partition_point(|s| s.key < q);
            for rs in r.spans_by_key[lo..].iter().take_while(|s| s.key == q) {
                found.push((ord, rs.start, rs.len));
            }
        }
        found.sort_unstable();
        for &(_, j, len) in &found {
            c.add(j, len, sp.start, sp.len, PARAPHRASE);
        }
    }
    c.finish();
    c
}

/// A search path. Plain data (no heap): the used-word sets are bitsets of `W` words and the
/// chosen matches are a linked list in an arena shared by all paths of one alignment.
#[derive(Clone, Copy, Debug)]
struct Path<const W: usize> {
    used_h: [u64; W],
    used_r: [u64; W],
    m1: i32,
    m2: i32,
    chunks: i32,
    idx: i32,
    last: i32,
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
        self.m1 += inc(c.mlen, c.module);
        self.m2 += inc(c.len, c.module);
        if self.last != -1 && c.i as i32 != self.last {
            self.chunks += 1;
        }
        self.idx = (c.j + c.len) as i32;
        self.last = (c.i + c.mlen) as i32;
    }
}

#[inline]
fn cmp_paths<const W: usize>(x: &Path<W>, y: &Path<W>) -> std::cmp::Ordering {
    (y.m1 + y.m2)
        .cmp(&(x.m1 + x.m2))
        .then(x.chunks.cmp(&y.chunks))
        .then(x.dist.cmp(&y.dist))
}

/// Largest sentence length (tokens) the search supports.
pub const MAX_LEN: usize = 64 * 8;

/// Aligns hypothesis `h` with reference `r` and returns the 23 statistics (spec §8).
/// Both must have at most [`MAX_LEN`] tokens.
pub(crate) fn align_stats(
    h: &Sentence,
    r: &Sentence,
    para: &ParaphraseTable,
    seg: &mut SegmentMemo,
) -> [u32; 23] {
    let longest = h.len().max(r.len());
    if longest <= 64 {
        align_w::<1>(h, r, para, seg)
    } else if longest <= 128 {
        align_w::<2>(h, r, para, seg)
    } else {
        align_w::<8>(h, r, para, seg)
    }
}

fn align_w<const W: usize>(
    h: &Sentence,
    r: &Sentence,
    para: &ParaphraseTable,
    seg: &mut SegmentMemo,
) -> [u32; 23] {
    let (m, n) = (h.len(), r.len());
    let cands = candidates(h, r, para, seg);
    let mut p0 = Path::<W> {
        used_h: [0; W],
        used_r: [0; W],
        m1: 0,
        m2: 0,
        chunks: 0,
        idx: 0,
        last: -1,
        dist: 0,
        node: NONE,
    };
    // Fixed matches, shared by every path.
    let mut fixed = vec![NONE; n];
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
    let mut arena: Vec<(u32, u32)> = Vec::with_capacity(64 * n + 16);
    let mut next: Vec<Path<W>> = Vec::with_capacity(4 * BEAM);
    next.push(p0);
    let mut paths: Vec<Path<W>> = Vec::with_capacity(4 * BEAM);
    for cur in 0..=n {
        std::mem::swap(&mut paths, &mut next);
        next.clear();
        paths.sort_by(cmp_paths);
        paths.truncate(BEAM);
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
                if (cur as i32) < path.idx {
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
    next.sort_by(cmp_paths);
    let mut s = [0u32; 23];
    s[0] = m as u32;
    s[1] = n as u32;
    s[2] = h.fw.iter().filter(|&&f| f).count() as u32;
    s[3] = r.fw.iter().filter(|&&f| f).count() as u32;
    let Some(best) = next.first() else {
        return s;
    };
    let mut matches = fixed;
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
    s
}
