//! The byte-level fast path for the common caption shape (ASCII letters, spaces, `,`, `.`,
//! letter-hyphen-letter joins), equal to the general scanner where it answers.

use super::abbreviations::is_listed_abbrev;
use super::apostrophes::split_special_bytes;

/// Fast path for the common caption shape, `None` when the general scanner is needed.
///
/// Handles captions made only of ASCII letters, spaces, LF, `,`, `.` and hyphens strictly
/// between two letters. On such input the scanner's result is: every maximal run of letters
/// and letter-hyphen-letter joins is one word (lower-cased; `cannot`/`gonna`/... split), every
/// other character is either skipped (space, LF) or becomes a punctuation token that the
/// filter removes (`,`, `.`, `...`). It bails out (returns `None`) whenever another rule could
/// apply: a period between two letters (acronyms, `a.b`), a period after a single letter or
/// after a listed abbreviation (the only places where the following text matters), a period
/// directly followed by a comma (it stays on the word), or a hyphen not between letters.
/// Equivalence with the general path is checked on all goldens and by a differential proptest.
pub(super) fn fast_tokenize(caption: &str) -> Option<String> {
    let b = caption.as_bytes();
    let n = b.len();
    let mut out = String::with_capacity(n + 2);
    let mut i = 0;
    while i < n {
        let c = b[i];
        if !c.is_ascii_alphabetic() {
            match c {
                b' ' | b'\n' | b',' | b'.' => {
                    i += 1;
                    continue;
                }
                _ => return None,
            }
        }
        let start = i;
        i += 1;
        loop {
            while i < n && b[i].is_ascii_alphabetic() {
                i += 1;
            }
            if i + 1 < n && b[i] == b'-' && b[i + 1].is_ascii_alphabetic() {
                i += 2;
                continue;
            }
            break;
        }
        let w = &b[start..i];
        match b.get(i) {
            Some(b'.')
                if w.len() == 1
                    || (i + 1 < n && (b[i + 1].is_ascii_alphabetic() || b[i + 1] == b','))
                    || is_listed_abbrev(w) =>
            {
                return None
            }
            Some(b'-') => return None,
            // A run of `,` / `.` glued to a word on both sides can join them (`gonna,figs`,
            // `a,,x-ray`, `dog..x-ray`): the scanner decides.
            Some(b',' | b'.')
                if b[i..]
                    .iter()
                    .find(|&&c| c != b',' && c != b'.')
                    .is_some_and(|&c| c != b' ' && c != b'\n') =>
            {
                return None
            }
            _ => {}
        }
        if !out.is_empty() {
            out.push(' ');
        }
        if w.len() == 5 || w.len() == 6 {
            if let Some((x, y)) = split_special_bytes(w) {
                out.push_str(x);
                out.push(' ');
                out.push_str(y);
                continue;
            }
        }
        // ASCII boundaries: a valid slice of the caption; lower-cased once at the end.
        out.push_str(&caption[start..i]);
    }
    out.make_ascii_lowercase();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_path_bails_out_where_needed() {
        for s in [
            "a dog a.",
            "Mr. Smith",
            "U.S. flag",
            "a.b",
            "St.",
            "no.",
            "dog.,",
            "a-",
            "-a",
            "a--b",
            "it's",
            "1 dog",
            "a\r\nb",
            "a\tb",
            "caf\u{e9}",
            "Co.",
            "etc.",
            "Calif.",
        ] {
            assert!(fast_tokenize(s).is_none(), "{s:?}");
        }
        assert_eq!(
            fast_tokenize("A Dog, cannot.. GONNA-be x-ray\n").as_deref(),
            Some("a dog can not gonna-be x-ray")
        );
        assert_eq!(fast_tokenize("Cannot").as_deref(), Some("can not"));
    }
}
