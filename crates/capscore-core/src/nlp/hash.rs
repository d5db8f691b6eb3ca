//! The two hash functions spaCy's English pipeline depends on, written from the published
//! algorithms (Austin Appleby's MurmurHash2 64-bit "64A" and MurmurHash3 x64 128-bit; both
//! public domain):
//!
//! * [`string_id`]: spaCy's string hash (`hash_string`): MurmurHash64A of the UTF-8 bytes with
//!   seed 1. Every lexical feature (NORM, PREFIX, SUFFIX, SHAPE) is the hash of a string.
//! * [`embed_keys`]: thinc's `HashEmbed` bucket keys: MurmurHash3 x64-128 of the 8 little-endian
//!   bytes of a 64-bit feature id, with the table's seed, read as four 32-bit words.

const M64: u64 = 0xc6a4_a793_5bd1_e995;

/// MurmurHash64A of `data` with `seed`.
pub fn murmur64a(data: &[u8], seed: u64) -> u64 {
    const R: u32 = 47;
    let mut h = seed ^ (data.len() as u64).wrapping_mul(M64);
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let mut k = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        k = k.wrapping_mul(M64);
        k ^= k >> R;
        k = k.wrapping_mul(M64);
        h ^= k;
        h = h.wrapping_mul(M64);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= (b as u64) << (8 * i);
        }
        h = h.wrapping_mul(M64);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M64);
    h ^= h >> R;
    h
}

/// spaCy's hash of a string (`hash_string`); the empty string is 0.
pub fn string_id(s: &str) -> u64 {
    if s.is_empty() {
        0
    } else {
        murmur64a(s.as_bytes(), 1)
    }
}

/// The id spaCy's string store gives a string: its symbol id when it is a symbol name
/// ([`super::symbols`]), else [`string_id`]. Lexical attribute values are stored this way.
pub fn store_id(s: &str) -> u64 {
    super::symbols::symbol_id(s).unwrap_or_else(|| string_id(s))
}

#[inline]
fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    k
}

/// MurmurHash3 x64-128 of the 8 bytes of `key` (little endian) with a 32-bit `seed`, as four
/// 32-bit words (low half of h1, high half of h1, low half of h2, high half of h2).
pub fn embed_keys(key: u64, seed: u32) -> [u32; 4] {
    const C1: u64 = 0x87c3_7b91_1142_53d5;
    const C2: u64 = 0x4cf5_ad43_2745_937f;
    // An 8-byte input has no full 16-byte block: it is all tail, mixed into h1 only.
    let mut h1 = seed as u64;
    let mut h2 = seed as u64;
    let mut k1 = key;
    k1 = k1.wrapping_mul(C1);
    k1 = k1.rotate_left(31);
    k1 = k1.wrapping_mul(C2);
    h1 ^= k1;
    h1 ^= 8;
    h2 ^= 8;
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    h1 = fmix64(h1);
    h2 = fmix64(h2);
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    [h1 as u32, (h1 >> 32) as u32, h2 as u32, (h2 >> 32) as u32]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur64a_reference_values() {
        // Values of spaCy's `hash_string` (computed with spaCy 3.8).
        assert_eq!(string_id("noun"), 16833663260455505849);
        assert_eq!(string_id("verb"), 6360137228241296794);
        assert_eq!(string_id("adj"), 12401032943472870168);
        assert_eq!(string_id("adv"), 10054248821341768113);
        assert_eq!(string_id(""), 0);
    }
}
