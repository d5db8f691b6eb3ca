//! The scanner: the [`Lexer`] state, the dispatch of [`Lexer::step`] on the first character
//! of a token, and [`Lexer::word`], which runs the word rules in order. The rules themselves
//! live in their family's file.

use std::cell::Cell;

use super::classes::{is_hyph2, is_letter, is_symbol, is_wordish, java_lower};
use super::classes::{letter_entity_len, quote_map};

pub(super) struct Lexer<'a> {
    pub(super) buf: &'a [char],
    pub(super) end: usize,
    pub(super) out: String,
    /// No `@` before the next e-mail terminator for starts before this position.
    pub(super) no_at_before: usize,
    /// No `.com`-like ending before the next terminator for starts before this position.
    pub(super) no_dotcom_before: usize,
    /// Measuring the word rule alone, without the `www.` and file-name rules (see
    /// [`Lexer::longer_than_word`]).
    pub(super) measuring: bool,
    /// The last run [`Lexer::run_len`] measured: `buf[start..end]` all `c`.
    pub(super) run: Cell<(usize, usize, char)>,
    /// The last run of ASCII letters, digits, `.` and `-` [`Lexer::likely_url`] scanned.
    pub(super) host_run: Cell<(usize, usize)>,
    /// The last run [`super::abbreviations::hyphen_acronym_end`] scanned.
    pub(super) acronym_run: Cell<AcronymRun>,
    /// The last run [`Lexer::email`] read.
    pub(super) email_run: EmailRun,
    /// The last chain of parts [`super::abbreviations::dot_hyphen_end`] found without a hyphen.
    pub(super) dot_run: Cell<(usize, usize)>,
    /// The last scan for the end of a `<!…>` / `<?…>` tag (see [`super::escapes::sgml_len`]).
    pub(super) gt_scan: Cell<(usize, usize)>,
    /// The last run of name parts [`Lexer::filename`] scanned.
    pub(super) file_run: FileRun,
    /// The lexer [`Lexer::longer_than_word`] measures with, kept with its runs from call to
    /// call (made on first use), and the place it last measured from.
    measurer: std::cell::RefCell<Option<(Box<Lexer<'a>>, usize)>>,
}

/// A run of file-name parts joined by single periods, scanned by [`Lexer::filename`] from
/// `start` to `end`, and the file name it holds: the last period of the run (`period`, 0: none)
/// that starts an extension, which ends at `name_end`. `grid`: the places the scan stepped on
/// when a letter entity made it step over several characters (empty: every place of the run).
#[derive(Default)]
pub(super) struct FileRun {
    pub(super) start: Cell<usize>,
    pub(super) end: Cell<usize>,
    pub(super) period: Cell<usize>,
    pub(super) name_end: Cell<usize>,
    pub(super) grid: std::cell::RefCell<Vec<bool>>,
}

/// A run `hyphen_acronym_end` (abbreviations) scanned: `b[start..end]`, and one more than
/// the place of its last `--` that starts before `end - 2` (0: none).
#[derive(Clone, Copy, Default)]
pub(super) struct AcronymRun {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) double: usize,
}

/// A run of characters other than the e-mail terminators, read by [`Lexer::email`]: for each
/// start in `start..stop`, one more than the end of the longest e-mail from there (0: none).
#[derive(Default)]
pub(super) struct EmailRun {
    pub(super) start: usize,
    pub(super) stop: usize,
    pub(super) best: Vec<usize>,
}

/// A token's output form: lower-cased as Java does, spaces (inside tags, URLs, e-mail
/// addresses) as U+00A0.
pub(super) fn token_text(s: &str) -> String {
    java_lower(s).replace(' ', "\u{A0}")
}

impl<'a> Lexer<'a> {
    /// A lexer of `buf[..end]` with nothing emitted and nothing kept yet; `measuring` as for
    /// [`Lexer::longer_than_word`].
    pub(super) fn new(buf: &'a [char], end: usize, out: String, measuring: bool) -> Lexer<'a> {
        Lexer {
            buf,
            end,
            out,
            no_at_before: 0,
            no_dotcom_before: 0,
            measuring,
            run: Cell::new((0, 0, '\0')),
            host_run: Cell::new((0, 0)),
            acronym_run: Cell::default(),
            email_run: EmailRun::default(),
            dot_run: Cell::new((0, 0)),
            gt_scan: Cell::new((usize::MAX, 0)),
            file_run: FileRun::default(),
            measurer: std::cell::RefCell::new(None),
        }
    }
}

impl Lexer<'_> {
    pub(super) fn at(&self, i: usize) -> Option<char> {
        if i < self.end {
            Some(self.buf[i])
        } else {
            None
        }
    }

    pub(super) fn emit(&mut self, tok: &str) {
        if tok.is_empty() {
            return;
        }
        if !self.out.is_empty() {
            self.out.push(' ');
        }
        self.out.push_str(tok);
    }

    /// Emits `chars` as one token in its output form ([`token_text`]), soft hyphens deleted.
    pub(super) fn emit_lower(&mut self, chars: &[char]) {
        let s: String = chars.iter().filter(|&&c| c != '\u{AD}').collect();
        self.emit(&token_text(&s));
    }

    /// [`Lexer::emit_lower`] keeping the soft hyphens (URLs, e-mail addresses, tags).
    pub(super) fn emit_lower_kept(&mut self, chars: &[char]) {
        let s: String = chars.iter().collect();
        self.emit(&token_text(&s));
    }

    pub(super) fn run(&mut self) {
        let mut i = 0;
        while i < self.end {
            i = self.step(i);
        }
    }

    /// The number of `c` from `i` on. A run is asked about at each of its characters (a run
    /// of quotes or of `<` is a token per character), so the last run's end is kept: a
    /// caption of 40,000 quotes took 0.17 s when each call counted to the run's end.
    pub(super) fn run_len(&self, i: usize, c: char) -> usize {
        let (start, end, rc) = self.run.get();
        if rc == c && start <= i && i < end {
            return end - i;
        }
        let mut j = i;
        while j < self.end && self.buf[j] == c {
            j += 1;
        }
        if j > i {
            self.run.set((i, j, c));
        }
        j - i
    }

    pub(super) fn one(&mut self, i: usize, tok: &str) -> usize {
        self.emit(tok);
        i + 1
    }

    /// Tokenize starting at `i`; return the next position.
    ///
    /// The rules are tried in this order (first match wins); each lives in its family's file.
    pub(super) fn step(&mut self, i: usize) -> usize {
        let c = self.buf[i];
        let next = self.at(i + 1);
        if !matches!(c, ' ' | '\t' | '\n') {
            if let Some(k) = self.symbol_dotcom(i) {
                return k;
            }
        }
        if c == '\u{AD}' {
            if let Some(k) = self.soft_hyphen_alone(i) {
                return k;
            }
        }
        // (`x_^` is a face unless a longer word starts there: `x_^@b.com`)
        if c == 'x' && self.at(i + 1) == Some('_') && self.longer_than_word(i, 3).is_some() {
            if let Some(k) = self.underscore_face(i) {
                return k;
            }
        }
        if is_wordish(c) && !is_hyph2(c) {
            return self.word(i);
        }
        if matches!(c, ':' | ';' | '=' | '<' | '>') && self.emoticon_at(i) {
            if let Some(n) = self.emoticon(i) {
                return n;
            }
        }
        if self.number_starts(i) {
            return self.word(i);
        }
        if c == '(' {
            if let Some(n) = self.paren_face(i) {
                return n;
            }
            if let Some(n) = self.phone(i) {
                return n;
            }
        }
        if c == '+' && next == Some('+') {
            if let Some(n) = self.phone(i) {
                return n;
            }
        }
        if let Some(k) = self.underscore_face(i) {
            return k;
        }
        match c {
            '<' => self.angle_bracket(i),
            '\\' if next == Some('*') => self.escaped_asterisks(i),
            '>' | '*' => self.symbol_run(i),
            '\'' => self.straight_apostrophe(i),
            '"' => self.double_quote(i),
            '(' | ')' | '[' | ']' | '{' | '}' => self.bracket(i),
            ':' | ';' => self.colon(i),
            '-' => match self.bracket_escape(i) {
                Some(k) => k,
                None => self.hyphen_run(i),
            },
            '.' => self.periods(i),
            '!' | '?' => self.mark_run(i),
            '&' => self.amp(i),
            '#' | '@' if next == Some(c) => self.symbol_run(i),
            '@' if next.is_some_and(|n| n.is_ascii_alphabetic() || n == '_') => self.handle(i),
            '#' if next.is_some_and(is_letter)
                || letter_entity_len(self.buf, i + 1, self.end) > 0 =>
            {
                self.hashtag(i)
            }
            '\u{AD}' => self.one(i, "-"),
            '\u{80}' | '\u{A4}' | '\u{20A0}' | '\u{20AC}' | '\u{A2}' | '\u{A3}' => self.currency(i),
            '\u{85}' | '\u{2026}' => self.one(i, "..."),
            _ if quote_map(c).is_some() => self.quote_run(i),
            '\u{96}' | '\u{97}' | '\u{2013}' | '\u{2014}' | '\u{2015}' => self.one(i, "--"),
            '\u{BC}' | '\u{BD}' | '\u{BE}' | '\u{2153}' | '\u{2154}' => self.vulgar_fraction(i),
            '\u{B2}' | '\u{B3}' | '\u{B9}' | '\u{2070}' | '\u{2074}'..='\u{2079}' => {
                self.superscripts(i)
            }
            '\u{2080}'..='\u{2089}' => self.subscripts(i),
            '_' => self.symbol_run(i),
            '$' | '%' | ',' | '=' | '^' | '~' | '|' | '\\' | '@' | '#' | '/' => {
                self.one(i, &c.to_string())
            }
            _ => self.other_character(i),
        }
    }

    /// Any other character: printable ASCII and the symbols of the generated table are tokens
    /// of their own (lower-cased), everything else is deleted and ends the current token
    /// (spec COCO §3.2, "untokenizable characters").
    fn other_character(&mut self, i: usize) -> usize {
        let c = self.buf[i];
        if c.is_ascii() {
            if c.is_ascii_graphic() {
                return self.one(i, &c.to_string());
            }
            return i + 1;
        }
        if is_symbol(c) {
            let t = c.to_lowercase().collect::<String>();
            return self.one(i, &t);
        }
        i + 1
    }

    /// A run of the same symbol: `*` (any length), `#`, `@`, `_` (any length, reached only when
    /// no hashtag, handle or word rule applies), `>` (pairs: `>>>` → `>>` `>`), observed.
    fn symbol_run(&mut self, i: usize) -> usize {
        let c = self.buf[i];
        let mut n = self.run_len(i, c);
        if c == '>' {
            n = n.min(2);
        }
        self.emit(&c.to_string().repeat(n));
        i + n
    }

    /// A word-like token starting at `i` (letters, digits and internal connectors).
    ///
    /// The whole-token shapes are tried first (URLs and e-mail, fractions, file names, phone
    /// numbers, hyphenated acronyms, apostrophe words); then the word scanner
    /// ([`Lexer::scan_word`]) takes what it can, and the rules on what follows the scanned
    /// word run in order (first match wins). Each rule lives in its family's file.
    pub(super) fn word(&mut self, i: usize) -> usize {
        let b = self.buf;
        if let Some(k) = self.url_or_email(i) {
            return k;
        }
        let frac = match self.fraction_start(i) {
            Ok(k) => return k,
            Err(frac) => frac,
        };
        let whole = [
            Self::file_name_word,
            Self::phone_word,
            Self::hyphen_acronym,
            Self::apostrophe_word,
            Self::o_apos_o,
            Self::elision,
        ];
        for rule in whole {
            if let Some(k) = rule(self, i) {
                return k;
            }
        }
        let scan = self.scan_word(i);
        let mut j = scan.j;
        if j == i {
            return self.one(i, &b[i].to_string());
        }
        if scan.nt_join {
            match self.nt_word_end(i, j) {
                Ok(e) => j = e,
                Err(k) => return k,
            }
        }
        if let Some(k) = self.dot_hyphen_word(i, j, frac) {
            return k;
        }
        if let Some(k) = self.fraction_candidate(i, j, frac) {
            return k;
        }
        if scan.seg_apos {
            return self.apos_segment_word(i, j);
        }
        let after = [
            Self::currency_code,
            Self::c_sharp,
            Self::dropped_g,
            Self::period_before_comma,
            Self::apos_letter_period,
            Self::acronym_hyphen_word,
            Self::abbreviation_period,
            Self::apos_entity_after_word,
            Self::elision_entity,
            Self::special_before_clitic,
            Self::special_first_part,
        ];
        for rule in after {
            if let Some(k) = rule(self, i, j) {
                return k;
            }
        }
        self.emit_word(&b[i..j]);
        j
    }

    /// `Some(n)` unless the word rule alone (no `www.` or file-name rule) takes more than `n`
    /// characters from `i` (the longer match wins: `www.x2.AYı`, `www.a.coé`, `D.C.`,
    /// `2.x.-o` are words).
    ///
    /// The measuring lexer is kept: it is asked at each token of a run (`x_;x_;…` asks at each
    /// `x_`), and a fresh one read the run again each time, which took the caption's length
    /// squared (40,000 characters 0.4 s). Its kept runs are facts about places in the text
    /// that hold whatever asked, but one (`no_at_before`) holds only for places after those
    /// it was asked about: a measure from an earlier place than the last gets a fresh lexer
    /// (the lexer it serves asks in order, at the place it reads).
    pub(super) fn longer_than_word(&self, i: usize, n: usize) -> Option<usize> {
        let Ok(mut kept) = self.measurer.try_borrow_mut() else {
            // (not reached: a measuring lexer measures with a lexer of its own)
            let mut lx = Lexer::new(self.buf, self.end, String::new(), true);
            return (lx.word(i) <= i + n).then_some(n);
        };
        if kept.as_ref().is_some_and(|(_, last)| i < *last) {
            *kept = None;
        }
        let (lx, last) = kept.get_or_insert_with(|| {
            let lx = Lexer::new(self.buf, self.end, String::new(), true);
            (Box::new(lx), i)
        });
        *last = i;
        lx.out.clear();
        (lx.word(i) <= i + n).then_some(n)
    }
}
