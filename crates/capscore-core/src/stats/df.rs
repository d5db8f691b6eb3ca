//! Document frequencies of reference n-grams, as CIDEr uses them. They are read through the
//! [`DocFreq`] trait, so that the batch's own references (pycocoevalcap's behaviour) and a
//! cached per-dataset table are interchangeable; a table is counted by the batch pipeline's
//! partitioned counter ([`super::batch::document_frequencies`]).

use rustc_hash::FxHashMap;

use super::ngram::Ngram;

/// Document frequencies of reference n-grams, as CIDEr uses them.
pub trait DocFreq: Sync {
    /// Number of documents (images) the table was built from: CIDEr's `N`.
    fn doc_count(&self) -> usize;
    /// Number of documents whose references contain `g` (0 when unseen).
    fn df(&self, g: &Ngram) -> u32;
    /// `ln(max(1, df(g)))`, as CIDEr weights use it (implementations may cache the logarithms).
    fn ln_df(&self, g: &Ngram) -> f64 {
        f64::from(self.df(g).max(1)).ln()
    }
    /// Number of distinct n-grams in the table.
    fn len(&self) -> usize;
    /// True when no reference n-gram was seen.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A document-frequency table built from the references of a set of images (see
/// [`super::batch::document_frequencies`]).
#[derive(Debug, Default, Clone)]
pub struct DfTable {
    docs: usize,
    table: FxHashMap<Ngram, u32>,
    /// `ln[d] = ln(max(1, d))` for every d up to the largest df: glibc's `ln`, computed once.
    ln: Vec<f64>,
}

impl DfTable {
    /// The bytes its heap allocations take ([`crate::heap`]): the hash table's buckets (a
    /// control byte each) and the logarithms.
    pub fn heap_bytes(&self) -> u64 {
        let entry = std::mem::size_of::<(Ngram, u32)>();
        crate::heap::hash_table(self.table.capacity(), entry) + crate::heap::vec(&self.ln)
    }

    /// The table of `docs` documents with the given (n-gram, document frequency) entries
    /// (distinct n-grams, frequencies above 0).
    pub(crate) fn new(docs: usize, entries: FxHashMap<Ngram, u32>) -> DfTable {
        let max = entries.values().copied().max().unwrap_or(0) as usize;
        let ln = (0..=max).map(|d| (d.max(1) as f64).ln()).collect();
        DfTable {
            docs,
            table: entries,
            ln,
        }
    }

    /// Every (n-gram, document frequency), in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&Ngram, u32)> {
        self.table.iter().map(|(g, &d)| (g, d))
    }
}

impl DocFreq for DfTable {
    fn doc_count(&self) -> usize {
        self.docs
    }
    fn df(&self, g: &Ngram) -> u32 {
        self.table.get(g).copied().unwrap_or(0)
    }
    fn ln_df(&self, g: &Ngram) -> f64 {
        self.table.get(g).map_or(0.0, |&d| self.ln[d as usize])
    }
    fn len(&self) -> usize {
        self.table.len()
    }
}
