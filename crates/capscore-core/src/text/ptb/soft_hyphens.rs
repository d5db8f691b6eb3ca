//! Soft hyphens (U+00AD) and format characters.
//!
//! The reference treats a soft hyphen as a letter inside and at the start of words and deletes
//! it from their text; standing alone it is `-`. Inside words the rules interact with number,
//! hyphen and apostrophe joins; those in-word rules are [`Lexer::shy_in_number`] and
//! [`Lexer::shy_after_join`] here, and the checks the word scanner makes on the characters it
//! takes (`crate::text::ptb::words`). File names and URLs keep their soft hyphens
//! (`crate::text::ptb::urls`).

use super::classes::{is_alnum, is_digit, is_letter, java_lower, letter_entity_len};
use super::lexer::Lexer;
use super::words::{ascii_part, Flow, WordScan};

impl Lexer<'_> {
    /// A soft hyphen that does not start a word: before a period and letters or letter
    /// entities it starts a period word (`\u{AD}.E` → `.e`, `\u{AD}.&eacute;` → `.&eacute;`),
    /// and a file name at least as long keeps it (`\u{AD}.C` → `\u{AD}.c`, `\u{AD}.4.c`);
    /// otherwise it is `-` unless a letter, digit or letter entity follows (after more soft
    /// hyphens), or `!` / `?` and a letter or letter entity, soft hyphens included (`\u{AD}?U`
    /// → `?u`, `\u{AD}!\u{AD}1` → `!1`, `\u{AD}!&eacute;`; not `\u{AD}!1` → `-` `!` `1`),
    /// observed. `None`: the word rule takes it.
    pub(super) fn soft_hyphen_alone(&mut self, i: usize) -> Option<usize> {
        // (called at a soft hyphen; a run of them is a token per hyphen, so its length is
        // kept: see `run_len`)
        let k = i + self.run_len(i, '\u{AD}');
        if self.at(k) == Some('.') {
            let piece = |q: usize| {
                if q >= self.end {
                    0
                } else if is_alnum(self.buf[q]) {
                    1
                } else {
                    letter_entity_len(self.buf, q, self.end)
                }
            };
            // (a soft hyphen is a letter there too: `\u{AD}.\u{AD}c` → `.c`, `\u{AD}.e.\u{AD}` →
            // `.e.`)
            let starts_letter = |q: usize| {
                self.at(q).is_some_and(is_letter) || letter_entity_len(self.buf, q, self.end) > 0
            };
            // (then letters, digits and letter entities, and more periods before letters or
            // letter entities: `\u{AD}.E3` → `.e3`, `\u{AD}.a.m` → `.a.m`, `\u{AD}.&eacute;`
            // → `.&eacute;`, `\u{AD}.e.&eacute;`; a final period stays before `,` `;` `:`
            // `、` as on a word: `\u{AD}.e.:` → `.e.` `:`)
            let word_end = starts_letter(k + 1).then(|| {
                let mut e = k + 1;
                loop {
                    let n = piece(e);
                    if n > 0 {
                        e += n;
                    } else if matches!(self.at(e), Some('.' | '!' | '?')) && starts_letter(e + 1) {
                        // (`!` and `?` before letters or letter entities too: `\u{AD}.t!p` →
                        // `.t!p`, `\u{AD}.t?&eacute;`, `\u{AD}.t!\u{AD}` → `.t!`; not before
                        // digits: `\u{AD}.t!5` → `.t` `!` `5`)
                        e += 1;
                    } else {
                        break;
                    }
                }
                if self.at(e) == Some('.')
                    && matches!(self.at(e + 1), Some(',' | ';' | ':' | '\u{3001}'))
                {
                    e += 1;
                }
                e
            });
            // A file name keeps its soft hyphens and wins when it is at least as long
            // (`\u{AD}.C` → `\u{AD}.c`, `\u{AD}.4.c`, `\u{AD}.e.4.c`, `\u{AD}.&eacute;.c`).
            match (self.filename(i), word_end) {
                (Some(f), e) if e.is_none_or(|e| f >= e) => {
                    let t: String = self.buf[i..f].iter().collect();
                    self.emit(&java_lower(&t));
                    return Some(f);
                }
                (_, Some(e)) => {
                    let t = self.buf[k..e].to_vec();
                    self.emit_lower(&t);
                    return Some(e);
                }
                _ => {}
            }
        }
        let mark_word = k + 1 < self.end
            && matches!(self.buf[k], '!' | '?')
            && (is_letter(self.buf[k + 1]) || letter_entity_len(self.buf, k + 1, self.end) > 0);
        // (a letter entity is a letter here too: `\u{AD}&eacute;` → `&eacute;`, and a file
        // name keeps the soft hyphen: `\u{AD}&eacute;.c` → `\u{AD}&eacute;.c`, observed)
        let word =
            k < self.end && (is_alnum(self.buf[k]) || letter_entity_len(self.buf, k, self.end) > 0);
        if !(mark_word || word) {
            return Some(self.one(i, "-"));
        }
        None
    }
}

impl Lexer<'_> {
    /// Soft hyphens in a word that starts with a digit (or a sign or separator and a digit):
    /// they join digits to a letterless number and are deleted (`3\u{AD}5` → `35`, then the
    /// number takes no letters: `4\u{AD}5a` → `45 a`), are dropped before a hyphen join
    /// (`3\u{AD}-a` → `3-a`) and keep ASCII letters and digits that lead to one in the word
    /// (`0s\u{AD}2-1` → `0s2-1`), join an ASCII part after a hyphen join (`1-4\u{AD}e` → `1-4e`,
    /// `5-\u{AD}5é` → `5-5` `é`), and end the word anywhere else (`3\u{AD}a` → `3 a`,
    /// `1/2\u{AD}3` → `1/2` `3`), observed.
    pub(super) fn shy_in_number(&self, s: &mut WordScan) -> Flow {
        let (b, end, i, j) = (self.buf, self.end, s.i, s.j);
        let mut k = j;
        while k < end && b[k] == '\u{AD}' {
            k += 1;
        }
        let hyphen = k + 1 < end && b[k] == '-' && is_alnum(b[k + 1]);
        if s.slash_used {
            return Flow::Stop;
        }
        if s.joined_seg && !hyphen {
            if s.joined_other || !ascii_part(&b[i..j]) {
                return Flow::Stop;
            }
            s.shy_ascii = true;
            s.j = k;
            return Flow::Next;
        }
        // Observed: a word of ASCII letters, digits and soft hyphens goes on when more of them
        // lead to a `-` join (`0s\u{AD}2-1` → `0s2-1`, `0\u{AD}2s-1` → `02s-1`,
        // `1\u{AD}a-b-c`; but `0s\u{AD}2` → `0s` `2`, `0é\u{AD}2-1` → `0é` `2` `-1`).
        let later_hyphen = !hyphen
            && !s.numeric_sep
            && b[i..j]
                .iter()
                .all(|&x| x.is_ascii_alphanumeric() || x == '\u{AD}')
            && {
                let mut m = k;
                while m < end && (b[m].is_ascii_alphanumeric() || b[m] == '\u{AD}') {
                    m += 1;
                }
                m + 1 < end
                    && b[m] == '-'
                    && (b[m + 1].is_ascii_alphanumeric() || b[m + 1] == '\u{AD}')
            };
        let joins = hyphen || later_hyphen;
        // (a digit after one soft hyphen only: `5\u{AD}1` → `51`, `5\u{AD}\u{AD}1` → `5` `1`,
        // `5,000\u{AD}\u{AD}1` → `5,000` `1`; a hyphen join takes any run: `5\u{AD}\u{AD}-1` →
        // `5-1`)
        if !joins && (s.has_letter || k != j + 1 || !(k < end && is_digit(b[k]))) {
            return Flow::Stop;
        }
        s.numeric_sep |= !joins;
        s.j = k;
        Flow::Next
    }

    /// A soft hyphen inside any other word: it ends an apostrophe word (`n't\u{AD}t` →
    /// `n't` `t`, `o'ck\u{AD}I` → `o'ck` `i`) and, after a hyphen join, joins only words of
    /// ASCII letters, digits, `-` and `.` with no `_` or U+2010-like join (see
    /// `WordScan::shy_ascii`), observed. `false`: the word ends before it.
    pub(super) fn shy_in_word(&self, s: &mut WordScan) -> bool {
        if s.seg_apos || s.nt_join {
            return false;
        }
        if s.joined_seg && !s.shy_ascii {
            if s.joined_other || !ascii_part(&self.buf[s.i..s.j]) {
                return false;
            }
            s.shy_ascii = true;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use crate::text::ptb::tests::{check_cases, check_lines};

    /// Observed lines: input, the reference's raw output line (next line lower case;
    /// `tests/fixtures/tokenizer/samples.json`).
    const LINES: &[(&str, &str)] = &[
        ("zero\u{200B}width", "zero width"),
        ("soft\u{AD}hyphen", "softhyphen"),
    ];

    /// Observed cases: caption, next line, tokenized caption after the punctuation filter
    /// (`tests/fixtures/tokenizer/fuzz_regressions*.jsonl.gz`).
    const CASES: &[(&str, &str, &str)] = &[
        (
            "  0X1F\u{2060}James'swomaN \u{20DD}",
            "n't1e",
            "0x1f james swoman",
        ),
        (
            "'60s ...\u{640}\u{200B}\u{200B}u.s. ..",
            "A.ORG/OG",
            "'60s \u{640} u.s.",
        ),
        ("+\u{AD}.5", "x", "+ .5"),
        ("<N@\u{AD}", ".", "<n@\u{AD}"),
        ("X,\u{AD}-U", ")", "x,-u"),
        ("a-\u{AD}é", "x", "a- é"),
        ("ab.\u{AD}-m", "x", "ab.-m"),
        ("a\u{AD}é-b", "x", "aé b"),
        ("d.\u{AD}-o", ".", "d.-o"),
        ("t@\u{AD}", ".", "t@\u{AD}"),
        ("x.-\u{AD}x", "x", "x.-x"),
        ("\u{AD}!T", ".", "!t"),
        ("\u{AD},", "x", ""),
        ("\u{AD}.e.r", "›", ".e.r"),
        ("\u{AD}w.c", ">", "\u{AD}w.c"),
        ("\u{AD}\u{30FC}-6", ".", "\u{30FC} -6"),
        ("é-b\u{AD}c", "x", "é-b c"),
        ("\u{200C} B&wapprox.", "Don'etc.", "b & wapprox"),
        (
            "\u{200D}DIDN'TProp. 7/8ths ×she",
            "n't'veon",
            "did n'tprop 7/8ths × she",
        ),
        ("\u{2060}.com", "\u{303}", "\u{2060}.com"),
        ("\u{2060}<br>+﹘`", ". !max.Don'tx.com/", "<br> +"),
        ("\u{FEFF}@User_1approx.!", "to'W", "@user_1approx"),
        ("\u{FEFF}″\u{9}three", "Z'al", "″ three"),
        ("🧑\u{200D}🍳 ;)...", "¾.org", ";-rrb-"),
    ];

    #[test]
    fn observed_lines() {
        check_lines(LINES);
    }

    #[test]
    fn observed_cases() {
        check_cases(CASES);
    }

    /// Observed (issue 26, fuzz round 8): a number of digits and soft hyphens takes a `-` join, and letters after it. Caption, next line, tokenized caption.
    const SHY_NUMBER_HYPHEN_CASES: &[(&str, &str, &str)] = &[
        ("0\u{AD}2-1", ".", "02-1"),
        ("0\u{AD}2-12", "x", "02-12"),
        ("3\u{AD}5-a", "x", "35-a"),
        ("3\u{AD}5-6a", "x", "35-6a"),
        ("3\u{AD}5-6-7", "x", "35-6-7"),
        ("3\u{AD}5_6", "x", "35 _ 6"),
        ("3\u{AD}5a", "x", "35 a"),
        ("0\u{AD}2\u{AD}3-1", "x", "023-1"),
        ("-3\u{AD}5-6", "x", "-35 -6"),
    ];

    #[test]
    fn observed_shy_number_hyphen() {
        check_cases(SHY_NUMBER_HYPHEN_CASES);
    }

    /// Observed (issue 26, fuzz round 9): a soft hyphen before a period starts a period word of
    /// letters, digits and letter entities (`\u{AD}.&eacute;` → `.&eacute;`) whose final period
    /// stays before `,` `;` `:` `、`, unless a file name (kept with its soft hyphens) is at least
    /// as long (`\u{AD}.4.c`). Caption, next line, tokenized caption.
    const SHY_PERIOD_WORD_CASES: &[(&str, &str, &str)] = &[
        ("\u{AD}.4.c", "x", "\u{AD}.4.c"),
        ("\u{AD}\u{AD}.4.c", "x", "\u{AD}\u{AD}.4.c"),
        ("\u{AD}.4.4.c", "x", "\u{AD}.4.4.c"),
        ("\u{AD}.e.4.c", "x", "\u{AD}.e.4.c"),
        ("\u{AD}.&eacute;.c", "x", "\u{AD}.&eacute;.c"),
        ("\u{AD}.4", "x", ".4"),
        ("\u{AD}.4c", "x", ".4 c"),
        ("\u{AD}.&eacute;", "x", ".&eacute;"),
        ("\u{AD}.&eacute;x", "x", ".&eacute;x"),
        ("\u{AD}.&eacute;.4", "x", ".&eacute; .4"),
        ("\u{AD}.e.&eacute;", "x", ".e.&eacute;"),
        ("\u{AD}.e.:", "x", ".e."),
        ("\u{AD}.e.,", "x", ".e."),
        ("\u{AD}.e.!", "x", ".e"),
        ("\u{AD}.e. x", "x", ".e x"),
        ("\u{AD}.e.、", "x", ".e. 、"),
        ("\u{AD}.ab.;", "x", ".ab."),
        ("\u{AD}.一.:", "x", ".一."),
        ("\u{AD}.&eacute;.:", "x", ".&eacute;."),
        ("\u{AD}.e\u{AD}f.:", "x", ".ef."),
        ("\u{AD}.e.4", "x", ".e .4"),
        ("\u{AD}.a-b", "x", ".a b"),
        ("\u{AD}.\u{AD}c", "x", ".c"),
        ("\u{AD}.\u{AD}", "x", ""),
        ("\u{AD}.\u{AD}4", "x", ".4"),
        ("\u{AD}.\u{AD}\u{AD}c", "x", ".c"),
        ("\u{AD}.\u{AD}c.:", "x", ".c."),
        ("\u{AD}.e.\u{AD}f", "x", ".e.f"),
        ("\u{AD}.\u{AD}&eacute;", "x", ".&eacute;"),
        ("\u{AD}.\u{AD}c.c", "x", "\u{AD}.\u{AD}c.c"),
        ("\u{AD}.e.\u{AD}", "x", ".e."),
        ("\u{AD}.\u{AD}.a", "x", "..a"),
    ];

    #[test]
    fn observed_shy_period_word() {
        check_cases(SHY_PERIOD_WORD_CASES);
    }

    /// Observed (issue 26, fuzz round 9): in a word that starts with a digit, ASCII letters,
    /// digits and soft hyphens that lead to a `-` join stay one word (`0s\u{AD}2-1` → `0s2-1`);
    /// a number a soft hyphen starts takes its separators after more soft hyphens
    /// (`\u{AD}٣\u{AD}2:0` → `٣2:0`). Caption, next line, tokenized caption.
    const SHY_DIGIT_WORD_CASES: &[(&str, &str, &str)] = &[
        ("0s\u{AD}2-1", "x", "0s2-1"),
        ("0s\u{AD}2-a", "x", "0s2-a"),
        ("0\u{AD}s2-1", "x", "0s2-1"),
        ("0s\u{AD}2-1-2", "x", "0s2-1-2"),
        ("0sa\u{AD}2-1", "x", "0sa2-1"),
        ("0\u{AD}2s-1", "x", "02s-1"),
        ("0s\u{AD}2\u{AD}a-1", "x", "0s2a-1"),
        ("0s\u{AD}2-\u{AD}1", "x", "0s2-1"),
        ("1\u{AD}a-b-c", "x", "1a-b-c"),
        ("0s\u{AD}2", "x", "0s 2"),
        ("0\u{AD}2s", "x", "02 s"),
        ("0é\u{AD}2-1", "x", "0é 2 -1"),
        ("0s\u{AD}2é-1", "x", "0s 2é -1"),
        ("0s\u{AD}2-é", "x", "0s 2 é"),
        ("0s\u{AD}2_1", "x", "0s 2 _ 1"),
        ("0s\u{AD}2.1", "x", "0s 2.1"),
        ("٣s\u{AD}2-1", "x", "٣s 2 -1"),
        ("\u{AD}٣\u{AD}2:0", "x", "٣2:0"),
        ("\u{AD}3\u{AD}2:0", "x", "32:0"),
        ("\u{AD}٣\u{AD}2,0", "x", "٣2,0"),
        ("\u{AD}٣\u{AD}2.0", "x", "٣2.0"),
        ("\u{AD}٣\u{AD}٣:0", "x", "٣٣:0"),
        ("\u{AD}3\u{AD}2", "x", "32"),
        ("\u{AD}3\u{AD}2a", "x", "32a"),
    ];

    #[test]
    fn observed_shy_digit_word() {
        check_cases(SHY_DIGIT_WORD_CASES);
    }
}
