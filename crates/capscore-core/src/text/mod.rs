//! Text processing: the pycocoevalcap-compatible PTB tokenizer and the word splitters the
//! metrics use on its output.

pub mod ptb;

/// Splits on Unicode whitespace and drops empty pieces, as Python's `str.split()` with no
/// argument does (BLEU and CIDEr-D split tokenized captions this way; spec COCO §3.4).
pub fn split_py_whitespace(s: &str) -> impl Iterator<Item = &str> {
    s.split(is_py_whitespace).filter(|w| !w.is_empty())
}

/// Python's `str.isspace()` set for one code point: U+0009–U+000D, U+001C–U+001F, U+0020,
/// U+0085, U+00A0, U+1680, U+2000–U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
pub fn is_py_whitespace(c: char) -> bool {
    matches!(c,
        '\u{09}'..='\u{0D}' | '\u{1C}'..='\u{20}' | '\u{85}' | '\u{A0}' | '\u{1680}'
        | '\u{2000}'..='\u{200A}' | '\u{2028}' | '\u{2029}' | '\u{202F}' | '\u{205F}' | '\u{3000}')
}

/// Splits on U+0020 only, keeping empty pieces, as Python's `str.split(" ")` (ROUGE-L; spec
/// COCO §3.4): the empty caption is one empty word.
pub fn split_space(s: &str) -> impl Iterator<Item = &str> {
    s.split(' ')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nbsp_splits_for_bleu_but_not_for_rouge() {
        let s = "1\u{a0}1/2 hot dogs";
        assert_eq!(
            split_py_whitespace(s).collect::<Vec<_>>(),
            ["1", "1/2", "hot", "dogs"]
        );
        assert_eq!(
            split_space(s).collect::<Vec<_>>(),
            ["1\u{a0}1/2", "hot", "dogs"]
        );
        assert_eq!(split_space("").collect::<Vec<_>>(), [""]);
        assert_eq!(split_py_whitespace("").count(), 0);
    }
}
