//! N-gram keys and the one open-addressing table type.
//!
//! An n-gram of order 1..=4 over word ids is packed into one integer key: four 16-bit word
//! ids in a `u64` when every id is below 0xFFFF (any COCO-sized vocabulary), four 32-bit ids in
//! a `u128` otherwise; unused slots hold all ones, so a key is never all ones ([`Key::EMPTY`]).
//! [`KeyTable`] maps keys (n-gram keys, or n-gram ids as `u32`) to values with linear probing,
//! the values next to their keys so that a look-up touches one cache line.

use super::ngram::{Ngram, MAX_ORDER};

/// A table key: an integer with a value that is never a key and a well-mixed hash.
pub trait Key: Copy + Eq + Send + Sync {
    /// Never a key: marks an empty slot.
    const EMPTY: Self;
    /// A well-mixed 64-bit hash: callers partition on its top bits, the table slots on the
    /// bits below them.
    fn hash(self) -> u64;
}

impl Key for u32 {
    const EMPTY: u32 = u32::MAX;
    #[inline]
    fn hash(self) -> u64 {
        u64::from(self).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
}

impl Key for u64 {
    const EMPTY: u64 = u64::MAX;
    #[inline]
    fn hash(self) -> u64 {
        (self ^ (self >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
}

impl Key for u128 {
    const EMPTY: u128 = u128::MAX;
    #[inline]
    fn hash(self) -> u64 {
        let (lo, hi) = (self as u64, (self >> 64) as u64);
        (lo.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ hi.wrapping_mul(0xC2B2_AE3D_27D4_EB4F))
            .wrapping_mul(0xD6E8_FEB8_6659_FD93)
    }
}

/// An n-gram key: the packed word ids of an n-gram of order 1..=4.
pub trait GramKey: Key + std::fmt::Debug {
    /// True when every word id below `bound` can be packed.
    fn fits(bound: u32) -> bool;
    /// The unigram `w` (`w` below the packing's bound).
    fn unigram(w: u32) -> Self;
    /// This key (of order `n`) extended with word `w` (order `n + 1`).
    fn extend(self, n: usize, w: u32) -> Self;
    /// The same n-gram as an [`Ngram`].
    fn ngram(self) -> Ngram;
    /// The key of `g`; `None` when a word id does not fit (then the n-gram is in no table of
    /// this key type).
    #[inline]
    fn of(g: &Ngram) -> Option<Self> {
        if g.0[0] == Ngram::PAD {
            return None;
        }
        // `unigram(w)` is `EMPTY.extend(0, w)`.
        let mut key = Self::EMPTY;
        for (n, &w) in g.0.iter().enumerate() {
            if w == Ngram::PAD {
                break;
            }
            if !Self::fits(w + 1) {
                return None;
            }
            key = key.extend(n, w);
        }
        Some(key)
    }
    /// A 64-bit value stored in a key's place (see [`GramKey::value`]).
    fn from_value(v: u64) -> Self;
    /// The value [`GramKey::from_value`] stored.
    fn value(self) -> u64;
}

/// Four 16-bit word ids, 0xFFFF in unused slots.
impl GramKey for u64 {
    fn fits(bound: u32) -> bool {
        bound <= 0xFFFF
    }
    #[inline]
    fn unigram(w: u32) -> u64 {
        !0xFFFF | u64::from(w)
    }
    #[inline]
    fn extend(self, n: usize, w: u32) -> u64 {
        self ^ ((0xFFFF ^ u64::from(w)) << (16 * n))
    }
    fn ngram(self) -> Ngram {
        let mut a = [Ngram::PAD; MAX_ORDER];
        for (i, slot) in a.iter_mut().enumerate() {
            let w = (self >> (16 * i)) as u32 & 0xFFFF;
            if w != 0xFFFF {
                *slot = w;
            }
        }
        Ngram(a)
    }
    #[inline]
    fn from_value(v: u64) -> u64 {
        v
    }
    #[inline]
    fn value(self) -> u64 {
        self
    }
}

/// Four 32-bit word ids, 0xFFFF_FFFF ([`Ngram::PAD`]) in unused slots.
impl GramKey for u128 {
    fn fits(_: u32) -> bool {
        // Word ids are below `Ngram::PAD`.
        true
    }
    #[inline]
    fn unigram(w: u32) -> u128 {
        !0xFFFF_FFFF | u128::from(w)
    }
    #[inline]
    fn extend(self, n: usize, w: u32) -> u128 {
        self ^ ((0xFFFF_FFFF ^ u128::from(w)) << (32 * n))
    }
    fn ngram(self) -> Ngram {
        Ngram(std::array::from_fn(|i| (self >> (32 * i)) as u32))
    }
    #[inline]
    fn from_value(v: u64) -> u128 {
        u128::from(v)
    }
    #[inline]
    fn value(self) -> u64 {
        self as u64
    }
}

/// A key -> value table: open addressing, linear probing, at most half full (three quarters,
/// [`KeyTable::dense`]). The slots start at
/// `hash << skip` (callers that partition keys on the hash's top `skip` bits use the bits
/// below them).
#[derive(Debug, Clone)]
pub struct KeyTable<K, V> {
    slots: Vec<(K, V)>,
    len: usize,
    shift: u32,
    skip: u32,
    /// The table holds at most `fill` quarters of its slots.
    fill: usize,
}

impl<K: Key, V: Copy + Default> KeyTable<K, V> {
    /// An empty table whose slots ignore the top `skip` bits of the keys' hashes.
    pub fn new(skip: u32) -> KeyTable<K, V> {
        KeyTable {
            slots: Vec::new(),
            len: 0,
            shift: 64,
            skip,
            fill: 2,
        }
    }

    /// [`KeyTable::new`] filled up to three quarters before it grows: about half the memory
    /// of a large table for a few more probes a look-up (the n-gram tables a large batch keeps
    /// from group to group, issue 27).
    pub fn dense(skip: u32) -> KeyTable<K, V> {
        KeyTable {
            fill: 3,
            ..KeyTable::new(skip)
        }
    }

    /// Empties the table, with room for about `n` keys (the storage is reused).
    pub fn reset(&mut self, n: usize) {
        let size = (n * 4 / self.fill).next_power_of_two().max(16);
        self.slots.clear();
        self.slots.resize(size, (K::EMPTY, V::default()));
        self.len = 0;
        self.shift = 64 - size.trailing_zeros();
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the table holds no key.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first slot probed for `key` (the table must have slots): reading it ahead of a
    /// look-up loads its cache line.
    #[inline]
    pub fn home(&self, key: K) -> usize {
        ((key.hash() << self.skip) >> self.shift) as usize
    }

    /// Where `key` is, or the empty slot where it would go (the table must have slots).
    #[inline]
    pub fn slot(&self, key: K) -> usize {
        let mask = self.slots.len() - 1;
        let mut s = self.home(key);
        loop {
            let k = self.slots[s].0;
            if k == key || k == K::EMPTY {
                return s;
            }
            s = (s + 1) & mask;
        }
    }

    /// The value of `key`, if present.
    #[inline]
    pub fn get(&self, key: K) -> Option<V> {
        if self.slots.is_empty() {
            return None;
        }
        let (k, v) = self.slots[self.slot(key)];
        (k == key).then_some(v)
    }

    /// The value of `key`; a new key gets `new()`.
    #[inline(always)]
    pub fn get_or_insert(&mut self, key: K, new: impl FnOnce() -> V) -> V {
        *self.entry(key, new)
    }

    /// The value of `key`, to change in place; a new key gets `new()` first.
    #[inline(always)]
    pub fn entry(&mut self, key: K, new: impl FnOnce() -> V) -> &mut V {
        if (self.len + 1) * 4 > self.slots.len() * self.fill {
            self.grow();
        }
        let s = self.slot(key);
        if self.slots[s].0 != key {
            self.slots[s] = (key, new());
            self.len += 1;
        }
        &mut self.slots[s].1
    }

    /// Sets the value of `key` (inserted when absent).
    pub fn insert(&mut self, key: K, v: V) {
        if (self.len + 1) * 4 > self.slots.len() * self.fill {
            self.grow();
        }
        let s = self.slot(key);
        if self.slots[s].0 != key {
            self.len += 1;
        }
        self.slots[s] = (key, v);
    }

    /// The key of slot `s` ([`Key::EMPTY`] when empty): lets a caller read slots ahead of use.
    #[inline]
    pub fn key_at(&self, s: usize) -> K {
        self.slots[s].0
    }

    fn grow(&mut self) {
        let old = std::mem::take(&mut self.slots);
        let size = (old.len() * 2).max(16);
        self.slots = vec![(K::EMPTY, V::default()); size];
        self.shift = 64 - size.trailing_zeros();
        let mask = size - 1;
        for (k, v) in old.into_iter().filter(|e| e.0 != K::EMPTY) {
            let mut s = ((k.hash() << self.skip) >> self.shift) as usize;
            while self.slots[s].0 != K::EMPTY {
                s = (s + 1) & mask;
            }
            self.slots[s] = (k, v);
        }
    }

    /// Every (key, value).
    pub fn iter(&self) -> impl Iterator<Item = (K, V)> + '_ {
        self.slots.iter().copied().filter(|e| e.0 != K::EMPTY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<K: GramKey>(words: &[u32]) {
        let g = Ngram::new(words);
        let k = K::of(&g).expect("fits");
        assert_eq!(k.ngram(), g);
        let mut built = K::unigram(words[0]);
        for (n, &w) in words.iter().enumerate().skip(1) {
            built = built.extend(n, w);
        }
        assert_eq!(built, k);
        assert_ne!(k, K::EMPTY);
    }

    #[test]
    fn keys_pack_and_unpack_every_order() {
        for words in [&[0][..], &[1, 2], &[0xFFFE, 0, 7], &[3, 3, 3, 3]] {
            round_trip::<u64>(words);
            round_trip::<u128>(words);
        }
        round_trip::<u128>(&[0x1_0000, Ngram::PAD - 1]);
        assert_eq!(u64::of(&Ngram::new(&[0xFFFF])), None);
        assert_ne!(
            u64::of(&Ngram::new(&[1])),
            u64::of(&Ngram::new(&[1, 0xFFFE]))
        );
    }

    /// A dense table holds three quarters of its slots before it grows (a plain one half),
    /// and finds what it holds through its growth.
    #[test]
    fn a_dense_table_fills_three_quarters() {
        let (mut dense, mut plain) = (KeyTable::<u64, u32>::dense(4), KeyTable::<u64, u32>::new(4));
        dense.reset(1000);
        plain.reset(1000);
        assert_eq!((dense.slots.len(), plain.slots.len()), (2048, 2048));
        for i in 0..1536u64 {
            dense.insert(i * 7919, i as u32);
        }
        assert_eq!(dense.slots.len(), 2048, "three quarters fit");
        dense.insert(1536 * 7919, 1536);
        assert_eq!(dense.slots.len(), 4096);
        for i in 0..1025u64 {
            plain.insert(i * 7919, i as u32);
        }
        assert_eq!(plain.slots.len(), 4096, "past half it grew");
        for i in 0..=1536u64 {
            assert_eq!(dense.get(i * 7919), Some(i as u32));
        }
        assert_eq!(dense.get(1537 * 7919), None);
    }

    #[test]
    fn table_finds_what_it_holds_through_growth() {
        let mut t: KeyTable<u64, u32> = KeyTable::new(4);
        for i in 0..10_000u64 {
            assert_eq!(t.get_or_insert(i * 7919, || i as u32), i as u32);
        }
        assert_eq!(t.len(), 10_000);
        for i in 0..10_000u64 {
            assert_eq!(t.get(i * 7919), Some(i as u32));
            assert_eq!(t.get_or_insert(i * 7919, || 0), i as u32);
        }
        assert_eq!(t.get(3), None);
        // A value changed in place through `entry` keeps the change through later growth.
        let mut u: KeyTable<u64, u32> = KeyTable::new(0);
        for i in 0..100u64 {
            *u.entry(i, || 0) += i as u32 + 1;
        }
        for i in 0..10_000u64 {
            u.entry(1_000 + i, || 7);
        }
        for i in 0..100u64 {
            assert_eq!(u.get(i), Some(i as u32 + 1));
        }
        assert_eq!((u.get(5_000), u.len()), (Some(7), 10_100));
        t.insert(3, 9);
        assert_eq!((t.get(3), t.len()), (Some(9), 10_001));
        t.reset(8);
        assert!(t.is_empty() && t.get(3).is_none());
        assert_eq!(t.iter().count(), 0);
    }
}
