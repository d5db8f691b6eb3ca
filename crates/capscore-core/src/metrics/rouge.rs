//! ROUGE-L as pycocoevalcap 1.2 computes it (its `Rouge` scorer, spec COCO §5).
//!
//! Words are the tokenized caption split on U+0020 only, keeping empty pieces: the empty caption
//! is one empty word, and a token with an internal U+00A0 stays one word. Precision and recall
//! are maximised over references independently, then combined with beta = 1.2 as
//! `(2.44 * P) * R / (R + 1.44 * P)` (the literals are exactly what `1 + 1.2**2` and `1.2**2`
//! evaluate to in double precision).
//!
//! Quirk reproduced on purpose: an empty candidate and an empty reference have an LCS of 1 (one
//! empty word each), so they score 1.0.

use crate::stats::split::space as split_space;

/// ROUGE-L F-score of a tokenized candidate against tokenized references (m >= 1).
pub fn score(candidate: &str, references: &[&str]) -> f64 {
    let c: Vec<&str> = split_space(candidate).collect();
    let refs: Vec<Vec<&str>> = references
        .iter()
        .map(|r| split_space(r).collect())
        .collect();
    let refs: Vec<&[&str]> = refs.iter().map(Vec::as_slice).collect();
    score_words(&c, &refs)
}

/// ROUGE-L F-score over words already split on U+0020 (any comparable word type, e.g.
/// interned ids). An empty word list counts as zero words.
pub fn score_words<T: PartialEq>(c: &[T], references: &[&[T]]) -> f64 {
    score_words_with(c, references, &mut Vec::new())
}

/// [`score_words`] with a reusable buffer.
pub fn score_words_with<T: PartialEq>(c: &[T], references: &[&[T]], row: &mut Vec<u32>) -> f64 {
    combine(
        c.len(),
        references.iter().map(|t| (lcs(t, c, row), t.len())),
    )
}

/// [`score_words`] over interned words, with reusable storage: the candidate's match masks
/// are computed once for all references. Same result.
pub fn score_ids(c: &[u32], references: &[&[u32]], scratch: &mut Scratch) -> f64 {
    if c.len() > 64 {
        return score_words_with(c, references, &mut scratch.row);
    }
    scratch.masks.build(c);
    let masks = &scratch.masks;
    combine(
        c.len(),
        references
            .iter()
            .map(|t| (lcs_masks(c.len(), t.iter().map(|&x| masks.get(x))), t.len())),
    )
}

/// The LCS length of a reference and a candidate of `c_len <= 64` words, from the reference's
/// words given as match masks (bit j set when the word equals candidate word j), bit-parallel.
pub fn lcs_masks(c_len: usize, masks: impl Iterator<Item = u64>) -> u32 {
    debug_assert!(c_len <= 64);
    let mut v = u64::MAX;
    for m in masks {
        v = v.wrapping_add(v & m) | (v & !m);
    }
    (!v & low_bits(c_len)).count_ones()
}

/// The F-score (beta 1.2) of a candidate of `c_len` words from each reference's (LCS length,
/// word count).
pub fn f_score(c_len: usize, lcs_and_len: impl Iterator<Item = (u32, usize)>) -> f64 {
    combine(c_len, lcs_and_len)
}

/// Reusable storage for [`score_ids`].
#[derive(Debug, Default)]
pub struct Scratch {
    row: Vec<u32>,
    masks: Masks,
}

/// Word id -> bit mask of its positions in the candidate (at most 64 words): a small
/// open-addressing table.
#[derive(Debug, Default)]
struct Masks {
    keys: Vec<u32>,
    masks: Vec<u64>,
    shift: u32,
}

impl Masks {
    /// No word id is `u32::MAX` (the interner stops below it).
    const EMPTY: u32 = u32::MAX;

    fn build(&mut self, c: &[u32]) {
        let size = (c.len() * 2).next_power_of_two().max(16);
        self.keys.clear();
        self.keys.resize(size, Masks::EMPTY);
        self.masks.clear();
        self.masks.resize(size, 0);
        self.shift = 64 - size.trailing_zeros();
        for (j, &w) in c.iter().enumerate() {
            let mut s = self.slot(w);
            while self.keys[s] != Masks::EMPTY && self.keys[s] != w {
                s = (s + 1) & (size - 1);
            }
            self.keys[s] = w;
            self.masks[s] |= 1 << j;
        }
    }

    #[inline]
    fn slot(&self, w: u32) -> usize {
        (u64::from(w).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    #[inline]
    fn get(&self, w: u32) -> u64 {
        let mask = self.keys.len() - 1;
        let mut s = self.slot(w);
        loop {
            let k = self.keys[s];
            if k == w {
                return self.masks[s];
            }
            if k == Masks::EMPTY {
                return 0;
            }
            s = (s + 1) & mask;
        }
    }
}

/// The F-score from each reference's (LCS length, word count), for a candidate of `c_len`
/// words.
fn combine(c_len: usize, lcs_and_len: impl Iterator<Item = (u32, usize)>) -> f64 {
    let mut prec_max = f64::NEG_INFINITY;
    let mut rec_max = f64::NEG_INFINITY;
    let mut any = false;
    for (l, t_len) in lcs_and_len {
        let l = l as f64;
        prec_max = prec_max.max(l / c_len as f64);
        rec_max = rec_max.max(l / t_len as f64);
        any = true;
    }
    if prec_max != 0.0 && rec_max != 0.0 && any {
        (2.44 * prec_max) * rec_max / (rec_max + 1.44 * prec_max)
    } else {
        0.0
    }
}

/// The low `n` bits set (`n <= 64`).
fn low_bits(n: usize) -> u64 {
    if n == 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

/// Length of the longest common subsequence: bit-parallel when `b` has at most 64 words (nearly
/// every caption), otherwise one DP row at a time. Both give the same integer.
fn lcs<T: PartialEq>(a: &[T], b: &[T], row: &mut Vec<u32>) -> u32 {
    if b.len() <= 64 {
        return lcs_bits(a, b);
    }
    lcs_rows(a, b, row)
}

/// Bit-parallel LCS length (Allison and Dix 1986, in Hyyrö's 2004 formulation) for
/// `b.len() <= 64`: bit j of `v` is 0 where the DP row steps up at column j, so the LCS length
/// is the number of zero bits among the low `b.len()` bits after the last row.
fn lcs_bits<T: PartialEq>(a: &[T], b: &[T]) -> u32 {
    debug_assert!(b.len() <= 64);
    let mut v = u64::MAX;
    for x in a {
        let mut m = 0u64;
        for (j, y) in b.iter().enumerate() {
            m |= u64::from(x == y) << j;
        }
        let u = v & m;
        v = v.wrapping_add(u) | (v & !m);
    }
    (!v & low_bits(b.len())).count_ones()
}

/// LCS length by dynamic programming, one row at a time.
fn lcs_rows<T: PartialEq>(a: &[T], b: &[T], row: &mut Vec<u32>) -> u32 {
    row.clear();
    row.resize(b.len() + 1, 0);
    for x in a {
        let mut diag = 0u32;
        for (j, y) in b.iter().enumerate() {
            let up = row[j + 1];
            row[j + 1] = if x == y { diag + 1 } else { up.max(row[j]) };
            diag = up;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// spec COCO §5 worked example (golden edge/cases/23_one_reference).
    #[test]
    fn worked_example() {
        let s = score(
            "a surfer riding a large wave",
            &["a surfer rides a large wave in the ocean"],
        );
        assert_eq!(s, 0.6434599156118143);
    }

    #[test]
    fn empty_vs_empty_is_one() {
        assert_eq!(score("", &["", "a man"]), 1.0);
        assert_eq!(score("", &["a man"]), 0.0);
    }

    /// A deterministic pseudo-random source: `next(m)` is in `0..m`.
    fn xorshift(mut x: u64) -> impl FnMut(u64) -> u64 {
        move |m| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        }
    }

    #[test]
    fn bit_parallel_lcs_equals_the_dp() {
        // Deterministic pseudo-random word sequences over small alphabets, lengths 0..=70.
        let mut next = xorshift(0x2545_f491_4f6c_dd1du64);
        let mut row = Vec::new();
        for _ in 0..3000 {
            let alpha = 1 + next(6);
            let la = next(71) as usize;
            let lb = next(65) as usize;
            let a: Vec<u64> = (0..la).map(|_| next(alpha)).collect();
            let b: Vec<u64> = (0..lb).map(|_| next(alpha)).collect();
            assert_eq!(lcs_bits(&a, &b), lcs_rows(&a, &b, &mut row), "{a:?} {b:?}");
        }
    }

    #[test]
    fn score_ids_equals_score_words() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15u64);
        let mut scratch = Scratch::default();
        for _ in 0..2000 {
            let alpha = 1 + next(8) as u32;
            let c: Vec<u32> = (0..next(70))
                .map(|_| next(u64::from(alpha)) as u32)
                .collect();
            let refs: Vec<Vec<u32>> = (0..next(5))
                .map(|_| {
                    (0..next(70))
                        .map(|_| next(u64::from(alpha)) as u32)
                        .collect()
                })
                .collect();
            let refs: Vec<&[u32]> = refs.iter().map(Vec::as_slice).collect();
            let a = score_ids(&c, &refs, &mut scratch);
            let b = score_words(&c, &refs);
            assert!(a == b || (a.is_nan() && b.is_nan()), "{c:?} {refs:?}");
        }
    }

    #[test]
    fn lcs_is_symmetric() {
        let a = ["a", "b", "c", "d"];
        let b = ["b", "x", "d", "a"];
        let mut row = Vec::new();
        assert_eq!(lcs(&a, &b, &mut row), lcs(&b, &a, &mut row));
        assert_eq!(lcs(&a, &b, &mut row), 2);
    }
}
