//! The n-grams of one sentence: counts in first-occurrence order (the order pycocoevalcap's
//! dictionaries iterate in; it fixes float summation order, spec COCO §6), as ids ([`Grams`],
//! [`OwnedGrams`], [`GramCounter`]), and the n-grams a candidate shares with its
//! references ([`Matches`]).

use rustc_hash::FxHashMap;

use super::ngram::{Ngram, MAX_ORDER};
use super::table::KeyTable;

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

/// Positions of distinct n-gram ids, so that a candidate's n-grams are matched against a
/// reference's in one pass over the reference.
#[derive(Debug)]
pub struct GramIndex {
    table: KeyTable<u32, u32>,
    /// A Bloom filter of the indexed ids (one bit each, [`GramIndex::bit`]): most of a
    /// reference's n-grams are not the candidate's, and the filter settles them from L1
    /// without a look-up.
    bloom: [u64; BLOOM_WORDS],
}

/// Words of [`GramIndex`]'s filter: 1,024 bits, for a candidate's some tens of n-grams.
const BLOOM_WORDS: usize = 16;

impl Default for GramIndex {
    fn default() -> GramIndex {
        GramIndex {
            table: KeyTable::new(0),
            bloom: [0; BLOOM_WORDS],
        }
    }
}

impl GramIndex {
    /// Indexes `ids` (distinct; no id is `u32::MAX`) by position.
    pub fn new(ids: &[u32]) -> GramIndex {
        let mut index = GramIndex::default();
        index.rebuild(ids);
        index
    }

    /// The filter word and bit of `g`.
    #[inline]
    fn bit(g: u32) -> (usize, u64) {
        let h = g.wrapping_mul(0x9E37_79B1) >> 22;
        ((h >> 6) as usize, 1 << (h & 63))
    }

    /// Indexes `ids` (distinct) by position, reusing the storage.
    pub fn rebuild(&mut self, ids: &[u32]) {
        self.table.reset(ids.len());
        self.bloom = [0; BLOOM_WORDS];
        for (i, &g) in ids.iter().enumerate() {
            self.table.insert(g, i as u32);
            let (w, b) = GramIndex::bit(g);
            self.bloom[w] |= b;
        }
    }

    /// Number of indexed ids.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// True when nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// The position of `g`, if indexed.
    #[inline]
    pub fn get(&self, g: u32) -> Option<usize> {
        let (w, b) = GramIndex::bit(g);
        if self.bloom[w] & b == 0 {
            return None;
        }
        self.table.get(g).map(|p| p as usize)
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

    /// Forgets every id (the next n-gram counted gets id 0).
    pub fn clear(&mut self) {
        self.ids.clear();
    }

    /// The id of n-gram `g`, if it has one.
    pub fn get(&self, g: &Ngram) -> Option<u32> {
        self.ids.get(g).copied()
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
    fn counts_keep_first_occurrence_order_and_repeats_keep_their_first_weight() {
        let mut counter = GramCounter::new();
        let words = [1, 2, 1, 2, 3];
        let g = counter.count_weighted(&words, |g| f64::from(g.0[0]));
        let v = g.view();
        let uni = v.order(1);
        assert_eq!(uni.iter().collect::<Vec<_>>(), [(0, 2), (1, 2), (2, 1)]);
        assert_eq!(uni.idfs, [1.0, 2.0, 3.0]);
        assert_eq!(v.order(2).counts, [2, 1, 1]);
        assert_eq!(
            (v.order(4).len(), v.word_count(), v.len()),
            (2, 5, 3 + 3 + 3 + 2)
        );
        // Ids are positions for a fresh counter.
        assert_eq!(v.all().ids, (0..11).collect::<Vec<u32>>());
        assert_eq!(counter.get(&Ngram::new(&[2, 1])), Some(4));
    }

    /// The index (its filter and its table) finds every indexed id at its position and
    /// nothing else, over rebuilds of every size a candidate has and larger.
    #[test]
    fn gram_index_finds_exactly_what_it_holds() {
        let mut index = GramIndex::default();
        let mut seed = 7u64;
        for len in [0usize, 1, 2, 40, 200, 3000] {
            let ids: Vec<u32> = (0..len)
                .map(|_| {
                    seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    (seed >> 33) as u32 | 1
                })
                .collect::<std::collections::BTreeSet<u32>>()
                .into_iter()
                .collect();
            index.rebuild(&ids);
            assert_eq!(index.len(), ids.len());
            for (i, &g) in ids.iter().enumerate() {
                assert_eq!(index.get(g), Some(i), "indexed id {g}");
            }
            // Even ids were never indexed (every indexed id is odd).
            for g in (0..20_000u32).map(|k| k * 2) {
                assert_eq!(index.get(g), None, "id {g} was not indexed");
            }
        }
    }

    /// Long sentences count through the hash path with the result of the short path.
    #[test]
    fn long_sentences_count_as_short_ones() {
        let words: Vec<u32> = (0..200).map(|i| i % 7).collect();
        let mut counter = GramCounter::new();
        let long = counter.count(&words);
        for n in 1..=MAX_ORDER {
            let mut want: Vec<(u32, u32)> = Vec::new();
            for w in words.windows(n) {
                let id = counter.get(&Ngram::new(w)).expect("counted");
                match want.iter_mut().find(|e| e.0 == id) {
                    Some(e) => e.1 += 1,
                    None => want.push((id, 1)),
                }
            }
            assert_eq!(
                long.view().order(n).iter().collect::<Vec<_>>(),
                want,
                "order {n}"
            );
        }
    }
}
