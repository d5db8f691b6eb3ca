//! METEOR's `-norm` text normaliser (spec METEOR §3): the Moses-style English normaliser that
//! keeps punctuation, followed by Java's locale-independent lowercasing and the split on
//! `TOKEN_DELIMS`.
//!
//! Every `replace_all` below is one left-to-right pass of non-overlapping leftmost matches, which
//! is exactly what the `regex` crate does; characters consumed as context by one match are not
//! available to the next one in the same pass (`a,b,c` → `a , b,c`), as in the reference.

use std::collections::HashMap;

use regex::Regex;

/// The `ALPHA` class of spec §3.1, as the inside of a regex character class.
const ALPHA: &str = r"A-Za-z\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{17E}\x{178}\x{400}-\x{4FF}\x{500}-\x{527}\x{A640}-\x{A66E}\x{A67E}-\x{A697}\x{1D00}-\x{1D7F}";

/// How a non-breaking prefix may be followed (spec §3.2 rule 9).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrefixKind {
    /// Non-breaking before anything.
    Any,
    /// Non-breaking only before a token starting with an ASCII digit (`No`, `Art`, `pp`).
    NumericOnly,
}

/// The compiled normaliser: the non-breaking prefixes plus the rule patterns.
#[derive(Debug)]
pub struct Normalizer {
    prefixes: HashMap<String, PrefixKind>,
    r2: Regex,
    r3a: Regex,
    r3b: Regex,
    r4a: Regex,
    r4b: Regex,
    r4c: Regex,
    r5a: Regex,
    r5b: Regex,
    r7: Regex,
    r8a: Regex,
    r8b: Regex,
    r8c: Regex,
    r8d: Regex,
    r8e: Regex,
    r12: Regex,
}

/// One `replace_all` pass, reusing `w` when nothing matched.
fn rep(re: &Regex, w: String, template: &str) -> String {
    let out = match re.replace_all(&w, template) {
        std::borrow::Cow::Owned(o) => Some(o),
        std::borrow::Cow::Borrowed(_) => None,
    };
    out.unwrap_or(w)
}

fn re(pattern: &str) -> Regex {
    // The patterns are constants of this module; a failure is a programming error caught by the
    // unit tests, never something input can reach.
    Regex::new(pattern).expect("constant METEOR normaliser pattern")
}

/// `TOKEN_DELIMS` of spec §3.1: U+0020, U+0009, U+000A, U+000D, U+000C (not U+000B).
#[inline]
pub fn is_token_delim(c: char) -> bool {
    c.is_ascii_whitespace()
}

/// Java `String.trim()`: drops leading and trailing chars whose code is ≤ U+0020.
#[inline]
pub fn java_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c <= '\u{20}')
}

/// Splits on `TOKEN_DELIMS`, dropping empty pieces (spec §3.4).
pub fn tokens(s: &str) -> impl Iterator<Item = &str> {
    s.split(is_token_delim).filter(|t| !t.is_empty())
}

/// Characters rule 2 leaves alone: ALNUM, JSPACE, `.`, `'`, `` ` ``, `,`, `-`, U+2018, U+2019.
fn rule2_kept(c: char) -> bool {
    c.is_ascii_digit()
        || is_alpha(c)
        || matches!(
            c,
            ' ' | '\t'
                | '\n'
                | '\u{0B}'
                | '\u{0C}'
                | '\r'
                | '.'
                | '\''
                | '`'
                | ','
                | '-'
                | '\u{2018}'
                | '\u{2019}'
        )
}

/// The `WS_RUN` characters of rule 12 other than U+0020.
fn is_ws_run_not_space(c: char) -> bool {
    matches!(
        c,
        '\u{A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}'
    )
}

/// Exact shortcut: on ASCII letters, digits and TOKEN_DELIMS only (and no `DOTMULTI`
/// placeholder), no rule but the whitespace handling of rules 9 and 12 can change anything, so
/// the result is the tokens joined by single spaces.
fn fast_path(text: &str) -> Option<String> {
    if text.contains("DOTMULTI")
        || !text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b.is_ascii_whitespace())
    {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    for t in tokens(text) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(t);
    }
    Some(out)
}

fn is_alpha(c: char) -> bool {
    matches!(c,
        'A'..='Z' | 'a'..='z' | '\u{C0}'..='\u{D6}' | '\u{D8}'..='\u{F6}' | '\u{F8}'..='\u{17E}'
        | '\u{400}'..='\u{4FF}' | '\u{500}'..='\u{527}' | '\u{A640}'..='\u{A66E}'
        | '\u{A67E}'..='\u{A697}' | '\u{1D00}'..='\u{1D7F}')
}

impl Normalizer {
    /// Builds the normaliser from the text of `nonbreaking/english.prefixes`.
    pub fn new(prefixes_text: &str) -> Normalizer {
        let mut prefixes = HashMap::new();
        for line in prefixes_text.split('\n') {
            let mut toks = tokens(line);
            let Some(first) = toks.next() else { continue };
            if first.starts_with('#') {
                continue;
            }
            let kind = if toks.next() == Some("#NUMERIC_ONLY#") {
                PrefixKind::NumericOnly
            } else {
                PrefixKind::Any
            };
            prefixes.insert(first.to_string(), kind);
        }
        let alnum = format!("0-9{ALPHA}");
        Normalizer {
            prefixes,
            r2: re(&format!(
                r"([^{alnum} \t\n\x{{0B}}\x{{0C}}\r.'`,\-\x{{2018}}\x{{2019}}])"
            )),
            r3a: re(r"\.(\.+)"),
            r3b: re(r"DOTMULTI\.([^.])"),
            r4a: re(r"([^0-9]),([^0-9])"),
            r4b: re(r"([0-9]),([^0-9])"),
            r4c: re(r"([^0-9]),([0-9])"),
            r5a: re(r"[`\x{2018}\x{2019}]"),
            r5b: re(r"(\x{201C}|\x{201D}|'')"),
            r7: re(&format!(r"([{alnum}.])-([{alnum}])")),
            r8a: re(&format!(r"([^{ALPHA}])'([^{ALPHA}])")),
            r8b: re(&format!(r"([^{ALPHA}0-9])'([{ALPHA}])")),
            r8c: re(&format!(r"([{ALPHA}])'([^{ALPHA}])")),
            r8d: re(&format!(r"([{ALPHA}])'([{ALPHA}])")),
            r8e: re(r"([0-9])'(s)"),
            r12: re(r"[ \x{A0}\x{2000}-\x{200A}\x{202F}\x{205F}\x{3000}]+"),
        }
    }

    /// Number of non-breaking prefixes loaded.
    pub fn prefix_count(&self) -> usize {
        self.prefixes.len()
    }

    /// Rules 1–12 of spec §3.2 (no lowercasing).
    pub fn normalize(&self, text: &str) -> String {
        match fast_path(text) {
            Some(out) => out,
            None => self.normalize_rules(text),
        }
    }

    /// The rules applied literally (no fast path).
    fn normalize_rules(&self, text: &str) -> String {
        // Each pattern below needs a literal character to match; a pass is skipped when the text
        // lacks it (the pass would change nothing).
        // 1.
        let mut w = format!(" {text} ");
        // 2.
        if !w.chars().all(rule2_kept) {
            w = rep(&self.r2, w, " ${1} ");
        }
        // 3.
        if w.contains("..") {
            w = rep(&self.r3a, w, " DOTMULTI${1}");
        }
        while w.contains("DOTMULTI.") {
            w = rep(&self.r3b, w, "DOTDOTMULTI ${1}");
            w = w.replace("DOTMULTI.", "DOTDOTMULTI");
        }
        // 4.
        if w.contains(',') {
            w = rep(&self.r4a, w, "${1} , ${2}");
            w = rep(&self.r4b, w, "${1} , ${2}");
            w = rep(&self.r4c, w, "${1} , ${2}");
        }
        // 5.
        if w.contains(['`', '\u{2018}', '\u{2019}']) {
            w = rep(&self.r5a, w, "'");
        }
        if w.contains(['\u{201C}', '\u{201D}']) || w.contains("''") {
            w = rep(&self.r5b, w, " \" ");
        }
        // 6.
        if w.contains('\u{2013}') {
            w = w.replace('\u{2013}', "-");
        }
        if w.contains("--") {
            w = w.replace("--", "-");
        }
        // 7.
        if w.contains('-') {
            w = rep(&self.r7, w, "${1} ${2}");
        }
        // 8.
        if w.contains('\'') {
            w = rep(&self.r8a, w, "${1} ' ${2}");
            w = rep(&self.r8b, w, "${1} ' ${2}");
            w = rep(&self.r8c, w, "${1} ' ${2}");
            w = rep(&self.r8d, w, "${1} '${2}");
            w = rep(&self.r8e, w, "${1} '${2}");
        }
        // 9.
        w = self.dots_at_token_ends(&w);
        // 10.
        while w.contains("DOTDOTMULTI") {
            w = w.replace("DOTDOTMULTI", "DOTMULTI.");
        }
        if w.contains("DOTMULTI") {
            w = w.replace("DOTMULTI", ".");
        }
        // 12.
        if w.contains("  ") || w.contains(is_ws_run_not_space) {
            w = rep(&self.r12, w, " ");
        }
        java_trim(&w).to_string()
    }

    /// Normalise, then lowercase (Java `toLowerCase`, locale-independent): the text the
    /// aligner tokenises.
    pub fn normalize_lower(&self, text: &str) -> String {
        match fast_path(text) {
            Some(mut out) => {
                out.make_ascii_lowercase();
                out
            }
            None => self.normalize_rules(text).to_lowercase(),
        }
    }

    fn dots_at_token_ends(&self, w: &str) -> String {
        let toks: Vec<&str> = tokens(w).collect();
        let mut out = String::with_capacity(w.len() + 8);
        for (k, &t) in toks.iter().enumerate() {
            let next = toks.get(k + 1).copied();
            if t.ends_with('.') && t != "." {
                let pre = &t[..t.len() - 1];
                let kind = self.prefixes.get(pre).copied();
                let next_first = next.and_then(|n| n.chars().next());
                if pre.contains('.') && pre.chars().any(is_alpha) {
                    out.extend(t.chars().filter(|&c| c != '.'));
                } else if kind == Some(PrefixKind::Any)
                    || next_first.is_some_and(|c| c.is_ascii_lowercase())
                    || (kind == Some(PrefixKind::NumericOnly)
                        && next_first.is_some_and(|c| c.is_ascii_digit()))
                {
                    out.push_str(t);
                } else {
                    out.push_str(pre);
                    out.push_str(" .");
                }
            } else {
                out.push_str(t);
            }
            out.push(' ');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PREFIXES: &str = "#c\nA\nDr\nDR\nMr\nNo #NUMERIC_ONLY#\n";

    #[test]
    fn fast_path_equals_the_rules() {
        let n = Normalizer::new(PREFIXES);
        let pieces = [
            "a", "B", "7", " ", "\t", "\n", "\r", "\x0c", "No", "Dr", "x", "  ",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            let mut s = String::new();
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = (seed % 12) as usize;
            for k in 0..len {
                s.push_str(pieces[((seed >> (k * 4)) % pieces.len() as u64) as usize]);
            }
            assert_eq!(n.normalize(&s), n.normalize_rules(&s), "{s:?}");
            assert_eq!(
                n.normalize_lower(&s),
                n.normalize_rules(&s).to_lowercase(),
                "{s:?}"
            );
        }
    }

    #[test]
    fn selected_vectors() {
        let n = Normalizer::new(PREFIXES);
        for (i, o) in [
            (
                "It's 5,000 dollars... or 3.5 million?!",
                "it 's 5,000 dollars ... or 3.5 million ? !",
            ),
            ("rock'n'roll in the 1990's", "rock 'n'roll in the 1990 's"),
            ("no. 5 vs no. five", "no . 5 vs no. five"),
            ("a,b,c", "a , b,c"),
            ("a-b-c", "a b-c"),
            ("a---b", "a--b"),
            ("a--b", "a b"),
            ("I.B.M.'s", "ibm ' s"),
            ("C++ C# F#", "c + + c # f #"),
            ("ΟΔΟΣ", "ο δ ο σ"),
            ("a\u{A0}b", "a b"),
            ("\u{1}a", "a"),
            ("xDOTMULTIy", "x.y"),
        ] {
            assert_eq!(n.normalize_lower(i), o, "input {i:?}");
        }
    }
}
