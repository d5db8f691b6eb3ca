//! A small map from `u32` keys, rebuilt for every segment (its buffers are reused).

/// Open addressing with linear probing, behind a 2048-bit filter: a look-up of an absent key
/// (the usual case in the matchers) mostly stops at one bit test. Keys must be below
/// `u32::MAX` (they are table indices and synset ids).
#[derive(Debug, Default)]
pub(crate) struct U32Map<V> {
    /// (key + 1, value); 0 marks an empty slot.
    slots: Vec<(u32, V)>,
    shift: u32,
    len: usize,
    bloom: [u64; 32],
}

#[inline]
fn bloom_bit(key: u32) -> usize {
    (key.wrapping_mul(0x85EB_CA6B) >> 21) as usize
}

impl<V: Copy + Default> U32Map<V> {
    /// Empties the map and sizes it for at most `n` keys.
    pub fn reset(&mut self, n: usize) {
        let want = (2 * n).max(8).next_power_of_two();
        self.shift = 32 - want.trailing_zeros();
        self.slots.clear();
        self.slots.resize(want, (0, V::default()));
        self.len = 0;
        self.bloom = [0; 32];
    }

    #[inline]
    fn slot(&self, key: u32) -> usize {
        (key.wrapping_add(1).wrapping_mul(0x9E37_79B9) >> self.shift) as usize
    }

    /// The value of `key`, inserted as `V::default()` if absent (at most the `n` keys given
    /// to [`U32Map::reset`]).
    pub fn entry(&mut self, key: u32) -> &mut V {
        debug_assert!(key != u32::MAX, "key out of range");
        let bit = bloom_bit(key);
        self.bloom[bit >> 6] |= 1 << (bit & 63);
        let mask = self.slots.len() - 1;
        let mut k = self.slot(key);
        while self.slots[k].0 != 0 && self.slots[k].0 != key + 1 {
            k = (k + 1) & mask;
        }
        if self.slots[k].0 == 0 {
            self.slots[k].0 = key + 1;
            self.len += 1;
        }
        &mut self.slots[k].1
    }

    /// The value of `key`, if present.
    #[inline]
    pub fn get(&self, key: u32) -> Option<V> {
        let bit = bloom_bit(key);
        if self.bloom[bit >> 6] >> (bit & 63) & 1 == 0 {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut k = self.slot(key);
        loop {
            let (tag, v) = self.slots[k];
            if tag == key.wrapping_add(1) {
                return Some(v);
            }
            if tag == 0 {
                return None;
            }
            k = (k + 1) & mask;
        }
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_like_a_hash_map() {
        let mut m: U32Map<u64> = U32Map::default();
        let mut want = std::collections::HashMap::new();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for round in 0..200 {
            let n = round % 90;
            m.reset(n);
            want.clear();
            for _ in 0..n {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let key = (seed % 150) as u32 * if round % 2 == 0 { 1 } else { 977 };
                *m.entry(key) |= 1 << (seed % 64);
                *want.entry(key).or_insert(0u64) |= 1 << (seed % 64);
            }
            assert_eq!(m.len(), want.len());
            for key in 0..200_000u32 {
                if key % 97 == 0 || want.contains_key(&key) {
                    assert_eq!(m.get(key), want.get(&key).copied(), "{key}");
                }
            }
        }
    }
}
