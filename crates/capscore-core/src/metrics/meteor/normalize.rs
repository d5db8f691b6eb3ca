//! METEOR's `-norm` text normaliser (spec METEOR §3): the Moses-style English normaliser that
//! keeps punctuation, followed by Java's locale-independent lowercasing and the split on
//! `TOKEN_DELIMS`.
//!
//! Every `replace_all` below is one left-to-right pass of non-overlapping leftmost matches, which
//! is exactly what the `regex` crate does; characters consumed as context by one match are not
//! available to the next one in the same pass (`a,b,c` → `a , b,c`), as in the reference.
//!
//! Printable ASCII text (nearly every caption) takes a hand-written, regex-free path,
//! `Normalizer::normalize_ascii`, with the same output; a randomized test checks it against the
//! literal rules.

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
    // The delimiters are ASCII, so scanning bytes finds the same pieces as scanning chars
    // (a UTF-8 continuation or lead byte is never one of them) without decoding.
    let bytes = s.as_bytes();
    let mut at = 0usize;
    std::iter::from_fn(move || {
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        if at == bytes.len() {
            return None;
        }
        let start = at;
        while at < bytes.len() && !bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        s.get(start..at)
    })
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

/// How [`Normalizer::normalize_ascii`] treats one input byte. Each class is one bit, so that
/// [`ascii_shape`] can OR and AND them without branching.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum AsciiClass {
    /// Not handled by the hand-written path: non-ASCII bytes, U+000B (a `JSPACE` that is not a
    /// `TOKEN_DELIMS`) and the other ASCII control characters (rule 2 isolates them, then Java
    /// trim may drop them).
    Other = 1,
    /// ASCII letter or digit: kept by rule 2.
    Word = 2,
    /// U+0020.
    Space = 4,
    /// The other `TOKEN_DELIMS` characters: U+0009, U+000A, U+000C, U+000D.
    Delim = 8,
    /// `.`: kept by rule 2, handled by rule 9 (the path declines `..`, rule 3).
    Dot = 16,
    /// `,` `-` `'` `` ` ``: kept by rule 2, rewritten by rules 4–8.
    Edit = 32,
    /// Printable ASCII punctuation that rule 2 surrounds with spaces and no later rule reads or
    /// rewrites (`!` `"` `#` `$` `%` `&` `(` `)` `*` `+` `/` `:` `;` `<` `=` `>` `?` `@` `[` `\`
    /// `]` `^` `_` `{` `|` `}` `~`): each one is a token of its own.
    Isolated = 64,
}

/// [`AsciiClass`] of every byte value.
const ASCII_CLASS: [AsciiClass; 256] = {
    let mut t = [AsciiClass::Other; 256];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        t[b] = if c.is_ascii_alphanumeric() {
            AsciiClass::Word
        } else if c == b' ' {
            AsciiClass::Space
        } else if c.is_ascii_whitespace() {
            AsciiClass::Delim
        } else if c == b'.' {
            AsciiClass::Dot
        } else if matches!(c, b',' | b'-' | b'\'' | b'`') {
            AsciiClass::Edit
        } else if c.is_ascii_punctuation() {
            AsciiClass::Isolated
        } else {
            AsciiClass::Other
        };
        b += 1;
    }
    t
};

/// Whether byte `b` is of one of the [`AsciiClass`]es in `mask` (their bits ORed).
#[inline]
fn in_classes(b: u8, mask: u8) -> bool {
    ASCII_CLASS[usize::from(b)] as u8 & mask != 0
}

const ISOLATED: u8 = AsciiClass::Isolated as u8;
const TOKEN_DELIM: u8 = AsciiClass::Space as u8 | AsciiClass::Delim as u8;

/// The tokens rule 9 sees, for text made of bytes [`Normalizer::normalize_ascii`] accepts: runs
/// of bytes split on `TOKEN_DELIMS`, with every [`AsciiClass::Isolated`] byte a token of its own
/// (the spaces rule 2 would put around it). Text in which rule 2 has already been applied
/// tokenises the same way.
struct AsciiTokens<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Iterator for AsciiTokens<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let b = self.s.as_bytes();
        let mut i = self.pos;
        while i < b.len() && in_classes(b[i], TOKEN_DELIM) {
            i += 1;
        }
        if i == b.len() {
            self.pos = i;
            return None;
        }
        let start = i;
        i += 1;
        if !in_classes(b[start], ISOLATED) {
            while i < b.len() && !in_classes(b[i], TOKEN_DELIM | ISOLATED) {
                i += 1;
            }
        }
        self.pos = i;
        // Token boundaries sit next to ASCII bytes, so they are char boundaries.
        Some(&self.s[start..i])
    }
}

/// Which hand-written path [`Normalizer::normalize_ascii`] takes for a text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AsciiShape {
    /// Letters, digits, `.` and isolated punctuation in tokens separated by single spaces, with
    /// no space at either end: [`Normalizer::normalize_spaced`].
    Spaced,
    /// Any other accepted text without `,` `-` `'` `` ` ``: [`Normalizer::normalize_tokens`].
    Tokens,
    /// Accepted text with a `,` `-` `'` or `` ` ``: rules 1–8 first.
    Edits,
}

/// Classifies `text` for [`Normalizer::normalize_ascii`]: `None` when it has a byte of
/// [`AsciiClass::Other`], `..` or `DOTMULTI`.
fn ascii_shape(text: &str) -> Option<AsciiShape> {
    let bytes = text.as_bytes();
    // The classes seen, and those seen on two bytes in a row.
    let mut seen = 0u8;
    let mut twice = 0u8;
    let mut prev = 0u8;
    for &b in bytes {
        let class = ASCII_CLASS[usize::from(b)] as u8;
        seen |= class;
        twice |= class & prev;
        prev = class;
    }
    if seen & AsciiClass::Other as u8 != 0
        || twice & AsciiClass::Dot as u8 != 0
        || text.contains("DOTMULTI")
    {
        return None;
    }
    Some(if seen & AsciiClass::Edit as u8 != 0 {
        AsciiShape::Edits
    } else if seen & AsciiClass::Delim as u8 == 0
        && twice & AsciiClass::Space as u8 == 0
        && bytes.first() != Some(&b' ')
        && bytes.last() != Some(&b' ')
    {
        AsciiShape::Spaced
    } else {
        AsciiShape::Tokens
    })
}

/// One `replace_all( (L)m(R) → "$1" + with + "$2" )` pass over ASCII text, where `L` and `R`
/// are byte classes and `m` a byte: non-overlapping leftmost matches, the context bytes of a
/// match consumed (`a,b,c` → `a , b,c`), exactly as the `regex` crate does for these patterns.
/// Returns `w` itself when nothing matched.
fn ascii_pass(
    w: String,
    m: u8,
    left: impl Fn(u8) -> bool,
    right: impl Fn(u8) -> bool,
    with: &str,
) -> String {
    let b = w.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut p = 0;
    while p + 2 < b.len() {
        if b[p + 1] == m && left(b[p]) && right(b[p + 2]) {
            let o = out.get_or_insert_with(|| String::with_capacity(w.len() + 16));
            o.push_str(&w[copied..=p]);
            o.push_str(with);
            copied = p + 2;
            p += 3;
        } else {
            p += 1;
        }
    }
    match out {
        Some(mut o) => {
            o.push_str(&w[copied..]);
            o
        }
        None => w,
    }
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
        match self.normalize_ascii(text) {
            Some(out) => out,
            None => self.normalize_rules(text),
        }
    }

    /// Exact hand-written rules 1–12 for printable ASCII text (letters, digits, punctuation) and
    /// `TOKEN_DELIMS`, or `None` for text it declines: anything else (non-ASCII, U+000B, other
    /// control characters), `..` (rule 3), a literal `DOTMULTI` (rules 3 and 10), and the rare
    /// token whose dots rule 9 removes to spell `DOTMULTI` (`DOT.MULTI.`).
    ///
    /// On such text rule 2 only isolates the [`AsciiClass::Isolated`] punctuation, rules 3 and
    /// 10 change nothing, and rule 12 only collapses the spaces between the tokens rule 9 emits,
    /// so the result is rule 9 applied to [`AsciiTokens`], joined by single spaces. When the text
    /// has a `,`, `-`, `'` or `` ` ``, rules 1–8 are first applied literally as byte passes
    /// ([`Normalizer::ascii_rules_1_to_8`]); when it is [`AsciiShape::Spaced`] (most captions),
    /// [`Normalizer::normalize_spaced`] copies it in runs instead of token by token.
    fn normalize_ascii(&self, text: &str) -> Option<String> {
        match ascii_shape(text)? {
            AsciiShape::Spaced => self.normalize_spaced(text),
            AsciiShape::Tokens => self.normalize_tokens(text),
            AsciiShape::Edits => self.normalize_tokens(&Self::ascii_rules_1_to_8(text)),
        }
    }

    /// Rule 9 and the joining of [`Normalizer::normalize_ascii`], token by token: `w` is
    /// accepted text without `,` `-` `'` `` ` `` (or with rules 1–8 already applied).
    fn normalize_tokens(&self, w: &str) -> Option<String> {
        let mut out = String::with_capacity(w.len() + 4);
        let mut toks = AsciiTokens { s: w, pos: 0 }.peekable();
        while let Some(t) = toks.next() {
            if !out.is_empty() {
                out.push(' ');
            }
            if t.len() >= 2 && t.ends_with('.') {
                let next_first = toks.peek().and_then(|n| n.bytes().next());
                self.dotted_token(t, next_first, &mut out)?;
            } else {
                out.push_str(t);
            }
        }
        Some(out)
    }

    /// [`Normalizer::normalize_tokens`] for [`AsciiShape::Spaced`] text: the output is the text
    /// itself except around isolated punctuation (which gets a space on each side where it
    /// lacks one) and at tokens ending with `.` (rule 9), so only those places are visited and
    /// the runs between them are copied whole.
    fn normalize_spaced(&self, text: &str) -> Option<String> {
        let b = text.as_bytes();
        let n = b.len();
        let isolated = |p: usize| in_classes(b[p], ISOLATED);
        let mut out = String::with_capacity(n + 8);
        let mut copied = 0;
        let mut i = 0;
        while let Some(k) = b[i..]
            .iter()
            .position(|&c| in_classes(c, AsciiClass::Dot as u8 | ISOLATED))
        {
            let p = i + k;
            i = p + 1;
            if isolated(p) {
                out.push_str(&text[copied..p]);
                // A space or an isolated byte before it already separates it.
                if p > 0 && b[p - 1] != b' ' && !isolated(p - 1) {
                    out.push(' ');
                }
                out.push_str(&text[p..=p]);
                if p + 1 < n && b[p + 1] != b' ' {
                    out.push(' ');
                }
                copied = p + 1;
                continue;
            }
            // A dot: rule 9 only reads tokens that end with it.
            let end = p + 1;
            if end < n && b[end] != b' ' && !isolated(end) {
                continue;
            }
            let start = b[..p]
                .iter()
                .rposition(|&c| in_classes(c, AsciiClass::Space as u8 | ISOLATED))
                .map_or(0, |s| s + 1);
            if end - start < 2 {
                continue;
            }
            // Spaced text has no trailing space, so a space is followed by a token.
            let next_first = match b.get(end) {
                Some(b' ') => b.get(end + 1).copied(),
                other => other.copied(),
            };
            out.push_str(&text[copied..start]);
            self.dotted_token(&text[start..end], next_first, &mut out)?;
            copied = end;
        }
        out.push_str(&text[copied..]);
        Some(out)
    }

    /// Rule 9 for a token `t` of at least two characters ending with `.`, followed by a token
    /// starting with `next_first` (if any): appends what rule 9 emits for it to `out`, or
    /// returns `None` when the dots it removes leave `DOTMULTI`, which rule 10 would rewrite.
    fn dotted_token(&self, t: &str, next_first: Option<u8>, out: &mut String) -> Option<()> {
        let pre = &t[..t.len() - 1];
        if pre.contains('.') && pre.bytes().any(|b| b.is_ascii_alphabetic()) {
            let start = out.len();
            out.extend(t.chars().filter(|&c| c != '.'));
            if out[start..].contains("DOTMULTI") {
                return None;
            }
            return Some(());
        }
        let lower_next = next_first.is_some_and(|c| c.is_ascii_lowercase());
        let keep = match self.prefixes.get(pre) {
            Some(PrefixKind::Any) => true,
            Some(PrefixKind::NumericOnly) => {
                lower_next || next_first.is_some_and(|c| c.is_ascii_digit())
            }
            None => lower_next,
        };
        if keep {
            out.push_str(t);
        } else {
            out.push_str(pre);
            out.push_str(" .");
        }
        Some(())
    }

    /// Rules 1–8 applied literally to text [`Normalizer::normalize_ascii`] accepts (printable
    /// ASCII and `TOKEN_DELIMS`, no `..`, no `DOTMULTI`), where every class is a set of ASCII
    /// bytes (`ALPHA` is `A–Z a–z`). Rule 3 never matches such text, and the non-ASCII quotes and
    /// dash of rules 5 and 6 are absent. Isolated punctuation is never next to the `,` `-` `'`
    /// these rules look at (rule 2 put spaces around it), so it is never their context.
    fn ascii_rules_1_to_8(text: &str) -> String {
        let alpha = |b: u8| b.is_ascii_alphabetic();
        let digit = |b: u8| b.is_ascii_digit();
        let alnum = |b: u8| b.is_ascii_alphanumeric();
        // 1. and 2.
        let mut w = String::with_capacity(text.len() + 16);
        w.push(' ');
        for c in text.chars() {
            if c.is_ascii() && in_classes(c as u8, ISOLATED) {
                w.push(' ');
                w.push(c);
                w.push(' ');
            } else {
                w.push(c);
            }
        }
        w.push(' ');
        // 4.
        if w.contains(',') {
            w = ascii_pass(w, b',', |l| !digit(l), |r| !digit(r), " , ");
            w = ascii_pass(w, b',', digit, |r| !digit(r), " , ");
            w = ascii_pass(w, b',', |l| !digit(l), digit, " , ");
        }
        // 5.
        if w.contains('`') {
            w = w.replace('`', "'");
        }
        if w.contains("''") {
            w = w.replace("''", " \" ");
        }
        // 6.
        if w.contains("--") {
            w = w.replace("--", "-");
        }
        // 7.
        if w.contains('-') {
            w = ascii_pass(w, b'-', |l| alnum(l) || l == b'.', alnum, " ");
        }
        // 8.
        if w.contains('\'') {
            w = ascii_pass(w, b'\'', |l| !alpha(l), |r| !alpha(r), " ' ");
            w = ascii_pass(w, b'\'', |l| !alnum(l), alpha, " ' ");
            w = ascii_pass(w, b'\'', alpha, |r| !alpha(r), " ' ");
            w = ascii_pass(w, b'\'', alpha, alpha, " '");
            w = ascii_pass(w, b'\'', digit, |r| r == b's', " '");
        }
        w
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
        match self.normalize_ascii(text) {
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

    #[test]
    fn byte_token_split_equals_the_char_split() {
        let pieces = [
            "a", " ", "\t", "\n", "\r", "\x0c", "\x0b", "\u{a0}", "é", "Σ", "日本", "\u{2028}",
            "x.y", "  ",
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let mut s = String::new();
            for k in 0..(seed % 10) as usize {
                s.push_str(pieces[((seed >> (k * 5)) % pieces.len() as u64) as usize]);
            }
            let want: Vec<&str> = s.split(is_token_delim).filter(|t| !t.is_empty()).collect();
            assert_eq!(tokens(&s).collect::<Vec<_>>(), want, "{s:?}");
        }
    }

    const PREFIXES: &str = "#c\nA\nDr\nDR\nMr\nNo #NUMERIC_ONLY#\n";

    /// [`PREFIXES`] plus prefixes of the other shapes `english.prefixes` has (lowercase,
    /// dotted, `#NUMERIC_ONLY#` lowercase) and a digit one.
    const MORE_PREFIXES: &str =
        "#c\nA\nDr\nDR\nMr\nNo #NUMERIC_ONLY#\npp #NUMERIC_ONLY#\nvs\ne.g\nU.S\n7\n";

    /// Random text from pieces (mostly ones the ASCII path accepts, sometimes ones it
    /// declines), half of it caption-like (pieces separated by nothing or one space): the ASCII
    /// path, whenever it accepts, must equal the literal rules, and so must `normalize` /
    /// `normalize_lower` always. On `Spaced` text the token-by-token path must agree too.
    #[test]
    fn ascii_path_equals_the_rules() {
        let common = [
            "a", "B", "7", "0", "s", "x", "No", "Dr", "DR", "Mr", "pp", "vs", "A", "e", "g", "U",
            "S", "DOT", "MULTI", "DOT.", "MULTI.", " ", " ", " ", "  ", "\t", "\n", "\r", "\x0c",
            ".", ".", ".", "Mr.", "No.", "A.", "U.S.", "x.y", "e.g.", "pp.", "3.5", "!", "?", ",",
            ",", "5,000", ";", ":", "(", ")", "\"", "&", "#", "+", "/", "[", "_", "~", "'", "'",
            "`", "''", "-", "-", "--", "---", "'s", "n't", "t-shirt", "1990's",
        ];
        let caption = [
            "a", "A", "man", "Dog", "7", "12", "s", "No", "Mr", "pp", "DOT", "MULTI", ".", ".",
            ".", "Mr.", "No.", "A.", "U.S.", "x.y", "e.g.", "pp.", "3.5", "DOT.", "MULTI.", "!",
            "?", "!", "(", ")", "\"", ";", ":", "$", "@",
        ];
        let rare = [
            "..", "...", "DOTMULTI", "é", "É", "\u{A0}", "\u{2019}", "\u{201C}", "\u{2013}", "Σ",
            "\x0b", "\x01", "\x7f", "\u{3000}",
        ];
        let mut total = 0;
        let mut accepted = 0;
        let mut edited = 0;
        let mut spaced = 0;
        for prefixes in [PREFIXES, MORE_PREFIXES] {
            let n = Normalizer::new(prefixes);
            let mut seed = 0x2545_f491_4f6c_dd1du64;
            let mut next = move || {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed
            };
            let cases = if cfg!(debug_assertions) {
                25_000
            } else {
                250_000
            };
            for _ in 0..cases {
                let mut s = String::new();
                let len = next() % 16;
                let captionlike = next() % 2 == 0;
                for k in 0..len {
                    let r = next();
                    if r % 24 == 0 {
                        s.push_str(rare[((r >> 8) % rare.len() as u64) as usize]);
                    } else if captionlike {
                        if k > 0 && r & 0x10 != 0 {
                            s.push(' ');
                        }
                        s.push_str(caption[((r >> 8) % caption.len() as u64) as usize]);
                    } else {
                        s.push_str(common[((r >> 8) % common.len() as u64) as usize]);
                    }
                }
                let rules = n.normalize_rules(&s);
                total += 1;
                if let Some(shape) = ascii_shape(&s) {
                    accepted += 1;
                    edited += usize::from(shape == AsciiShape::Edits);
                    if shape == AsciiShape::Spaced {
                        spaced += 1;
                        assert_eq!(n.normalize_spaced(&s), n.normalize_tokens(&s), "{s:?}");
                    }
                    if let Some(fast) = n.normalize_ascii(&s) {
                        assert_eq!(fast, rules, "{s:?}");
                    }
                }
                assert_eq!(n.normalize(&s), rules, "{s:?}");
                assert_eq!(n.normalize_lower(&s), rules.to_lowercase(), "{s:?}");
            }
        }
        // The comparison must exercise every path.
        assert!(accepted * 3 > total * 2, "{accepted} of {total} accepted");
        assert!(edited * 5 > total, "{edited} of {total} with rules 4–8");
        assert!(spaced * 4 > total, "{spaced} of {total} spaced");
    }

    #[test]
    fn ascii_path_declines() {
        let n = Normalizer::new(PREFIXES);
        for s in [
            "a..b",
            "xDOTMULTIy",
            "DOT.MULTI.",
            "caf\u{E9}",
            "a\u{A0}b",
            "a\u{B}b",
            "\u{1}a",
        ] {
            assert_eq!(n.normalize_ascii(s), None, "{s:?}");
        }
        assert_eq!(
            n.normalize_ascii("A group of children, Mr. Dr's t-shirt (U.S.)!"),
            Some("A group of children , Mr. Dr 's t shirt ( US ) !".to_string())
        );
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
            ("DOT.MULTI.", "."),
            ("DOT.DOT.MULTI.", ".."),
        ] {
            assert_eq!(n.normalize_lower(i), o, "input {i:?}");
        }
    }
}
