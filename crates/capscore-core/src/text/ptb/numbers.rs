//! Numbers, fractions, phone numbers and currency.
//!
//! Signed and decimal numbers (`-5`, `.5`, `1,000`, `12:30`), fractions (`1 1/2` → one token
//! with an internal U+00A0), dates (`10/20/2020`), phone numbers (`(555) 123-4567`), vulgar
//! fractions (`½` → `1/2`), super- and subscripts, currency signs (`€` → `$`, `¢` → `cents`)
//! and currency codes (`US$`).

use super::classes::{is_alnum, is_digit};
use super::lexer::Lexer;
use super::words::WordScan;

impl Lexer<'_> {
    /// Phone numbers starting at `i` (observed; the longest match of these shapes, where `D`
    /// is an ASCII digit and `S` one of `-`, space, no-break space):
    /// `(DD[D])` and an optional space, or `[+[+]][DD[DD]S]DD[DD]S`, then `DDD[D][S]DDD[DD]`
    /// (`12 123456`, `+55-123567`, `23-567 150`, `12 123 4567 890`, `(12)123456`,
    /// `555 123 4567`), and `DDD.DDD.DDDD`. Spaces become no-break spaces, the parentheses
    /// `-lrb-` / `-rrb-`. A phone number without spaces that the word or number rule would
    /// continue is left to that rule, the longer match (`555-123-4567-X`, `555.123.4567,0`).
    pub(super) fn phone(&mut self, i: usize) -> Option<usize> {
        let b = self.buf;
        let end = self.end;
        let digits = |p: usize| {
            let mut k = p;
            while k < end && b[k].is_ascii_digit() {
                k += 1;
            }
            k - p
        };
        let sep = |p: usize| p < end && matches!(b[p], ' ' | '-' | '\u{A0}');
        // Ends of `DDD[D][S]DDD[DD]` starting at `p`.
        let body = |p: usize| -> Option<usize> {
            let n = digits(p);
            let mut best = None;
            for x in 3..=4.min(n) {
                let q = p + x;
                let run = |r: usize| {
                    let m = digits(r);
                    (m >= 3).then(|| r + m.min(5))
                };
                if x < n {
                    best = best.max(run(q));
                } else if sep(q) {
                    best = best.max(run(q + 1));
                }
            }
            best
        };
        // Ends of `DD[DD]S` starting at `p` (the positions after the separator).
        let group = |p: usize| -> Vec<usize> {
            let n = digits(p);
            if (2..=4).contains(&n) && sep(p + n) {
                vec![p + n + 1]
            } else {
                vec![]
            }
        };
        let mut e = None;
        if b[i] == '(' {
            let n = digits(i + 1);
            if (2..=3).contains(&n) && i + 1 + n < end && b[i + 1 + n] == ')' {
                let mut p = i + 2 + n;
                if p < end && matches!(b[p], ' ' | '\u{A0}') {
                    p += 1;
                }
                e = body(p);
            }
        } else {
            // (one or two plus signs: `++51-800234` is one token, `+++51-800234` → `+`
            // `++51-800234`, observed)
            let k = match (b[i], self.at(i + 1)) {
                ('+', Some('+')) => i + 2,
                ('+', _) => i + 1,
                _ => i,
            };
            for g in group(k) {
                e = e.max(body(g));
                for h in group(g) {
                    e = e.max(body(h));
                }
            }
            if b[i] != '+'
                && digits(i) == 3
                && i + 12 <= end
                && b[i + 3] == '.'
                && digits(i + 4) == 3
                && b[i + 7] == '.'
                && digits(i + 8) >= 4
                && e.is_none_or(|x| x < i + 12)
            {
                e = Some(i + 12);
            }
        }
        let e = e?;
        if b[i].is_ascii_digit()
            && !b[i..e].iter().any(|&c| matches!(c, ' ' | '\u{A0}'))
            && self.longer_than_word(i, e - i).is_none()
        {
            return None;
        }
        let mut out = String::new();
        for (k, &c) in b[i..e].iter().enumerate() {
            match c {
                '(' if k == 0 => out.push_str("-lrb-"),
                ')' => out.push_str("-rrb-"),
                ' ' => out.push('\u{A0}'),
                _ => out.push(c),
            }
        }
        self.emit(&out);
        Some(e)
    }

    pub(super) fn fraction(&self, i: usize) -> Option<(usize, bool)> {
        let b = self.buf;
        let digits = |p: usize| {
            let mut q = p;
            while q < self.end && is_digit(b[q]) {
                q += 1;
            }
            q - p
        };
        let n1 = digits(i);
        if n1 == 0 || n1 > 4 {
            return None;
        }
        let mut p = i + n1;
        // optional whole part
        let try_simple = |p: usize| -> Option<usize> {
            let a = digits(p);
            if a == 0 || a > 4 {
                return None;
            }
            let q = p + a;
            // (an escaped slash `\/` is a slash: `1 1\/2`, observed)
            let s = if q + 1 < self.end && b[q] == '\\' && b[q + 1] == '/' {
                q + 1
            } else {
                q
            };
            if s < self.end && b[s] == '/' {
                let c = digits(s + 1);
                if c >= 1 {
                    // a longer run of digits is cut after four (observed: `1/456۱۲`)
                    return Some(s + 1 + c.min(4));
                }
            }
            None
        };
        if p < self.end && matches!(b[p], ' ' | '-' | '\u{A0}') {
            // Observed: with a whole part, anything may follow (`1 1/2c` → `1 1/2` `c`), a
            // longer denominator is cut after four digits (`5 1/23456` → `5 1/2345` `6`).
            if let Some(e) = try_simple(p + 1) {
                return Some((e - i, true));
            }
        }
        p = i;
        let mut e = try_simple(p)?;
        // Observed: a second slash and two or more digits make a date (digits of any script,
        // cut after four; `9/1/１２a` → `9/1/１２` `a`, `1/2/3٠`, `12/1/١٢٣٤٥` → `12/1/١٢٣٤` `٥`;
        // but `1/0/٣` → `1/0` `/` `٣`).
        // (and at most two digits in each of the first two parts: `２10/0/20` is no date)
        // (not after an escaped slash: `1\/2/１２` → `1\/2` `/` `１２`, observed)
        if e < self.end && b[e] == '/' && b[i + n1] == '/' && n1 <= 2 && e - i - n1 - 1 <= 2 {
            let c = digits(e + 1);
            if c >= 2 {
                e = e + 1 + c.min(4);
            }
        }
        // (an escaped slash after it goes on like `/`: `1/2\/h`, `1/1\/2` are words, observed)
        let esc_slash = e + 1 < self.end && b[e] == '\\' && b[e + 1] == '/';
        Some((
            e - i,
            !(e < self.end && (is_alnum(b[e]) || b[e] == '/' || b[e] == '-' || esc_slash)),
        ))
    }
}

impl Lexer<'_> {
    /// A fraction at `i` (see [`Lexer::fraction`]): emitted when sure (`Ok`), else its
    /// length as a candidate that competes with the word scanner (`Err`; the longer match
    /// wins, observed: `6/8h`, `2/5-56` but `٠/6 h`).
    pub(super) fn fraction_start(&mut self, i: usize) -> Result<usize, Option<usize>> {
        match self.fraction(i) {
            Some((n, true)) => {
                let t = self.buf[i..i + n].to_vec();
                self.emit_lower(&t);
                Ok(i + n)
            }
            Some((n, false)) => Err(Some(n)),
            None => Err(None),
        }
    }

    /// A candidate fraction that the word scanner did not outrun is one token; `D/D-DD` with
    /// digits of any script goes on as in the word rule (`۲/1-80`; four digits at most after
    /// the hyphen), observed.
    pub(super) fn fraction_candidate(
        &mut self,
        i: usize,
        j: usize,
        frac: Option<usize>,
    ) -> Option<usize> {
        let (b, end) = (self.buf, self.end);
        let mut f = frac.filter(|&f| i + f >= j)?;
        let e = i + f;
        let parts: Vec<&[char]> = b[i..e].split(|&x| x == '/').collect();
        // (not with an escaped slash: `1\/2-24` → `1\/2` `-24`, observed)
        if parts.len() == 2
            && parts.iter().all(|d| d.len() <= 2 && !d.contains(&'\\'))
            && e + 2 < end
            && b[e] == '-'
            && is_digit(b[e + 1])
            && is_digit(b[e + 2])
        {
            f += 1;
            while i + f < end && is_digit(b[i + f]) && i + f < e + 5 {
                f += 1;
            }
        }
        let t = b[i..i + f].to_vec();
        self.emit_lower(&t);
        Some(i + f)
    }

    /// A phone number starting with a digit or `+` (after file names: `555.123.4567.c` is
    /// one), see [`Lexer::phone`].
    pub(super) fn phone_word(&mut self, i: usize) -> Option<usize> {
        if (self.buf[i].is_ascii_digit() || self.buf[i] == '+') && !self.measuring {
            return self.phone(i);
        }
        None
    }

    /// `US$`, `HK$`, ...: capitals and a dollar sign are one token, observed.
    pub(super) fn currency_code(&mut self, i: usize, j: usize) -> Option<usize> {
        let b = self.buf;
        if j < self.end && b[j] == '$' && b[i..j].iter().all(|c| c.is_ascii_uppercase()) {
            let mut t = b[i..j].to_vec();
            t.push('$');
            self.emit_lower(&t);
            return Some(j + 1);
        }
        None
    }
}

impl Lexer<'_> {
    /// A number starts at a sign or separator before a digit: `-5`, `+5`, `.5`, `,5`, `:30`,
    /// `-.5`, `+:5`, and a sign, one soft hyphen and a digit (deleted: `+\u{AD}2` → `+2`; but
    /// `+\u{AD}\u{AD}2` → `+` `2`), observed.
    pub(super) fn number_starts(&self, i: usize) -> bool {
        let next = self.at(i + 1);
        let digit_at = |k: usize| self.at(k).is_some_and(is_digit);
        match self.buf[i] {
            '-' | '+' => {
                next.is_some_and(is_digit)
                    || (next == Some('\u{AD}') && digit_at(i + 2))
                    || (matches!(next, Some('.' | ':' | ',')) && digit_at(i + 2))
            }
            '.' | ',' | ':' => next.is_some_and(is_digit),
            _ => false,
        }
    }

    /// Currency signs: U+0080 (Windows-1252 euro), `¤`, `₠`, `€` → `$`; `¢` → `cents`;
    /// `£` → `#` (spec COCO §3.2).
    pub(super) fn currency(&mut self, i: usize) -> usize {
        let tok = match self.buf[i] {
            '\u{A2}' => "cents",
            '\u{A3}' => "#",
            _ => "$",
        };
        self.one(i, tok)
    }

    /// Vulgar fractions: `¼ ½ ¾ ⅓ ⅔` → `1/4 1/2 3/4 1/3 2/3` (spec COCO §3.2).
    pub(super) fn vulgar_fraction(&mut self, i: usize) -> usize {
        let tok = match self.buf[i] {
            '\u{BC}' => "1/4",
            '\u{BD}' => "1/2",
            '\u{BE}' => "3/4",
            '\u{2153}' => "1/3",
            _ => "2/3",
        };
        self.one(i, tok)
    }

    /// A run of superscript digits (`²`, `³`, `¹`, `⁰`, `⁴`–`⁹`, mixed) is one token, observed.
    pub(super) fn superscripts(&mut self, i: usize) -> usize {
        let mut j = i;
        while j < self.end
            && matches!(
                self.buf[j],
                '\u{B2}' | '\u{B3}' | '\u{B9}' | '\u{2070}' | '\u{2074}'..='\u{2079}'
            )
        {
            j += 1;
        }
        let t: String = self.buf[i..j].iter().collect();
        self.emit(&t);
        j
    }

    /// A run of the same subscript digit (`₂₂`) is one token, observed.
    pub(super) fn subscripts(&mut self, i: usize) -> usize {
        let n = self.run_len(i, self.buf[i]);
        let t: String = self.buf[i..i + n].iter().collect();
        self.emit(&t);
        i + n
    }
}

impl Lexer<'_> {
    /// A decimal point between digits (`3.14`, `1.000,5`), not in a word with letters unless
    /// it is already a number, nor after a `-`, `_` or U+2010-like join (`2‑3.1` → `2‑3`
    /// `.1`, `5_8.6` → `5_8` `.6`), observed.
    pub(super) fn decimal_point(&self, s: &mut WordScan, prev: char, nx: char) -> bool {
        let ok = is_digit(prev)
            && is_digit(nx)
            && (!s.has_letter || s.numeric_sep)
            && !s.prefix(self.buf, s.j).joined_after_first;
        s.numeric_sep |= ok;
        ok
    }

    /// `,` or `:` between digits of a letterless number (`1,000`, `12:30`), not after a `-`
    /// or `_` join (`3-7,4` → `3-7 ,4`, `12-34:56`), observed.
    pub(super) fn number_separator_join(&self, s: &mut WordScan, prev: char, nx: char) -> bool {
        let ok = is_digit(prev)
            && is_digit(nx)
            && !s.has_letter
            && !s.prefix(self.buf, s.j).joined_after_first;
        s.numeric_sep |= ok;
        ok
    }
}

#[cfg(test)]
mod tests {
    use crate::text::ptb::tests::{check_cases, check_lines};

    /// Observed lines: input, the reference's raw output line (next line lower case;
    /// `tests/fixtures/tokenizer/samples.json`).
    const LINES: &[(&str, &str)] = &[
        ("²", "²"),
        ("½", "1/2"),
        ("#1", "# 1"),
        ("-5", "-5"),
        ("5$", "5 $"),
        ("9\"", "9 ''"),
        ("1/2", "1/2"),
        ("3/4", "3/4"),
        ("5x6", "5x6"),
        ("US$5", "us$ 5"),
        ("12:30", "12:30"),
        ("5 x 6", "5 x 6"),
        ("5 a.m.", "5 a.m."),
        ("1.000,5", "1.000,5"),
        ("$1,000.00", "$ 1,000.00"),
        ("a 12\" pizza", "a 12 '' pizza"),
    ];

    /// Observed cases: caption, next line, tokenized caption after the punctuation filter
    /// (`tests/fixtures/tokenizer/fuzz_regressions*.jsonl.gz`).
    const CASES: &[(&str, &str, &str)] = &[
        ("+0p", "\u{93}", "+0 p"),
        ("+:1", "ς", "+:1"),
        ("+\u{AD}\u{AD}2", "x", "+ 2"),
        (". . .2", ".", "2"),
        ("0.0-a", ".", "0.0-a"),
        ("0/203-67", "\"", "0/203 -67"),
        ("1/0-t0", "!", "1/0-t 0"),
        ("12345/2-1", "‚", "12345/2 -1"),
        ("2 3/4R", ".", "2\u{A0}3/4 r"),
        ("2-1/b", "x", "2-1 / b"),
        ("3 0/0/", "\"", "3\u{A0}0/0 /"),
        ("3 1/2x", "2", "3\u{A0}1/2 x"),
        ("5m\u{64B}", "s", "5m \u{64B}"),
        ("8\u{301}", "“", "8 \u{301}"),
        (":0.5", ".", ":0.5"),
        ("FIG.5", "⸺", "fig. 5"),
        ("S-3/4", "\u{94}", "s-3 / 4"),
        ("Tex.5-6", "-", "tex.5-6"),
        ("a.3-4", "’", "a.3-4"),
        ("s.-1", "e", "s.-1"),
        ("s.1-4", "z", "s.1-4"),
        ("¢ 1/2.N.Y.", "A.oRG/IK", "cents 1/2 n.y."),
        ("٣/2", "“", "٣/2"),
        ("２/1", "3", "２/1"),
    ];

    #[test]
    fn observed_lines() {
        check_lines(LINES);
    }

    #[test]
    fn observed_cases() {
        check_cases(CASES);
    }

    /// Observed (issue 26, fuzz round 8): a fraction before an escaped slash goes on as a word; a
    /// fraction with one takes no `-DD` date tail. Caption, next line, tokenized caption.
    const FRACTION_ESCAPED_SLASH_CASES: &[(&str, &str, &str)] = &[
        ("1/1\\/2", "x", "1/1\\/2"),
        ("1/2\\/h", "x", "1/2\\/h"),
        ("3/1\\/2", ".", "3/1\\/2"),
        ("1/0\\/n", ".", "1/0\\/n"),
        ("1/2\\/3\\/4", "x", "1/2\\/3 \\ / 4"),
        ("1/2\\/h/x", "x", "1/2\\/h / x"),
        ("1/2/3\\/4", "x", "1/2/3 \\ / 4"),
        ("1\\/2-24", "x", "1\\/2 -24"),
        ("1\\/1-80", ".", "1\\/1 -80"),
        ("1\\/22-24", "x", "1\\/22 -24"),
        ("1\\/2-x", "x", "1\\/2-x"),
        ("1\\/2-2", "x", "1\\/2 -2"),
    ];

    #[test]
    fn observed_fraction_escaped_slash() {
        check_cases(FRACTION_ESCAPED_SLASH_CASES);
    }

    /// Observed (issue 26, fuzz round 8): no date after an escaped slash; a phone number may start
    /// with two plus signs. Caption, next line, tokenized caption.
    const DATE_PHONE_ROUND8_CASES: &[(&str, &str, &str)] = &[
        ("1\\/2/\u{FF11}\u{FF12}", "5", "1\\/2 / \u{FF11}\u{FF12}"),
        ("12\\/1/١٢٣٤٥", "x", "12\\/1 / ١٢٣٤٥"),
        ("1\\/2/12", "x", "1\\/2/12"),
        ("1/2/\u{FF11}\u{FF12}", "x", "1/2/\u{FF11}\u{FF12}"),
        ("++51-800234", "/", "++51-800234"),
        ("+++51-800234", "x", "+ ++51-800234"),
        ("x++51-800234", "x", "x ++51-800234"),
        ("++51 800234", "x", "++51\u{A0}800234"),
        ("++512-800234", "x", "++512-800234"),
        ("++51-80023", "x", "+ +51 -80023"),
        ("++5", "x", "+ +5"),
    ];

    #[test]
    fn observed_escaped_date_double_plus() {
        check_cases(DATE_PHONE_ROUND8_CASES);
    }
}
