//! SGML tags and escaped characters.
//!
//! Tags (`<b>`, `</a>`, `<br/>`, `<!-- c -->`) are one token; `<` also opens e-mail addresses;
//! `\*` is a token (in threes); the escaped slash `\/` joins words like `/` does (see
//! `words.rs`).

use std::cell::Cell;

use super::classes::{java_lower, lower_eq_at};
use super::lexer::Lexer;

/// Length of an SGML tag starting at `buf[i] == '<'`, limited to `end`.
///
/// Observed shapes: `<!…>` and `<?…>` that start with an ASCII letter or `-` (anything but a
/// line break inside, `<` too: `<?b<>`, `<!-<>`; the first `>` ends it); a closing tag
/// `</NAME␣*>`; an opening tag `<NAME` then attributes (spaces, U+0020 only: `<o\t>` → `<`
/// `o` `>`; an ASCII-letter-led `NAME`, optionally `␣*=␣*` and a value in double or single
/// quotes, which may hold anything but its quote and a line break), then `␣*/?␣*>`. `NAME`
/// is an ASCII letter, then ASCII letters, digits, `_ - . :`. (`<a href="x">`, `<a b/>`,
/// `<a/ >` are tags; `<a b=c>`, `<T,>`, `<a/b>`, `</a b>`, `<a b="c"d>` are not.)
///
/// `gt` keeps the last scan for the `>` of `<!…>` / `<?…>`: `(from, to)`, where `to` is the
/// first `>` or line break at or after every place in `from..=to` (`buf.len()`: none). A
/// caption of `<?x` repeated asks at each `<`, and scanning to the end again each time took its
/// length squared (80,000 characters 0.8 s).
pub(super) fn sgml_len(
    buf: &[char],
    i: usize,
    end: usize,
    gt: &Cell<(usize, usize)>,
) -> Option<usize> {
    let mut j = i + 1;
    if j < end && matches!(buf[j], '!' | '?') {
        j += 1;
        // (`-` opens both: `<!->`, `<?->`, `<?-a>`, observed)
        if j >= end || !(buf[j].is_ascii_alphabetic() || buf[j] == '-') {
            return None;
        }
        let (from, to) = gt.get();
        let k = if from <= j && j <= to {
            to
        } else {
            let k = (j..buf.len())
                .find(|&k| matches!(buf[k], '>' | '\n'))
                .unwrap_or(buf.len());
            gt.set((j, k));
            k
        };
        return (k < end && buf[k] == '>').then(|| k + 1 - i);
    }
    let name = |mut j: usize| -> Option<usize> {
        if !(j < end && buf[j].is_ascii_alphabetic()) {
            return None;
        }
        while j < end && (buf[j].is_ascii_alphanumeric() || matches!(buf[j], '_' | '-' | '.' | ':'))
        {
            j += 1;
        }
        Some(j)
    };
    let spaces = |mut j: usize| {
        while j < end && buf[j] == ' ' {
            j += 1;
        }
        j
    };
    let close = j < end && buf[j] == '/';
    if close {
        j += 1;
    }
    j = name(j)?;
    if !close {
        loop {
            let s = spaces(j);
            if s == j {
                break;
            }
            let Some(n) = name(s) else {
                j = s;
                break;
            };
            j = n;
            let q = spaces(j);
            if q < end && buf[q] == '=' {
                let v = spaces(q + 1);
                if !(v < end && matches!(buf[v], '"' | '\'')) {
                    return None;
                }
                let mut k = v + 1;
                while k < end && buf[k] != buf[v] && buf[k] != '\n' {
                    k += 1;
                }
                if k >= end || buf[k] != buf[v] {
                    return None;
                }
                j = k + 1;
            }
        }
        j = spaces(j);
        if j < end && buf[j] == '/' {
            j = spaces(j + 1);
        }
    } else {
        j = spaces(j);
    }
    (j < end && buf[j] == '>').then_some(j + 1 - i)
}

/// The PTB's bracket escapes, which the reference keeps whole when they are written in the
/// input (lower case; matched in any case).
const BRACKET_ESCAPES: [&str; 6] = ["lrb", "rrb", "lcb", "rcb", "lsb", "rsb"];

impl Lexer<'_> {
    /// A bracket escape written literally at the start of a token, `-LRB-` `-RRB-` `-LCB-`
    /// `-RCB-` `-LSB-` `-RSB-` in any case (`-Lrb-`, `-lRb-`), is one token, lower-cased; it
    /// ends there whatever follows (`-LRB-x` → `-lrb-` `x`, `-LRB--5` → `-lrb-` `-5`,
    /// `-lrb-lrb-` → `-lrb-` `lrb` `-`). Not inside a word, where the hyphen joins
    /// (`x-LRB-y` → `x-lrb-y`, `x-LRB-` → `x-lrb` `-`), nor after another hyphen
    /// (`--LRB--` → `--` `lrb` `--`). Other `-XYZ-` shapes split (`-LAB-` → `-` `lab` `-`),
    /// observed.
    pub(super) fn bracket_escape(&mut self, i: usize) -> Option<usize> {
        let b = self.buf;
        if !(i + 5 <= self.end && b[i + 4] == '-') {
            return None;
        }
        let name = BRACKET_ESCAPES
            .iter()
            .find(|e| lower_eq_at(b, i + 1, self.end, e))?;
        self.emit(&format!("-{name}-"));
        Some(i + 5)
    }

    /// `<`: an e-mail address in angle brackets (`<a@b.c>`, soft hyphens stay: `<3@\u{AD}`),
    /// an SGML tag (kept whole with its soft hyphens, lower-cased: `<b>`, `</a>`, `<br/>`),
    /// else a run of `<` in pairs (`<<<` → `<<` `<`), observed.
    pub(super) fn angle_bracket(&mut self, i: usize) -> usize {
        if let Some(n) = self.email(i) {
            let t: String = self.buf[i..i + n].iter().collect();
            self.emit(&java_lower(&t));
            return i + n;
        }
        if let Some(n) = sgml_len(self.buf, i, self.end, &self.gt_scan) {
            // A tag keeps its soft hyphens (`<?x\u{AD}>`, `<a b="x\u{AD}y">`), observed.
            let t = self.buf[i..i + n].to_vec();
            self.emit_lower_kept(&t);
            return i + n;
        }
        let n = self.run_len(i, '<').min(2);
        self.emit(&"<".repeat(n));
        i + n
    }

    /// `\*` (an escaped asterisk) is a token; runs of them come in threes (`\*\*\*\*` →
    /// `\*\*\*` `\*`), observed.
    pub(super) fn escaped_asterisks(&mut self, i: usize) -> usize {
        let mut n = 0;
        while n < 3 && self.at(i + 2 * n) == Some('\\') && self.at(i + 2 * n + 1) == Some('*') {
            n += 1;
        }
        self.emit(&"\\*".repeat(n));
        i + 2 * n
    }
}

#[cfg(test)]
mod tests {
    use crate::text::ptb::tests::{check_cases, check_lines};

    /// Observed lines: input, the reference's raw output line (next line lower case;
    /// `tests/fixtures/tokenizer/samples.json`).
    const LINES: &[(&str, &str)] = &[
        ("<3", "< 3"),
        ("<a>", "<a>"),
        ("a<b", "a < b"),
        ("</a>", "</a>"),
        ("<br/>", "<br/>"),
        ("a << b", "a << b"),
        ("<!-- c -->", "<!--\u{A0}c\u{A0}-->"),
        ("<b>bold</b>", "<b> bold </b>"),
        ("<a href=\"x\">y</a>", "<a\u{A0}href=\"x\"> y </a>"),
    ];

    /// Observed cases: caption, next line, tokenized caption after the punctuation filter
    /// (`tests/fixtures/tokenizer/fuzz_regressions*.jsonl.gz`).
    const CASES: &[(&str, &str, &str)] = &[
        ("\u{9}\u{FE0F} <,@User_1 P.S.!", "ey'll山", "< @user_1 p.s."),
        (" < b >90'S K....", "g'SA.a&b", "< b > 90 's k."),
        ("'_<", "6", "'_<"),
        ("1\\/t", "!", "1\\/t"),
        ("<->", "'", "< >"),
        ("</b> I'll⅔#\u{FE0F}\u{20E3}", "M'mC", "</b> i 'll 2/3 #"),
        ("<3.", "t.n't.", "< 3"),
        ("<:(", "2", "<:-lrb-"),
        ("<<<", "\u{AD}", "<< <"),
        ("<G�>", "\u{20DD}", "< g >"),
        ("<N@\u{AD}", ".", "<n@\u{AD}"),
        ("<f ->", "‹", "< f >"),
        ("<o、>", "m", "< o 、 >"),
        (
            "<p> 、 ۱۲.\u{80} example.org. ",
            "k'n&a",
            "<p> 、 ۱۲ $ example.org",
        ),
        ("<p>.", "٢\u{301}", "<p>"),
        ("<p>\u{205F}", "O'O", "<p>"),
        ("<u\u{FE0F}>", "h", "< u >"),
        ("<w#>", "t", "< w # >"),
        (">_<5x6 العربية", "0's3/4", ">_< 5x6 العربية"),
        ("d<98.6°F", "t’GONNA ;", "d < 98.6 ° f"),
        ("n\\/s", "h", "n\\/s"),
        (
            "Москваnt a.b@c.co.uk<<",
            "！.com",
            "москваnt a.b@c.co.uk <<",
        ),
        (
            "\u{2009}－1\u{A0}1/2us=(555)'<< _",
            "he'll-Co",
            "－ 1\u{A0}1/2 us = -lrb- 555 -rrb- << _",
        ),
        (
            "⸺👋🏻 ֊ AT&TTIS ¥,{X} <p>",
            "0's-o",
            "at&ttis ¥ -lcb- x -rcb- <p>",
        ),
    ];

    #[test]
    fn observed_lines() {
        check_lines(LINES);
    }

    #[test]
    fn observed_cases() {
        check_cases(CASES);
    }

    /// Observed (issue 26 probes of the reference): caption, next line, tokenized caption.
    const ESCAPE_CASES: &[(&str, &str, &str)] = &[
        ("-LRB-", "x", "-lrb-"),
        ("-Lrb-", "x", "-lrb-"),
        ("-lRb-", "x", "-lrb-"),
        ("-rsb-", "x", "-rsb-"),
        ("-LCB-x", "x", "-lcb- x"),
        ("x-LRB-", "x", "x-lrb"),
        ("x-LRB-y", "x", "x-lrb-y"),
        ("-LRB-5", "x", "-lrb- 5"),
        ("(-LRB-)", "x", "-lrb- -lrb- -rrb-"),
        ("--LRB--", "x", "lrb"),
        ("-LRB--RRB-", "x", "-lrb- -rrb-"),
        ("-LRB--5", "x", "-lrb- -5"),
        ("-LRB-'s", "x", "-lrb- 's"),
        ("-lrb-lrb-", "x", "-lrb- lrb"),
        ("-LRBX-", "x", "lrbx"),
        ("-LAB-", "x", "lab"),
        ("-NONE-", "x", "none"),
        ("*NL*", "x", "* nl *"),
        ("\\/", "x", "\\ /"),
        ("a\\/b", "x", "a\\/b"),
        ("\\*", "x", "\\*"),
        ("a\\*b", "x", "a \\* b"),
        (":-LRB-", "x", "-lrb-"),
        ("=-LRB-", "x", "= -lrb-"),
        ("-LRB-1-RRB-", "x", "-lrb- 1-rrb"),
        ("-LRB-@x.com", "x", "-lrb- @x com"),
        ("-LRB-<b>", "x", "-lrb- <b>"),
        ("<b>-LRB-", "x", "<b> -lrb-"),
        ("\u{2010}LRB\u{2010}", "x", "lrb"),
        ("1/2-LRB-", "x", "1/2-lrb"),
    ];

    #[test]
    fn observed_escape_tokens() {
        check_cases(ESCAPE_CASES);
    }

    /// Observed (issue 26, fuzz round 8): a tab is no space inside a tag; `<!…>` and `<?…>` may
    /// hold `<`. Caption, next line, tokenized caption.
    const TAG_CASES: &[(&str, &str, &str)] = &[
        ("<o\u{9}>", ".", "< o >"),
        ("<V\u{9}>", "e", "< v >"),
        ("<o \u{9}>", "x", "< o >"),
        ("<o\u{9}a>", "x", "< o a >"),
        ("<o a\u{9}b=\"c\">", "x", "< o a b = c >"),
        ("</o\u{9}>", "x", "< / o >"),
        ("<o\u{9}/>", "x", "< o / >"),
        ("<a b=\"c\u{9}d\">", "x", "<a\u{A0}b=\"c\u{9}d\">"),
        ("<!x\u{9}y>", "x", "<!x\u{9}y>"),
        ("<?B<>", "D", "<?b<>"),
        ("<!-<>", ".", "<!-<>"),
        ("<!G<>", ";", "<!g<>"),
        ("<?b <x>", "x", "<?b\u{A0}<x>"),
        ("<!-- < -->", "x", "<!--\u{A0}<\u{A0}-->"),
        ("<?x<>>", "x", "<?x<> >"),
        ("<!-- <b> -->", "x", "<!--\u{A0}<b> >"),
        ("<!x<", "x", "< x <"),
    ];

    #[test]
    fn observed_tags_round_8() {
        check_cases(TAG_CASES);
    }

    /// Observed (issue 26, fuzz round 9): `<?` opens a tag before `-` as `<!` does; other
    /// non-letters do not. Caption, next line, tokenized caption.
    const TAG_HYPHEN_CASES: &[(&str, &str, &str)] = &[
        ("<?->", "x", "<?->"),
        ("<?a->", "x", "<?a->"),
        ("<?-", "x", "<"),
        ("<?->x", "x", "<?-> x"),
        ("<!->", "x", "<!->"),
        ("<?-a>", "x", "<?-a>"),
        ("<?-->", "x", "<?-->"),
        ("<?>", "x", "< >"),
        ("<?.>", "x", "< >"),
        ("<?1>", "x", "< 1 >"),
        ("<!_>", "x", "< _ >"),
    ];

    #[test]
    fn observed_tags_hyphen() {
        check_cases(TAG_HYPHEN_CASES);
    }
}
