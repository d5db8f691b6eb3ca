//! The one n-gram statistics pipeline every n-gram metric is fed by: the engine, the registered
//! datasets' caches, the Python drop-ins and the SCST reward scorer all call it.
//!
//! | file | what |
//! | --- | --- |
//! | [`split`] | the word splitter (`str.split()` / `str.split(" ")`, spec COCO §3.4) |
//! | [`words`] | the word interner ([`WordTable`], [`Interner`], [`Vocab`]) |
//! | [`table`] | the n-gram key packing ([`GramKey`]) and the open-addressing table ([`KeyTable`]) |
//! | [`grams`] | per-sentence n-gram counts ([`Grams`]) and candidate/reference matches |
//! | [`batch`] | a batch of borrowed captions interned, counted and weighted in parallel ([`BatchWords`]), including the partitioned document-frequency counter |
//! | [`df`] | document-frequency tables ([`DocFreq`], [`DfTable`]) |
//! | [`ngram`] | [`Ngram`]: an n-gram of order 1..=4 over word ids |
//! | here | the re-exports and [`map_indexed`] (serial or on the rayon pool, by size) |
//!
//! Every n-gram metric works on interned word ids: a tokenized caption is split into words
//! and each word is mapped to a `u32`. N-grams of order 1..=4 are [`Ngram`]s (unused slots hold
//! [`Ngram::PAD`]) or, inside the pipeline, packed keys.
//!
//! Must not: know about metrics' reports, tokenize, read files.

pub mod batch;
pub mod df;
pub mod grams;
pub mod ngram;
pub mod split;
pub mod table;
pub mod words;

pub use batch::{
    document_frequencies, document_frequencies_until, BatchWords, Caption, ChunkGrams, GramBuf,
    IdfSource, ImageRef, Words,
};
pub use df::{DfTable, DocFreq};
pub use grams::{GramCounter, GramIndex, GramList, Grams, Matches, OwnedGrams};
pub use ngram::{Ngram, MAX_ORDER};
pub use table::{GramKey, Key, KeyTable};
pub use words::{Interner, Vocab, WordTable};

/// `f(scratch, i)` for `i` in `0..n`, results in order: on the calling thread below
/// `serial_below` items (a thread pool's hand-over costs more than it saves), otherwise on the
/// current rayon pool with one `init()` scratch per worker.
pub fn map_indexed<S, T: Send>(
    n: usize,
    serial_below: usize,
    init: impl Fn() -> S + Sync + Send,
    f: impl Fn(&mut S, usize) -> T + Sync + Send,
) -> Vec<T> {
    use rayon::prelude::*;
    if n < serial_below {
        let mut s = init();
        return (0..n).map(|i| f(&mut s, i)).collect();
    }
    (0..n)
        .into_par_iter()
        .with_min_len(64)
        .map_init(init, f)
        .collect()
}
