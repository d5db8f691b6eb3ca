//! HTML entities.
//!
//! `&amp;` `&lt;` `&gt;` `&nbsp;` are decoded in any case, `&quot;` and `&apos;` only in lower
//! case; `&#NN;` stays; accented-vowel entities (`&eacute;`) are letters inside words; `&apos;`
//! acts as an apostrophe before clitics and inside words, and stays written as `&apos;`.

use super::classes::{
    is_digit, is_space, is_trail_space, java_lower, letter_entity_len, lower_eq_at,
};
use super::lexer::Lexer;
use super::words::{Flow, WordScan};

/// Does a clitic (`s m d ll re ve`, any case) start at `p`?
pub(super) fn entity_clitic_at(b: &[char], p: usize, end: usize) -> bool {
    let l = |k: usize| (k < end).then(|| b[k].to_ascii_lowercase());
    match l(p) {
        Some('s' | 'm' | 'd') => true,
        Some('l') => l(p + 1) == Some('l'),
        Some('r' | 'v') => l(p + 1) == Some('e'),
        _ => false,
    }
}

impl Lexer<'_> {
    pub(super) fn amp(&mut self, i: usize) -> usize {
        if letter_entity_len(self.buf, i, self.end) > 0 {
            return self.word(i);
        }
        if let Some(n) = self.apos_entity_word(i) {
            return n;
        }
        // Observed: `&lt;` opens an e-mail address like `<` does (`&lt;S@e` → `&lt;s@e`), and
        // the address keeps its soft hyphens (`&lt;a@\u{AD}` → `&lt;a@\u{AD}`).
        if lower_eq_at(self.buf, i, self.end, "&lt;") && i + 4 < self.end && self.buf[i + 4] != '<'
        {
            if let Some(n) = self.email(i + 4) {
                let t = self.buf[i..i + 4 + n].to_vec();
                self.emit_lower_kept(&t);
                return i + 4 + n;
            }
        }
        // Observed: amp, lt, gt, nbsp in any case are decoded; quot, apos only in lower case
        // (any other case stays an entity token).
        let ents: [(&str, &str, bool); 6] = [
            ("&amp;", "&", true),
            ("&lt;", "<", true),
            ("&gt;", ">", true),
            ("&quot;", "''", false),
            ("&apos;", "'", false),
            ("&nbsp;", "", true),
        ];
        for (e, r, any_case) in ents {
            let n = e.chars().count();
            if i + n <= self.end {
                let w = &self.buf[i..i + n];
                if w.iter().copied().eq(e.chars()) {
                    if e == "&quot;"
                        && self
                            .at(i + n)
                            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '$')
                    {
                        self.emit("``");
                    } else {
                        self.emit(r);
                    }
                    return i + n;
                }
                if w.iter().map(|c| c.to_ascii_lowercase()).eq(e.chars()) {
                    self.emit(if any_case { r } else { e });
                    return i + n;
                }
            }
        }
        // &#NN;
        let mut j = i + 1;
        if self.at(j) == Some('#') {
            j += 1;
            let s = j;
            while self.at(j).is_some_and(|c| c.is_ascii_digit()) {
                j += 1;
            }
            if j > s && self.at(j) == Some(';') {
                let t: String = self.buf[i..=j].iter().collect();
                self.emit(&t);
                return j + 1;
            }
        }
        self.one(i, "&")
    }

    /// The word `b[i..j]` followed by `&apos;` at `j`: lex the same text with `'` in place of
    /// the entity; when that gives tokens of which one takes the apostrophe, emit them with the
    /// entity written back and return the end of that token in the real text (observed:
    /// `don&apos;t` → `do n't`, `isn&apos;tx` → `is n&apos;tx`).
    pub(super) fn apos_entity_join(&mut self, i: usize, j: usize) -> Option<usize> {
        let (pre, toks, at, end) = self.apos_entity_relex(i, j)?;
        let b = self.buf;
        self.emit(&pre);
        // (the clitic is written `n't` after the lower-case entity: `n&apos;t` → `n't`, but
        // `n&APOS;t` → `n&apos;t`, observed)
        let lower = b[j..j + 6].iter().copied().eq("&apos;".chars());
        let mut at = at;
        for t in toks {
            let len = t.chars().count();
            if at < len && !(t == "n't" && lower) {
                let k = t.char_indices().nth(at).map_or(t.len(), |x| x.0);
                self.emit(&format!("{}&apos;{}", &t[..k], &t[k + 1..]));
            } else {
                self.emit(&t);
            }
            at = at.checked_sub(len).unwrap_or(usize::MAX);
        }
        Some(end)
    }

    /// The relexing of [`Lexer::apos_entity_join`]: the output of the tokens before the one
    /// that takes the apostrophe, the tokens of the step that takes it, the apostrophe's
    /// position in their text, and the end of that step in the real text.
    pub(super) fn apos_entity_relex(
        &self,
        i: usize,
        j: usize,
    ) -> Option<(String, Vec<String>, usize, usize)> {
        let b = self.buf;
        let mut stop = j + 6;
        while stop < self.end && stop < j + 70 && !is_space(b[stop]) {
            stop += 1;
        }
        let mut tmp: Vec<char> = b[i..j].to_vec();
        tmp.push('\'');
        tmp.extend_from_slice(&b[j + 6..stop]);
        let n = tmp.len();
        tmp.extend([' ', 'x']);
        let mut lx = Lexer::new(&tmp, tmp.len(), String::new(), true);
        let core = j - i;
        // Tokens that end before the apostrophe are emitted as lexed (`do` of `don't`).
        let (mut s, mut e) = (0, lx.step(0));
        let mut pre = String::new();
        while e <= core && e > s {
            pre = lx.out.clone();
            s = e;
            e = lx.step(s);
        }
        // (the token taking the apostrophe starts before it: `e&apos;s` is `e` `'s`)
        if e <= core || e > n || s >= core {
            return None;
        }
        let plain =
            |s: &[char]| java_lower(&s.iter().filter(|&&c| c != '\u{AD}').collect::<String>());
        // The tokens of this step spell the text (the word rule may split it: `don't` →
        // `do` `n't`); the one holding the apostrophe gets the entity written back.
        let toks: Vec<String> = lx.out[pre.len()..]
            .split_whitespace()
            .map(str::to_string)
            .collect();
        if toks.concat() != plain(&tmp[s..e]) {
            return None;
        }
        let at = plain(&tmp[s..core]).chars().count();
        Some((pre, toks, at, j + 6 + (e - core - 1)))
    }

    /// Is there a reading of the word `b[i..j]` and the `&apos;` at `j` longer than an AT&T
    /// join of the entity's letters (`RE&APOS;F` → `re&apos;f`, `L&APOS;` → `l&apos;`,
    /// `E&APOS;S` → `e` `&apos;s`; but `M&APOS;` → `m&apos` `;`, observed)?
    pub(super) fn apos_entity_longer(&self, i: usize, j: usize) -> bool {
        let b = self.buf;
        let clitic = entity_clitic_at(b, j + 6, self.end);
        let lw: String = b[i..j].iter().map(|c| c.to_ascii_lowercase()).collect();
        clitic
            || matches!(lw.as_str(), "d" | "l" | "j" | "ol")
            || self.apos_entity_relex(i, j).is_some()
    }

    /// `&apos;` in any case at `p`.
    pub(super) fn entity_apos_at(&self, p: usize) -> bool {
        lower_eq_at(self.buf, p, self.end, "&apos;")
    }

    /// `&apos;` (lower case) acts as an apostrophe before a clitic, any case, whatever follows
    /// (`&apos;Mx` → `'m x`), and stays an entity glued to `cause`, `em`, `n`, `n&apos;`,
    /// `til` and `DDs` (`&apos;Em` → `&apos;em`, `&apos;90s`); observed.
    pub(super) fn apos_entity_word(&mut self, i: usize) -> Option<usize> {
        const E: &str = "&apos;";
        let b = self.buf;
        if !lower_eq_at(b, i, self.end, E) {
            return None;
        }
        // Observed: in another case the entity stays glued to the clitic too (`&APOS;s`).
        let lower = b[i..i + 6].iter().copied().eq(E.chars());
        let k = i + 6;
        let has = |w: &str| lower_eq_at(b, k, self.end, w);
        for cl in ["ll", "re", "ve", "s", "m", "d"] {
            if has(cl) {
                if lower {
                    self.emit(&format!("'{cl}"));
                } else {
                    self.emit(&format!("{E}{cl}"));
                }
                return Some(k + cl.len());
            }
        }
        let n = if has("n&apos;") {
            7
        } else if has("n") && k + 1 < self.end && matches!(b[k + 1], '\'' | '\u{2019}' | '\u{92}') {
            // Observed: `&apos;n'` is one token.
            2
        } else if let Some(w) = ["cause", "em", "till", "til", "n"].iter().find(|w| has(w)) {
            w.len()
        } else if k + 3 <= self.end
            && ('2'..='9').contains(&b[k])
            && b[k + 1] == '0'
            && matches!(b[k + 2], 's' | 'S')
        {
            // `&apos;90s` whatever follows
            3
        } else if k + 2 <= self.end
            && b[k].is_ascii_digit()
            && b[k + 1].is_ascii_digit()
            && (k + 2 >= self.end || is_trail_space(b[k + 2]))
        {
            // `&apos;10` before a space or the end only, as with `'` (`&apos;12s` → `' 12s`)
            2
        } else {
            return None;
        };
        let t: String = b[i..k + n].iter().collect();
        self.emit(&java_lower(&t));
        Some(k + n)
    }
}

impl Lexer<'_> {
    /// `&apos;` (any case) after a word joins it wherever `'` would, and stays written as
    /// `&apos;` (`o&apos;clock`, `he&apos;H`, `L&apos;Co`, `y&apos;本` → `y&apos;` `本`),
    /// observed; see [`Lexer::apos_entity_join`].
    pub(super) fn apos_entity_after_word(&mut self, i: usize, j: usize) -> Option<usize> {
        if j > i && !self.measuring && self.entity_apos_at(j) {
            return self.apos_entity_join(i, j);
        }
        None
    }

    /// `d`, `l`, `j`, `ol`, `dunkin`, `somethin` take a following `&apos;` (any case) unless a
    /// clitic follows (`L&apos;x` → `l&apos; x`; `L&apos;Ve` → `l` `'ve`), observed.
    pub(super) fn elision_entity(&mut self, i: usize, j: usize) -> Option<usize> {
        let (b, end) = (self.buf, self.end);
        let core = &b[i..j];
        if lower_eq_at(b, j, end, "&apos;") {
            let lw: String = core.iter().map(|c| c.to_ascii_lowercase()).collect();
            // (not before a clitic: `L&apos;Ve` → `l` `'ve`, observed)
            if matches!(lw.as_str(), "d" | "l" | "j" | "ol" | "dunkin" | "somethin")
                && !entity_clitic_at(b, j + 6, end)
            {
                self.emit(&format!("{lw}&apos;"));
                return Some(j + 6);
            }
        }
        None
    }
}

impl Lexer<'_> {
    /// Entities inside a word: `&amp;` goes on joining capitals after an `&` join
    /// (`T&T&AMP;O` → `t&t&o`); a letter entity (`&eacute;`) is a letter, except in a word
    /// that starts with a digit (`4a&eacute;` → `4a &eacute;`, but `a4&eacute;`), after an
    /// `[oOdDlL]'` segment (`o'il&eacute;` → `o'il` `&eacute;`) or a `-` / `_` join
    /// (`M-4&eacute;` → `m-4 &eacute;`); `AT&amp;T`: the entity joins capitals like `&`,
    /// observed.
    pub(super) fn entity_join(&self, s: &mut WordScan) -> Flow {
        let (b, end, i, j) = (self.buf, self.end, s.i, s.j);
        if s.amp_mode
            && lower_eq_at(b, j, end, "&amp;")
            && j + 5 < end
            && b[j + 5].is_ascii_uppercase()
        {
            s.j += 5;
            return Flow::Next;
        }
        if !s.numeric_sep
            && !s.amp_mode
            && !s.slash_used
            && !s.seg_apos
            && !is_digit(b[i])
            && !s.joined_seg
        {
            let n = letter_entity_len(b, j, end);
            if n > 0 {
                s.has_entity = true;
                s.has_letter = true;
                s.all_upper = false;
                s.slash_ok = false;
                s.j += n;
                return Flow::Next;
            }
            if s.all_upper
                && j > i
                && lower_eq_at(b, j, end, "&amp;")
                && j + 5 < end
                && b[j + 5].is_ascii_uppercase()
            {
                s.amp_mode = true;
                s.j += 5;
                return Flow::Next;
            }
        }
        Flow::Pass
    }
}

#[cfg(test)]
mod tests {
    use crate::text::ptb::tests::{check_cases, check_lines};

    /// Observed lines: input, the reference's raw output line (next line lower case;
    /// `tests/fixtures/tokenizer/samples.json`).
    const LINES: &[(&str, &str)] = &[
        ("R&D", "r&d"),
        ("a&b", "a & b"),
        ("&gt;", ">"),
        ("&lt;", "<"),
        ("AT&T", "at&t"),
        ("&#39;", "&#39;"),
        ("&amp;", "&"),
        ("a & b", "a & b"),
        ("&apos;", "'"),
        ("&nbsp;", ""),
        ("&quot;", "''"),
        ("&amp;amp;", "& amp ;"),
        ("http://a.b/c?d=e&f=g", "http://a.b/c?d=e&f=g"),
    ];

    /// Observed cases: caption, next line, tokenized caption after the punctuation filter
    /// (`tests/fixtures/tokenizer/fuzz_regressions*.jsonl.gz`).
    const CASES: &[(&str, &str, &str)] = &[
        (
            "\u{9}R&D US$5 weIt'll  lbs.",
            "t'lL2x",
            "r&d us$ 5 weit 'll lbs",
        ),
        (" 山IWaSN't.R&", "‒", "山iwasn t.r &"),
        ("#s&EACUTE;", ".", "#s&eacute;"),
        ("&a.com5.org", "x", "&a.com 5 org"),
        ("&apos;90s'", "x", "&apos;90s"),
        ("&eacute;.;", "d", "&eacute;."),
        ("&eacute;a-a", "h", "&eacute;a a"),
        ("&nbsP;", "n", ""),
        ("B&apos;NO", ".", "b&apos;no"),
        ("L&APOS;x", "x", "l&apos; x"),
        ("L&APOSx", "x", "l&apos x"),
        ("O.A&B", "h", "o.a & b"),
        ("R&Dorg", "e'sª", "r&d org"),
        ("T&APOS;", ";", "t&apos"),
        ("T&T&APOS;D", "!", "t&t&apos ;d"),
        ("a DOG's&eacute; wo", "12:30", "a dog 's &eacute; wo"),
        ("don&APOS;t", "x", "do n&apos;t"),
        ("e&Ω'h/loca", "\u{2060}»", "e & ω h/loca"),
        ("gon&apos;t", "x", "go n't"),
        ("he&apos;H", ".", "he&apos;h"),
        ("u'd&EacuTE;", "¾=----", "u 'd &eacute;"),
        ("www.&.co", "\u{200C}", "www.&.co"),
        ("―AT&T", "n't3M", "at&t"),
        ("ひらがな ax &quot;", "ON'T", "ひらがな ax"),
    ];

    #[test]
    fn observed_lines() {
        check_lines(LINES);
    }

    #[test]
    fn observed_cases() {
        check_cases(CASES);
    }

    /// Observed (issue 26, fuzz round 9): an e-mail address that `&lt;` opens keeps its soft
    /// hyphens, as one that `<` opens does. Caption, next line, tokenized caption.
    const LT_EMAIL_CASES: &[(&str, &str, &str)] = &[
        ("&LT;a@\u{AD}", "x", "&lt;a@\u{AD}"),
        ("&lt;a@\u{AD}b", "x", "&lt;a@\u{AD}b"),
        ("&lt;a\u{AD}b@c", "x", "&lt;a\u{AD}b@c"),
        ("&lt;p\u{AD}@−", "x", "&lt;p\u{AD}@−"),
    ];

    #[test]
    fn observed_lt_email_soft_hyphens() {
        check_cases(LT_EMAIL_CASES);
    }
}
