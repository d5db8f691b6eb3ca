//! WordNet synonym lookup as METEOR 1.5 does it (spec METEOR §5.4), from the jar's
//! `synonym/english.synsets` and `synonym/english.exceptions` (WordNet 3.0 licence; see
//! `COPYING.WORDNET` next to them in the cache). Loadable on its own so that other metrics
//! (SPICE) can share it. Built from the files' texts ([`Synonyms::from_texts`]); reading them is
//! the `resources` module's job, never this one's.

use rustc_hash::FxHashMap;

/// Synset ids per lemma plus the inflected-form → base-forms exceptions.
#[derive(Debug, Default)]
pub struct Synonyms {
    synsets: FxHashMap<Box<str>, Box<[u32]>>,
    exceptions: FxHashMap<Box<str>, Vec<Box<str>>>,
}

/// Morphy-style detachment rules (suffix, replacement), in the reference's order.
const RULES: [(&str, &str); 20] = [
    ("s", ""),
    ("ses", "s"),
    ("xes", "x"),
    ("zes", "z"),
    ("ches", "ch"),
    ("shes", "sh"),
    ("men", "man"),
    ("ies", "y"),
    ("s", ""),
    ("ies", "y"),
    ("es", "e"),
    ("es", ""),
    ("ed", "e"),
    ("ed", ""),
    ("ing", "e"),
    ("ing", ""),
    ("er", ""),
    ("est", ""),
    ("er", "e"),
    ("est", "e"),
];

impl Synonyms {
    /// Parses the two files' texts (two-line records: key / ids, base / inflected forms).
    pub fn from_texts(synsets: &str, exceptions: &str) -> Result<Synonyms, String> {
        let mut map = FxHashMap::default();
        map.reserve(150_000);
        let mut lines = synsets.split('\n');
        while let Some(key) = lines.next() {
            let key = key.strip_suffix('\r').unwrap_or(key);
            if key.is_empty() {
                continue;
            }
            let ids_line = lines
                .next()
                .ok_or_else(|| format!("synset key {key:?} without id line"))?;
            let mut ids = Vec::new();
            for t in ids_line.split_ascii_whitespace() {
                ids.push(
                    t.parse::<u32>()
                        .map_err(|_| format!("bad synset id {t:?} for {key:?}"))?,
                );
            }
            ids.sort_unstable();
            ids.dedup();
            map.insert(Box::from(key), ids.into_boxed_slice());
        }
        let mut exc: FxHashMap<Box<str>, Vec<Box<str>>> = FxHashMap::default();
        let mut lines = exceptions.split('\n');
        while let Some(base) = lines.next() {
            let base = base.strip_suffix('\r').unwrap_or(base);
            if base.is_empty() {
                continue;
            }
            let forms = lines.next().unwrap_or("");
            for f in forms.split_ascii_whitespace() {
                exc.entry(Box::from(f)).or_default().push(Box::from(base));
            }
        }
        Ok(Synonyms {
            synsets: map,
            exceptions: exc,
        })
    }

    /// Number of lemmas with synsets.
    pub fn len(&self) -> usize {
        self.synsets.len()
    }

    /// True when nothing is loaded.
    pub fn is_empty(&self) -> bool {
        self.synsets.is_empty()
    }

    /// The synset ids listed for exactly `key`, or `None` when `key` is not in the file.
    pub fn direct(&self, key: &str) -> Option<&[u32]> {
        self.synsets.get(key).map(|b| &b[..])
    }

    /// The base forms `english.exceptions` lists for the inflected form `form`, in file order.
    pub fn exception_bases(&self, form: &str) -> Option<&[Box<str>]> {
        self.exceptions.get(form).map(|v| &v[..])
    }

    /// `SYN(w)`: the synset ids listed for exactly `w` (sorted, deduplicated).
    pub fn syn(&self, w: &str) -> &[u32] {
        self.synsets.get(w).map(|b| &b[..]).unwrap_or(&[])
    }

    /// The morphy-style fallback `morph(w)` (spec §5.4); `None` = no synsets.
    pub fn morph<'a>(&self, w: &'a str) -> Option<std::borrow::Cow<'a, str>> {
        // The reference's 'ful' suffix re-attachment can never fire: no rule matches a word
        // ending in "l" (spec §5.4).
        morph_with(w, |cand| self.synsets.contains_key(cand))
    }

    /// `S(w) = SYN(w) ∪ STEMSYN(w)`, sorted and deduplicated.
    pub fn synset_ids(&self, w: &str) -> Vec<u32> {
        let mut out: Vec<u32> = self.syn(w).to_vec();
        if let Some(bases) = self.exceptions.get(w) {
            for b in bases {
                out.extend_from_slice(self.syn(b));
            }
        } else if let Some(m) = self.morph(w) {
            out.extend_from_slice(self.syn(&m));
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// True if `a` and `b` share a synset id (ignores the hash-equality exclusion of the
    /// METEOR matcher).
    pub fn share_synset(&self, a: &str, b: &str) -> bool {
        crate::metrics::sorted_intersect(&self.synset_ids(a), &self.synset_ids(b))
    }
}

/// WordNet's morphy detachment without part of speech (METEOR spec §5.4, SPICE spec §8.2):
/// `w` itself when it ends in "ss" or has at most two UTF-16 units, else the first rule's
/// candidate that `is_word` accepts, else `None`. Shared by METEOR and SPICE.
pub fn morph_with<'a>(
    w: &'a str,
    is_word: impl Fn(&str) -> bool,
) -> Option<std::borrow::Cow<'a, str>> {
    if w.ends_with("ss") || w.encode_utf16().count() <= 2 {
        return Some(std::borrow::Cow::Borrowed(w));
    }
    let mut cand = String::with_capacity(w.len() + 2);
    for (suffix, repl) in RULES {
        if let Some(stem) = w.strip_suffix(suffix) {
            cand.clear();
            cand.push_str(stem);
            cand.push_str(repl);
            if is_word(&cand) {
                return Some(std::borrow::Cow::Owned(cand));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exceptions_and_morph() {
        let s = Synonyms::from_texts(
            "child\n1 2\nkid\n2 3\ngoose\n7\n",
            "child\nchildren\ngoose\ngeese\n",
        )
        .unwrap();
        assert!(s.share_synset("kids", "children"));
        assert_eq!(s.synset_ids("geese"), vec![7]);
        assert_eq!(s.synset_ids("zz"), Vec::<u32>::new());
    }
}
