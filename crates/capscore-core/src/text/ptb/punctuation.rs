//! Brackets, quotes, dashes, periods and emoticons.
//!
//! `( ) [ ] { }` → `-lrb- -rrb- -lsb- -rsb- -lcb- -rcb-`; `"` and the curly, angle and
//! Windows-1252 quotes → PTB quotes; dash runs; ellipses; `!?` runs; emoticons (`:)` →
//! `:-rrb-`) and faces (`^_^`).

use super::classes::{is_digit, quote_map};
use super::lexer::Lexer;

/// The eyes of `^_^`-like faces, observed.
fn face_eye(c: char) -> bool {
    matches!(c, '^' | '-' | '>' | '<' | '~' | '\'' | '=' | 'x')
}

impl Lexer<'_> {
    /// Does an emoticon start at `i`? (Checked before the `<`, `>`, `=` rules.)
    pub(super) fn emoticon_at(&self, i: usize) -> bool {
        let mut j = i;
        if matches!(self.at(j), Some('<' | '>')) {
            j += 1;
        }
        matches!(self.at(j), Some(':' | ';' | '=')) && self.at(j + 1).is_some() && {
            let mut k = j + 1;
            if matches!(self.at(k), Some('-' | '\'' | 'o' | '*')) {
                k += 1;
            }
            self.at(k).is_some_and(|m| {
                matches!(
                    m,
                    ')' | '(' | 'D' | 'd' | 'P' | 'p' | 'O' | '@' | '|' | ']' | '[' | '{' | '\\'
                ) || (matches!(m, '3' | '0')
                    && k == i + 1
                    && self.buf[i] == ':'
                    && !self.digit_mouth_is_number(k))
            }) && !self.at(k + 1).is_some_and(|c| c.is_ascii_alphanumeric())
        }
    }

    /// The `3` or `0` at `k` after `:` goes on as a number, not a face: a digit of any script
    /// follows (`:3\u{664}` → `:3\u{664}`; an ASCII one is a letter or digit after the mouth
    /// anyway), or a separator or one soft hyphen and a digit (`:0.5`, `:0\u{AD}2` → `:02`;
    /// `:0\u{AD}\u{AD}2` → `:0` `2`), observed.
    fn digit_mouth_is_number(&self, k: usize) -> bool {
        self.at(k + 1).is_some_and(is_digit)
            || (matches!(self.at(k + 1), Some('.' | ',' | ':' | '\u{AD}'))
                && self.at(k + 2).is_some_and(is_digit))
    }

    /// Emoticons (observed): `[<>]?[:;=]['-]?` then a mouth from `)(DdPpO@|][{\\`, or
    /// `:3` / `:0`; not when a letter or digit follows. `(`/`)` become `-lrb-`/`-rrb-`.
    pub(super) fn emoticon(&mut self, i: usize) -> Option<usize> {
        let mut j = i;
        if matches!(self.at(j), Some('<' | '>')) {
            j += 1;
        }
        let eyes = self.at(j)?;
        if !matches!(eyes, ':' | ';' | '=') {
            return None;
        }
        j += 1;
        // Observed: a lower-case `o` may stand where the nose is (`:op`, `=o]`, `;o)`).
        // (and `*`: `:*O`, `;*D`, `:*)`, observed)
        let nose = matches!(self.at(j), Some('-' | '\'' | 'o' | '*'));
        if nose {
            j += 1;
        }
        let m = self.at(j)?;
        if self.at(j + 1).is_some_and(|c| c.is_ascii_alphanumeric()) {
            return None;
        }
        let tail = match m {
            ')' => "-rrb-".to_string(),
            '(' => "-lrb-".to_string(),
            'D' | 'd' | 'P' | 'p' | 'O' | '@' | '|' | ']' | '[' | '{' | '\\' => {
                m.to_ascii_lowercase().to_string()
            }
            '3' | '0' if eyes == ':' && !nose && j == i + 1 && !self.digit_mouth_is_number(j) => {
                m.to_string()
            }
            _ => return None,
        };
        let mut t: String = self.buf[i..j].iter().collect();
        t.push_str(&tail);
        self.emit(&t);
        Some(j + 1)
    }
}

impl Lexer<'_> {
    /// `X_Y` with X and Y from `^ - > < ~ ' =` and a lower-case `x` is one token (`^_^`,
    /// `>_<`, `=_'`, `'_-`, `^_x`, `x_^`; `^_xy` → `^_x` `y`; not `X`: `^_X` → `^` `_` `x`),
    /// observed. (`x_x` is left to the word rule, which takes `x_xy` whole.)
    pub(super) fn underscore_face(&mut self, i: usize) -> Option<usize> {
        if self.at(i + 1) == Some('_')
            && face_eye(self.buf[i])
            && self.at(i + 2).is_some_and(face_eye)
            && !(self.buf[i] == 'x' && self.buf[i + 2] == 'x')
        {
            let t: String = self.buf[i..i + 3].iter().collect();
            self.emit(&t);
            return Some(i + 3);
        }
        None
    }

    /// A face in parentheses is one token: `(` eye, an optional `_` `.` `-`, eye `)`, the
    /// eyes from `^ - > < ~ ' =` and `x` (`(^_^)` → `-lrb-^_^-rrb-`, `(-.-)`, `(^-^)`,
    /// `(^^)`, `(x_x)`, `(>_<)`; a `-` nose not beside a `-` eye: `(^--)`, `(---)` split),
    /// observed.
    pub(super) fn paren_face(&mut self, i: usize) -> Option<usize> {
        let eye = |k: usize| self.at(k).is_some_and(face_eye);
        if !eye(i + 1) {
            return None;
        }
        let j = if eye(i + 2) && self.at(i + 3) == Some(')') {
            i + 3
        } else if matches!(self.at(i + 2), Some('_' | '.' | '-'))
            && eye(i + 3)
            && self.at(i + 4) == Some(')')
            && !(self.buf[i + 2] == '-' && (self.buf[i + 1] == '-' || self.buf[i + 3] == '-'))
        {
            i + 4
        } else {
            return None;
        };
        let mid: String = self.buf[i + 1..j].iter().collect();
        self.emit(&format!("-lrb-{mid}-rrb-"));
        Some(j + 1)
    }

    /// `"` is an opening quote ` `` ` only before an ASCII letter or digit or `$`, else a
    /// closing `''`, observed.
    pub(super) fn double_quote(&mut self, i: usize) -> usize {
        let opening = self
            .at(i + 1)
            .is_some_and(|n| n.is_ascii_alphanumeric() || n == '$');
        self.emit(if opening { "``" } else { "''" });
        i + 1
    }

    /// `( ) [ ] { }` → `-lrb- -rrb- -lsb- -rsb- -lcb- -rcb-` (spec COCO §3.2).
    pub(super) fn bracket(&mut self, i: usize) -> usize {
        let tok = match self.buf[i] {
            '(' => "-lrb-",
            ')' => "-rrb-",
            '[' => "-lsb-",
            ']' => "-rsb-",
            '{' => "-lcb-",
            _ => "-rcb-",
        };
        self.one(i, tok)
    }

    /// `:` and `;` are tokens of their own unless they start an emoticon.
    pub(super) fn colon(&mut self, i: usize) -> usize {
        if let Some(n) = self.emoticon(i) {
            return n;
        }
        self.one(i, if self.buf[i] == ':' { ":" } else { ";" })
    }

    /// A run of hyphens: `-`, two to four are `--`, five or more stay as written, observed.
    pub(super) fn hyphen_run(&mut self, i: usize) -> usize {
        let n = self.run_len(i, '-');
        match n {
            1 => self.emit("-"),
            2..=4 => self.emit("--"),
            _ => self.emit(&"-".repeat(n)),
        }
        i + n
    }

    /// A run of `!` and `?` is one token (`?!`, `!!!`), observed.
    pub(super) fn mark_run(&mut self, i: usize) -> usize {
        let mut j = i;
        while j < self.end && matches!(self.buf[j], '!' | '?') {
            j += 1;
        }
        let t: String = self.buf[i..j].iter().collect();
        self.emit(&t);
        j
    }

    /// Periods that no word took: ellipses of three to five periods (`......` → `...` `...`),
    /// single periods, spaced ellipses (`. . .`), and a period that starts a number after them
    /// (`......0` → `... .0`, `..5` → `.` `.5`), observed.
    pub(super) fn periods(&mut self, i: usize) -> usize {
        if self.run_len(i, '.') == 2 && self.at(i + 2).is_some_and(is_digit) {
            return self.one(i, ".");
        }
        let mut n = self.run_len(i, '.');
        // Observed: a spaced ellipsis (`. . .`, single spaces or no-break spaces, three
        // or more periods) is one token, also after a run (`.. . .2` → `. ... 2`).
        let mut j = i + n - 1;
        let mut dots = 1;
        // (five periods at most, like a run: `. . . . . .5` → `...` `.5`, observed)
        while dots < 5
            && matches!(self.at(j + 1), Some(' ' | '\u{A0}'))
            && self.at(j + 2) == Some('.')
        {
            j += 2;
            dots += 1;
        }
        // (only from a period the run's ellipses leave over: `... . .1` → `...` `.`
        // `.1`, `...... . .1` → `...` `...` `1`, observed)
        let mut left = n;
        while left >= 3 {
            left -= left.min(5);
        }
        if dots >= 3 && left > 0 {
            if n == 1 {
                self.emit("...");
                return j + 1;
            }
            n -= 1;
        } else if n > 3 && self.at(i + n).is_some_and(is_digit) {
            // Observed: the period left over after the ellipses starts the number
            // (`......0` → `... .0`).
            let mut k = 0;
            while n - k >= 3 {
                self.emit("...");
                k += (n - k).min(5);
            }
            if k < n {
                while k + 1 < n {
                    self.emit(".");
                    k += 1;
                }
                return i + k;
            }
            return i + n;
        }
        let mut k = 0;
        while n - k >= 3 {
            self.emit("...");
            k += (n - k).min(5);
        }
        while k < n {
            self.emit(".");
            k += 1;
        }
        i + n
    }

    /// Quote characters other than `'` and `"` (curly, angle, Windows-1252, `` ` ``): a run of
    /// them is one token of at most two characters, each written as its PTB quote (three
    /// opening quotes → two tokens); U+2019 and U+0092 first try the apostrophe rules
    /// ([`Lexer::curly_apos`]), observed.
    pub(super) fn quote_run(&mut self, i: usize) -> usize {
        let c = self.buf[i];
        if matches!(c, '\u{2019}' | '\u{92}') {
            if let Some(k) = self.curly_apos(i) {
                return k;
            }
        }
        // Observed: a run of these quote characters is one token.
        let mut t = String::new();
        let mut j = i;
        // at most two characters per token (three opening quotes → two tokens)
        while let Some(m) = self.at(j).and_then(quote_map) {
            t.push_str(m);
            j += 1;
            if j == i + 2 {
                break;
            }
        }
        self.emit(&t);
        j
    }
}

#[cfg(test)]
mod tests {
    use crate::text::ptb::tests::{check_cases, check_lines};

    /// Observed lines: input, the reference's raw output line (next line lower case;
    /// `tests/fixtures/tokenizer/samples.json`).
    const LINES: &[(&str, &str)] = &[
        ("*", "*"),
        ("~", "~"),
        ("..", ". ."),
        (":P", ":p"),
        ("!!!", "!!!"),
        ("--a", "-- a"),
        ("[a]", "-lsb- a -rsb-"),
        ("a*b", "a * b"),
        ("a_b", "a_b"),
        ("a—b", "a -- b"),
        ("«a»", "`` a ''"),
        ("&gt;", ">"),
        ("a||b", "a | | b"),
        ("12:30", "12:30"),
        ("&nbsp;", ""),
        ("a -- b", "a -- b"),
    ];

    /// Observed cases: caption, next line, tokenized caption after the punctuation filter
    /// (`tests/fixtures/tokenizer/fuzz_regressions*.jsonl.gz`).
    const CASES: &[(&str, &str, &str)] = &[
        ("#&eacute;a", "±", "#&eacute;a"),
        ("&nbsp;/1\u{A0}1/2", "S.Net/Pe", "/ 1\u{A0}1/2"),
        ("'TiS vs..\"", "it'llשם1", "'t is vs."),
        ("(555) 123.4567", "x", "-lrb- 555 -rrb- 123.4567"),
        ("12345/6we're I.e.\"", "A.com/pa", "12345/6we 're i.e."),
        ("2:0.、", ".", "2:0 、"),
        ("4k\u{1680}we'll q&a ―", "I've1.6", "4k we 'll q & a"),
        (":*)", "x", ":*-rrb-"),
        (":dＡ", "e", ":d ａ"),
        (":oO", "x", ":oo"),
        (";\\", ".", ";\\"),
        ("Gimme'he(", "‹", "gim me he -lrb-"),
        ("M/A_B", "\u{92}", "m/a _ b"),
        ("P&APOS;", ";", "p&apos"),
        ("S...-F", "R", "s...-f"),
        ("n't'c\"", "cannot ain't", "n't c"),
        (
            "oMacy's1/2…=",
            "'n' http SR. \u{94}c'mon,z",
            "omacy 's 1/2 =",
        ),
        ("s...-1", "e", "s...-1"),
        ("train'+ ⸺\u{2009}[", "4n\u{303}", "train + -lsb-"),
        ("é_\u{AD}b", "x", "é _ b"),
        ("\u{2002}⅛:\u{85}", "S'S1/10", "⅛"),
        (
            "\u{2007}Tex. 한국어\u{A0}at.\"",
            "N't&eacute;",
            "tex. 한국어 at",
        ),
        ("’’\u{A0}(::WASN'T", "’90s", "-lrb- was n't"),
        ("\u{30FC} \u{92}\u{A0}..?!", "H'N", "\u{30FC} ?!"),
    ];

    #[test]
    fn observed_lines() {
        check_lines(LINES);
    }

    #[test]
    fn observed_cases() {
        check_cases(CASES);
    }

    /// Observed (issue 26, fuzz round 8): `_` faces with an `x` eye, and faces in parentheses.
    /// Caption, next line, tokenized caption.
    const FACE_CASES: &[(&str, &str, &str)] = &[
        ("^_x", "x", "^_x"),
        ("^_xy", "x", "^_x y"),
        ("^_X", "x", "^ _ x"),
        ("-_x", ".", "-_x"),
        ("'_x", "t", "'_x"),
        ("=_x", "x", "=_x"),
        ("~_x", ".", "~_x"),
        (">_x", "x", ">_x"),
        ("<_x", "x", "<_x"),
        ("^_x_y", "x", "^_x _ y"),
        ("-_x-y", "x", "-_x y"),
        ("a-_x", "x", "a -_x"),
        ("x_^", "x", "x_^"),
        ("x_-", "n", "x_-"),
        ("x_<", "-", "x_<"),
        ("x_'s", "x", "x_' s"),
        ("x_-1", "x", "x_- 1"),
        ("x_x", "x", "x_x"),
        ("X_^", "x", "x _ ^"),
        ("x_^@b.com", "x", "x_^@b.com"),
        ("(^_^)", "x", "-lrb-^_^-rrb-"),
        ("(-_-)", "x", "-lrb--_--rrb-"),
        ("('_')", "x", "-lrb-'_'-rrb-"),
        ("(^_x)", "x", "-lrb-^_x-rrb-"),
        ("(x_x)", "x", "-lrb-x_x-rrb-"),
        ("(^-^)", "x", "-lrb-^-^-rrb-"),
        ("(^.^)", "x", "-lrb-^.^-rrb-"),
        ("(^^)", "x", "-lrb-^^-rrb-"),
        ("(-.-)", "x", "-lrb--.--rrb-"),
        ("(>.<)", "x", "-lrb->.<-rrb-"),
        ("(x-x)", "x", "-lrb-x-x-rrb-"),
        ("(-^)", "x", "-lrb--^-rrb-"),
        ("(^-)", "x", "-lrb-^--rrb-"),
        ("(--)", "x", "-lrb----rrb-"),
        ("(---)", "x", "-lrb- -rrb-"),
        ("(^--)", "x", "-lrb- ^ -rrb-"),
        ("(o_o)", "x", "-lrb- o_o -rrb-"),
        ("(^_^]", "x", "-lrb- ^_^ -rsb-"),
        ("(^_^)x", "x", "-lrb-^_^-rrb- x"),
        ("((^_^)", "x", "-lrb- -lrb-^_^-rrb-"),
    ];

    #[test]
    fn observed_faces() {
        check_cases(FACE_CASES);
    }

    /// Observed (issue 26, fuzz round 8): a spaced ellipsis takes five periods at most. Caption,
    /// next line, tokenized caption.
    const SPACED_ELLIPSIS_CASES: &[(&str, &str, &str)] = &[
        (". . . . . .5", "n", ".5"),
        (". . . . .5", "x", "5"),
        (". . . . . . .5", "x", ".5"),
        (". . . . . . . .5", "x", "5"),
        (". . . . . .x", "x", "x"),
    ];

    #[test]
    fn observed_spaced_ellipsis_five() {
        check_cases(SPACED_ELLIPSIS_CASES);
    }
}
