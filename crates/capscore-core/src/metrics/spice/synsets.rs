//! WordNet synonym look-up as SPICE performs it (spec SPICE §8): Meteor 1.5's
//! `english.synsets` and `english.exceptions`, part of speech ignored, with the
//! exceptions-then-`morph` fallback.
//!
//! The raw data is read through [`SynsetLookup`] so that the crate's shared resource cache
//! (which METEOR uses too) can back it; [`Synsets`] is a plain loader for two files on disk.

use rustc_hash::FxHashMap;

/// Raw access to the two Meteor synonym files. Everything SPICE derives from them
/// ([`concept_synsets`], the `morph` fallback) is built on these two look-ups.
pub trait SynsetLookup: Sync {
    /// The synset ids listed for `key` in `english.synsets` (`Some(&[])` would be a key with
    /// an empty id line), or `None` when `key` is not a word of the file. `key` is already
    /// normalised (lowercase, `_` for spaces).
    fn direct(&self, key: &str) -> Option<&[u32]>;
    /// The base forms `english.exceptions` lists for the inflected form `form`, in file
    /// order, or `None` when `form` is not listed as an inflected form.
    fn exception_bases(&self, form: &str) -> Option<&[Box<str>]>;
    /// `syn(x)` of a concept string (spec §8.2), sorted and without duplicates. The default
    /// computes it with [`concept_synsets`]; [`SynsetMemo`] answers from a precomputed table.
    fn concept_synsets(&self, text: &str) -> Vec<u32> {
        concept_synsets(self, text)
    }
}

/// A [`SynsetLookup`] that answers [`SynsetLookup::concept_synsets`] for a known set of
/// strings (e.g. every tuple string of a dataset) from a table filled once, and delegates
/// everything else. Same results, fewer look-ups when the same strings recur.
pub struct SynsetMemo<'a> {
    inner: &'a dyn SynsetLookup,
    memo: FxHashMap<Box<str>, Box<[u32]>>,
}

impl<'a> SynsetMemo<'a> {
    /// Precomputes `syn(x)` for every string of `strings`.
    pub fn new<'s, I: IntoIterator<Item = &'s str>>(
        inner: &'a dyn SynsetLookup,
        strings: I,
    ) -> Self {
        let mut memo: FxHashMap<Box<str>, Box<[u32]>> = FxHashMap::default();
        for s in strings {
            if !memo.contains_key(s) {
                memo.insert(s.into(), inner.concept_synsets(s).into_boxed_slice());
            }
        }
        SynsetMemo { inner, memo }
    }

    /// Number of memoised strings.
    pub fn len(&self) -> usize {
        self.memo.len()
    }

    /// True when nothing is memoised.
    pub fn is_empty(&self) -> bool {
        self.memo.is_empty()
    }
}

impl SynsetLookup for SynsetMemo<'_> {
    fn direct(&self, key: &str) -> Option<&[u32]> {
        self.inner.direct(key)
    }
    fn exception_bases(&self, form: &str) -> Option<&[Box<str>]> {
        self.inner.exception_bases(form)
    }
    fn concept_synsets(&self, text: &str) -> Vec<u32> {
        match self.memo.get(text) {
            Some(ids) => ids.to_vec(),
            None => self.inner.concept_synsets(text),
        }
    }
}

/// The synonym data is METEOR's, loaded once by the shared resource cache
/// ([`crate::resources`]): `english.synsets` and `english.exceptions` of Meteor 1.5.
impl SynsetLookup for crate::metrics::meteor::synonyms::Synonyms {
    fn direct(&self, key: &str) -> Option<&[u32]> {
        self.direct(key)
    }
    fn exception_bases(&self, form: &str) -> Option<&[Box<str>]> {
        self.exception_bases(form)
    }
}

/// `morph(k)` of spec §8.2: `k` itself when it ends in "ss" or has at most two UTF-16 units,
/// else the first suffix-table candidate that is a word of `english.synsets`, else "" (the
/// rules are METEOR's, [`crate::metrics::meteor::synonyms::morph_with`]).
pub fn morph<'a, S: SynsetLookup + ?Sized>(syn: &S, key: &'a str) -> std::borrow::Cow<'a, str> {
    crate::metrics::meteor::synonyms::morph_with(key, |cand| syn.direct(cand).is_some())
        .unwrap_or(std::borrow::Cow::Borrowed(""))
}

/// Java's `String.trim`: strips every char `<= U+0020` from both ends.
pub(crate) fn java_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c <= ' ')
}

/// The look-up key of a concept string: trimmed, lowercased, spaces replaced by `_`.
pub fn lookup_key(text: &str) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    let t = java_trim(text);
    if t.len() == text.len()
        && !text
            .bytes()
            .any(|b| b == b' ' || b.is_ascii_uppercase() || b >= 0x80)
    {
        return Cow::Borrowed(text);
    }
    Cow::Owned(t.to_lowercase().replace(' ', "_"))
}

/// `syn(x)` of spec §8.2: `direct(k) ∪ stem(k)` for `k = lookup_key(x)`, where `stem(k)` is
/// the union of the direct ids of `k`'s bases when `k` is an inflected form of the
/// exceptions file, and `direct(morph(k))` otherwise. Sorted, without duplicates.
pub fn concept_synsets<S: SynsetLookup + ?Sized>(syn: &S, text: &str) -> Vec<u32> {
    let key = lookup_key(text);
    let key: &str = &key;
    let mut out: Vec<u32> = syn.direct(key).map(<[u32]>::to_vec).unwrap_or_default();
    match syn.exception_bases(key) {
        Some(bases) => {
            for b in bases {
                if let Some(ids) = syn.direct(b) {
                    out.extend_from_slice(ids);
                }
            }
        }
        None => {
            let m = morph(syn, key);
            if m.as_ref() != key {
                if let Some(ids) = syn.direct(&m) {
                    out.extend_from_slice(ids);
                }
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> crate::metrics::meteor::Synonyms {
        crate::metrics::meteor::Synonyms::from_texts(
            "dog\n1 2\nman\n3 4\nglass\n5\nshort\n6\n",
            "man\nmen\nax axis\naxes\n",
        )
        .unwrap()
    }

    #[test]
    fn direct_morph_and_exceptions() {
        let s = tiny();
        assert_eq!(concept_synsets(&s, "dogs"), vec![1, 2]);
        assert_eq!(concept_synsets(&s, " Dog "), vec![1, 2]);
        assert_eq!(concept_synsets(&s, "men"), vec![3, 4]);
        assert_eq!(concept_synsets(&s, "glasses"), vec![5]);
        assert_eq!(concept_synsets(&s, "shorts"), vec![6]);
        assert!(concept_synsets(&s, "cat").is_empty());
        // "ss" words and 2-letter words are their own morph.
        assert_eq!(morph(&s, "glass"), "glass");
        assert_eq!(morph(&s, "xs"), "xs");
        assert_eq!(morph(&s, "cats"), "");
    }
}
