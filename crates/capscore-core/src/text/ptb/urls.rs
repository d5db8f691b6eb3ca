//! URLs, e-mail addresses, file names, handles and hashtags.
//!
//! `http://…`, `www.…`, `host.com/path`, runs that reach a `.com`-like ending, e-mail-like
//! tokens, file names with a known extension (`photo.jpg`), `@user`, `#hashtag`.

use super::abbreviations::breaks_before_letter;
use super::classes::letter_entity_len;
use super::classes::{is_alnum, is_letter, is_mark, is_trail_space, java_lower, lower_eq_at};
use super::lexer::{EmailRun, Lexer};

/// Characters that end an e-mail-like token (observed: most other characters, including
/// symbols, zero-width and most Unicode spaces, stay inside).
pub(super) fn is_email_stop(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\n' | '\u{A0}' | '"' | '(' | ')' | '<' | '>' | '{' | '}' | '|'
    )
}

/// Where the run of characters `ok` accepts and letter entities that starts at `from` ends,
/// at most `to`.
fn word_run_end(b: &[char], mut from: usize, to: usize, ok: impl Fn(char) -> bool) -> usize {
    while from < to {
        from += if ok(b[from]) {
            1
        } else {
            match letter_entity_len(b, from, to) {
                0 => break,
                len => len,
            }
        };
    }
    from
}

/// True when `ext` (ASCII letters and digits) is one of [`FILE_EXT`], in any case.
fn is_file_ext(ext: &[char]) -> bool {
    FILE_EXT.iter().any(|x| {
        x.len() == ext.len()
            && x.bytes()
                .zip(ext)
                .all(|(a, &c)| c.to_ascii_lowercase() == char::from(a))
    })
}

/// File-name extensions (observed: each probed as `a\u{AD}b.EXT`, where only a file name keeps
/// the soft hyphen; all one- and two-letter extensions and ~150 common longer ones were tried).
pub(super) const FILE_EXT: &[&str] = &[
    "bat", "bmp", "c", "cgi", "class", "cpp", "dll", "doc", "docx", "exe", "gif", "gz", "h", "htm",
    "html", "jar", "java", "jpeg", "jpg", "mov", "mp3", "pdf", "php", "pl", "png", "ppt", "ps",
    "py", "sql", "tar", "txt", "wav", "x", "xml", "zip",
];

/// The [`EmailRun`] of `b[start..stop]`, a run of characters other than [`is_email_stop`]'s.
///
/// Observed: the longest match over the `@` that starts the host part: after it, a period
/// must sit between two other characters, else the token ends before it (`x@z..b` →
/// `x@z`, but `x@z..@b`, `a@.@b`, `d@@.x` are one token). Read once from the right (a
/// token of 40,000 characters of `a@b.` took 0.12 s when each `@` searched to the end, and
/// 40,000 of `a@.b` 0.28 s when each token read the run again): `next` is the first such
/// period after the position, and a period right after an `@` ends its host part at once.
fn read_email_run(b: &[char], start: usize, stop: usize) -> EmailRun {
    let mut best = vec![0; stop - start];
    let mut farthest = 0;
    let mut next = None;
    for p in (start..stop).rev() {
        if b[p] == '@' {
            let j = if p + 1 < stop && b[p + 1] == '.' {
                p + 1
            } else {
                next.unwrap_or(stop)
            };
            if j > p + 1 {
                farthest = farthest.max(j + 1);
            }
        } else if b[p] == '.' && p > start && (b[p - 1] == '.' || p + 1 == stop || b[p + 1] == '.')
        {
            next = Some(p);
        }
        best[p - start] = farthest;
    }
    EmailRun { start, stop, best }
}

impl Lexer<'_> {
    /// E-mail-like token at `i`: `<`? ASCII letter or digit, then any run of characters other
    /// than the terminators of [`is_email_stop`] containing an `@` with something after it;
    /// trailing periods are left out, a directly following `>` is taken in.
    pub(super) fn email(&mut self, i: usize) -> Option<usize> {
        let b = self.buf;
        if i < self.no_at_before {
            return None;
        }
        let mut j = i;
        if b[j] == '<' {
            j += 1;
        }
        if !(j < self.end && b[j].is_ascii_alphanumeric()) {
            return None;
        }
        // A run up to the next terminator is asked about from each token in it, so it is read
        // once ([`read_email_run`]); a later start inside it finds its answer there.
        let run = &self.email_run;
        if !(run.start <= j && j < run.stop) {
            let mut stop = j;
            let mut any_at = false;
            while stop < self.end && !is_email_stop(b[stop]) {
                any_at |= b[stop] == '@';
                stop += 1;
            }
            if !any_at {
                self.no_at_before = stop;
                return None;
            }
            self.email_run = read_email_run(b, j, stop);
        }
        let run = &self.email_run;
        let best = run.best[j - run.start];
        let mut j = best.checked_sub(1)?;
        if j < self.end && b[j] == '>' {
            j += 1;
        }
        Some(j - i)
    }

    /// `www.host.tld/path` or `host.(com|net|org|edu)/path` with a path of at least two
    /// characters (observed), up to the URL stop characters.
    pub(super) fn likely_url(&self, i: usize) -> Option<usize> {
        let b = self.buf;
        // A host-like run is scanned from each token in it (`-1-1-1...` is a token per `-1`):
        // the last run's end is kept (a caption of 40,000 characters of `-1` took 0.62 s).
        let (start, end) = self.host_run.get();
        let j = if start <= i && i < end {
            end
        } else {
            let mut j = i;
            while j < self.end && (b[j].is_ascii_alphanumeric() || matches!(b[j], '.' | '-')) {
                j += 1;
            }
            self.host_run.set((i, j));
            j
        };
        if j >= self.end || b[j] != '/' {
            return None;
        }
        // Observed: case-sensitive (`X.com/ab` is not a URL).
        let host: String = b[i..j].iter().collect();
        // Observed: no empty part in the host name (`www../ab`, `www.a./cd` are not URLs).
        if host.contains("..") || host.ends_with('.') {
            return None;
        }
        // Observed: the last part of a `www.` host is two or more ASCII letters
        // (`www.b.c/dg`, `www.ab.c1/ef` are not URLs).
        let last = host.rsplit('.').next().unwrap_or("");
        let www = host.to_ascii_lowercase().starts_with("www.")
            && host[4..].contains('.')
            && (2..=4).contains(&last.len())
            && last.bytes().all(|c| c.is_ascii_alphabetic());
        // Observed: the top-level domain in any case, the name before it lower-case letters
        // and periods (`x.CoM/th` is a URL, `xX.com/ab`, `ab1.com/ef`, `a-b.com/ef` are not).
        let lhost = host.to_ascii_lowercase();
        let tld = [".com", ".net", ".org", ".edu"]
            .iter()
            .any(|t| lhost.ends_with(t) && host.len() > t.len())
            && host[..host.len() - 4]
                .bytes()
                .all(|c| c.is_ascii_lowercase() || c == b'.');
        if !(www || tld) {
            return None;
        }
        let mut k = j + 1;
        while k < self.end && !matches!(b[k], ' ' | '\t' | '\n' | '"' | '<' | '>' | ')' | '(' | '|')
        {
            k += 1;
        }
        // Observed: a final `;` or `:` stays (`x.com/ab;`), a final `}` goes (`s.net/xy}`,
        // but `x.com/a}b`).
        // (and `{`: `x.com/pq{` → `x.com/pq` `{`, observed)
        while k > j + 1 && matches!(b[k - 1], '.' | ',' | '!' | '?' | '-' | '}' | '{') {
            k -= 1;
        }
        // Lengths are counted in UTF-16 code units, as Java does.
        if b[j + 1..k].iter().map(|c| c.len_utf16()).sum::<usize>() < 2 {
            return None;
        }
        Some(k - i)
    }

    /// A file name: name parts of letters, digits, combining marks (any script, soft hyphens
    /// included) and letter entities (`2&eacute;.c`) joined by single periods, then a period
    /// and an extension of [`FILE_EXT`] (any case), followed by a line break, a space-like
    /// character or `. , ! ?` (observed: `5.c`, `5.D.C`, `0.x.c`, `5.docx`, `5\u{301}.c`; but
    /// `5.c-`, `5.c)`, `5.c\u{200B}` → `5 . c`, and at the end of the stream). The greedy name
    /// reaches the last extension (`5.c.c`). Returns the end of the token; the text keeps its
    /// soft hyphens (`a\u{AD}b.c`).
    pub(super) fn filename(&self, i: usize) -> Option<usize> {
        let b = self.buf;
        // (a letter entity is a name character: `2&eacute;.c`, `\u{AD}.&eacute;.c`, observed)
        let name_len = |q: usize| {
            if is_alnum(b[q]) {
                1
            } else {
                letter_entity_len(b, q, self.end)
            }
        };
        let first = name_len(i);
        if first == 0 {
            return None;
        }
        // A run is asked about at each of its parts (`a.1a.1a.1…` is a token per part, and the
        // scan and the extensions took its length squared: 10,000 characters 0.75 s): the scan
        // from any place it stepped on ends where the whole run's did, and the file name found
        // from `i` is the one with the last good period after `i`, so one scan per run serves
        // every place on its grid.
        let run = &self.file_run;
        if run.start.get() <= i && i < run.end.get() {
            let grid = run.grid.borrow();
            if grid.is_empty() || grid[i - run.start.get()] {
                return (run.period.get() > i).then(|| run.name_end.get());
            }
        }
        // The places the scan steps on, kept only once it steps over an entity (`grid` empty:
        // every place of the run).
        let mut grid = run.grid.borrow_mut();
        grid.clear();
        let mut step = |at: usize, n: usize| {
            if n > 1 && grid.is_empty() {
                grid.resize(at - i, true);
            }
            if n > 1 || !grid.is_empty() {
                grid.push(true);
                grid.extend(std::iter::repeat_n(false, n - 1));
            }
        };
        step(i, first);
        let mut q = i + first;
        // (marks only where they are letters: `S\u{20DD}.c` → `s` `.` `c`, observed)
        while q < self.end {
            let n = if b[q] == '.' && b[q - 1] != '.' {
                1
            } else {
                name_len(q)
            };
            if n == 0 {
                break;
            }
            step(q, n);
            q += n;
        }
        // (the end of the caption only when a line break follows: as the last caption of the
        // stream a file name is no token, `5.c` → `5` `.` `c`, observed)
        let follower_ok = |e: usize| {
            if e >= self.end {
                return b.len() > self.end;
            }
            is_trail_space(b[e]) || matches!(b[e], '.' | ',' | '!' | '?')
        };
        let found = (i + 1..q).rev().find_map(|p| {
            if b[p] != '.' {
                return None;
            }
            let mut e = p + 1;
            while e < q && b[e].is_ascii_alphanumeric() {
                e += 1;
            }
            if e == p + 1 || (e < q && b[e] != '.') || !follower_ok(e) {
                return None;
            }
            is_file_ext(&b[p + 1..e]).then_some((p, e))
        });
        run.start.set(i);
        run.end.set(q);
        run.period.set(found.map_or(0, |f| f.0));
        run.name_end.set(found.map_or(0, |f| f.1));
        found.map(|f| f.1)
    }

    /// `www.` (any case), a host part holding a symbol, a period and a top-level domain of two
    /// or more ASCII letters, with an optional path of at least two characters (observed:
    /// `www./.co`, `www.&.co.uk`, `www.a-.co`, `www.\u{200B}.co`, `www.&.co/ab`). The host part
    /// is greedy: the token ends at the last such domain the run reaches (`www.&.co.u` →
    /// `www.&.co` `.` `u`, `www.&.co5` → `www.&.co` `5`). Hosts of word characters only are
    /// left to the word rule, which is then the longer match (`www.a.coé`) or wins the tie
    /// (`www.\u{AD}.co` → `www..co`).
    pub(super) fn www_url(&self, i: usize) -> Option<usize> {
        let b = self.buf;
        if !(lower_eq_at(b, i, self.end, "www.")) {
            return None;
        }
        // Observed: these characters (and whitespace) end the host part.
        let host_char = |c: char| {
            !matches!(
                c,
                ' ' | '\t' | '\n' | '!' | ',' | '<' | '>' | '?' | '{' | '|' | '}' | '"' | '(' | ')'
            )
        };
        let mut q = i + 4;
        while q < self.end && host_char(b[q]) {
            q += 1;
        }
        let tld_len = |p: usize| {
            let mut e = p + 1;
            while e < q && b[e].is_ascii_alphabetic() {
                e += 1;
            }
            e - p - 1
        };
        // Observed: no empty part (`www../.ip`, `www.x../.om` are not one).
        if q == i + 4 || b[i + 4] == '.' {
            return None;
        }
        // Observed: the longest match over the `.domain` chosen (`www./.et/.zt;` is one token,
        // with the path `/.zt;`).
        let mut best = None;
        for p in (i + 5..q).filter(|&p| b[p] == '.' && tld_len(p) >= 2) {
            if b[i + 4..=p].windows(2).any(|w| w == ['.', '.']) {
                continue;
            }
            // Observed: the domain takes at most four letters (`www.\u{A0}.stree` → `…stre` `e`).
            let e = p + 1 + tld_len(p).min(4);
            let mut n = e;
            if e < self.end && b[e] == '/' {
                let mut k = e + 1;
                while k < self.end
                    && !matches!(b[k], ' ' | '\t' | '\n' | '"' | '<' | '>' | ')' | '(' | '|')
                {
                    k += 1;
                }
                while k > e + 1 && matches!(b[k - 1], '.' | ',' | '!' | '?' | '-' | '}' | '{') {
                    k -= 1;
                }
                if b[e + 1..k].iter().map(|c| c.len_utf16()).sum::<usize>() >= 2 {
                    n = k;
                }
            }
            best = best.max(Some(n));
        }
        let n = best? - i;
        // (a host of letters, letter entities, digits and periods, soft hyphens counted as
        // letters, and no path: the word rule wins a tie and deletes the soft hyphens,
        // `www.\u{AD}.co` → `www..co`, `www.\u{AD}&eacute;.tc`; `www.&\u{AD}.co` and
        // `www.\u{AD}.co/ab` keep them, observed)
        if word_run_end(b, i + 4, i + n, |c| is_alnum(c) || c == '.') == i + n {
            return self.longer_than_word(i, n - 1).map(|_| n);
        }
        self.longer_than_word(i, n)
    }

    /// A run of characters that starts with a symbol (or a no-break space) and reaches a
    /// `.com`, `.net`, `.org` or `.edu` (any case) is one token, with an optional path of at
    /// least two characters (observed: `+.com`, `\u{A0}.com`, `\u{2019}.org/ab`).
    pub(super) fn dotcom(&mut self, i: usize) -> Option<usize> {
        let b = self.buf;
        if i < self.no_dotcom_before {
            return None;
        }
        let stop = |c: char| matches!(c, ' ' | '\t' | '\n' | '"' | '<' | '>' | '(' | ')' | '|');
        // Observed: lower-case ASCII letters, `# % & * + ~`, periods and any non-ASCII
        // character (no-break and zero-width spaces included) make up the run; an ASCII digit
        // ends it (`&a5&.com` → `&` `a5` `&.com`, `&a.com5.org`).
        let inside = |c: char| {
            c.is_ascii_lowercase()
                || matches!(c, '#' | '%' | '&' | '*' | '+' | '~' | '.')
                || (c.is_ascii_control() && !matches!(c, '\t' | '\n'))
                || !c.is_ascii()
        };
        // Observed: not from a soft hyphen before a period or a letter (`\u{AD}.org` →
        // `.org`, `\u{AD}i.com` → `i.com`) unless a path follows (`\u{AD}.com/at` and
        // `\u{AD}x.com/at` keep it), nor from a space-like character after another (the run
        // of spaces is one separator: ` \u{200A}.org`).
        let mut shy_led =
            b[i] == '\u{AD}' && self.at(i + 1).is_some_and(|c| c == '.' || is_alnum(c));
        if b[i] == '.'
            || b[i].is_ascii_digit()
            || !inside(b[i])
            || (is_trail_space(b[i]) && b[i] != '\u{85}' && i > 0 && is_trail_space(b[i - 1]))
        {
            return None;
        }
        // Observed: the run is greedy, the token ends at the LAST `.tld` the run reaches (any
        // case; the letters of the run itself are lower case), so `ä.com&.com`, `&.com.org`
        // and `&x.com~y.net` are one token but `&.Com.org` is `&.com` `.` `org`.
        // Observed: two periods end the run (`#..x.com` → `#` `..` `x.com`).
        let mut q = i + 1;
        while q < self.end && inside(b[q]) && !(b[q] == '.' && b[q - 1] == '.') {
            q += 1;
        }
        let is_tld = |p: usize| {
            b[p] == '.'
                && p + 4 <= self.end
                && ["com", "net", "org", "edu"].iter().any(|t| {
                    b[p + 1..p + 4]
                        .iter()
                        .map(|c| c.to_ascii_lowercase())
                        .eq(t.chars())
                })
        };
        // Observed: not after an ASCII digit or another period (`+5.org` → `+5 org`,
        // `→..com`, `&.com5.org` → `&.com` `5` `org`; but `۲.com`).
        let Some(p) = (i + 1..q)
            .rev()
            .find(|&p| is_tld(p) && !(b[p - 1].is_ascii_digit() || b[p - 1] == '.'))
        else {
            // The same holds for every later start inside this run.
            self.no_dotcom_before = q;
            return None;
        };
        if b[i..p]
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || c == '.')
        {
            return None; // an ordinary word or host
        }
        // (the soft hyphen starts it when a symbol follows in the run: `\u{AD}i\u{2060}.com`;
        // an ASCII word with soft hyphens is one only with a path: `o\u{AD}.com` → `o.com`,
        // `x\u{AD}.com/at`, observed)
        shy_led = (shy_led && b[i + 1..p].iter().all(|&c| is_alnum(c) || c == '.'))
            || b[i..p]
                .iter()
                .all(|&c| c.is_ascii_alphanumeric() || c == '.' || c == '\u{AD}');
        // Observed: nothing goes on after the `.tld` (`&.comh` → `&.com h`, `&.com.a`), unless
        // the run before it is a word of letters, digits and marks, which the word rule
        // continues as the longer match (`語.comW`, `ä\u{301}.comh`).
        let mut e = p + 4;
        let wordy = is_letter(b[i])
            && b[i..p]
                .iter()
                .all(|&c| is_alnum(c) || is_mark(c) || c == '.');
        if wordy {
            // (a period then a digit does not go on: `º.com.5` → `º.com` `.5`; `.` `!` `?`
            // before a letter or letter entity and letter entities do: `é.com?e`,
            // `é.com.&eacute;`, `é.com&eacute;`, as in any word; `é.com?1`, `é.com&amp;` stop)
            let letter_at = |q: usize| {
                q < self.end && (is_letter(b[q]) || letter_entity_len(b, q, self.end) > 0)
            };
            while e < self.end {
                if is_alnum(b[e]) || (matches!(b[e], '.' | '!' | '?') && letter_at(e + 1)) {
                    e += 1;
                } else if b[e] == '&' && letter_entity_len(b, e, self.end) > 0 {
                    e += letter_entity_len(b, e, self.end);
                } else {
                    break;
                }
            }
        }
        // (no path after letters the word rule went on with: `な.com1/2/` → `な.com1` `/` ...)
        if e == p + 4 && e < self.end && b[e] == '/' {
            let mut k = e + 1;
            while k < self.end && !stop(b[k]) {
                k += 1;
            }
            // Observed: a final `-` is left out too (`›.com/h-`).
            while k > e + 1 && matches!(b[k - 1], '.' | ',' | '!' | '?' | '-' | '}' | '{') {
                k -= 1;
            }
            if b[e + 1..k].iter().map(|c| c.len_utf16()).sum::<usize>() >= 2 {
                return Some(k - i);
            }
        }
        if shy_led {
            return None;
        }
        // Observed: after a word, a period that `,` `;` `:` or `、` follow stays (`語.com.,` →
        // `語.com.` `,`; but `&.com.,` → `&.com` `.` `,`).
        if wordy
            && e + 1 < self.end
            && b[e] == '.'
            && matches!(b[e + 1], ',' | ';' | ':' | '\u{3001}')
        {
            e += 1;
        }
        Some(e - i)
    }

    pub(super) fn url(&self, i: usize) -> Option<usize> {
        let b = self.buf;
        let pre: &[&str] = &["http://", "https://"];
        for p in pre {
            let n = p.len();
            if lower_eq_at(b, i, self.end, p) {
                let mut j = i + n;
                // Observed: `|`, `{` and `}` end it too (not in the other URL forms).
                while j < self.end
                    && !matches!(
                        b[j],
                        ' ' | '\t' | '\n' | '"' | '<' | '>' | ')' | '(' | '|' | '{' | '}'
                    )
                {
                    j += 1;
                }
                // Observed: trailing `-` is trimmed too (`http://ab-` → `http://ab -`).
                while j > i + n && matches!(b[j - 1], '.' | ',' | '!' | '?' | '-') {
                    j -= 1;
                }
                // Observed: at least two characters after the `://`.
                if b[i + n..j].iter().map(|c| c.len_utf16()).sum::<usize>() < 2 {
                    return None;
                }
                return Some(j - i);
            }
        }
        None
    }
}

impl Lexer<'_> {
    /// A run that starts with a symbol and reaches a `.com`-like ending (see
    /// [`Lexer::dotcom`]), unless an e-mail-like token or a `www.` host from here is longer
    /// (`u\u{FEFF}.org@e`, `www.’.comT` → `www.’.comt`). A word's soft hyphens are deleted
    /// (`é\u{AD}.com` → `é.com`), not those of a run with a symbol or a path
    /// (`\u{AD}i\u{2060}.com`, `x\u{AD}.com/at`), observed.
    pub(super) fn symbol_dotcom(&mut self, i: usize) -> Option<usize> {
        let n = self
            .dotcom(i)
            .filter(|&n| self.email(i).is_none_or(|m| m <= n))
            .filter(|&n| self.www_url(i).is_none_or(|m| m <= n))?;
        // (a word goes on with letter entities and `!` / `?` joins: `é.com&eacute;\u{AD}` →
        // `é.com&eacute;`, `é.com\u{AD}&eacute;`, observed)
        let b = self.buf;
        let joined = |c: char| is_alnum(c) || is_mark(c) || matches!(c, '.' | '!' | '?');
        let word = (is_letter(b[i]) && word_run_end(b, i, i + n, joined) == i + n)
            || b[i..i + n]
                .iter()
                .all(|&c| is_alnum(c) || is_mark(c) || c == '.');
        let t: String = b[i..i + n]
            .iter()
            .filter(|&&c| !(word && c == '\u{AD}'))
            .collect();
        self.emit(&java_lower(&t));
        Some(i + n)
    }

    /// The longest of the URL shapes and an e-mail-like token, a URL on a tie (observed:
    /// `http://a@-` keeps its `-`, `http://@語\u{A0}h` is a URL, `www.com/.HL#` and
    /// `www.b.uk/@o\u{A0}S` are one token). URLs keep soft hyphens.
    pub(super) fn url_or_email(&mut self, i: usize) -> Option<usize> {
        let url = self.url(i).or_else(|| {
            let w = if self.measuring {
                None
            } else {
                self.www_url(i)
            };
            w.max(self.likely_url(i))
        });
        let n = self
            .email(i)
            .filter(|&n| url.is_none_or(|u| n > u))
            .or(url)?;
        let t = self.buf[i..i + n].to_vec();
        self.emit_lower_kept(&t);
        Some(i + n)
    }

    /// File names, unless the word rule is longer (`D.C.`, `a.c!x`, `2.x.-o`) or the name is
    /// an abbreviation that splits before a letter (`co.c` → `co.` `c`); the text keeps its
    /// soft hyphens (`a\u{AD}b.c`). The name must be longer than the abbreviation, its
    /// period and one more character (`co.c`, `Ph.D.c` → `ph.d.` `c`; but `co.txt`,
    /// `etc.3.c`), observed.
    pub(super) fn file_name_word(&mut self, i: usize) -> Option<usize> {
        if self.measuring {
            return None;
        }
        let b = self.buf;
        let e = self.filename(i)?;
        let abbr = (i..e).any(|p| b[p] == '.' && e <= p + 2 && breaks_before_letter(&b[i..p]));
        if !abbr && self.longer_than_word(i, e - i).is_some() {
            let t: String = b[i..e].iter().collect();
            self.emit(&java_lower(&t));
            return Some(e);
        }
        None
    }

    /// `@handle`: `@`, then ASCII letters, digits and underscores, observed.
    pub(super) fn handle(&mut self, i: usize) -> usize {
        let mut j = i + 1;
        while j < self.end && (self.buf[j].is_ascii_alphanumeric() || self.buf[j] == '_') {
            j += 1;
        }
        let t = self.buf[i..j].to_vec();
        self.emit_lower(&t);
        j
    }

    /// `#hashtag`: `#`, then letters and letter entities (`#&eacute;a`, `#s&EACUTE;`); soft
    /// hyphens stay in it (`#\u{AD}`), observed.
    pub(super) fn hashtag(&mut self, i: usize) -> usize {
        let mut j = i + 1;
        loop {
            if j < self.end && is_letter(self.buf[j]) {
                j += 1;
            } else if letter_entity_len(self.buf, j, self.end) > 0 {
                j += letter_entity_len(self.buf, j, self.end);
            } else {
                break;
            }
        }
        let t: String = self.buf[i..j].iter().collect();
        self.emit(&java_lower(&t));
        j
    }
}

#[cfg(test)]
mod tests {
    use crate::text::ptb::tests::{check_cases, check_lines};

    /// Observed lines: input, the reference's raw output line (next line lower case;
    /// `tests/fixtures/tokenizer/samples.json`).
    const LINES: &[(&str, &str)] = &[
        (".NET", ". net"),
        ("@user", "@user"),
        ("#hashtag", "#hashtag"),
        ("example.com", "example.com"),
        ("www.example.com", "www.example.com"),
        ("user@example.com", "user@example.com"),
        ("http://a.b/c?d=e&f=g", "http://a.b/c?d=e&f=g"),
        ("https://example.com/a_b", "https://example.com/a_b"),
    ];

    /// Observed cases: caption, next line, tokenized caption after the punctuation filter
    /// (`tests/fixtures/tokenizer/fuzz_regressions*.jsonl.gz`).
    const CASES: &[(&str, &str, &str)] = &[
        ("#a1", "t", "#a 1"),
        ("#x2", ".", "#x 2"),
        ("..com_", ".", "com _"),
        ("4@¥", "\u{91}", "4@¥"),
        ("5,5.c", "x", "5,5 c"),
        ("@b.d", "t", "@b d"),
        ("HTTP:///@-", ".", "http:///@-"),
        ("N.COM/I'", "\"", "n.com / i"),
        ("N@,", "\u{200C}", "n@,"),
        ("O@:", ".", "o@:"),
        ("WWW.B.UK/NE", "!", "www.b.uk/ne"),
        ("X@y.z", "t'cause", "x@y.z"),
        ("a.org/k'", "f", "a.org/k'"),
        ("http://e:", "n", "http://e:"),
        ("www../.am", "\"", "www / am"),
        ("www.b.uk/ne", ".", "www.b.uk/ne"),
        ("x.Com/H{", "<", "x.com / h -lcb-"),
        ("x.com/p-", "æ", "x.com / p"),
        ("x.com/path.JAMES'S'", "\u{1680}.org", "x.com/path.james's'"),
        ("x@−", "\"", "x@−"),
        ("x\u{AD}.com/at", "x", "x\u{AD}.com/at"),
        ("you\u{A0}12@user.", "a’ww.bb", "you 12@user"),
        (
            "ΔΥΣΣΕΥς'http://a.b/c.",
            "\u{FEFF}N.Y.&US$.Über’&apos;.",
            "δυσσευς http://a.b/c",
        ),
        ("₩X.Com", "`", "x.com"),
    ];

    #[test]
    fn observed_lines() {
        check_lines(LINES);
    }

    #[test]
    fn observed_cases() {
        check_cases(CASES);
    }

    /// Observed (issue 26, fuzz round 9): a letter entity is a name character of a file name
    /// (`2&eacute;.C` → `2&eacute;.c`, where the word rule splits `2` `&eacute;`). Caption,
    /// next line, tokenized caption.
    const FILE_NAME_ENTITY_CASES: &[(&str, &str, &str)] = &[
        ("2&eacute;.C", "x", "2&eacute;.c"),
        ("2.&eacute;.c", "x", "2.&eacute;.c"),
        ("2&eacute;a.c", "x", "2&eacute;a.c"),
        ("2&eacute;4.c", "x", "2&eacute;4.c"),
        ("2&eacute;.x", "x", "2&eacute;.x"),
        ("2&eacute;.cx", "x", "2 &eacute;.cx"),
        ("2&amp;.c", "x", "2 & c"),
        ("2&eacute;;.c", "x", "2 &eacute; c"),
        ("2&eacute;", "x", "2 &eacute;"),
        ("2&eacute;.a", "x", "2 &eacute;.a"),
    ];

    #[test]
    fn observed_file_name_entity() {
        check_cases(FILE_NAME_ENTITY_CASES);
    }
}
