//! The word interner: one open-addressing table from words to dense ids (`0, 1, 2, ...` in
//! order of first use), keyed on a word's first 8 bytes and its length, so that short words
//! (nearly all) compare without touching their text. It holds borrowed words (a chunk of a
//! batch, one candidate) or owned ones ([`Interner`], [`Vocab`]: a batch's or a registered
//! dataset's vocabulary).

use std::sync::Arc;

use super::ngram::Ngram;
use super::split::prefix;

/// A word -> id table: ids are dense, in order of first use.
#[derive(Debug, Clone)]
pub struct WordTable<W> {
    /// (prefix, length, id); length `u32::MAX` marks an empty slot.
    slots: Vec<(u64, u32, u32)>,
    words: Vec<W>,
    shift: u32,
}

/// The hash of a word, from its first 8 bytes and its length: a table slots on its top bits.
#[inline]
pub(crate) fn word_hash(prefix: u64, len: usize) -> u64 {
    prefix
        .wrapping_add(len as u64)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// The slot of a word in a table of `2^(64 - shift)` slots.
#[inline]
fn word_slot(prefix: u64, len: u32, shift: u32) -> usize {
    (word_hash(prefix, len as usize) >> shift) as usize
}

const EMPTY: u32 = u32::MAX;

impl<W: AsRef<str>> Default for WordTable<W> {
    fn default() -> WordTable<W> {
        WordTable::new()
    }
}

impl<W: AsRef<str>> WordTable<W> {
    /// An empty table.
    pub fn new() -> WordTable<W> {
        WordTable {
            slots: Vec::new(),
            words: Vec::new(),
            shift: 64,
        }
    }

    /// Empties the table, sized for about `words` distinct words (the storage is reused).
    pub fn reset(&mut self, words: usize) {
        let size = (words * 2).next_power_of_two().max(16);
        self.words.clear();
        self.slots.clear();
        self.slots.resize(size, (0, EMPTY, 0));
        self.shift = 64 - size.trailing_zeros();
    }

    /// Number of words.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// True when the table holds no word.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The words, by id.
    pub fn words(&self) -> &[W] {
        &self.words
    }

    /// The words, by id (the table dropped).
    pub fn into_words(self) -> Vec<W> {
        self.words
    }

    /// The slot of `w` (whose [`prefix`] is `p`): where it is, or the empty slot where it
    /// would go. The table must have slots.
    #[inline(always)]
    fn probe(&self, w: &str, p: u64) -> usize {
        let len = u32::try_from(w.len()).unwrap_or(EMPTY - 1);
        let mask = self.slots.len() - 1;
        let mut s = word_slot(p, len, self.shift);
        loop {
            let (q, l, id) = self.slots[s];
            if l == EMPTY
                || (q == p && l == len && (len <= 8 || self.words[id as usize].as_ref() == w))
            {
                return s;
            }
            s = (s + 1) & mask;
        }
    }

    /// The id of `w` (whose [`prefix`] is `p`), if it is in the table.
    #[inline]
    pub fn find(&self, w: &str, p: u64) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        let (_, l, id) = self.slots[self.probe(w, p)];
        (l != EMPTY).then_some(id)
    }

    /// The id of `w` (whose [`prefix`] is `p`), assigned on first use.
    #[inline]
    pub fn id<'w>(&mut self, w: &'w str, p: u64) -> u32
    where
        W: From<&'w str>,
    {
        if (self.words.len() + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let s = self.probe(w, p);
        let (_, l, id) = self.slots[s];
        if l != EMPTY {
            return id;
        }
        let id = self.words.len() as u32;
        self.words.push(W::from(w));
        self.slots[s] = (p, u32::try_from(w.len()).unwrap_or(EMPTY - 1), id);
        id
    }

    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(16);
        let old = std::mem::replace(&mut self.slots, vec![(0, EMPTY, 0); size]);
        self.shift = 64 - size.trailing_zeros();
        for e in old.into_iter().filter(|e| e.1 != EMPTY) {
            let mut s = word_slot(e.0, e.1, self.shift);
            while self.slots[s].1 != EMPTY {
                s = (s + 1) & (size - 1);
            }
            self.slots[s] = e;
        }
    }
}

/// A frozen word -> id table (ids `0..len`).
#[derive(Debug, Default, Clone)]
pub struct Vocab {
    table: WordTable<Box<str>>,
}

impl Vocab {
    /// Number of words.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// True when the vocabulary is empty.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// The id of `word`, if known.
    pub fn get(&self, word: &str) -> Option<u32> {
        self.table.find(word, prefix(word))
    }

    /// The bytes its heap allocations take ([`crate::heap`]).
    pub fn heap_bytes(&self) -> u64 {
        let t = &self.table;
        let words: u64 = t.words.iter().map(|w| crate::heap::alloc(w.len())).sum();
        crate::heap::vec(&t.slots) + crate::heap::vec(&t.words) + words
    }
}

/// Maps words to ids. It can extend a frozen base vocabulary (a registered dataset's), so that
/// ids of a batch agree with the ids of the cached tables built from that vocabulary.
#[derive(Debug, Default, Clone)]
pub struct Interner {
    base: Option<Arc<Vocab>>,
    /// Words past the base: id `base_len + local id`.
    local: WordTable<Box<str>>,
    base_len: u32,
}

impl Interner {
    /// An empty interner.
    pub fn new() -> Interner {
        Interner::default()
    }

    /// An interner whose first ids are those of `base`; new words get ids after them.
    pub fn with_base(base: Arc<Vocab>) -> Interner {
        let base_len = u32::try_from(base.len()).unwrap_or(Ngram::PAD - 1);
        Interner {
            base: Some(base),
            local: WordTable::new(),
            base_len,
        }
    }

    /// Number of ids given so far (base included): every id is below it.
    pub fn len(&self) -> u32 {
        self.base_len
            .saturating_add(self.local.len() as u32)
            .min(Ngram::PAD - 1)
    }

    /// True when no word has an id.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The id of `word`, if it has one.
    pub fn get(&self, word: &str) -> Option<u32> {
        self.get_with(word, prefix(word))
    }

    /// [`Interner::get`] of a word whose first 8 bytes ([`prefix`]) are `p`.
    pub fn get_with(&self, word: &str, p: u64) -> Option<u32> {
        if let Some(id) = self.base.as_ref().and_then(|b| b.table.find(word, p)) {
            return Some(id);
        }
        self.local.find(word, p).map(|id| self.local_id(id))
    }

    /// Ids never reach [`Ngram::PAD`]: 4 billion distinct words fit in no request limit.
    fn local_id(&self, id: u32) -> u32 {
        self.base_len.saturating_add(id).min(Ngram::PAD - 1)
    }

    /// The id of `word`, assigning a new one when needed.
    pub fn intern(&mut self, word: &str) -> u32 {
        let p = prefix(word);
        if let Some(id) = self.base.as_ref().and_then(|b| b.table.find(word, p)) {
            return id;
        }
        let id = self.local.id(word, p);
        self.local_id(id)
    }

    /// Interns every word of `words`.
    pub fn intern_all<'a>(&mut self, words: impl Iterator<Item = &'a str>) -> Vec<u32> {
        words.map(|w| self.intern(w)).collect()
    }

    /// Freezes the words interned so far (base and local) into a vocabulary.
    pub fn into_vocab(self) -> Vocab {
        let mut table = self.base.map(|b| b.table.clone()).unwrap_or_default();
        for w in self.local.words {
            table.id(&w, prefix(&w));
        }
        Vocab { table }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_told_apart_by_all_their_bytes() {
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
        let mut v: WordTable<&str> = WordTable::new();
        let ids: Vec<u32> = words.iter().map(|w| v.id(w, prefix(w))).collect();
        for (i, a) in words.iter().enumerate() {
            for (j, b) in words.iter().enumerate() {
                assert_eq!(a == b, ids[i] == ids[j], "{a:?} {b:?}");
            }
            assert_eq!(v.find(a, prefix(a)), Some(ids[i]));
        }
        assert_eq!(v.find("zz", prefix("zz")), None);
        // Growth keeps every id; ids are dense in order of first use.
        let many: Vec<String> = (0..5000).map(|i| format!("w{i}")).collect();
        let first: Vec<u32> = many.iter().map(|w| v.id(w, prefix(w))).collect();
        let again: Vec<u32> = many.iter().map(|w| v.id(w, prefix(w))).collect();
        assert_eq!(first, again);
        assert_eq!(first, (11..11 + 5000).collect::<Vec<u32>>());
        assert_eq!(v.len(), 11 + 5000);
        v.reset(4);
        assert!(v.is_empty() && v.find("a", prefix("a")).is_none());
        assert_eq!(v.id("b", prefix("b")), 0);
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
        assert_eq!(
            (j.get("a"), j.get("c"), j.get("d")),
            (Some(0), Some(2), None)
        );
        assert_eq!(j.len(), 3);
        let v = j.into_vocab();
        assert_eq!(
            (v.get("a"), v.get("b"), v.get("c"), v.len()),
            (Some(0), Some(1), Some(2), 3)
        );
    }
}
