//! What a structure's heap allocations take, for the memory a registered dataset holds
//! against a server's budget (issue 27: it was estimated from counts, 6 times what a
//! 500,000-image dataset holds).
//!
//! Must not: allocate, or know which allocator the program uses (sizes are rounded as
//! size-class allocators round them: an upper bound of what they use).

/// The bytes an allocation of `n` bytes takes: `n` rounded up to its size class (8-byte
/// steps up to 64 bytes, then four classes per power of two), and to whole 4 KiB pages from
/// 128 KiB on.
pub fn alloc(n: usize) -> u64 {
    let n = n as u64;
    if n == 0 {
        return 0;
    }
    let step = if n <= 64 {
        8
    } else if n >= 128 << 10 {
        4096
    } else {
        let top = u64::BITS - 1 - (n - 1).leading_zeros();
        1 << (top - 2)
    };
    n.div_ceil(step) * step
}

/// [`alloc`] of a vector's buffer.
pub fn vec<T>(v: &Vec<T>) -> u64 {
    alloc(v.capacity() * std::mem::size_of::<T>())
}

/// [`alloc`] of a string's buffer.
pub fn string(s: &String) -> u64 {
    alloc(s.capacity())
}

/// [`alloc`] of a hash table (hashbrown's layout) with room for `capacity` entries of
/// `entry` bytes: a power of two of buckets that `capacity` fills to 7/8, each with a control
/// byte, and 16 control bytes more.
pub fn hash_table(capacity: usize, entry: usize) -> u64 {
    if capacity == 0 {
        return 0;
    }
    let buckets = (capacity * 8 / 7).next_power_of_two().max(4);
    alloc(buckets * (entry + 1) + 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_round_up_to_their_class() {
        let cases = [
            (0, 0),
            (1, 8),
            (8, 8),
            (9, 16),
            (64, 64),
            (65, 80),
            (80, 80),
            (81, 96),
            (128, 128),
            (129, 160),
            (1000, 1024),
            (1025, 1280),
            (128 << 10, 128 << 10),
            ((128 << 10) + 1, (128 << 10) + 4096),
        ];
        for (n, want) in cases {
            assert_eq!(alloc(n), want, "{n}");
            assert!(alloc(n) >= n as u64 && alloc(n) <= (n as u64 * 5).div_ceil(4) + 8);
        }
        assert_eq!(vec(&Vec::<u32>::with_capacity(3)), 16);
        assert_eq!(string(&String::with_capacity(9)), 16);
        // 7 entries of 20 bytes: 8 buckets of 21 bytes and 16 control bytes (184 -> 192).
        assert_eq!((hash_table(0, 20), hash_table(7, 20)), (0, 192));
        let map: std::collections::HashMap<u64, u32> = (0..100).map(|i| (i, 0)).collect();
        assert!(hash_table(map.capacity(), 12) >= (map.capacity() * 13) as u64);
    }
}
