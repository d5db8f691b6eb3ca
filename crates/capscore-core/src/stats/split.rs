//! The word splitter: a tokenized caption into words, as pycocoevalcap's scorers split it
//! (spec COCO §3.4). BLEU and CIDEr-D split with Python's `str.split()` (any Unicode
//! whitespace, empty pieces dropped); ROUGE-L with `str.split(" ")` (U+0020 only, empty pieces
//! kept). [`py_whitespace`] and [`space`] are the definitions; [`words`] and [`space_words`]
//! are the same splits for the hot paths: ASCII text is scanned 8 bytes at a time and each word
//! comes with its first 8 bytes (the key of [`super::words::WordTable`]).

/// Python's `str.isspace()` set for one code point: U+0009–U+000D, U+001C–U+001F, U+0020,
/// U+0085, U+00A0, U+1680, U+2000–U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
pub fn is_py_whitespace(c: char) -> bool {
    matches!(c,
        '\u{09}'..='\u{0D}' | '\u{1C}'..='\u{20}' | '\u{85}' | '\u{A0}' | '\u{1680}'
        | '\u{2000}'..='\u{200A}' | '\u{2028}' | '\u{2029}' | '\u{202F}' | '\u{205F}' | '\u{3000}')
}

/// Splits on Unicode whitespace and drops empty pieces, as Python's `str.split()` with no
/// argument does (BLEU and CIDEr-D).
pub fn py_whitespace(s: &str) -> impl Iterator<Item = &str> {
    s.split(is_py_whitespace).filter(|w| !w.is_empty())
}

/// Splits on U+0020 only, keeping empty pieces, as Python's `str.split(" ")` (ROUGE-L): the
/// empty caption is one empty word.
pub fn space(s: &str) -> impl Iterator<Item = &str> {
    s.split(' ')
}

/// True when splitting `s` on U+0020 (ROUGE-L) gives the same words as splitting it on
/// whitespace (BLEU, CIDEr-D): then ROUGE-L reuses the interned words.
pub fn space_split_is_word_split(s: &str) -> bool {
    !s.is_empty()
        && !s.contains(|c: char| c != ' ' && is_py_whitespace(c))
        && !s.starts_with(' ')
        && !s.ends_with(' ')
        && !s.contains("  ")
}

const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `x` (8 bytes) that is below 0x21 and ASCII: exact per byte
/// (no carry crosses bytes).
#[inline]
fn bytes_below_0x21(x: u64) -> u64 {
    !(((x & LOW7) + 0x5f5f_5f5f_5f5f_5f5f) | x) & HIGH
}

/// The high bit of each byte of `x` that is U+0020.
#[inline]
fn space_bytes(x: u64) -> u64 {
    let y = x ^ 0x2020_2020_2020_2020;
    !(((y & LOW7) + LOW7) | y) & HIGH
}

/// The 8 bytes of `b` from `i` (little-endian), padded with `A` past the end.
#[inline]
fn load8(b: &[u8], i: usize) -> u64 {
    match b.get(i..i + 8) {
        Some(w) => u64::from_le_bytes(w.try_into().expect("8 bytes")),
        None => {
            let mut buf = [b'A'; 8];
            buf[..b.len() - i].copy_from_slice(&b[i..]);
            u64::from_le_bytes(buf)
        }
    }
}

/// The first 8 bytes of `b[start..end]`, little-endian, zero-padded.
#[inline]
fn prefix_at(b: &[u8], start: usize, end: usize) -> u64 {
    let len = end - start;
    match b.get(start..start + 8) {
        Some(w) => {
            let x = u64::from_le_bytes(w.try_into().expect("8 bytes"));
            if len >= 8 {
                x
            } else {
                x & ((1u64 << (8 * len)) - 1)
            }
        }
        None => {
            let mut buf = [0u8; 8];
            buf[..len].copy_from_slice(&b[start..end]);
            u64::from_le_bytes(buf)
        }
    }
}

/// The first 8 bytes of a word, little-endian, zero-padded.
#[inline]
pub fn prefix(w: &str) -> u64 {
    prefix_at(w.as_bytes(), 0, w.len())
}

/// Calls `f` on each word of `s` split as [`py_whitespace`] splits, with the word's
/// [`prefix`], and returns [`space_split_is_word_split`]`(s)`.
#[inline]
pub fn words<'a>(s: &'a str, mut f: impl FnMut(&'a str, u64)) -> bool {
    let b = s.as_bytes();
    if !b.is_ascii() {
        py_whitespace(s).for_each(|w| f(w, prefix(w)));
        return space_split_is_word_split(s);
    }
    let mut start = 0;
    // Same split on U+0020: every separator is one U+0020 between two words.
    let mut same = true;
    for i in (0..b.len()).step_by(8) {
        let mut m = bytes_below_0x21(load8(b, i));
        while m != 0 {
            let pos = i + (m.trailing_zeros() / 8) as usize;
            m &= m - 1;
            // Python's ASCII whitespace: \t \n \v \f \r, the separators 0x1C-0x1F, space.
            if matches!(b[pos], b'\t'..=b'\r' | 0x1C..=b' ') {
                same &= b[pos] == b' ' && start < pos;
                if pos > start {
                    f(&s[start..pos], prefix_at(b, start, pos));
                }
                start = pos + 1;
            }
        }
    }
    if start < b.len() {
        f(&s[start..], prefix_at(b, start, b.len()));
    }
    same && start < b.len()
}

/// Calls `f` on each word of `s` split as [`space`] splits (empty pieces kept), with the
/// word's [`prefix`].
#[inline]
pub fn space_words<'a>(s: &'a str, mut f: impl FnMut(&'a str, u64)) {
    let b = s.as_bytes();
    let mut start = 0;
    for i in (0..b.len()).step_by(8) {
        let mut m = space_bytes(load8(b, i));
        while m != 0 {
            let pos = i + (m.trailing_zeros() / 8) as usize;
            m &= m - 1;
            f(&s[start..pos], prefix_at(b, start, pos));
            start = pos + 1;
        }
    }
    f(&s[start..], prefix_at(b, start, b.len()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nbsp_splits_for_bleu_but_not_for_rouge() {
        let s = "1\u{a0}1/2 hot dogs";
        assert_eq!(
            py_whitespace(s).collect::<Vec<_>>(),
            ["1", "1/2", "hot", "dogs"]
        );
        assert_eq!(space(s).collect::<Vec<_>>(), ["1\u{a0}1/2", "hot", "dogs"]);
        assert_eq!(space("").collect::<Vec<_>>(), [""]);
        assert_eq!(py_whitespace("").count(), 0);
    }

    #[test]
    fn fast_splits_are_the_definitions_with_prefixes() {
        let cases = [
            "a man  on\ta\x0bbike ",
            " x",
            "",
            "  ",
            "one",
            "abcdefghijk b",
            "a\x1cb",
            "a b c d e f g h i j",
            "exactly8 exactly8",
            "exactly8",
            "  lead and trail  ",
            "x\u{a0}y z",
            "caf\u{e9}  au lait\u{2003}!",
            "\u{3000}",
            "a \u{85}b",
            "a\x1cb\x01c",
            "exactly8 bytes!! and more words here",
            "caf\u{e9} \u{a0}x  y",
            "1\u{a0}1/2 hot dogs ",
        ];
        for s in cases {
            let mut got = Vec::new();
            let same = words(s, |w, p| got.push((w, p)));
            let want: Vec<&str> = py_whitespace(s).collect();
            assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), want, "{s:?}");
            assert!(got.iter().all(|&(w, p)| p == prefix(w)), "{s:?}");
            assert_eq!(same, space_split_is_word_split(s), "{s:?}");
            let mut got = Vec::new();
            space_words(s, |w, p| got.push((w, p)));
            let want: Vec<&str> = space(s).collect();
            assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), want, "{s:?}");
            assert!(got.iter().all(|&(w, p)| p == prefix(w)), "{s:?}");
        }
    }
}
