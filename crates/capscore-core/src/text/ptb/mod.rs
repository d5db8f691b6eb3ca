//! Native reproduction of pycocoevalcap 1.2's tokenizer step: Stanford CoreNLP 3.4.1
//! `PTBTokenizer -preserveLines -lowerCase`, followed by pycocoevalcap's punctuation-token
//! filter (spec COCO §3).
//!
//! Written from the behavioural description in the spec, the golden data and black-box probing
//! of the 3.4.1 jar (no CoreNLP source was read or translated). The character classes in
//! `classes/tables.rs` are generated from the observed code-point sweep by
//! `scripts/gen_ptb_tables.py`.
//!
//! # Layout: find a rule by its family
//! * `mod.rs` — the public API, the punctuation filter, line sanitising.
//! * `lookahead.rs` — the stream and its look-ahead (spec §3.6): [`following_text`],
//!   [`lookahead_class`], the sentence-end decisions after abbreviations.
//! * `fast.rs` — the byte-level fast path for plain captions.
//! * `lexer.rs` — the scanner state, the per-character dispatch (`step`) and the order of the
//!   word rules (`word`).
//! * `words.rs` — the word scanner and its joins (`-`, `_`, `/`, `!`, `?`, `&`, `+`).
//! * `classes.rs` (+ `classes/tables.rs`) — character classes and Java's lower-casing.
//! * one file per rule family: `apostrophes.rs` (clitics, `cannot`, `'em`, elisions),
//!   `entities.rs` (`&amp;`, `&apos;`, `&eacute;`), `urls.rs` (URLs, e-mail, file names,
//!   `@user`, `#tag`), `numbers.rs` (numbers, fractions, phones, currency),
//!   `abbreviations.rs` (abbreviations, acronyms, periods), `soft_hyphens.rs` (U+00AD),
//!   `punctuation.rs` (brackets, quotes, dashes, ellipses, emoticons), `escapes.rs` (SGML
//!   tags and escaped characters).
//!
//! Every rule function says in its `///` line which observed behaviour it reproduces, and
//! every family file has a `tests` module with a table of observed input → output cases taken
//! from the reference's outputs in `tests/fixtures/tokenizer/`.
//!
//! # What is reproduced
//! * Words, numbers, fractions (`1 1/2` → one token with an internal U+00A0), phone numbers,
//!   URLs, e-mail addresses, `@user`, `#hashtag`, SGML tags, entities, emoticons, brackets
//!   (`-lrb-` …), PTB quotes, dashes, ellipses, Windows-1252 leftovers (U+0080–U+009F),
//!   currency and vulgar fractions, deletion of untokenizable characters (which also end a
//!   token), clitic splitting (`do n't`, `it 's`, `can not`, `gon na`, …), full Unicode
//!   lower-casing (Rust's `str::to_lowercase`, which matches Java's for every kept character).
//! * Abbreviation periods, including the cross-line lookahead of spec §3.6: a line-final
//!   abbreviation may keep or lose its period depending on the *next* line of the stream.
//!   [`tokenize_stream`] therefore tokenizes each caption with the following captions as
//!   context; [`tokenize_one`] takes that context explicitly and [`lookahead_class`] gives a
//!   small cache key that determines it.
//! * Quirks reproduced on purpose: bracket tokens survive the filter (`-lrb-` is lower case,
//!   the filter lists `-LRB-`), `|||` → `| | |`, U+0085 → `...` (removed), U+00A0 inside
//!   fraction and phone-number tokens.
//!
//! * The PTB's own bracket escapes written in the input (`-LRB-` `-RRB-` `-LCB-` `-RCB-`
//!   `-LSB-` `-RSB-`, any case) are one token at a token start, lower-cased, and end there
//!   (`-LRB-x` → `-lrb-` `x`); inside a hyphen word they are letters (`x-LRB-y`); `*NL*`,
//!   `-LAB-`, `-NONE-` are not escapes; `\*` is a token and `\/` joins words like `/`
//!   (observed; `escapes.rs`).
//!
//! # Deviations (on purpose, spec §3.5)
//! * U+000B, U+000C, U+000D (CR LF counted once), U+2028 and U+2029 inside a caption are
//!   replaced by a space, like LF, so one caption never becomes two tokenizer lines.
//!
//! # Known differences from the jar
//! None on the goldens: all 202,654 val2014 captions (one stream), the 267 samples (raw line
//! and filtered), the 133,124-code-point sweep (in-word and standalone), the 98 × 14
//! cross-line contexts and the minimised fuzzer cases of `tests/fixtures/tokenizer/
//! fuzz_regressions*.jsonl.gz` match exactly, and so do the 1M generated captions of
//! `scripts/fuzz-tokenizer` (a seeded grammar of adversarial fragments, compared with the jar)
//! on each of seeds 1-10 (docs/fidelity.md has the figures per round). The shapes of the last
//! rounds are described with their rules; each family's tests list the observed cases.
//! The rules added from the fuzzer (e-mail-like tokens, `.com` runs, quote pairs, clitics,
//! `&apos;` before clitics, emoticons with an `o` nose, spaced ellipses, ...) are described
//! where they are implemented, each from observed behaviour.
//!
//! # Speed
//! Captions made only of ASCII letters, spaces, `,`, `.` and letter-hyphen-letter joins (most
//! COCO captions) take a byte-level fast path (`fast_tokenize`) that returns exactly
//! what the scanner plus filter would; anything else (and every case where the following text
//! could matter) falls back to the general scanner.
//!
//! Lookahead contract: only a line whose last non-blank character is `.` (U+0085 counts as
//! blank after it) can depend on the following text; inside the following text a line break
//! behaves like a space. The last caption of a stream also depends on being the last: there
//! the reference lexes a final `'ll` `'re` `'ve` as an opening quote and a word, and reads no
//! file name in a final token (`5.c` → `5` `.` `c`).

mod abbreviations;
mod apostrophes;
mod classes;
mod entities;
mod escapes;
mod fast;
mod lexer;
mod lookahead;
mod numbers;
mod punctuation;
mod soft_hyphens;
mod urls;
mod words;

use super::Texts;
use classes::{is_space, is_space_or_break};
use fast::fast_tokenize;
use lexer::Lexer;
pub use lookahead::{following_text, lookahead_class, sanitize, LookaheadClass};

/// The 17 strings pycocoevalcap removes after tokenizing (only 13 can match lower-cased output).
const PUNCTUATION: [&str; 17] = [
    "''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-", ".", "?", "!", ",", ":", "-", "--",
    "...", ";",
];

/// Tokenize a stream of captions exactly as pycocoevalcap's tokenizer step does for that
/// sequence (one output string per input caption, same order), including the post-filter.
///
/// Captions are tokenized independently given their following text, so large streams are
/// split over the rayon pool; the output does not depend on the number of threads.
pub fn tokenize_stream<S: AsRef<str> + Sync>(captions: &[S]) -> Vec<String> {
    tokenize_stream_until(captions, &|| false).unwrap_or_default()
}

/// [`tokenize_stream`] that gives up once `stop()` is true (checked per caption; a dataset
/// registration whose request was abandoned): `None`.
pub fn tokenize_stream_until<S: AsRef<str> + Sync>(
    captions: &[S],
    stop: &(dyn Fn() -> bool + Sync),
) -> Option<Vec<String>> {
    use rayon::prelude::*;
    (0..captions.len())
        .into_par_iter()
        .with_min_len(256)
        .map(|k| (!stop()).then(|| tokenize_at(captions, k)))
        .collect()
}

/// [`tokenize_stream_until`] into a [`Texts`] (one buffer per block of captions, no string per
/// caption kept).
pub fn tokenize_stream_texts_until<S: AsRef<str> + Sync>(
    captions: &[S],
    stop: &(dyn Fn() -> bool + Sync),
) -> Option<Texts> {
    use rayon::prelude::*;
    // Pieces of a `Texts` block each, so that appending moves them whole; each with room for
    // its raw text and a separator per caption (about what the tokenized text takes).
    const PIECE: usize = super::list::BLOCK;
    let pieces: Vec<Texts> = (0..captions.len().div_ceil(PIECE))
        .into_par_iter()
        .map(|b| {
            let range = b * PIECE..((b + 1) * PIECE).min(captions.len());
            let raw: usize = captions[range.clone()]
                .iter()
                .map(|c| c.as_ref().len() + 1)
                .sum();
            let mut t = Texts::with_text_capacity(raw);
            for k in range {
                if stop() {
                    return None;
                }
                t.push(&tokenize_at(captions, k));
            }
            Some(t)
        })
        .collect::<Option<_>>()?;
    let mut out = Texts::new();
    pieces.into_iter().for_each(|p| out.append(p));
    Some(out)
}

/// Caption `k` of a stream, tokenized.
fn tokenize_at<S: AsRef<str>>(captions: &[S], k: usize) -> String {
    let cap = captions[k].as_ref();
    if let Some(out) = fast_tokenize(cap) {
        return out;
    }
    match captions.get(k + 1) {
        // Common case: a non-blank next caption is the whole relevant context.
        Some(n)
            if !n
                .as_ref()
                .chars()
                .all(|c| is_space_or_break(c) || c == '\u{85}') =>
        {
            slow_tokenize(cap, Some(n.as_ref()))
        }
        _ => {
            let following = following_text(&captions[k + 1..]);
            slow_tokenize(cap, following.as_deref())
        }
    }
}

/// Tokenize one caption of a stream. `next` is the text that follows this caption's line in
/// the stream (the next caption; if that one is blank, the following captions joined with
/// `\n` up to and including the first non-blank one, as [`following_text`] builds it), or
/// `None` at the end of the stream. Returns the filtered tokenized caption.
pub fn tokenize_one(caption: &str, next: Option<&str>) -> String {
    fast_tokenize(caption).unwrap_or_else(|| slow_tokenize(caption, next))
}

/// The general path: full scanner, then the punctuation filter.
fn slow_tokenize(caption: &str, next: Option<&str>) -> String {
    filter_line(&ptb_line(caption, next))
}

/// Tokenize one caption with a lookahead class instead of the following text (same result as
/// [`tokenize_one`] with any following text of that class).
pub fn tokenize_with_class(caption: &str, class: LookaheadClass) -> String {
    fast_tokenize(caption).unwrap_or_else(|| slow_tokenize(caption, class.synthetic_text()))
}

/// pycocoevalcap's post-filter on one tokenizer output line.
pub fn filter_line(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for tok in line.trim_end().split(' ') {
        if PUNCTUATION.contains(&tok) {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(tok);
    }
    out
}

/// The raw PTBTokenizer output line for one caption (before the punctuation filter), with
/// `next` the following text of the stream (see [`tokenize_one`]).
pub fn ptb_line(caption: &str, next: Option<&str>) -> String {
    let line = sanitize(caption);
    let mut buf: Vec<char> = line.chars().collect();
    let end = buf.len();
    // Only a line whose last non-blank character is a period can depend on what follows.
    // (U+0085 after the period counts as a space: `S.\u{85}` then `The` splits, observed)
    let needs_tail = buf.iter().rev().find(|&&c| !is_space(c) && c != '\u{85}') == Some(&'.');
    if let (Some(n), false) = (next, needs_tail) {
        let _ = n;
        buf.push('\n');
    } else if let Some(n) = next {
        buf.push('\n');
        // Only the start of the following text can matter; bound it.
        let n = sanitize(n);
        let mut taken = 0usize;
        for c in n.chars() {
            if c == '\n' {
                buf.push('\n');
            } else {
                buf.push(c);
                if !is_space(c) {
                    taken += 1;
                    if taken > 128 {
                        break;
                    }
                }
            }
        }
    }
    let mut lx = Lexer::new(&buf, end, String::with_capacity(line.len() + 8), false);
    lx.run();
    lx.out
}

#[cfg(test)]
mod tests {
    use super::*;

    // The fast path (`fast.rs`), where it answers, against the general scanner.
    const NEXTS: [Option<&str>; 10] = [
        None,
        Some("x"),
        Some("X"),
        Some("5"),
        Some("A "),
        Some("The dog"),
        Some("\nA dog"),
        Some("<b> dog"),
        Some(" 5"),
        Some(". dog"),
    ];

    /// The fast path, where it answers, equals the general scanner for every following text.
    fn check_fast(s: &str) {
        if let Some(fast) = fast_tokenize(s) {
            for next in NEXTS {
                assert_eq!(fast, slow_tokenize(s, next), "{s:?} next {next:?}");
            }
        }
    }

    #[test]
    fn fast_path_matches_scanner_exhaustive() {
        // Every string of length <= 5 over an alphabet covering the fast path's rules.
        let alpha = ['a', 'S', 't', ' ', '.', ',', '-', '\n'];
        let mut cur = vec![String::new()];
        let mut answered = 0;
        for _ in 0..5 {
            let mut nxt = Vec::new();
            for s in &cur {
                for c in alpha {
                    let mut t = s.clone();
                    t.push(c);
                    answered += usize::from(fast_tokenize(&t).is_some());
                    check_fast(&t);
                    nxt.push(t);
                }
            }
            cur = nxt;
        }
        assert!(answered > 5_000);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]

        #[test]
        fn fast_path_matches_scanner(parts in proptest::collection::vec(
            proptest::sample::select(vec![
                "a", "A", "I", "x", "dog", "Dog", "DOG", "cannot", "Cannot", "GONNA", "wanna",
                "gotta", "lemme", "gimme", "cannots", "gonnas", "st", "St", "ST", "no", "No",
                "etc", "Etc", "co", "Mr", "mrs", "calif", "messrs", "wash", "Wash", "pa", "fig",
                "figs", "prop", "art", "ca", "aug", "blvd", "ave", "sept", "thurs", "and",
                "the", "The", "ab", "abc", "abcdefghij", " ", "  ", "\n", ",", ".", "..", "...",
                "....", "-", "--", "x-ray", "a-b",
            ]), 0..10)) {
            check_fast(&parts.concat());
        }
    }

    /// The tokenizer's entry points, for the rule families' own tests.
    pub(super) use super::{ptb_line, tokenize_one, tokenize_with_class};

    /// Check observed `(input, raw reference line)` pairs, the next line being lower case
    /// (as in `samples.json`); report every difference.
    pub(super) fn check_lines(lines: &[(&str, &str)]) {
        let bad: Vec<_> = lines
            .iter()
            .map(|&(input, want)| (input, want, ptb_line(input, Some("marker"))))
            .filter(|(_, want, got)| want != got)
            .collect();
        assert!(bad.is_empty(), "(input, reference, capscore): {bad:?}");
    }

    /// Check observed `(caption, next line, tokenized)` cases; report every difference.
    pub(super) fn check_cases(cases: &[(&str, &str, &str)]) {
        let bad: Vec<_> = cases
            .iter()
            .map(|&(raw, next, want)| (raw, want, tokenize_one(raw, Some(next))))
            .filter(|(_, want, got)| want != got)
            .collect();
        assert!(bad.is_empty(), "(caption, reference, capscore): {bad:?}");
    }

    #[test]
    fn basics() {
        assert_eq!(ptb_line("don't", Some("x")), "do n't");
        assert_eq!(
            tokenize_stream(&["A dog.", "Two cats!"]),
            ["a dog", "two cats"]
        );
    }
}
