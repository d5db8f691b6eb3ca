//! Lexical attributes of a word as spaCy computes them for its English vocabulary (spaCy's
//! `lex_attrs`): NORM, PREFIX, SUFFIX, SHAPE, IS_SPACE, LOWER. The embedding consumes their
//! string hashes.

use rustc_hash::FxHashMap;

use super::hash::string_id;

/// spaCy's language-independent norm exceptions (`spacy.lang.norm_exceptions.BASE_NORMS`,
/// spaCy 3.8, MIT licence, Explosion AI): consulted after the model's `lexeme_norm` table and
/// before lowercasing.
const BASE_NORMS: &[(&str, &str)] = &[
    ("'s", "'s"),
    ("'S", "'s"),
    ("\u{2019}s", "'s"),
    ("\u{2019}S", "'s"),
    ("\u{2019}", "'"),
    ("\u{2018}", "'"),
    ("\u{b4}", "'"),
    ("`", "'"),
    ("\u{201d}", "\""),
    ("\u{201c}", "\""),
    ("''", "\""),
    ("``", "\""),
    ("\u{b4}\u{b4}", "\""),
    ("\u{201e}", "\""),
    ("\u{bb}", "\""),
    ("\u{ab}", "\""),
    ("\u{2018}\u{2018}", "\""),
    ("\u{2019}\u{2019}", "\""),
    ("\u{ff1f}", "?"),
    ("\u{ff01}", "!"),
    ("\u{ff0c}", ","),
    ("\u{ff1b}", ";"),
    ("\u{ff1a}", ":"),
    ("\u{3002}", "."),
    ("\u{964}", "."),
    ("\u{2026}", "..."),
    ("\u{2014}", "-"),
    ("\u{2013}", "-"),
    ("--", "-"),
    ("---", "-"),
    ("\u{2014}\u{2014}", "-"),
    ("\u{20ac}", "$"),
    ("\u{a3}", "$"),
    ("\u{a5}", "$"),
    ("\u{e3f}", "$"),
    ("US$", "$"),
    ("C$", "$"),
    ("A$", "$"),
    ("\u{20ba}", "$"),
    ("\u{20b9}", "$"),
    ("\u{9f3}", "$"),
    ("\u{20a9}", "$"),
    ("Mex$", "$"),
    ("\u{20a3}", "$"),
    ("E\u{a3}", "$"),
];

/// The model's `lexeme_norm` table: string id of a word (exact case) -> its norm.
#[derive(Debug, Default, Clone)]
pub struct NormTable {
    map: FxHashMap<u64, String>,
}

impl NormTable {
    /// Builds the table from (string id, norm) pairs.
    pub fn new(entries: impl IntoIterator<Item = (u64, String)>) -> Self {
        NormTable {
            map: entries.into_iter().collect(),
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The entries, sorted by id (for serialisation).
    pub fn entries(&self) -> Vec<(u64, &str)> {
        let mut v: Vec<(u64, &str)> = self.map.iter().map(|(k, v)| (*k, v.as_str())).collect();
        v.sort_unstable();
        v
    }

    /// NORM of `word`: the table's entry, else spaCy's base norm exceptions, else lowercase.
    pub fn norm(&self, word: &str) -> String {
        if let Some(n) = self.map.get(&string_id(word)) {
            return n.clone();
        }
        if let Some((_, n)) = BASE_NORMS.iter().find(|(w, _)| *w == word) {
            return (*n).to_string();
        }
        word.to_lowercase()
    }
}

/// PREFIX: the first character.
pub fn prefix(word: &str) -> &str {
    match word.char_indices().nth(1) {
        Some((i, _)) => &word[..i],
        None => word,
    }
}

/// SUFFIX: the last three characters.
pub fn suffix(word: &str) -> &str {
    let n = word.chars().count();
    if n <= 3 {
        return word;
    }
    let (i, _) = word.char_indices().nth(n - 3).expect("n > 3");
    &word[i..]
}

/// Python's `str.isdigit` for one character: decimal digits (Unicode Nd) and the characters
/// with numeric type "digit" (superscript, subscript and circled digits).
fn is_digit(c: char) -> bool {
    c.is_ascii_digit()
        || (!c.is_ascii()
            && (is_unicode_decimal(c)
                || matches!(c as u32,
                    0xB2 | 0xB3 | 0xB9 | 0x2070 | 0x2074..=0x2079 | 0x2080..=0x2089
                    | 0x2460..=0x2468 | 0x2474..=0x247C | 0x2488..=0x2490 | 0x24EA
                    | 0x24F5..=0x24FD | 0x24FF | 0x2776..=0x277E | 0x2780..=0x2788
                    | 0x278A..=0x2792)))
}

/// Unicode decimal digits (category Nd) outside ASCII: every block of ten starting at a
/// known zero. Covers the scripts that occur in practice.
fn is_unicode_decimal(c: char) -> bool {
    const ZEROS: &[u32] = &[
        0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66, 0xDE6,
        0xE50, 0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90,
        0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0,
        0xFF10,
    ];
    let u = c as u32;
    ZEROS.iter().any(|&z| u >= z && u < z + 10)
}

/// SHAPE: spaCy's `word_shape` (letters to `x`/`X`, digits to `d`, other characters kept, runs
/// longer than four cut to four; 100 characters or more give `LONG`).
pub fn shape(word: &str) -> String {
    if word.chars().count() >= 100 {
        return "LONG".to_string();
    }
    let mut out = String::with_capacity(word.len());
    let mut last: Option<char> = None;
    let mut seq = 0usize;
    for c in word.chars() {
        let s = if c.is_alphabetic() {
            if c.is_uppercase() {
                'X'
            } else {
                'x'
            }
        } else if is_digit(c) {
            'd'
        } else {
            c
        };
        if Some(s) == last {
            seq += 1;
        } else {
            seq = 0;
            last = Some(s);
        }
        if seq < 4 {
            out.push(s);
        }
    }
    out
}

/// IS_SPACE: Python's `str.isspace` on the whole word.
pub fn is_space(word: &str) -> bool {
    !word.is_empty() && word.chars().all(char::is_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let words = ["Apple", "applesauce", "C3PO", "1,000", "a-b"];
        let shapes: Vec<String> = words.iter().map(|w| shape(w)).collect();
        assert_eq!(shapes, ["Xxxxx", "xxxx", "XdXX", "d,ddd", "x-x"]);
    }

    #[test]
    fn affixes() {
        let cases = [
            (prefix("über"), "ü"),
            (suffix("über"), "ber"),
            (suffix("go"), "go"),
            (prefix(""), ""),
        ];
        for (got, want) in cases {
            assert_eq!(got, want);
        }
    }

    #[test]
    fn norms() {
        let t = NormTable::new([(string_id("dont"), "do not".to_string())]);
        for (word, want) in [("dont", "do not"), ("Dog", "dog"), ("\u{2019}s", "'s")] {
            assert_eq!(t.norm(word), want, "{word}");
        }
    }
}
