//! Candidate matches (spec METEOR §5), the beam alignment search (§6) and the statistics of the
//! chosen alignment (§7).

use super::paraphrase::{ParaphraseTable, Span};
use super::synonyms::{intersects, Synonyms};

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

/// A tokenised, normalised sentence with everything the matchers need.
#[derive(Debug, Default)]
pub(crate) struct Sentence {
    pub jh: Vec<i32>,
    pub sk: Vec<i32>,
    pub syn: Vec<Vec<u32>>,
    pub fw: Vec<bool>,
    /// Table phrases, by start then length.
    pub spans: Vec<Span>,
    /// The same spans sorted by key index, then start.
    pub spans_by_key: Vec<Span>,
}

impl Sentence {
    pub fn len(&self) -> usize {
        self.jh.len()
    }

    pub fn build(
        toks: &[&str],
        stemmer: &rust_stemmers::Stemmer,
        syn: &Synonyms,
        fw: &rustc_hash::FxHashSet<Box<str>>,
        para: &ParaphraseTable,
    ) -> Sentence {
        let jh: Vec<i32> = toks.iter().map(|t| jhash(t)).collect();
        let sk = toks.iter().map(|t| jhash(&stemmer.stem(t))).collect();
        let synv = toks.iter().map(|t| syn.synset_ids(t)).collect();
        let fwv = toks.iter().map(|t| fw.contains(*t)).collect();
        let ids: Vec<u16> = toks.iter().map(|t| para.token_id(t)).collect();
        let spans = para.spans(&ids);
        let mut spans_by_key = spans.clone();
        spans_by_key.sort_by_key(|s| (s.key, s.start));
        Sentence {
            jh,
            sk,
            syn: synv,
            fw: fwv,
            spans,
            spans_by_key,
        }
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
    list: Vec<Cand>,
    by_j: Vec<Vec<u32>>,
    cov_r: Vec<u32>,
    cov_h: Vec<u32>,
}

impl Cands {
    fn new(m: usize, n: usize) -> Cands {
        Cands {
            list: Vec::new(),
            by_j: vec![Vec::new(); n],
            cov_r: vec![0; n],
            cov_h: vec![0; m],
        }
    }

    fn add(&mut self, j: u32, len: u32, i: u32, mlen: u32, module: u8) {
        let id = self.list.len() as u32;
        self.list.push(Cand {
            j,
            len,
            i,
            mlen,
            module,
        });
        self.by_j[j as usize].push(id);
        for k in j..j + len {
            self.cov_r[k as usize] += 1;
        }
        for k in i..i + mlen {
            self.cov_h[k as usize] += 1;
        }
    }
}

fn candidates(h: &Sentence, r: &Sentence, para: &ParaphraseTable) -> Cands {
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
        return c;
    }
    for j in 0..n {
        for i in 0..m {
            if h.sk[i] == r.sk[j] && h.jh[i] != r.jh[j] {
                c.add(j as u32, 1, i as u32, 1, STEM);
            }
        }
    }
    for j in 0..n {
        if r.syn[j].is_empty() {
            continue;
        }
        for i in 0..m {
            if h.jh[i] != r.jh[j] && intersects(&h.syn[i], &r.syn[j]) {
                c.add(j as u32, 1, i as u32, 1, SYNONYM);
            }
        }
    }
    // (a) reference phrases whose paraphrase occurs in the hypothesis.
    let mut found: Vec<(u32, u32, u32)> = Vec::new();
    for sp in &r.spans {
        if !para.has_paraphrases(sp.key) {
            continue;
        }
        found.clear();
        para.matches(sp.key, &h.spans_by_key, |ord, hs| {
            found.push((ord, hs.start, hs.len))
        });
        found.sort_unstable();
        for &(_, i, mlen) in &found {
            c.add(sp.start, sp.len, i, mlen, PARAPHRASE);
        }
    }
    // (b) hypothesis phrases whose paraphrase occurs in the reference.
    for sp in &h.spans {
        if !para.has_paraphrases(sp.key) {
            continue;
        }
        found.clear();
        para.matches(sp.key, &r.spans_by_key, |ord, rs| {
            found.push((ord, rs.start, rs.len))
        });
        found.sort_unstable();
        for &(_, j, len) in &found {
            c.add(j, len, sp.start, sp.len, PARAPHRASE);
        }
    }
    c
}

#[derive(Clone, Debug)]
struct Path {
    matches: Vec<u32>,
    used_h: Vec<bool>,
    used_r: Vec<bool>,
    m1: i32,
    m2: i32,
    chunks: i32,
    idx: i32,
    last: i32,
    dist: i32,
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

impl Path {
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

fn cmp_paths(x: &Path, y: &Path) -> std::cmp::Ordering {
    (y.m1 + y.m2)
        .cmp(&(x.m1 + x.m2))
        .then(x.chunks.cmp(&y.chunks))
        .then(x.dist.cmp(&y.dist))
}

/// Aligns hypothesis `h` with reference `r` and returns the 23 statistics (spec §8).
pub(crate) fn align_stats(h: &Sentence, r: &Sentence, para: &ParaphraseTable) -> [u32; 23] {
    let (m, n) = (h.len(), r.len());
    let cands = candidates(h, r, para);
    let mut p0 = Path {
        matches: vec![NONE; n],
        used_h: vec![false; m],
        used_r: vec![false; n],
        m1: 0,
        m2: 0,
        chunks: 0,
        idx: 0,
        last: -1,
        dist: 0,
    };
    // Fixed matches.
    for j in 0..n {
        if let [id] = cands.by_j[j][..] {
            let c = cands.list[id as usize];
            let rs = c.j as usize..(c.j + c.len) as usize;
            let hs = c.i as usize..(c.i + c.mlen) as usize;
            if cands.cov_r[rs.clone()].iter().all(|&x| x == 1)
                && cands.cov_h[hs.clone()].iter().all(|&x| x == 1)
            {
                p0.matches[j] = id;
                rs.for_each(|k| p0.used_r[k] = true);
                hs.for_each(|k| p0.used_h[k] = true);
            }
        }
    }
    let mut next = vec![p0];
    for cur in 0..=n {
        let mut paths = std::mem::take(&mut next);
        paths.sort_by(cmp_paths);
        paths.truncate(BEAM);
        let mut fallback: Option<Path> = None;
        for mut path in paths {
            if cur == n {
                if path.last != -1 {
                    path.chunks += 1;
                }
                next.push(path);
                continue;
            }
            if path.used_r[cur] {
                if (cur as i32) < path.idx {
                    next.push(path);
                } else {
                    let id = path.matches.get(path.idx as usize).copied().unwrap_or(NONE);
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
            for &id in &cands.by_j[cur] {
                let c = cands.list[id as usize];
                let rs = c.j as usize..(c.j + c.len) as usize;
                let hs = c.i as usize..(c.i + c.mlen) as usize;
                if path.used_r[rs.clone()].iter().any(|&u| u)
                    || path.used_h[hs.clone()].iter().any(|&u| u)
                {
                    continue;
                }
                let mut child = path.clone();
                rs.for_each(|k| child.used_r[k] = true);
                hs.for_each(|k| child.used_h[k] = true);
                child.matches[cur] = id;
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
    let mut chunks = 0u32;
    let mut last: i64 = -1;
    let mut j = 0usize;
    while j < n {
        let id = best.matches[j];
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
