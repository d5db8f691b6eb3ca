//! The paraphrase table (`data/paraphrase-en.gz`, LGPL, from the pycocoevalcap wheel) in a compact
//! binary form, and its lookups (spec METEOR §5.5, resources doc §2).
//!
//! Every phrase (1–7 tokens) is encoded as a `u128` key: token ids (1-based, 16 bits each; the table
//! has 43,139 distinct tokens) packed from the most significant end, zero padded. Numeric order of
//! keys is then lexicographic order of token sequences with a phrase sorting before its
//! extensions. The file holds:
//!
//! ```text
//! magic  b"CSMPARA1"
//! u64 n_tokens, u64 n_keys, u64 n_pairs, u64 n_entries_source        (little endian)
//! vocab: n_tokens × (u32 byte length, UTF-8 bytes)                   token id = index + 1
//! keys:  n_keys × u128                     every distinct phrase (either side), ascending
//! offs:  (n_keys + 1) × u32                pairs of key k are pairs[offs[k]..offs[k+1]]
//! pairs: n_pairs × (u32 paraphrase key index, u32 file ordinal), sorted by key index per phrase
//! ```
//!
//! The file ordinal keeps the table's order of paraphrases per reference-side phrase, which fixes
//! the candidate order the beam search's tie-breaking depends on. The probabilities are dropped.

use std::io::{BufRead, Write};

use rustc_hash::FxHashMap;

use super::table::U32Map;

/// Magic bytes of the compact file.
pub const MAGIC: &[u8; 8] = b"CSMPARA1";
/// Longest phrase in the table.
pub const MAX_PHRASE: usize = 7;

/// Builds the compact form from the decompressed `paraphrase-en` text, writing it to `out`.
/// Returns the number of source entries.
pub fn build_compact<R: BufRead, W: Write>(input: R, out: &mut W) -> Result<u64, String> {
    let mut vocab: FxHashMap<String, u16> = FxHashMap::default();
    let mut vocab_list: Vec<String> = Vec::new();
    let mut entries: Vec<(u128, u128)> = Vec::with_capacity(5_400_000);
    let mut encode = |phrase: &str, vocab_list: &mut Vec<String>| -> Result<u128, String> {
        let mut key: u128 = 0;
        let mut n = 0usize;
        for t in phrase.split(|c: char| c.is_ascii_whitespace()) {
            if t.is_empty() {
                continue;
            }
            if n == MAX_PHRASE {
                return Err(format!(
                    "phrase longer than {MAX_PHRASE} tokens: {phrase:?}"
                ));
            }
            let id = match vocab.get(t) {
                Some(&id) => id,
                None => {
                    let id = u16::try_from(vocab_list.len() + 1)
                        .map_err(|_| "more than 65535 distinct tokens".to_string())?;
                    vocab.insert(t.to_string(), id);
                    vocab_list.push(t.to_string());
                    id
                }
            };
            key |= (id as u128) << (16 * (MAX_PHRASE - 1 - n));
            n += 1;
        }
        if n == 0 {
            return Err("empty phrase".into());
        }
        Ok(key)
    };
    let mut lines = input.lines();
    let mut line_no = 0u64;
    while let Some(prob) = lines.next() {
        let prob = prob.map_err(|e| e.to_string())?;
        line_no += 1;
        if prob.is_empty() {
            continue;
        }
        let (Some(a), Some(b)) = (lines.next(), lines.next()) else {
            return Err(format!("truncated record at line {line_no}"));
        };
        let a = a.map_err(|e| e.to_string())?;
        let b = b.map_err(|e| e.to_string())?;
        line_no += 2;
        let ka = encode(&a, &mut vocab_list)?;
        let kb = encode(&b, &mut vocab_list)?;
        entries.push((ka, kb));
    }
    let n_entries = entries.len() as u64;
    let mut keys: Vec<u128> = Vec::with_capacity(entries.len() * 2);
    for &(a, b) in &entries {
        keys.push(a);
        keys.push(b);
    }
    keys.sort_unstable();
    keys.dedup();
    let index = |k: u128| -> u32 { keys.binary_search(&k).unwrap_or(0) as u32 };
    // (ref key index, paraphrase key index, ordinal)
    let mut pairs: Vec<(u32, u32, u32)> = entries
        .iter()
        .enumerate()
        .map(|(ord, &(a, b))| (index(a), index(b), ord as u32))
        .collect();
    drop(entries);
    pairs.sort_unstable();
    let mut offs: Vec<u32> = vec![0; keys.len() + 1];
    for &(a, _, _) in &pairs {
        offs[a as usize + 1] += 1;
    }
    for k in 0..keys.len() {
        offs[k + 1] += offs[k];
    }
    let io = |e: std::io::Error| e.to_string();
    out.write_all(MAGIC).map_err(io)?;
    for v in [
        vocab_list.len() as u64,
        keys.len() as u64,
        pairs.len() as u64,
        n_entries,
    ] {
        out.write_all(&v.to_le_bytes()).map_err(io)?;
    }
    for t in &vocab_list {
        out.write_all(&(t.len() as u32).to_le_bytes()).map_err(io)?;
        out.write_all(t.as_bytes()).map_err(io)?;
    }
    let mut buf = Vec::with_capacity(1 << 20);
    for k in &keys {
        buf.extend_from_slice(&k.to_le_bytes());
        if buf.len() >= 1 << 20 {
            out.write_all(&buf).map_err(io)?;
            buf.clear();
        }
    }
    for o in &offs {
        buf.extend_from_slice(&o.to_le_bytes());
        if buf.len() >= 1 << 20 {
            out.write_all(&buf).map_err(io)?;
            buf.clear();
        }
    }
    for &(_, b, ord) in &pairs {
        buf.extend_from_slice(&b.to_le_bytes());
        buf.extend_from_slice(&ord.to_le_bytes());
        if buf.len() >= 1 << 20 {
            out.write_all(&buf).map_err(io)?;
            buf.clear();
        }
    }
    out.write_all(&buf).map_err(io)?;
    Ok(n_entries)
}

/// The loaded compact paraphrase table (the file's bytes plus a token index).
#[derive(Debug)]
pub struct ParaphraseTable {
    data: Vec<u8>,
    vocab: FxHashMap<Box<str>, u16>,
    n_keys: usize,
    keys_at: usize,
    offs_at: usize,
    pairs_at: usize,
    n_pairs: usize,
    /// `first[t]..first[t + 1]`: the keys whose first token is `t`.
    first: Vec<u32>,
}

/// Most entries of a [`PrefixCache`] before it is emptied.
const PREFIX_CACHE_MAX: usize = 1 << 18;

/// Memo of prefix lookups for [`ParaphraseTable::spans_with`] (valid for one table only).
#[derive(Debug, Default)]
pub struct PrefixCache {
    /// Prefix key → (outcome << 32 | key index, pair-list start, pair-list end).
    map: FxHashMap<u128, (u64, u32, u32)>,
    /// The same for two-word prefixes, keyed by the two token ids.
    bigrams: FxHashMap<u32, Prefix>,
}

impl PrefixCache {
    /// Forgets everything (use when switching tables).
    pub fn clear(&mut self) {
        self.map.clear();
        self.bigrams.clear();
    }
}

const PREFIX_EXACT: u64 = 0;
const PREFIX_MORE: u64 = 1;
const PREFIX_STOP: u64 = 2;
/// A phrase that no longer phrase extends: the search from this start ends here.
const PREFIX_EXACT_LAST: u64 = 3;

/// The outcome of looking a phrase prefix up: (kind << 32 | key index, pair-list start,
/// pair-list end); kind is a phrase, a proper prefix of phrases, or neither.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prefix((u64, u32, u32));

/// A phrase found in a sentence: start token, length, key index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// First token of the span.
    pub start: u32,
    /// Number of tokens.
    pub len: u32,
    /// Index of the phrase among the table's keys.
    pub key: u32,
    /// Its paraphrase pairs: positions `plo..phi` of the pair list (empty when the phrase has
    /// none), carried along so that matching need not look them up in the table again.
    pub plo: u32,
    /// See `plo`.
    pub phi: u32,
}

/// Span key → the range of spans with that key in a slice sorted by key, rebuilt for each
/// segment (buffers reused).
#[derive(Debug, Default)]
pub struct SpanIndex(U32Map<(u32, u32)>);

impl SpanIndex {
    /// Indexes `sorted` (spans sorted by key).
    pub fn rebuild(&mut self, sorted: &[Span]) {
        self.0.reset(sorted.len());
        let mut a = 0;
        while a < sorted.len() {
            let key = sorted[a].key;
            let mut b = a + 1;
            while b < sorted.len() && sorted[b].key == key {
                b += 1;
            }
            *self.0.entry(key) = (a as u32, b as u32);
            a = b;
        }
    }

    /// The range of spans with `key` (empty if none).
    #[inline]
    pub fn get(&self, key: u32) -> (u32, u32) {
        self.0.get(key).unwrap_or((0, 0))
    }

    /// Number of distinct keys.
    fn distinct(&self) -> usize {
        self.0.len()
    }
}

impl Span {
    /// Whether the phrase has paraphrases (is a reference-side phrase of the table).
    #[inline]
    pub fn has_paraphrases(&self) -> bool {
        self.plo != self.phi
    }
}

impl ParaphraseTable {
    /// Parses the compact file's bytes (checks the layout, not the content hash).
    pub fn from_bytes(data: Vec<u8>) -> Result<ParaphraseTable, String> {
        let bad = || "truncated or malformed compact paraphrase file".to_string();
        if data.len() < 40 || &data[..8] != MAGIC {
            return Err("not a compact paraphrase file (bad magic)".into());
        }
        let u64_at = |p: usize| -> u64 {
            let mut b = [0u8; 8];
            b.copy_from_slice(&data[p..p + 8]);
            u64::from_le_bytes(b)
        };
        let n_tokens = u64_at(8) as usize;
        let n_keys = u64_at(16) as usize;
        let n_pairs = u64_at(24) as usize;
        let mut p = 40usize;
        let mut vocab = FxHashMap::default();
        vocab.reserve(n_tokens);
        for id in 0..n_tokens {
            let len_bytes = data.get(p..p + 4).ok_or_else(bad)?;
            let len = u32::from_le_bytes([len_bytes[0], len_bytes[1], len_bytes[2], len_bytes[3]])
                as usize;
            p += 4;
            let s = data.get(p..p + len).ok_or_else(bad)?;
            let s = std::str::from_utf8(s).map_err(|_| bad())?;
            let id = u16::try_from(id + 1).map_err(|_| bad())?;
            vocab.insert(Box::from(s), id);
            p += len;
        }
        let keys_at = p;
        let offs_at = keys_at + n_keys * 16;
        let pairs_at = offs_at + (n_keys + 1) * 4;
        let end = pairs_at + n_pairs * 8;
        if end != data.len() {
            return Err(bad());
        }
        let mut t = ParaphraseTable {
            data,
            vocab,
            n_keys,
            keys_at,
            offs_at,
            pairs_at,
            n_pairs,
            first: Vec::new(),
        };
        let top = |k: u128| k >> (16 * (MAX_PHRASE - 1));
        let first: Vec<u32> = (0..=n_tokens + 1)
            .map(|tok| t.lower_bound(0, n_keys, (tok as u128) << (16 * (MAX_PHRASE - 1))) as u32)
            .collect();
        if n_keys > 0 && top(t.key(n_keys - 1)) > n_tokens as u128 {
            return Err(bad());
        }
        t.first = first;
        // Validate the index so that no lookup can go out of bounds on a damaged file.
        let le = |c: &[u8]| u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        let mut prev = 0u32;
        let mut monotonic = true;
        for c in t.data[offs_at..pairs_at].chunks_exact(4) {
            let o = le(c);
            monotonic &= o >= prev;
            prev = o;
        }
        let keys_ok = t.data[pairs_at..]
            .chunks_exact(8)
            .all(|c| (le(c) as usize) < n_keys);
        if !monotonic || prev as usize != n_pairs || !keys_ok {
            return Err(bad());
        }
        Ok(t)
    }

    /// Number of distinct tokens.
    pub fn vocab_len(&self) -> usize {
        self.vocab.len()
    }

    /// Number of distinct phrases.
    pub fn phrases_len(&self) -> usize {
        self.n_keys
    }

    /// Number of (phrase, paraphrase) pairs.
    pub fn pairs_len(&self) -> usize {
        self.n_pairs
    }

    /// Token id (0 = not in the table).
    #[inline]
    pub fn token_id(&self, t: &str) -> u16 {
        self.vocab.get(t).copied().unwrap_or(0)
    }

    #[inline]
    fn key(&self, k: usize) -> u128 {
        let p = self.keys_at + k * 16;
        let mut b = [0u8; 16];
        b.copy_from_slice(&self.data[p..p + 16]);
        u128::from_le_bytes(b)
    }

    #[inline]
    fn offs(&self, k: usize) -> u32 {
        let p = self.offs_at + k * 4;
        u32::from_le_bytes([
            self.data[p],
            self.data[p + 1],
            self.data[p + 2],
            self.data[p + 3],
        ])
    }

    /// (paraphrase key index, ordinal) of pair `x`.
    #[inline]
    fn pair(&self, x: usize) -> (u32, u32) {
        let p = self.pairs_at + x * 8;
        let d = &self.data[p..p + 8];
        (
            u32::from_le_bytes([d[0], d[1], d[2], d[3]]),
            u32::from_le_bytes([d[4], d[5], d[6], d[7]]),
        )
    }

    /// First key index in `lo..hi` whose key is ≥ `key` (`hi` if none).
    fn lower_bound(&self, mut lo: usize, mut hi: usize, key: u128) -> usize {
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.key(mid) < key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Every span of `ids` (token ids of a sentence) that is a phrase of the table, ordered by
    /// start, then length.
    pub fn spans(&self, ids: &[u16]) -> Vec<Span> {
        let uni: Vec<Prefix> = ids.iter().map(|&t| self.unigram(t)).collect();
        let mut out = Vec::with_capacity(2 * ids.len());
        self.spans_with(ids, &uni, &mut PrefixCache::default(), &mut out);
        out
    }

    /// The look-up of the one-token phrase of vocabulary id `t` (what [`TokenInfo`] caches).
    ///
    /// [`TokenInfo`]: super::align::TokenInfo
    pub fn unigram(&self, t: u16) -> Prefix {
        if t == 0 {
            return Prefix((PREFIX_STOP << 32, 0, 0));
        }
        let t = t as usize;
        let key = (t as u128) << (16 * (MAX_PHRASE - 1));
        self.prefix_step(
            self.first[t] as usize,
            self.first[t + 1] as usize,
            key,
            16 * (MAX_PHRASE - 1),
        )
    }

    /// Looks `key` (a phrase prefix of `16 * MAX_PHRASE - shift` bits) up among keys `lo..hi`.
    fn prefix_step(&self, lo: usize, hi: usize, key: u128, shift: usize) -> Prefix {
        let at = self.lower_bound(lo, hi, key);
        let o = if at == hi {
            PREFIX_STOP << 32
        } else {
            let found = self.key(at);
            if found == key {
                // Longer phrases with this prefix, if any, follow it directly in key order.
                let longer = at + 1 < hi && (self.key(at + 1) >> shift) == (key >> shift);
                let kind = if longer {
                    PREFIX_EXACT
                } else {
                    PREFIX_EXACT_LAST
                };
                (kind << 32) | at as u64
            } else if (found >> shift) != (key >> shift) {
                // No phrase starts with this prefix.
                PREFIX_STOP << 32
            } else {
                (PREFIX_MORE << 32) | at as u64
            }
        };
        let (plo, phi) = if matches!(o >> 32, PREFIX_EXACT | PREFIX_EXACT_LAST) {
            (self.offs(at), self.offs(at + 1))
        } else {
            (0, 0)
        };
        Prefix((o, plo, phi))
    }

    /// [`ParaphraseTable::spans`] into `out` (cleared first), with a memo of prefix look-ups
    /// and the one-token look-ups already done (`uni[k]` is
    /// [`ParaphraseTable::unigram`] of `ids[k]`).
    pub fn spans_with(
        &self,
        ids: &[u16],
        uni: &[Prefix],
        cache: &mut PrefixCache,
        out: &mut Vec<Span>,
    ) {
        out.clear();
        // The phrase key of `ids[s..s + l]`.
        let key_of = |s: usize, l: usize| {
            ids[s..s + l]
                .iter()
                .zip((0..MAX_PHRASE).rev())
                .fold(0u128, |k, (&t, x)| k | (t as u128) << (16 * x))
        };
        for s in 0..ids.len() {
            let t0 = ids[s] as usize;
            if t0 == 0 {
                continue;
            }
            // The keys starting with token t0 end at `hi`; `lo` is where the previous (shorter)
            // prefix was found. The u128 key is built only when a look-up needs it.
            let hi = || self.first[t0 + 1] as usize;
            let mut lo = 0usize;
            let mut key: u128 = 0;
            for l in 1..=MAX_PHRASE.min(ids.len() - s) {
                let t = ids[s + l - 1];
                if t == 0 {
                    break;
                }
                let shift = 16 * (MAX_PHRASE - l);
                let (outcome, plo, phi) = if l == 1 {
                    uni[s].0
                } else if l == 2 {
                    // Two-word prefixes, the most frequent look-up, by a 32-bit key.
                    let k2 = (t0 as u32) << 16 | t as u32;
                    match cache.bigrams.get(&k2) {
                        Some(&o) => o.0,
                        None => {
                            let o = self.prefix_step(lo, hi(), key_of(s, 2), shift);
                            if cache.bigrams.len() >= PREFIX_CACHE_MAX {
                                cache.bigrams.clear();
                            }
                            cache.bigrams.insert(k2, o);
                            o.0
                        }
                    }
                } else {
                    key = if l == 3 {
                        key_of(s, 3)
                    } else {
                        key | (t as u128) << shift
                    };
                    match cache.map.get(&key) {
                        Some(&o) => o,
                        None => {
                            let o = self.prefix_step(lo, hi(), key, shift).0;
                            if cache.map.len() >= PREFIX_CACHE_MAX {
                                cache.map.clear();
                            }
                            cache.map.insert(key, o);
                            o
                        }
                    }
                };
                let at = (outcome & 0xffff_ffff) as usize;
                let kind = outcome >> 32;
                if matches!(kind, PREFIX_EXACT | PREFIX_EXACT_LAST) {
                    out.push(Span {
                        start: s as u32,
                        len: l as u32,
                        key: at as u32,
                        plo,
                        phi,
                    });
                }
                if kind != PREFIX_EXACT && kind != PREFIX_MORE {
                    break;
                }
                lo = at;
            }
        }
    }

    /// For reference-side phrase `key` and the other side's spans sorted by key index
    /// (`other`), calls `f(ordinal, span)` for every span that is one of its paraphrases.
    pub fn matches(&self, span: &Span, other: &[Span], f: impl FnMut(u32, Span)) {
        self.matches_with(span, other, None, f)
    }

    /// [`ParaphraseTable::matches`] with `index` built from `other` (a short pair list is then
    /// walked with one table probe per pair).
    pub fn matches_indexed(
        &self,
        span: &Span,
        other: &[Span],
        index: &SpanIndex,
        f: impl FnMut(u32, Span),
    ) {
        self.matches_with(span, other, Some(index), f)
    }

    fn matches_with(
        &self,
        span: &Span,
        other: &[Span],
        index: Option<&SpanIndex>,
        mut f: impl FnMut(u32, Span),
    ) {
        let lo = span.plo as usize;
        let hi = span.phi as usize;
        if lo == hi || other.is_empty() {
            return;
        }
        if let Some(index) = index.filter(|ix| hi - lo <= 4 * ix.distinct()) {
            // A pair (key, q) listed twice counts once, with its first ordinal (as the merge
            // and the binary search below do).
            let mut prev = None;
            let pairs = &self.data[self.pairs_at + lo * 8..self.pairs_at + hi * 8];
            for d in pairs.chunks_exact(8) {
                let q = u32::from_le_bytes([d[0], d[1], d[2], d[3]]);
                if prev == Some(q) {
                    continue;
                }
                prev = Some(q);
                let (a, b) = index.get(q);
                if a < b {
                    let ord = u32::from_le_bytes([d[4], d[5], d[6], d[7]]);
                    for sp in &other[a as usize..b as usize] {
                        f(ord, *sp);
                    }
                }
            }
            return;
        }
        if hi - lo <= other.len() {
            // Merge.
            // Unequal keys advance without a branch (the order of keys is unpredictable).
            let (mut x, mut y) = (lo, 0usize);
            while x < hi && y < other.len() {
                let (q, ord) = self.pair(x);
                let ok = other[y].key;
                if q == ok {
                    let mut z = y;
                    while z < other.len() && other[z].key == q {
                        f(ord, other[z]);
                        z += 1;
                    }
                    x += 1;
                    y = z;
                } else {
                    x += usize::from(q < ok);
                    y += usize::from(q > ok);
                }
            }
        } else {
            // Binary search per distinct other key; keys ascend, so the window only shrinks.
            let first = self.pair(lo).0;
            let last = self.pair(hi - 1).0;
            let mut a = lo;
            let mut y = other.partition_point(|s| s.key < first);
            while y < other.len() && other[y].key <= last {
                let q = other[y].key;
                let mut b = hi;
                while a < b {
                    let mid = a + (b - a) / 2;
                    if self.pair(mid).0 < q {
                        a = mid + 1;
                    } else {
                        b = mid;
                    }
                }
                let mut z = y;
                while z < other.len() && other[z].key == q {
                    z += 1;
                }
                if a < hi {
                    let (pq, ord) = self.pair(a);
                    if pq == q {
                        for sp in &other[y..z] {
                            f(ord, *sp);
                        }
                    }
                } else {
                    break;
                }
                y = z;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_and_lookup() {
        let text = "0.5\na\nthe\n0.4\na beach\nthe beach\n0.3\na\none\n0.1\nbig dog\nhound\n";
        let mut out = Vec::new();
        assert_eq!(build_compact(text.as_bytes(), &mut out).unwrap(), 4);
        let t = ParaphraseTable::from_bytes(out).unwrap();
        let ids = |s: &str| s.split(' ').map(|w| t.token_id(w)).collect::<Vec<_>>();
        let r = t.spans(&ids("a beach"));
        assert_eq!(r.len(), 2); // a, a beach
        let mut h = t.spans(&ids("one the beach"));
        h.sort_by_key(|s| (s.key, s.start));
        let mut got = Vec::new();
        t.matches(&r[0], &h, |ord, sp| got.push((ord, sp.start, sp.len)));
        got.sort();
        assert_eq!(got, vec![(0, 1, 1), (2, 0, 1)]);
        let mut got = Vec::new();
        t.matches(&r[1], &h, |ord, sp| got.push((ord, sp.start, sp.len)));
        assert_eq!(got, vec![(1, 1, 2)]);
    }
}
